"""The illustrated page: a `Document` as one self-contained HTML file (inline CSS and SVG, no script).

Every text that comes from the wire or the source (values, bodies, names, notes) goes through
`html.escape`: a payload is shown, never interpreted. Anchors: `#c{conn}` per connection, `#e{n}` per
element (numbered through the page from 1), `#e{n}.{field}` per field (a repeated field name gets
`-2`, `-3`, ...). Colours tell fields apart (a palette safe for the common colour-vision
deficiencies: the pages' own, frontend/js/core/rules.js, through colours.json) but every box also carries its
field's name, so colour is never the only cue.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from html import escape
from importlib import resources
from typing import Any

from ..engine.constants import MESSAGE_RECEIVERS, MESSAGE_SENDERS
from ..i18n import DEFAULT, localize_event, text
from .document import OCTET_KINDS, Document, Section
from .grammar import spec_for

ROW_OCTETS = 8  # octets per row of the octet table, as the specs' diagrams
WIDE_FIELD = 24  # a field longer than this gets one row of its own, its first octets shown
HEX_DUMP_MOST = 256  # octets of an element's hex dump
SEQUENCE_MOST = 300  # elements drawn in a section's sequence diagram
ARROW = {"c2s": "→", "s2c": "←"}


ROLES = {"client": "illustrate.client", "server": "illustrate.server"}
SEVERITIES = {"note": "illustrate.severity.note", "warn": "illustrate.severity.warn",
              "error": "illustrate.severity.error", "gap": "illustrate.severity.gap"}
COLUMNS = ("illustrate.col.field", "illustrate.col.value", "illustrate.col.meaning")


class Words:
    """The page's words in one language (the backend catalogs' `illustrate.*` ids)."""

    def __init__(self, lang: str) -> None:
        self.lang = lang

    def __call__(self, msg_id: str, **params: Any) -> str:
        return text(msg_id, self.lang, **params)

    def role(self, name: str) -> str:
        """A lifeline's name: the default names are words, other names (endpoints, nodes) stay as they are."""
        return self(ROLES[name]) if name in ROLES else name


STYLE = """
:root { --ink: #1a1a1a; --muted: #4d4d4d; --line: #767676; --accent: #0b5394; --warn: #8a4b00; --error: #a00000; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 60rem; padding: 1.5rem; color: var(--ink); background: #fff;
  font: 15px/1.5 "Noto Sans", "Noto Sans CJK SC", "DejaVu Sans", system-ui, sans-serif; }
h1 { font-size: 1.7rem; margin: 0 0 .25rem; }
h2 { font-size: 1.3rem; margin: 2.5rem 0 .5rem; border-bottom: 2px solid var(--ink); }
h3 { font-size: 1.05rem; margin: 0 0 .4rem; }
a { color: var(--accent); }
code, pre, .mono { font-family: "DejaVu Sans Mono", "Noto Sans Mono", monospace; font-size: .85rem; }
.meta { color: var(--muted); margin: 0 0 .6rem; }
nav.toc ol { margin: .3rem 0; padding-left: 1.4rem; }
nav.toc ol ol { columns: 2; font-size: .9rem; }
article.element { border: 1px solid var(--line); border-radius: 4px; padding: .8rem 1rem; margin: 1rem 0; }
article.note { border-left: 6px solid var(--warn); }
article.note.error { border-left-color: var(--error); }
table { border-collapse: collapse; width: 100%; }
table.octets { table-layout: fixed; margin: .5rem 0; }
table.octets td, table.octets th { border: 1px solid var(--line); text-align: center; padding: 2px 3px;
  vertical-align: top; overflow-wrap: anywhere; }
table.octets th { width: 3.2rem; color: var(--muted); font-weight: normal; background: #fff; }
table.octets td .o { display: block; font-family: "DejaVu Sans Mono", monospace; font-size: .8rem; }
table.octets td .n { display: block; font-size: .72rem; }
table.octets td.rest { text-align: left; }
table.fields td, table.fields th { border-top: 1px solid var(--line); text-align: left; padding: 3px 6px;
  vertical-align: top; overflow-wrap: anywhere; }
table.fields th { font-size: .85rem; color: var(--muted); }
table.fields { table-layout: fixed; }
table.fields col.f-name { width: 11rem; }
table.fields col.f-value { width: 24%; }
table.fields .where { display: block; color: var(--muted); font-size: .8em; }
table.fields tr:target { outline: 3px solid var(--accent); }
.rule { font-size: .85em; color: var(--muted); }
.rule code { white-space: pre-wrap; color: var(--ink); }
pre.hex { background: #f4f4f4; padding: .5rem; overflow-x: auto; white-space: pre; }
pre.script { background: #f4f4f4; padding: .7rem; white-space: pre-wrap; overflow-wrap: anywhere; }
svg.sequence { width: 100%; height: auto; border: 1px solid var(--line); }
svg.sequence text { font: 12px "DejaVu Sans", sans-serif; fill: var(--ink); }
svg.sequence .life { stroke: var(--line); stroke-width: 2; }
svg.sequence .msg { stroke: var(--ink); stroke-width: 1.4; }
svg.sequence .head { fill: #e6eef7; stroke: var(--ink); }
.cut { color: var(--muted); font-style: italic; }
article.step { margin: 1rem 0 1.5rem; }
.question { border-left: 4px solid var(--accent); padding: .2rem .8rem; }
dl.answers dt { font-weight: 600; margin-top: .8rem; }
figure.topology svg { width: 100%; max-height: 22rem; }
figure.topology rect { fill: #f4f4f4; stroke: var(--ink); }
figure.topology text { font: 13px "DejaVu Sans", sans-serif; fill: var(--ink); }
figure.topology text.type { font-size: 11px; fill: var(--accent); }
figure.topology line.link { stroke: var(--ink); stroke-width: 1.5; }
figure.topology circle.bind { fill: #fff; stroke: var(--ink); stroke-width: 1.5; }
figure.topology line.proxy { stroke: var(--muted); stroke-width: 2; stroke-dasharray: 6 4; }
figure.topology figcaption { color: var(--muted); font-size: .85rem; }
@page { margin: 14mm 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 9pt; line-height: 1.3; }
  h2 { margin-top: 1rem; }
  article.element { padding: .4rem .6rem; margin: .6rem 0; }
  table.octets td, table.octets th, table.fields td, table.fields th { padding: 1px 3px; }
  table.fields { font-size: 8pt; line-height: 1.2; }
  table.fields col.f-name { width: 8rem; }
  table.fields col.f-value { width: 18%; }
  table.octets { font-size: 7.5pt; line-height: 1.15; }
  table.octets td .o { font-size: 7pt; }
  table.octets td .n { font-size: 6.5pt; }
  pre.hex { font-size: 6.5pt; padding: .2rem .3rem; line-height: 1.2; }
  code, pre, .mono { font-size: 7pt; }
  a { color: inherit; text-decoration: none; }
  nav.toc { break-after: page; }
  h2 { break-after: avoid; }
  article.element, figure, table.octets tr, table.fields tr { break-inside: avoid; }
  pre.hex, pre.script { white-space: pre-wrap; overflow: visible; }
  svg.sequence { border: none; }
}
"""


def render(doc: Document, *, script: str | None = None, script_name: str | None = None, lang: str = DEFAULT) -> str:
    """The whole page in `lang` (its words, the fields' notes and the expert texts); `script` (the reproducing
    pyzmq script) is shown at its end, `script_name` is the file it was written to beside the page, if any."""
    w = Words(lang)
    numbered = list(_numbered(doc, lang))
    title = w("illustrate.title", title=doc.title)
    source = w(doc.source[0], **doc.source[1]) if isinstance(doc.source, tuple) else doc.source
    out = [f'<!DOCTYPE html>\n<html lang="{escape(lang)}">\n<head>\n<meta charset="utf-8">\n'
           '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
           f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
           f"<header>\n<h1>{escape(title)}</h1>\n"
           f'<p class="meta">{escape(w("illustrate.intro", source=source))}</p>\n</header>\n']
    out.append(_toc(w, doc, numbered, script is not None))
    out.append("<main>\n")
    if doc.lesson:
        out.append(_lesson(w, doc))
    for section, anchor, elements in _by_section(doc, numbered):
        out.append(_section(w, section, anchor, elements))
    if doc.lesson:
        out.append(_answer_key(w, doc))
    if script is not None:
        out.append(_script(w, script, script_name, whole=doc.topology is not None))
    out.append("</main>\n</body>\n</html>\n")
    return "".join(out)


# ---------------------------------------------------------------- a lesson's own words


def _inline(nodes: Any, depth: int = 0) -> str:
    """A narration's inline nodes (`lessons.markdown`'s tree) as escaped HTML: text is only ever text."""
    out = []
    for n in nodes if isinstance(nodes, list) and depth < 6 else []:
        kind = n.get("t") if isinstance(n, dict) else None
        if kind == "text":
            out.append(escape(str(n.get("v", ""))))
        elif kind == "code":
            out.append(f"<code>{escape(str(n.get('v', '')))}</code>")
        elif kind in ("strong", "em"):
            out.append(f"<{kind}>{_inline(n.get('children'), depth + 1)}</{kind}>")
        elif kind == "link":
            out.append(_inline(n.get("children"), depth + 1))  # (a handout runs nothing and links nowhere but home)
    return "".join(out)


def _narration(tree: Any) -> str:
    """A narration tree's blocks (paragraphs, lists, code) as escaped HTML."""
    out = []
    for b in tree if isinstance(tree, list) else []:
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "p":
            out.append(f"<p>{_inline(b.get('children'))}</p>\n")
        elif kind in ("ul", "ol"):
            items = "".join(f"<li>{_inline(item)}</li>" for item in b.get("items", []))
            out.append(f"<{kind}>{items}</{kind}>\n")
        elif kind == "pre":
            out.append(f'<pre class="script">{escape(str(b.get("text", "")))}</pre>\n')
    return "".join(out)


def _lesson(w: Words, doc: Document) -> str:
    """The lesson's steps as the teacher told them: narration, the topology's diagram where a step opens one, the
    socket decisions it points at, and its question (the answers are in the key at the end)."""
    out = ['<section id="lesson" aria-labelledby="lesson-title">\n'
           f'<h2 id="lesson-title">{escape(w("illustrate.lesson"))}</h2>\n']
    for step in doc.lesson:
        out.append(f'<article class="step" id="s{step.number}">\n'
                   f'<h3>{escape(w("illustrate.step", number=step.number, title=step.title))}</h3>\n')
        if step.topology is not None:
            out.append(_topology_figure(w, step.topology))
        out.append(_narration(step.narration))
        if step.decisions:
            out.append(f'<p class="meta">{escape(w("illustrate.decisions"))}</p>\n<ul class="decisions">'
                       + "".join(f"<li>{escape(d)}</li>" for d in step.decisions) + "</ul>\n")
        if step.prompt is not None:
            choices = "".join(f"<li>{escape(c)}</li>" for c in step.choices)
            out.append(f'<div class="question"><p><strong>{escape(w("illustrate.question"))}</strong> '
                       f"{escape(step.prompt)}</p>" + (f'<ol type="a">{choices}</ol>' if choices else "") + "</div>\n")
        if step.task is not None:
            nodes = f'<p class="meta">{escape(step.nodes)}</p>' if step.nodes else ""
            out.append(f'<div class="question exercise"><p><strong>{escape(w("illustrate.exercise"))}</strong></p>'
                       f"{_narration(step.task)}{nodes}</div>\n")
        out.append("</article>\n")
    out.append("</section>\n")
    return "".join(out)


def _answer_key(w: Words, doc: Document) -> str:
    asked = [step for step in doc.lesson if step.prompt is not None or step.task is not None]
    if not asked:
        return ""
    out = ['<section id="answers" aria-labelledby="answers-title">\n'
           f'<h2 id="answers-title">{escape(w("illustrate.answer_key"))}</h2>\n<dl class="answers">\n']
    for step in asked:
        name = escape(w("illustrate.step", number=step.number, title=step.title))
        out.append(f'<dt><a href="#s{step.number}">{name}</a></dt>\n'
                   f"<dd><p><strong>{escape(step.answer or '')}</strong></p>{_narration(step.explain)}</dd>\n")
    out.append("</dl>\n</section>\n")
    return "".join(out)


def _topology_figure(w: Words, topology: dict[str, Any]) -> str:
    """A topology's nodes and links as an inline SVG: the binding nodes in one column, the nodes that only connect in
    another (a proxy's two ends side by side); each link with arrowheads the way its messages go and a ring at its
    binding end, as the playground draws it."""
    nodes = [n for n in topology.get("nodes", []) if isinstance(n, dict) and "name" in n]
    links = [lk for lk in topology.get("links", []) if isinstance(lk, dict)]
    proxies = [p for p in topology.get("proxies", []) if isinstance(p, dict)]
    if not nodes:
        return ""
    binds = {lk.get("bind") for lk in links}
    backends = {p.get("backend") for p in proxies}
    # Four columns: the nodes that only connect, the binding ones, a proxy's backend, the nodes behind it.
    right = {lk.get("connect") for lk in links if lk.get("bind") in backends}
    columns: list[list[dict[str, Any]]] = [[], [], [], []]
    for n in nodes:
        name = n["name"]
        columns[2 if name in backends else 1 if name in binds else 3 if name in right else 0].append(n)
    columns = [c for c in columns if c]
    box_w, box_h, gap_x, gap_y = 130, 44, 90, 18
    height = max(len(c) for c in columns) * (box_h + gap_y) + gap_y
    width = len(columns) * (box_w + gap_x) - gap_x + 20
    at: dict[str, tuple[float, float]] = {}
    for i, col in enumerate(columns):
        top = (height - len(col) * (box_h + gap_y) + gap_y) / 2
        for k, n in enumerate(col):
            at[n["name"]] = (10 + i * (box_w + gap_x), top + k * (box_h + gap_y))
    parts = [f'<figure class="topology"><svg viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{escape(w("illustrate.topology", nodes=len(nodes), links=len(links)))}">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
             'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>']
    types = {n["name"]: str(n.get("type", "")).upper() for n in nodes}
    for lk in links:
        a, b = at.get(lk.get("connect", "")), at.get(lk.get("bind", ""))
        if not (a and b):
            continue
        x1, x2 = (a[0] + box_w, b[0] - 7) if a[0] < b[0] else (a[0], b[0] + box_w + 7)
        ring = b[0] - 3.5 if a[0] < b[0] else b[0] + box_w + 3.5
        # Arrowheads the way its messages go (both ends for request-reply); a ring where it binds.
        tc, tb = types.get(lk["connect"], ""), types.get(lk["bind"], "")
        forward = tc in MESSAGE_SENDERS and tb in MESSAGE_RECEIVERS
        back = tb in MESSAGE_SENDERS and tc in MESSAGE_RECEIVERS
        heads = (' marker-end="url(#arrow)"' if forward or not back else "") + (' marker-start="url(#arrow)"'
                                                                                  if back else "")
        parts.append(f'<line class="link" x1="{x1}" y1="{a[1] + box_h / 2}" x2="{x2}" y2="{b[1] + box_h / 2}"'
                     f'{heads}/><circle class="bind" cx="{ring}" cy="{b[1] + box_h / 2}" r="3.5"/>')
    for p in proxies:
        a, b = at.get(p.get("frontend", "")), at.get(p.get("backend", ""))
        if a and b:
            parts.append(f'<line class="proxy" x1="{a[0] + box_w}" y1="{a[1] + box_h / 2}" x2="{b[0]}" '
                         f'y2="{b[1] + box_h / 2}"/>')
    for n in nodes:
        x, y = at[n["name"]]
        parts.append(f'<g class="node"><rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="5"/>'
                     f'<text x="{x + box_w / 2}" y="{y + 18}" text-anchor="middle">{escape(str(n["name"]))}</text>'
                     f'<text class="type" x="{x + box_w / 2}" y="{y + 35}" text-anchor="middle">'
                     f'{escape(str(n.get("type", "")))}</text></g>')
    parts.append(f'</svg><figcaption>{escape(w("illustrate.topology_caption"))}</figcaption></figure>\n')
    return "".join(parts)


# ---------------------------------------------------------------- numbering and contents


def _numbered(doc: Document, lang: str) -> Iterator[tuple[Section, int, dict[str, Any]]]:
    """Each element with its number through the page, its notes and texts in `lang`."""
    n = 0
    for section in doc.sections:
        for event in section.shown():
            n += 1
            yield section, n, localize_event(event, lang)


def _by_section(doc: Document, numbered: list) -> Iterator[tuple[Section, str, list[tuple[int, dict[str, Any]]]]]:
    """Each section with its anchor (`c{conn}`; `c{conn}-2`, ... when a page shows a connection again, as a
    lesson's steps do) and its numbered elements."""
    used: dict[str, int] = {}
    for section in doc.sections:
        used[section.conn] = used.get(section.conn, 0) + 1
        anchor = f"c{section.conn}" + (f"-{used[section.conn]}" if used[section.conn] > 1 else "")
        yield section, anchor, [(n, e) for s, n, e in numbered if s is section]


def _label(w: Words, event: dict[str, Any]) -> str:
    """A short name for an element: 'READY command', 'greeting 3.1 NULL', 'frame, 5 B, more', 'warn: ...'."""
    kind = event.get("kind")
    if kind == "greeting":
        parts = (w("illustrate.label.greeting"), event.get("version", ""), event.get("mechanism", ""))
        return " ".join(str(p) for p in parts if p)
    if kind == "command":
        return w("illustrate.label.command", name=event.get("name", "?"))
    if kind == "frame":
        more = event.get("more")
        return w("illustrate.label.frame_more" if more else "illustrate.label.frame", size=event.get("size", 0))
    if kind == "gap":
        return w("illustrate.label.gap", length=event.get("length", 0))
    said = str(event.get("text", ""))
    return f"{_severity(w, event)}: {said[:70]}{'…' if len(said) > 70 else ''}"


def _severity(w: Words, event: dict[str, Any]) -> str:
    severity = "gap" if event.get("kind") == "gap" else str(event.get("severity", "note"))
    return w(SEVERITIES[severity]) if severity in SEVERITIES else severity


def _toc(w: Words, doc: Document, numbered: list, with_script: bool) -> str:
    out = ['<nav class="toc" aria-labelledby="toc-title">\n'
           f'<h2 id="toc-title">{escape(w("illustrate.contents"))}</h2>\n<ol>\n']
    for section, anchor, elements in _by_section(doc, numbered):
        client, server = w.role(section.client), w.role(section.server)
        name = w("illustrate.connection", conn=section.conn, client=client, server=server)
        out.append(f'<li><a href="#{escape(anchor)}">{escape(name)}</a>\n<ol>\n')
        for n, event in elements:
            arrow = ARROW.get(event.get("dir", ""), "")
            out.append(f'<li><a href="#e{n}">{arrow} {escape(_label(w, event))}</a></li>\n')
        out.append("</ol></li>\n")
    if doc.lesson:
        out.insert(1, f'<li><a href="#lesson">{escape(w("illustrate.lesson"))}</a></li>\n')
        if any(step.prompt is not None or step.task is not None for step in doc.lesson):
            out.append(f'<li><a href="#answers">{escape(w("illustrate.answer_key"))}</a></li>\n')
    if with_script:
        out.append(f'<li><a href="#reproduce">{escape(w("illustrate.reproduce"))}</a></li>\n')
    out.append("</ol>\n</nav>\n")
    return "".join(out)


# ---------------------------------------------------------------- a connection


def _section(w: Words, section: Section, anchor: str, elements: list[tuple[int, dict[str, Any]]]) -> str:
    anchor = escape(anchor)
    client, server = w.role(section.client), w.role(section.server)
    name = w("illustrate.connection", conn=section.conn, client=client, server=server)
    out = [f'<section id="{anchor}" aria-labelledby="{anchor}-title">\n'
           f'<h2 id="{anchor}-title">{escape(name)}</h2>\n',
           f'<p class="meta">{escape(section.caption)}</p>\n' if section.caption else "",
           f'<p class="meta">{escape(w("illustrate.roles", client=client, server=server))}</p>\n',
           _sequence(w, section, anchor, elements)]
    for n, event in elements:
        out.append(_element(w, section, n, event))
    if section.cut:
        out.append(f'<p class="cut">{escape(w("illustrate.cut", count=section.cut))}</p>\n')
    out.append("</section>\n")
    return "".join(out)


def _sequence(w: Words, section: Section, anchor: str, elements: list[tuple[int, dict[str, Any]]]) -> str:
    """The sequence diagram: two lifelines, an arrow per element, each a link to the element (a group of links
    for a screen reader, each named by its element)."""
    shown = elements[:SEQUENCE_MOST]
    left, right, width, top, step = 110, 530, 640, 56, 24
    height = top + step * len(shown) + 16
    client, server = w.role(section.client), w.role(section.server)
    desc = w("illustrate.sequence", conn=section.conn, count=len(elements), client=client, server=server)
    out = [f'<figure>\n<svg class="sequence" viewBox="0 0 {width} {height}" role="group" '
           f'aria-labelledby="{anchor}-seq">\n'
           f'<title id="{anchor}-seq">{escape(desc)}</title>\n',
           f'<rect class="head" x="{left - 90}" y="8" width="180" height="28" rx="4"/>'
           f'<text x="{left}" y="27" text-anchor="middle">{escape(_short(client))}</text>\n',
           f'<rect class="head" x="{right - 90}" y="8" width="180" height="28" rx="4"/>'
           f'<text x="{right}" y="27" text-anchor="middle">{escape(_short(server))}</text>\n',
           f'<line class="life" x1="{left}" y1="36" x2="{left}" y2="{height - 6}"/>'
           f'<line class="life" x1="{right}" y1="36" x2="{right}" y2="{height - 6}"/>\n']
    for row, (n, event) in enumerate(shown):
        y = top + row * step
        label = f"{n}. {_label(w, event)}"
        if event.get("kind") in OCTET_KINDS:
            a, b = (left, right) if event.get("dir") == "c2s" else (right, left)
            tip = b - 8 if b > a else b + 8
            out.append(f'<a href="#e{n}"><line class="msg" x1="{a}" y1="{y}" x2="{b}" y2="{y}"/>'
                       f'<polygon points="{b},{y} {tip},{y - 4} {tip},{y + 4}"/>'
                       f'<text x="{(left + right) // 2}" y="{y - 4}" text-anchor="middle">{escape(label)}</text></a>\n')
        else:
            x = left if event.get("dir") == "c2s" else right
            out.append(f'<a href="#e{n}"><circle cx="{x}" cy="{y}" r="5" fill="#a00000"/>'
                       f'<text x="{(left + right) // 2}" y="{y + 4}" text-anchor="middle" font-style="italic">'
                       f"{escape(label)}</text></a>\n")
    out.append("</svg>\n")
    if len(elements) > len(shown):
        cut = w("illustrate.sequence_cut", shown=len(shown), count=len(elements))
        out.append(f'<figcaption class="cut">{escape(cut)}</figcaption>\n')
    out.append("</figure>\n")
    return "".join(out)


def _short(text: str, most: int = 26) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


# ---------------------------------------------------------------- an element


def _element(w: Words, section: Section, n: int, event: dict[str, Any]) -> str:
    kind = event.get("kind")
    direction = event.get("dir", "")
    who = w.role(section.client if direction == "c2s" else section.server)
    head = (f"<h3><a href=\"#e{n}\">{n}.</a> {ARROW.get(direction, '')} {escape(_label(w, event))}</h3>\n")
    where = [w("illustrate.where", offset=event.get("offset", 0), dir=direction, length=event.get("length", 0))]
    packets = event.get("packets") or []
    if packets:
        numbers = ", ".join(str(p) for p in packets[:8]) + ("…" if len(packets) > 8 else "")
        where.append(w("illustrate.packets", numbers=numbers))
    if "t" in event:
        where.append(w("illustrate.time", t=event["t"]))
    said_where = w("illustrate.where_separator").join(where)
    meta = f'<p class="meta">{escape(w("illustrate.sent_by", who=who, where=said_where))}</p>\n'
    if kind not in OCTET_KINDS:
        severity = str(event.get("severity", "note"))
        cls = "element note error" if severity == "error" or kind == "gap" else "element note"
        said = event.get("text") or w("illustrate.gap_text", length=event.get("length", 0))
        rule = f' <span class="mono">({escape(str(event["rule"]))})</span>' if event.get("rule") else ""
        return (f'<article class="{cls}" id="e{n}">\n{head}{meta}<p><strong>{escape(_severity(w, event))}</strong>'
                f"{rule}: {escape(str(said))}</p>\n</article>\n")
    data = _octets(event)
    fields = [f for f in event.get("fields") or [] if isinstance(f, dict)]
    anchors = _field_anchors(n, fields)
    context = section.context(direction)
    return "".join([f'<article class="element" id="e{n}">\n', head, meta,
                    _octet_table(w, event, data, fields, anchors),
                    _hex_dump(w, event, data),
                    _fields_table(w, fields, anchors, context, int(event.get("offset", 0))),
                    "</article>\n"])


def _octets(event: dict[str, Any]) -> bytes:
    """The element's octets as its fields describe them: `unmasked` for a client's WebSocket frame (ZWS)."""
    try:
        return bytes.fromhex(str(event.get("unmasked") or event.get("hex", "")))
    except ValueError:
        return b""


def _field_anchors(n: int, fields: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, int] = {}
    anchors = []
    for f in fields:
        name = "".join(c if c.isalnum() or c in "-_" else "-" for c in str(f.get("name", "field"))) or "field"
        seen[name] = seen.get(name, 0) + 1
        anchors.append(f"e{n}.{name}" + (f"-{seen[name]}" if seen[name] > 1 else ""))
    return anchors


@cache
def _colours() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath("colours.json").read_text(encoding="utf-8"))


def _colour(rule: str) -> str:
    """A field's fill: the pages' own (colours.json, generated from frontend/js/core/rules.js: a palette chosen
    for colour-blind readers, by the field's role); a rule no grammar names gets the bodies' colour."""
    table = _colours()
    return table["rules"].get(rule.lower(), table["palette"]["aqua"])


def _octet_table(w: Words, event: dict[str, Any], data: bytes, fields: list[dict[str, Any]],
                 anchors: list[str]) -> str:
    """The element's octets in rows of eight, each field a box with its name, like the specs' diagrams."""
    base = int(event.get("offset", 0))
    length = int(event.get("length", len(data)))
    rows: list[tuple[int, list[str]]] = []  # (offset of the row's first octet, its cells)
    row: list[str] = []
    row_at = col = pos = 0

    def cell(at: int, span: int, label: str, colour: str, href: str | None, cont: bool) -> None:
        nonlocal col, row_at
        if col == 0:
            row_at = at
        name = escape(label) + ("…" if cont else "")
        link = f'<a href="#{escape(href)}">{name}</a>' if href else name
        row.append(f'<td colspan="{span}" style="background:{colour}"><span class="o">{data[at:at + span].hex(" ")}'
                   f'</span><span class="n">{link}</span></td>')
        col += span

    def flush() -> None:
        nonlocal row, col
        if row:
            if col < ROW_OCTETS:
                row.append(f'<td colspan="{ROW_OCTETS - col}" class="rest"></td>')
            rows.append((row_at, row))
        row, col = [], 0

    def place(start: int, size: int, label: str, colour: str, href: str | None) -> None:
        if size > WIDE_FIELD:
            flush()
            first = data[start:start + ROW_OCTETS]
            name = label or w("illustrate.octets")
            said = escape(w("illustrate.wide_first", name=name, size=size, shown=len(first)) if first
                          else w("illustrate.wide", name=name, size=size))
            link = f'<a href="#{escape(href)}">{said}</a>' if href else said
            rows.append((start, [f'<td colspan="{ROW_OCTETS}" class="rest" style="background:{colour}">'
                                 f'<span class="o">{first.hex(" ")} …</span><span class="n">{link}</span></td>']))
            return
        cont = False
        while size > 0:
            take = min(size, ROW_OCTETS - col)
            cell(start, take, label, colour, href, cont)
            start, size, cont = start + take, size - take, True
            if col == ROW_OCTETS:
                flush()

    for f, anchor in zip(fields, anchors, strict=True):
        start = int(f.get("offset", base)) - base
        size = int(f.get("length", 0))
        if size <= 0 or start < pos or start + size > length:
            continue  # a field inside another one (the fields table has it)
        if start > pos:
            place(pos, start - pos, "", "#ffffff", None)
        place(start, size, str(f.get("name", "")), _colour(str(f.get("rule", ""))), anchor)
        pos = start + size
    if pos < length:
        place(pos, length - pos, "", "#ffffff", None)
    flush()
    if not rows:
        return ""
    out = [f'<table class="octets" aria-label="{escape(w("illustrate.octets_label"))}">\n'
           f'<thead><tr><th scope="col">{escape(w("illustrate.octet"))}</th>'
           + "".join(f'<th scope="col">+{i}</th>' for i in range(ROW_OCTETS)) + "</tr></thead>\n<tbody>\n"]
    out.extend(f'<tr><th scope="row">{at}</th>{"".join(cells)}</tr>\n' for at, cells in rows)
    out.append("</tbody>\n</table>\n")
    return "".join(out)


def _hex_dump(w: Words, event: dict[str, Any], data: bytes) -> str:
    if not data:
        return ""
    shown = data[:HEX_DUMP_MOST]
    lines = []
    for i in range(0, len(shown), 16):
        chunk = shown[i:i + 16]
        text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
        lines.append(f"{i:04x}  {chunk.hex(' '):<47}  |{text}|")
    rest = int(event.get("length", len(data))) - len(shown)
    if rest > 0:
        lines.append(w("illustrate.more_octets", count=rest))
    return f'<pre class="hex" aria-label="{escape(w("illustrate.hex_label"))}">' + escape("\n".join(lines)) + "</pre>\n"


def _fields_table(w: Words, fields: list[dict[str, Any]], anchors: list[str], context: dict[str, str],
                  base: int) -> str:
    if not fields:
        return ""
    heads = "".join(f'<th scope="col">{escape(w(col))}</th>' for col in COLUMNS)
    out = ['<table class="fields">\n<colgroup><col class="f-name"><col class="f-value"><col></colgroup>\n'
           f"<thead><tr>{heads}</tr></thead>\n<tbody>\n"]
    for f, anchor in zip(fields, anchors, strict=True):
        rule = str(f.get("rule", ""))
        ref = spec_for(rule, **context) if rule else None
        rule_html = ""
        if ref is not None:
            title = ref.title + (f", {ref.section}" if ref.section else "")
            definition = (f"<code>{escape(ref.definition)}</code>" if ref.definition
                          else escape(w("illustrate.prose", rule=rule)))
            rule_html = f'<div class="rule">{definition} <a href="{escape(ref.url)}">({escape(title)})</a></div>'
        size = int(f.get("length", 0))
        at = int(f.get("offset", base)) - base
        where = escape(w("illustrate.at.one" if size == 1 else "illustrate.at.other", size=size, offset=at))
        out.append(f'<tr id="{escape(anchor)}"><td><a href="#{escape(anchor)}">{escape(str(f.get("name", "")))}</a>'
                   f'<span class="where">{where}</span></td>'
                   f'<td class="mono">{escape(_value(w, f.get("value", "")))}</td>'
                   f'<td>{escape(str(f.get("note", "")))}{rule_html}</td></tr>\n')
    out.append("</tbody>\n</table>\n")
    return "".join(out)


def _value(w: Words, value: Any, most: int = 160) -> str:
    shown = str(value)
    return shown if len(shown) <= most else shown[:most] + w("illustrate.value_cut", count=len(shown))


def _script(w: Words, script: str, script_name: str | None, *, whole: bool = False) -> str:
    where = " " + escape(w("illustrate.script_beside", file=script_name)) if script_name else ""
    intro = w("illustrate.script_topology" if whole else "illustrate.script_intro")
    return ('<section id="reproduce" aria-labelledby="reproduce-title">\n'
            f'<h2 id="reproduce-title">{escape(w("illustrate.reproduce"))}</h2>\n'
            f'<p>{escape(intro)}{where}</p>\n'
            f'<pre class="script">{escape(script)}</pre>\n</section>\n')
