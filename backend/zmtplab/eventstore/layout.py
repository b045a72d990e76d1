"""The store's file: a SQLite database used as a container of columnar chunks (no row per event).

A capture's events come out of the dissector in capture order as two kinds of item: runs of
ordinary frames (`SourcedRun`: their octets, nearly every event of a big capture) and single
events (greetings, commands, experts, gaps, and the rare frame or message outside a run). Each
item is one *segment*; consecutive segments are grouped into *chunks* of about `CHUNK_OCTETS`:

- `segs(chunk, data)`: the chunk's segments as a packed numpy array of `SEG` (zlib-compressed): connection number,
  kind (`RUN` for a run), direction, framing, event count, frame count, where its octets (a run)
  or its record (a single event) sit in the chunk, its stream offset, and the packet and time
  its events share;
- `octets(chunk, data)`: the runs' octets, back to back, as the wire carried them (the events of
  a run are the engine's own `Frame`/`Message` decoding of them, made again when read);
- `records(chunk, data)`: the single events as zlib-compressed JSON lines; `fields(chunk, data)` their fields,
  line for line (apart, so a search reads only the records);
- `specials(chunk, data)`: zlib JSON `[seg in chunk, k, packets, ts]` for the events of a run that
  do not share the run's packet and time (those that began in an earlier packet);
- `conns(conn_no, conn, count)` and `meta(key, value)`: connections, summary, analysis, error.

No per-event column is stored: a run's events, their positions in capture order and in their
connection, and their kinds follow from the segments' counts (numpy cumulative sums when the
store is opened). Text search scans the octets as they are (`Finder`: the C library's `memmem`,
per needle and chunk). Pages are 64 KiB, so a chunk's octets read back at several GB/s (SQLite's
default 4 KiB pages make a chain of 256 overflow pages per MiB, about ten times slower).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

import numpy as np

from ..engine.events import WIRE_KINDS, Frame, Message, make_frame, make_message

SEG = np.dtype([
    ("conn", "<u4"), ("kind", "u1"), ("dir", "u1"), ("framing", "u1"), ("count", "<u4"), ("frames", "<u4"),
    ("pos", "<u4"), ("length", "<u4"), ("offset", "<u8"), ("packet", "<u4"), ("ts", "<f8"),
])
RUN = 255  # the `kind` of a run segment; single events have their kind's code
KIND_CODES = {kind: code for code, kind in enumerate(WIRE_KINDS)}
FRAME, MESSAGE = KIND_CODES["frame"], KIND_CODES["message"]
DIRS = ("c2s", "s2c")
NO_PACKET = 0xFFFFFFFF  # a run whose events each have their own source keys (all in `specials`)
CHUNK_OCTETS = 2 << 20
CHUNK_RECORDS = 2048
CHUNK_SEGS = 1 << 16

SCHEMA = """
    PRAGMA page_size=65536;
    PRAGMA journal_mode=OFF;
    PRAGMA synchronous=OFF;
    CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE conns(conn_no INTEGER PRIMARY KEY, conn TEXT UNIQUE, count INTEGER);
    CREATE TABLE segs(chunk INTEGER PRIMARY KEY, data BLOB);
    CREATE TABLE octets(chunk INTEGER PRIMARY KEY, data BLOB);
    CREATE TABLE records(chunk INTEGER PRIMARY KEY, data BLOB);
    CREATE TABLE fields(chunk INTEGER PRIMARY KEY, data BLOB);
    CREATE TABLE specials(chunk INTEGER PRIMARY KEY, data BLOB);
"""


class RunLayout:
    """A stored run's frames and events, found by one walk over its octets; events are made one at a time
    (the engine's `Frame` and `Message`, exactly as `FrameRun.events()` makes them all)."""

    __slots__ = ("bodies", "data", "events", "frames", "framing", "offset")

    def __init__(self, offset: int, data: bytes, framing: int) -> None:
        self.offset = offset
        self.data = data
        self.framing = str(framing)
        frames: list[tuple[int, int, int, int, int]] = []  # (position, header length, flags, size, end)
        events: list[tuple[int, int]] = []  # (first frame, last frame): a frame is (f, -1), a message (first, last)
        bodies: list[tuple[int, int, int, int]] = []  # (body start, body end, frame's event, its message's event)
        pos, n, first = 0, len(data), 0
        while pos < n:
            flags = data[pos]
            if flags & 2:
                hlen = 9
                size = int.from_bytes(data[pos + 1:pos + 9], "big")
            else:
                hlen = 2
                size = data[pos + 1]
            end = pos + hlen + size
            f = len(frames)
            frames.append((pos, hlen, flags, size, end))
            bodies.append((pos + hlen, end, len(events), 0))
            events.append((f, -1))
            if not flags & 1:
                message = len(events)
                for i in range(first, f + 1):
                    bodies[i] = (*bodies[i][:3], message)
                events.append((first, f))
                first = f + 1
            pos = end
        self.frames = frames
        self.events = events
        self.bodies = bodies

    def kind(self, k: int) -> int:
        """The kind code of event `k`."""
        return FRAME if self.events[k][1] < 0 else MESSAGE

    def _frame(self, f: int) -> Frame:
        pos, hlen, flags, size, end = self.frames[f]
        data = self.data
        return make_frame(self.offset + pos, end - pos, flags, size, data[pos:pos + hlen], data[pos + hlen:end],
                          self.framing)

    def event(self, k: int) -> Frame | Message:
        """Event `k` of the run."""
        a, b = self.events[k]
        if b < 0:
            return self._frame(a)
        parts = tuple(self._frame(f) for f in range(a, b + 1))
        start = parts[0].offset
        return make_message(start, parts[-1].offset + parts[-1].length - start, parts)


def _memmem() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        memmem = libc.memmem
    except (OSError, AttributeError):
        return None
    memmem.restype = ctypes.c_void_p
    memmem.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    return memmem


_MEMMEM = _memmem()


class Finder:
    """`bytes.find` over one buffer through the C library's `memmem` where there is one: several times faster
    for the needles of a text search (CPython's own search is slower on a long haystack), and the GIL is
    released while it runs."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)
        self.base = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value if _MEMMEM is not None else None

    def find(self, needle: bytes, start: int = 0) -> int:
        """Where `needle` first occurs at or after `start`, or -1."""
        if self.base is None:
            return self.data.find(needle, start)
        if start >= self.size:
            return -1 if needle else self.size
        found = _MEMMEM(self.base + start, self.size - start, needle, len(needle))
        return -1 if found is None else found - self.base
