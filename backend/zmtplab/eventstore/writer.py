"""Writing a store (see `layout.py`): `ingest_capture`, the dissection worker's entry point, and `StoreWriter`."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sqlite3
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..analysis import Analyzer
from ..capture.dissect import CaptureDissector, DissectResult, SourcedRun, dissect_capture_runs
from ..capture.errors import CaptureFormatError, ExpansionLimit
from ..engine.fields import text_or_hex
from ..engine.notation import compact_json as _dumps
from ..engine.notation import format_address
from .layout import (
    CHUNK_OCTETS,
    CHUNK_RECORDS,
    CHUNK_SEGS,
    DIRS,
    KIND_CODES,
    LAYOUT,
    NO_PACKET,
    RUN,
    SCHEMA,
    SEG,
    bigrams,
    search_text,
)

FRAMINGS = {"1.0": "1", "2.0": "2"}
SEVERITIES = ("note", "warn", "error")


class Cancelled(Exception):
    """The capture was deleted (or the server is stopping) while it was being dissected."""


@dataclass
class _ConnStats:
    """The per-connection summary, accumulated while events stream by."""

    conn_no: int
    conn: str
    count: int = 0
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



    def observe_run(self, sr: SourcedRun, frames: int) -> None:
        """Updates the summary with a run of `frames` frames (and its messages)."""
        d = sr.dir
        run = sr.run
        self.messages[d] += len(run) - frames
        if run.end > self.nbytes[d]:
            self.nbytes[d] = run.end
        first, last = sr.ts[0], sr.ts[-1]
        if self.first_ts is None or first < self.first_ts:
            self.first_ts = first
        if self.last_ts is None or last > self.last_ts:
            self.last_ts = last


class StoreWriter:
    """Builds one store from what `CaptureDissector.feed_runs()` gives (event dicts with fields, and runs)."""

    def __init__(self, path: Path, *, store_max_body: int) -> None:
        self.path = path
        path.unlink(missing_ok=True)
        self.db = sqlite3.connect(path)
        self.db.executescript(SCHEMA)
        self.store_max_body = store_max_body
        self.conns: dict[str, _ConnStats] = {}
        self.total = 0
        self.chunk = 0
        self._segs: list[tuple] = []
        self._octets: list[bytes] = []
        self._octet_bytes = 0
        self._records: list[bytes] = []
        self._fields: list[bytes] = []
        self._search: list[bytes] = []
        self._specials: list[list[Any]] = []

    def _stats(self, cid: str) -> _ConnStats:
        st = self.conns.get(cid)
        if st is None:
            st = self.conns[cid] = _ConnStats(len(self.conns), cid)
        return st

    def add(self, item: dict[str, Any] | SourcedRun) -> None:
        """Stores one item; an event dict gets its `index` (the analysis cites events by it)."""
        if isinstance(item, SourcedRun):
            self._add_run(item)
        else:
            self._add_event(item)
        if len(self._segs) >= CHUNK_SEGS or self._octet_bytes >= CHUNK_OCTETS or len(self._records) >= CHUNK_RECORDS:
            self._flush()

    def _add_event(self, ev: dict[str, Any]) -> None:
        st = self._stats(ev["conn"])
        ev["index"] = st.count
        st.count += 1
        self.total += 1
        st.observe(ev)
        d = ev.get("dir")
        code = KIND_CODES.get(ev["kind"], 254)
        self._fields.append(orjson.dumps(ev.pop("fields", [])))  # (apart: a search reads the records only)
        text = search_text(ev)
        self._segs.append((st.conn_no, code, DIRS.index(d) if d in DIRS else 0, 0, 1, 0, len(self._records), len(text),
                           ev["offset"], NO_PACKET, 0.0))
        self._search.append(text)
        self._records.append(orjson.dumps(ev))

    def _add_run(self, sr: SourcedRun) -> None:
        run = sr.run
        n = len(run)
        if self._octet_bytes and self._octet_bytes + len(run.data) > CHUNK_OCTETS:
            self._flush()  # (a run's octets stay within one chunk)
        st = self._stats(sr.conn)
        frames = len(run.starts) if run.starts is not None else _frames(run)
        st.observe_run(sr, frames)
        packets, stamps = sr.packets, sr.ts
        last = packets[-1]
        if len(last) == 1 and packets.count(last) == n:
            special: list[int] = []
            packet = last[0]
        elif len(last) == 1:  # (events that began in an earlier packet: usually the run's first message)
            special = [k for k in range(n) if packets[k] is not last and packets[k] != last]
            packet = last[0]
        else:
            special = list(range(n))
            packet = NO_PACKET
        seg = len(self._segs)
        for k in special:
            self._specials.append([seg, k, packets[k], stamps[k]])
        self._segs.append((st.conn_no, RUN, DIRS.index(sr.dir), int(run.framing), n, frames, self._octet_bytes,
                           len(run.data), run.start, packet, stamps[-1]))
        self._octets.append(bytes(run.data))
        self._octet_bytes += len(run.data)
        st.count += n
        self.total += n

    def _flush(self) -> None:
        if not self._segs:
            return
        segs = np.array(self._segs, dtype=SEG)
        chunk = self.chunk
        octets = b"".join(self._octets)
        search = b"".join(self._search)
        self.db.execute("INSERT INTO segs VALUES (?, ?, ?)",
                        (chunk, bigrams(octets, search), zlib.compress(segs.tobytes(), 1)))
        if octets:
            self.db.execute("INSERT INTO octets VALUES (?, ?)", (chunk, octets))
        if self._records:
            self.db.execute("INSERT INTO records VALUES (?, ?, ?)", (chunk, zlib.compress(search, 1),
                                                                     zlib.compress(b"\n".join(self._records), 1)))
            self.db.execute("INSERT INTO fields VALUES (?, ?)", (chunk, zlib.compress(b"\n".join(self._fields), 1)))
        if self._specials:
            specials = zlib.compress(orjson.dumps(self._specials), 1)
            self.db.execute("INSERT INTO specials VALUES (?, ?)", (chunk, specials))
        self.chunk += 1
        self._segs, self._octets, self._records, self._fields, self._search, self._specials = [], [], [], [], [], []
        self._octet_bytes = 0

    def finish(self, result: DissectResult | None, error: str | None,
               analysis: dict[str, Any] | None = None) -> dict[str, Any]:
        """Writes what is left, the summary and the capture's `analysis` (`zmtplab analyze`'s); returns the summary."""
        self._flush()
        infos = {c.conn: c for c in (result.connections if result else [])}
        connections = []
        ordered = [c for c in infos if c in self.conns] + [c for c in self.conns if c not in infos]
        for cid in ordered:
            st = self.conns[cid]
            info = infos.get(cid)
            client, server = (format_address(*info.client), format_address(*info.server)) if info else (None, None)
            summary = st.summary(client, server)
            # False for a connection nothing could be read of as ZMTP (its events are only the `unreadable` note).
            summary["zmtp"] = bool(info.zmtp) if info is not None else True
            if info is not None:
                summary["first_ts"] = info.first_ts
                summary["last_ts"] = info.last_ts
            connections.append(summary)
        self.db.executemany("INSERT INTO conns VALUES (?, ?, ?)",
                            [(st.conn_no, st.conn, st.count) for st in self.conns.values()])
        expert_total = dict.fromkeys(SEVERITIES, 0)
        for c in connections:
            for sev in SEVERITIES:
                expert_total[sev] += c["expert"][sev]
        summary = {
            "connections": connections, "expert_total": expert_total, "events": self.total,
            "tcp_connections": len(infos),
        }
        meta = {"summary": summary, "error": error, "store_max_body": self.store_max_body, "analysis": analysis,
                "layout": LAYOUT}
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


def _frames(run: Any) -> int:
    """How many frames a run holds (when its scan did not keep their starts)."""
    return len(run) - len(run.messages())


class TimeLimit(Exception):
    """The dissection took longer than the server allows (raised from the capture reader or the event loop)."""


class Stopped(Exception):
    """The dissection stopped at a limit of the server (its text says which), keeping what it read."""


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


DONE, ERROR, CANCELLED = "done", "error", "cancelled"


@dataclass(frozen=True)
class IngestJob:
    """One dissection of a capture into a store, as a worker (process or thread) is given it.

    The worker writes `{state, percent, detail}` to the `progress` file as it goes and stops when the `cancel` file
    appears. After `max_seconds` it stops with a store of what it read so far (`time_limit`, the server's limit as
    its message names it, defaults to `max_seconds`); so it does when a compressed capture decompresses past
    `max_expanded` octets, and when the store's disk has less than `min_free_disk` octets left (looked at with the
    progress). With `analysis` False the store keeps no analysis (`analyze_file` makes it, in another worker)."""

    capture: Path
    store: Path
    progress: Path
    cancel: Path
    store_max_body: int
    max_events: int
    progress_interval: float
    max_seconds: float | None = None
    time_limit: float | None = None
    analysis: bool = True
    max_expanded: int | None = None
    min_free_disk: int | None = None


@dataclass(frozen=True)
class IngestResult:
    """How a dissection ended: `done`, `error` (`partial`: stopped by a limit, its store holding what it read) or
    `cancelled`; the events stored and the capture's octets read."""

    state: str
    error: str | None = None
    events: int = 0
    read: int = 0
    partial: bool = False


@dataclass(frozen=True)
class AnalysisJob:
    """The capture's analysis made apart from its store, in a worker of its own (`analyze_file`)."""

    capture: Path
    cancel: Path
    max_seconds: float | None = None
    max_expanded: int | None = None


@dataclass(frozen=True)
class AnalysisResult:
    """How an analysis ended: `done` with the `analysis`, or `error`/`cancelled` with why."""

    state: str
    error: str | None = None
    analysis: dict[str, Any] | None = None


def ingest_capture(job: IngestJob) -> IngestResult:
    """Dissects `job.capture` into a store at `job.store` (a worker's entry point); never raises for a bad capture
    (that is the `error` state)."""
    capture, store_path, progress_path, cancel_path = job.capture, job.store, job.progress, job.cancel
    tmp_path = store_path.with_name(store_path.name + ".building")
    try:
        size = max(os.path.getsize(capture), 1)
        if os.path.exists(cancel_path):
            raise Cancelled()
        writer = StoreWriter(tmp_path, store_max_body=job.store_max_body)
    except Cancelled:
        return IngestResult(CANCELLED, "cancelled")
    except (OSError, sqlite3.Error) as exc:
        with contextlib.suppress(OSError):
            tmp_path.unlink(missing_ok=True)
        if os.path.exists(cancel_path) or not os.path.exists(capture):  # deleted before its turn came
            return IngestResult(CANCELLED, "cancelled")
        return IngestResult(ERROR, f"storing the events failed: {_why(exc)}")
    result = DissectResult()
    # The capture-wide analysis (`zmtplab analyze`) follows the same events: one pass over the file for both.
    dissector = CaptureDissector(with_fields=True, max_body=job.store_max_body, runs=True)

    def endpoints(conn: str) -> tuple[tuple[str, int], tuple[str, int]] | None:
        info = dissector.info(conn)
        return (info.client, info.server) if info is not None else None

    analyzer = Analyzer(endpoints) if job.analysis else None
    error: str | None = None
    last = 0.0

    def report(percent: float) -> None:
        _write_json(progress_path, {"state": "dissecting", "percent": round(percent, 1), "detail": ""})

    deadline = time.monotonic() + job.max_seconds if job.max_seconds is not None else None
    timed_out = False
    try:
        report(0)
        with open(capture, "rb") as raw:
            counting = _CountingReader(raw, deadline)
            try:
                for n, item in enumerate(dissect_capture_runs(counting, dissector=dissector, result=result,
                                                              max_expanded=job.max_expanded)):
                    writer.add(item)
                    if analyzer is not None:
                        analyzer.add(item)
                    if not n & 63:
                        now = time.monotonic()
                        if deadline is not None and now > deadline:
                            raise TimeLimit()
                        if not n & 1023 and now - last >= job.progress_interval:
                            last = now
                            if os.path.exists(cancel_path):
                                raise Cancelled()
                            free = _free_disk(tmp_path)
                            if job.min_free_disk is not None and free is not None and free < job.min_free_disk:
                                raise Stopped(disk_low_message(free, counting.pos, size))
                            report(min(99.0, 100.0 * counting.pos / size))
                    if writer.total >= job.max_events:
                        error = f"stopped after {job.max_events} events (the server's limit per capture)"
                        break
            except TimeLimit:
                timed_out = True
                error = time_limit_message(job.time_limit or job.max_seconds, counting.pos, size)
            except ExpansionLimit as exc:
                timed_out = True
                error = expansion_message(exc.limit, size)
            except Stopped as exc:
                timed_out = True
                error = str(exc)
        error = error or result.error
        summary = writer.finish(None if timed_out else result, error,
                                analysis=analyzer.finish(dissector.infos) if analyzer is not None else None)
        os.replace(tmp_path, store_path)
    except Cancelled:
        writer.abort()
        return IngestResult(CANCELLED, "cancelled", writer.total)
    except CaptureFormatError as exc:
        writer.abort()
        return IngestResult(ERROR, str(exc))
    except (OSError, sqlite3.Error) as exc:
        writer.abort()
        if os.path.exists(cancel_path) or not os.path.exists(capture):
            return IngestResult(CANCELLED, "cancelled", writer.total)
        return IngestResult(ERROR, f"storing the events failed: {_why(exc)}")
    except Exception as exc:  # a bug in the dissector must not take the server down
        writer.abort()
        return IngestResult(ERROR, f"dissection failed: {type(exc).__name__}: {exc}")
    if timed_out:
        return IngestResult(ERROR, error, summary["events"], counting.pos, partial=True)
    if error and not summary["events"] and not result.connections:
        return IngestResult(ERROR, error)  # nothing readable at all
    return IngestResult(DONE, error, summary["events"], counting.pos)


def expansion_message(limit: int, size: int) -> str:
    """What a compressed capture stopped at its expansion budget says (catalog id `api.capture.expansion`)."""
    return (f"the compressed capture ({size} octets) expands past the {limit} octets the server reads of it; "
            "the events read until then are kept")


def disk_low_message(free: int, pos: int, size: int) -> str:
    """What a dissection stopped by a nearly full disk says (catalog id `api.capture.disk_low`)."""
    return (f"the server's disk is nearly full ({free} bytes free): the dissection stopped at byte {pos} of {size}; "
            "the events read until then are kept")


def _free_disk(path: Path) -> int | None:
    try:
        return shutil.disk_usage(path.parent).free
    except OSError:
        return None


def time_limit_message(limit: float, pos: int, size: int) -> str:
    """What a capture stopped at the server's time limit says (catalog id `api.capture.time_limit`)."""
    return (f"the dissection took longer than the server's limit of {limit:g} s and was stopped "
            f"at byte {pos} of {size}; the events read until then are kept")


def _why(exc: BaseException) -> str:
    """An OSError or SQLite error in words a reader acts on: a full disk says so."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return "the disk is full"
    return str(exc)


def analyze_file(job: AnalysisJob) -> AnalysisResult:
    """The capture's analysis (`zmtplab analyze`'s) made apart from its store, in a worker of its own, so a big
    capture's two passes share the machine's cores: `done` with the analysis, or `error`/`cancelled` (the `cancel`
    file appeared, or `max_seconds` ran out). Each event a finding cites gets the `index` the store gives it (the
    same dissection numbers events the same way)."""
    capture, cancel = job.capture, job.cancel
    dissector = CaptureDissector(with_fields=False, runs=True)

    def endpoints(conn: str) -> tuple[tuple[str, int], tuple[str, int]] | None:
        info = dissector.info(conn)
        return (info.client, info.server) if info is not None else None

    analyzer = Analyzer(endpoints)
    result = DissectResult()
    counts: dict[str, int] = {}
    deadline = time.monotonic() + job.max_seconds if job.max_seconds is not None else None
    try:
        with open(capture, "rb") as raw:
            for n, item in enumerate(dissect_capture_runs(_CountingReader(raw, deadline), dissector=dissector,
                                                          result=result, max_expanded=job.max_expanded)):
                if isinstance(item, SourcedRun):
                    counts[item.conn] = counts.get(item.conn, 0) + len(item.run)
                else:
                    conn = item["conn"]
                    item["index"] = counts.get(conn, 0)
                    counts[conn] = item["index"] + 1
                analyzer.add(item)
                if not n & 1023 and os.path.exists(cancel):
                    return AnalysisResult(CANCELLED, "cancelled")
    except TimeLimit:
        return AnalysisResult(ERROR, "the analysis took longer than the server's limit")
    except ExpansionLimit as exc:
        return AnalysisResult(ERROR, expansion_message(exc.limit, os.path.getsize(capture)))
    except (OSError, CaptureFormatError) as exc:
        return AnalysisResult(ERROR, str(exc))
    return AnalysisResult(DONE, analysis=analyzer.finish(result.connections))


def store_analysis(store: str, analysis: dict[str, Any]) -> None:
    """Writes an analysis made apart (`analyze_file`) into a finished store."""
    db = sqlite3.connect(store)
    try:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('analysis', ?)", (_dumps(analysis),))
        db.commit()
    finally:
        db.close()
