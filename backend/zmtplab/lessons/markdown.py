"""The safe Markdown subset of narrations, parsed into a small tree; never into HTML.

Blocks: paragraphs (separated by blank lines), bullet lists (`- ` or `* `), numbered lists
(`1. `) and fenced code blocks (```). Inline: `**bold**`, `*em*`, `` `code` `` and links
`[text](https://rfc.zeromq.org/...)`; a link to any other host stays plain text. Everything
else, HTML included, is text: the browser builds the tree with `textContent` only.

The tree, as JSON:

    [{"type": "p", "children": INLINE},
     {"type": "ul" | "ol", "items": [INLINE, ...]},
     {"type": "pre", "text": "..."}]
    INLINE = [{"t": "text", "v": "..."}, {"t": "code", "v": "..."},
              {"t": "strong" | "em", "children": INLINE}, {"t": "link", "href": "...", "children": INLINE}]
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

LINK_HOSTS = frozenset({"rfc.zeromq.org"})
_BULLET = re.compile(r"^\s*[-*]\s+(.*)$")
_NUMBER = re.compile(r"^\s*\d{1,3}[.)]\s+(.*)$")
_LINK = re.compile(r"\[([^\]\n]{1,200})\]\(([^)\s]{1,400})\)")
MAX_DEPTH = 3


def allowed_link(href: str) -> bool:
    """Only http(s) links to the ZeroMQ RFC site."""
    try:
        parts = urlsplit(href)
    except ValueError:
        return False
    return parts.scheme in ("https", "http") and (parts.hostname or "") in LINK_HOSTS and not parts.username


def parse_inline(text: str, depth: int = 0) -> list[dict[str, Any]]:
    """Inline markup of one block."""
    out: list[dict[str, Any]] = []
    buf: list[str] = []

    def flush() -> None:
        if buf:
            value = "".join(buf)
            if out and out[-1]["t"] == "text":
                out[-1]["v"] += value
            else:
                out.append({"t": "text", "v": value})
            buf.clear()

    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in "\\`*_[]()":
            buf.append(text[i + 1])
            i += 2
            continue
        if c == "`":
            end = text.find("`", i + 1)
            if end > i:
                flush()
                out.append({"t": "code", "v": text[i + 1:end]})
                i = end + 1
                continue
        if c == "*" and depth < MAX_DEPTH:
            strong = text.startswith("**", i)
            mark = "**" if strong else "*"
            end = text.find(mark, i + len(mark))
            inner = text[i + len(mark):end] if end > 0 else ""
            if end > 0 and inner.strip() and inner == inner.strip() and (strong or "*" not in inner):
                flush()
                out.append({"t": "strong" if strong else "em", "children": parse_inline(inner, depth + 1)})
                i = end + len(mark)
                continue
        if c == "[" and depth < MAX_DEPTH:
            m = _LINK.match(text, i)
            if m:
                flush()
                label, href = m.group(1), m.group(2)
                children = parse_inline(label, depth + 1)
                if allowed_link(href):
                    out.append({"t": "link", "href": href, "children": children})
                else:
                    out.extend(children)
                i = m.end()
                continue
        buf.append(c)
        i += 1
    flush()
    return out


def parse(text: str) -> list[dict[str, Any]]:
    """A narration's block tree (see the module docstring)."""
    blocks: list[dict[str, Any]] = []
    para: list[str] = []
    items: list[str] = []
    list_type: str | None = None

    def end_para() -> None:
        if para:
            blocks.append({"type": "p", "children": parse_inline(" ".join(s.strip() for s in para))})
            para.clear()

    def end_list() -> None:
        nonlocal list_type
        if list_type is not None:
            blocks.append({"type": list_type, "items": [parse_inline(item.strip()) for item in items]})
            items.clear()
            list_type = None

    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            end_para()
            end_list()
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            blocks.append({"type": "pre", "text": "\n".join(body)})
            i += 1
            continue
        if not line.strip():
            end_para()
            end_list()
            i += 1
            continue
        bullet = _BULLET.match(line)
        item = bullet or _NUMBER.match(line)
        if item:
            kind = "ul" if bullet else "ol"
            end_para()
            if list_type != kind:
                end_list()
                list_type = kind
            items.append(item.group(1))
        elif list_type is not None and line.startswith((" ", "\t")) and items:
            items[-1] += " " + line.strip()  # a continued list item
        else:
            end_list()
            para.append(line)
        i += 1
    end_para()
    end_list()
    return blocks


def plain_text(blocks: list[dict[str, Any]]) -> str:
    """The narration without markup (for checks and summaries)."""

    def inline(nodes: list[dict[str, Any]]) -> str:
        return "".join(n.get("v", "") if "v" in n else inline(n.get("children", [])) for n in nodes)

    parts = []
    for b in blocks:
        if b["type"] == "p":
            parts.append(inline(b["children"]))
        elif b["type"] in ("ul", "ol"):
            parts.extend(inline(item) for item in b["items"])
        else:
            parts.append(b["text"])
    return "\n".join(parts)
