"""Where the test suite's time goes: wall and CPU time per test module, the CPU of the whole process tree.

Runs pytest in this process (the project's configuration, any pytest arguments given; bytecode cached, as `make
test` has it) with a small plugin that, around every test (its setup, call and teardown, so module fixtures count
where they are made and torn down), takes the CPU time of pytest's whole process tree: pytest itself, the children
it has reaped (RUSAGE_CHILDREN), and every live descendant with what its own reaped children used (read from
/proc/PID/stat). So a Spark JVM, a `zmtplab serve`, Chromium or tshark counts for the module whose tests used it.
Wall time on a shared machine says how loaded it was; CPU time says what the suite costs, and compares runs made at
different loads. The tree's CPU misses what processes that left the tree used (reparented to init: Chromium's
renderers and Spark's JVMs among them; process accounting counted 1,318 s for a run this script put at 784 s), so
it also prints the machine's busy CPU over the run: with nothing else running, that is the suite's (and the
burners'), and its share of the cores says whether more workers could help.

Under pytest-xdist (`-n 3 --dist loadgroup`, as `make test` runs it on two cores) each worker measures the tests it
runs and hands its figures back when it ends (xdist's `workeroutput`); the wall times are the reports' own (setup +
call + teardown), so the figures are the same either way.

It prints every module, most CPU first, with its wall time, the part of it spent setting up fixtures, CPU time
(user+sys) and test count, then the totals and the load average, and writes them as JSON with `--json FILE`.
`--weights` prints the wall seconds of each unit of work of tests/conftest.py's scheduler as its `WEIGHTS`
(a run on two workers: the order the units are handed out in). `--burner N` runs the suite beside N busy
processes (load_sessions.py's burner: a pure-Python loop each, at normal priority), the other work of a shared
machine made repeatable: the suite must pass there too (its tests wait for states, never for time).

Usage: python benchmarks/suite_time.py [--json FILE] [--top N] [--weights] [--burner N] [PYTEST ARGS...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing as mp
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from load_sessions import burn

REPO = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and of its reaped children), or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    # fields 4 (ppid) and 14-17 (utime, stime, cutime, cstime), counted from 1 with the name as field 2
    return int(rest[1]), sum(int(v) for v in rest[11:15]) / TICK


def tree_cpu() -> float:
    """CPU seconds (user+sys) this process and all of its descendants, live or reaped, have used."""
    me = os.getpid()
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            s = _stat(int(entry))
            if s is not None:
                stats[int(entry)] = s
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total = 0.0
    todo = list(children.get(me, []))
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        todo.extend(children.get(pid, []))
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return total + own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


def machine_cpu() -> tuple[float, float]:
    """(busy, all) CPU seconds of the whole machine since boot, every core (/proc/stat: busy is user, nice, system,
    irq and softirq; all adds idle and iowait)."""
    user, nice, system, idle, iowait, irq, softirq = (int(v) for v in Path("/proc/stat").read_text().split()[1:8])
    busy = user + nice + system + irq + softirq
    return busy / TICK, (busy + idle + iowait) / TICK


def _module(nodeid: str) -> str:
    return nodeid.split("::")[0]


class ModuleTimes:
    """The pytest plugin: wall, fixture set-up and tree CPU seconds per test module.

    The wall times come from the test reports, wherever the tests ran; the CPU is taken around each test where it
    runs: in this process, or on each xdist worker, which hands its figures back as it ends."""

    def __init__(self) -> None:
        self.modules: dict[str, dict[str, float]] = {}
        self.started = time.monotonic()
        self.cpu0 = tree_cpu()

    def row(self, module: str) -> dict[str, float]:
        return self.modules.setdefault(module, {"wall": 0.0, "setup": 0.0, "cpu": 0.0, "tests": 0})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        cpu = tree_cpu()
        yield
        self.row(_module(item.nodeid))["cpu"] += tree_cpu() - cpu

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        row = self.row(_module(report.nodeid))
        row["wall"] += report.duration
        if report.when == "setup":
            row["setup"] += report.duration
            row["tests"] += 1

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = getattr(session.config, "workeroutput", None)
        if output is not None:  # an xdist worker: its CPU figures go back to the controller
            output["suite_time_cpu"] = {module: row["cpu"] for module, row in self.modules.items()}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: object, error: object) -> None:
        for module, cpu in getattr(node, "workeroutput", {}).get("suite_time_cpu", {}).items():
            self.row(module)["cpu"] += cpu


def pytest_configure(config: pytest.Config) -> None:
    """On an xdist worker (this module given as `-p suite_time`): the worker's own measuring plugin."""
    if hasattr(config, "workerinput"):
        config.pluginmanager.register(ModuleTimes(), "suite_time_worker")


def weights(modules: dict[str, dict[str, float]]) -> dict[str, float]:
    """Wall seconds per unit of work of tests/conftest.py's scheduler (its modules, or the shared unit of several)."""
    spec = importlib.util.spec_from_file_location("suite_units", REPO / "tests" / "conftest.py")
    assert spec is not None and spec.loader is not None
    units = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(units)
    out: dict[str, float] = {}
    for module, row in modules.items():
        unit = units.unit_of(module)
        out[unit] = out.get(unit, 0.0) + row["wall"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--top", type=int, default=0, help="print only the N modules with most CPU (0: all)")
    ap.add_argument("--weights", action="store_true", help="print each unit's wall seconds as conftest's WEIGHTS")
    ap.add_argument("--burner", type=int, default=0, metavar="N", help="N busy processes beside the suite")
    args, pytest_args = ap.parse_known_args()
    os.chdir(REPO)
    # xdist's workers load this module as a plugin (from this folder) to measure the tests they run.
    here = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    # Bytecode cached, as `make test` runs the suite: where the environment says not to write it, every server, CLI
    # and Spark Python worker compiles the package again (a third more CPU in all, measured beside a burner).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    burners = [mp.get_context("spawn").Process(target=burn, daemon=True) for _ in range(max(0, args.burner))]
    for b in burners:
        b.start()
    times = ModuleTimes()  # (after the burners: their CPU is not the suite's)
    load0 = os.getloadavg()
    machine0 = machine_cpu()
    try:
        status = pytest.main([*pytest_args, "-p", "suite_time"], plugins=[times])
    finally:
        for b in burners:
            b.terminate()
        for b in burners:
            b.join(5)
    wall = time.monotonic() - times.started
    cpu = tree_cpu() - times.cpu0
    machine1 = machine_cpu()
    busy, available = machine1[0] - machine0[0], machine1[1] - machine0[1]
    load1 = os.getloadavg()
    rows = sorted(times.modules.items(), key=lambda kv: -kv[1]["cpu"])
    print(f"\n{'module':<64} {'wall s':>8} {'setup s':>8} {'cpu s':>8} {'tests':>6}")
    for module, row in rows[: args.top or None]:
        print(f"{module:<64} {row['wall']:8.1f} {row['setup']:8.1f} {row['cpu']:8.1f} {int(row['tests']):6d}")
    if args.weights:
        print("WEIGHTS: dict[str, float] = {")
        for unit, seconds in sorted(weights(times.modules).items(), key=lambda kv: -kv[1]):
            if seconds >= 15:  # (the rest count as WEIGHT_UNNAMED)
                print(f'    "{unit}": {seconds:.0f},')
        print("}")
    print(f"suite_time: modules={len(rows)} wall={wall:.1f}s cpu={cpu:.1f}s machine_busy={busy:.1f}s "
          f"({busy / available:.0%} of {os.cpu_count()} cores) load_start={load0[0]:.1f} load_end={load1[0]:.1f} "
          f"burners={len(burners)} status={int(status)}")
    if args.json:
        args.json.write_text(json.dumps({"wall": wall, "cpu": cpu, "machine_busy": busy,
                                         "machine_share": busy / available, "load": [load0[0], load1[0]],
                                         "burners": len(burners), "status": int(status), "modules": times.modules},
                                        indent=1))
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
