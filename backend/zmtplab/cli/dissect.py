"""`zmtplab dissect`: a pcap or pcapng capture to annotated ZMTP events."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..capture.dissect import DissectResult, dissect_capture, dissect_capture_jsonl
from ..capture.errors import CaptureFormatError
from ..engine.events import WIRE_KINDS
from .output import add_lang_option, field_note, localized, read_curve_keylog, write_jsonl, write_line


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `dissect` subcommand."""
    p = sub.add_parser("dissect", help="annotate every ZMTP byte of a pcap/pcapng capture",
                       description="Find ZMTP connections on any TCP port of a capture and print one event per "
                                   "protocol element. Protocol errors are events (exit 0); a file that is not a "
                                   "capture exits 2.")
    p.add_argument("capture", type=Path, help="a pcap or pcapng file")
    p.add_argument("--jsonl", action="store_true", help="print JSON lines (the event contract)")
    add_lang_option(p)
    p.add_argument("--no-fields", action="store_true", help="leave out the fields of each event")
    p.add_argument("--max-body", type=int, default=None, metavar="N", help="cut bodies to N octets")
    p.add_argument("--conn", action="append", metavar="ID", help="only these connection ids (repeatable)")
    p.add_argument("--kind", action="append", choices=WIRE_KINDS, help="only these kinds (repeatable)")
    p.add_argument("--curve-keylog", type=Path, metavar="FILE",
                   help="a CURVE key log (CURVE_SESSION_KEY lines, as `zmtplab peer --keylog` and a session's "
                        "export.keylog write them): each box of those connections is followed by what it holds")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Dissects and prints; returns the exit status."""
    conns = set(args.conn) if args.conn else None
    kinds = set(args.kind) if args.kind else None
    result = DissectResult()
    options = {"with_fields": not args.no_fields, "max_body": args.max_body, "result": result}
    keys = read_curve_keylog(args.curve_keylog, "dissect")
    if keys is False:
        return 2
    if keys is not None:
        options["curve_keys"] = keys
    try:
        with open(args.capture, "rb") as handle:
            if args.jsonl and conns is None and kinds is None:  # (the contract: --lang changes nothing here)
                _write_jsonl(dissect_capture_jsonl(handle, **options))
            else:
                _write_events(dissect_capture(handle, **options), args, conns, kinds)
    except CaptureFormatError as exc:
        print(f"zmtplab dissect: {args.capture}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise  # `| head` closed the pipe: main() ends quietly
    except OSError as exc:
        print(f"zmtplab dissect: {exc.strerror or exc}: {args.capture}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    if result.error:
        # The capture is damaged part-way: what could be read was printed; say where it stopped.
        print(f"zmtplab dissect: warning: {args.capture}: {result.error}", file=sys.stderr)
    if conns is not None:
        missing = sorted(conns - {c.conn for c in result.connections}, key=_conn_order)
        if missing:
            print(f"zmtplab dissect: {args.capture}: no connection {', '.join(missing)}; "
                  f"{_connection_list(result.connections)}", file=sys.stderr)
            return 2
    if not any(c.zmtp for c in result.connections):
        print(f"zmtplab dissect: {args.capture}: no ZMTP connections found "
              f"({len(result.connections)} TCP connections)", file=sys.stderr)
    return 0


def _conn_order(conn: str) -> tuple[int, str]:
    return (int(conn), conn) if conn.isdigit() else (1 << 62, conn)


def _connection_list(infos: list, limit: int = 20) -> str:
    """The connections a capture has, as a reader picks one: `its connections are 0 (ZMTP), 1, ...`."""
    if not infos:
        return "it has no TCP connection"
    shown = [f"{i.conn}{' (ZMTP)' if i.zmtp else ''}" for i in sorted(infos, key=lambda i: _conn_order(i.conn))]
    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return f"its connections are {', '.join(shown[:limit])}{more}"


def _write_jsonl(pieces: Iterator[str]) -> None:
    """Writes JSON lines text to stdout as UTF-8, each piece as it comes.

    (The file object buffers small pieces; a piece is never joined with others first: at hundreds
    of MB, copying the text into fresh large strings costs more than the writes.)"""
    sys.stdout.flush()
    out = sys.stdout.buffer
    write = out.write
    for piece in pieces:
        if piece:
            write(piece.encode())
    out.flush()


def _write_events(events: Iterator[dict[str, Any]], args: argparse.Namespace, conns: set[str] | None,
                  kinds: set[str] | None) -> None:
    """Writes event dicts one by one (JSON lines or the readable view), filtered by connection and kind."""
    out = sys.stdout
    write = write_jsonl if args.jsonl else write_line
    show_fields = not args.jsonl and not args.no_fields
    lang = None if args.jsonl else args.lang
    for event in events:
        if conns is not None and event["conn"] not in conns:
            continue
        if kinds is not None and event["kind"] not in kinds:
            continue
        event = localized(event, lang)
        write(out, event)
        if show_fields:
            for f in event.get("fields", ()):
                out.write(f"{'':>26}{f['offset']:>8} +{f['length']:<5} {f['name']}: {f['value']}"
                          f"{field_note(f, lang)}\n")
