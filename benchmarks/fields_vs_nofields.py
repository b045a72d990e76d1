"""Times `zmtplab dissect --jsonl` (every field) against `--jsonl --no-fields` on the same capture.

Issue 22, goal 2 ("fields at the cost of bytes"): with fields within 2.0x of without. Both run as
whole processes, output to /dev/null, alternating, `--runs` times; medians of the wall time and of
the CPU time (user + sys of the process, steadier than the wall time on a busy machine) are
compared, with the load average before and after. `--baseline DIR` also times another checkout's
`backend` (e.g. `git archive HEAD~3 backend | tar -x -C DIR`) in the same rounds, so before and
after are measured side by side. Last line:
`fields_vs_nofields: fields=...s no-fields=...s ratio=... (cpu ratio=...)` (goal: ratio <= 2.0).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CAPTURE = ROOT.parent / "shared" / "captures" / "bulk.pcapng"


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + sys) of one run of `cmd`, its output thrown away."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    """Runs each variant `--runs` times, alternating, and prints the medians and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", nargs="?", type=Path, default=DEFAULT_CAPTURE)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a directory holding another checkout's backend/ to time too")
    args = parser.parse_args()
    base = [sys.executable, "-m", "zmtplab.cli", "dissect", "--jsonl"]
    fields_cmd = [*base, str(args.capture)]
    bare_cmd = [*base, "--no-fields", str(args.capture)]
    here = {**os.environ, "PYTHONPATH": str(ROOT / "backend")}
    variants = {"fields": (fields_cmd, here), "no-fields": (bare_cmd, here)}
    if args.baseline is not None:
        old = {**os.environ, "PYTHONPATH": str(args.baseline.resolve() / "backend")}
        variants["baseline fields"] = (fields_cmd, old)
        variants["baseline no-fields"] = (bare_cmd, old)
    events = subprocess.run(fields_cmd, capture_output=True, check=True, env=here).stdout.count(b"\n")
    print(f"capture: {args.capture.name} ({args.capture.stat().st_size / 1e6:.1f} MB), {events} events; "
          f"load average before: {load()}")
    for cmd, env in variants.values():
        timed(cmd, env)  # warm the page cache and the imports
    walls: dict[str, list[float]] = {k: [] for k in variants}
    cpus: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(args.runs):
        for name, (cmd, env) in variants.items():
            wall, cpu = timed(cmd, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    wall_med = {k: statistics.median(v) for k, v in walls.items()}
    cpu_med = {k: statistics.median(v) for k, v in cpus.items()}
    for name in variants:
        print(f"{name:>19}: wall {wall_med[name]:.3f}s cpu {cpu_med[name]:.3f}s  "
              f"(walls {', '.join(f'{x:.2f}' for x in walls[name])})")
    print(f"load average after: {load()}")
    if args.baseline is not None:
        old_wall = wall_med["baseline fields"] / wall_med["baseline no-fields"]
        print(f"baseline: fields/no-fields wall ratio={old_wall:.2f}"
              f" cpu ratio={cpu_med['baseline fields'] / cpu_med['baseline no-fields']:.2f}; "
              f"fields now take {cpu_med['fields'] / cpu_med['baseline fields']:.2f}x the baseline's cpu")
    print(f"fields_vs_nofields: fields={wall_med['fields']:.3f}s no-fields={wall_med['no-fields']:.3f}s "
          f"ratio={wall_med['fields'] / wall_med['no-fields']:.2f} "
          f"(cpu ratio={cpu_med['fields'] / cpu_med['no-fields']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
