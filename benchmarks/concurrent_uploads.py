"""Uploads on one server: what its one process does with several captures arriving at once (docs/operations.md,
"One process").

Starts `zmtplab serve` (a real process, its data in a temporary directory), uploads one capture alone and
waits until it is dissected, then uploads `--count` copies of it at once (from as many threads, as many
browsers would) and waits until every one is. Its anchor is the lone upload in the same run: the batch against
`--count` times it says how the dissection workers (`ZMTPLAB_DISSECT_WORKERS`, 2) share the work, and the health
route's latency during the batch, what the server's event loop has left for everyone else.

    concurrent_uploads: capture=bulk.pcapng (5.7 MiB) alone=1.9s batch(6)=6.1s per-capture p50=3.4s max=6.1s
                        ratio=0.54 (batch / 6 x alone) health p50=2ms max=40ms rss=... load=...
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from serverkit import REPO, shut_down, start_server

sys.path.insert(0, str(REPO / "tests"))
from installkit import dissected, upload  # (the tests' HTTP client: one way to upload and wait)


def rss_mib(pid: int) -> float:
    """The resident memory of a process and its children (the dissection workers), in MiB."""
    total = 0
    pids = [pid, *(int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]
    for one in pids:
        for line in Path(f"/proc/{one}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capture", default=str(REPO.parent / "shared" / "captures" / "bulk.pcapng"))
    ap.add_argument("--count", type=int, default=6, help="captures uploaded at once")
    ap.add_argument("--workers", type=int, default=None, help="ZMTPLAB_DISSECT_WORKERS (default: the server's)")
    args = ap.parse_args()
    capture = Path(args.capture)
    env = {"ZMTPLAB_MAX_CAPTURES_PER_CLIENT": str(args.count + 5)}
    if args.workers:
        env["ZMTPLAB_DISSECT_WORKERS"] = str(args.workers)
    server = start_server(env, quiet=True)
    try:
        started = time.monotonic()
        dissected(server.url, upload(server.url, capture), within=600)
        alone = time.monotonic() - started

        done_at: list[float] = []
        health: list[float] = []
        peak = [rss_mib(server.pid)]
        finished = threading.Event()

        def one() -> None:
            dissected(server.url, upload(server.url, capture), within=1200)
            done_at.append(time.monotonic() - started)

        def watch() -> None:
            while not finished.is_set():
                t0 = time.monotonic()
                with urllib.request.urlopen(f"{server.url}/api/health", timeout=30) as res:
                    res.read()
                health.append((time.monotonic() - t0) * 1000)
                peak.append(rss_mib(server.pid))
                finished.wait(0.1)

        watcher = threading.Thread(target=watch, daemon=True)
        threads = [threading.Thread(target=one, name=f"upload-{uuid.uuid4().hex[:4]}") for _ in range(args.count)]
        started = time.monotonic()
        watcher.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        batch = time.monotonic() - started
        finished.set()
        watcher.join()
        result = {
            "capture": capture.name, "mib": round(capture.stat().st_size / (1 << 20), 1), "count": args.count,
            "alone_s": round(alone, 2), "batch_s": round(batch, 2),
            "per_capture_p50_s": round(statistics.median(done_at), 2), "per_capture_max_s": round(max(done_at), 2),
            "ratio": round(batch / (args.count * alone), 2),
            "health_p50_ms": round(statistics.median(health), 1), "health_max_ms": round(max(health), 1),
            "rss_peak_mib": round(max(peak)), "load": os.getloadavg()[0],
        }
    finally:
        shut_down(server)
    print(f"concurrent_uploads: capture={result['capture']} ({result['mib']} MiB) alone={result['alone_s']}s "
          f"batch({args.count})={result['batch_s']}s per-capture p50={result['per_capture_p50_s']}s "
          f"max={result['per_capture_max_s']}s ratio={result['ratio']} (batch / {args.count} x alone) "
          f"health p50={result['health_p50_ms']}ms max={result['health_max_ms']}ms "
          f"rss_peak={result['rss_peak_mib']}MiB "
          f"load={result['load']:.1f}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
