"""The Spark pipeline against single-process `zmtplab dissect` on a corpus of over 1 GB.

Builds a corpus under a temporary directory (removed afterwards unless --keep):

* one large capture (over 500 MB by default) holding many concurrent connections, their packets
  interleaved as on a busy host: libzmq connections of the shared reference captures replayed
  with rewritten addresses, mostly bulk transfers (`large.pcapng`: 1 MiB messages) with a share
  of dense small-message traffic (`bulk.pcapng`: 200,000 messages in 5.9 MB);
* many smaller captures (test runs): copies of the shared and project captures and small
  merges of the same connections.

Then, in the same run:

1. single-process dissect: `zmtplab dissect --jsonl FILE` (the command's own code, output to
   /dev/null) for every file, one after the other in one process, so no per-file start-up is
   counted (`--processes` also times one process per file);
2. the pipeline: `run_pipeline` on local[*] (every core). Its start-up is timed apart: the JVM and
   Spark session, then one warm-up run over a small capture (the first jobs of a session start
   the Python workers, load the data source and compile the JVM's hot code: a one-time cost a
   long-lived session or cluster pays once);
3. unless `--no-one-core`, the pipeline again on local[1], to show how much of its speed is its
   per-core work and how much the second core (the same code on one core and on two).

It prints MB/s for each, the ratio pipeline / dissect (goal >= 1.5 on 2 cores) and the figure
with start-up included, the pipeline's phases, and the load average (other work on the machine
skews every figure).

`--worker CAPTURE...` measures the pipeline's Python worker instead, per core and without Spark: the
passes' own functions (`source.read_partition`, `stages.connections_partition`,
`sink.write_events_partition`, Parquet files and all, and `analyse.analysis_rows`, the analysis tables)
run one after the other in a fresh process on
the captures' packets sorted as the shuffle sorts them, and their CPU time gives events/s and MB/s per
core, with the share of the events pass spent inside pyarrow's Parquet writing (what no change to our
code can take away while the tables stay the same). `--baseline DIR` times another checkout's `backend` in
the same rounds (alternating, medians of `--runs`), so before and after are measured side by side on a busy
machine; `--profile` prints cProfile's view of the events pass. Last line:
`pipeline_worker: events/s per core=... MB/s per core=...`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
PROJECT = ROOT / "captures"
MB = 1 << 20

_SHB = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
# IDB: Ethernet, snaplen 262144, if_tsresol = 6 (microseconds)
_IDB_BODY = struct.pack("<HHI", 1, 0, 262144) + struct.pack("<HHB3x", 9, 1, 6) + struct.pack("<HH", 0, 0)
_IDB = struct.pack("<II", 1, len(_IDB_BODY) + 12) + _IDB_BODY + struct.pack("<I", len(_IDB_BODY) + 12)


@dataclass
class Conn:
    """The frames (Ethernet, IPv4) of one recorded connection, with their relative times."""

    frames: list[bytes]
    times: list[float]
    size: int


def load_connection(path: Path) -> Conn:
    """All frames of a one-connection capture."""
    from zmtplab.capture.pcapfile import CaptureReader

    frames, times = [], []
    t0 = None
    for frame in CaptureReader(str(path)).frames():
        if t0 is None:
            t0 = frame.ts
        frames.append(frame.data)
        times.append(frame.ts - t0)
    return Conn(frames, times, sum(len(f) for f in frames))


def _readdress(frame: bytes, addr: bytes) -> bytes:
    """The frame with both IPv4 addresses replaced (a loopback capture has 127.0.0.1 at both ends)."""
    if len(frame) >= 34 and frame[12:14] == b"\x08\x00":
        return frame[:26] + addr + addr + frame[34:]
    return frame


def _epb(frame: bytes, ts_us: int) -> bytes:
    pad = -len(frame) % 4
    total = 32 + len(frame) + pad
    return b"".join((struct.pack("<IIIIIII", 6, total, 0, ts_us >> 32, ts_us & 0xFFFFFFFF, len(frame), len(frame)),
                     frame, b"\0" * pad, struct.pack("<I", total)))


def write_merged(path: Path, conns: list[Conn], *, first_id: int, start_ts: float, burst: int = 16) -> int:
    """Writes the connections interleaved (bursts of packets round-robin), each on its own address."""
    clock = int(start_ts * 1e6)
    cursors = [0] * len(conns)
    active = list(range(len(conns)))
    addrs = [bytes([10, (first_id + i) >> 16 & 255, (first_id + i) >> 8 & 255, (first_id + i) & 255])
             for i in range(len(conns))]
    with open(path, "wb") as out:
        out.write(_SHB)
        out.write(_IDB)
        while active:
            still = []
            for i in active:
                c = conns[i]
                j = cursors[i]
                for frame in c.frames[j:j + burst]:
                    clock += 3
                    out.write(_epb(_readdress(frame, addrs[i]), clock))
                cursors[i] = j + burst
                if cursors[i] < len(c.frames):
                    still.append(i)
            active = still
    return path.stat().st_size


def build_corpus(root: Path, total_mb: int, big_mb: int, dense_share: float) -> list[Path]:
    """The corpus: one big interleaved capture and many test-run captures; returns the files."""
    bulk = load_connection(SHARED / "bulk.pcapng")
    large = load_connection(SHARED / "large.pcapng")
    small = [p for p in sorted(PROJECT.glob("*.pcapng")) + sorted(SHARED.glob("*.pcapng"))
             if p.name not in ("bulk.pcapng", "large.pcapng")]
    files: list[Path] = []
    ident = 1

    def mix(target_bytes: int) -> list[Conn]:
        dense = max(0, round(target_bytes * dense_share / bulk.size))
        bulky = max(1, round((target_bytes - dense * bulk.size) / large.size))
        # spread the dense connections evenly among the bulk transfers
        out: list[Conn] = [large] * bulky
        for k in range(dense):
            out.insert((k * len(out)) // max(dense, 1), bulk)
        return out

    big = root / "incident-big.pcapng"
    conns = mix(big_mb * MB)
    write_merged(big, conns, first_id=ident, start_ts=1_700_000_000.0)
    ident += len(conns)
    files.append(big)
    runs = root / "test-runs"
    runs.mkdir()
    used = big.stat().st_size
    n = 0
    while used < total_mb * MB:
        n += 1
        if n % 4 == 0:  # a copy of a recorded scenario or two, as test suites keep them
            for p in small[(n // 4) % len(small)::len(small) // 2 or 1][:2]:
                target = runs / f"run{n:04d}-{p.name}"
                shutil.copyfile(p, target)
                files.append(target)
                used += target.stat().st_size
            continue
        target = runs / f"run{n:04d}.pcapng"
        conns = mix(12 * MB)
        write_merged(target, conns, first_id=ident, start_ts=1_700_000_000.0 + 3600 * n)
        ident += len(conns)
        files.append(target)
        used += target.stat().st_size
    return files


def dissect_processes(files: list[Path]) -> float:
    """Wall time of `zmtplab dissect --jsonl` over every file, one process per file, output discarded."""
    zmtplab = shutil.which("zmtplab", path=str(Path(sys.executable).parent)) or "zmtplab"
    start = time.perf_counter()
    for f in files:
        subprocess.run([zmtplab, "dissect", "--jsonl", str(f)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def dissect_in_process(files: list[Path]) -> tuple[float, int]:
    """`zmtplab dissect --jsonl FILE` for every file, run one after the other in one fresh process
    (the command's own code; its output only counted, in C, not kept), so no per-file start-up is
    counted; (seconds, events)."""
    code = (
        "import contextlib, io, sys, time\n"
        "from zmtplab.cli import main\n"
        "class Sink(io.TextIOBase):\n"
        "    lines = 0\n"
        "    def write(self, s):\n"
        "        Sink.lines += s.count('\\n') if isinstance(s, str) else s.count(b'\\n')\n"
        "        return len(s)\n"
        "    @property\n"
        "    def buffer(self):\n"
        "        return self\n"
        "start = time.perf_counter()\n"
        "with contextlib.redirect_stdout(Sink()):\n"
        "    for path in sys.argv[1:]:\n"
        "        assert main(['dissect', '--jsonl', path]) == 0\n"
        "print(time.perf_counter() - start, Sink.lines)\n"
    )
    res = subprocess.run([sys.executable, "-c", code, *map(str, files)], capture_output=True, text=True, check=True)
    seconds, lines = res.stdout.split()
    return float(seconds), int(lines)


def run_pipeline_timed(files: list[Path], out: Path, master: str | None) -> tuple[float, float, float, dict]:
    """(JVM and session start, warm-up run, pipeline run, summary)."""
    from zmtplab.pipeline.job import clean_output, get_session, run_pipeline
    from zmtplab.pipeline.progress import ProgressBar

    start = time.perf_counter()
    spark = get_session(master)
    spark.sparkContext.setLogLevel("ERROR")
    jvm = time.perf_counter() - start
    start = time.perf_counter()
    run_pipeline([str(SHARED / "push_pull.pcapng")], out, spark=spark)
    clean_output(out)
    warm = time.perf_counter() - start
    start = time.perf_counter()
    summary = run_pipeline([str(f) for f in files], out, spark=spark, progress=ProgressBar(sys.stderr))
    run = time.perf_counter() - start
    spark.stop()
    return jvm, warm, run, summary


# The worker's passes in one process (run in a fresh interpreter, so a baseline checkout can run it too):
# prints one JSON object of CPU seconds per pass, events and capture bytes.
_WORKER_CODE = """
import cProfile, json, os, pstats, sys, tempfile, shutil, time
import pyarrow as pa
import pyarrow.parquet as pq
from zmtplab.pipeline.plan import make_plan
from zmtplab.pipeline.sink import prepare, write_events_partition
from zmtplab.pipeline.source import read_partition
from zmtplab.pipeline.stages import connections_partition
profile = sys.argv[1] == "1"
plan = make_plan(sys.argv[2:])
clock = time.process_time
parquet = [0.0]  # CPU seconds inside pyarrow's Parquet writing (encoding, compression, the files)


def timed(fn):
    def wrapper(*args, **kwargs):
        t = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            parquet[0] += clock() - t
    return wrapper


pq.write_table = timed(pq.write_table)
pq.ParquetWriter.write_table = timed(pq.ParquetWriter.write_table)
pq.ParquetWriter.close = timed(pq.ParquetWriter.close)
t = clock()
packets = pa.Table.from_batches([b for part in plan.partitions for b in read_partition(part)])
read = clock() - t
packets = packets.sort_by([("cap", "ascending"), ("flow", "ascending"), ("frame", "ascending")])
t = clock()
conns = pa.Table.from_batches(list(connections_partition(packets.to_batches(max_chunksize=8192))))
connections = clock() - t
ids, seen = {}, {}
for cap, first in sorted(zip(conns.column("cap").to_pylist(), conns.column("first_frame").to_pylist())):
    ids[(cap, first)] = str(seen.get(cap, 0))
    seen[cap] = seen.get(cap, 0) + 1
run = {"ids": ids, "names": [c.name for c in plan.captures], "paths": [c.path for c in plan.captures]}
out = tempfile.mkdtemp(prefix="zmtplab-worker-")
try:
    staging = prepare(out + "/events", "bench")
    profiler = cProfile.Profile() if profile else None
    t = clock()
    if profiler:
        profiler.enable()
    files = [r for b in write_events_partition(packets.to_batches(max_chunksize=8192), staging=staging, run=run)
             for r in b.to_pylist()]
    if profiler:
        profiler.disable()
    events = clock() - t
    # The analysis tables' pass: over the events pass's records (feed files), or, in a checkout from before
    # those, by dissecting each capture again.
    from zmtplab.pipeline.analyse import analysis_rows
    t = clock()
    for c in plan.readable:
        if any(f["kind"] == "feed" for f in files):
            feeds = [f["path"] for f in files if f["kind"] == "feed" and f["cap"] == c.cap]
            list(analysis_rows((c.name, c.cap, feeds)))
        else:
            list(analysis_rows((c.name, c.path)))
    analysis = clock() - t
finally:
    shutil.rmtree(out)
if profiler:
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
print(json.dumps({"read": read, "connections": connections, "events": events, "analysis": analysis,
                  "parquet": parquet[0],
                  "rows": sum(f["rows"] for f in files if f["kind"] == "events"),
                  "bytes": sum(os.path.getsize(p) for p in sys.argv[2:])}))
"""


def worker_run(captures: list[str], backend: Path | None = None, profile: bool = False) -> dict:
    """One run of the worker's passes over `captures` in a fresh process (`backend`: another checkout's)."""
    env = dict(os.environ)
    if backend is not None:
        env["PYTHONPATH"] = str(backend)
    res = subprocess.run([sys.executable, "-c", _WORKER_CODE, "1" if profile else "0", *captures],
                         capture_output=True, text=True, env=env, check=True)
    if profile:
        print(res.stderr, file=sys.stderr)
    return json.loads(res.stdout.splitlines()[-1])


def worker_main(args: argparse.Namespace) -> int:
    """`--worker`: the pipeline's Python worker per core, optionally beside a baseline checkout's."""
    captures = [str(c) for c in args.worker] or [str(SHARED / "bulk.pcapng")]
    variants: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.baseline is not None:
        variants.append(("baseline", args.baseline / "backend"))
    print(f"load average before: {load()}", flush=True)
    results: dict[str, list[dict]] = {name: [] for name, _b in variants}
    for _round in range(args.runs):
        for name, backend in variants:
            results[name].append(worker_run(captures, backend))
    if args.profile:
        worker_run(captures, None, profile=True)
    print(f"load average after: {load()}", flush=True)
    rates = {}
    for name, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("read", "connections", "events", "analysis")}
        parquet = statistics.median(r.get("parquet", float("nan")) for r in runs)
        rows, size = runs[0]["rows"], runs[0]["bytes"] / MB
        total = sum(med.values())
        rates[name] = rows / total
        print(f"{name:10}: {rows:,} events, {size:.1f} MB; CPU s (medians of {len(runs)}): read {med['read']:.2f}, "
              f"connections {med['connections']:.2f}, events {med['events']:.2f}, analysis {med['analysis']:.2f}; "
              f"per core: "
              f"{rows / total:,.0f} events/s, {size / total:.2f} MB/s (events pass alone {rows / med['events']:,.0f}"
              f" events/s; pyarrow's Parquet writing {parquet:.2f} s of it, {parquet / med['events']:.0%}: a pass "
              f"with nothing else would be {med['events'] / parquet if parquet else float('nan'):.1f}x as fast)",
              flush=True)
    this = rates["this tree"]
    ratio = f" ratio to baseline={this / rates['baseline']:.2f}" if "baseline" in rates else ""
    size = results["this tree"][0]["bytes"] / MB
    per_mb = size * this / results["this tree"][0]["rows"]
    print(f"pipeline_worker: events/s per core={this:,.0f} MB/s per core={per_mb:.2f}{ratio}")
    return 0


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-mb", type=int, default=1100, help="corpus size (default 1100 MB)")
    parser.add_argument("--big-mb", type=int, default=520, help="size of the one large capture (default 520 MB)")
    parser.add_argument("--dense-share", type=float, default=0.25,
                        help="share of bytes that is dense small-message traffic (default 0.25)")
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    parser.add_argument("--workdir", type=Path, default=None, help="where to build the corpus (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the corpus and the pipeline's output")
    parser.add_argument("--no-one-core", action="store_true", help="skip the local[1] run")
    parser.add_argument("--processes", action="store_true",
                        help="also time one `zmtplab dissect` process per file (start-up included)")
    parser.add_argument("--worker", nargs="*", type=Path, default=None, metavar="CAPTURE",
                        help="time the pipeline's Python worker per core without Spark (default capture: bulk.pcapng)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="with --worker: another checkout (DIR/backend) timed in the same rounds")
    parser.add_argument("--runs", type=int, default=3, help="with --worker: rounds (default 3)")
    parser.add_argument("--profile", action="store_true", help="with --worker: cProfile of the events pass")
    args = parser.parse_args()
    if args.worker is not None:
        return worker_main(args)
    work = Path(tempfile.mkdtemp(prefix="zmtplab-bench-", dir=args.workdir))
    try:
        t = time.perf_counter()
        files = build_corpus(work, args.total_mb, args.big_mb, args.dense_share)
        size = sum(f.stat().st_size for f in files)
        big = max(f.stat().st_size for f in files)
        print(f"corpus: {len(files)} captures, {size / MB:.0f} MB (largest {big / MB:.0f} MB), "
              f"built in {time.perf_counter() - t:.0f}s under {work}", flush=True)

        print(f"load average before: {load()}", flush=True)
        single, events = dissect_in_process(files)
        single_rate = size / MB / single
        print(f"dissect  (zmtplab dissect --jsonl, every file in one process): {single:7.1f}s  "
              f"{single_rate:6.2f} MB/s", flush=True)
        print(f"load average: {load()}", flush=True)
        jvm, warm, run, summary = run_pipeline_timed(files, work / "out", args.master)
        pipe_rate = size / MB / run
        startup = jvm + warm
        master = args.master or f"local[*], {os.cpu_count()} cores"
        print(f"pipeline ({master}): {run:7.1f}s  {pipe_rate:6.2f} MB/s  "
              f"({summary['events']:,} events, {summary['connections']} TCP connections); "
              f"start-up {startup:.1f}s apart: JVM {jvm:.1f}s + warm-up run {warm:.1f}s "
              f"({size / MB / (run + startup):.2f} MB/s with it)", flush=True)
        print(f"  phases (s): {json.dumps(summary['timings'])}", flush=True)
        one_rate = None
        if not args.no_one_core:
            shutil.rmtree(work / "out", ignore_errors=True)
            _jvm1, _warm1, run1, _summary1 = run_pipeline_timed(files, work / "out", "local[1]")
            one_rate = size / MB / run1
            print(f"pipeline (local[1], one core):  {run1:7.1f}s  {one_rate:6.2f} MB/s  "
                  f"(two cores / one core: {pipe_rate / one_rate:.2f})", flush=True)
        print(f"load average after: {load()}", flush=True)
        if events != summary["events"]:
            print(f"  WARNING: event counts differ: dissect {events:,}, pipeline {summary['events']:,}")
        if args.processes:
            procs = dissect_processes(files)
            print(f"dissect  (one `zmtplab dissect --jsonl` process per file): {procs:7.1f}s  "
                  f"{size / MB / procs:6.2f} MB/s", flush=True)
        ratio = pipe_rate / single_rate
        scaling = f" two_cores/one_core={pipe_rate / one_rate:.2f}" if one_rate else ""
        print(f"pipeline_scaling: pipeline={pipe_rate:.2f} MB/s dissect={single_rate:.2f} MB/s "
              f"ratio={ratio:.2f}{scaling} (goal >= 1.5 on 2 cores; start-up {startup:.1f}s excluded; "
              f"ratio {size / MB / (run + startup) / single_rate:.2f} with it)")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
