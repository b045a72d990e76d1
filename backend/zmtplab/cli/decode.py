"""`zmtplab decode`: one direction's bytes, from the first byte, to annotated events."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..engine.decoder import StreamDecoder
from .output import write_jsonl, write_line

HEX_CLEAN = re.compile(r"(0x|\\x|[\s:,.-])", re.IGNORECASE)


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `decode` subcommand."""
    p = sub.add_parser("decode", help="decode one direction's ZMTP bytes from hex or a file",
                       description="Decode one direction of a ZMTP connection from its first byte. Frames are "
                                   "decoded even with no greeting before them (that is flagged).")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--hex", help="the bytes as hex (spaces, colons and 0x prefixes allowed)")
    src.add_argument("--file", type=Path, help="a file holding the raw bytes (- for standard input)")
    p.add_argument("--jsonl", action="store_true", help="print JSON lines (the event contract)")
    p.add_argument("--no-fields", action="store_true", help="leave out the fields of each event")
    p.add_argument("--max-body", type=int, default=None, metavar="N", help="cut bodies to N octets")
    p.set_defaults(func=run)


def parse_hex(text: str) -> bytes:
    """Bytes from a hex string that may hold spaces, colons, commas and 0x/\\x prefixes."""
    cleaned = HEX_CLEAN.sub("", text)
    if len(cleaned) % 2:
        raise ValueError("odd number of hex digits")
    return bytes.fromhex(cleaned)


def decode_bytes(data: bytes) -> list:
    """Decodes one direction's bytes: as a stream from its greeting, or as bare frames when there is none."""
    framing = None if data[:1] == b"\xff" or _looks_like_v1_greeting(data) else "3"
    decoder = StreamDecoder(framing=framing)
    events = []
    if framing is not None:
        from ..engine.events import Expert

        events.append(Expert(0, 0, severity="note", text="no greeting: decoding ZMTP 3.x frames from the first byte",
                             rule="greeting"))
    decoder.receive_data(data)
    decoder.close()
    events.extend(decoder.events())
    return events


def _looks_like_v1_greeting(data: bytes) -> bool:
    # A 3.x frame starts with a flags octet 0x00-0x07; a ZMTP 1.0 identity frame starts with
    # its length and a zero idflags octet, which 3.x frames rarely look like.
    return len(data) >= 2 and data[0] not in range(8) and data[1] == 0


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
        print(f"zmtplab decode: {exc}", file=sys.stderr)
        return 2
    out = sys.stdout
    for event in decode_bytes(data):
        as_dict = event.to_dict(with_fields=not args.no_fields, max_body=args.max_body)
        as_dict = {"conn": "0", "dir": "c2s", **as_dict}
        if args.jsonl:
            write_jsonl(out, as_dict)
        else:
            write_line(out, as_dict)
            if not args.no_fields:
                for f in as_dict.get("fields", []):
                    out.write(f"{'':>14}{f['offset']:>6} +{f['length']:<4} {f['name']}: {f['value']}\n")
    return 0
