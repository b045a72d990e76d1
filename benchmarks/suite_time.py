"""Where the test suite's time goes: wall and CPU time per test module, the CPU of the whole process tree.

Runs pytest in this process (the project's configuration, any pytest arguments given) with a small plugin
that, around every test (its setup, call and teardown, so module fixtures count where they are made and
torn down), takes the CPU time of pytest's whole process tree: pytest itself, the children it has reaped
(RUSAGE_CHILDREN), and every live descendant with what its own reaped children used (read from
/proc/PID/stat). So a Spark JVM, a `zmtplab serve`, Chromium or tshark counts for the module whose tests
used it. Wall time on a shared machine says how loaded it was; CPU time says what the suite costs, and
compares runs made at different loads.

It prints every module, most CPU first, with its wall time, CPU time (user+sys) and test count, then the
totals and the load average, and writes them as JSON with `--json FILE`. `--burner N` runs the suite beside N
busy processes (load_sessions.py's burner: a pure-Python loop each, at normal priority), the other work of a
shared machine made repeatable: the suite must pass there too (its tests wait for states, never for time).

Usage: python benchmarks/suite_time.py [--json FILE] [--top N] [--burner N] [PYTEST ARGS...]
"""

from __future__ import annotations

import argparse
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


class ModuleTimes:
    """The pytest plugin: wall and tree CPU seconds per test module."""

    def __init__(self) -> None:
        self.modules: dict[str, dict[str, float]] = {}
        self.started = time.monotonic()
        self.cpu0 = tree_cpu()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        wall, cpu = time.monotonic(), tree_cpu()
        yield
        row = self.modules.setdefault(item.nodeid.split("::")[0], {"wall": 0.0, "cpu": 0.0, "tests": 0})
        row["wall"] += time.monotonic() - wall
        row["cpu"] += tree_cpu() - cpu
        row["tests"] += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--top", type=int, default=0, help="print only the N modules with most CPU (0: all)")
    ap.add_argument("--burner", type=int, default=0, metavar="N", help="N busy processes beside the suite")
    args, pytest_args = ap.parse_known_args()
    os.chdir(REPO)
    burners = [mp.get_context("spawn").Process(target=burn, daemon=True) for _ in range(max(0, args.burner))]
    for b in burners:
        b.start()
    times = ModuleTimes()  # (after the burners: their CPU is not the suite's)
    load0 = os.getloadavg()
    try:
        status = pytest.main(pytest_args, plugins=[times])
    finally:
        for b in burners:
            b.terminate()
        for b in burners:
            b.join(5)
    wall = time.monotonic() - times.started
    cpu = tree_cpu() - times.cpu0
    load1 = os.getloadavg()
    rows = sorted(times.modules.items(), key=lambda kv: -kv[1]["cpu"])
    print(f"\n{'module':<64} {'wall s':>8} {'cpu s':>8} {'tests':>6}")
    for module, row in rows[: args.top or None]:
        print(f"{module:<64} {row['wall']:8.1f} {row['cpu']:8.1f} {int(row['tests']):6d}")
    print(f"suite_time: modules={len(rows)} wall={wall:.1f}s cpu={cpu:.1f}s "
          f"load_start={load0[0]:.1f} load_end={load1[0]:.1f} burners={len(burners)} status={int(status)}")
    if args.json:
        args.json.write_text(json.dumps({"wall": wall, "cpu": cpu, "load": [load0[0], load1[0]],
                                         "burners": len(burners), "status": int(status), "modules": times.modules},
                                        indent=1))
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
