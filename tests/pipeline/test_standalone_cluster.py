"""The pipeline on a standalone Spark cluster whose workers have nothing of ours, as on any real cluster.

A master and two workers (one core each) are started here on 127.0.0.1 from the pyspark install, and
their Python is a bare venv of the same interpreter holding only what a PySpark SQL worker has:
`pyspark[sql]`'s requirements (pyarrow, pandas, numpy and theirs). pyspark itself reaches it the way
Spark gives it to every Python worker, from `python/lib/pyspark.zip` and py4j's zip; zmtplab, orjson and
PyNaCl it has not (the fixture checks), so they work there only because the driver ships them.

Run as users run it, `zmtplab pipeline --master spark://...` and `spark-submit .../submit.py`, each
table must equal local mode's row for row; an input only the driver sees must fail with its real
cause and a hint. The three runs share the cluster at once, two cores each, one executor on each
worker (a run alone leaves most of two cores idle: its time goes to starting JVMs and Python workers
and to Spark's scheduling).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from pipeline_util import PROJECT, SHARED

import zmtplab.pipeline
from testkit import SPARK_SHORT_JVM, free_port
from zmtplab.pipeline import run_pipeline

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]  # (the fixtures: a cluster and its runs)

SUBMIT = Path(zmtplab.pipeline.__file__).parent / "submit.py"
TABLES = ("events", "connections", "errors", "topology", "findings")
WORKERS = 2
INPUTS = [SHARED / "dealer_router.pcapng", SHARED / "large.pcapng", PROJECT / "curve_wrong_key.pcapng",
          PROJECT / "identity_collision.pcapng", PROJECT / "heartbeat_ttl.pcapng"]
# Spark's own settings, the way an operator gives them (spark-defaults.conf, read by spark-submit and by
# the JVM `zmtplab pipeline` starts): small shuffles for small inputs, no UI, JVMs for short runs.
RUNS = 3  # at once: a table-comparing run each for the CLI and spark-submit, and a failing one
UNSEEN = "/proc/self/cwd/local-only.pcapng"
SPARK_DEFAULTS = {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false", "spark.executor.memory": "512m",
                  "spark.cores.max": str(WORKERS), "spark.executor.cores": "1",
                  "spark.driver.extraJavaOptions": SPARK_SHORT_JVM, "spark.executor.extraJavaOptions": SPARK_SHORT_JVM}


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def pyspark_sql_requirements() -> set[str]:
    """The installed distributions `pip install pyspark[sql]` brings besides pyspark and py4j (which Spark
    ships to its Python workers itself)."""
    found: set[str] = set()
    todo = [(r, "sql") for r in metadata.distribution("pyspark").requires or ()]
    while todo:
        text, extra = todo.pop()
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = _normal(req.name)
        if name in found or name == "py4j":
            continue
        found.add(name)
        todo += [(r, "") for r in metadata.distribution(name).requires or ()]
    return found


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    """A venv of this interpreter with pyspark[sql]'s requirements only (linked from this environment,
    as `pip install` would lay them out)."""
    root = tmp_path_factory.mktemp("bare-worker")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    for name in pyspark_sql_requirements():
        dist = metadata.distribution(name)
        for top in {f.parts[0] for f in dist.files or () if f.parts[0] != ".."}:
            target = Path(str(dist.locate_file(top)))
            if target.exists() and not (site / top).exists():
                (site / top).symlink_to(target)
    probe = ("import importlib.util as u; import pyarrow, pandas, numpy; "
             "print([m for m in ('zmtplab', 'orjson', 'nacl', 'pyspark', '_cffi_backend') if u.find_spec(m)])")
    has = subprocess.run([str(python), "-I", "-c", probe], capture_output=True, text=True, check=True).stdout
    assert has.strip() == "[]", f"the bare worker Python has {has.strip()}"
    return python


def _state(webui: int) -> dict | None:
    """The master's JSON status page, or None while it is not serving it."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=5) as r:
            return json.load(r)
    except OSError:
        return None
    except ValueError:  # (a master still starting answered /json/ with its HTML page: four workers beside it, once)
        return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, bare_python):
    """(master URL, environment for drivers, directory): a master and WORKERS workers whose Python is bare."""
    import pyspark

    tmp = tmp_path_factory.mktemp("cluster")
    home = Path(pyspark.__file__).parent
    conf = tmp / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in SPARK_DEFAULTS.items()))
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    # The daemons (and the executors they start) see nothing of the development environment.
    daemon_env = {k: v for k, v in os.environ.items()
                  if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not k.startswith(("PYSPARK", "SPARK"))}
    # (No SPARK_CONF_DIR: the daemons read none of the drivers' settings, and with no configuration directory in
    # front of their class path they and their executors can map the suite's Spark class archive, spark_cds.py.)
    daemon_env.update({"PATH": path, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
                       "SPARK_LOG_DIR": str(tmp / "logs"),
                       "PYSPARK_PYTHON": str(bare_python), "SPARK_DAEMON_JAVA_OPTS": SPARK_SHORT_JVM})
    port, webui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    logs = []

    def start(name: str, *args: str) -> subprocess.Popen:
        log = open(tmp / f"{name}.log", "w")  # noqa: SIM115 - closed below
        logs.append(log)
        proc = subprocess.Popen([str(home / "bin" / "spark-class"), *args], env=daemon_env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(proc)
        return proc

    def wait_for(what: str, ready, timeout: float = 120) -> None:
        """Until `ready(master state)` holds (the master's JSON status page), a daemon dies, or `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc, log in zip(procs, logs, strict=True):
                if proc.poll() is not None:
                    raise AssertionError(f"{log.name} exited with {proc.returncode} before {what}:\n"
                                         + Path(log.name).read_text()[-3000:])
            state = _state(webui)
            if state is not None and ready(state):
                return
            time.sleep(0.2)  # (polling the master's state, not waiting for a time)
        raise AssertionError(f"not {what} after {timeout}s: {_state(webui)}")

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(webui))
        wait_for("master up", lambda s: s.get("status") == "ALIVE")
        for i in range(WORKERS):
            start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(RUNS),
                  "--memory", f"{RUNS}g", "--webui-port", str(free_port()), "--work-dir", str(tmp / f"work{i}"), url)
        wait_for(f"{WORKERS} workers registered",
                 lambda s: sum(w.get("state") == "ALIVE" for w in s.get("workers", ())) == WORKERS)
        driver_env = {**{k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK"))},
                      "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": str(conf), "PYSPARK_PYTHON": str(bare_python)}
        yield url, driver_env, tmp
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


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[Path]:
    """The captures, a truncated one and a file that is no capture (the errors table has rows)."""
    tmp = tmp_path_factory.mktemp("inputs")
    truncated = tmp / "truncated.pcapng"
    truncated.write_bytes((PROJECT / "dealer_router.pcapng").read_bytes()[:2000])
    foreign = tmp / "notes.pcap"
    foreign.write_text("not a capture\n")
    return [*INPUTS, truncated, foreign]


def pipeline_args(inputs: list[Path], out: Path) -> list[str]:
    return [*map(str, inputs), "--out", str(out), "--split-size", "128k", "--quiet", "--json", "--no-report"]


@pytest.fixture(scope="module")
def runs(cluster, inputs, spark, tmp_path_factory) -> dict[str, subprocess.CompletedProcess | Path]:
    """The three cluster runs, started at once, and local mode's run of the same inputs (in this process,
    meanwhile): {"cli", "submit", "unseen": finished processes; "local": its output directory}."""
    url, env, tmp = cluster
    zmtplab_cli = str(Path(sys.executable).parent / "zmtplab")
    hidden = tmp / "driver-only"  # the working directory of the failing run's driver
    hidden.mkdir()
    shutil.copy(PROJECT / "heartbeat_ttl.pcapng", hidden / "local-only.pcapng")
    commands = {
        "cli": ([zmtplab_cli, "pipeline", *pipeline_args(inputs, tmp / "cli"), "--master", url], env, None),
        "submit": ([str(Path(sys.executable).parent / "spark-submit"), "--master", url, str(SUBMIT),
                    *pipeline_args(inputs, tmp / "submit")], {**env, "PYSPARK_DRIVER_PYTHON": sys.executable}, None),
        "unseen": ([zmtplab_cli, "pipeline", UNSEEN, "--out", str(tmp / "unseen"), "--master", url, "--quiet",
                    "--no-report"], env, hidden),
    }
    procs = {}
    for name, (cmd, run_env, cwd) in commands.items():  # (output to files: nobody reads a pipe meanwhile)
        with open(tmp / f"{name}.out", "w") as out, open(tmp / f"{name}.err", "w") as err:
            procs[name] = subprocess.Popen(cmd, env=run_env, cwd=cwd, stdout=out, stderr=err)
    done: dict[str, subprocess.CompletedProcess | Path] = {}
    try:
        local = tmp_path_factory.mktemp("local") / "out"
        run_pipeline(inputs, local, spark=spark, split_size=128 << 10, report=False)
        done["local"] = local
        for name, proc in procs.items():
            proc.wait(timeout=600)
            done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, (tmp / f"{name}.out").read_text(),
                                                     (tmp / f"{name}.err").read_text())
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return done


def read_rows(out: Path, table: str) -> tuple[object, list[str]]:
    """A table's schema and its rows (as sorted JSON texts: the order of rows is Spark's, not the data's)."""
    import pyarrow.parquet as pq

    data = pq.read_table(out / table)
    return data.schema, sorted(json.dumps(r, sort_keys=True, default=str) for r in data.to_pylist())


def assert_same_tables(out: Path, local: Path) -> None:
    for table in TABLES:
        schema, rows = read_rows(out, table)
        local_schema, local_rows = read_rows(local, table)
        assert schema.equals(local_schema), table
        assert len(rows) == len(local_rows), table
        assert rows == local_rows, table


def test_local_mode_reference_has_something_in_every_table(runs):
    counts = {t: len(read_rows(runs["local"], t)[1]) for t in TABLES}
    assert all(counts.values()), counts


def test_zmtplab_pipeline_on_bare_workers_gives_local_modes_tables(cluster, inputs, runs):
    url, _env, tmp = cluster
    proc = runs["cli"]
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout)
    assert summary["master"] == url
    assert summary["ranges"] > len(inputs)  # large.pcapng was split
    assert_same_tables(tmp / "cli", runs["local"])


def test_spark_submit_on_bare_workers_gives_local_modes_tables(cluster, runs):
    url, _env, tmp = cluster
    proc = runs["submit"]
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert json.loads(proc.stdout)["master"] == url
    assert_same_tables(tmp / "submit", runs["local"])


def test_every_run_had_an_executor_on_each_worker(cluster, runs):
    _url, _env, tmp = cluster
    for i in range(WORKERS):
        # (one executor directory per run, or more: a master relaunches an executor lost on a loaded machine)
        apps = {stderr.parent.parent.name for stderr in (tmp / f"work{i}").glob("app-*/*/stderr")}
        assert len(apps) == RUNS, f"worker {i}: {sorted(apps)}"


def test_an_input_the_workers_cannot_see_fails_with_its_path_and_a_hint(runs):
    """`/proc/self/cwd/...` names a file in each process's own working directory: the driver's holds the
    capture, the executors' (their work directories) do not, as a local path on a real cluster."""
    proc = runs["unseen"]
    assert proc.returncode == 1
    ours = [line for line in proc.stderr.splitlines() if line.startswith("zmtplab pipeline:")]
    assert ours[0] == ("zmtplab pipeline: a Spark worker failed: FileNotFoundError: [Errno 2] No such file or "
                       f"directory: '{UNSEEN}'"), proc.stderr[-3000:]
    assert ours[1].startswith(f"zmtplab pipeline: hint: {UNSEEN} is there on the driver but not on the worker"), ours
