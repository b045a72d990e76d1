"""The capture viewer at 1 GB (issue 22.1): a big capture uploaded to a real `zmtplab serve`, beside tshark
merely reading the same file.

Makes (once, under benchmarks/out/, which git ignores) a capture of real libzmq traffic with the project's
writer (`bigcapture.py`), starts the server on a free port with limits that admit it, uploads it and
measures as a user feels it:

- first rows: from the end of the upload until a page of events answers (the preview);
- fully browsable: from the end of the upload until the progress stream says every element is served
  (detail `all N elements`: listed, filtered and searchable), and the throughput that makes, in MB/s of
  capture; `done` follows when the capture's analysis (the Overview), made by another worker, joins it
  (`--until-done` measures only this far, a line `viewer_bigcapture: ... done=...s done/browsable=...`);
- RSS peak: the largest resident size of the server and of its dissection workers, sampled every 0.2 s;
- index size: the event store's file beside the capture's;
- page latency: 100 events at random offsets of the whole capture (and of one connection);
- search latency: a search over every element and body, for a rare text and for an absent one (the goal),
  and for a text found in nearly every chunk (`--everywhere`: no chunk can be skipped, the whole capture's
  octets are scanned; printed beside the goal, not part of it); and for a text most elements hold
  (`--dense`, millions of matches, each placed in its element and counted): the first answer, which
  the time limit may make partial, and the time until `more=1` requests have searched everything.

The anchor is tshark reading the same file: `tshark -r FILE -T fields -e frame.number` (it dissects
each packet's link, IP and TCP layers and prints one number per frame), timed to /dev/null; the ratio
is ours (fully browsable) over tshark's time. Last line:
`viewer_bigcapture: ours=...s tshark=...s ratio=... first_rows=...s MB/s=... rss_peak=...MB index/capture=...
page_p50=...ms page_max=...ms search=...s search_everywhere=...s search_dense=...s dense_hits=... load=...
goals=met|FAILED`
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bigcapture import ensure, parse_size  # (the generator beside this script)
from serverkit import ServerDidNotStart, shut_down, start_server

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out"


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (the server's dissection workers)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return out


class RssSampler(threading.Thread):
    """Samples the server's and each worker's RSS; `peak` is the largest single process, `total` of all."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0.0
        self.total = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            sizes = [rss_mb(p) for p in [self.pid, *children(self.pid)]]
            self.peak = max(self.peak, *sizes)
            self.total = max(self.total, sum(sizes))


def tshark_seconds(capture: Path, runs: int) -> list[float]:
    tshark = shutil.which("tshark")
    if tshark is None:
        raise SystemExit("tshark is not installed")
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([tshark, "-r", str(capture), "-T", "fields", "-e", "frame.number"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        out.append(time.perf_counter() - t)
    return out


def one_run(capture: Path, args: argparse.Namespace) -> dict[str, float]:
    """Uploads the capture to a fresh server and measures it; returns the figures."""
    data_dir = tempfile.mkdtemp(prefix="zmtplab-viewer-", dir=args.data_dir)
    size = capture.stat().st_size
    try:
        server = start_server({"ZMTPLAB_DATA_DIR": data_dir, "ZMTPLAB_MAX_UPLOAD_BYTES": str(size + (1 << 20)),
                               "ZMTPLAB_MAX_TOTAL_BYTES": str(8 * size),
                               "ZMTPLAB_MAX_EVENTS_PER_CAPTURE": str(10**9)})
    except ServerDidNotStart as exc:
        raise SystemExit(str(exc)) from None
    sampler = RssSampler(server.pid)
    try:
        with httpx.Client(base_url=server.url, timeout=600) as http:
            sampler.start()
            t0 = time.perf_counter()
            with open(capture, "rb") as f:
                r = http.post("/api/captures", files={"file": (capture.name, f, "application/octet-stream")})
            r.raise_for_status()
            capture_id = r.json()["id"]
            uploaded = time.perf_counter()
            first_rows = None
            while first_rows is None:
                page = http.get(f"/api/captures/{capture_id}/events", params={"limit": 100})
                if page.status_code == 200 and page.json()["events"]:
                    first_rows = time.perf_counter() - uploaded
                else:
                    time.sleep(0.05)
            browsable = None
            state = None
            with http.stream("GET", f"/api/captures/{capture_id}/progress") as stream:
                for line in stream.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    message = json.loads(line[5:])
                    state = message["state"]
                    if browsable is None and (message["detail"].startswith("all ") or state == "done"):
                        browsable = time.perf_counter() - uploaded
                    if state in ("done", "error"):
                        break
            done = time.perf_counter() - uploaded
            if state != "done":
                raise SystemExit(f"the dissection failed: {http.get(f'/api/captures/{capture_id}').json()['error']}")
            summary = http.get(f"/api/captures/{capture_id}").json()
            store = Path(data_dir) / "captures" / capture_id / "events.sqlite"
            if args.until_done:
                sampler.stop.set()
                sampler.join()
                return {"upload": uploaded - t0, "first_rows": first_rows, "browsable": browsable, "done": done,
                        "events": summary["events"], "rss_peak": sampler.peak, "size": size}
            rng = random.Random(22)
            pages = []
            total = summary["events"]
            biggest = max(summary["connections"], key=lambda c: c["events"])
            for i in range(args.pages):
                params: dict[str, object] = {"offset": rng.randrange(total - 100), "limit": 100}
                if i % 2:
                    params = {"conn": biggest["conn"], "offset": rng.randrange(biggest["events"] - 100),
                              "limit": 100}
                t = time.perf_counter()
                page = http.get(f"/api/captures/{capture_id}/events", params=params)
                pages.append(time.perf_counter() - t)
                assert page.status_code == 200 and len(page.json()["events"]) == 100, page.text[:200]
            searches = {}
            for name, q in (("rare", args.rare), ("absent", args.absent), ("everywhere", args.everywhere)):
                t = time.perf_counter()
                found = http.get(f"/api/captures/{capture_id}/events", params={"q": q, "limit": 100}).json()
                searches[name] = time.perf_counter() - t
                assert not found["partial"] and found["searched"] == found["elements"] == total, found
                searches[name + "_total"] = found["total"]
            t = time.perf_counter()
            params = {"q": args.dense, "limit": 100}
            found = http.get(f"/api/captures/{capture_id}/events", params=params).json()
            searches["dense_first"] = time.perf_counter() - t
            searches["dense_first_searched"] = found["searched"] / found["elements"]
            while found["partial"]:
                found = http.get(f"/api/captures/{capture_id}/events", params={**params, "more": 1}).json()
            searches["dense"] = time.perf_counter() - t
            searches["dense_total"] = found["total"]
        sampler.stop.set()
        sampler.join()
        return {
            "upload": uploaded - t0, "first_rows": first_rows, "browsable": browsable, "done": done, "events": total,
            "rss_peak": sampler.peak, "rss_total": sampler.total, "store": store.stat().st_size, "size": size,
            "page_p50": statistics.median(pages), "page_max": max(pages), "search_rare": searches["rare"],
            "search_absent": searches["absent"], "rare_total": searches["rare_total"],
            "search_everywhere": searches["everywhere"], "everywhere_total": searches["everywhere_total"],
            **{key: searches[key] for key in ("dense_first", "dense_first_searched", "dense", "dense_total")},
        }
    finally:
        sampler.stop.set()
        shut_down(server, wait=30)
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capture", type=Path, default=None, help="a capture to use (default: made under "
                        "benchmarks/out/)")
    parser.add_argument("--size", default="1G", help="size of the capture made (default 1G)")
    parser.add_argument("--runs", type=int, default=3, help="uploads (and tshark runs); medians are printed")
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--rare", default="sunny 21C", help="a text a few elements hold")
    parser.add_argument("--absent", default="no such text", help="a text no element holds")
    parser.add_argument("--everywhere", default="msg 12345", help="a text nearly every chunk holds (a few elements "
                        "of each bulk.pcapng copy)")
    parser.add_argument("--dense", default="msg", help="a text most elements hold (every message of each bulk.pcapng "
                        "copy)")
    parser.add_argument("--data-dir", default=None, help="where the server stores the upload (default: /tmp)")
    parser.add_argument("--tshark-seconds", type=float, default=None, help="tshark's time measured before (its "
                        "runs are then skipped)")
    parser.add_argument("--until-done", action="store_true", help="measure the upload until `done` only (first "
                        "rows, browsable, done: the analysis's long pole), without pages and searches")
    args = parser.parse_args()
    size = parse_size(args.size)
    capture = args.capture or ensure(OUT / f"viewer-{args.size}.pcapng", size)
    load = os.getloadavg()[0]
    runs = []
    theirs = []
    for _ in range(args.runs):
        if not args.until_done:
            theirs.extend([args.tshark_seconds] if args.tshark_seconds else tshark_seconds(capture, 1))
        runs.append(one_run(capture, args))
        r = runs[-1]
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}), flush=True)

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    if args.until_done:
        print(f"viewer_bigcapture: first_rows={med('first_rows'):.2f}s browsable={med('browsable'):.1f}s "
              f"done={med('done'):.1f}s done/browsable={med('done') / med('browsable'):.2f} "
              f"rss_peak={med('rss_peak'):.0f}MB load={load:.2f}->{os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
        return 0

    ours, tshark = med("browsable"), statistics.median(theirs)
    mb = runs[0]["size"] / 1e6
    figures = {
        "ours": ours, "tshark": tshark, "first_rows": med("first_rows"), "rss_peak": med("rss_peak"),
        "ratio_index": med("store") / runs[0]["size"], "page_p50": med("page_p50") * 1000,
        "page_max": med("page_max") * 1000, "search": max(med("search_rare"), med("search_absent")),
    }
    goals = (ours < 60 and ours < tshark and figures["first_rows"] < 2 and figures["rss_peak"] < 500
             and figures["ratio_index"] <= 1 and figures["page_max"] < 100 and figures["search"] < 1)
    print(f"capture: {capture} ({mb:.1f} MB, {runs[0]['events']} events), load before: {load:.2f}, "
          f"after: {os.getloadavg()[0]:.2f}")
    print(f"tshark -T fields -e frame.number runs: {', '.join(f'{x:.2f}' for x in theirs)}")
    print(f"viewer_bigcapture: ours={ours:.1f}s tshark={tshark:.1f}s ratio={ours / tshark:.2f} "
          f"first_rows={figures['first_rows']:.2f}s MB/s={mb / ours:.1f} rss_peak={figures['rss_peak']:.0f}MB "
          f"index/capture={figures['ratio_index']:.2f} page_p50={figures['page_p50']:.1f}ms "
          f"page_max={figures['page_max']:.1f}ms search={figures['search']:.2f}s "
          f"search_everywhere={med('search_everywhere'):.2f}s search_dense={med('dense'):.2f}s "
          f"dense_hits={runs[0]['dense_total']} (first answer {med('dense_first'):.2f}s, "
          f"{med('dense_first_searched'):.0%} searched) done={med('done'):.1f}s "
          f"load={load:.2f} "
          f"goals={'met' if goals else 'FAILED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
