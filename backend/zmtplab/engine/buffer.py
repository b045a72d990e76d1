"""`StreamBuffer`: the bytes one direction received, a read cursor, and where they sit in the stream.

The shape of wsproto's `Buffer`: `feed()` appends what arrived, `consume()` takes bytes at the
cursor, `commit()` forgets what was consumed. Offsets are stream offsets (where a byte sits in
the direction's whole stream), so they stay exact whatever was forgotten, and across bytes that
went by without being fed here (`skip()`: read by someone else, or missing from a capture).

There is no rollback: the decoder's parsers look at `data` from `pos` before they consume, and
consume only whole elements. Its loops that walk many frames read `data` and `base` into locals
and move `pos` themselves (a method call per frame would cost more than the frame).
"""

from __future__ import annotations


class StreamBuffer:
    """Received bytes not yet forgotten: `data`, the cursor `pos` in it, `base` the stream offset of `data[0]`."""

    __slots__ = ("base", "data", "pos")

    def __init__(self) -> None:
        self.data = bytearray()
        self.pos = 0
        self.base = 0

    def __repr__(self) -> str:
        return f"StreamBuffer(offset={self.offset}, available={self.available})"

    @property
    def offset(self) -> int:
        """Stream offset of the next byte not yet consumed."""
        return self.base + self.pos

    @property
    def end(self) -> int:
        """Stream offset just past the last byte fed."""
        return self.base + len(self.data)

    @property
    def available(self) -> int:
        """Bytes fed and not yet consumed."""
        return len(self.data) - self.pos

    def feed(self, data: bytes) -> int:
        """Appends bytes that arrived; returns the stream offset of the first of them."""
        start = self.base + len(self.data)
        self.data += data
        return start

    def consume(self, n: int) -> bytes:
        """The next `n` bytes (fewer if fewer are available); the cursor moves past them."""
        start = self.pos
        out = bytes(self.data[start:start + n])
        self.pos = start + len(out)
        return out

    def commit(self) -> None:
        """Forgets the consumed bytes (offsets stay what they were)."""
        del self.data[: self.pos]
        self.base += self.pos
        self.pos = 0

    def skip(self, n: int = 0) -> None:
        """Forgets everything fed, consumed or not, and moves on past `n` more bytes that never come here."""
        self.base += len(self.data) + n
        self.data = bytearray()
        self.pos = 0


class Buffered:
    """Something that reads one direction through its `buffer`: where its reading stands in the stream."""

    buffer: StreamBuffer

    @property
    def offset(self) -> int:
        """Stream offset of the next byte not yet consumed."""
        return self.buffer.offset

    @property
    def received(self) -> int:
        """Stream offset just past the last byte received."""
        return self.buffer.end
