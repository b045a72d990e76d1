"""Decoding one direction's bytes from hex: shared by `zmtplab decode` and `POST /api/decode`."""

from __future__ import annotations

from typing import Any

from .engine.decoder import StreamDecoder
from .engine.detection import FAMILY_V1
from .engine.events import Expert, WireEvent
from .engine.framing import v1_stream_problem

VERSIONS = ("auto", "1.0", "2.0", "3")
"""What `decode_bytes` may be told the bytes are: `auto` detects, the others force that reading."""


def decode_bytes(data: bytes, *, version: str = "auto") -> list[WireEvent]:
    """Decodes one direction's bytes from the first byte, with a note saying which reading was chosen and why.

    `auto` follows 23/ZMTP's detection: a %xFF signature starts a 2.0 or 3.x greeting (or a long 1.0
    identity frame); any other first octet is a 1.0 identity frame's length, read as ZMTP 1.0 when the
    bytes form a valid 1.0 stream, else as ZMTP 3.x frames without a greeting. `1.0` reads a 1.0
    stream from its identity frame; `2.0` and `3` read from a greeting when the bytes start with a
    %xFF signature, else frames of that version without a greeting.
    """
    if version not in VERSIONS:
        raise ValueError(f"unknown version {version!r}: one of {', '.join(VERSIONS)}")
    framing, text = _reading(data, version)
    decoder = StreamDecoder(framing=framing,
                            peer_family=(lambda: FAMILY_V1) if version == "1.0" else None)
    events: list[WireEvent] = []
    if text:
        events.append(Expert(0, 0, severity="note", text=text, rule="greeting"))
    decoder.receive_data(data)
    decoder.close()
    events.extend(decoder.events())
    return events


def _reading(data: bytes, version: str) -> tuple[str | None, str | None]:
    """The decoder's framing (None: from a greeting) and the note that explains the choice."""
    if version == "1.0":
        return None, "read as ZMTP 1.0 from its identity frame, as asked"
    signature = data[:1] == b"\xff" and (len(data) < 10 or data[9] & 1)
    if version in ("2.0", "3"):
        if signature:
            return None, None
        name = "2.0" if version == "2.0" else "3.x"
        return version[0], f"no greeting: decoding ZMTP {name} frames from the first byte, as asked"
    if signature:
        return None, None  # the greeting says what follows
    if data[:1] == b"\xff":
        return None, ("read as ZMTP 1.0: %xFF with bit 0 of the 10th octet clear is the long length of a 1.0 "
                      "identity frame, not a signature (23/ZMTP's detection rule)")
    if not data:
        return None, None
    problem = v1_stream_problem(data)
    if problem is None:
        return None, ("no %xFF signature: read as ZMTP 1.0, since the bytes form a valid 1.0 stream (an identity "
                      "frame, then frames whose length counts the flags octet; 23/ZMTP's detection rule)")
    offset, why = problem
    return "3", (f"no greeting: decoding ZMTP 3.x frames from the first byte (the first octet is not %xFF, but "
                 f"the bytes are not a ZMTP 1.0 stream: at offset {offset}, {why})")


def decode_to_dicts(data: bytes, *, with_fields: bool = True, max_body: int | None = None,
                    conn: str = "0", direction: str = "c2s", version: str = "auto") -> list[dict[str, Any]]:
    """`decode_bytes` as event-contract dicts, each with `conn` and `dir` first."""
    return [{"conn": conn, "dir": direction, **event.to_dict(with_fields=with_fields, max_body=max_body)}
            for event in decode_bytes(data, version=version)]
