"""Times `zmtplab dissect --jsonl --no-fields` against tshark's payload dump on the same capture.

tshark only prints `tcp.stream` and `tcp.payload` (it decodes no ZMTP: Debian 12's tshark has
no ZMTP dissector); we reassemble TCP and decode every ZMTP element. Both run as whole
processes, output to /dev/null, alternating, and the medians are compared. Last line:
`dissect_vs_tshark: ours=...s tshark=...s ratio=...` (ratio = ours / tshark; goal <= 1.0).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CAPTURE = ROOT.parent / "shared" / "captures" / "bulk.pcapng"


def timed(cmd: list[str]) -> float:
    """Wall time of one run of `cmd` with its output thrown away."""
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> int:
    """Runs both tools `--runs` times each and prints the medians and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", nargs="?", type=Path, default=DEFAULT_CAPTURE)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    zmtplab = shutil.which("zmtplab", path=str(Path(sys.executable).parent)) or "zmtplab"
    tshark = shutil.which("tshark")
    if tshark is None:
        print("tshark is not installed (make test installs it)", file=sys.stderr)
        return 2
    ours_cmd = [zmtplab, "dissect", "--jsonl", "--no-fields", str(args.capture)]
    tshark_cmd = [tshark, "-r", str(args.capture), "-T", "fields", "-e", "tcp.stream", "-e", "tcp.payload"]
    events = subprocess.run(ours_cmd, capture_output=True, check=True).stdout.count(b"\n")
    ours, theirs = [], []
    timed(ours_cmd), timed(tshark_cmd)  # warm the page cache and both programs' imports
    for _ in range(args.runs):
        ours.append(timed(ours_cmd))
        theirs.append(timed(tshark_cmd))
    o, t = statistics.median(ours), statistics.median(theirs)
    size = args.capture.stat().st_size / 1e6
    print(f"capture: {args.capture.name} ({size:.1f} MB), {events} events from zmtplab")
    print(f"zmtplab dissect runs: {', '.join(f'{x:.3f}' for x in ours)}")
    print(f"tshark payload runs:  {', '.join(f'{x:.3f}' for x in theirs)}")
    print(f"dissect_vs_tshark: ours={o:.3f}s tshark={t:.3f}s ratio={o / t:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
