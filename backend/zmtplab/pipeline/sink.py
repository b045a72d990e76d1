"""The pipeline's loads: the `events` table written by the dissect tasks themselves with a driver-side
commit (`write_events`, `prepare`/`commit`/`abort`), and the small tables through Spark (`write_table`).

The events of a corpus are many times larger than its captures (each field of each element is a
row of a nested column), and passing them through the JVM to Spark's Parquet writer costs about
as much again as dissecting them. So each dissect task writes its events straight to one Parquet
file with pyarrow (C++), under a staging directory, and returns one small row naming the file.
The driver then commits: it moves exactly the files the job's successful task attempts reported
into the table directory (retried or speculative attempts leave files nobody reported, which are
removed with the staging directory) and writes `_SUCCESS`, as Spark's own committer does.

Paths go through `pyarrow.fs`, so the table can live on any file system pyarrow reaches (a
local or shared path, HDFS, S3...). Every executor must be able to write there.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from .feed import FeedRecorder
from .schemas import EVENTS_SCHEMA, FILE_SCHEMA, ZMTP_STATS_SCHEMA, spark_schema
from .stages import dissect_partition, lazy_gc

_COUNTED = {"greeting": "greetings", "frame": "frames", "message": "messages", "command": "commands",
            "expert": "experts", "gap": "gaps"}
ROW_GROUP_ROWS = 65536
# zstd at level 1 writes about a quarter of snappy's bytes for as much CPU; dictionaries only for
# the repetitive columns (names, rules, notes...), statistics only for the small numeric ones.
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 1,
    "use_dictionary": ["capture", "conn", "dir", "kind", "fields.list.element.name", "fields.list.element.rule",
                       "fields.list.element.note", "version", "mechanism", "socket_type", "name", "severity",
                       "rule", "text", "extra.key_value.key"],
    "write_statistics": ["conn", "dir", "offset", "length", "kind", "ts", "seq", "emit_frame", "message_size"],
    # Offsets, lengths and sequence numbers climb by small steps: delta-packed they take half the bytes of
    # plain ones under zstd, and a tenth less time to write (the field offsets and lengths most of all).
    "column_encoding": {name: "DELTA_BINARY_PACKED" for name in (
        "offset", "length", "seq", "fields.list.element.offset", "fields.list.element.length")},
}
ROW_GROUP_BYTES = 64 << 20


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system and path of a directory named by a path or URI."""
    return pafs.FileSystem.from_uri(uri)


def finalize(table: pa.Table | pa.RecordBatch, conn_ids: dict[tuple[int, int], str], names: list[str]) -> pa.Table:
    """Stage rows as rows of the `events` table: (cap, first_frame) become capture and conn.

    Vectorised: each distinct (cap, first_frame) is looked up once and the columns are taken."""
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    key = pc.add(pc.shift_left(pc.cast(table.column("cap"), pa.int64()), 40), table.column("first_frame"))
    distinct = pc.unique(key)
    pairs = [(k >> 40, k & ((1 << 40) - 1)) for k in distinct.to_pylist()]
    index = pc.index_in(key, value_set=distinct)
    conn = pc.take(pa.array([conn_ids.get(p) for p in pairs], pa.string()), index)
    capture = pc.take(pa.array([names[c] for c, _f in pairs], pa.string()), index)
    cols = {"capture": capture, "conn": conn}
    return pa.Table.from_arrays([cols[f.name] if f.name in cols else table.column(f.name) for f in EVENTS_SCHEMA],
                                schema=EVENTS_SCHEMA)


class ZmtpStats:
    """What each connection said in ZMTP, counted from the event tables a task writes (the
    `connections` table's ZMTP columns: counting here spares a second pass over the much larger
    events table). Counts use Arrow group-bys; only greetings and commands are looked at in Python."""

    def __init__(self) -> None:
        self.conns: dict[tuple[str, str], dict[str, Any]] = {}

    def _row(self, capture: str, conn: str) -> dict[str, Any]:
        row = self.conns.get((capture, conn))
        if row is None:
            row = self.conns[(capture, conn)] = {f.name: 0 for f in ZMTP_STATS_SCHEMA if f.type == pa.int64()}
            row.update(capture=capture, conn=conn, version_c2s=None, version_s2c=None, mechanism=None,
                       socket_type_client=None, socket_type_server=None)
        return row

    def add(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        single = (pc.count_distinct(table.column("capture")).as_py() == 1
                  and pc.count_distinct(table.column("conn")).as_py() == 1)
        if single:  # one connection (dense traffic fills whole row groups): no group-by needed
            row = self._row(table.column("capture")[0].as_py(), table.column("conn")[0].as_py())
            kinds = {r["values"]: r["counts"] for r in pc.value_counts(table.column("kind")).to_pylist()}
            for kind, n in kinds.items():
                row["events"] += n
                if kind in _COUNTED:
                    row[_COUNTED[kind]] += n
            row["message_bytes"] += pc.sum(table.column("message_size")).as_py() or 0
        else:
            counts = table.group_by(["capture", "conn", "kind"]).aggregate([("kind", "count")]).to_pylist()
            kinds = {}
            for r in counts:
                row = self._row(r["capture"], r["conn"])
                row["events"] += r["kind_count"]
                kinds[r["kind"]] = kinds.get(r["kind"], 0) + r["kind_count"]
                column = _COUNTED.get(r["kind"])
                if column:
                    row[column] += r["kind_count"]
            if kinds.get("message"):
                sums = table.group_by(["capture", "conn"]).aggregate([("message_size", "sum")]).to_pylist()
                for r in sums:
                    self._row(r["capture"], r["conn"])["message_bytes"] += r["message_size_sum"] or 0
        if kinds.get("expert"):
            errors = table.filter(pc.and_(pc.equal(table.column("kind"), "expert"),
                                          pc.equal(table.column("severity"), "error")))
            if errors.num_rows:
                for r in errors.group_by(["capture", "conn"]).aggregate([("kind", "count")]).to_pylist():
                    self._row(r["capture"], r["conn"])["expert_errors"] += r["kind_count"]
            unreadable = table.filter(pc.and_(pc.equal(table.column("kind"), "expert"),
                                              pc.equal(table.column("rule"), "unreadable")))
            if unreadable.num_rows:
                for r in unreadable.group_by(["capture", "conn"]).aggregate([("kind", "count")]).to_pylist():
                    self._row(r["capture"], r["conn"])["unreadable"] += r["kind_count"]
        if kinds.get("greeting") or kinds.get("command"):
            rare = table.filter(pc.is_in(table.column("kind"), pa.array(["greeting", "command"])))
            cols = ["capture", "conn", "dir", "kind", "version", "mechanism", "socket_type", "name", "properties"]
            for e in rare.select(cols).to_pylist():
                self._note(e)

    def _note(self, e: dict[str, Any]) -> None:
        row = self._row(e["capture"], e["conn"])
        client = e["dir"] == "c2s"
        side = "socket_type_client" if client else "socket_type_server"
        if e["kind"] == "greeting":
            version = "version_c2s" if client else "version_s2c"
            if row[version] is None:
                row[version] = e["version"]
            if row["mechanism"] is None:
                row["mechanism"] = e["mechanism"]
            if e["socket_type"] and row[side] is None:
                row[side] = e["socket_type"]
        elif e["name"] in ("READY", "INITIATE") and e["properties"]:
            props = dict(e["properties"])
            value = props.get("Socket-Type", props.get("socket-type"))
            if value is not None and row[side] is None:
                row[side] = value

    def table(self) -> pa.Table:
        return pa.Table.from_pylist(list(self.conns.values()), schema=ZMTP_STATS_SCHEMA)


class _PartWriter:
    """One Parquet file per task, written in row groups of about ROW_GROUP_ROWS rows."""

    def __init__(self, staging: str, stats: ZmtpStats | None = None,
                 conn_ids: dict[tuple[int, int], str] | None = None, names: list[str] | None = None) -> None:
        """Batches given to `add` are of the `events` schema, or stage batches when `conn_ids` and
        `names` are given (they are then finalized a row group at a time)."""
        self.stats = stats
        self.conn_ids = conn_ids
        self.names = names
        self.filesystem, base = resolve(staging)
        self.path = f"{base.rstrip('/')}/part-{uuid.uuid4().hex}.parquet"
        self.writer: pq.ParquetWriter | None = None
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.rows = 0

    def add(self, batch: pa.RecordBatch) -> None:
        self.pending.append(batch)
        self.pending_rows += batch.num_rows
        self.pending_bytes += batch.nbytes
        if self.pending_rows >= ROW_GROUP_ROWS or self.pending_bytes >= ROW_GROUP_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, EVENTS_SCHEMA, filesystem=self.filesystem,
                                           **PARQUET_OPTIONS)
        if self.conn_ids is not None:
            table = finalize(pa.Table.from_batches(self.pending), self.conn_ids, self.names or [])
        else:
            table = pa.Table.from_batches(self.pending, schema=EVENTS_SCHEMA)
        self.writer.write_table(table, row_group_size=max(table.num_rows, 1))
        if self.stats is not None:
            self.stats.add(table)
        self.rows += table.num_rows
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0

    def close(self) -> list[dict[str, Any]]:
        self.flush()
        if self.writer is None:
            return []
        self.writer.close()
        size = self.filesystem.get_file_info(self.path).size or 0
        return [{"kind": "events", "path": self.path, "rows": self.rows, "bytes": size}]


def write_events_partition(batches: Iterable[pa.RecordBatch], *, staging: str, run: Any,
                           with_fields: bool = True, max_body: int | None = None) -> Iterator[pa.RecordBatch]:
    """Dissects the partition's packet groups and writes their events to one staged Parquet file, their
    per-connection counts to another, and what the dissector produced to a third, for the captures'
    analysis (`pipeline.feed`).

    `run` is a dict (or a Spark broadcast of one) with `ids` ((cap, first_frame) -> conn),
    `names` and `paths` (by cap). Yields rows (FILE_SCHEMA) naming the files, or nothing for an
    empty partition.
    """
    info = run.value if hasattr(run, "value") else run
    ids, names = info["ids"], info["names"]
    stats = ZmtpStats()
    writer = _PartWriter(staging, stats, ids, names)
    feed = FeedRecorder(staging, ids)
    # Batches of a row group's size: each batch costs some fifty Arrow calls whatever its size, and
    # at 4,096 rows those fixed costs were a third of the task on dense traffic.
    for batch in dissect_partition(batches, paths=info["paths"], with_fields=with_fields, max_body=max_body,
                                   max_rows=ROW_GROUP_ROWS, recorder=feed):
        writer.add(batch)
    files = writer.close() + feed.close()
    if stats.conns:
        path = writer.path.replace("/part-", "/stats-")
        table = stats.table()
        pq.write_table(table, path, filesystem=writer.filesystem)
        files.append({"kind": "stats", "path": path, "rows": table.num_rows, "bytes": 0})
    if files:
        yield pa.RecordBatch.from_pylist(files, schema=FILE_SCHEMA)


def write_events(grouped_packets, *, staging: str, run: Any, with_fields: bool = True, max_body: int | None = None):
    """Dissects packets grouped by `transform.group_packets` and writes the events (schemas.EVENTS_SCHEMA) to
    staged Parquet files, one per task (`write_events_partition`); the result (a DataFrame) names the files
    (schemas.FILE_SCHEMA), for `commit`.

    `run` (a dict or its broadcast) has `ids` ((cap, first_frame) -> the connection's id),
    `names` (capture names by cap) and `paths` (the files payloads are read from)."""

    def task(batches):
        return write_events_partition(batches, staging=staging, run=run, with_fields=with_fields, max_body=max_body)

    return grouped_packets.mapInArrow(lazy_gc(task), spark_schema(FILE_SCHEMA))


def write_table(frame, path: str) -> str:
    """Writes a DataFrame as the Parquet table at `path` (replacing it); returns the path."""
    frame.write.mode("overwrite").parquet(path)
    return path


def prepare(table_uri: str, run_id: str) -> str:
    """Creates (empty) the table directory and a staging directory in it; returns the staging URI."""
    filesystem, path = resolve(table_uri)
    filesystem.delete_dir_contents(path, missing_dir_ok=True)
    staging = f"{path.rstrip('/')}/_temporary/{run_id}"
    filesystem.create_dir(staging, recursive=True)
    return table_uri.rstrip("/") + f"/_temporary/{run_id}" if "://" in table_uri else staging


def commit(table_uri: str, files: list[dict[str, Any]]) -> dict[str, int]:
    """Moves the reported event files into the table, drops the staging area (with the stats and
    feed files: read them before), writes `_SUCCESS`."""
    filesystem, path = resolve(table_uri)
    base = path.rstrip("/")
    rows = size = 0
    files = [f for f in files if f.get("kind", "events") == "events"]
    for i, f in enumerate(sorted(files, key=lambda f: f["path"])):
        filesystem.move(f["path"], f"{base}/part-{i:05d}-{f['path'].rsplit('part-', 1)[-1]}")
        rows += f["rows"]
        size += f["bytes"]
    filesystem.delete_dir(f"{base}/_temporary")
    if not files:  # an empty table still has a schema
        pq.write_table(EVENTS_SCHEMA.empty_table(), f"{base}/part-00000-empty.parquet", filesystem=filesystem)
    with filesystem.open_output_stream(f"{base}/_SUCCESS"):
        pass
    return {"files": len(files), "rows": rows, "bytes": size}


def abort(table_uri: str) -> None:
    """Removes a failed run's staging area."""
    filesystem, path = resolve(table_uri)
    with contextlib.suppress(FileNotFoundError, OSError):
        filesystem.delete_dir(f"{path.rstrip('/')}/_temporary")
