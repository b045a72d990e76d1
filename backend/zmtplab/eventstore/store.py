"""A capture's dissected events on disk: written once by a worker, then paged, filtered and explained.

Layout of one store (a SQLite file):

- `blocks(conn_no, first, count, data)`: the events of one connection in order, as JSON
  lines without fields, zlib-compressed in blocks of up to `BLOCK_EVENTS` events (or
  `BLOCK_BYTES` of text). Paging reads one or two blocks; 420,000 events of a bulk
  capture take a few MB.
- `conns(conn_no, conn, count, kinds)`: per connection its id, event count and one kind
  code per event (filters by kind never touch the blocks).
- `order(chunk, data)`: the capture order of every event as (conn_no, index) pairs, for
  listings across connections.
- `fields(conn_no, idx, data)`: the fields of greetings and commands (zlib JSON). Frames
  and messages, nearly all the events of a big capture, store no fields: theirs are
  recomputed on demand from the bytes their event carries, through the engine's own
  `Frame` and `Message` classes.
- `meta(key, value)`: the summary, the dissection error and the store's parameters.

Each event gets `index`, its position within its connection. Private keys stored on
events start with `_` and never leave this module.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
import zlib
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis import Analyzer
from ..capture.dissect import CaptureDissector, DissectResult, dissect_capture
from ..capture.errors import CaptureFormatError
from ..engine.events import WIRE_KINDS, Frame, Message
from ..engine.fields import text_or_hex

BLOCK_EVENTS = 256
BLOCK_BYTES = 1 << 20
ORDER_CHUNK = 1 << 16  # (conn_no, index) pairs per row of the order table
KIND_CODES = {kind: code for code, kind in enumerate(WIRE_KINDS)}
FRAMINGS = {"1.0": "1", "2.0": "2"}
SEVERITIES = ("note", "warn", "error")

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_loads = json.loads


class Cancelled(Exception):
    """The capture was deleted (or the server is stopping) while it was being dissected."""


# --------------------------------------------------------------------------- writing


@dataclass
class _ConnStats:
    """The per-connection summary, accumulated while events stream by."""

    conn_no: int
    conn: str
    count: int = 0
    kinds: bytearray = field(default_factory=bytearray)
    lines: list[str] = field(default_factory=list)
    first: int = 0
    pending_bytes: int = 0
    framing: dict[str, str] = field(default_factory=lambda: {"c2s": "3", "s2c": "3"})
    versions: dict[str, str | None] = field(default_factory=lambda: {"c2s": None, "s2c": None})
    mechanisms: dict[str, str | None] = field(default_factory=lambda: {"c2s": None, "s2c": None})
    socket_types: dict[str, str | None] = field(default_factory=lambda: {"c2s": None, "s2c": None})
    identities: dict[str, str | None] = field(default_factory=lambda: {"c2s": None, "s2c": None})
    messages: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})
    nbytes: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})
    expert: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SEVERITIES, 0))
    first_ts: float | None = None
    last_ts: float | None = None

    def observe(self, ev: dict[str, Any]) -> None:
        """Updates the summary with one event."""
        kind = ev["kind"]
        d = ev.get("dir")
        if d not in ("c2s", "s2c"):
            return
        end = ev["offset"] + ev["length"]
        if end > self.nbytes[d]:
            self.nbytes[d] = end
        ts = ev.get("ts")
        if isinstance(ts, (int, float)):
            if self.first_ts is None or ts < self.first_ts:
                self.first_ts = ts
            if self.last_ts is None or ts > self.last_ts:
                self.last_ts = ts
        if kind == "message":
            self.messages[d] += 1
        elif kind == "expert":
            sev = ev.get("severity")
            if sev in self.expert:
                self.expert[sev] += 1
        elif kind == "greeting":
            version = ev.get("version")
            self.versions[d] = version
            self.framing[d] = FRAMINGS.get(version, "3")
            if ev.get("mechanism"):
                self.mechanisms[d] = ev["mechanism"]
            if ev.get("socket_type"):
                self.socket_types[d] = ev["socket_type"]
            if ev.get("identity"):
                try:
                    self.identities[d] = text_or_hex(bytes.fromhex(ev["identity"]))
                except ValueError:
                    self.identities[d] = ev["identity"]
        elif kind == "command":
            props = ev.get("properties")
            if isinstance(props, dict):
                for key, value in props.items():
                    low = key.lower()
                    if low == "socket-type" and value:
                        self.socket_types[d] = str(value).upper()
                    elif low == "identity" and value:
                        self.identities[d] = str(value)

    def summary(self, client: str | None, server: str | None) -> dict[str, Any]:
        """The connection as `GET /api/captures/{id}` shows it."""
        mechanism = self.mechanisms["c2s"] or self.mechanisms["s2c"]
        return {
            "conn": self.conn, "client": client, "server": server,
            "versions": dict(self.versions), "mechanism": mechanism,
            "socket_types": dict(self.socket_types), "identities": dict(self.identities),
            "messages": dict(self.messages), "bytes": dict(self.nbytes), "expert": dict(self.expert),
            "first_ts": self.first_ts, "last_ts": self.last_ts, "events": self.count,
        }


def _endpoint(addr: tuple[str, int]) -> str:
    ip, port = addr
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class StoreWriter:
    """Builds one store from a stream of event dicts (with fields); see the module docstring."""

    def __init__(self, path: Path, *, store_max_body: int) -> None:
        self.path = path
        path.unlink(missing_ok=True)
        self.db = sqlite3.connect(path)
        self.db.executescript("""
            PRAGMA journal_mode=OFF;
            PRAGMA synchronous=OFF;
            CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
            CREATE TABLE conns(conn_no INTEGER PRIMARY KEY, conn TEXT UNIQUE, count INTEGER, kinds BLOB);
            CREATE TABLE blocks(conn_no INTEGER, first INTEGER, count INTEGER, data BLOB,
                                PRIMARY KEY(conn_no, first)) WITHOUT ROWID;
            CREATE TABLE fields(conn_no INTEGER, idx INTEGER, data BLOB, PRIMARY KEY(conn_no, idx)) WITHOUT ROWID;
            CREATE TABLE "order"(chunk INTEGER PRIMARY KEY, data BLOB);
        """)
        self.store_max_body = store_max_body
        self.conns: dict[str, _ConnStats] = {}
        self.order = array("I")
        self.order_chunks = 0
        self.total = 0
        self._fields: list[tuple[int, int, bytes]] = []

    def add(self, ev: dict[str, Any]) -> None:
        """Stores one event (the dict is changed in place)."""
        cid = ev["conn"]
        st = self.conns.get(cid)
        if st is None:
            st = self.conns[cid] = _ConnStats(len(self.conns), cid)
        idx = st.count
        st.count += 1
        self.total += 1
        kind = ev["kind"]
        st.kinds.append(KIND_CODES.get(kind, 255))
        self.order.append(st.conn_no)
        self.order.append(idx)
        if len(self.order) >= 2 * ORDER_CHUNK:
            self._flush_order()
        fields = ev.pop("fields", None)
        st.observe(ev)
        ev["index"] = idx
        if kind == "frame":
            framing = st.framing.get(ev.get("dir"), "3")
            if framing != "3":
                ev["_f"] = framing
        elif fields and kind != "message":
            self._fields.append((st.conn_no, idx, zlib.compress(_dumps(fields).encode(), 6)))
            if len(self._fields) >= 1024:
                self._flush_fields()
        line = _dumps(ev)
        st.lines.append(line)
        st.pending_bytes += len(line)
        if len(st.lines) >= BLOCK_EVENTS or st.pending_bytes >= BLOCK_BYTES:
            self._flush_block(st)

    def _flush_block(self, st: _ConnStats) -> None:
        if not st.lines:
            return
        data = zlib.compress("\n".join(st.lines).encode(), 1)
        self.db.execute("INSERT INTO blocks VALUES (?, ?, ?, ?)", (st.conn_no, st.first, len(st.lines), data))
        st.first += len(st.lines)
        st.lines = []
        st.pending_bytes = 0

    def _flush_fields(self) -> None:
        self.db.executemany("INSERT INTO fields VALUES (?, ?, ?)", self._fields)
        self._fields = []

    def _flush_order(self) -> None:
        if self.order:
            self.db.execute('INSERT INTO "order" VALUES (?, ?)', (self.order_chunks, self.order.tobytes()))
            self.order_chunks += 1
            self.order = array("I")

    def finish(self, result: DissectResult | None, error: str | None,
               analysis: dict[str, Any] | None = None) -> dict[str, Any]:
        """Writes what is left, the summary and the capture's `analysis` (`zmtplab analyze`'s); returns the summary."""
        for st in self.conns.values():
            self._flush_block(st)
        self._flush_fields()
        self._flush_order()
        infos = {c.conn: c for c in (result.connections if result else [])}
        connections = []
        ordered = [c for c in infos if c in self.conns] + [c for c in self.conns if c not in infos]
        for cid in ordered:
            st = self.conns[cid]
            info = infos.get(cid)
            summary = st.summary(_endpoint(info.client) if info else None, _endpoint(info.server) if info else None)
            # False for a connection nothing could be read of as ZMTP (its events are only the `unreadable` note).
            summary["zmtp"] = bool(info.zmtp) if info is not None else True
            if info is not None:
                summary["first_ts"] = info.first_ts
                summary["last_ts"] = info.last_ts
            connections.append(summary)
        for st in self.conns.values():
            self.db.execute("INSERT INTO conns VALUES (?, ?, ?, ?)", (st.conn_no, st.conn, st.count, bytes(st.kinds)))
        expert_total = dict.fromkeys(SEVERITIES, 0)
        for c in connections:
            for sev in SEVERITIES:
                expert_total[sev] += c["expert"][sev]
        summary = {
            "connections": connections, "expert_total": expert_total, "events": self.total,
            "tcp_connections": len(infos),
        }
        meta = {"summary": summary, "error": error, "store_max_body": self.store_max_body, "analysis": analysis,
                "order_chunk": ORDER_CHUNK}
        self.db.executemany("INSERT INTO meta VALUES (?, ?)", [(k, _dumps(v)) for k, v in meta.items()])
        self.db.commit()
        self.db.close()
        return summary

    def abort(self) -> None:
        """Closes and deletes the unfinished store."""
        try:
            self.db.close()
        finally:
            self.path.unlink(missing_ok=True)


class TimeLimit(Exception):
    """The dissection took longer than the server allows (raised from the capture reader or the event loop)."""


class _CountingReader:
    """A read-only file wrapper that remembers how far it got (for progress) and enforces a deadline:
    a read after `deadline` (time.monotonic) raises `TimeLimit`, so even a capture whose packets
    hold no ZMTP event at all cannot keep a worker busy longer than that."""

    def __init__(self, f: Any, deadline: float | None = None) -> None:
        self._f = f
        self.pos = 0
        self.deadline = deadline

    def read(self, n: int = -1) -> bytes:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TimeLimit()
        data = self._f.read(n)
        self.pos += len(data)
        return data


def _write_json(path: Path, obj: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)


def ingest_capture(capture: str, store: str, progress: str, cancel: str, *, store_max_body: int,
                   max_events: int, progress_interval: float, max_seconds: float | None = None,
                   time_limit: float | None = None) -> dict[str, Any]:
    """Dissects `capture` into a store at `store` (worker process or thread entry point).

    Writes `{state, percent, detail}` to the `progress` file as it goes and stops when the
    `cancel` file appears. Returns `{"state": "done"|"error", "error": str|None, "events": n}`;
    never raises for a bad capture (that is the "error" state). After `max_seconds` it stops
    and returns `{"state": "error", "partial": True, ...}` with a store of what it read so far
    (`time_limit`, the server's limit as its message names it, defaults to `max_seconds`).
    """
    store_path, progress_path, cancel_path = Path(store), Path(progress), Path(cancel)
    tmp_path = store_path.with_name(store_path.name + ".building")
    try:
        size = max(os.path.getsize(capture), 1)
        if os.path.exists(cancel_path):
            raise Cancelled()
        writer = StoreWriter(tmp_path, store_max_body=store_max_body)
    except (OSError, sqlite3.Error, Cancelled):  # deleted before its turn came
        return {"state": "cancelled", "error": "cancelled", "events": 0}
    result = DissectResult()
    # The capture-wide analysis (`zmtplab analyze`) follows the same events: one pass over the file for both.
    dissector = CaptureDissector(with_fields=True, max_body=store_max_body)

    def endpoints(conn: str) -> tuple[tuple[str, int], tuple[str, int]] | None:
        info = dissector.info(conn)
        return (info.client, info.server) if info is not None else None

    analyzer = Analyzer(endpoints)
    error: str | None = None
    last = 0.0

    def report(percent: float) -> None:
        _write_json(progress_path, {"state": "dissecting", "percent": round(percent, 1), "detail": ""})

    deadline = time.monotonic() + max_seconds if max_seconds is not None else None
    timed_out = False
    try:
        report(0)
        with open(capture, "rb") as raw:
            counting = _CountingReader(raw, deadline)
            try:
                for n, ev in enumerate(dissect_capture(counting, with_fields=True, max_body=store_max_body,
                                                       result=result, dissector=dissector)):
                    writer.add(ev)
                    analyzer.add(ev)
                    if not n & 63:
                        now = time.monotonic()
                        if deadline is not None and now > deadline:
                            raise TimeLimit()
                        if not n & 1023 and now - last >= progress_interval:
                            last = now
                            if os.path.exists(cancel_path):
                                raise Cancelled()
                            report(min(99.0, 100.0 * counting.pos / size))
                    if writer.total >= max_events:
                        error = f"stopped after {max_events} events (the server's limit per capture)"
                        break
            except TimeLimit:
                timed_out = True
                error = (f"the dissection took longer than the server's limit of {time_limit or max_seconds:g} s "
                         "and was stopped "
                         f"at byte {counting.pos} of {size}; the events read until then are kept")
        error = error or result.error
        summary = writer.finish(None if timed_out else result, error,
                                analysis=analyzer.finish(dissector.infos))
        os.replace(tmp_path, store_path)
    except Cancelled:
        writer.abort()
        return {"state": "cancelled", "error": "cancelled", "events": writer.total}
    except CaptureFormatError as exc:
        writer.abort()
        return {"state": "error", "error": str(exc), "events": 0}
    except (OSError, sqlite3.Error) as exc:
        writer.abort()
        if os.path.exists(cancel_path) or not os.path.exists(capture):
            return {"state": "cancelled", "error": "cancelled", "events": writer.total}
        return {"state": "error", "error": f"storing the events failed: {exc}", "events": 0}
    except Exception as exc:  # a bug in the dissector must not take the server down
        writer.abort()
        return {"state": "error", "error": f"dissection failed: {type(exc).__name__}: {exc}", "events": 0}
    if timed_out:
        return {"state": "error", "error": error, "events": summary["events"], "partial": True}
    if error and not summary["events"] and not result.connections:
        return {"state": "error", "error": error, "events": 0}  # nothing readable at all
    return {"state": "done", "error": error, "events": summary["events"]}


# --------------------------------------------------------------------------- text search


class TextQuery:
    """The `q` filter: command names, socket types, expert text, and text or hex in bodies.

    Names, socket types and expert text match case-insensitively. A body matches when it holds
    the query's UTF-8 octets as typed, in lower case, in upper case or capitalized, or, when the
    query is hex, those octets. Every test is a literal substring search, so a scan of a few
    hundred thousand events takes a fraction of a second.
    """

    HEX = re.compile(r"^(?:0x)?[0-9a-fA-F\s:]+$")

    def __init__(self, q: str) -> None:
        self.q = q
        self.text = q.lower()
        self.text_escaped = _dumps(q)[1:-1].lower()
        variants = {q, q.lower(), q.upper(), q.capitalize()}
        self.needles = [v.encode("utf-8") for v in variants if v]
        self.hex_bytes: bytes | None = None
        if self.HEX.match(q):
            cleaned = re.sub(r"0x|[\s:]", "", q).lower()
            if cleaned and len(cleaned) % 2 == 0:
                self.hex_bytes = bytes.fromhex(cleaned)
                self.needles.append(self.hex_bytes)
        # Bodies are hex in the stored JSON: look for each needle's hex (alignment is checked later).
        self.hex_needles = sorted({n.hex() for n in self.needles}, key=len)

    def line_may_match(self, text: str) -> bool:
        """A cheap test on stored JSON text (a line or a whole block): False means nothing in it matches."""
        low = text.lower()
        if self.text in low or self.text_escaped in low:
            return True
        return any(n in text for n in self.hex_needles)

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
        """The precise test on a parsed event."""
        kind = ev.get("kind")
        if kind == "frame":
            return self._in_body(ev.get("body"))
        if kind == "message":
            return any(self._in_body(f) for f in ev.get("frames") or ())
        if kind == "expert":
            return self._in_text(ev.get("text"), ev.get("severity"), ev.get("rule"))
        if kind == "command":
            props = ev.get("properties") or {}
            if self._in_text(ev.get("name"), ev.get("reason"), ev.get("username"), *props.keys(),
                             *(v for v in props.values() if isinstance(v, str))):
                return True
            return self._in_body(ev.get("topic"))
        if kind == "greeting":
            if self._in_text(ev.get("socket_type"), ev.get("mechanism"), kind):
                return True
            return self._in_body(ev.get("identity"))
        if kind == "gap":
            return self._in_text(kind)
        return False


# --------------------------------------------------------------------------- reading


class SearchCancelled(Exception):
    """The client that asked for a search went away (`SearchLimits.cancel` was set)."""


@dataclass(frozen=True)
class SearchLimits:
    """How far one request may search: until `deadline` (a `time.monotonic()` value), unless `cancel` is
    set first. A search an earlier deadline stopped is answered as it stands unless `more` is set."""

    deadline: float | None = None
    cancel: threading.Event | None = None
    more: bool = False


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


@dataclass
class _Search:
    """A text search of some connections, resumable where a deadline stopped it."""

    conns: list[_Conn]
    elements: int
    hits: dict[int, array] = field(default_factory=dict)  # conn_no -> matching indexes so far
    at: int = 0  # the connection being searched (a position in `conns`)
    block: int = 0  # its next block
    searched: int = 0
    timed_out: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    positions: tuple[int, Any] | None = None  # (searched, the matches' positions) of the last page

    @property
    def complete(self) -> bool:
        return self.at >= len(self.conns)



class _LongBody:
    """A body stored cut short that still reports its real length (for `body_field`)."""

    def __init__(self, prefix: bytes, length: int) -> None:
        self.prefix = prefix
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, item: slice) -> bytes:
        return self.prefix[item]


@dataclass
class _Conn:
    conn_no: int
    conn: str
    count: int
    kinds: bytes
    firsts: list[int]


class EventStore:
    """Read access to a finished store; safe to use from several threads."""

    def __init__(self, path: Path, *, block_cache: int = 64, filter_cache: int = 16) -> None:
        self.path = path
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self.lock = threading.RLock()
        meta = {k: _loads(v) for k, v in self.db.execute("SELECT key, value FROM meta")}
        self.summary: dict[str, Any] = meta["summary"]
        self.analysis: dict[str, Any] | None = meta.get("analysis")  # (None in a store written before analysis)
        self.error: str | None = meta.get("error")
        self.store_max_body: int = meta.get("store_max_body") or 0
        self.order_chunk: int = meta.get("order_chunk") or ORDER_CHUNK
        firsts: dict[int, list[int]] = {}
        for conn_no, first in self.db.execute("SELECT conn_no, first FROM blocks ORDER BY conn_no, first"):
            firsts.setdefault(conn_no, []).append(first)
        self.conns: dict[str, _Conn] = {}
        self.by_no: dict[int, _Conn] = {}
        for conn_no, conn, count, kinds in self.db.execute("SELECT conn_no, conn, count, kinds FROM conns"):
            c = _Conn(conn_no, conn, count, bytes(kinds), firsts.get(conn_no, []))
            self.conns[conn] = c
            self.by_no[conn_no] = c
        self.total = sum(c.count for c in self.conns.values())
        self._blocks: OrderedDict[tuple[int, int], list[str]] = OrderedDict()
        self._block_cache = block_cache
        self._filters: OrderedDict[tuple, Any] = OrderedDict()
        self._filter_cache = filter_cache
        self._order: array | None = None
        self._searches: OrderedDict[tuple, _Search] = OrderedDict()

    def close(self) -> None:
        """Closes the database."""
        with self.lock:
            self.db.close()

    # ---- blocks

    def _read_block(self, c: _Conn, first: int) -> list[str]:
        row = self.db.execute("SELECT data FROM blocks WHERE conn_no=? AND first=?", (c.conn_no, first)).fetchone()
        return zlib.decompress(row[0]).decode().split("\n") if row else []

    def _block(self, c: _Conn, idx: int) -> tuple[int, list[str]]:
        i = bisect_right(c.firsts, idx) - 1
        first = c.firsts[i]
        key = (c.conn_no, first)
        lines = self._blocks.get(key)
        if lines is None:
            lines = self._read_block(c, first)
            self._blocks[key] = lines
            if len(self._blocks) > self._block_cache:
                self._blocks.popitem(last=False)
        else:
            self._blocks.move_to_end(key)
        return first, lines

    def _line(self, c: _Conn, idx: int) -> str:
        first, lines = self._block(c, idx)
        return lines[idx - first]

    def _search_block(self, db: sqlite3.Connection, c: _Conn, first: int, end: int,
                      kinds: frozenset[int] | None, query: TextQuery) -> list[int]:
        """Indexes of the matching events of the block of `c` that starts at `first` (and ends before `end`).

        A block is skipped without splitting it when it holds no event of the wanted kinds, or when
        its whole text fails the query's cheap test (the usual case for a rare search term).
        """
        kinds_of = c.kinds
        if kinds is not None and not any(k in kinds for k in kinds_of[first:end]):
            return []
        row = db.execute("SELECT data FROM blocks WHERE conn_no=? AND first=?", (c.conn_no, first)).fetchone()
        if row is None:
            return []
        text = zlib.decompress(row[0]).decode()
        if not query.line_may_match(text):
            return []
        out = []
        for idx, line in enumerate(text.split("\n"), first):
            if kinds is not None and kinds_of[idx] not in kinds:
                continue
            if query.line_may_match(line) and query.matches(_loads(line)):
                out.append(idx)
        return out

    def _advance(self, s: _Search, kinds: frozenset[int] | None, query: TextQuery, limits: SearchLimits) -> None:
        """Searches on from where `s` stopped, block by block, until it is complete or `limits` stop it.

        It reads through a database connection of its own, so paging (and other searches) go on meanwhile.
        At least one block is searched per call, so a search always gets on. Raises `SearchCancelled`
        when `limits.cancel` is set (what was found so far is kept, and the next request searches on).
        """
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        s.timed_out = False
        try:
            while s.at < len(s.conns):
                c = s.conns[s.at]
                hits = s.hits.setdefault(c.conn_no, array("I"))
                while s.block < len(c.firsts):
                    first = c.firsts[s.block]
                    end = c.firsts[s.block + 1] if s.block + 1 < len(c.firsts) else c.count
                    found = self._search_block(db, c, first, end, kinds, query)
                    if found:
                        hits.extend(found)
                    s.searched += end - first
                    s.block += 1
                    if limits.cancel is not None and limits.cancel.is_set():
                        raise SearchCancelled()
                    if limits.deadline is not None and time.monotonic() > limits.deadline:
                        s.timed_out = s.at < len(s.conns) - 1 or s.block < len(c.firsts)
                        if s.timed_out:
                            return
                s.at += 1
                s.block = 0
        finally:
            db.close()

    def _positions(self, s: _Search, single: _Conn | None) -> Any:
        """The matches `s` found so far: indexes within `single`, else positions in capture order."""
        if single is not None or len(self.conns) == 1:
            conn_no = single.conn_no if single is not None else next(iter(self.by_no))
            return array("I", s.hits.get(conn_no, ()))
        parts = [(conn_no, array("I", idx)) for conn_no, idx in list(s.hits.items())]
        parts = [(conn_no, idx) for conn_no, idx in parts if idx]
        if not parts:
            return array("I")
        with self.lock:
            order = self._orders()
        which = np.frombuffer(order, dtype=np.uint32)[0::2]
        found = [np.flatnonzero(which == conn_no)[np.frombuffer(idx, dtype=np.uint32)] for conn_no, idx in parts]
        return np.sort(np.concatenate(found)) if len(found) > 1 else found[0]

    def _orders(self) -> array:
        if self._order is None:
            order = array("I")
            for (data,) in self.db.execute('SELECT data FROM "order" ORDER BY chunk'):
                order.frombytes(data)
            self._order = order
        return self._order

    # ---- queries

    def connection(self, conn: str) -> _Conn:
        """The connection with this id; KeyError when there is none."""
        return self.conns[conn]

    def _matching(self, c: _Conn | None, kinds: frozenset[int]) -> Any:
        """Positions (indexes, or global positions when `c` is None) of the events of these kinds.

        Computed with numpy outside the store's lock (a kind filter over every connection of a big
        capture would otherwise hold up paging, as searches did); the lock only guards the cache.
        """
        key = (c.conn_no if c else None, tuple(sorted(kinds)))
        with self.lock:
            hit = self._filters.get(key)
            if hit is not None:
                self._filters.move_to_end(key)
                return hit
            order = self._orders() if c is None and len(self.conns) > 1 else None
        wanted = np.array(sorted(kinds), dtype=np.uint8)
        if c is not None or order is None:
            one = c if c is not None else next(iter(self.conns.values()), None)
            kinds_of = np.frombuffer(one.kinds, dtype=np.uint8) if one is not None else np.zeros(0, np.uint8)
            out = np.flatnonzero(np.isin(kinds_of, wanted))
        else:
            pairs = np.frombuffer(order, dtype=np.uint32)
            nos = sorted(self.by_no)
            starts = np.zeros(max(nos) + 1, dtype=np.uint64)
            at = 0
            for n in nos:
                starts[n] = at
                at += self.by_no[n].count
            every = np.concatenate([np.frombuffer(self.by_no[n].kinds, dtype=np.uint8) for n in nos])
            out = np.flatnonzero(np.isin(every[starts[pairs[0::2]] + pairs[1::2]], wanted))
        with self.lock:
            self._filters[key] = out
            if len(self._filters) > self._filter_cache:
                self._filters.popitem(last=False)
        return out

    def page(self, conn: str | None, offset: int, limit: int, *, kinds: Iterable[str] | None = None,
             q: str | None = None) -> tuple[list[dict[str, Any]], int]:
        """One page of events (dicts with private keys) and the number of matches (searching to the end)."""
        found = self.listing(conn, offset, limit, kinds=kinds, q=q)
        return found.events, found.total

    def listing(self, conn: str | None, offset: int, limit: int, *, kinds: Iterable[str] | None = None,
                q: str | None = None, limits: SearchLimits | None = None) -> Page:
        """One page of events (dicts with private keys) of one connection (or all, in capture order).

        A text search (`q`) stops where `limits` say: the page then holds what was found so far and
        says how many elements were searched. Searches are kept (a few, least recently used out), so
        the next pages, and a search that goes on (`limits.more`), start from where it stopped.
        """
        c = self.conns[conn] if conn is not None else None
        kind_codes = frozenset(KIND_CODES.get(k, 254) for k in kinds) if kinds else None
        if not q:
            if kind_codes is None:
                total = c.count if c is not None else self.total
                positions: Iterable[int] = range(offset, min(offset + limit, total))
            else:
                matching = self._matching(c, kind_codes)
                total = len(matching)
                positions = [int(p) for p in matching[offset:offset + limit]]
            with self.lock:
                return Page(self._events(c, positions), total)
        limits = limits or SearchLimits()
        query = TextQuery(q)
        key = (c.conn_no if c else None, tuple(sorted(kind_codes)) if kind_codes is not None else None, q)
        with self.lock:
            s = self._searches.get(key)
            if s is None:
                conns = [c] if c is not None else [self.by_no[n] for n in sorted(self.by_no)]
                s = self._searches[key] = _Search(conns, sum(x.count for x in conns))
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
        cached = s.positions
        if cached is not None and cached[0] == searched:
            positions = cached[1]
        else:  # (mapping matches to capture order costs a pass over it: once per state of the search)
            positions = self._positions(s, c)
            s.positions = (searched, positions)
        window = [int(p) for p in positions[offset:offset + limit]]
        with self.lock:
            return Page(self._events(c, window), len(positions), searched, s.elements)

    def _events(self, c: _Conn | None, positions: Iterable[int]) -> list[dict[str, Any]]:
        if c is not None:
            return [_loads(self._line(c, i)) for i in positions]
        order = self._orders()
        return [_loads(self._line(self.by_no[order[2 * p]], order[2 * p + 1])) for p in positions]

    def event(self, conn: str, index: int) -> dict[str, Any]:
        """One event with its fields; KeyError/IndexError when there is none."""
        with self.lock:
            c = self.conns[conn]
            if not 0 <= index < c.count:
                raise IndexError(index)
            ev = _loads(self._line(c, index))
            ev["fields"] = self._fields(c, ev)
            return ev

    def fields_of(self, events: list[dict[str, Any]]) -> None:
        """Adds `fields` to events returned by `page`."""
        with self.lock:
            for ev in events:
                ev["fields"] = self._fields(self.conns[ev["conn"]], ev)

    def _fields(self, c: _Conn, ev: dict[str, Any]) -> list[dict[str, Any]]:
        kind = ev["kind"]
        if kind == "frame":
            return [f.to_dict() for f in self._frame(ev).fields]
        if kind == "message":
            parts = self._parts(c, ev)
            message = Message(ev["offset"], ev["length"], parts=tuple(parts))
            return [f.to_dict() for f in message.fields]
        row = self.db.execute("SELECT data FROM fields WHERE conn_no=? AND idx=?", (c.conn_no, ev["index"])).fetchone()
        return _loads(zlib.decompress(row[0])) if row else []

    def _frame(self, ev: dict[str, Any]) -> Frame:
        body_hex = ev.get("body", "")
        whole = ev.get("hex", "")
        header = bytes.fromhex(whole[: len(whole) - len(body_hex)])
        body: Any = bytes.fromhex(body_hex)
        size = ev.get("size", len(body))
        if ev.get("truncated") and self.store_max_body and len(body) == self.store_max_body and size > len(body):
            body = _LongBody(body, size)  # cut when stored, not by the capture: report its real length
        return Frame(ev["offset"], ev["length"], size=size, header=header, body=body, framing=ev.get("_f", "3"),
                     truncated=bool(ev.get("truncated")))

    def _parts(self, c: _Conn, message: dict[str, Any]) -> list[Frame]:
        """The frame events of a message: same direction, inside its byte range, just before it."""
        start, end, d = message["offset"], message["offset"] + message["length"], message["dir"]
        wanted = len(message.get("frames") or ())
        parts: list[Frame] = []
        idx = message["index"] - 1
        while idx >= 0 and len(parts) < wanted:
            if c.kinds[idx] == KIND_CODES["frame"]:
                ev = _loads(self._line(c, idx))
                if ev["dir"] == d:
                    if ev["offset"] < start:
                        break
                    if ev["offset"] + ev["length"] <= end:
                        parts.append(self._frame(ev))
            idx -= 1
        parts.reverse()
        return parts


# --------------------------------------------------------------------------- output shaping


def public(ev: dict[str, Any], max_body: int | None) -> dict[str, Any]:
    """An event as the API shows it: private keys gone, bodies cut to `max_body` octets."""
    for key in [k for k in ev if k.startswith("_")]:
        del ev[key]
    if max_body is None:
        return ev
    limit = 2 * max_body
    cut = False
    body = ev.get("body")
    if isinstance(body, str) and len(body) > limit:
        whole = ev.get("hex")
        if isinstance(whole, str):
            ev["hex"] = whole[: len(whole) - len(body) + limit]
        ev["body"] = body[:limit]
        cut = True
    else:
        whole = ev.get("hex")
        if isinstance(whole, str) and len(whole) > limit + 64:
            ev["hex"] = whole[: limit + 64]
            cut = True
    frames = ev.get("frames")
    if isinstance(frames, list) and any(isinstance(f, str) and len(f) > limit for f in frames):
        ev["frames"] = [f[:limit] if isinstance(f, str) else f for f in frames]
        cut = True
    if cut:
        ev["truncated"] = True
    return ev

