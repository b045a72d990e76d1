"""Printing events: JSON lines (the event contract) or a readable one-line-per-element view."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, Any

import orjson

from ..engine.fields import text_or_hex
from ..i18n import LANGS, localize_event, translate


def add_lang_option(parser: Any) -> None:
    """`--lang`: the readable view's notes and expert texts in a language (JSON output stays the English contract)."""
    parser.add_argument("--lang", choices=LANGS, default=None,
                        help="print each field's note and the expert texts in this language (en or zh-CN); "
                             "without it notes are not printed; --jsonl/--json stay English")


def read_curve_keylog(path: Path | None, command: str) -> Any:
    """The session keys of `--curve-keylog FILE` (None without one), or False after saying on stderr why the file
    cannot be read."""
    if path is None:
        return None
    from ..engine.curve import parse_keylog  # (only a key log loads the cryptography)

    try:
        return parse_keylog(path.read_text(encoding="ascii", errors="replace"))
    except (OSError, ValueError) as exc:
        print(f"zmtplab {command}: --curve-keylog: {exc}", file=sys.stderr)
        return False


def localized(event: dict[str, Any], lang: str | None) -> dict[str, Any]:
    """The event for the readable view in `lang` (itself without `--lang`)."""
    return event if lang is None else localize_event(event, lang)


def field_note(field: dict[str, Any], lang: str | None) -> str:
    """What follows a field's line with `--lang`: its note in that language (nothing without `--lang`)."""
    if lang is None or not field.get("note"):
        return ""
    return f"  # {translate(field['note'], lang)}"


def write_jsonl(out: IO[str], event: dict[str, Any]) -> None:
    """Writes one event as one JSON line."""
    out.write(orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE).decode())


def body_text(hex_body: str, limit: int = 40) -> str:
    """A body given as hex, for a one-line view: quoted text where it is text, else 0x and hex; cut at `limit`."""
    raw = bytes.fromhex(hex_body[: limit * 2])
    text = text_or_hex(raw)
    more = "…" if len(hex_body) > limit * 2 else ""
    return (repr(text) if text != raw.hex() or not raw else "0x" + text) + more


def summary(event: dict[str, Any]) -> str:
    """A Wireshark-Info-column style summary of one event."""
    kind = event["kind"]
    if kind == "greeting" and event.get("transport") == "zws":
        return _zws_greeting(event)
    if kind == "greeting":
        version = event.get("version")
        if version in ("1.0", "2.0"):
            extra = f" {event['socket_type']}" if event.get("socket_type") else ""
            ident = event.get("identity") or ""
            return f"Greeting ZMTP {version}{extra} identity={body_text(ident) if ident else '(none)'}"
        role = " as-server" if event.get("as_server") else ""
        return f"Greeting ZMTP {version} {event.get('mechanism')}{role}"
    if kind == "command":
        name = event.get("name", "?")
        parts = [name]
        props = event.get("properties")
        if props:
            parts.append(" ".join(f"{k}={v}" for k, v in props.items()))
        if "reason" in event:
            parts.append(repr(event["reason"]))
        if "ttl" in event:
            parts.append(f"ttl={event['ttl'] / 10:g}s context={event.get('context') or '(empty)'}")
        elif "context" in event:
            parts.append(f"context={event['context'] or '(empty)'}")
        if "topic" in event:
            parts.append(body_text(event["topic"]) if event["topic"] else "'' (everything)")
        if "username" in event:
            parts.append(f"username={event['username']!r} password={event.get('password', '')!r}")
        if event.get("encrypted"):
            parts.append(f"[encrypted box {event.get('box_size', '')}]".replace(" ]", "]"))
        return " ".join(parts)
    if kind == "frame":
        flags = [f for f, on in (("MORE", event.get("more")), ("LONG", event.get("long"))) if on]
        cut = " (truncated)" if event.get("truncated") else ""
        return f"Frame {'|'.join(flags) or '-'} size={event.get('size')} {body_text(event.get('body', ''))}{cut}"
    if kind == "message":
        frames = event.get("frames", [])
        shown = ", ".join(body_text(f, 24) for f in frames[:4])
        more = f", … {len(frames) - 4} more" if len(frames) > 4 else ""
        return f"Message [{len(frames)} frame{'s' if len(frames) != 1 else ''}] {shown}{more}"
    if kind == "expert":
        return f"Expert {event.get('severity', '').upper()}: {event.get('text')}"
    if kind == "gap":
        return f"Gap: {event['length']} bytes missing from the capture"
    return kind


def _zws_greeting(event: dict[str, Any]) -> str:
    """A ZWS greeting (45/ZWS): the HTTP upgrade, or a routing id."""
    if "identity" in event:
        ident = event["identity"]
        return f"Greeting ZWS routing id={body_text(ident) if ident else '(none)'}"
    chosen = event.get("protocol") or "(none)"
    if "target" in event:
        return f"Greeting ZWS upgrade GET {event['target']} offers {','.join(event.get('protocols') or [])}"
    return f"Greeting ZWS upgrade {event.get('status')} {chosen}"


def write_line(out: IO[str], event: dict[str, Any]) -> None:
    """Writes one event as a readable line: connection, direction, offset, summary."""
    conn = event.get("conn")
    where = f"{conn:>3} " if conn is not None else ""
    direction = {"c2s": "C->S", "s2c": "S->C"}.get(event.get("dir", ""), "    ")
    packets = event.get("packets")
    pk = f" #{','.join(map(str, packets[:3]))}{'…' if len(packets) > 3 else ''}" if packets else ""
    out.write(f"{where}{direction} {event['offset']:>8} +{event['length']:<6} {summary(event)}{pk}\n")
