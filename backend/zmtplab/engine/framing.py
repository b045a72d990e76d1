"""Frame encoding and the fields of a frame header, for the three framings ZMTP has had.

- "3": 23/ZMTP and 37/ZMTP (flags, 1 or 8 octet size, body; COMMAND bit).
- "2": 15/ZMTP (flags, 1 or 8 octet size, body; no commands).
- "1": 13/ZMTP (length that includes the flags octet, then flags, then body).
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any

from .constants import FLAG_COMMAND, FLAG_LONG, FLAG_MORE
from .fields import Field, text_or_hex

U64 = struct.Struct(">Q")

SHORT_HEADERS = (tuple(bytes((0, n)) for n in range(256)), tuple(bytes((FLAG_MORE, n)) for n in range(256)))
"""The headers of short message frames, final and MORE, indexed [flags][size]: made once, not per frame."""


def frame_head(buf: bytes | bytearray | memoryview, pos: int, framing: str = "3") -> tuple[int, int, int] | None:
    """The frame header at `buf[pos:]` as (header length, flags, body size), or None while it is not all there.

    The one reading of a frame header's layout, for every framing: a 2.0/3.x header is flags then a 1-octet size, or
    a 9-octet one with LONG set; a 1.0 header a 1-octet length (0xFF: an 8-octet one follows) counting the flags
    octet, then flags, so its body size is the length less one (-1 for the invalid length 0). Nothing is judged here
    (reserved bits, sizes, commands): each caller keeps its own rules. (`batch.scan_run` reads the plain case of
    many headers in one loop, the same layout: a property test holds the two together.)
    """
    if len(buf) - pos < 2:
        return None
    first = buf[pos]
    if framing == "1":
        if first == 0xFF:
            if len(buf) - pos < 10:
                return None
            return 10, buf[pos + 9], U64.unpack_from(buf, pos + 1)[0] - 1
        return 2, buf[pos + 1], first - 1
    if first & FLAG_LONG:
        if len(buf) - pos < 9:
            return None
        return 9, first, U64.unpack_from(buf, pos + 1)[0]
    return 2, first, buf[pos + 1]


def encode_frame(body: bytes, *, more: bool = False, command: bool = False, framing: str = "3") -> bytes:
    """The wire bytes of one frame carrying `body` in the given framing."""
    size = len(body)
    if framing == "1":
        length = size + 1
        flags = FLAG_MORE if more else 0
        if length < 255:
            return bytes((length, flags)) + body
        return b"\xff" + U64.pack(length) + bytes((flags,)) + body
    flags = (FLAG_MORE if more else 0) | (FLAG_COMMAND if command else 0)
    if size <= 255:
        return bytes((flags, size)) + body
    return bytes((flags | FLAG_LONG,)) + U64.pack(size) + body


def encode_message(frames: list[bytes] | tuple[bytes, ...], framing: str = "3") -> bytes:
    """The wire bytes of a whole message: MORE on every frame but the last."""
    last = len(frames) - 1
    return b"".join(encode_frame(f, more=i < last, framing=framing) for i, f in enumerate(frames))


def flag_names(flags: int, framing: str) -> str:
    """A short text of the flags that are set, e.g. `MORE|LONG`."""
    names = []
    if flags & FLAG_MORE:
        names.append("MORE")
    if framing != "1" and flags & FLAG_LONG:
        names.append("LONG")
    if framing == "3" and flags & FLAG_COMMAND:
        names.append("COMMAND")
    return "|".join(names) or "none"


def header_fields(offset: int, header: bytes, framing: str, *, command: bool = False) -> list[Field]:
    """The flags and size fields of a frame header that starts at stream `offset`."""
    return [Field(d["name"], offset + d["offset"], d["length"], d["value"], d["rule"], d["note"])
            for d in _header_template(bytes(header), framing, command)]


def header_field_dicts(offset: int, header: bytes, framing: str, *, command: bool = False) -> list[dict[str, Any]]:
    """`header_fields` as the JSON contract's dicts (what `Field.to_dict` gives), without the `Field`s."""
    if type(header) is not bytes:
        header = bytes(header)
    out = []
    for template in _header_template(header, framing, command):
        # A copy of a dict with the same keys is cheaper than building one; updating a key keeps its place.
        d = template.copy()
        d["offset"] += offset
        out.append(d)
    return out


@lru_cache(maxsize=4096)
def _header_template(header: bytes, framing: str, command: bool) -> tuple[dict[str, Any], ...]:
    # Everything but the offset follows from the header's octets, and most streams use a handful of
    # headers: build the fields once per header (at offset 0) and only copy and shift them (a frame's
    # fields are made for every frame a session or a capture shows). Callers copy: never mutate these.
    return tuple(f.to_dict() for f in _header_fields(0, header, framing, command))


def _header_fields(offset: int, header: bytes, framing: str, command: bool) -> list[Field]:
    if framing == "1":
        if header[0] == 0xFF:
            length = U64.unpack_from(header, 1)[0]
            flags = header[9]
            return [
                Field("length-escape", offset, 1, 255, "length",
                      "0xFF says the real length follows as a 64-bit integer (13/ZMTP)."),
                Field("length", offset + 1, 8, length, "length",
                      "Frame length including the flags octet, network byte order."),
                Field("flags", offset + 9, 1, f"0x{flags:02x} ({flag_names(flags, framing)})", "flags",
                      "Bit 0 is MORE; bits 1-7 are reserved (13/ZMTP)."),
            ]
        return [
            Field("length", offset, 1, header[0], "length",
                  "Frame length including the flags octet, so an empty frame says 1 (13/ZMTP)."),
            Field("flags", offset + 1, 1, f"0x{header[1]:02x} ({flag_names(header[1], framing)})", "flags",
                  "Bit 0 is MORE; bits 1-7 are reserved (13/ZMTP)."),
        ]
    flags = header[0]
    what = "command" if command else "message frame"
    fields = [
        Field("flags", offset, 1, f"0x{flags:02x} ({flag_names(flags, framing)})", "flags",
              f"Flags of this {what}: bit 0 MORE, bit 1 LONG"
              + (", bit 2 COMMAND; bits 7-3 reserved." if framing == "3" else "; bits 7-2 reserved (15/ZMTP)."))
    ]
    if flags & FLAG_LONG:
        fields.append(Field("size", offset + 1, 8, U64.unpack_from(header, 1)[0], "long-size",
                            "Body size as a 64-bit unsigned integer in network byte order (LONG is set)."))
    else:
        fields.append(Field("size", offset + 1, 1, header[1], "short-size",
                            "Body size in one octet: 0 to 255 (LONG is clear)."))
    return fields


def body_field(offset: int, body: bytes, *, name: str = "body", rule: str = "message-body",
               note: str = "Application data; ZMTP never looks inside it.", limit: int = 4096) -> Field:
    """A field for an opaque body, its value as text or hex (cut at `limit` octets for display)."""
    return Field(name, offset, len(body), body_value(body, limit), rule, note)


def body_value(body: bytes, limit: int = 4096) -> str:
    """The value of a body field: the body as text or hex, cut at `limit` octets."""
    if type(body) is bytes and len(body) <= limit:  # the common case, without a copy
        return text_or_hex(body)
    value = text_or_hex(body[:limit])  # (a body may also be a stand-in for one stored cut short)
    if len(body) > limit:
        value += f"… ({len(body) - limit} more octets)"
    return value


BODY_RULE = "message-body"
BODY_NOTE = "Application data; ZMTP never looks inside it."


def v1_stream_problem(data: bytes | bytearray) -> tuple[int, str] | None:
    """Why `data` is not one direction of a ZMTP 1.0 stream from its first byte, or None when it is.

    A 1.0 stream (13/ZMTP) is an identity frame (flags not validated) and then frames whose
    length counts their flags octet (so it is at least 1) and whose flags have only bit 0 (MORE)
    set; the frames tile the bytes exactly, except that the last one may be cut short. The answer
    is the offset where the reading fails and what is wrong there.
    """
    pos, end, first = 0, len(data), True
    while pos < end:
        head = frame_head(data, pos, "1")
        if head is None:
            if data[pos] == 0:
                break  # (a zero length is said below, before a cut header)
            if data[pos] == 0xFF:
                return pos, "the stream ends inside a long frame header"
            return pos, "the stream ends inside a frame header"
        head_length, flags, size = head
        if first and head_length == 10 and flags & 1:
            return pos, "it starts with a %xFF signature, not a 1.0 identity frame"
        if size < 0:
            break
        if not first and flags & 0xFE:
            return pos + head_length - 1, f"flags 0x{flags:02x} set reserved bits (a 1.0 frame has only MORE)"
        pos += head_length + size
        first = False
    else:
        return None
    return pos, "a frame length of 0 (a 1.0 length counts the flags octet, so it is at least 1)"
