"""The analysis from the events pass (`pipeline.feed`, `pipeline.analyse`), without Spark: the dissect tasks
record what their dissector produced, a capture's connections spread over several tasks, and the analysis
over those records, merged back into capture order, is `analyze_capture`'s over the file, dict for dict."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pipeline_util import PROJECT, SHARED, busy_capture, task_inputs

from zmtplab.analysis import analyze_capture
from zmtplab.pipeline.analyse import analyse, analysis_rows, finding_rows, topology_rows
from zmtplab.pipeline.feed import capture_feed
from zmtplab.pipeline.sink import prepare, write_events_partition

TASKS = 3


def run_tasks(paths: list[Path], out: Path) -> tuple[list[dict], list]:
    """The events pass over `paths` as TASKS dissect tasks (flows dealt out by hash, each task's packets sorted as
    the shuffle sorts them); the files they reported, and the plan's captures."""
    plan, packets, run = task_inputs(paths)
    staging = prepare(str(out / "events"), "test")
    flows = packets.column("flow").to_pylist()
    files = []
    for task in range(TASKS):
        mine = packets.filter(pa.array([f % TASKS == task for f in flows]))
        files += [r for b in write_events_partition(mine.to_batches(max_chunksize=61), staging=staging, run=run)
                  for r in b.to_pylist()]
    return files, plan.captures


def feeds_of(files: list[dict], cap: int) -> list[str]:
    return [f["path"] for f in files if f["kind"] == "feed" and f["cap"] == cap]


def sample_captures() -> list[Path]:
    return [*sorted(SHARED.glob("*.pcapng")), *sorted(PROJECT.rglob("*.pcapng"))]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    out = tmp_path_factory.mktemp("feed")
    busy = out / "busy.pcapng"
    busy_capture(busy, [SHARED / "push_pull_multipart.pcapng", SHARED / "dealer_router.pcapng",
                        PROJECT / "broker.pcapng", PROJECT / "pub_late_sub.pcapng"])
    return run_tasks([*sample_captures(), busy], out)


def test_the_analysis_of_the_recorded_items_is_analyze_capture(tasks):
    files, captures = tasks
    spread = 0
    for c in captures:
        paths = feeds_of(files, c.cap)
        spread += len(paths) > 1
        assert analyse(*capture_feed(c.cap, paths)) == analyze_capture(c.path), c.name
    assert spread >= 3  # (captures whose connections went to several tasks, merged back in capture order)


def test_table_rows_are_those_of_analyze_capture(tasks):
    files, captures = tasks
    for c in captures:
        found = analyze_capture(c.path)
        assert list(analysis_rows((c.name, c.cap, feeds_of(files, c.cap)))) == [
            *topology_rows(c.name, found), *finding_rows(c.name, found)], c.name
