"""The illustrated page: a `Document` as one self-contained HTML file (inline CSS and SVG, no script).

Every text that comes from the wire or the source (values, bodies, names, notes) goes through
`html.escape`: a payload is shown, never interpreted. Anchors: `#c{conn}` per connection, `#e{n}` per
element (numbered through the page from 1), `#e{n}.{field}` per field (a repeated field name gets
`-2`, `-3`, ...). Colours tell fields apart (a palette safe for the common colour-vision
deficiencies) but every box also carries its field's name, so colour is never the only cue.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from html import escape
from typing import Any

from .document import OCTET_KINDS, Document, Section
from .grammar import spec_for

ROW_OCTETS = 8  # octets per row of the octet table, as the specs' diagrams
WIDE_FIELD = 24  # a field longer than this gets one row of its own, its first octets shown
HEX_DUMP_MOST = 256  # octets of an element's hex dump
SEQUENCE_MOST = 300  # elements drawn in a section's sequence diagram
ARROW = {"c2s": "→", "s2c": "←"}

# Okabe-Ito's colour-blind-safe hues, as light tints behind black text (contrast above 7:1).
PALETTE = ("#f9e2b3", "#cde8f8", "#b3e2d6", "#faf5c6", "#b3d4ea", "#f2cdb3", "#f0d7e6", "#e0e0e0")

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


def render(doc: Document, *, script: str | None = None, script_name: str | None = None) -> str:
    """The whole page; `script` (the reproducing pyzmq script) is shown at its end, `script_name` is
    the file it was written to beside the page, if any."""
    numbered = list(_numbered(doc))
    out = ['<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
           '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
           f"<title>{escape(doc.title)}: ZMTP, illustrated</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
           f"<header>\n<h1>{escape(doc.title)}: ZMTP, illustrated</h1>\n"
           f'<p class="meta">{escape(doc.source)}. Every octet of every element, with its field, its explanation '
           "and the ABNF rule it comes from. Made by ZMTP Lab.</p>\n</header>\n"]
    out.append(_toc(doc, numbered, script is not None))
    out.append("<main>\n")
    for section, anchor, elements in _by_section(doc, numbered):
        out.append(_section(section, anchor, elements))
    if script is not None:
        out.append(_script(script, script_name))
    out.append("</main>\n</body>\n</html>\n")
    return "".join(out)


# ---------------------------------------------------------------- numbering and contents


def _numbered(doc: Document) -> Iterator[tuple[Section, int, dict[str, Any]]]:
    n = 0
    for section in doc.sections:
        for event in section.shown():
            n += 1
            yield section, n, event


def _by_section(doc: Document, numbered: list) -> Iterator[tuple[Section, str, list[tuple[int, dict[str, Any]]]]]:
    """Each section with its anchor (`c{conn}`; `c{conn}-2`, ... when a page shows a connection again, as a
    lesson's steps do) and its numbered elements."""
    used: dict[str, int] = {}
    for section in doc.sections:
        used[section.conn] = used.get(section.conn, 0) + 1
        anchor = f"c{section.conn}" + (f"-{used[section.conn]}" if used[section.conn] > 1 else "")
        yield section, anchor, [(n, e) for s, n, e in numbered if s is section]


def _label(event: dict[str, Any]) -> str:
    """A short name for an element: 'READY', 'greeting 3.1 NULL', 'frame 5 B, more', 'warn: ...'."""
    kind = event.get("kind")
    if kind == "greeting":
        return " ".join(str(p) for p in ("greeting", event.get("version", ""), event.get("mechanism", "")) if p)
    if kind == "command":
        return f"{event.get('name', '?')} command"
    if kind == "frame":
        more = ", more" if event.get("more") else ""
        return f"frame, {event.get('size', 0)} B{more}"
    if kind == "gap":
        return f"gap: {event.get('length', 0)} octets missing"
    text = str(event.get("text", ""))
    return f"{event.get('severity', 'note')}: {text[:70]}{'…' if len(text) > 70 else ''}"


def _toc(doc: Document, numbered: list, with_script: bool) -> str:
    out = ['<nav class="toc" aria-labelledby="toc-title">\n<h2 id="toc-title">Contents</h2>\n<ol>\n']
    for section, anchor, elements in _by_section(doc, numbered):
        out.append(f'<li><a href="#{escape(anchor)}">Connection {escape(section.conn)}: '
                   f"{escape(section.client)} and {escape(section.server)}</a>\n<ol>\n")
        for n, event in elements:
            arrow = ARROW.get(event.get("dir", ""), "")
            out.append(f'<li><a href="#e{n}">{arrow} {escape(_label(event))}</a></li>\n')
        out.append("</ol></li>\n")
    if with_script:
        out.append('<li><a href="#reproduce">Reproduce it with pyzmq</a></li>\n')
    out.append("</ol>\n</nav>\n")
    return "".join(out)


# ---------------------------------------------------------------- a connection


def _section(section: Section, anchor: str, elements: list[tuple[int, dict[str, Any]]]) -> str:
    conn, anchor = escape(section.conn), escape(anchor)
    out = [f'<section id="{anchor}" aria-labelledby="{anchor}-title">\n'
           f'<h2 id="{anchor}-title">Connection {conn}: {escape(section.client)} '
           f"and {escape(section.server)}</h2>\n",
           f'<p class="meta">{escape(section.caption)}</p>\n' if section.caption else "",
           f'<p class="meta">The client ({escape(section.client)}) opened the TCP connection; '
           f"→ is what it sent (c2s), ← what the server ({escape(section.server)}) sent (s2c).</p>\n",
           _sequence(section, anchor, elements)]
    for n, event in elements:
        out.append(_element(section, n, event))
    if section.cut:
        out.append(f'<p class="cut">{section.cut} more elements of this connection are not shown.</p>\n')
    out.append("</section>\n")
    return "".join(out)


def _sequence(section: Section, anchor: str, elements: list[tuple[int, dict[str, Any]]]) -> str:
    """The sequence diagram: two lifelines, an arrow per element, each a link to the element (a group of links
    for a screen reader, each named by its element)."""
    shown = elements[:SEQUENCE_MOST]
    left, right, width, top, step = 110, 530, 640, 56, 24
    height = top + step * len(shown) + 16
    desc = (f"Sequence of connection {section.conn}: {len(elements)} elements between {section.client} (left) "
            f"and {section.server} (right).")
    out = [f'<figure>\n<svg class="sequence" viewBox="0 0 {width} {height}" role="group" '
           f'aria-labelledby="{anchor}-seq">\n'
           f'<title id="{anchor}-seq">{escape(desc)}</title>\n',
           f'<rect class="head" x="{left - 90}" y="8" width="180" height="28" rx="4"/>'
           f'<text x="{left}" y="27" text-anchor="middle">{escape(_short(section.client))}</text>\n',
           f'<rect class="head" x="{right - 90}" y="8" width="180" height="28" rx="4"/>'
           f'<text x="{right}" y="27" text-anchor="middle">{escape(_short(section.server))}</text>\n',
           f'<line class="life" x1="{left}" y1="36" x2="{left}" y2="{height - 6}"/>'
           f'<line class="life" x1="{right}" y1="36" x2="{right}" y2="{height - 6}"/>\n']
    for row, (n, event) in enumerate(shown):
        y = top + row * step
        label = f"{n}. {_label(event)}"
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
        out.append(f'<figcaption class="cut">The diagram shows the first {len(shown)} of {len(elements)} '
                   "elements; every element is listed below.</figcaption>\n")
    out.append("</figure>\n")
    return "".join(out)


def _short(text: str, most: int = 26) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


# ---------------------------------------------------------------- an element


def _element(section: Section, n: int, event: dict[str, Any]) -> str:
    kind = event.get("kind")
    direction = event.get("dir", "")
    who = section.client if direction == "c2s" else section.server
    head = (f"<h3><a href=\"#e{n}\">{n}.</a> {ARROW.get(direction, '')} {escape(_label(event))}</h3>\n")
    where = f"offset {event.get('offset', 0)} of the {direction} stream, {event.get('length', 0)} octets"
    extra = []
    packets = event.get("packets") or []
    if packets:
        extra.append("packets " + ", ".join(str(p) for p in packets[:8]) + ("…" if len(packets) > 8 else ""))
    if "t" in event:
        extra.append(f"t = {event['t']} s")
    where = "; ".join([where, *extra])
    meta = f'<p class="meta">Sent by {escape(who)}; {escape(where)}.</p>\n'
    if kind not in OCTET_KINDS:
        severity = str(event.get("severity", "note"))
        cls = "element note error" if severity == "error" or kind == "gap" else "element note"
        text = event.get("text") or f"{event.get('length', 0)} octets of this direction are missing from the capture."
        rule = f' <span class="mono">({escape(str(event["rule"]))})</span>' if event.get("rule") else ""
        badge = escape(severity if kind != "gap" else "gap")
        return (f'<article class="{cls}" id="e{n}">\n{head}{meta}<p><strong>{badge}</strong>{rule}: '
                f"{escape(str(text))}</p>\n</article>\n")
    data = _octets(event)
    fields = [f for f in event.get("fields") or [] if isinstance(f, dict)]
    anchors = _field_anchors(n, fields)
    context = section.context(direction)
    return "".join([f'<article class="element" id="e{n}">\n', head, meta,
                    _octet_table(event, data, fields, anchors),
                    _hex_dump(event, data),
                    _fields_table(fields, anchors, context, int(event.get("offset", 0))),
                    "</article>\n"])


def _octets(event: dict[str, Any]) -> bytes:
    try:
        return bytes.fromhex(str(event.get("hex", "")))
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


def _colour(rule: str) -> str:
    return PALETTE[zlib.crc32(rule.encode()) % len(PALETTE)]


def _octet_table(event: dict[str, Any], data: bytes, fields: list[dict[str, Any]], anchors: list[str]) -> str:
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
            text = f"{escape(label) or 'octets'}: {size} octets" + (f", the first {len(first)} shown" if first else "")
            link = f'<a href="#{escape(href)}">{text}</a>' if href else text
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
    out = ['<table class="octets" aria-label="the element\'s octets, eight per row, each field named">\n'
           '<thead><tr><th scope="col">octet</th>'
           + "".join(f'<th scope="col">+{i}</th>' for i in range(ROW_OCTETS)) + "</tr></thead>\n<tbody>\n"]
    out.extend(f'<tr><th scope="row">{at}</th>{"".join(cells)}</tr>\n' for at, cells in rows)
    out.append("</tbody>\n</table>\n")
    return "".join(out)


def _hex_dump(event: dict[str, Any], data: bytes) -> str:
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
        lines.append(f"… {rest} more octets")
    return '<pre class="hex" aria-label="hex dump">' + escape("\n".join(lines)) + "</pre>\n"


def _fields_table(fields: list[dict[str, Any]], anchors: list[str], context: dict[str, str], base: int) -> str:
    if not fields:
        return ""
    out = ['<table class="fields">\n<colgroup><col class="f-name"><col class="f-value"><col></colgroup>\n'
           '<thead><tr><th scope="col">field</th><th scope="col">value</th><th scope="col">what it means</th>'
           "</tr></thead>\n<tbody>\n"]
    for f, anchor in zip(fields, anchors, strict=True):
        rule = str(f.get("rule", ""))
        ref = spec_for(rule, **context) if rule else None
        rule_html = ""
        if ref is not None:
            title = ref.title + (f", {ref.section}" if ref.section else "")
            definition = f"<code>{escape(ref.definition)}</code>" if ref.definition else \
                f"rule <code>{escape(rule)}</code>, described in prose"
            rule_html = f'<div class="rule">{definition} <a href="{escape(ref.url)}">({escape(title)})</a></div>'
        size = int(f.get("length", 0))
        where = f'{size} octet{"" if size == 1 else "s"} at +{int(f.get("offset", base)) - base}'
        out.append(f'<tr id="{escape(anchor)}"><td><a href="#{escape(anchor)}">{escape(str(f.get("name", "")))}</a>'
                   f'<span class="where">{where}</span></td>'
                   f'<td class="mono">{escape(_value(f.get("value", "")))}</td>'
                   f'<td>{escape(str(f.get("note", "")))}{rule_html}</td></tr>\n')
    out.append("</tbody>\n</table>\n")
    return "".join(out)


def _value(value: Any, most: int = 160) -> str:
    text = str(value)
    return text if len(text) <= most else text[:most] + f"… ({len(text)} characters)"


def _script(script: str, script_name: str | None) -> str:
    where = (f" It is also in <code>{escape(script_name)}</code> beside this page." if script_name else "")
    return ('<section id="reproduce" aria-labelledby="reproduce-title">\n'
            '<h2 id="reproduce-title">Reproduce it with pyzmq</h2>\n'
            "<p>This script makes the same conversation with libzmq (the same socket types, options, mechanism and "
            "messages, in order). Run it with <code>python3</code> and capture its traffic to see the same bytes."
            f"{where}"
            f'</p>\n<pre class="script">{escape(script)}</pre>\n</section>\n')
