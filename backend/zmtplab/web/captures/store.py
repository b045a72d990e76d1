"""Uploaded captures: storage under server-made ids, background dissection, expiry.

Each capture lives in `<data_dir>/captures/<id>/`:

- `capture`: the uploaded bytes (the client's file name is kept only as a display string);
- `meta.json`: id, display name, size, time of upload, state and error;
- `progress.json`: written by the dissection worker while it runs;
- `events.sqlite`: the dissected events (see `eventstore`);
- `cancel`: created to ask a running worker to stop.

Dissection runs in a process pool (or a thread pool, by setting), so the event loop never
waits for it. Its processes are shared fairly between client addresses (`limits.FairSlots`): whoever
holds the fewest goes next, so one address's uploads delay another's by one task at most. What one
capture may cost is bounded: `dissect_max_seconds`, `max_events_per_capture`, the octets a compressed
capture may expand into (`max_expand_ratio` times its size, `max_upload_bytes` at most) and the disk
it may leave free (`min_free_disk`); a dissection stopped by one of them keeps what it read. A crash of
one dissection marks that capture `error` and nothing else. The worker
processes die with the server, however it ends (`capture.children`): a server killed mid-dissection
leaves no worker racing the next start's dissection of the same capture, and that start redoes each
interrupted dissection once (a capture whose worker died, rather than whose bytes failed, gets one
more try at the next start too).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import multiprocessing
import os
import re
import shutil
import time
import unicodedata
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from ...capture.children import die_with_parent
from ...eventstore import (
    AnalysisJob,
    EventStore,
    IngestJob,
    IngestResult,
    analyze_file,
    ingest_capture,
    store_analysis,
    time_limit_message,
)
from ..core.errors import Conflict, NoRoom, NotFound, TooMany
from ..core.jobstore import ID_RE, JobStore
from ..core.limits import FairSlots, address_key
from ..core.settings import Settings
from .searches import ClientSlots
from .uploads import UploadResult

log = logging.getLogger(__name__)
Job = TypeVar("Job")
Outcome = TypeVar("Outcome")

PREVIEW_EVENTS = 5000  # a capture's first events, dissected and served first while the rest is dissected
EXPAND_FLOOR = 16 * 1024 * 1024  # octets any compressed capture may expand into, however small
UPLOADED, DISSECTING, DONE, ERROR, CANCELLED = "uploaded", "dissecting", "done", "error", "cancelled"
STORE_TMP, PREVIEW_TMP = "events.sqlite.building", "preview.sqlite.building"  # (see eventstore.ingest_capture)


class CaptureNotFound(NotFound, KeyError):
    """No capture has this id."""


class CaptureNotReady(Conflict):
    """The capture is still being dissected (or its dissection failed)."""


class TooManyCaptures(TooMany):
    """This client address already stores (or is uploading) as many captures as one may."""


class DiskFull(NoRoom):
    """The server's disk has no room for the upload; nothing of it was kept."""


def display_name(name: str | None) -> str:
    """The client's file name reduced to something safe to show: base name, printable, bounded."""
    if not name:
        return "capture"
    name = re.split(r"[\\/]", name)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = name.strip().strip(".") or "capture"
    return name[:120]


@dataclass
class CaptureRecord:
    """What the server knows about one capture."""

    id: str
    name: str
    size: int
    created: float
    client: str = ""
    state: str = UPLOADED
    error: str | None = None
    percent: float = 0.0
    detail: str = ""
    directory: Path = field(default_factory=Path)
    store: EventStore | None = None
    summary: dict[str, Any] | None = None
    store_bytes: int = 0
    transient: bool = False  # failed because its worker died, not because of its bytes: tried again at a restart
    job: asyncio.Task | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def capture_path(self) -> Path:
        return self.directory / "capture"

    @property
    def store_path(self) -> Path:
        return self.directory / "events.sqlite"

    @property
    def disk_bytes(self) -> int:
        """What the capture takes on disk: the upload and, once dissected, its event store."""
        return self.size + self.store_bytes

    def meta(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "size": self.size, "created": self.created,
                "client": self.client, "state": self.state, "error": self.error, "transient": self.transient}

    def progress(self) -> dict[str, Any]:
        """The `{state, percent, detail}` message of the progress stream."""
        detail = self.detail
        if self.state in (DONE, ERROR) and self.error:
            detail = self.error
        percent = 100.0 if self.state == DONE else self.percent
        return {"state": self.state, "percent": percent, "detail": detail}


class CaptureStore(JobStore[CaptureRecord]):
    """Every capture of this server; owned by the app's lifespan (`start()` / `stop()`)."""

    noun, plural = "capture", "captures"
    not_found, missing = CaptureNotFound, "no capture with id {id!r}"
    final_states = (DONE, ERROR)

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.captures_dir)
        self.settings = settings
        self.uploading: dict[str, int] = {}  # client address -> uploads in progress
        self.searches = ClientSlots(settings.max_searches_per_client)  # text searches running per client
        self._executor: Executor | None = None
        self._slots = FairSlots(settings.dissect_workers)  # the pool's processes, shared fairly by address
        self._stopping = False

    # ---- lifecycle

    async def start(self) -> None:
        """Creates the data directory, reloads captures from a previous run, starts the workers."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._executor = self._new_executor()
        for directory in sorted(self.root.iterdir()):
            record = await asyncio.to_thread(self._reload, directory)
            if record is None:
                continue
            if record.state == DONE or (record.state == ERROR and record.store_path.exists()):
                try:
                    record.store = await asyncio.to_thread(EventStore, record.store_path)
                    record.summary = record.store.summary
                    record.store_bytes = _file_size(record.store_path)
                    record.percent = 100.0
                except Exception:
                    if record.state == DONE:
                        record.state = UPLOADED  # dissect it again
            self.records[record.id] = record
            if record.state == UPLOADED:
                self._schedule(record)

    async def stop(self) -> None:
        """Stops running dissections (they resume at the next start) and closes the stores."""
        self._stopping = True
        jobs = [r.job for r in self.records.values() if r.job is not None and not r.job.done()]
        for record in self.records.values():
            if record.job is not None and not record.job.done():
                with contextlib.suppress(OSError):
                    (record.directory / "cancel").touch()
        for job in jobs:
            job.cancel()
        if jobs:
            await asyncio.gather(*jobs, return_exceptions=True)
        if self._executor is not None:
            executor, self._executor = self._executor, None
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
        for record in self.records.values():
            if record.store is not None:
                record.store.close()
                record.store = None

    def _new_executor(self) -> Executor:
        n = self.settings.dissect_workers
        if self.settings.dissect_executor == "thread":
            return ThreadPoolExecutor(max_workers=n, thread_name_prefix="zmtplab-dissect")
        return ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=die_with_parent, initargs=(os.getpid(),))

    def _reload(self, directory: Path) -> CaptureRecord | None:
        if not ID_RE.match(directory.name):
            return None
        try:
            meta = json.loads((directory / "meta.json").read_text())
        except (OSError, ValueError):
            shutil.rmtree(directory, ignore_errors=True)
            return None
        record = CaptureRecord(id=directory.name, name=str(meta.get("name", "capture")), size=int(meta.get("size", 0)),
                               created=float(meta.get("created", time.time())), directory=directory,
                               client=address_key(str(meta.get("client", ""))))  # (an IPv6 by its /64 now)
        record.state = meta.get("state", UPLOADED)
        record.error = meta.get("error")
        (directory / "cancel").unlink(missing_ok=True)
        if record.state == DONE and not record.store_path.exists():
            record.state = UPLOADED
        if record.state == ERROR and meta.get("transient"):  # its worker died: once more (then it stays failed)
            record.state, record.error, record.transient = UPLOADED, None, True
            record.store_path.unlink(missing_ok=True)
        if record.state in (UPLOADED, DISSECTING):
            record.state = UPLOADED
            for name in (STORE_TMP, "preview.sqlite", PREVIEW_TMP, "progress.json"):  # what the dead run left
                (directory / name).unlink(missing_ok=True)
            if not record.capture_path.exists():
                shutil.rmtree(directory, ignore_errors=True)
                return None
        return record

    # ---- creating

    def new_id(self) -> tuple[str, Path]:
        """A fresh capture id and its (new, empty) directory."""
        capture_id = uuid.uuid4().hex
        directory = self.root / capture_id
        directory.mkdir(parents=True)
        return capture_id, directory

    def discard(self, directory: Path) -> None:
        """Removes the directory of an upload that failed."""
        shutil.rmtree(directory, ignore_errors=True)

    async def add(self, capture_id: str, directory: Path, name: str, size: int, client: str = "") -> CaptureRecord:
        """Registers a finished upload (its bytes already in `directory/capture`) and queues its dissection.

        Raises OSError (a full disk) when its metadata cannot be written; nothing is registered then.
        """
        record = CaptureRecord(id=capture_id, name=display_name(name), size=size, created=time.time(),
                               directory=directory, client=client)
        await asyncio.to_thread(self.write_meta, record, True)
        self.records[capture_id] = record
        self._schedule(record)
        await self.evict(keep=capture_id)
        return record

    def count_for(self, client: str) -> int:
        """Captures this client address has stored or is uploading."""
        return sum(1 for r in self.records.values() if r.client == client) + self.uploading.get(client, 0)

    def admit(self, client: str) -> None:
        """`TooManyCaptures` when this client address may not upload another capture now."""
        limit = self.settings.max_captures_per_client
        if self.count_for(client) >= limit:
            raise TooManyCaptures(f"this address already has {limit} captures on the server (the limit); delete "
                                  "one, or wait until they expire")

    async def upload(self, client: str, needed: int,
                     receive: Callable[[Path], Awaitable[UploadResult]]) -> tuple[str, UploadResult]:
        """Stores one upload of `client`'s: `receive(path)` writes its bytes at `path`, then the capture is
        registered and its dissection queued. The upload counts towards the client's captures from the call on
        (before the first await, so concurrent uploads see it). `DiskFull` when the disk would keep less than
        `min_free_disk` beyond the `needed` octets, or fills up on the way; whatever fails, nothing of the upload
        stays on disk. Returns the capture's id and what `receive` said."""
        self.uploading[client] = self.uploading.get(client, 0) + 1
        directory = None
        try:
            free = await asyncio.to_thread(_free_disk, self.root)
            if free is not None and free - needed < self.settings.min_free_disk:
                raise DiskFull(_disk_full(free))
            capture_id, directory = await asyncio.to_thread(self.new_id)
            result = await receive(directory / "capture")
            await self.add(capture_id, directory, result.filename or "capture", result.size, client)
        except BaseException as exc:
            if directory is not None:
                await asyncio.to_thread(self.discard, directory)
            if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(_disk_full(await asyncio.to_thread(_free_disk, self.root))) from None
            raise
        finally:
            left = self.uploading.get(client, 1) - 1
            if left > 0:
                self.uploading[client] = left
            else:
                self.uploading.pop(client, None)
        return capture_id, result

    # ---- dissection

    def _schedule(self, record: CaptureRecord) -> None:
        record.job = asyncio.get_running_loop().create_task(self._dissect(record), name=f"dissect-{record.id}")

    def max_expanded(self, record: CaptureRecord) -> int:
        """How many octets this capture, if compressed, may decompress into."""
        s = self.settings
        return min(s.max_upload_bytes, max(int(s.max_expand_ratio * record.size), EXPAND_FLOOR))

    async def _dissect(self, record: CaptureRecord) -> None:
        s = self.settings
        async with contextlib.AsyncExitStack() as preview_slot:
            # The preview runs in a slot taken here (the capture is `uploaded` until it has one); the whole run's
            # two tasks take their own.
            await preview_slot.enter_async_context(self._slots.slot(record.client))
            if record.id not in self.records or self._stopping:
                return
            self.update(record, state=DISSECTING, percent=0.0, detail="")
            await asyncio.to_thread(self.write_meta, record)
            directory = record.directory
            job = IngestJob(record.capture_path, record.store_path, directory / "progress.json", directory / "cancel",
                            store_max_body=s.store_max_body, max_events=s.max_events_per_capture,
                            progress_interval=s.progress_interval, max_seconds=s.dissect_max_seconds,
                            time_limit=s.dissect_max_seconds, max_expanded=self.max_expanded(record),
                            min_free_disk=s.min_free_disk)
            poller = asyncio.get_running_loop().create_task(self._poll_progress(record))
            started = time.monotonic()
            transient = False  # failed because its worker died, not because of its bytes
            try:
                result, more = await self._preview(record, job)
                await preview_slot.aclose()
                if more:  # more than the preview holds: now the whole capture
                    # in what is left of the time limit (it is the capture's, not each run's)
                    left = max(s.dissect_max_seconds - (time.monotonic() - started), 0.001)
                    preview = result
                    result = await self._whole(record, replace(job, max_seconds=left))
                    if result.partial and record.store is not None and result.events < record.store.total:
                        # The whole run stopped before it passed the preview: what is kept is the preview.
                        await asyncio.to_thread(os.replace, record.directory / "preview.sqlite", record.store_path)
                        size = max(_file_size(record.capture_path), 1)
                        result = replace(result, events=record.store.total,
                                         error=time_limit_message(s.dissect_max_seconds, preview.read, size))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the worker died: this capture fails, the others go on
                log.exception("dissection of %s failed", record.id)
                result = IngestResult(ERROR, f"the dissection worker failed: {type(exc).__name__}")
                transient = True
            finally:
                poller.cancel()
        if record.id not in self.records:
            return
        state = result.state
        if state == CANCELLED:
            return
        with contextlib.suppress(OSError):
            (record.directory / "progress.json").unlink(missing_ok=True)
        changes: dict[str, Any]
        preview = record.store  # the preview's store, served until now (None without a preview)
        if state == DONE or (state == ERROR and result.partial):
            # A dissection stopped by a limit keeps what it read: the capture is `error`, its events readable.
            try:
                store = await asyncio.to_thread(EventStore, record.store_path)
            except Exception as exc:
                changes = {"state": ERROR, "error": f"the dissection could not be read back: {exc}"}
            else:
                record.store = store
                record.summary = store.summary
                record.store_bytes = _file_size(record.store_path)
                changes = {"state": state, "error": result.error, "percent": 100.0, "detail": ""}
        else:
            changes = {"state": ERROR, "error": result.error or "dissection failed"}
        # A worker that died is not the capture's fault: the next start tries once more (if this was not that try).
        changes["transient"] = transient and not record.transient
        for key, value in changes.items():
            setattr(record, key, value)
        if preview is not None and preview is not record.store:
            self._retire_preview(record, preview)
        await asyncio.to_thread(self.write_meta, record)
        self.update(record)
        await self.evict(keep=record.id)  # its event store counts towards the stored bytes too

    async def _preview(self, record: CaptureRecord, job: IngestJob) -> tuple[IngestResult, bool]:
        """Dissects the first `PREVIEW_EVENTS` events into a store of their own and serves it (the capture
        still `dissecting`) while the whole capture is dissected: a big capture shows its first elements
        within a second or two. Returns the preview's result and whether the capture holds more than it.
        The preview is a prefix of the full dissection, so element indexes stay valid when it is replaced."""
        limit = PREVIEW_EVENTS
        path = record.directory / "preview.sqlite"
        result = await self._run(replace(job, store=path, max_events=limit))
        if result.state != DONE or result.events < limit or job.max_events <= limit:
            if path.exists() and (result.state == DONE or result.partial):
                await asyncio.to_thread(os.replace, path, job.store)  # all there is: the preview is the result
            return result, False
        try:
            store = await asyncio.to_thread(EventStore, path)
        except Exception:
            log.exception("the preview of %s could not be read", record.id)
            return result, True
        if record.id not in self.records or self._stopping:
            store.close()
            return IngestResult(CANCELLED, "cancelled"), False
        record.store = store
        record.summary = store.summary
        self.update(record, detail=f"showing the first {limit:,} elements")
        return result, True

    async def _whole(self, record: CaptureRecord, job: IngestJob) -> IngestResult:
        """Dissects the whole capture into its store while another worker makes its analysis: the two passes
        share the cores. The store is served as soon as it is written (every element browsable and searchable,
        the capture still `dissecting`); the analysis joins it when made, and the capture is then `done`."""
        apart = AnalysisJob(job.capture, job.cancel, max_seconds=job.max_seconds, max_expanded=job.max_expanded)
        analysis = asyncio.ensure_future(self._run_in_pool(analyze_file, apart, key=record.client))
        try:
            result = await self._run(replace(job, analysis=False), key=record.client)
            if result.state == DONE and record.id in self.records and not self._stopping:
                try:
                    store = await asyncio.to_thread(EventStore, record.store_path)
                except Exception:
                    log.exception("the store of %s could not be read", record.id)
                else:
                    preview, record.store, record.summary = record.store, store, store.summary
                    if preview is not None:
                        self._retire_preview(record, preview)
                    self.update(record, detail=f"all {store.total:,} elements; making the analysis")
            made = await analysis
        except BaseException:
            analysis.cancel()
            raise
        if made.state == DONE and result.state == DONE and made.analysis is not None:
            await asyncio.to_thread(store_analysis, str(record.store_path), made.analysis)
        return result

    def _retire_preview(self, record: CaptureRecord, preview: EventStore) -> None:
        """Closes a replaced preview store once requests that may still be reading it are over."""
        with contextlib.suppress(OSError):
            (record.directory / "preview.sqlite").unlink(missing_ok=True)  # open handles keep reading
        asyncio.get_running_loop().call_later(10.0, preview.close)

    async def _run(self, job: IngestJob, key: str | None = None) -> IngestResult:
        """Runs one dissection in the pool (`_run_in_pool`)."""
        return await self._run_in_pool(ingest_capture, job, key=key)

    async def _run_in_pool(self, work: Callable[[Job], Outcome], job: Job, key: str | None = None) -> Outcome:
        """Runs `work(job)` in the pool (a job and its outcome are frozen dataclasses a process pickles), in a slot
        of `key`'s when given (else in one already held). When a worker process dies (killed, out of memory) every
        dissection it was running fails with BrokenProcessPool: the pool is replaced and each of them is tried once
        more, so only a capture that kills its worker twice ends in `error`."""
        if key is not None:
            async with self._slots.slot(key):
                return await self._run_in_pool(work, job)
        loop = asyncio.get_running_loop()
        for attempt in range(2):
            executor = self._executor
            if executor is None:
                raise RuntimeError("the capture store is stopped")
            try:
                future = executor.submit(work, job)
            except (BrokenProcessPool, RuntimeError):
                if self._stopping:
                    raise
                self._replace_executor(executor)
                continue
            try:
                return await asyncio.wrap_future(future, loop=loop)
            except BrokenProcessPool:
                self._replace_executor(executor)
                if attempt or self._stopping:
                    raise
        raise BrokenProcessPool("the dissection worker pool could not be started")

    def _replace_executor(self, broken: Executor) -> None:
        if self._executor is broken and not self._stopping:
            self._executor = self._new_executor()
            broken.shutdown(wait=False, cancel_futures=True)

    async def _poll_progress(self, record: CaptureRecord) -> None:
        path = record.directory / "progress.json"
        while True:
            await asyncio.sleep(self.settings.progress_interval)
            try:
                data = json.loads(await asyncio.to_thread(path.read_text))
            except (OSError, ValueError):
                continue
            percent = data.get("percent")
            if isinstance(percent, (int, float)) and percent != record.percent:
                self.update(record, percent=float(percent))

    def progress_timeout(self) -> float:
        return max(self.settings.progress_interval, 1.0)

    # ---- reading

    def ready(self, capture_id: str) -> tuple[CaptureRecord, EventStore]:
        """A capture whose events can be read; `CaptureNotReady` while it is being dissected."""
        record = self.get(capture_id)
        if record.store is None:
            if record.state == ERROR:
                raise CaptureNotReady(f"the capture could not be dissected: {record.error}")
            raise CaptureNotReady(f"the capture is still being dissected ({record.state})")
        return record, record.store

    def summary(self, capture_id: str) -> dict[str, Any]:
        """The capture as `GET /api/captures/{id}` shows it."""
        record = self.get(capture_id)
        summary = record.summary or {}
        return {
            "id": record.id, "name": record.name, "size": record.size, "created": record.created,
            "state": record.state, "error": record.error, "percent": record.progress()["percent"],
            "connections": summary.get("connections", []),
            "expert_total": summary.get("expert_total", {"note": 0, "warn": 0, "error": 0}),
            "events": summary.get("events", 0),
        }

    # ---- deleting and expiry

    async def delete(self, capture_id: str) -> None:
        """Deletes a capture, stopping its dissection if it runs."""
        record = self.get(capture_id)
        del self.records[capture_id]
        self.update(record, state=ERROR, error="deleted")
        with contextlib.suppress(OSError):
            (record.directory / "cancel").touch()
        job = record.job
        if job is not None and not job.done():
            # The worker notices `cancel` within a progress interval; remove the files after it stopped.
            job.add_done_callback(lambda _: shutil.rmtree(record.directory, ignore_errors=True))
        if record.store is not None:
            store, record.store = record.store, None
            await asyncio.to_thread(store.close)
        await asyncio.to_thread(shutil.rmtree, record.directory, True)

    def evictable(self, keep: str | None) -> list[CaptureRecord]:
        return sorted((r for r in self.records.values() if r.id != keep), key=lambda r: r.created)

    def limits(self) -> tuple[int, int, float]:
        s = self.settings
        return s.max_captures, s.max_total_bytes, s.capture_ttl

    def owner(self, record: CaptureRecord) -> str | None:
        return record.client


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _free_disk(path: Path) -> int | None:
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def _disk_full(free: int | None) -> str:
    left = f" ({free} bytes free)" if free is not None else ""
    return f"the server's disk has no room for this capture{left}; it was not stored. Try again later"
