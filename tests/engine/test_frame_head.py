"""The one frame-header reader (`framing.frame_head`) and the plain-case scan (`batch.scan_run`) read the same layout.

Headers are made by the engine's encoder for every framing; the reader must give back what was encoded, say
"not yet" for every cut header, and the scan must stop exactly where the first frame outside the plain case (or an
unfinished message) begins, with the same frame starts as a walk of the reader.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zmtplab.engine.batch import FrameRun, frame_heads, scan_run
from zmtplab.engine.framing import encode_frame, frame_head

SIZES = st.one_of(st.integers(0, 300), st.sampled_from([255, 256, 65_536, 1 << 20]))


@settings(max_examples=200, deadline=None)
@given(size=SIZES, more=st.booleans(), command=st.booleans(), framing=st.sampled_from(["1", "2", "3"]))
def test_the_reader_gives_back_what_was_encoded(size: int, more: bool, command: bool, framing: str) -> None:
    body = bytes(size)
    wire = encode_frame(body, more=more, command=command and framing == "3", framing=framing)
    head = frame_head(wire, 0, framing)
    assert head is not None
    hlen, flags, got = head
    assert got == size and hlen + size == len(wire)
    assert flags & 1 == more
    if framing == "3":
        assert bool(flags & 4) == command
    for cut in range(hlen):  # every header not all here yet
        assert frame_head(wire[:cut], 0, framing) is None
    assert frame_head(b"xy" + wire, 2, framing) == head  # read where it is


def test_the_10_framing_says_an_invalid_zero_length() -> None:
    assert frame_head(b"\x00\x00", 0, "1") == (2, 0, -1)
    assert frame_head(b"\xff" + bytes(8) + b"\x01", 0, "1") == (10, 1, -1)
    assert frame_head(b"\xff" + (256).to_bytes(8, "big") + b"\x00", 0, "1") == (10, 0, 255)


FRAME = st.tuples(st.sampled_from([0, 1, 0, 1, 2, 3, 4, 5, 0x81]), st.one_of(st.integers(0, 40), st.integers(250, 600)))


def _wire(frames: list[tuple[int, int]]) -> bytes:
    out = []
    for flags, size in frames:
        if flags & 2:
            out.append(bytes((flags,)) + size.to_bytes(8, "big"))
        else:
            size = min(size, 255)
            out.append(bytes((flags, size)))
        out.append(bytes(size))
    return b"".join(out)


@settings(max_examples=300, deadline=None)
@given(frames=st.lists(FRAME, max_size=12), cut=st.integers(0, 50), max_size=st.sampled_from([1 << 64, 300]))
def test_the_scan_stops_where_the_plain_case_ends(frames: list[tuple[int, int]], cut: int, max_size: int) -> None:
    wire = _wire(frames)
    wire = wire[:max(len(wire) - cut, 0)]
    # The walk of the reader, with the scan's rule: short final/MORE frames, LONG ones of 256..max_size octets.
    pos, starts, done, whole = 0, [], 0, []
    while (head := frame_head(wire, pos)) is not None:
        hlen, flags, size = head
        plain = flags < 2 or (flags < 4 and 256 <= size <= max_size)
        if not plain or pos + hlen + size > len(wire):
            break
        starts.append(pos)
        pos += hlen + size
        if not flags & 1:
            done, whole = pos, list(starts)
    end, count, found = scan_run(bytearray(wire), 0, max_size)
    assert (end, found) == (done, whole)
    messages = sum(1 for p in whole if not wire[p] & 1)
    assert count == len(whole) + messages
    if whole:
        run = FrameRun(0, wire[:end], 0, "3", count, found)
        assert [p for p, *_ in frame_heads(run.data)] == whole
        bodies = [run.data[p + hlen:e] for p, hlen, _flags, _size, e in frame_heads(run.data)]
        messages = run.messages()
        assert [b for _k, parts in messages for b in parts] == bodies
        assert messages == FrameRun(0, run.data, 0, "3", count).messages()  # (without the scan's starts)
