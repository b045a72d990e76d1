"""The store's file: a SQLite database used as a container of columnar chunks (no row per event).

A capture's events come out of the dissector in capture order as two kinds of item: runs of
ordinary frames (`SourcedRun`: their octets, nearly every event of a big capture) and single
events (greetings, commands, experts, gaps, and the rare frame or message outside a run). Each
item is one *segment*; consecutive segments are grouped into *chunks* of about `CHUNK_OCTETS`:

- `segs(chunk, grams, data)`: the chunk's segments as a packed numpy array of `SEG` (zlib-compressed):
  connection number, kind (`RUN` for a run), direction, framing, event count, frame count, where its octets
  (a run) or its record (a single event) sit in the chunk, how long they are (a single event: its share of
  the search column), its stream offset, and the packet and time its events share; and `grams`, the chunk's
  filter: one bit for each pair of consecutive octets at an even offset of its octets or its search column
  (`bigrams`, 8 KiB, zlib): a needle with pairs the chunk lacks at either parity is not in it, and a chunk
  none of a search's needles may be in is not read at all (`may_hold`);
- `octets(chunk, data)`: the runs' octets, back to back, as the wire carried them (the events of
  a run are the engine's own `Frame`/`Message` decoding of them, made again when read);
- `records(chunk, search, data)`: the single events as zlib-compressed JSON lines, and before them their
  search column: what a text search tests of them, back to back (each one's `search_text`: its bodies'
  octets and its names in lower case; zlib), which a search scans with `memmem` like the octets, reading a
  record only to confirm a hit; `fields(chunk, data)` their fields, line for line (apart: a search never
  reads them). (New columns, not tables: each table costs a 64 KiB page even in a small capture's store.)
- `specials(chunk, data)`: zlib JSON `[seg in chunk, k, packets, ts]` for the events of a run that
  do not share the run's packet and time (those that began in an earlier packet);
- `conns(conn_no, conn, count)` and `meta(key, value)`: connections, summary, analysis, error, and the
  `layout` (`LAYOUT`: a store of another layout is not read, its capture is dissected again).

No per-event column is stored: a run's events, their positions in capture order and in their
connection, and their kinds follow from the segments' counts (numpy cumulative sums when the
store is opened). Text search scans the octets as they are (`Finder`: the C library's `memmem`,
per needle and chunk). Pages are 64 KiB, so a chunk's octets read back at several GB/s (SQLite's
default 4 KiB pages make a chain of 256 overflow pages per MiB, about ten times slower).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import itertools
import zlib
from typing import Any

import numpy as np

from ..engine.batch import frame_heads, scan_run
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
LAYOUT = 4  # (3: no search column, no filter)
GRAMS = 1 << 16  # the filter's bits: every pair of octets

SCHEMA = """
    PRAGMA page_size=65536;
    PRAGMA journal_mode=OFF;
    PRAGMA synchronous=OFF;
    CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE conns(conn_no INTEGER PRIMARY KEY, conn TEXT UNIQUE, count INTEGER);
    CREATE TABLE segs(chunk INTEGER PRIMARY KEY, grams BLOB, data BLOB);
    CREATE TABLE octets(chunk INTEGER PRIMARY KEY, data BLOB);
    CREATE TABLE records(chunk INTEGER PRIMARY KEY, search BLOB, data BLOB);
    CREATE TABLE fields(chunk INTEGER PRIMARY KEY, data BLOB);
    CREATE TABLE specials(chunk INTEGER PRIMARY KEY, data BLOB);
"""


def searchable(ev: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What a text search tests of a single event: its texts (matched case-insensitively) and its bodies (hex,
    matched as octets). The one definition both the search column and the search's own test use."""
    kind = ev.get("kind")
    if kind == "frame":
        return [], [ev.get("body")]
    if kind == "message":
        return [], list(ev.get("frames") or ())
    if kind == "expert":
        return [ev.get("text"), ev.get("severity"), ev.get("rule")], []
    if kind == "command":
        props = ev.get("properties") or {}
        return [ev.get("name"), ev.get("reason"), ev.get("username"), *props.keys(),
                *(v for v in props.values() if isinstance(v, str))], [ev.get("topic")]
    if kind == "greeting":
        return [ev.get("socket_type"), ev.get("mechanism"), kind], [ev.get("identity")]
    if kind == "gap":
        return [kind], []
    return [], []


def search_text(ev: dict[str, Any]) -> bytes:
    """A single event's share of the search column: its texts in lower case (UTF-8) and its bodies' octets, back
    to back (a needle found across two of them is a false hit, which the record's own test rejects)."""
    texts, bodies = searchable(ev)
    parts = [t.lower().encode("utf-8") for t in texts if isinstance(t, str)]
    for body in bodies:
        if isinstance(body, str) and body:
            with contextlib.suppress(ValueError):  # (a record's own test reads such a body as no body)
                parts.append(bytes.fromhex(body))
    return b"".join(parts)


def bigrams(*parts: bytes) -> bytes:
    """A chunk's filter: bit `a | b << 8` is set when the octets `a b` sit at an even offset of one of `parts`
    (numpy counts the little-endian 16-bit words), packed and compressed. Even offsets only: half the work of
    every pair, and still enough, since a needle's pairs alternate between even and odd offsets (`may_hold`)."""
    seen = np.zeros(GRAMS, dtype=np.intp)
    for data in parts:
        if len(data) >= 2:
            seen += np.bincount(np.frombuffer(data, "<u2", count=len(data) // 2), minlength=GRAMS)
    return zlib.compress(np.packbits(seen > 0, bitorder="little").tobytes(), 1)


def may_hold(grams: bytes, needles: list[bytes]) -> list[bytes]:
    """Those of `needles` that may occur in a chunk whose filter (`bigrams`) is `grams` (compressed, or b"": no
    filter): a needle at an even offset has its 1st, 3rd, 5th... pair at even offsets, one at an odd offset its
    2nd, 4th...; a needle none of whose two sets is all in the filter is not in the chunk (a search scans the
    chunk for the others only: `SUNNY` is not looked for in a chunk without `SU` or `UN`)."""
    if not grams:
        return needles
    bits = zlib.decompress(grams)

    def seen(needle: bytes, first: int) -> bool:
        return all(bits[(g := needle[i] | needle[i + 1] << 8) >> 3] >> (g & 7) & 1
                   for i in range(first, len(needle) - 1, 2))

    return [needle for needle in needles if seen(needle, 0) or seen(needle, 1)]


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
        first = 0
        for pos, hlen, flags, size, end in frame_heads(data):
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


def run_hits(data: bytes, hits: list[tuple[Any, int]], run_pos: Any, run_end: Any) -> tuple[Any, Any, Any]:
    """Which events hold the hits of needles (`hits`: for each needle, the positions where it begins and its
    length) among the runs stored at `data[run_pos[r]:run_end[r]]` (sorted, disjoint): for each frame whose
    body holds a hit whole, its run `r`, its event and its message's event within the run (numpy arrays).
    The frames are found once, by the engine's own frame-header scan (`scan_run`) of the runs with hits, the
    rest in numpy for all the runs and needles at once: a dense text (a word in every message) has a hit in
    nearly every frame."""
    empty = np.zeros(0, np.int64)
    if not hits:
        return empty, empty, empty
    positions = np.concatenate([found for found, _ in hits])
    ends_at = positions + np.concatenate([np.full(len(found), width, np.int64) for found, width in hits])
    r = np.searchsorted(run_pos, positions, "right") - 1
    inside = r >= 0
    inside[inside] = ends_at[inside] <= run_end[r[inside]]
    r, positions, ends_at = r[inside], positions[inside], ends_at[inside]
    if not len(r):
        return empty, empty, empty
    hit_runs = np.unique(r)  # the runs with hits, whose frames are scanned
    view = memoryview(data)
    bounds = zip(run_pos[hit_runs].tolist(), run_end[hit_runs].tolist(), strict=True)
    heads_of = [scan_run(view[a:b], 0)[2] for a, b in bounds]
    counts = np.fromiter(map(len, heads_of), np.int64, len(heads_of))
    if not counts.all():  # (a run without a whole message, which the writer never stores: nothing to place in it)
        scanned = counts > 0
        held = np.isin(r, hit_runs[scanned])
        r, positions, ends_at = r[held], positions[held], ends_at[held]
        hit_runs, counts = hit_runs[scanned], counts[scanned]
        heads_of = [heads for heads in heads_of if heads]
        if not len(r):
            return empty, empty, empty
    n = int(counts.sum())
    heads = np.fromiter(itertools.chain.from_iterable(heads_of), np.int64, n) + np.repeat(run_pos[hit_runs], counts)
    first = np.cumsum(counts) - counts  # each run's first frame
    run_of = np.repeat(np.arange(len(hit_runs)), counts)
    flags = np.frombuffer(data, np.uint8)[heads]
    last = (flags & 1) == 0  # (the frame ends its message)
    ended = np.cumsum(last) - last
    before = ended - ended[first][run_of]  # messages of its run ended before each frame
    lasts = np.flatnonzero(last)  # (a run holds whole messages: every frame's message closes within it)
    closing = lasts[np.minimum(np.searchsorted(lasts, np.arange(n)), len(lasts) - 1)]
    # Events go frame by frame, each message right after its last frame (as `FrameRun.events()` makes them).
    frame_events = np.arange(n) - first[run_of] + before
    message_events = closing - first[run_of] + before[closing] + 1
    starts = heads + np.where(flags & 2, 9, 2)  # the bodies, after a short or a long header
    ends = np.empty(n, np.int64)
    ends[:-1] = heads[1:]
    ends[first + counts - 1] = run_end[hit_runs]
    f = np.searchsorted(starts, positions, "right") - 1
    held = f >= 0
    fh = f[held]
    held[held] = (run_of[fh] == np.searchsorted(hit_runs, r[held])) & (ends_at[held] <= ends[fh])
    f = np.unique(f[held])  # (a body may hold needles many times: its events once)
    return hit_runs[run_of[f]], frame_events[f], message_events[f]


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

    def find_all(self, needle: bytes, start: int, end: int, sparse: int = 32) -> Any:
        """Every position from `start` to before `end` where `needle` begins (overlapping ones too), sorted, as a
        numpy array: `find` for the first `sparse` of them, then, when there are more, one numpy pass over the
        rest (a call per hit costs more than a pass over the octets once hits are dense)."""
        found: list[int] = []
        i = self.find(needle, start)
        while 0 <= i < end and len(found) < sparse:
            found.append(i)
            i = self.find(needle, i + 1)
        head = np.array(found, np.int64)
        if not 0 <= i < end:
            return head
        octets = np.frombuffer(self.data, np.uint8)
        top = min(end, self.size - len(needle) + 1)  # (a needle begins no later than this)
        candidates = np.flatnonzero(octets[i:top] == needle[0]) + i
        for j in range(1, len(needle)):
            candidates = candidates[octets[candidates + j] == needle[j]]
        return np.concatenate([head, candidates])
