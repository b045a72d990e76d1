"""`zmtplab illustrate`: a capture or a session export as one self-contained illustrated HTML page,
with the pyzmq script that reproduces the conversation beside it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..capture.errors import CaptureFormatError
from ..i18n import LANGS
from ..illustrate import load, render, reproduce_script
from ..illustrate.document import DEFAULT_MAX_ELEMENTS, SourceError


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `illustrate` subcommand."""
    p = sub.add_parser("illustrate", help="write one self-contained HTML page explaining every octet",
                       description="Every element of a capture's ZMTP connections (or a playground session's "
                                   "export.json) as one HTML file: the sequence, each element's octet table, hex "
                                   "and fields with their explanations and ABNF rules; no server or script needed "
                                   "to read it. Beside it, a pyzmq script that reproduces the first connection.")
    p.add_argument("source", type=Path, help="a pcap/pcapng capture or a session's export.json")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.html", help="the page to write")
    p.add_argument("--conn", action="append", metavar="ID", help="only these connection ids (repeatable)")
    p.add_argument("--from", dest="first", type=int, default=None, metavar="I",
                   help="the first element, by its index within its connection (the capture viewer's)")
    p.add_argument("--to", dest="last", type=int, default=None, metavar="J", help="the last element, inclusive")
    p.add_argument("--max-elements", type=int, default=DEFAULT_MAX_ELEMENTS, metavar="N",
                   help=f"at most N elements per connection (default {DEFAULT_MAX_ELEMENTS})")
    p.add_argument("--no-script", action="store_true", help="write no reproducing script")
    p.add_argument("--lang", choices=LANGS, default="en", help="the page's language (its words, the fields' notes, "
                                                              "the expert texts); the script stays Python")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Writes the page (and the script); returns the exit status."""
    try:
        doc = load(args.source, conns=args.conn, first=args.first, last=args.last, max_elements=args.max_elements)
    except (CaptureFormatError, SourceError) as exc:
        print(f"zmtplab illustrate: {args.source}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"zmtplab illustrate: {exc}", file=sys.stderr)
        return 2
    script = script_path = None
    if not args.no_script:
        script = reproduce_script(doc.sections[0], title=doc.title)
        script_path = args.output.with_suffix(".py")
    try:
        if script is not None and script_path is not None:
            script_path.write_text(script, encoding="utf-8")
        args.output.write_text(render(doc, script=script, script_name=script_path and script_path.name,
                                      lang=args.lang), encoding="utf-8")
    except OSError as exc:
        print(f"zmtplab illustrate: {exc}", file=sys.stderr)
        return 2
    elements = sum(len(s.shown()) for s in doc.sections)
    print(f"wrote {args.output} ({len(doc.sections)} connection(s), {elements} elements)"
          + (f" and {script_path}" if script_path else ""), file=sys.stderr)
    return 0
