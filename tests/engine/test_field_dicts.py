"""The direct JSON forms of frames and messages (`field_dicts`, `to_dict`'s fast path, the cached header
fields) give exactly what the generic path gives: `[f.to_dict() for f in event.fields]` and the dict built
from `info()`."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from zmtplab.engine.events import Frame, Message, WireEvent
from zmtplab.engine.framing import U64, _header_fields, body_field, header_field_dicts, header_fields


def generic_dict(event: WireEvent, **kwargs: Any) -> dict[str, Any]:
    """What `WireEvent.to_dict` gives with the `Field` objects (the reference the fast paths must match)."""
    out = WireEvent.to_dict(event, with_fields=False, **kwargs)
    if kwargs.get("max_body") is not None and isinstance(event, Frame) and len(event.body) > kwargs["max_body"]:
        out["hex"] = event.header.hex() + event.body[:kwargs["max_body"]].hex()
    out["fields"] = [f.to_dict() for f in event.fields]
    return out


def make_frame(offset: int, body: bytes, flags: int, framing: str, long: bool, truncated: bool = False) -> Frame:
    size = len(body)
    if framing == "1":
        header = (b"\xff" + U64.pack(size + 1) + bytes((flags & 1,))) if long else bytes((size + 1, flags & 1))
    elif long:
        header = bytes((flags | 0x02,)) + U64.pack(size)
    else:
        header = bytes((flags & ~0x02, size))
    return Frame(offset, len(header) + size, flags=header[-1] if framing == "1" else header[0], size=size,
                 header=header, body=body, framing=framing, truncated=truncated)


bodies = st.one_of(st.binary(max_size=300), st.text(max_size=80).map(lambda s: s.encode()),
                   st.sampled_from([b"", b"\x00", b"caf\xc3\xa9", b"\xff\xfe", b"a\nb", b"x" * 4097, b"\x80" * 5000]))


@settings(max_examples=300, deadline=None)
@given(offset=st.integers(0, 1 << 40), body=bodies, flags=st.integers(0, 255), framing=st.sampled_from("123"),
       long=st.booleans(), truncated=st.booleans())
def test_frame_dicts_equal_the_generic_ones(offset, body, flags, framing, long, truncated):
    if len(body) > 255 and framing != "1":
        long = True
    if framing == "1" and len(body) >= 254:
        long = True
    frame = make_frame(offset, body, flags, framing, long, truncated)
    assert frame.field_dicts() == [f.to_dict() for f in frame.fields]
    assert frame.to_dict() == generic_dict(frame)
    assert list(frame.to_dict()) == list(generic_dict(frame))  # the same keys in the same order (same JSON)
    assert frame.to_dict(with_fields=False) == WireEvent.to_dict(frame, with_fields=False)
    assert frame.to_dict(max_body=16) == generic_dict(frame, max_body=16)


@settings(max_examples=200, deadline=None)
@given(offset=st.integers(0, 1 << 32), parts=st.lists(bodies, min_size=1, max_size=4))
def test_message_dicts_equal_the_generic_ones(offset, parts):
    frames = []
    at = offset
    for i, body in enumerate(parts):
        frame = make_frame(at, body, 1 if i < len(parts) - 1 else 0, "3", len(body) > 255)
        frames.append(frame)
        at += frame.length
    message = Message(offset, at - offset, parts=tuple(frames))
    assert message.field_dicts() == [f.to_dict() for f in message.fields]
    assert message.to_dict() == generic_dict(message)
    assert list(message.to_dict()) == list(generic_dict(message))
    assert message.to_dict(max_body=4) == generic_dict(message, max_body=4)


def test_cached_header_fields_equal_fresh_ones():
    for framing in "123":
        for header in (b"\x00\x05", b"\x01\x00", b"\x04\x07", b"\x05\x05", b"\xff\x10",
                       b"\x02" + U64.pack(300), b"\x07" + U64.pack(1 << 40), b"\xff" + U64.pack(301) + b"\x01"):
            if framing == "1" and header[0] == 0xFF and len(header) != 10:
                continue
            if framing != "1" and header[0] & 2 and len(header) != 9:
                continue
            for command in (False, True):
                for offset in (0, 7, 1 << 33):
                    fresh = _header_fields(offset, header, framing, command)
                    assert header_fields(offset, header, framing, command=command) == fresh
                    assert header_field_dicts(offset, header, framing, command=command) == [f.to_dict() for f in fresh]


def test_body_field_of_a_body_stored_cut_short():
    """A stand-in that reports the real length but holds only a prefix (the capture store's) still works."""

    class LongBody:
        def __init__(self, prefix: bytes, length: int) -> None:
            self.prefix, self.length = prefix, length

        def __len__(self) -> int:
            return self.length

        def __getitem__(self, item: slice) -> bytes:
            return self.prefix[item]

    assert body_field(10, LongBody(b"hello", 300)).value == "hello"  # type: ignore[arg-type]
    assert body_field(10, LongBody(b"x" * 4096, 5000)).value == "x" * 4096 + "… (904 more octets)"  # type: ignore[arg-type]
