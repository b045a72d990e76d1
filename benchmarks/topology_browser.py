"""The playground in Chromium while a 12-node topology session runs 1,000 messages a second (issue 19).

Starts `zmtplab serve` (a real process) on a free port, creates the 12-node simulated topology of
`topology_sessions.py` (4 PUSH, 8 PULL, 16 links; the same body), and opens the playground on it in
Debian's Chromium (Playwright, headless, 1500x950 as the browser tests). A websocket client (another
thread, as another browser would be: events without fields) sets the session's speed to 1000 (played live)
and sends `--rate` messages a second in total from the four PUSHes in turn for `--seconds`, in 10 ms
batches; the page shows them as they come: the diagram (dots, queue bars, who got what), the sequence with
twelve lifelines following the tail, the hex dump.

Two measures over the sending window:

- frames: a requestAnimationFrame loop in the page records every frame's start; the longest gap between
  two frames is the longest frame the page showed (60 Hz: 16.7 ms when nothing is late);
- the Chromium trace (`browser.start_tracing`, devtools.timeline categories): the longest task on the
  renderer's main thread (CrRendererMain), which no frame can be shorter than, in wall time and in the
  thread's own CPU time (`tdur`: the same task on a machine with a core to spare; on a loaded machine the
  wall figures are mostly waiting for a CPU, so the load average is printed too, and `--two-peer` measures
  today's two-peer session under the same load as the baseline); and the CPU time of the tasks that drew a
  frame (median and 99th percentile: the frame's own cost, whatever else the machine runs).

The server's limits that would cut the run short are raised (websocket commands a second, events kept).
Prints

    topology_browser: case=topology rate=1000/s seconds=5 sent=... shown=... frames=... frame_max=...ms
                      frame_p99=...ms task_max=...ms task_cpu_max=...ms frame_cpu_p50/p99=.../...ms
                      main_thread_cpu=...% browser_cpu=...% load=...
                      goal=50ms met|FAILED        (on one line)

and exits non-zero when the longest frame is over `--goal` ms.

Usage: python benchmarks/topology_browser.py [--rate 1000] [--seconds 5] [--goal 50] [--runs N] [--two-peer]
                                            [--trace FILE] [--profile FILE]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serverkit import shut_down, start_server
from topology_sessions import PUSHES, TOPOLOGY, TWO_PEER  # (the bodies of the server's figure)

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "toplevel"]

FRAMES_JS = """() => {
  window.__frames = [];
  const tick = (t) => { window.__frames.push(t); requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as res:
        return json.loads(res.read())


def sender(ws_url: str, senders: list[str], rate: int, seconds: float, ready: threading.Event,
           window: dict[str, float]) -> None:
    """Another client of the session: speed 1000, then `rate` sends a second from `senders` in turn."""
    from websockets.sync.client import connect

    with connect(ws_url, max_size=None) as ws:
        ws.send(json.dumps({"type": "speed", "value": 1000}))
        stop = threading.Event()

        def drain() -> None:  # (what the session sends this client: read and dropped)
            while not stop.is_set():
                try:
                    ws.recv(timeout=0.2)
                except TimeoutError:
                    continue
                except Exception:
                    return

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        ready.wait()
        per_batch = max(1, rate // 100)
        total = int(rate * seconds)
        window["start"] = time.monotonic()
        for n in range(0, total, per_batch):
            for i in range(n, min(total, n + per_batch)):
                ws.send(json.dumps({"type": "send", "from": senders[i % len(senders)], "frames": [f"message {i}"]}))
            delay = window["start"] + (n + per_batch) / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        window["end"] = time.monotonic()
        window["sent"] = total
        time.sleep(0.5)
        stop.set()


def main_tasks(trace: dict[str, Any]) -> tuple[float, float, float, float, list[float]]:
    """The renderer main thread's top-level tasks while the page counted frames (its first to last tick; not
    the tracing's own start): the longest in wall time (ms), the longest in its thread's CPU time (ms: what it
    would take on a machine with nothing else to run), the share of one core they used, and the share of one
    core every thread of the browser's processes used (compositor, raster, GPU process: the rest of drawing), and
    the CPU time (ms, sorted) of each task that drew a frame (ran requestAnimationFrame callbacks)."""
    events = trace.get("traceEvents", [])
    main = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
            and e.get("args", {}).get("name") == "CrRendererMain"}
    ticks = [e["ts"] for e in events if e.get("ph") == "X" and e.get("name") == "FunctionCall"
             and e.get("args", {}).get("data", {}).get("functionName") == "tick"]
    start, end = (min(ticks), max(ticks)) if ticks else (float("-inf"), float("inf"))
    top = [e for e in events if e.get("ph") == "X" and e.get("name") in ("RunTask", "ThreadPool_RunTask")
           and "dur" in e and start <= e["ts"] <= end]
    tasks = [e for e in top if e["name"] == "RunTask" and (e.get("pid"), e.get("tid")) in main]
    if not tasks:
        return 0.0, 0.0, 0.0, 0.0, []
    tasks.sort(key=lambda e: e["ts"])
    starts = [e["ts"] for e in tasks]
    drew: dict[int, float] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("name") == "FireAnimationFrame" and (e.get("pid"), e.get("tid")) in main:
            i = bisect.bisect_right(starts, e["ts"]) - 1
            if i >= 0 and e["ts"] <= tasks[i]["ts"] + tasks[i]["dur"]:
                drew[i] = tasks[i].get("tdur", tasks[i]["dur"]) / 1000
    span = max(1, max(e["ts"] + e["dur"] for e in tasks) - min(e["ts"] for e in tasks))
    cpu = [e.get("tdur", e["dur"]) for e in tasks]
    everything = sum(e.get("tdur", e["dur"]) for e in top)
    longest = max(e["dur"] for e in tasks) / 1000
    return longest, max(cpu) / 1000, sum(cpu) / span, everything / span, sorted(drew.values())


def hot_functions(profile: dict[str, Any], top: int = 20) -> list[str]:
    """The functions a CPU profile saw running most (self time), as lines: ms, function, file:line."""
    nodes = {n["id"]: n for n in profile.get("nodes", [])}
    deltas = profile.get("timeDeltas", [])
    self_us: dict[tuple[str, str, int], float] = {}
    for node_id, dt in zip(profile.get("samples", [])[1:], deltas[1:], strict=False):
        frame = nodes[node_id]["callFrame"]
        key = (frame["functionName"] or "(anonymous)", frame["url"].rsplit("/", 1)[-1], frame["lineNumber"] + 1)
        self_us[key] = self_us.get(key, 0.0) + dt
    hot = sorted(self_us.items(), key=lambda kv: -kv[1])[:top]
    return [f"  {us / 1000:8.1f} ms  {name}  {url}:{line}" for (name, url, line), us in hot]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000, help="messages a second, in total")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--goal", type=float, default=50.0, help="the longest frame accepted, ms")
    parser.add_argument("--runs", type=int, default=1, help="measure this many times (a shared machine's load"
                        " varies: each run prints its own line and the load average)")
    parser.add_argument("--trace", type=Path, help="also write the Chromium trace here")
    parser.add_argument("--profile", type=Path, help="also write the page's JavaScript CPU profile (.cpuprofile, as"
                        " DevTools opens it) here, and print the functions that took the most time")
    parser.add_argument("--two-peer", action="store_true", help="the same load on today's two-peer session (PUSH ->"
                        " PULL, two lifelines, no diagram): the baseline on this machine")
    args = parser.parse_args(argv)
    met = [run(args) for _ in range(max(1, args.runs))]
    if len(met) > 1:
        print(f"topology_browser: {sum(met)} of {len(met)} runs met the goal")
    return 0 if all(met) else 1


def run(args: argparse.Namespace) -> bool:
    """One measure (see the module docstring); prints its line and says whether the longest frame met the goal."""
    from playwright.sync_api import sync_playwright

    server = start_server({"ZMTPLAB_WS_RATE": str(4 * args.rate), "ZMTPLAB_WS_BURST": str(4 * args.rate),
                           "ZMTPLAB_SESSION_MAX_EVENTS": "10000000", "ZMTPLAB_SESSION_MAX_MESSAGES": "10000000"},
                          quiet=True)
    port, base = server.port, server.url
    try:
        body, senders = (TWO_PEER, ["server"]) if args.two_peer else (TOPOLOGY, PUSHES)
        sid = post(f"{base}/api/sessions", {"mode": "simulated", "autoplay": True, **body})["id"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 950})
            page.goto(f"{base}/index.html?session={sid}")
            if args.two_peer:
                page.wait_for_selector("#sequence .seq-row[data-index='3']", timeout=20000)
            else:
                page.wait_for_selector("#topology:not([hidden]) .topo-node", timeout=20000)
                page.wait_for_function("() => [...document.querySelectorAll('#topology .topo-edge')]"
                                       ".filter((e) => e.getAttribute('data-conn')).length === 16", timeout=20000)
            ready = threading.Event()
            window: dict[str, float] = {}
            ws_url = f"ws://127.0.0.1:{port}/ws/sessions/{sid}?batch=1&log=0&fields=0"  # (as the page's socket asks)
            thread = threading.Thread(target=sender, args=(ws_url, senders, args.rate, args.seconds, ready, window),
                                      daemon=True)
            thread.start()
            time.sleep(0.5)
            browser.start_tracing(page=page, categories=CATEGORIES)
            cdp = page.context.new_cdp_session(page) if args.profile else None
            if cdp:
                cdp.send("Profiler.enable")
                cdp.send("Profiler.setSamplingInterval", {"interval": 200})
                cdp.send("Profiler.start")
            page.evaluate(FRAMES_JS)
            page_t0 = page.evaluate("performance.now()")
            ready.set()
            thread.join(args.seconds + 30)
            page.wait_for_timeout(300)
            page_t1 = page.evaluate("performance.now()")
            frames = page.evaluate("window.__frames")
            if cdp:
                profile = cdp.send("Profiler.stop")["profile"]
                args.profile.write_text(json.dumps(profile))
            trace = json.loads(browser.stop_tracing())
            if args.trace:
                args.trace.write_text(json.dumps(trace))
            shown = page.evaluate("""() => [...document.querySelectorAll('#topology .topo-got-row')]
              .reduce((n, r) => n + Number(r.dataset.count || 0), 0)""") if not args.two_peer else None
            page.screenshot(path=str(Path(tempfile.gettempdir()) / "topology_browser.png"))
            browser.close()
    finally:
        shut_down(server)

    frames = [t for t in frames if page_t0 <= t <= page_t1]
    gaps = sorted(b - a for a, b in itertools.pairwise(frames))
    frame_max = gaps[-1] if gaps else float("inf")
    frame_p99 = gaps[int(0.99 * (len(gaps) - 1))] if gaps else float("inf")
    task_max, task_cpu_max, main_busy, browser_busy, frame_cpu = main_tasks(trace)
    pick = (lambda q: frame_cpu[int(q * (len(frame_cpu) - 1))]) if frame_cpu else (lambda q: float("nan"))
    met = frame_max <= args.goal
    case = "two-peer" if args.two_peer else "topology"
    print(f"topology_browser: case={case} rate={args.rate}/s seconds={args.seconds:g} "
          f"sent={int(window.get('sent', 0))} shown={shown} frames={len(frames)} frame_max={frame_max:.1f}ms "
          f"frame_p99={frame_p99:.1f}ms "
          f"task_max={task_max:.1f}ms task_cpu_max={task_cpu_max:.1f}ms "
          f"frame_cpu_p50/p99={pick(0.5):.1f}/{pick(0.99):.1f}ms main_thread_cpu={100 * main_busy:.0f}% "
          f"browser_cpu={100 * browser_busy:.0f}% "
          f"load={os.getloadavg()[0]:.1f} goal={args.goal:g}ms {'met' if met else 'FAILED'}")
    if args.profile:
        for line in hot_functions(profile):
            print(line)
    return met


if __name__ == "__main__":
    sys.exit(main())
