"""`spark-submit` of the pipeline to a standalone cluster: a master and one worker started here
on 127.0.0.1, the job submitted with backend/zmtplab/pipeline/submit.py, unchanged. The package
reaches the executors through addPyFile; the events equal `zmtplab dissect`'s."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest
from pipeline_util import PROJECT, SHARED, as_events, dissect_reference, read_events

from testkit import free_port

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SUBMIT = REPO / "backend" / "zmtplab" / "pipeline" / "submit.py"


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"process exited with {proc.returncode} before listening on {port}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise AssertionError(f"nothing listening on {port} after {timeout}s")


@pytest.fixture
def cluster(tmp_path):
    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(tmp_path / "logs"), "SPARK_WORKER_DIR": str(tmp_path / "work")}
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    procs = []
    logs = []

    def start(*args: str) -> subprocess.Popen:
        log = open(tmp_path / f"{args[0].rsplit('.', 1)[-1]}.log", "w")  # noqa: SIM115 - closed below
        logs.append(log)
        proc = subprocess.Popen([str(home / "bin" / "spark-class"), *args], env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(proc)
        return proc

    try:
        master = start("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                       "--webui-port", str(free_port()))
        wait_for_port(port, master)
        start("org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2", "--memory", "1g",
              "--webui-port", str(free_port()), "--work-dir", str(tmp_path / "work"), url)
        yield url, env, tmp_path
    finally:
        for proc in reversed(procs):  # only the process groups started here
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for log in logs:
            log.close()


def test_spark_submit_to_a_standalone_master_and_worker(cluster):
    url, env, tmp = cluster
    inputs = [SHARED / "dealer_router.pcapng", SHARED / "large.pcapng", PROJECT / "heartbeat_ttl.pcapng"]
    out = tmp / "out"
    submit = Path(sys.executable).parent / "spark-submit"
    cmd = [str(submit), "--master", url, "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=1g",
           "--conf", "spark.sql.shuffle.partitions=4", str(SUBMIT), *map(str, inputs), "--out", str(out),
           "--split-size", "128k", "--quiet", "--json", "--no-report"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["master"] == url
    assert summary["ranges"] > 3  # large.pcapng was split
    events = read_events(out)
    for path in inputs:
        ref, _result = dissect_reference(path)
        assert as_events(events[str(path)]) == ref, path.name
