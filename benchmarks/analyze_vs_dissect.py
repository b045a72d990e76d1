"""Times `zmtplab analyze --json` against `zmtplab dissect --jsonl --no-fields` on the same capture.

The anchor is our own fastest dissection: analyze reads the same packets through the same engine,
then follows every message across connections (flows, per-socket counts, subscriptions) and
diagnoses. Both run as whole processes, output to /dev/null, alternating; the medians are compared
and the load average is printed beside them (the machines are shared). Default capture:
shared/captures/bulk.pcapng (200,000 messages). Last line:
`analyze_vs_dissect: analyze=...s dissect=...s ratio=...` (ratio = analyze / dissect; goal <= 1.5).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from dissect_vs_tshark import DEFAULT_CAPTURE, timed  # (the scripts run from benchmarks/: a sibling module)


def main() -> int:
    """Runs both commands `--runs` times each and prints the medians and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", nargs="?", type=Path, default=DEFAULT_CAPTURE)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    zmtplab = shutil.which("zmtplab", path=str(Path(sys.executable).parent)) or "zmtplab"
    analyze_cmd = [zmtplab, "analyze", "--json", str(args.capture)]
    dissect_cmd = [zmtplab, "dissect", "--jsonl", "--no-fields", str(args.capture)]
    found = json.loads(subprocess.run(analyze_cmd, capture_output=True, check=True).stdout)
    messages = sum(sum(c["messages"].values()) for c in found["connections"])
    timed(dissect_cmd)  # warm the page cache and the imports
    ours, anchor = [], []
    load_before = os.getloadavg()[0]
    for _ in range(args.runs):
        ours.append(timed(analyze_cmd))
        anchor.append(timed(dissect_cmd))
    a, d = statistics.median(ours), statistics.median(anchor)
    size = args.capture.stat().st_size / 1e6
    print(f"capture: {args.capture.name} ({size:.1f} MB), {messages} messages, "
          f"{len(found['connections'])} connections, {len(found['findings'])} findings")
    print(f"analyze runs: {', '.join(f'{x:.3f}' for x in ours)}")
    print(f"dissect runs: {', '.join(f'{x:.3f}' for x in anchor)}")
    print(f"load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after ({os.cpu_count()} CPUs)")
    print(f"analyze_vs_dissect: analyze={a:.3f}s dissect={d:.3f}s ratio={a / d:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
