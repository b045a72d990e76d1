"""CPU per message of the simulator (`peers.simulation.Simulation`): this checkout against another, in the same run.

A PUSH peer sends `--count` messages to a PULL peer, in batches of 50 between `run()`s, one 64-octet frame each
and then three frames each: every message goes through both peer engines (encoder, decoder, socket rules), the
dissector that explains the wire and the event log. Only the public API is used (`add_peer`, `connect`, `send`,
`run`, `events`), so any checkout since the simulator has had it can be the anchor: `--baseline DIR` runs the
same scenario on DIR's backend (e.g. a scratch worktree of the code before a change). Each measurement is a fresh
process, the two sides alternate, and the medians of `--runs` are compared: per shape, and overall as each run's
CPU over both shapes' messages (a run's mean, so that the median is of runs alike: the median of the two shapes'
figures pooled would fall in the gap between them and follow whichever outlier sits at its edge). Last line:

    simulation: ours=... us/msg baseline=... us/msg ratio=...

(without `--baseline` only `ours` is printed).

Usage: python benchmarks/simulation_steps.py [--count N] [--runs R] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {"one frame": (b"x" * 64,), "three frames": (b"key", b"", b"x" * 64)}


def child(count: int) -> None:
    """Runs the scenario in this process (on whatever `zmtplab` the path gives) and prints µs/msg per shape."""
    from zmtplab.peers.simulation import Simulation

    for shape, frames in SHAPES.items():
        sim = Simulation(seed=1)
        sim.add_peer("push", "PUSH")
        sim.add_peer("pull", "PULL")
        sim.connect("push", "pull")
        sim.run()
        before = len(sim.events)
        start = time.process_time()
        for i in range(count):
            sim.send("push", list(frames))
            if i % 50 == 49:
                sim.run()
        sim.run()
        spent = time.process_time() - start
        received = sum(1 for e in sim.events[before:] if e.get("kind") == "peer" and e.get("what") == "recv")
        if received != count:
            raise SystemExit(f"{shape}: {received} of {count} messages received")
        print(f"{shape}\t{spent / count * 1e6:.2f}")


def measure(backend: Path, count: int) -> dict[str, float]:
    """µs/msg of each shape, in a fresh process importing `backend`."""
    env = dict(os.environ, PYTHONPATH=str(backend))
    out = subprocess.run([sys.executable, __file__, "--child", str(count)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return {shape: float(us) for shape, us in (line.split("\t") for line in out.splitlines())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=3000, help="messages of each shape")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--baseline", type=Path, help="another checkout, measured alternately as the anchor")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    sides = {"ours": ROOT / "backend"}
    if args.baseline is not None:
        sides["baseline"] = args.baseline.resolve() / "backend"
    figures: dict[str, dict[str, list[float]]] = {side: {shape: [] for shape in SHAPES} for side in sides}
    for _ in range(args.runs):
        for side, backend in sides.items():
            for shape, us in measure(backend, args.count).items():
                figures[side][shape].append(us)
    medians = {side: {shape: statistics.median(v) for shape, v in shapes.items()} for side, shapes in figures.items()}
    for shape in SHAPES:
        row = "  ".join(f"{side} {medians[side][shape]:.1f} us/msg" for side in sides)
        if "baseline" in sides:
            row += f"  ratio {medians['ours'][shape] / medians['baseline'][shape]:.2f}"
        print(f"{shape:>13}: {row}")
    # (Every shape sends `count` messages: a run's CPU per message over all of them is the mean of its shapes'.)
    overall = {side: statistics.median(map(statistics.fmean, zip(*figures[side].values(), strict=True)))
               for side in sides}
    line = f"simulation: ours={overall['ours']:.1f} us/msg"
    if "baseline" in overall:
        line += f" baseline={overall['baseline']:.1f} us/msg ratio={overall['ours'] / overall['baseline']:.2f}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
