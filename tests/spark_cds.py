"""A class-data-sharing (CDS) archive of the classes Spark loads, made once per environment by `make test`.

A Spark JVM spends about half its start-up CPU loading and verifying classes; with the archive it maps them
instead (a local session's start and a first small job: 13-15 s of JVM CPU without, 6-8 s with; the standalone
cluster module's 20 JVMs: 158 s without, 116 s with). The suite is CPU-bound on two cores, so this is CPU the
other tests get back.

The archive is only used by JVMs whose class path is the one it was made with: pyspark's jars, with no
configuration directory in front (JDK 17 checks this, and a JVM that does not match runs as before). It is made
from a local pipeline run over a sample capture, so it holds what the tests' JVMs load.

    python tests/spark_cds.py    # makes it (again); `make test` does when the venv is new or changed
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "captures" / "dealer_router.pcapng"
# (-Xlog:...=off: a JVM whose class path does not match says so on its stdout, which tests read.)
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
SHORT_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # (the tests' JVMs for short runs: testkit.SPARK_SHORT_JVM)
WRITE_TIMEOUT = 300.0  # seconds the JVM gets to write the archive once the run's Python has exited (about 20 here)


def archive() -> Path:
    """Where this environment's archive is: in the venv (`make test` makes it again when the venv changes)."""
    return Path(sys.prefix) / ".cache" / "spark-classes.jsa"


def jvm_options() -> str:
    """The options that make a Spark JVM use the archive, or "" while there is none."""
    path = archive()
    return f"-XX:SharedArchiveFile={path} {QUIET}" if path.is_file() else ""


def make(path: Path) -> None:
    """Runs the pipeline once in local mode in a child process whose JVM writes the archive as it exits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:  # (beside it: the rename below stays on one disk)
        partial = Path(tmp) / "spark.jsa"
        code = (
            "from zmtplab.pipeline import run_pipeline\n"
            "from zmtplab.pipeline.job import get_session\n"
            "spark = get_session('local[2]', conf={'spark.ui.enabled': 'false', 'spark.sql.shuffle.partitions': '4',"
            f" 'spark.driver.extraJavaOptions': '{SHORT_JVM} -XX:ArchiveClassesAtExit={partial} {QUIET}'}})\n"
            "spark.sparkContext.setLogLevel('ERROR')\n"
            f"run_pipeline([{str(SAMPLE)!r}], {str(Path(tmp) / 'out')!r}, spark=spark, stop_session=True)\n"
        )
        # The JVM writes the archive when it exits, after this Python does: wait for the whole process group.
        log = Path(tmp) / "spark.log"
        with log.open("wb") as out:
            proc = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            if proc.wait() != 0:
                raise SystemExit(f"the pipeline run that makes the archive failed ({proc.returncode}):\n"
                                 + log.read_text(errors="replace")[-3000:])
        deadline = time.monotonic() + WRITE_TIMEOUT
        while _group_alive(proc.pid):
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                raise SystemExit(f"the JVM had not written the class archive after {WRITE_TIMEOUT:.0f} s")
            time.sleep(0.2)  # (until the JVM has written the archive and exited)
        if not partial.is_file():
            raise SystemExit("the JVM wrote no class archive")
        os.replace(partial, path)  # (whole or not at all: an interrupted run leaves none)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def main() -> None:
    path = archive()
    path.unlink(missing_ok=True)
    make(path)
    print(f"Spark class archive: {path} ({path.stat().st_size // 2**20} MiB)")


if __name__ == "__main__":
    main()
