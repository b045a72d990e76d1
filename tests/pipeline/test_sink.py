"""The events table as a dissect task writes it (`sink.write_events_partition`), without Spark: the
Parquet file holds `zmtplab dissect`'s events, and its climbing numbers are delta-packed. The tasks
run with the cyclic GC's first generation raised, and give the setting back."""

from __future__ import annotations

import gc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pipeline_util import PROJECT, SHARED, dissect_reference, order_key, task_inputs

from zmtplab.pipeline.plan import make_plan
from zmtplab.pipeline.rows import row_to_event
from zmtplab.pipeline.sink import prepare, write_events_partition
from zmtplab.pipeline.source import read_partition
from zmtplab.pipeline.stages import connections_partition, dissect_partition

CAPTURES = [SHARED / "push_pull_multipart.pcapng", SHARED / "dealer_router.pcapng", PROJECT / "plain_ok.pcapng"]
DELTA = ("offset", "length", "seq", "fields.list.element.offset", "fields.list.element.length")


def write_events(paths: list[Path], out: Path) -> str:
    """One dissect task over every packet of `paths` (sorted as the shuffle sorts them); the part file's path."""
    _plan, packets, run = task_inputs(paths)
    staging = prepare(str(out / "events"), "test")
    files = [r for b in write_events_partition(packets.to_batches(max_chunksize=97), staging=staging, run=run)
             for r in b.to_pylist()]
    (part,) = [f["path"] for f in files if f["kind"] == "events"]
    return part


def test_task_file_holds_dissects_events_with_offsets_delta_packed(tmp_path):
    part = write_events(CAPTURES, tmp_path)
    meta = pq.ParquetFile(part).metadata
    columns = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
               for i in range(meta.num_columns)}
    for name in DELTA:
        assert "DELTA_BINARY_PACKED" in columns[name].encodings, (name, columns[name].encodings)
    assert "DELTA_BINARY_PACKED" not in columns["ts"].encodings  # (only the climbing integers)
    rows = pq.read_table(part).to_pylist()
    for path in CAPTURES:
        got = sorted((r for r in rows if r["capture"] == str(path)), key=order_key)
        ref, _result = dissect_reference(path)
        assert [row_to_event(r) for r in got] == ref, path.name


def test_tasks_collect_garbage_less_often_while_they_run_and_restore_the_setting():
    plan = make_plan([str(SHARED / "push_pull_multipart.pcapng")])
    before = gc.get_threshold()
    during: list[int] = []
    batches = []
    for part in plan.partitions:
        for b in read_partition(part):
            during.append(gc.get_threshold()[0])
            batches.append(b)
    packets = pa.Table.from_batches(batches).sort_by([("cap", "ascending"), ("flow", "ascending"),
                                                      ("frame", "ascending")])
    for _b in connections_partition(packets.to_batches()):
        during.append(gc.get_threshold()[0])
    for _b in dissect_partition(packets.to_batches(), paths=[c.path for c in plan.captures]):
        during.append(gc.get_threshold()[0])
    assert len(during) >= 3 and min(during) >= 100_000
    assert gc.get_threshold() == before
