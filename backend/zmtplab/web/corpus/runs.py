"""Corpus runs: the Spark pipeline over uploaded captures, one run at a time, kept on disk.

Each run lives in `<data_dir>/corpus/<id>/`:

- `meta.json`: id, client address, start and end time, the captures (id, display name, size,
  the path the pipeline was given), state, error, last progress and the run's public summary;
- `inputs/<capture id>`: hard links to the uploads while the run reads them (a capture deleted or
  expired meanwhile stays readable; nothing is copied on one file system); removed when it ends;
- `out/`: what `run_pipeline` writes: Parquet `events`, `connections`, `errors`, `report.html`,
  `summary.json`.

One run at a time: the Spark session is per process and a run keeps all its cores busy, so a
second start is refused (`RunBusy`, 409) rather than queued. The session is started by the first
run, in the manager's worker thread, kept for the next runs, and stopped at shutdown when this
manager started it. Runs expire like captures (`corpus_ttl`, at most `max_corpus_runs` kept).

A run the server died during (killed, out of memory, the machine rebooted) starts again from the
beginning at the next start, once, from its linked inputs; if it cannot (the inputs are gone, or it
was already such a second try) it ends `error` with a message that says to start it again. (The
Spark JVM ends with the server: pyspark's gateway exits when its stdin, our pipe, closes.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...pipeline import spark_problem
from ..captures.store import CaptureRecord
from ..core.errors import Conflict, NotFound, Unavailable
from ..core.jobstore import ID_RE, JobStore
from ..core.limits import address_key
from ..core.settings import Settings
from .report import REPORT_LANGS, relabel, report_name
from .tables import TableQuery, TableReader

log = logging.getLogger(__name__)

RUNNING, DONE, ERROR, CANCELLED = "running", "done", "error", "cancelled"
FINAL = (DONE, ERROR, CANCELLED)
STARTING = "starting Spark"  # the phase before the pipeline's own (`start`, `plan`, ...)


class RunNotFound(NotFound, KeyError):
    """No corpus run has this id."""


class RunBusy(Conflict):
    """Another corpus run is in progress."""


class RunNotReady(Conflict):
    """The run has not finished (or did not succeed), so it has no tables or report."""


class CorpusUnavailable(Unavailable):
    """The server cannot run Spark (no pyspark, no Java)."""


@dataclass
class RunRecord:
    """What the server knows about one corpus run."""

    id: str
    created: float
    captures: list[dict[str, Any]]  # {id, name, size, input}, in the order given
    directory: Path
    client: str = ""
    state: str = RUNNING
    error: str | None = None
    finished: float | None = None
    phase: str = STARTING
    fraction: float = 0.0
    tasks_done: int = 0
    tasks_total: int = 0
    summary: dict[str, Any] | None = None
    detail: str = ""
    job_group: str | None = None
    disk_bytes: int = 0  # octets of its tables and report (what `max_corpus_bytes` counts)
    cancel_reason: str | None = None  # set when a cancel was asked for
    resumed: bool = False  # started again after the server died during it (that happens once)
    job: asyncio.Task | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def out_dir(self) -> Path:
        return self.directory / "out"

    @property
    def inputs_dir(self) -> Path:
        return self.directory / "inputs"

    @property
    def elapsed(self) -> float:
        return (self.finished or time.time()) - self.created

    @property
    def inputs(self) -> list[str]:
        """The `capture` values of the run's tables, in the run's order."""
        return [c["input"] for c in self.captures]

    def capture_input(self, capture_id: str) -> str | None:
        """The `capture` value of one of the run's captures (None when the run has no such capture)."""
        return next((c["input"] for c in self.captures if c["id"] == capture_id), None)

    def progress(self) -> dict[str, Any]:
        """The message of the progress stream."""
        detail = self.error if self.state in FINAL and self.error else self.detail
        return {"state": self.state, "phase": self.phase, "fraction": 1.0 if self.state == DONE else self.fraction,
                "tasks_done": self.tasks_done, "tasks_total": self.tasks_total,
                "elapsed": round(self.elapsed, 3), "detail": detail or ""}

    def public(self) -> dict[str, Any]:
        """The run as `GET /api/corpus/runs/{id}` shows it (no server paths)."""
        return {"id": self.id, "created": self.created, "finished": self.finished, **self.progress(),
                "error": self.error,
                "captures": [{"id": c["id"], "name": c["name"], "size": c["size"]} for c in self.captures],
                "summary": self.summary}

    def meta(self) -> dict[str, Any]:
        return {"id": self.id, "created": self.created, "finished": self.finished, "client": self.client,
                "captures": self.captures, "state": self.state, "error": self.error, "phase": self.phase,
                "fraction": self.fraction, "summary": self.summary, "resumed": self.resumed}


class CorpusRuns(JobStore[RunRecord]):
    """Every corpus run of this server; owned by the app's lifespan (`start()` / `stop()`)."""

    noun, plural = "corpus run", "runs"
    not_found, missing = RunNotFound, "no corpus run with id {id!r}"
    final_states = FINAL

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.corpus_dir)
        self.settings = settings
        self.tables = TableReader(max_cell=max(64, settings.list_max_body * 2))
        self._executor: ThreadPoolExecutor | None = None
        self._reaper: asyncio.Task | None = None
        self._spark: Any = None
        self._owns_spark = False
        self._spark_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    # ---- lifecycle

    async def start(self) -> None:
        """Reloads the runs kept on disk (one the server stopped during is marked failed), starts the reaper."""
        self._loop = asyncio.get_running_loop()
        await asyncio.to_thread(self.root.mkdir, parents=True, exist_ok=True)
        for directory in sorted(self.root.iterdir()):
            record = await asyncio.to_thread(self._reload, directory)
            if record is not None:
                self.records[record.id] = record
        await self.evict()  # `max_corpus_runs` may have been lowered since
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zmtplab-corpus")
        self._reaper = asyncio.create_task(self._reap(), name="zmtplab-corpus-reaper")
        for record in self.records.values():
            if record.state == RUNNING:  # interrupted by the server's death: started again (see `_reload`)
                log.info("corpus run %s: the server died during it; starting it again", record.id)
                record.job = asyncio.get_running_loop().create_task(self._run(record), name=f"corpus-{record.id}")

    async def stop(self) -> None:
        """Cancels the run in progress, waits for its worker, stops the Spark session if this manager started it."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        running = [r for r in self.records.values() if r.state == RUNNING]
        for record in running:
            await self._request_cancel(record, "the server stopped during the run")
        jobs = [r.job for r in running if r.job is not None]
        if jobs:
            await asyncio.wait(jobs, timeout=60)
        # Stopping the session before waiting for the worker also ends a job that ignored the cancel.
        await asyncio.to_thread(self._stop_spark)
        if self._executor is not None:
            executor, self._executor = self._executor, None
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)

    def _reload(self, directory: Path) -> RunRecord | None:
        if not ID_RE.match(directory.name):
            return None
        try:
            meta = json.loads((directory / "meta.json").read_text())
            record = RunRecord(id=directory.name, created=float(meta["created"]), captures=list(meta["captures"]),
                               directory=directory, client=address_key(str(meta.get("client", ""))))
        except (OSError, ValueError, KeyError, TypeError):
            shutil.rmtree(directory, ignore_errors=True)
            return None
        record.state = meta.get("state", ERROR)
        record.error = meta.get("error")
        record.finished = meta.get("finished")
        record.phase = meta.get("phase", STARTING)
        record.fraction = float(meta.get("fraction", 0.0))
        record.summary = meta.get("summary")
        record.resumed = bool(meta.get("resumed"))
        if record.state not in FINAL:  # the server died during the run (a clean stop cancels it)
            shutil.rmtree(record.out_dir, ignore_errors=True)
            running = any(r.state == RUNNING for r in self.records.values())
            if not record.resumed and not running and all(Path(i).is_file() for i in record.inputs):
                record.state, record.resumed, record.error, record.finished = RUNNING, True, None, None
                record.phase, record.fraction = STARTING, 0.0
                record.detail = "started again: the server stopped during the run"
                self.write_meta(record)
                return record
            record.state = ERROR
            record.error = "the server stopped during the run; start it again (tick its captures and start a run)"
            record.finished = record.finished or time.time()
            self.write_meta(record)
        shutil.rmtree(record.inputs_dir, ignore_errors=True)
        record.disk_bytes = _tree_bytes(record.out_dir)
        return record

    # ---- starting a run

    async def unavailable(self) -> str | None:
        """Why runs cannot start on this server, saying what to install (`pipeline.spark_problem`), or None."""
        return await asyncio.to_thread(spark_problem)

    async def create(self, captures: list[CaptureRecord], client: str = "") -> RunRecord:
        """Starts a run over these captures (their files are linked into the run first).

        Raises CorpusUnavailable when Spark cannot run here, RunBusy while another run is in progress,
        OSError when the inputs cannot be linked (a capture deleted meanwhile, a full disk).
        """
        problem = await self.unavailable()
        if problem is not None:
            raise CorpusUnavailable(problem)
        busy = next((r for r in self.records.values() if r.state == RUNNING), None)
        if busy is not None:
            raise RunBusy("another corpus run is in progress (the Spark session runs one at a time): wait for it "
                          "to finish, or cancel it")
        run_id = uuid.uuid4().hex
        directory = self.root / run_id
        names = _unique_names([c.name for c in captures])
        entries = [{"id": c.id, "name": name, "size": c.size, "input": str(directory / "inputs" / c.id)}
                   for c, name in zip(captures, names, strict=True)]
        record = RunRecord(id=run_id, created=time.time(), captures=entries, directory=directory, client=client)
        self.records[run_id] = record  # before the first await: a concurrent start sees it and gets RunBusy
        try:
            await asyncio.to_thread(self._link_inputs, record, [c.capture_path for c in captures])
        except BaseException:
            del self.records[run_id]
            await asyncio.to_thread(shutil.rmtree, directory, True)
            raise
        record.job = asyncio.get_running_loop().create_task(self._run(record), name=f"corpus-{run_id}")
        await self.evict(keep=run_id)
        return record

    def _link_inputs(self, record: RunRecord, paths: list[Path]) -> None:
        record.inputs_dir.mkdir(parents=True)
        for entry, path in zip(record.captures, paths, strict=True):
            target = Path(entry["input"])
            try:
                os.link(path, target)
            except OSError:
                if not path.exists():
                    raise
                shutil.copyfile(path, target)  # another file system: copy
        self.write_meta(record, strict=True)

    # ---- running

    async def _run(self, record: RunRecord) -> None:
        """Runs the pipeline in the worker thread, cancelling it at the time limit; records how it ended."""
        assert self._executor is not None and self._loop is not None
        future = asyncio.wrap_future(self._executor.submit(self._execute, record))
        try:
            state, error, summary = await asyncio.wait_for(asyncio.shield(future), self.settings.corpus_max_seconds)
        except TimeoutError:
            await self._request_cancel(record, f"stopped at the time limit ({self.settings.corpus_max_seconds:g} s)")
            state, error, summary = await future
        record.finished = time.time()
        record.disk_bytes = await asyncio.to_thread(_tree_bytes, record.out_dir)
        self.update(record, state=state, error=error, summary=summary, detail="")
        if record.id in self.records:
            await asyncio.to_thread(self.write_meta, record)
            await self.evict(keep=record.id)
        else:  # deleted while it ran
            self.tables.forget(record.out_dir)
            await asyncio.to_thread(shutil.rmtree, record.directory, True)

    def _execute(self, record: RunRecord) -> tuple[str, str | None, dict[str, Any] | None]:
        """The worker: (state, error, public summary) of one run. Runs in the manager's thread."""
        from ...pipeline.job import run_pipeline

        try:
            if record.cancel_reason:
                return CANCELLED, record.cancel_reason, None
            spark = self._session()
            if record.cancel_reason:
                return CANCELLED, record.cancel_reason, None
            summary = run_pipeline(record.inputs, record.out_dir, spark=spark,
                                   progress=lambda info: self._on_progress(record, info), report_langs=REPORT_LANGS)
            if record.cancel_reason:  # it finished before the cancel could stop it: still cancelled, as asked
                shutil.rmtree(record.out_dir, ignore_errors=True)
                return CANCELLED, record.cancel_reason, None
            self._relabel_report(record)
            return DONE, None, self._public_summary(record, summary)
        except Exception as exc:
            shutil.rmtree(record.out_dir, ignore_errors=True)
            self._clear_cache()  # a run stopped part-way leaves its cached DataFrames behind
            if record.cancel_reason:
                return CANCELLED, record.cancel_reason, None
            log.exception("corpus run %s failed", record.id)
            return ERROR, _error_text(exc), None
        finally:
            shutil.rmtree(record.inputs_dir, ignore_errors=True)

    def _session(self) -> Any:
        """The Spark session of corpus runs, started on first use."""
        with self._spark_lock:
            from pyspark import SparkContext

            from ...pipeline.job import get_session

            if self._spark is not None and SparkContext._active_spark_context is not None:
                return self._spark
            # A session someone else started in this process (a test, an embedding app) is used, not owned.
            self._owns_spark = SparkContext._active_spark_context is None
            self._spark = get_session(self.settings.corpus_master, conf=dict(self.settings.corpus_spark_conf))
            return self._spark

    def _relabel_report(self, record: RunRecord) -> None:
        for lang in REPORT_LANGS:
            report = record.out_dir / report_name(lang)
            try:
                if report.exists():
                    relabel(report, [(c["input"], c["name"]) for c in record.captures], str(record.out_dir))
            except (OSError, UnicodeError):  # cosmetic: the report stays as the pipeline wrote it
                log.warning("could not relabel the report of corpus run %s", record.id, exc_info=True)

    def _clear_cache(self) -> None:
        spark = self._spark
        if spark is not None:
            with contextlib.suppress(Exception):
                spark.catalog.clearCache()

    def _stop_spark(self) -> None:
        with self._spark_lock:
            spark, self._spark = self._spark, None
            if spark is not None and self._owns_spark:
                with contextlib.suppress(Exception):
                    spark.stop()

    def _on_progress(self, record: RunRecord, info: dict[str, Any]) -> None:
        """The pipeline's progress callback (monitor or worker thread): hands the news to the event loop."""
        record.job_group = info.get("job_group") or record.job_group
        if record.cancel_reason:
            self._cancel_jobs(record)  # jobs started after the cancel belong to the group too
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._apply_progress, record, info)

    def _apply_progress(self, record: RunRecord, info: dict[str, Any]) -> None:
        if record.state != RUNNING:
            return
        fraction = float(info.get("fraction") or 0.0)
        self.update(record, phase=str(info.get("phase", record.phase)), fraction=max(record.fraction, fraction),
                  tasks_done=int(info.get("tasks_done") or 0), tasks_total=int(info.get("tasks_total") or 0))

    def _cancel_jobs(self, record: RunRecord) -> None:
        spark, group = self._spark, record.job_group
        if spark is not None and group:
            with contextlib.suppress(Exception):
                spark.sparkContext.cancelJobGroup(group)

    def _public_summary(self, record: RunRecord, summary: dict[str, Any]) -> dict[str, Any]:
        ids = {c["input"]: c["id"] for c in record.captures}
        errors = summary.get("errors", [])
        return {
            "captures": summary.get("captures", 0), "inputs": summary.get("inputs", 0),
            "bytes": summary.get("bytes", 0), "frames": summary.get("frames", 0),
            "connections": summary.get("connections", 0), "zmtp_connections": summary.get("zmtp_connections", 0),
            "events": summary.get("events", 0), "events_by_kind": summary.get("events_by_kind", {}),
            "errors": len(errors),
            "damaged": sorted({ids.get(e.get("capture"), "") for e in errors} - {""}),
            "seconds": summary.get("timings", {}).get("total"),
            "report": (record.out_dir / "report.html").exists(),
        }

    # ---- cancelling and deleting

    async def cancel(self, run_id: str) -> RunRecord:
        """Asks a running run to stop; it ends `cancelled`. RunNotReady when it is not running."""
        record = self.get(run_id)
        if record.state != RUNNING:
            raise RunNotReady(f"the run is not running (it is {record.state})")
        await self._request_cancel(record, "cancelled")
        return record

    async def _request_cancel(self, record: RunRecord, reason: str) -> None:
        if record.cancel_reason is None:
            record.cancel_reason = reason
        self.update(record, detail="cancelling")
        await asyncio.to_thread(self._cancel_jobs, record)

    async def delete(self, run_id: str) -> None:
        """Deletes a run and its tables (cancelling it first when it runs)."""
        record = self.get(run_id)
        if record.state == RUNNING:
            del self.records[run_id]
            await self._request_cancel(record, "deleted")
            return  # `_run` removes the directory when the worker is done with it
        self.tables.forget(record.out_dir)
        self.update(record)
        await asyncio.to_thread(shutil.rmtree, record.directory, True)
        # Listed until its files are gone: a run the list no longer shows has left nothing on disk.
        self.records.pop(run_id, None)

    def evictable(self, keep: str | None) -> list[RunRecord]:
        """The finished runs, oldest first, but `keep` and the newest finished one (whatever its size)."""
        finished = sorted((r for r in self.records.values() if r.state in FINAL), key=lambda r: r.created)
        return [r for r in finished[:-1] if r.id != keep]

    def expirable(self, record: RunRecord) -> bool:
        return record.state in FINAL

    def limits(self) -> tuple[int, int, float]:
        s = self.settings
        return s.max_corpus_runs, s.max_corpus_bytes, s.corpus_ttl

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reap_interval)
            try:
                await self.expire()
            except Exception:  # the reaper must survive anything
                log.exception("corpus reaper pass failed")

    # ---- reading

    def ready(self, run_id: str) -> RunRecord:
        """A run whose tables and report can be read; `RunNotReady` otherwise."""
        record = self.get(run_id)
        if record.state != DONE:
            why = "still running" if record.state == RUNNING else f"{record.state}: {record.error}"
            raise RunNotReady(f"the run has no tables: it is {why}")
        return record

    async def page(self, run_id: str, query: TableQuery) -> tuple[list[dict[str, Any]], int]:
        """One page of a finished run's table; `capture` values are capture ids."""
        record = self.ready(run_id)
        rows, total = await asyncio.to_thread(self.tables.page, record.out_dir, query, record.inputs)
        ids = {c["input"]: c["id"] for c in record.captures}
        for row in rows:
            if "capture" in row:
                row["capture"] = ids.get(row["capture"], row["capture"])
        return rows, total

def _tree_bytes(directory: Path) -> int:
    """Octets of the files under `directory` (0 when it does not exist)."""
    total = 0
    for path in directory.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file():
                total += path.stat().st_size
    return total


def _unique_names(names: list[str]) -> list[str]:
    """Display names made unique within a run ("a.pcapng", "a.pcapng (2)"): they label the report."""
    used: set[str] = set()
    out = []
    for name in names:
        label, n = name, 1
        while label in used:
            n += 1
            label = f"{name} ({n})"
        used.add(label)
        out.append(label)
    return out


def _error_text(exc: BaseException) -> str:
    """A failure as one line for the user: its real cause (a Spark worker's own exception, not Spark's wrapper or a
    Java stack trace)."""
    from ...pipeline.failure import explain

    return explain(exc).cause[:500]
