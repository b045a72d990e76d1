"""Decoding one direction's bytes from hex: shared by `zmtplab decode` and `POST /api/decode`."""

from __future__ import annotations

import re
from typing import Any

from .engine.decoder import StreamDecoder
from .engine.events import Expert, WireEvent

HEX_CLEAN = re.compile(r"(0x|\\x|[\s:,.-])", re.IGNORECASE)


def parse_hex(text: str) -> bytes:
    """Bytes from a hex string that may hold spaces, colons, commas and 0x/\\x prefixes.

    Raises `ValueError` (with a readable message) when the text is not hex.
    """
    cleaned = HEX_CLEAN.sub("", text)
    if len(cleaned) % 2:
        raise ValueError("odd number of hex digits")
    return bytes.fromhex(cleaned)


def decode_bytes(data: bytes) -> list[WireEvent]:
    """Decodes one direction's bytes: as a stream from its greeting, or as bare frames when there is none."""
    framing = None if data[:1] == b"\xff" or _looks_like_v1_greeting(data) else "3"
    decoder = StreamDecoder(framing=framing)
    events: list[WireEvent] = []
    if framing is not None:
        events.append(Expert(0, 0, severity="note", text="no greeting: decoding ZMTP 3.x frames from the first byte",
                             rule="greeting"))
    decoder.receive_data(data)
    decoder.close()
    events.extend(decoder.events())
    return events


def decode_to_dicts(data: bytes, *, with_fields: bool = True, max_body: int | None = None,
                    conn: str = "0", direction: str = "c2s") -> list[dict[str, Any]]:
    """`decode_bytes` as event-contract dicts, each with `conn` and `dir` first."""
    return [{"conn": conn, "dir": direction, **event.to_dict(with_fields=with_fields, max_body=max_body)}
            for event in decode_bytes(data)]


def _looks_like_v1_greeting(data: bytes) -> bool:
    # A 3.x frame starts with a flags octet 0x00-0x07; a ZMTP 1.0 identity frame starts with
    # its length and a zero idflags octet, which 3.x frames rarely look like.
    return len(data) >= 2 and data[0] not in range(8) and data[1] == 0
