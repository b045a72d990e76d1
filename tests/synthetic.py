"""Small synthetic captures several test folders share (on `sys.path` through pytest's `pythonpath`), written
with the project's `PcapngWriter`: connections nothing can be read of as ZMTP, for the `unreadable` notes."""

from __future__ import annotations

import io
from collections.abc import Callable

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
