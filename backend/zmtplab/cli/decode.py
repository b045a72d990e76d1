"""`zmtplab decode`: one direction's bytes, from the first byte, to annotated events."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..decode import VERSIONS, decode_to_dicts
from ..engine.notation import parse_hex
from ..i18n import translate
from .output import add_lang_option, field_note, localized, write_jsonl, write_line

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `decode` subcommand."""
    p = sub.add_parser("decode", help="decode one direction's ZMTP bytes from hex or a file",
                       description="Decode one direction of a ZMTP connection from its first byte. Frames are "
                                   "decoded even with no greeting before them (that is flagged).")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--hex", help="the bytes as hex (spaces, colons and 0x prefixes allowed)")
    src.add_argument("--file", type=Path, help="a file holding the raw bytes (- for standard input)")
    p.add_argument("--jsonl", action="store_true", help="print JSON lines (the event contract)")
    add_lang_option(p)
    p.add_argument("--no-fields", action="store_true", help="leave out the fields of each event")
    p.add_argument("--max-body", type=int, default=None, metavar="N", help="cut bodies to N octets")
    p.add_argument("--version", choices=VERSIONS, default="auto",
                   help="what the bytes are: auto (23/ZMTP's detection, the default), 1.0 (a 1.0 stream from its "
                        "identity frame), 2.0 or 3 (from a greeting if there is one, else frames of that version)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Decodes and prints."""
    try:
        if args.hex is not None:
            data = parse_hex(args.hex)
        elif str(args.file) == "-":
            data = sys.stdin.buffer.read()
        else:
            data = args.file.read_bytes()
    except (ValueError, OSError) as exc:
        # the hex grammar's problems are catalog texts: said in the reader's language like the notes
        print(f"zmtplab decode: {translate(str(exc), args.lang or 'en')}", file=sys.stderr)
        return 2
    out = sys.stdout
    for as_dict in decode_to_dicts(data, with_fields=not args.no_fields, max_body=args.max_body,
                                   version=args.version):
        if args.jsonl:
            write_jsonl(out, as_dict)
        else:
            as_dict = localized(as_dict, args.lang)
            write_line(out, as_dict)
            if not args.no_fields:
                for f in as_dict.get("fields", []):
                    out.write(f"{'':>14}{f['offset']:>6} +{f['length']:<4} {f['name']}: {f['value']}"
                              f"{field_note(f, args.lang)}\n")
    return 0
