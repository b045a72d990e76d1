"""Reading a store (see `layout.py`): pages of events in capture order or of one connection, kind filters,
text search (bounded, cancellable, resumable), one event with its fields; `public` shapes events for output."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
import zlib
from bisect import bisect_right
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.events import cut_bodies
from ..engine.notation import parse_hex
from .layout import (
    DIRS,
    FRAME,
    KIND_CODES,
    LAYOUT,
    MESSAGE,
    RUN,
    SEG,
    Finder,
    RunLayout,
    may_hold,
    run_hits,
    searchable,
)

_loads = json.loads


# --------------------------------------------------------------------------- text search


SEARCH_STEP = 256  # segments searched by a request whose time is up before it starts (it still gets on)
SEARCH_THREADS = 2  # chunks searched at once by one search (the machine the goals are measured on has 2 cores)

Hits = tuple[Any, Any]  # a chunk's matches: their segments and each one's event within its segment (numpy)
NO_HITS: Hits = (np.zeros(0, np.int64), np.zeros(0, np.int64))


class TextQuery:
    """The `q` filter: command names, socket types, expert text, and text or hex in bodies.

    Names, socket types and expert text match case-insensitively. A body matches when it holds
    the query's UTF-8 octets as typed, in lower case, in upper case or capitalized, or, when the
    query is hex, those octets. Every test is a literal substring search, so a scan of a few
    hundred thousand events takes a fraction of a second.
    """

    def __init__(self, q: str) -> None:
        self.q = q
        self.text = q.lower()
        variants = {q, q.lower(), q.upper(), q.capitalize()}
        self.needles = [v.encode("utf-8") for v in variants if v]
        self.hex_bytes: bytes | None = None
        with contextlib.suppress(ValueError):  # (text that is also hex is searched as both)
            self.hex_bytes = parse_hex(q) or None
        if self.hex_bytes is not None:
            self.needles.append(self.hex_bytes)

    def _in_body(self, hex_body: Any) -> bool:
        if not isinstance(hex_body, str) or not hex_body:
            return False
        try:
            body = bytes.fromhex(hex_body)
        except ValueError:
            return False
        return any(n in body for n in self.needles)

    def _in_text(self, *values: Any) -> bool:
        return any(isinstance(v, str) and self.text in v.lower() for v in values)

    def matches(self, ev: dict[str, Any]) -> bool:
        """The precise test on a parsed event (of what `searchable` says a search tests of it)."""
        texts, bodies = searchable(ev)
        return self._in_text(*texts) or any(self._in_body(b) for b in bodies)



# --------------------------------------------------------------------------- reading


class SearchCancelled(Exception):
    """The client that asked for a search went away (`SearchLimits.cancel` was set)."""


@dataclass(frozen=True)
class SearchLimits:
    """How far one request may search: until `deadline` (a `time.monotonic()` value), unless `cancel` is
    set first, or, once it has found `enough` matches (the page it answers), until `soon` (a text most
    elements hold fills its first page at once: the page need not wait for the rest to be counted). A
    search a limit stopped is answered as it stands unless `more` is set."""

    deadline: float | None = None
    cancel: threading.Event | None = None
    more: bool = False
    soon: float | None = None
    enough: int = 0


@dataclass(frozen=True)
class Page:
    """One page of events and how many match; a text search also says how many elements it searched
    (`searched` of `elements`: fewer when a time limit stopped it)."""

    events: list[dict[str, Any]]
    total: int
    searched: int | None = None
    elements: int | None = None

    @property
    def partial(self) -> bool:
        """Whether the search stopped before the end (its `total` counts what it found so far)."""
        return self.searched is not None and self.elements is not None and self.searched < self.elements


class HitSet:
    """The sorted positions of one searched piece's matches, kept in whichever takes less room: the positions
    from the first (4 octets each), or a bitmap of the span they cover (a text in nearly every element: an
    octet per 8 elements). A search of a gigabyte capture can match tens of millions of elements."""

    __slots__ = ("bits", "count", "first", "offsets", "span")

    def __init__(self, positions: Any) -> None:
        self.count = len(positions)
        self.first = int(positions[0])
        self.span = int(positions[-1]) - self.first + 1
        relative = positions - self.first
        if self.span // 8 < 4 * self.count:
            bitmap = np.zeros(self.span, bool)
            bitmap[relative] = True
            self.bits, self.offsets = np.packbits(bitmap), None
        else:
            self.bits, self.offsets = None, relative.astype(np.uint32 if self.span <= 1 << 32 else np.int64)

    def positions(self, start: int, stop: int) -> Any:
        """The positions of matches `start` to `stop` of this piece (int64)."""
        if self.offsets is not None:
            return self.offsets[start:stop].astype(np.int64) + self.first
        return np.flatnonzero(np.unpackbits(self.bits, count=self.span))[start:stop] + self.first


class Matches:
    """A search's matches so far: a `HitSet` per searched piece with matches, in order. One thread adds (the
    search), any may page."""

    def __init__(self) -> None:
        self.hits: list[HitSet] = []
        self.ends: tuple[int, Any] | None = None  # (pieces, the running count of matches at the end of each)
        self.count = 0  # matches so far

    def add(self, positions: Any) -> None:
        """Adds the sorted positions of the next piece's matches (after every one added before)."""
        self.hits.append(HitSet(positions))
        self.count += len(positions)

    def window(self, offset: int, limit: int) -> tuple[list[int], int]:
        """Matches `offset` to `offset + limit` (their positions) of those found so far, and how many those are."""
        hits = self.hits[:]  # (another request may be adding to it)
        cached = self.ends
        if cached is None or cached[0] != len(hits):
            cached = self.ends = (len(hits), np.cumsum([h.count for h in hits], dtype=np.int64))
        ends = cached[1]
        total = int(ends[-1]) if len(ends) else 0
        out: list[int] = []
        i = int(np.searchsorted(ends, offset, "right"))
        while i < len(hits) and len(out) < limit and offset < total:
            start = offset - (int(ends[i]) - hits[i].count)
            taken = hits[i].positions(start, start + limit - len(out)).tolist()
            out += taken
            offset += len(taken)
            i += 1
        return out, total


@dataclass
class _Search:
    """A text search of one connection (or all), resumable at the chunk where a deadline stopped it."""

    conn_no: int | None
    elements: int
    matches: Matches = field(default_factory=Matches)
    chunk: int = 0  # the next chunk to search
    seg: int = 0  # and the next segment in it (a chunk may be searched in steps)
    searched: int = 0
    timed_out: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    chunks: int = 0

    @property
    def complete(self) -> bool:
        return self.chunk >= self.chunks


@dataclass
class _Conn:
    conn_no: int
    conn: str
    count: int


class StoreClosed(LookupError):
    """The store was closed (its capture deleted, evicted, or its preview replaced) while it was being read."""


class EventStore:
    """Read access to a finished store; safe to use from several threads (a read that comes after `close()`, or
    meets it, raises `StoreClosed`)."""

    def __init__(self, path: Path, *, chunk_cache: int = 16, run_cache: int = 64, filter_cache: int = 16) -> None:
        self.path = path
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self.lock = threading.RLock()
        self.closed = False
        meta = {k: _loads(v) for k, v in self.db.execute("SELECT key, value FROM meta")}
        if meta.get("layout") != LAYOUT:
            raise ValueError("an event store of an older layout: dissect the capture again")
        self.summary: dict[str, Any] = meta["summary"]
        self.analysis: dict[str, Any] | None = meta.get("analysis")
        self.error: str | None = meta.get("error")
        self.store_max_body: int = meta.get("store_max_body") or 0
        self.conns: dict[str, _Conn] = {}
        self.by_no: dict[int, _Conn] = {}
        for conn_no, conn, count in self.db.execute("SELECT conn_no, conn, count FROM conns"):
            c = _Conn(conn_no, conn, count)
            self.conns[conn] = c
            self.by_no[conn_no] = c
        self.total = sum(c.count for c in self.conns.values())
        parts = [np.frombuffer(zlib.decompress(data), dtype=SEG)
                 for (data,) in self.db.execute("SELECT data FROM segs ORDER BY chunk")]
        segs = np.concatenate(parts) if parts else np.zeros(0, dtype=SEG)
        self.segs = segs
        self.chunk_first = np.zeros(len(parts) + 1, dtype=np.int64)  # the first segment of each chunk
        np.cumsum([len(p) for p in parts], out=self.chunk_first[1:])
        self.seg_chunk = np.repeat(np.arange(len(parts), dtype=np.int64), [len(p) for p in parts])
        count = segs["count"].astype(np.int64)
        self.gstart = np.cumsum(count) - count  # each segment's first event in capture order
        # Each segment's first event index within its connection: cumulative sums per connection.
        order = np.argsort(segs["conn"], kind="stable")
        counts = count[order]
        running = np.cumsum(counts) - counts
        owners = segs["conn"][order]
        starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]]) if len(order) else np.zeros(0, np.int64)
        bounds = np.r_[starts, len(order)]
        self.cstart = np.empty_like(count)
        self.cstart[order] = running - np.repeat(running[starts], np.diff(bounds))
        self._conn_segs = {int(owners[a]): order[a:b] for a, b in pairwise(bounds.tolist())}
        self._chunks: OrderedDict[tuple[str, int], Any] = OrderedDict()
        self._chunk_cache = chunk_cache
        self._runs: OrderedDict[int, RunLayout] = OrderedDict()
        self._run_cache = run_cache
        self._filters: OrderedDict[tuple, Any] = OrderedDict()
        self._filter_cache = filter_cache
        self._searches: OrderedDict[tuple, _Search] = OrderedDict()

    def close(self) -> None:
        """Closes the database."""
        with self.lock:
            self.closed = True
            self.db.close()

    def connection(self, conn: str) -> _Conn:
        """The connection with this id; KeyError when there is none."""
        return self.conns[conn]

    # ---- reading segments (under self.lock)

    def _cached(self, table: str, chunk: int) -> Any:
        key = (table, chunk)
        hit = self._chunks.get(key)
        if hit is not None:
            self._chunks.move_to_end(key)
            return hit
        self._check_open()
        row = self.db.execute(f"SELECT data FROM {table} WHERE chunk=?", (chunk,)).fetchone()
        if table in ("records", "fields"):
            hit = zlib.decompress(row[0]).split(b"\n") if row else []
        else:
            hit = {(s, k): (p, t) for s, k, p, t in _loads(zlib.decompress(row[0]))} if row else {}
        self._chunks[key] = hit
        if len(self._chunks) > self._chunk_cache:
            self._chunks.popitem(last=False)
        return hit

    def _check_open(self) -> None:
        if self.closed:
            raise StoreClosed("the capture's event store was closed (the capture was deleted or replaced)")

    def _octets(self, seg: int) -> bytes:
        self._check_open()
        s = self.segs[seg]
        with self.db.blobopen("octets", "data", int(self.seg_chunk[seg]), readonly=True) as blob:
            blob.seek(int(s["pos"]))
            return blob.read(int(s["length"]))

    def _run(self, seg: int) -> RunLayout:
        """A run segment's layout."""
        found = self._runs.get(seg)
        if found is not None:
            self._runs.move_to_end(seg)
            return found
        s = self.segs[seg]
        found = RunLayout(int(s["offset"]), self._octets(seg), int(s["framing"]))
        self._runs[seg] = found
        if len(self._runs) > self._run_cache:
            self._runs.popitem(last=False)
        return found

    def _event(self, seg: int, k: int, *, with_fields: bool = False) -> dict[str, Any]:
        """Event `k` of segment `seg` as the contract's dict (with `index`)."""
        s = self.segs[seg]
        chunk = int(self.seg_chunk[seg])
        if s["kind"] != RUN:
            ev = _loads(self._cached("records", chunk)[int(s["pos"])])
            if with_fields:
                ev["fields"] = _loads(self._cached("fields", chunk)[int(s["pos"])])
            return ev
        ev = self._run(seg).event(k).to_dict(with_fields=with_fields, max_body=self.store_max_body or None)
        ev["conn"] = self.by_no[int(s["conn"])].conn
        ev["dir"] = DIRS[s["dir"]]
        local = seg - int(self.chunk_first[chunk])
        source = self._cached("specials", chunk).get((local, k))
        if source is not None:
            ev["packets"], ev["ts"] = source
        else:
            ev["packets"], ev["ts"] = [int(s["packet"])], float(s["ts"])
        ev["index"] = int(self.cstart[seg]) + k
        return ev

    # ---- positions

    def _scope(self, c: _Conn | None) -> tuple[Any, Any]:
        """The segments of one connection (or all: None) and their first events' positions in that scope."""
        if c is None:
            return None, self.gstart
        segs = self._conn_segs.get(c.conn_no, np.zeros(0, np.int64))
        return segs, self.cstart[segs]

    def _locate(self, c: _Conn | None, positions: Iterable[int]) -> list[tuple[int, int]]:
        """(segment, event within it) of positions in capture order (or indexes within `c`)."""
        pos = np.fromiter(positions, dtype=np.int64)
        if not len(pos):
            return []
        segs, starts = self._scope(c)
        i = np.searchsorted(starts, pos, side="right") - 1
        seg = i if segs is None else segs[i]
        return list(zip(seg.tolist(), (pos - starts[i]).tolist(), strict=True))

    def _events(self, c: _Conn | None, positions: Iterable[int]) -> list[dict[str, Any]]:
        return [self._event(seg, k) for seg, k in self._locate(c, positions)]

    def _kind_counts(self, segs: Any, kinds: frozenset[int]) -> Any:
        """Per segment, how many of its events are of these kinds."""
        rows = self.segs if segs is None else self.segs[segs]
        kind = rows["kind"]
        run = kind == RUN
        frames = rows["frames"].astype(np.int64)
        out = np.isin(kind, np.array(sorted(kinds), dtype=np.uint8)).astype(np.int64)
        out[run] = 0
        if FRAME in kinds:
            out[run] += frames[run]
        if MESSAGE in kinds:
            out[run] += rows["count"][run].astype(np.int64) - frames[run]
        return out

    def _matching(self, c: _Conn | None, kinds: frozenset[int]) -> tuple[Any, Any, int]:
        """(segments, cumulative counts before each, total) of the events of these kinds in the scope."""
        key = (c.conn_no if c else None, tuple(sorted(kinds)))
        with self.lock:
            hit = self._filters.get(key)
            if hit is not None:
                self._filters.move_to_end(key)
                return hit
        segs, _ = self._scope(c)
        counts = self._kind_counts(segs, kinds)
        keep = np.flatnonzero(counts)
        before = np.cumsum(counts[keep]) - counts[keep]
        hit = ((keep if segs is None else segs[keep]), before, int(counts.sum()))
        with self.lock:
            self._filters[key] = hit
            if len(self._filters) > self._filter_cache:
                self._filters.popitem(last=False)
        return hit

    def _kind_window(self, c: _Conn | None, kinds: frozenset[int], offset: int, limit: int
                     ) -> tuple[list[dict[str, Any]], int]:
        segs, before, total = self._matching(c, kinds)
        out: list[dict[str, Any]] = []
        if offset >= total or limit <= 0:
            return out, total
        i = int(np.searchsorted(before, offset, side="right")) - 1
        skip = offset - int(before[i])
        with self.lock:
            while len(out) < limit and i < len(segs):
                seg = int(segs[i])
                if self.segs[seg]["kind"] != RUN:
                    if skip:
                        skip -= 1
                    else:
                        out.append(self._event(seg, 0))
                else:
                    run = self._run(seg)
                    for k in range(len(run.events)):
                        if run.kind(k) in kinds:
                            if skip:
                                skip -= 1
                            elif len(out) < limit:
                                out.append(self._event(seg, k))
                i += 1
        return out, total

    # ---- queries

    def page(self, conn: str | None, offset: int, limit: int, *, kinds: Iterable[str] | None = None,
             q: str | None = None) -> tuple[list[dict[str, Any]], int]:
        """One page of events and the number of matches (searching to the end)."""
        found = self.listing(conn, offset, limit, kinds=kinds, q=q)
        return found.events, found.total

    def listing(self, conn: str | None, offset: int, limit: int, *, kinds: Iterable[str] | None = None,
                q: str | None = None, limits: SearchLimits | None = None) -> Page:
        """One page of events of one connection (or all, in capture order).

        A text search (`q`) stops where `limits` say: the page then holds what was found so far and
        says how many elements were searched. Searches are kept (a few, least recently used out), so
        the next pages, and a search that goes on (`limits.more`), start from where it stopped.
        """
        c = self.conns[conn] if conn is not None else None
        kind_codes = frozenset(KIND_CODES.get(k, 254) for k in kinds) if kinds else None
        if not q:
            if kind_codes is None:
                total = c.count if c is not None else self.total
                with self.lock:
                    return Page(self._events(c, range(offset, min(offset + limit, total))), total)
            events, total = self._kind_window(c, kind_codes, offset, limit)
            return Page(events, total)
        limits = limits or SearchLimits()
        query = TextQuery(q)
        key = (c.conn_no if c else None, tuple(sorted(kind_codes)) if kind_codes is not None else None, q)
        with self.lock:
            s = self._searches.get(key)
            if s is None:
                s = self._searches[key] = _Search(c.conn_no if c else None, c.count if c else self.total,
                                                  chunks=len(self.chunk_first) - 1)
                if len(self._searches) > self._filter_cache:
                    self._searches.popitem(last=False)
            else:
                self._searches.move_to_end(key)
        if not s.complete and (limits.more or not s.timed_out):
            wait = -1 if limits.deadline is None else max(0.0, limits.deadline - time.monotonic())
            if s.lock.acquire(timeout=wait):  # (another request may be searching on: share its result)
                try:
                    if not s.complete and (limits.more or not s.timed_out):
                        self._advance(s, kind_codes, query, limits)
                finally:
                    s.lock.release()
        searched = s.searched
        window, total = s.matches.window(offset, limit)
        with self.lock:
            return Page(self._events(c, window), total, searched, s.elements)

    def _advance(self, s: _Search, kinds: frozenset[int] | None, query: TextQuery, limits: SearchLimits) -> None:
        """Searches on from where `s` stopped, chunk by chunk, until it is complete or `limits` stop it.

        Chunks are searched by `SEARCH_THREADS` threads at once (reading a blob and `memmem` release the GIL),
        each through a database connection of its own, so paging (and other searches) go on meanwhile; their
        matches are counted in chunk order. At least one chunk is searched per call, so a search always gets
        on. Raises `SearchCancelled` when `limits.cancel` is set (what was found so far is kept, and the next
        request searches on).
        """
        s.timed_out = False
        local = threading.local()
        opened: list[sqlite3.Connection] = []

        def late() -> bool:
            now = time.monotonic()
            if limits.soon is not None and now > limits.soon and s.matches.count >= limits.enough:
                return True
            return limits.deadline is not None and now > limits.deadline

        def search(chunk: int, lo: int, hi: int, first: bool) -> Hits | None:
            db = getattr(local, "db", None)
            if db is None:
                db = local.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
                opened.append(db)

            def stop() -> bool:
                """Whether to give the chunk up: the client went (raises), or the time is up and the call got on
                (the call's first chunk is never given up)."""
                if limits.cancel is not None and limits.cancel.is_set():
                    raise SearchCancelled()
                return not first and late()

            return self._search_chunk(db, chunk, lo, hi, s.conn_no, kinds, query, stop)

        pending: deque[tuple[int, int, Future[Hits | None]]] = deque()
        pool = ThreadPoolExecutor(SEARCH_THREADS, thread_name_prefix="zmtplab-search")
        try:
            after = s.chunk  # the next chunk to hand to the pool
            while s.chunk < s.chunks:
                while len(pending) < SEARCH_THREADS and after < s.chunks and not (pending and late()):
                    lo = max(s.seg, int(self.chunk_first[after])) if after == s.chunk else int(self.chunk_first[after])
                    hi = int(self.chunk_first[after + 1])
                    first = not pending and s.chunk == after
                    if first and late():
                        hi = min(hi, lo + SEARCH_STEP)  # (the time is up already: get on by a few segments only)
                    pending.append((lo, hi, pool.submit(search, after, lo, hi, first)))
                    after = after + 1 if hi == int(self.chunk_first[after + 1]) else s.chunks  # (part: nothing after)
                lo, hi, future = pending.popleft()
                found = future.result()
                if found is None:  # (given up: searched again from its start by the next call)
                    s.timed_out = True
                    return
                self._count(s, lo, hi, found)
                if limits.cancel is not None and limits.cancel.is_set():
                    raise SearchCancelled()
                if late():
                    s.timed_out = s.chunk < s.chunks
                    if s.timed_out:
                        return
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            for db in opened:
                db.close()

    def _count(self, s: _Search, a: int, b: int, found: Hits) -> None:
        """Adds the matches of the searched segments `a` to `b` (as positions in the search's scope) to `s`."""
        conns = self.segs["conn"][a:b]
        counts = self.segs["count"][a:b]
        s.searched += int(counts.sum() if s.conn_no is None else counts[conns == s.conn_no].sum())
        segs, ks = found
        if len(segs):
            starts = self.gstart if s.conn_no is None else self.cstart
            s.matches.add(np.unique(starts[segs] + ks))
        s.seg = b
        if b == int(self.chunk_first[s.chunk + 1]):
            s.chunk += 1

    def _search_chunk(self, db: sqlite3.Connection, chunk: int, a: int, b: int, conn_no: int | None,
                      kinds: frozenset[int] | None, query: TextQuery, stop: Callable[[], bool]) -> Hits | None:
        """The matches among segments `a` to `b` of a chunk, as (segment, event within it) arrays: single events
        by `TextQuery`, runs by their bodies. None when `stop()` (asked when a needle has hundreds of hits)
        said to give them up."""
        grams = db.execute("SELECT grams FROM segs WHERE chunk=?", (chunk,)).fetchone()
        needles = may_hold(grams[0] if grams else b"", query.needles)
        if not needles:
            return NO_HITS  # (a pair of octets of every needle is missing from the chunk: nothing in it matches)
        rows = self.segs[a:b]
        mine = np.ones(b - a, dtype=bool) if conn_no is None else rows["conn"] == conn_no
        run = rows["kind"] == RUN
        singles = np.flatnonzero(mine & ~run)
        if kinds is not None:
            singles = singles[np.isin(rows["kind"][singles], np.array(sorted(kinds), dtype=np.uint8))]
        single_segs = self._search_singles(db, chunk, a, singles, query, needles, stop) if len(singles) else []
        if single_segs is None:
            return None
        segs = [np.array(single_segs, np.int64)]
        ks = [np.zeros(len(single_segs), np.int64)]
        want_frames = kinds is None or FRAME in kinds
        want_messages = kinds is None or MESSAGE in kinds
        runs = np.flatnonzero(run & mine)
        if len(runs) and (want_frames or want_messages):
            data = _blob(db, "octets", chunk)
            finder = Finder(data)
            run_pos = rows["pos"][runs].astype(np.int64)
            run_end = run_pos + rows["length"][runs]
            hits = [(finder.find_all(needle, int(run_pos[0]), int(run_end[-1])), len(needle)) for needle in needles]
            if sum(len(found) for found, _ in hits) > 256 and stop():
                return None
            r, frame_events, message_events = run_hits(data, hits, run_pos, run_end)
            for wanted, events in ((want_frames, frame_events), (want_messages, message_events)):
                if wanted:
                    segs.append(runs[r] + a)
                    ks.append(events)
        return np.concatenate(segs), np.concatenate(ks)

    def _search_singles(self, db: sqlite3.Connection, chunk: int, a: int, singles: Any, query: TextQuery,
                        needles: list[bytes], stop: Callable[[], bool]) -> list[int] | None:
        """The segments of the single events `singles` (segments `a + i`) of a chunk that match: `memmem` for the
        `needles` over the chunk's search column finds the candidates, each one's record confirms it. None when
        `stop()` said to."""
        packed = _blob(db, "records", chunk, "search")
        text = zlib.decompress(packed) if packed else b""
        if not text:
            return []
        first, last = int(self.chunk_first[chunk]), int(self.chunk_first[chunk + 1])
        rows = self.segs[first:last]
        owners = np.flatnonzero(rows["kind"] != RUN)  # the chunk's single events, in the column's order
        lengths = rows["length"][owners].astype(np.int64)
        ends = np.cumsum(lengths)
        starts = (ends - lengths).tolist()
        ends_list = ends.tolist()
        finder = Finder(text)
        candidates: set[int] = set()
        for needle in needles:
            i = finder.find(needle)
            while i >= 0:
                j = bisect_right(starts, i) - 1
                candidates.add(int(owners[j]) + first)
                i = finder.find(needle, ends_list[j])
        wanted = candidates.intersection((singles + a).tolist())
        if not wanted:
            return []
        lines = zlib.decompress(_blob(db, "records", chunk)).split(b"\n")
        out: list[int] = []
        for n, seg in enumerate(sorted(wanted)):
            if not n & 255 and n and stop():
                return None
            if query.matches(_loads(lines[int(self.segs[seg]["pos"])])):
                out.append(seg)
        return out

    # ---- single events and fields

    def _locate_index(self, c: _Conn, index: int) -> tuple[int, int]:
        if not 0 <= index < c.count:
            raise IndexError(index)
        return self._locate(c, [index])[0]

    def event(self, conn: str, index: int) -> dict[str, Any]:
        """One event with its fields; KeyError/IndexError when there is none."""
        with self.lock:
            seg, k = self._locate_index(self.conns[conn], index)
            return self._event(seg, k, with_fields=True)

    def fields_of(self, events: list[dict[str, Any]]) -> None:
        """Adds `fields` to events returned by `page`."""
        with self.lock:
            for ev in events:
                seg, k = self._locate_index(self.conns[ev["conn"]], ev["index"])
                ev["fields"] = self._event(seg, k, with_fields=True).get("fields", [])


def _blob(db: sqlite3.Connection, table: str, chunk: int, column: str = "data") -> bytes:
    """One chunk's blob of a table, read whole by SQLite's incremental blob I/O (a few times faster than a
    SELECT of a blob of many overflow pages)."""
    try:
        with db.blobopen(table, column, chunk, readonly=True) as blob:
            return blob.read()
    except sqlite3.OperationalError:  # (no such row: the chunk has nothing of that table)
        return b""


# --------------------------------------------------------------------------- output shaping


def public(ev: dict[str, Any], max_body: int | None) -> dict[str, Any]:
    """An event as the API shows it: private keys gone, bodies cut to `max_body` octets."""
    for key in [k for k in ev if k.startswith("_")]:
        del ev[key]
    if max_body is None:
        return ev
    return cut_bodies(ev, max_body, hex_slack=32)

