"""A pcapng block whose length is not a multiple of 4 is corrupt (pcapng: every block is padded to
32 bits): both the sequential reader and the pipeline's range scanner refuse it, at the same byte."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

from zmtplab.capture.errors import CaptureFormatError
from zmtplab.capture.pcapfile import CaptureReader
from zmtplab.capture.pcapwriter import PcapngWriter
from zmtplab.pipeline.ranges import chain_scans, error_message, nominal_ranges, probe, read_range, scan_range

CLIENT = ("192.0.2.1", 40000)
SERVER = ("192.0.2.2", 5555)


def _header_length() -> int:
    """Bytes of the section header and interface blocks a fresh `PcapngWriter` writes."""
    f = io.BytesIO()
    PcapngWriter(f)
    return len(f.getvalue())


def capture_with_odd_block(tmp_path: Path, odd: int) -> tuple[Path, int, int]:
    """A capture of 7 frames whose 6th frame's block is `odd` bytes longer than a multiple of 4,
    both its length fields saying so (so only the alignment rule can catch it).

    Returns the path, the offset of that block and its length."""
    header = _header_length()
    f = io.BytesIO()
    c = PcapngWriter(f).add_connection(CLIENT, SERVER)
    c.handshake(1.0)
    c.send("c2s", b"hello", 2.0)  # frames 4 and 5 (data, ACK)
    head = f.getvalue()
    # Frame 6 by hand: an enhanced packet block without its padding, so its length is not aligned.
    g = io.BytesIO()
    PcapngWriter(g).add_connection(CLIENT, SERVER).segment("c2s", 2.5, b"ab" + b"x" * odd)
    block = g.getvalue()[header:]
    caplen = struct.unpack_from("<I", block, 20)[0]
    body = block[8:8 + 20 + caplen]  # the block's fields and the frame, no padding
    total = 12 + len(body)
    assert total % 4 == odd
    bad = struct.pack("<II", 6, total) + body + struct.pack("<I", total)
    h = io.BytesIO()
    PcapngWriter(h).add_connection(CLIENT, SERVER).send("c2s", b"more", 3.0)  # frames 7 and 8
    path = tmp_path / f"odd{odd}.pcapng"
    path.write_bytes(head + bad + h.getvalue()[header:])
    return path, len(head), total


@pytest.mark.parametrize("odd", [1, 2, 3])
def test_the_reader_refuses_a_block_length_that_is_not_a_multiple_of_four(tmp_path, odd):
    path, at, total = capture_with_odd_block(tmp_path, odd)
    frames = []
    with pytest.raises(CaptureFormatError) as caught:
        for frame in CaptureReader(path).frames():
            frames.append(frame.number)
    assert frames == [1, 2, 3, 4, 5]  # everything before the bad block is kept
    assert str(caught.value) == (f"The capture is corrupt: a block (type 0x00000006) with impossible length "
                                 f"{total} at byte {at} (after frame 5).")
    assert caught.value.offset == at


@pytest.mark.parametrize("odd", [1, 2, 3])
@pytest.mark.parametrize("split", [64, 1 << 20])
def test_the_range_scanner_refuses_it_at_the_same_byte(tmp_path, odd, split):
    path, at, _total = capture_with_odd_block(tmp_path, odd)
    header = probe(str(path))
    scans = [scan_range(header, i, s, e) for i, (s, e) in enumerate(nominal_ranges(header, split))]
    planned, err, _rescans = chain_scans(header, scans)
    assert err is not None and (err.kind, err.offset, err.frames) == ("corrupt", at, 5)
    try:
        for _ in CaptureReader(path).frames():
            pass
    except CaptureFormatError as exc:
        assert error_message(err) == str(exc)
    assert [p.number for r in planned for p in read_range(r)] == [1, 2, 3, 4, 5]
