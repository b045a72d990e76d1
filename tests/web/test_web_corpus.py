"""Issue 8, the Corpus page's API: a real Spark run (local[2]) over uploaded captures, followed over SSE, its
tables read back page by page and compared with `zmtplab dissect`, the report with its own CSP, refusals,
cancellation, and runs kept on disk (reloaded by a new server, evicted, expired).

One run over three small uploads (two shared captures and a damaged one) is shared by the module; the
cancel test runs a second one over a bigger capture."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from testkit import SPARK_SHORT_JVM, event_stream, upload
from zmtplab.pipeline.rows import event_to_comparable, row_to_event
from zmtplab.web import Settings, create_app

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's "use httpx2" notice
    from fastapi.testclient import TestClient

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]  # (the fixture: a Spark run, minutes on a loaded machine)

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "captures"  # shared/ sits beside the repository
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
              "spark.driver.extraJavaOptions": SPARK_SHORT_JVM}


# This module's app has settings of its own: a small Spark configuration for the corpus runs.
def open_client(data_dir: Path, **overrides: Any) -> TestClient:
    """A test client of an app on `data_dir` (its lifespan runs inside `with`)."""
    values: dict[str, Any] = {"data_dir": data_dir, "frontend_dir": REPO / "frontend", "progress_interval": 0.1,
                              "reap_interval": 0.2, "corpus_spark_conf": SPARK_CONF, **overrides}
    return TestClient(create_app(Settings(**values)))


def stream_progress(client: Any, run_id: str) -> list[dict[str, Any]]:
    """Every message of the run's progress stream, until it ends."""
    return event_stream(client, f"/api/corpus/runs/{run_id}/progress")


def dissect_jsonl(path: Path) -> list[dict[str, Any]]:
    """What `zmtplab dissect --jsonl` prints for a capture, field values as the tables store them (text)."""
    out = subprocess.run([sys.executable, "-m", "zmtplab.cli", "dissect", "--jsonl", str(path)],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return [event_to_comparable(json.loads(line)) for line in out.splitlines() if line.strip()]


def page(client: Any, run_id: str, table: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/corpus/runs/{run_id}/tables/{table}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    """A server with three uploads and one finished run over them (its progress messages recorded)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("the corpus tests need a Java runtime (17+): install one (make setup does) or set JAVA_HOME")
    data_dir = tmp_path_factory.mktemp("corpus-data")
    with open_client(data_dir) as client:
        ids = {}
        for name in ("dealer_router.pcapng", "push_pull.pcapng"):
            response = upload(client, SHARED / name, name)
            assert response.status_code == 201, response.text
            ids[name] = response.json()["id"]
        # Cut inside a packet block: the upload passes (its magic number is right), the pipeline reads the
        # packets before the cut and reports the rest in the `errors` table.
        damaged = (SHARED / "pub_sub.pcapng").read_bytes()[:1490]
        response = upload(client, damaged, "damaged.pcapng")
        assert response.status_code == 201, response.text
        ids["damaged.pcapng"] = response.json()["id"]
        started = time.monotonic()
        response = client.post("/api/corpus/runs", json={"captures": list(ids.values())})
        assert response.status_code == 202, response.text
        run_id = response.json()["id"]
        assert response.headers["location"] == f"/api/corpus/runs/{run_id}"
        messages = stream_progress(client, run_id)
        yield SimpleNamespace(client=client, run=run_id, ids=ids, messages=messages, data_dir=data_dir,
                              seconds=time.monotonic() - started)


def test_run_reaches_done_with_rising_progress(corpus):
    messages = corpus.messages
    assert messages[-1]["state"] == "done", messages[-1]
    assert messages[-1]["fraction"] == 1.0
    assert all(m["state"] == "running" for m in messages[:-1])
    fractions = [m["fraction"] for m in messages]
    assert fractions == sorted(fractions), fractions  # never goes back
    assert len(set(fractions)) >= 4, fractions  # and moved through the run
    phases = [m["phase"] for m in messages]
    assert phases[0] == "starting Spark"
    assert {"connections", "events", "report"} <= set(phases), phases
    assert any(m["tasks_total"] > 0 for m in messages)  # Spark's task counts came through

    run = corpus.client.get(f"/api/corpus/runs/{corpus.run}").json()
    assert run["state"] == "done" and run["error"] is None and run["finished"] >= run["created"]
    assert [c["id"] for c in run["captures"]] == list(corpus.ids.values())
    assert [c["name"] for c in run["captures"]] == list(corpus.ids)
    summary = run["summary"]
    assert summary["inputs"] == 3 and summary["captures"] == 3 and summary["connections"] == 3
    assert summary["errors"] == 1 and summary["damaged"] == [corpus.ids["damaged.pcapng"]]
    assert summary["report"] is True
    listed = corpus.client.get("/api/corpus/runs").json()["runs"]
    assert [r["id"] for r in listed] == [corpus.run]
    stored = corpus.client.get("/api/corpus/captures").json()["captures"]
    assert {c["id"] for c in stored} == set(corpus.ids.values())


def test_events_equal_zmtplab_dissect(corpus):
    for name in ("dealer_router.pcapng", "push_pull.pcapng"):
        expected = dissect_jsonl(SHARED / name)
        got = page(corpus.client, corpus.run, "events", capture=corpus.ids[name], limit=1000, fields=1)
        assert got["total"] == len(expected) == len(got["rows"])
        assert all(r["capture"] == corpus.ids[name] for r in got["rows"])
        assert [row_to_event(r) for r in got["rows"]] == expected, name

    dealer = corpus.ids["dealer_router.pcapng"]
    commands = page(corpus.client, corpus.run, "events", capture=dealer, kind="command")
    assert commands["total"] == 2
    ready = next(r for r in commands["rows"] if r["dir"] == "c2s")
    assert ready["name"] == "READY" and ready["properties"] == {"Socket-Type": "DEALER", "Identity": "client-1"}
    assert "fields" not in ready  # only on request

    # Pages follow each other; filters combine; the limit is capped at the server's.
    whole = page(corpus.client, corpus.run, "events", capture=dealer, limit=1000)["rows"]
    assert page(corpus.client, corpus.run, "events", capture=dealer, offset=5, limit=4)["rows"] == whole[5:9]
    s2c = page(corpus.client, corpus.run, "events", capture=dealer, dir="s2c", kind="greeting", conn="0")
    assert s2c["total"] == 1 and s2c["rows"][0]["version"] == "3.1"
    assert page(corpus.client, corpus.run, "events", offset=10_000)["rows"] == []
    assert page(corpus.client, corpus.run, "events", limit=50_000)["limit"] == 1000
    everything = page(corpus.client, corpus.run, "events", limit=1000)
    assert everything["total"] == corpus.client.get(f"/api/corpus/runs/{corpus.run}").json()["summary"]["events"]
    # Captures in the order the run was given them.
    order = [r["capture"] for r in everything["rows"]]
    assert order == sorted(order, key=list(corpus.ids.values()).index)


def test_connections_and_errors_tables(corpus):
    conns = page(corpus.client, corpus.run, "connections")
    assert conns["total"] == 3
    assert [r["capture"] for r in conns["rows"]] == list(corpus.ids.values())
    dealer = conns["rows"][0]
    assert (dealer["socket_type_client"], dealer["socket_type_server"]) == ("DEALER", "ROUTER")
    assert dealer["zmtp"] is True and dealer["messages"] == 6 and dealer["close_reason"] == "fin"
    one = page(corpus.client, corpus.run, "connections", capture=corpus.ids["push_pull.pcapng"])
    assert one["total"] == 1 and one["rows"][0]["socket_type_server"] == "PUSH"

    errors = page(corpus.client, corpus.run, "errors")
    assert errors["total"] == 1
    error = errors["rows"][0]
    assert error["capture"] == corpus.ids["damaged.pcapng"] and error["kind"] == "truncated"
    assert "truncated" in error["message"] and str(corpus.data_dir) not in error["message"]
    assert page(corpus.client, corpus.run, "errors", kind="not-a-capture")["total"] == 0
    # The damaged capture's packets before the cut were dissected all the same.
    assert page(corpus.client, corpus.run, "events", capture=corpus.ids["damaged.pcapng"])["total"] > 0


def test_report_has_its_own_csp(corpus):
    response = corpus.client.get(f"/api/corpus/runs/{corpus.run}/report")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page_bytes = response.content
    csp = response.headers["content-security-policy"]
    assert "sandbox" in csp and "frame-ancestors 'self'" in csp and "default-src 'none'" in csp
    assert "script-src" not in csp and "unsafe-inline" not in csp
    styles = re.findall(rb"<style>(.*?)</style>", page_bytes, re.S)
    assert styles
    for style in styles:
        assert f"'sha256-{base64.b64encode(hashlib.sha256(style).digest()).decode()}'" in csp
    assert response.headers["x-frame-options"] == "SAMEORIGIN"
    text = response.text
    assert b"<script" not in page_bytes.lower() and "<svg" in text
    # Captures are shown by name, never by their path on the server.
    assert "dealer_router.pcapng" in text and "damaged.pcapng" in text
    assert str(corpus.data_dir) not in text


def test_report_in_chinese(corpus):
    """The run's report in the page's language (issue 21): relabelled and under its own CSP like the English one."""
    english = corpus.client.get(f"/api/corpus/runs/{corpus.run}/report").text
    chinese = corpus.client.get(f"/api/corpus/runs/{corpus.run}/report", headers={"Accept-Language": "zh-CN"})
    assert chinese.status_code == 200 and "ZMTP Lab 流水线报告" in chinese.text
    assert "ZMTP Lab pipeline report" in english
    assert "dealer_router.pcapng" in chinese.text and str(corpus.data_dir) not in chinese.text
    assert "'sha256-" in chinese.headers["content-security-policy"]
    assert corpus.client.get(f"/api/corpus/runs/{corpus.run}/report?lang=en").text == english


def test_refusals(corpus):
    client, run = corpus.client, corpus.run
    unknown = uuid.uuid4().hex
    assert client.get(f"/api/corpus/runs/{unknown}").status_code == 404
    assert client.get("/api/corpus/runs/not-a-run-id").status_code == 404
    assert client.get(f"/api/corpus/runs/{unknown}/progress").status_code == 404
    assert client.get(f"/api/corpus/runs/{unknown}/report").status_code == 404
    assert client.get(f"/api/corpus/runs/{unknown}/tables/events").status_code == 404
    assert client.delete(f"/api/corpus/runs/{unknown}").status_code == 404
    assert client.post(f"/api/corpus/runs/{unknown}/cancel").status_code == 404
    response = client.get(f"/api/corpus/runs/{run}/tables/secrets")
    assert response.status_code == 404 and "events" in response.json()["detail"]
    response = client.get(f"/api/corpus/runs/{run}/tables/events", params={"capture": unknown})
    assert response.status_code == 404
    response = client.post("/api/corpus/runs", json={"captures": [corpus.ids["push_pull.pcapng"], unknown]})
    assert response.status_code == 404 and unknown in response.json()["detail"]
    for params in ({"kind": "bogus"}, {"conn": "1;drop"}, {"dir": "up"}, {"offset": -1}, {"limit": 0}):
        assert client.get(f"/api/corpus/runs/{run}/tables/events", params=params).status_code == 422, params
    response = client.get(f"/api/corpus/runs/{run}/tables/connections", params={"kind": "command"})
    assert response.status_code == 422 and "kind" in response.json()["detail"]
    for body in ({}, {"captures": []}, {"captures": "x"}, {"captures": ["x" * 65]}):
        assert client.post("/api/corpus/runs", json=body).status_code == 422, body
    response = client.post("/api/corpus/runs", json={"captures": [uuid.uuid4().hex for _ in range(101)]})
    assert response.status_code == 422 and "at most 100" in response.json()["detail"]
    assert client.post(f"/api/corpus/runs/{run}/cancel").status_code == 409  # done: nothing to cancel


def test_no_java_answers_503(corpus, tmp_path, monkeypatch):
    assert corpus.client.get("/api/corpus/status").json() == {"available": True, "problem": None}
    monkeypatch.setenv("PATH", str(tmp_path))  # no `java` on it
    monkeypatch.delenv("JAVA_HOME", raising=False)
    response = corpus.client.post("/api/corpus/runs", json={"captures": [corpus.ids["push_pull.pcapng"]]})
    assert response.status_code == 503
    no_java = ("the Spark pipeline needs a Java runtime (17 or later) and there is none here: install one (Debian: "
               "openjdk-17-jre-headless) or set JAVA_HOME")
    assert response.json()["detail"] == no_java
    assert corpus.client.get("/api/corpus/status").json() == {"available": False, "problem": no_java}
    chinese = corpus.client.get("/api/corpus/status?lang=zh-CN").json()["problem"]
    assert chinese.startswith("Spark 流水线需要 Java 运行时") and "JAVA_HOME" in chinese


def test_cancel_a_running_run(corpus):
    client = corpus.client
    response = upload(client, SHARED / "large.pcapng", "large.pcapng")
    assert response.status_code == 201, response.text
    large = response.json()["id"]
    response = client.post("/api/corpus/runs", json={"captures": [large]})
    assert response.status_code == 202, response.text
    run_id = response.json()["id"]
    busy = client.post("/api/corpus/runs", json={"captures": [large]})
    assert busy.status_code == 409 and "in progress" in busy.json()["detail"]
    for part in ("report", "tables/events"):
        response = client.get(f"/api/corpus/runs/{run_id}/{part}")
        assert response.status_code == 409 and "running" in response.json()["detail"]

    seen: list[dict[str, Any]] = []
    cancelled_at = None
    with client.stream("GET", f"/api/corpus/runs/{run_id}/progress") as response:
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            seen.append(json.loads(line[len("data: "):]))
            if cancelled_at is None and seen[-1]["tasks_total"] > 0:  # Spark jobs are running: stop them
                assert client.post(f"/api/corpus/runs/{run_id}/cancel").status_code == 202
                cancelled_at = time.monotonic()
    assert cancelled_at is not None, seen
    assert seen[-1]["state"] == "cancelled" and seen[-1]["detail"] == "cancelled", seen[-1]
    assert time.monotonic() - cancelled_at < 15
    run = client.get(f"/api/corpus/runs/{run_id}").json()
    assert run["state"] == "cancelled" and run["summary"] is None
    assert not (corpus.data_dir / "corpus" / run_id / "out").exists()
    assert client.post(f"/api/corpus/runs/{run_id}/cancel").status_code == 409
    assert client.delete(f"/api/corpus/runs/{run_id}").status_code == 204
    assert client.get(f"/api/corpus/runs/{run_id}").status_code == 404
    assert not (corpus.data_dir / "corpus" / run_id).exists()
    # The server takes runs again.
    assert [r["id"] for r in client.get("/api/corpus/runs").json()["runs"]] == [corpus.run]


def _copy_run(source: Path, data_dir: Path, created: float) -> str:
    run_id = uuid.uuid4().hex
    target = data_dir / "corpus" / run_id
    shutil.copytree(source, target)
    meta = json.loads((target / "meta.json").read_text())
    (target / "meta.json").write_text(json.dumps({**meta, "id": run_id, "created": created}))
    return run_id


def test_runs_are_kept_evicted_and_expire(corpus, tmp_path):
    source = corpus.data_dir / "corpus" / corpus.run
    now = time.time()
    # A restarted server lists the runs it finds on disk (the newest `max_corpus_runs`) and reads their tables.
    kept = [_copy_run(source, tmp_path, now - age) for age in (30, 20, 10)]
    with open_client(tmp_path, max_corpus_runs=2) as client:
        assert [r["id"] for r in client.get("/api/corpus/runs").json()["runs"]] == kept[:0:-1]
        assert not (tmp_path / "corpus" / kept[0]).exists()
        assert page(client, kept[2], "connections")["total"] == 3
        assert client.get(f"/api/corpus/runs/{kept[2]}/report").status_code == 200
    # Runs older than `corpus_ttl` go at the next reaper pass.
    with open_client(tmp_path, corpus_ttl=15, reap_interval=0.1) as client:
        deadline = time.monotonic() + 10
        while len(client.get("/api/corpus/runs").json()["runs"]) > 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [r["id"] for r in client.get("/api/corpus/runs").json()["runs"]] == [kept[2]]
        assert not (tmp_path / "corpus" / kept[1]).exists()
    # Their tables and reports take at most `max_corpus_bytes`: the oldest go first, the newest stays whatever
    # its size.
    size = sum(f.stat().st_size for f in (source / "out").rglob("*") if f.is_file())
    assert size > 10_000
    newer = [_copy_run(source, tmp_path, now - age) for age in (8, 6)]
    with open_client(tmp_path, max_corpus_bytes=2 * size + size // 2) as client:
        assert [r["id"] for r in client.get("/api/corpus/runs").json()["runs"]] == newer[::-1]
        assert not (tmp_path / "corpus" / kept[2]).exists()
    with open_client(tmp_path, max_corpus_bytes=size // 2) as client:
        assert [r["id"] for r in client.get("/api/corpus/runs").json()["runs"]] == [newer[1]]
        assert page(client, newer[1], "connections")["total"] == 3
