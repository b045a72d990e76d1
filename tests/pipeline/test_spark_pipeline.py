"""The Spark job end to end on local[2]: the shared and project captures plus damaged files,
every capture cut into 64 KiB ranges. Each capture's events equal `zmtplab dissect`'s row for
row; damaged files are reported in the errors table and the rest of the run goes on."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pipeline_util import (
    PROJECT,
    SHARED,
    as_events,
    block_offsets,
    busy_capture,
    dissect_reference,
    read_capture_table,
    read_events,
    read_table,
    same_as_dissect_arrow,
    sequential_error,
    write_classic_pcap,
)

from zmtplab.capture.dissect import dissect_capture
from zmtplab.pipeline.job import run_pipeline
from zmtplab.pipeline.rows import event_to_comparable

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]  # (the run fixture: minutes on a loaded machine)

BULK = str(SHARED / "bulk.pcapng")
SOURCES = [SHARED / "req_rep.pcapng", SHARED / "pub_sub.pcapng", PROJECT / "curve.pcapng",
           SHARED / "dealer_router.pcapng", PROJECT / "plain_ok.pcapng"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("corpus")
    damaged = d / "damaged"
    damaged.mkdir()
    files = {"dir": damaged}
    files["bulk_head"] = damaged / "bulk_head.pcap"
    write_classic_pcap(SHARED / "bulk.pcapng", files["bulk_head"], max_frames=1500)
    files["busy"] = damaged / "busy.pcapng"
    busy_capture(files["busy"], SOURCES, late_interface=True, new_section=True, simple_blocks=True)
    large = (SHARED / "large.pcapng").read_bytes()
    files["truncated"] = damaged / "truncated.pcapng"
    files["truncated"].write_bytes(large[:600_001])
    busy = bytearray(files["busy"].read_bytes())
    at = next(o for o in block_offsets(files["busy"]) if o > len(busy) // 2)
    busy[at + 4:at + 8] = struct.pack("<I", 0x7FFFFF00)
    files["corrupt"] = damaged / "corrupt.pcapng"
    files["corrupt"].write_bytes(bytes(busy))
    files["corrupt_cut"] = d / "corrupt_cut.pcapng"  # what the pipeline reads of it: up to the damage
    files["corrupt_cut"].write_bytes(bytes(busy[:at]))
    files["garbage"] = damaged / "garbage.pcap"
    files["garbage"].write_bytes(b"<script>alert(1)</script> not a capture")
    files["empty"] = damaged / "empty.pcapng"
    files["empty"].write_bytes(b"")
    (damaged / "README.md").write_text("not a capture, and not named like one: ignored in a directory")
    files["notes"] = d / "notes.txt"
    files["notes"].write_text("named explicitly, so reported")
    return files


@pytest.fixture(scope="module")
def run(spark, corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    progress: list[dict] = []
    summary = run_pipeline([str(SHARED), str(PROJECT), str(corpus["dir"]), str(corpus["notes"])], out,
                           spark=spark, progress=progress.append, split_size=64 << 10)
    return {"out": out, "summary": summary, "progress": progress,
            "events": read_events(out, skip=(BULK,))}


def readable(corpus) -> list[Path]:
    # (the pipeline searches a directory recursively: captures/ brings its incidents/ too)
    return ([*sorted(SHARED.glob("*.pcapng")), *sorted(PROJECT.rglob("*.pcapng"))]
            + [corpus[k] for k in ("bulk_head", "busy", "truncated", "corrupt")])


def test_every_capture_has_dissects_events_row_for_row(run, corpus):
    events = run["events"]
    silent = 0  # captures without a single event (a reconnect storm: nothing but refused connects)
    for path in readable(corpus):
        if str(path) == BULK:
            continue  # 420,004 rows: compared in Arrow by the next test
        reference = corpus["corrupt_cut"] if path == corpus["corrupt"] else path
        ref, _result = dissect_reference(reference)
        got = as_events(events.get(str(path), []))
        assert len(got) == len(ref), path.name
        assert got == ref, path.name
        silent += not ref
    assert len(events) == len(readable(corpus)) - 1 - silent


def test_big_capture_was_split_and_still_matches(run):
    summary = run["summary"]
    assert summary["ranges"] > 100  # bulk alone is 90 ranges of 64 KiB
    bulk = read_capture_table(run["out"], BULK)
    assert bulk.num_rows == 420_005  # with the TCP retransmission note of frame 6223
    assert bulk.column("seq").to_pylist() == list(range(420_005))
    assert same_as_dissect_arrow(run["out"], BULK)


def test_damaged_and_foreign_files_are_reported_and_the_run_goes_on(run, corpus):
    errors = {Path(e["capture"]).name: e for e in read_table(run["out"], "errors")}
    assert set(errors) == {"truncated.pcapng", "corrupt.pcapng", "garbage.pcap", "empty.pcapng", "notes.txt"}
    assert errors["truncated.pcapng"]["kind"] == "truncated"
    assert errors["truncated.pcapng"]["message"] == sequential_error(corpus["truncated"])
    assert errors["corrupt.pcapng"]["kind"] == "corrupt"
    assert errors["corrupt.pcapng"]["message"] == sequential_error(corpus["corrupt"])
    assert errors["corrupt.pcapng"]["offset"] == corpus["corrupt_cut"].stat().st_size
    for name in ("garbage.pcap", "empty.pcapng", "notes.txt"):
        assert errors[name]["kind"] == "not-a-capture"
    assert run["summary"]["captures"] == len(readable(corpus))


def test_connections_table_numbers_connections_like_dissect(run, corpus):
    rows = read_table(run["out"], "connections")
    by_capture: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_capture.setdefault(r["capture"], {})[r["conn"]] = r
    for path in [corpus["busy"], SHARED / "dealer_router.pcapng", PROJECT / "curve.pcapng", corpus["truncated"]]:
        _events, result = dissect_reference(path)
        got = by_capture[str(path)]
        assert set(got) == {c.conn for c in result.connections}, path.name
        for info in result.connections:
            row = got[info.conn]
            assert (row["client_ip"], row["client_port"]) == info.client
            assert (row["server_ip"], row["server_port"]) == info.server
            assert row["syn_seen"] == info.syn_seen
    dr = by_capture[str(SHARED / "dealer_router.pcapng")]["0"]
    assert (dr["version_c2s"], dr["mechanism"], dr["socket_type_client"], dr["socket_type_server"]) == (
        "3.1", "NULL", "DEALER", "ROUTER")
    assert dr["messages"] == 6 and dr["zmtp"]
    assert dr["packets"] == 24 and dr["close_reason"] == "fin"  # the reference README's count
    assert sum(r["events"] for r in rows) == run["summary"]["events"]


def test_report_and_summary(run):
    out = run["out"]
    page = (out / "report.html").read_text()
    for title in ("ZMTP versions and mechanisms", "Socket-type pairs", "Message-size distribution",
                  "Messages over time", "Expert events by severity"):
        assert title in page
    assert page.count("<svg") >= 5
    assert "<script>" not in page  # capture text is escaped
    summary = json.loads((out / "summary.json").read_text())
    assert summary["events"] == sum(len(v) for v in run["events"].values()) + 420_005
    assert summary["zmtp_connections"] <= summary["connections"]
    assert set(summary["timings"]) >= {"session", "plan", "connections", "events", "tables", "report", "total"}


def test_progress_goes_through_the_phases_to_the_end(run):
    progress = run["progress"]
    phases = []
    for p in progress:
        if not phases or phases[-1] != p["phase"]:
            phases.append(p["phase"])
    assert phases == ["start", "plan", "connections", "events", "tables", "report"]
    fractions = [p["fraction"] for p in progress]
    assert fractions == sorted(fractions)
    assert progress[-1]["fraction"] == 1.0 and progress[-1].get("done")
    assert any(p["tasks_total"] for p in progress)  # the status tracker was read
    assert {p["job_group"] for p in progress} == {run["summary"]["job_group"]}


def test_events_table_schema(run):
    schema = pq.read_schema(next((run["out"] / "events").glob("part-*.parquet")))
    assert schema.names[:9] == ["capture", "conn", "dir", "offset", "length", "kind", "ts", "packets", "fields"]
    fields = schema.field("fields").type.value_type
    assert [f.name for f in fields] == ["name", "offset", "length", "value", "rule", "note"]
    assert str(fields.field("value").type) == "string"
    assert str(schema.field("properties").type).startswith("map<string, string")
    assert str(schema.field("frames").type) == "list<element: string>"
    assert str(schema.field("packets").type) == "list<element: int64>"


def test_no_fields_and_max_body(spark, tmp_path):
    path = SHARED / "push_pull_multipart.pcapng"
    run_pipeline([str(path)], tmp_path, spark=spark, with_fields=False, max_body=8, report=False)
    got = as_events(read_events(tmp_path)[str(path)])
    ref = [event_to_comparable(e) for e in dissect_capture(str(path), with_fields=False, max_body=8)]
    assert got == ref
    assert all("fields" not in e for e in got)


def test_cli(spark, tmp_path, capsys):
    from zmtplab.cli import main

    assert main(["pipeline", str(SHARED / "req_rep.pcapng"), str(SHARED / "pub_sub.pcapng"),
                 "--out", str(tmp_path / "a"), "--quiet", "--no-report"]) == 0
    printed = capsys.readouterr().out
    assert "2 captures" in printed and "events" in printed
    assert (tmp_path / "a" / "events" / "_SUCCESS").exists()
    assert not (tmp_path / "a" / "report.html").exists()
    notes = tmp_path / "notes.txt"
    notes.write_text("hi")
    assert main(["pipeline", str(notes), "--out", str(tmp_path / "b"), "--quiet"]) == 2
    assert "no readable captures" in capsys.readouterr().err
    assert spark.sparkContext._jsc is not None  # the shared session was not stopped by the CLI


def test_a_failure_in_a_python_worker_is_explained_by_its_own_exception(spark, tmp_path):
    """A capture gone between the driver's plan and the tasks' read: Spark's exception says only that the
    Python worker failed; `explain` gives the worker's FileNotFoundError, its path and a hint."""
    from zmtplab.pipeline.failure import explain

    capture = tmp_path / "gone.pcapng"
    capture.write_bytes((SHARED / "req_rep.pcapng").read_bytes())

    def vanish(info):
        if info["phase"] == "connections":
            capture.unlink(missing_ok=True)

    with pytest.raises(Exception) as caught:
        run_pipeline([capture], tmp_path / "out", spark=spark, progress=vanish, report=False)
    assert "FileNotFoundError" not in str(caught.value).splitlines()[0]  # Spark's own first line hides it
    failure = explain(caught.value, out=tmp_path / "out")
    assert failure.cause == f"FileNotFoundError: [Errno 2] No such file or directory: '{capture}'"
    assert failure.on_worker and failure.path == str(capture)
    assert failure.hint.startswith(f"a worker could not open {capture}: ")


def test_unreadable_connections_are_listed_but_not_as_zmtp(spark, tmp_path):
    from synthetic import capture, middle_of_a_frame, not_zmtp

    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "middle.pcapng").write_bytes(capture(middle_of_a_frame))
    (inputs / "http.pcapng").write_bytes(capture(not_zmtp))
    summary = run_pipeline([str(inputs)], tmp_path / "out", spark=spark, report=False)
    rows = {Path(r["capture"]).name: r for r in read_table(tmp_path / "out", "connections")}
    assert set(rows) == {"middle.pcapng", "http.pcapng"}
    assert not rows["middle.pcapng"]["zmtp"] and rows["middle.pcapng"]["experts"] == 1
    assert not rows["http.pcapng"]["zmtp"] and rows["http.pcapng"]["experts"] == 2
    assert summary["zmtp_connections"] == 0 and summary["connections"] == 2
    events = read_events(tmp_path / "out")
    for name in ("middle.pcapng", "http.pcapng"):
        ref, _ = dissect_reference(inputs / name)
        assert as_events(events[str(inputs / name)]) == ref
        assert all(e["rule"] == "unreadable" for e in ref)


def test_topology_and_findings_tables_are_zmtplab_analyze_per_capture(run):
    from zmtplab.analysis import analyze_capture

    topology = read_table(run["out"], "topology")
    findings = read_table(run["out"], "findings")
    for path in sorted(PROJECT.rglob("*.pcapng")):
        found = analyze_capture(str(path))
        got = sorted((f["rule"], f["severity"], list(f["conns"]), f["text"],
                      json.dumps(json.loads(f["details"]), sort_keys=True))
                     for f in findings if f["capture"] == str(path))
        assert got == sorted((f["rule"], f["severity"], f["conns"], f["text"], json.dumps(f["details"], sort_keys=True))
                             for f in found["findings"]), path.name
        rows = {r["conn"]: r for r in topology if r["capture"] == str(path)}
        assert set(rows) == {c["conn"] for c in found["connections"]}, path.name
        for c in found["connections"]:
            row = rows[c["conn"]]
            assert (row["client_type"], row["server_type"], row["messages_c2s"], row["messages_s2c"]) == (
                c["client_type"], c["server_type"], c["messages"]["c2s"], c["messages"]["s2c"])
    broker = [r for r in topology if r["capture"] == str(PROJECT / "broker.pcapng")]
    assert {r["server_node"] for r in broker} == {"127.0.0.1:15643+127.0.0.1:15644"}
    assert all(r["broker"] for r in broker)
    assert {f["rule"] for f in findings} >= {"late-subscriber", "round-robin-skew", "back-pressure"}
    page = (run["out"] / "report.html").read_text()
    assert "<h2>Findings</h2>" in page and "late-subscriber" in page
