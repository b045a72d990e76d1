"""Synthetic captures several test folders share (on `sys.path` through pytest's `pythonpath`), written with
the project's `PcapngWriter`: connections nothing can be read of as ZMTP, for the `unreadable` notes, and a
real capture several times over, for the work that only shows on a big one."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from zmtplab.capture.pcapfile import CaptureReader
from zmtplab.capture.pcapwriter import PcapngWriter

CLIENT, SERVER = ("10.0.0.1", 40000), ("10.0.0.2", 5555)


def capture(build: Callable[[PcapngWriter], None]) -> bytes:
    """The pcapng bytes `build` writes."""
    out = io.BytesIO()
    build(PcapngWriter(out))
    return out.getvalue()


def middle_of_a_frame(writer: PcapngWriter) -> None:
    """A capture started inside a frame body and stopped before its end: no SYN, no frame boundary, 20,000 bytes."""
    conn = writer.add_connection(CLIENT, SERVER, mss=1400)
    conn.seq["c2s"] = (conn.seq["c2s"] + 5000) & 0xFFFFFFFF  # the first 5000 bytes were never captured
    conn.send("c2s", b"\x5a" * 20_000, 1.0)


def not_zmtp(writer: PcapngWriter) -> None:
    """An HTTP exchange on port 80: 27 bytes of request, 24 of response."""
    conn = writer.add_connection(CLIENT, ("10.0.0.2", 80))
    conn.handshake(1.0)
    conn.send("c2s", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1.1)
    conn.send("s2c", b"HTTP/1.1 200 OK\r\n\r\nhello", 1.2)
    conn.close(2.0)


def copies(source: Path, count: int, out: Path) -> Path:
    """Writes the Ethernet capture `source` `count` times over to `out`, one copy after the other, each copy's
    IPv4 packets on an address of their own (10.0.0.1, 10.0.0.2, ...: both ends, so each copy's connections are
    new ones); returns `out`."""
    frames = [(frame.data, frame.ts) for frame in CaptureReader(str(source)).frames()]
    span = frames[-1][1] - frames[0][1] + 1.0 if frames else 0.0
    with open(out, "wb") as f:
        writer = PcapngWriter(f)
        for n in range(count):
            address = bytes([10, 0, 0, n + 1])
            for data, ts in frames:
                if len(data) >= 34 and data[12:14] == b"\x08\x00":  # (IPv4: source and destination at 26-33)
                    data = data[:26] + address + address + data[34:]
                writer.write_frame(data, ts + n * span)
        writer.flush()
    return out
