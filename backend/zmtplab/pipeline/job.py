"""The Spark job: captures in, Parquet tables and an HTML report out.

    summary = run_pipeline(["captures/"], "out/", master=None, progress=print)

Phases (each one or more Spark jobs in one job group, reported through `progress`):

1. plan: find the files, read their headers, scan byte ranges (a Spark job when there is much
   to scan), chain the scans into exact ranges;
2. connections: the packets (headers and payload offsets, read once and cached) -> shuffled by
   connection -> `TcpReassembler` only -> one row per TCP connection, numbered "0", "1", ... per
   capture by first frame;
3. events: the same packets -> shuffled by connection (balanced by the connection pass's sizes)
   -> reassembler and dissector, payloads read back from the files -> each task writes its
   events as Parquet (conn ids from a broadcast), counts them per connection and records what the
   dissector produced for the analysis (`feed.py`);
4. tables: write `connections` (TCP facts joined with those counts), `topology` and `findings` (the
   capture-wide analysis of `zmtplab analyze`, one task per capture over the events pass's records of
   it: no capture is dissected twice), commit `events`, write `errors`;
5. report: aggregates -> `report.html`, and `summary.json`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from .plan import DEFAULT_SPLIT_SIZE, PipelinePlan, ScanTask, make_plan, run_scan_task
from .progress import ProgressMonitor
from .shipping import ship

__all__ = ["PHASES", "get_session", "run_pipeline"]

# Phase name -> share of the progress bar.
PHASES = {"start": 0.02, "plan": 0.06, "connections": 0.12, "events": 0.66, "tables": 0.08, "report": 0.06}
SCAN_IN_SPARK_BYTES = 256 << 20  # scan ranges on the cluster when the corpus is larger than this
Progress = Callable[[dict[str, Any]], None]


def get_session(master: str | None = None, *, conf: dict[str, str] | None = None):
    """The active SparkSession, or a new one (local[*] unless `master` or spark-submit says otherwise).

    Workers run the project's interpreter (PYSPARK_PYTHON, unless already set). Off a local
    master the `zmtplab` package and the dependencies its executors import are shipped to the
    workers (`shipping.ship`).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    builder = SparkSession.builder.appName("zmtplab pipeline")
    if master:
        builder = builder.master(master)
    defaults = {
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
        "spark.sql.adaptive.enabled": "true",
        "spark.python.worker.reuse": "true",
    }
    # A driver JVM we start ourselves (not spark-submit's, which exists before Python runs) gets
    # 2 GB: in local mode it is the executor too.
    if active is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        defaults["spark.driver.memory"] = "2g"
    for k, v in {**defaults, **(conf or {})}.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    _prepare(spark)
    return spark


def _prepare(spark) -> None:
    """Ships what workers need (off a local master) and registers the data source, in that order: the
    registered source carries the context's includes of this moment."""
    from .source import PacketSource

    if not spark.sparkContext.master.startswith("local"):
        ship(spark.sparkContext)
    spark.dataSource.register(PacketSource)


class _Reporter:
    """Turns phase starts and Spark task counts into one overall fraction for `progress`."""

    def __init__(self, progress: Progress | None, group: str) -> None:
        self.progress = progress
        self.group = group
        self.phase = "start"
        self.done_share = 0.0
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.high = 0.0  # the bar never goes back (a job's later stages add tasks as they start)

    def enter(self, phase: str) -> None:
        with self.lock:
            names = list(PHASES)
            self.done_share = sum(PHASES[p] for p in names[: names.index(phase)])
            self.phase = phase
        self.emit(0.0, 0, 0)

    def emit(self, phase_fraction: float, tasks_done: int, tasks_total: int, **extra: Any) -> None:
        if self.progress is None:
            return
        with self.lock:
            fraction = min(1.0, self.done_share + PHASES[self.phase] * max(0.0, min(1.0, phase_fraction)))
            fraction = self.high = max(self.high, fraction)
            info = {"phase": self.phase, "fraction": fraction, "phase_fraction": phase_fraction,
                    "tasks_done": tasks_done, "tasks_total": tasks_total,
                    "elapsed": time.monotonic() - self.started, "job_group": self.group, **extra}
        with contextlib.suppress(Exception):  # a broken callback must not break the run
            self.progress(info)


def run_pipeline(inputs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], master: str | None = None,
                 progress: Progress | None = None, *, spark=None, split_size: int = DEFAULT_SPLIT_SIZE,
                 with_fields: bool = True, max_body: int | None = None, report: bool = True,
                 partitions: int | None = None, stop_session: bool = False,
                 report_langs: Sequence[str] = ("en",)) -> dict[str, Any]:
    """Dissects every capture under `inputs` into Parquet tables and a report under `out` (`report.html` in
    `report_langs[0]`, `report.<lang>.html` in the others).

    `progress(info)` is called from a monitor thread (and the calling thread) with `phase`,
    `fraction` (0..1 for the whole run), `tasks_done`/`tasks_total` of the phase's Spark jobs,
    `elapsed` and `job_group` (cancel with `spark.sparkContext.cancelJobGroup(job_group)`).
    Returns the summary that is also written to `out/summary.json`.
    """
    group = f"zmtplab-pipeline-{uuid.uuid4().hex[:12]}"
    reporter = _Reporter(progress, group)
    t0 = time.monotonic()
    reporter.enter("start")
    created = spark is None and _no_active_session()
    if spark is None:
        spark = get_session(master)
    else:  # a session of the caller's: it may not have what the workers need yet
        _prepare(spark)
    t_session = time.monotonic() - t0
    sc = spark.sparkContext
    sc.setJobGroup(group, "zmtplab pipeline", interruptOnCancel=True)
    monitor = ProgressMonitor(sc, group, reporter)
    monitor.start()
    out_dir = os.path.abspath(os.fspath(out))
    os.makedirs(out_dir, exist_ok=True)
    timings: dict[str, float] = {"session": t_session}
    try:
        parallelism = max(1, sc.defaultParallelism)
        # ---- 1. plan
        reporter.enter("plan")
        t = time.monotonic()
        plan = _plan(spark, inputs, split_size, parallelism)
        timings["plan"] = time.monotonic() - t
        summary = _run_phases(spark, plan, out_dir, reporter, timings, parallelism=parallelism,
                              partitions=partitions, with_fields=with_fields, max_body=max_body, report=report,
                              report_langs=report_langs)
    finally:
        monitor.stop()
        for prop in ("spark.jobGroup.id", "spark.job.description"):
            sc.setLocalProperty(prop, None)  # (None clears it)
        if stop_session and created:
            spark.stop()
    summary["timings"] = {k: round(v, 3) for k, v in timings.items()}
    summary["timings"]["total"] = round(time.monotonic() - t0, 3)
    summary["master"] = sc.master
    summary["job_group"] = group
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    reporter.phase = "report"
    reporter.done_share = 1.0 - PHASES["report"]
    reporter.emit(1.0, 0, 0, done=True)
    return summary


def _no_active_session() -> bool:
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() is None


def _plan(spark, inputs, split_size: int, parallelism: int) -> PipelinePlan:
    sc = spark.sparkContext

    def spark_map(tasks: list[ScanTask]) -> list:
        total = sum(t[3] - t[2] for t in tasks if t[3] < 1 << 61)
        if total < SCAN_IN_SPARK_BYTES or len(tasks) < 2:
            return [run_scan_task(t) for t in tasks]
        sc.setJobDescription("zmtplab: scan capture ranges")
        return sc.parallelize(tasks, min(len(tasks), parallelism * 4)).map(run_scan_task).collect()

    return make_plan(inputs, split_size=split_size, scan_map=spark_map, parallelism=parallelism)


def _run_phases(spark, plan: PipelinePlan, out_dir: str, reporter: _Reporter, timings: dict[str, float], *,
                parallelism: int, partitions: int | None, with_fields: bool, max_body: int | None,
                report: bool, report_langs: Sequence[str] = ("en",)) -> dict[str, Any]:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from . import sink
    from . import transform as T
    from .schemas import CAPTURES_SCHEMA, ERRORS_SCHEMA, ZMTP_STATS_SCHEMA, spark_schema
    from .source import encode_plan

    sc = spark.sparkContext
    captures = spark.createDataFrame(
        [(c.cap, c.name, c.size, c.format, c.frames) for c in plan.captures] or [(-1, "", 0, None, 0)],
        CAPTURES_SCHEMA)
    # Packets are read once and kept: both passes use them. Payloads stay in the files (rows
    # carry their offsets), so what is cached and shuffled is about 100 bytes per packet.
    packets = (spark.read.format("zmtplab_packets").option("plan", encode_plan(plan.partitions)).load()
               .persist(StorageLevel.MEMORY_AND_DISK))

    n_conn_parts = max(1, partitions or parallelism * 2)
    # ---- 2. connections
    reporter.enter("connections")
    t = time.monotonic()
    sc.setJobDescription("zmtplab: TCP connections")
    conns = T.number_connections(T.tcp_connections(T.group_packets(packets, n_conn_parts)),
                                 max(1, min(n_conn_parts, len(plan.readable))))
    conns = conns.persist(StorageLevel.MEMORY_AND_DISK)
    n_connections = conns.count()
    timings["connections"] = time.monotonic() - t

    # ---- 3. events
    reporter.enter("events")
    t = time.monotonic()
    sc.setJobDescription("zmtplab: dissect connections")
    ids = {(r["cap"], r["first_frame"]): r["conn"] for r in conns.select("cap", "first_frame", "conn").collect()}
    run = sc.broadcast({"ids": ids, "names": [c.name for c in plan.captures],
                        "paths": [c.path for c in plan.captures]})
    # Several partitions a core: Spark hands them to cores as cores free up, so an estimate that is
    # off for some flows leaves little idle time at the end.
    grouped, n_parts = _balanced_groups(spark, packets, T.flow_costs(conns), partitions or parallelism * 6)
    events_path = os.path.join(out_dir, "events")
    staging = sink.prepare(events_path, uuid.uuid4().hex)
    try:
        try:
            files = [r.asDict() for r in sink.write_events(
                grouped, staging=staging, run=run, with_fields=with_fields, max_body=max_body).collect()]
        finally:
            run.unpersist()
            packets.unpersist()
        stats_paths = [f["path"] for f in files if f["kind"] == "stats"]
        zmtp_stats = (spark.read.parquet(*stats_paths) if stats_paths
                      else spark.createDataFrame([], spark_schema(ZMTP_STATS_SCHEMA)))
        timings["events"] = time.monotonic() - t

        # ---- 4. tables
        reporter.enter("tables")
        t = time.monotonic()
        sc.setJobDescription("zmtplab: connections table")
        connections_path = os.path.join(out_dir, "connections")
        # One output partition per ~200,000 connections, sorted: the table is small and read often.
        sink.write_table(T.connection_table(conns, zmtp_stats, captures).repartition(n_connections // 200_000 + 1)
                         .sortWithinPartitions("capture", F.col("conn").cast("long")), connections_path)
        sc.setJobDescription("zmtplab: topology and findings")
        topology_path, findings_path = _analyse(spark, plan, files, out_dir, parallelism)
        written = sink.commit(events_path, files)  # also drops the staged stats and feed files
    except BaseException:
        sink.abort(events_path)
        raise
    events = spark.read.parquet(events_path)
    errors_path = os.path.join(out_dir, "errors")
    sink.write_table(spark.createDataFrame(plan.errors, ERRORS_SCHEMA).coalesce(1), errors_path)
    conns.unpersist()
    connections = spark.read.parquet(connections_path)
    kinds = {k: v for k, v in T.kind_counts(connections).first().asDict().items() if v}
    n_zmtp = connections.where("zmtp").count()
    timings["tables"] = time.monotonic() - t

    summary: dict[str, Any] = {
        "out": out_dir,
        "tables": {"events": events_path, "connections": connections_path, "errors": errors_path,
                   "topology": topology_path, "findings": findings_path},
        "captures": len(plan.readable),
        "inputs": len(plan.captures),
        "bytes": plan.total_bytes,
        "frames": sum(c.frames for c in plan.captures),
        "ranges": sum(len(p) for p in plan.partitions),
        "read_partitions": len(plan.partitions),
        "dissect_partitions": n_parts,
        "rescanned_ranges": plan.rescans,
        "connections": n_connections,
        "zmtp_connections": n_zmtp,
        "events": sum(kinds.values()),
        "events_files": written["files"],
        "events_bytes": written["bytes"],
        "events_by_kind": kinds,
        "errors": plan.errors,
    }
    # ---- 5. report
    reporter.enter("report")
    if report:
        t = time.monotonic()
        sc.setJobDescription("zmtplab: report")
        from .report import write_report

        summary["report"] = write_report(events, connections, summary, out_dir,
                                         findings=spark.read.parquet(findings_path), langs=report_langs)
        timings["report"] = time.monotonic() - t
    return summary


def _analyse(spark, plan: PipelinePlan, files: list[dict[str, Any]], out_dir: str,
             parallelism: int) -> tuple[str, str]:
    """The capture-wide analysis, one task per capture (it follows messages across connections) over what the
    dissect tasks recorded of it (their "feed" `files`), into the `topology` and `findings` tables; returns
    their paths."""
    from pyspark import StorageLevel

    from . import sink
    from .analyse import analysis_rows
    from .schemas import FINDINGS_SCHEMA, TOPOLOGY_SCHEMA

    feeds: dict[int, list[str]] = {}
    for f in files:
        if f["kind"] == "feed":
            feeds.setdefault(f["cap"], []).append(f["path"])
    items = [(c.name, c.cap, sorted(feeds.get(c.cap, []))) for c in plan.readable]
    rows = (spark.sparkContext.parallelize(items, max(1, min(len(items), parallelism * 4)))
            .flatMap(analysis_rows).persist(StorageLevel.MEMORY_AND_DISK))
    paths = []
    try:
        for table, schema in (("topology", TOPOLOGY_SCHEMA), ("findings", FINDINGS_SCHEMA)):
            path = os.path.join(out_dir, table)
            part = rows.filter(lambda r, table=table: r[0] == table).map(lambda r: r[1])
            paths.append(sink.write_table(spark.createDataFrame(part, schema).coalesce(1), path))
    finally:
        rows.unpersist()
    return paths[0], paths[1]


def _balanced_groups(spark, packets, costs, n_parts: int):
    """Packets grouped by connection, with flows spread over partitions by estimated work.

    Flows are assigned largest first to the least loaded partition (LPT); each partition gets a
    label whose Spark hash lands on it, so `repartition(label)` puts every flow where it was
    assigned. With very many flows plain hash partitioning is as good and cheaper.
    """
    from pyspark.sql import functions as F

    from . import transform as T

    rows = costs.orderBy(F.desc("cost")).limit(200_001).collect()
    if not rows:
        return T.group_packets(packets, 1), 1
    n_parts = max(1, min(n_parts, len(rows)))
    if len(rows) > 200_000 or n_parts == 1:
        return T.group_packets(packets, n_parts), n_parts
    labels = _partition_labels(spark, n_parts)
    load = [0] * n_parts
    assign = []
    for r in rows:
        p = min(range(n_parts), key=load.__getitem__)
        load[p] += max(1, r["cost"] or 0)
        assign.append((r["cap"], r["flow"], labels[p]))
    table = spark.createDataFrame(assign, "cap int, flow long, label long")
    labelled = packets.join(F.broadcast(table), ["cap", "flow"], "left").fillna(labels[0], subset=["label"])
    return T.group_packets(labelled, n_parts, by="label"), n_parts


def _partition_labels(spark, n: int) -> list[int]:
    """For each partition p < n, a long whose Spark hash partitioning lands in p."""
    from pyspark.sql import functions as F

    found: dict[int, int] = {}
    upto = 64 * n
    while len(found) < n:
        rows = spark.range(0, upto).select("id", F.expr(f"pmod(hash(id), {n})").alias("p")).collect()
        for r in rows:
            found.setdefault(r["p"], r["id"])
        upto *= 4
    return [found[p] for p in range(n)]


def clean_output(out: str | os.PathLike[str]) -> None:
    """Removes what a run writes under `out` (tables, report, summary)."""
    for name in ("events", "connections", "errors"):
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    for name in ("report.html", "report.zh-CN.html", "summary.json"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(out, name))
