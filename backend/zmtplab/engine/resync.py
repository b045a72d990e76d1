"""Finding certain frame boundaries again after a gap in a capture (a lenient decoder's `LOST` state).

After bytes went missing, the next frame header could be anywhere. A decoder keeps the stream offsets where
writes (segments) began after the gap as candidates, and resumes at the first one from which frames parse, by
the framing's rules, to exactly the end of the data received: a chain that ends where the data ends is very
unlikely by chance. `Resync` keeps the candidates; `chain_verdict` judges one.
"""

from __future__ import annotations

from .buffer import StreamBuffer
from .constants import FLAG_COMMAND, FLAG_MORE, RESERVED_V2, RESERVED_V3
from .framing import frame_head

MAX_CANDIDATES = 32  # write boundaries kept while lost (the oldest go first)


class Resync:
    """Where a lost decoder may resume: the candidates since it lost its place at `lost_since`."""

    __slots__ = ("candidates", "lost_since")

    def __init__(self) -> None:
        self.candidates: list[int] = []
        self.lost_since = 0

    def lose(self, offset: int) -> None:
        """Frame boundaries are no longer certain from stream offset `offset`."""
        self.candidates = []
        self.lost_since = offset

    def candidate(self, offset: int) -> None:
        """A write begins at stream offset `offset`: a frame may begin there."""
        self.candidates.append(offset)
        if len(self.candidates) > MAX_CANDIDATES:
            del self.candidates[0]

    def find(self, buffer: StreamBuffer, framing: str, max_held: int | None) -> int | None:
        """The first candidate whose frames end exactly where the data ends (None: none yet). Candidates that can no
        longer be one (a frame that does not parse, or more than `max_held` octets after them) are dropped, and
        with them the bytes before the oldest one left, which can never be decoded."""
        end = buffer.end
        keep: list[int] = []
        for cand in self.candidates:
            verdict = chain_verdict(buffer.data, cand - buffer.base, framing)
            if verdict is True:
                self.candidates = []
                return cand
            if verdict is None and (max_held is None or end - cand <= max_held):
                keep.append(cand)
        self.candidates = keep
        drop_to = (keep[0] if keep else end) - buffer.base
        if drop_to > 0:
            buffer.pos = drop_to
            buffer.commit()
        return None


def chain_verdict(buf: bytearray, start: int, framing: str) -> bool | None:
    """Whether frames parse from `buf[start:]` to exactly the end of `buf`: True, False, or None (undecided yet)."""
    stop = len(buf)
    reserved = RESERVED_V3 if framing == "3" else RESERVED_V2
    too_large = (1 << 40) - (framing == "1")  # a size no capture holds (a 1.0 length counts its flags octet)
    pos = start
    frames = 0
    total = 0
    while pos < stop:
        if stop - pos < 2:
            return None
        if framing != "1" and buf[pos] & reserved:
            return False  # (before the header is all there: it cannot start a frame)
        head = frame_head(buf, pos, framing)
        if head is None:
            return None
        hlen, flags, size = head
        if size > too_large:
            return False
        end = pos + hlen + size
        if framing == "1":
            if size < 0 or flags & 0xFE:
                return False
        elif flags & FLAG_COMMAND:
            if flags & FLAG_MORE:
                return False
            if end <= stop and not plausible_command(buf, pos + hlen, size):
                return False
        if end > stop:
            return None
        frames += 1
        total += end - pos
        pos = end
    return bool(frames >= 2 or total >= 4)


def plausible_command(buf: bytearray, start: int, size: int) -> bool:
    """Whether a command body of `size` octets at `buf[start:]` begins with a plausible name (letters, sized)."""
    if size < 2:
        return False
    name_size = buf[start]
    if name_size == 0 or name_size + 1 > size:
        return False
    name = bytes(buf[start + 1:start + 1 + name_size])
    return name.isalpha() and name.isascii()
