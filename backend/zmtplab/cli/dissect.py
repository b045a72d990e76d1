"""`zmtplab dissect`: a pcap or pcapng capture to annotated ZMTP events."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..capture.dissect import DissectResult, dissect_capture
from ..capture.errors import CaptureFormatError
from ..engine.events import WIRE_KINDS
from .output import write_jsonl, write_line


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `dissect` subcommand."""
    p = sub.add_parser("dissect", help="annotate every ZMTP byte of a pcap/pcapng capture",
                       description="Find ZMTP connections on any TCP port of a capture and print one event per "
                                   "protocol element. Protocol errors are events (exit 0); a file that is not a "
                                   "capture exits 2.")
    p.add_argument("capture", type=Path, help="a pcap or pcapng file")
    p.add_argument("--jsonl", action="store_true", help="print JSON lines (the event contract)")
    p.add_argument("--no-fields", action="store_true", help="leave out the fields of each event")
    p.add_argument("--max-body", type=int, default=None, metavar="N", help="cut bodies to N octets")
    p.add_argument("--conn", action="append", metavar="ID", help="only these connection ids (repeatable)")
    p.add_argument("--kind", action="append", choices=WIRE_KINDS, help="only these kinds (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Dissects and prints; returns the exit status."""
    conns = set(args.conn) if args.conn else None
    kinds = set(args.kind) if args.kind else None
    result = DissectResult()
    out = sys.stdout
    jsonl = args.jsonl
    write = write_jsonl if jsonl else write_line
    try:
        with open(args.capture, "rb") as handle:
            for event in dissect_capture(handle, with_fields=not args.no_fields, max_body=args.max_body,
                                         result=result):
                if conns is not None and event["conn"] not in conns:
                    continue
                if kinds is not None and event["kind"] not in kinds:
                    continue
                write(out, event)
                if not jsonl and not args.no_fields:
                    for f in event.get("fields", ()):
                        out.write(f"{'':>26}{f['offset']:>8} +{f['length']:<5} {f['name']}: {f['value']}\n")
    except CaptureFormatError as exc:
        print(f"zmtplab dissect: {args.capture}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"zmtplab dissect: {exc.strerror or exc}: {args.capture}", file=sys.stderr)
        return 2
    out.flush()
    if result.error:
        # The capture is damaged part-way: what could be read was printed; say where it stopped.
        print(f"zmtplab dissect: warning: {args.capture}: {result.error}", file=sys.stderr)
    if not any(c.zmtp for c in result.connections):
        print(f"zmtplab dissect: {args.capture}: no ZMTP connections found "
              f"({len(result.connections)} TCP connections)", file=sys.stderr)
    return 0
