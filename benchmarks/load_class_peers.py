"""Load: the class is the network (issue 34.4). Students' pages as real ZWS peers of the teacher's topology.

Starts `zmtplab serve` (uvicorn, a real process) on a free port, creates a real (`tcp`) topology session whose
teacher is a PUB and whose class is an external SUB node taking `--students` connections, and connects that many
students to the node's `zws` URL (the app's `/zws-{id}-{node}`) with the `websockets` library, each offering
`ZWS2.0` as a browser does: its routing id first, then a subscription to every message (`%x01`). Once every
student has received a warm-up message (so every subscription is in the PUB), the teacher sends `--steps`
messages, one every `--interval` seconds, through the session's websocket as the playground does (`send` from
`teacher`). A message's latency is from the teacher's send to a student's receipt (one process, one monotonic
clock); a message a student never got is lost. With `--watchers N`, N more pages follow the session's stream as a
student's playground does (`/ws/sessions/{id}?watch=1&external=summary`: the lab's own connections, the class's
only counted); `--watch-view all` makes them follow every element of every student's connection instead (the
teacher's view, 200 times over: what a presented class got before `?external=summary`).

Memory: the server's RSS (/proc/PID/status) at idle (after one student joined a first session and left, which
loads the modules that stay), its most while the class is there, a few seconds after every student has left (the
session still open) and after the session is deleted.

Beside it, today's presenter-mode class fan-out (`load_classes.py`: the teacher's step as a JSON state to the same
number of students, who only watch) runs on its own server with the same students and steps.

    load_class_peers: students=200 steps=50 sent=... received=... lost=0 p50=...ms p99=...ms
                      rss_idle=...MiB rss_peak=...MiB rss_left=...MiB rss_ended=...MiB load=... goals=met|FAILED
    load_classes: classes=1 students=200 steps=50 ... p50=...ms p99=...ms ...

The exit status is non-zero when a goal fails: no loss, p99 under `--p99-goal` ms (250), and RSS once the
students left and the session ended within `--rss-slack` MiB (20) of its idle level. While the session is open
it keeps every element of every student's connection (its stream, its exports): that is data, not a leak, and
`rss_left` shows it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from load_sessions import http_json, rss_kib
from serverkit import REPO, ServerDidNotStart, shut_down, start_server

SUBSCRIBE_ALL = b"\x00\x01"  # flags %x00, then a subscription (%x01) to the empty topic


def topology(students: int) -> dict:
    return {"mode": "tcp", "autoplay": True,
            "nodes": [{"name": "teacher", "type": "PUB"},
                      {"name": "class", "type": "SUB", "external": True, "max_connections": students}],
            "links": [{"connect": "class", "bind": "teacher"}]}


async def open_session(base: str, students: int):
    """A class session and its websocket: (id, socket, the class node's zws URL)."""
    import websockets

    status, body = http_json("POST", f"http://{base}/api/sessions", topology(students))
    if status != 201:
        raise RuntimeError(f"POST /api/sessions answered {status}: {body}")
    ws = await websockets.connect(f"ws://{base}/ws/sessions/{body['id']}?log=0&fields=0", max_size=None,
                                  ping_interval=None, compression=None)
    while True:
        raw = json.loads(await ws.recv())
        for msg in raw if isinstance(raw, list) else [raw]:
            if msg.get("type") == "topology":
                node = next(n for n in msg["topology"]["nodes"] if n["name"] == "class")
                return body["id"], ws, node["zws"]


class Student:
    """One page: a ZWS2.0 SUB over the websockets library, noting when each message arrives."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.arrivals: dict[str, float] = {}
        self.ws = None
        self.task: asyncio.Task | None = None
        self.closed: str | None = None

    async def join(self, url: str) -> None:
        import websockets

        self.ws = await websockets.connect(url, subprotocols=["ZWS2.0"], max_size=None, ping_interval=None,
                                           compression=None, open_timeout=60)
        await self.ws.send(b"\x00" + f"student-{self.n}".encode())
        await self.ws.recv()  # (the lab node's routing id)
        await self.ws.send(SUBSCRIBE_ALL)
        self.task = asyncio.create_task(self.read())

    async def read(self) -> None:
        import websockets

        try:
            async for raw in self.ws:
                now = time.monotonic()
                if raw[:1] == b"\x00":
                    self.arrivals.setdefault(raw[1:].decode(errors="replace"), now)
        except websockets.ConnectionClosed as exc:
            if exc.rcvd is None or exc.rcvd.code != 1000:
                self.closed = f"{exc.rcvd.code if exc.rcvd else '?'} {exc.rcvd.reason if exc.rcvd else ''}"

    async def leave(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.task is not None:
            await self.task
        elif self.ws is not None:
            await self.ws.wait_closed()


async def watch(base: str, session: str, counts: list[int], stop: asyncio.Event, view: str) -> None:
    """A student's page following the presented session as the playground does (no fields; the class's
    connections only counted, with `view` "summary")."""
    import websockets

    async with websockets.connect(f"ws://{base}/ws/sessions/{session}?batch=1&log=0&marks=1&fields=0&watch=1"
                                  f"&external={view}",
                                  max_size=None, ping_interval=None, compression=None, open_timeout=60) as ws:
        try:
            while not stop.is_set():
                try:
                    await asyncio.wait_for(ws.recv(), 0.5)
                except TimeoutError:
                    continue
                counts[0] += 1
        except websockets.ConnectionClosed as exc:
            counts[1] += 1 if exc.rcvd is None or exc.rcvd.code != 1000 else 0


async def send(ws, text: str) -> None:
    await ws.send(json.dumps({"type": "send", "from": "teacher", "frames": [text]}))


async def warm_up(ws, students: list[Student], timeout: float) -> bool:
    """Sends warm-up messages until every student got one (every subscription is in the PUB)."""
    deadline = time.monotonic() + timeout
    k = 0
    while time.monotonic() < deadline:
        await send(ws, f"warm {k}")
        k += 1
        await asyncio.sleep(0.25)
        if all(any(key.startswith("warm") for key in s.arrivals) for s in students):
            return True
    return False


async def run(args: argparse.Namespace, base: str, pid: int) -> dict:
    # Idle: after one student joined a first session and left (the first websocket loads modules that stay).
    sid, ws, url = await open_session(base, 1)
    first = Student(0)
    await first.join(url)
    await warm_up(ws, [first], 30)
    await first.leave()
    await ws.close()
    http_json("DELETE", f"http://{base}/api/sessions/{sid}")
    await asyncio.sleep(args.settle)
    rss_idle = rss_kib(pid)

    peak = [rss_idle]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.5):
            peak[0] = max(peak[0], rss_kib(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    sid, ws, url = await open_session(base, args.students)
    students = [Student(n) for n in range(args.students)]
    t_setup = time.monotonic()
    gate = asyncio.Semaphore(25)  # (joins at once: a room opening the page, not one burst)

    async def join(s: Student) -> None:
        import websockets

        async with gate:
            try:
                await s.join(url)
            except (OSError, websockets.WebSocketException) as exc:  # (counted: its messages are lost)
                s.closed = f"join: {exc}"

    await asyncio.gather(*(join(s) for s in students))
    # (with --watchers, as many pages also follow the session's stream, as students' playgrounds do)
    watched = [0, 0]  # websocket messages the watchers got, watchers the server closed
    stop = asyncio.Event()
    watchers = [asyncio.create_task(watch(base, sid, watched, stop, args.watch_view)) for _ in range(args.watchers)]
    joined = [s for s in students if s.task is not None and s.closed is None]
    if not await warm_up(ws, joined, 60):
        raise RuntimeError("the students' subscriptions did not all reach the PUB")
    print(f"{len(joined)} of {args.students} students joined and subscribed in {time.monotonic() - t_setup:.1f} s")

    sent: dict[str, float] = {}
    for step in range(args.steps):
        text = f"step {step}"
        sent[text] = time.monotonic()
        await send(ws, text)
        await asyncio.sleep(args.interval)
    deadline = time.monotonic() + args.drain
    while time.monotonic() < deadline and not all(all(k in s.arrivals for k in sent) for s in students):
        await asyncio.sleep(0.1)

    stop.set()
    await asyncio.gather(*watchers, return_exceptions=True)
    latencies = [1000 * (s.arrivals[k] - t) for s in students for k, t in sent.items() if k in s.arrivals]
    lost = args.students * args.steps - len(latencies)
    closed = [s.closed for s in students if s.closed]
    await asyncio.gather(*(s.leave() for s in students))
    await asyncio.sleep(args.settle)
    rss_left = rss_kib(pid)
    await ws.close()
    http_json("DELETE", f"http://{base}/api/sessions/{sid}")
    await asyncio.sleep(args.settle)
    rss_ended = rss_kib(pid)
    sampling.set()
    sampler.join()
    return {"latencies": latencies, "lost": lost, "closed": closed, "watched": watched,
            "rss_idle": rss_idle, "rss_peak": peak[0],
            "rss_left": rss_left, "rss_ended": rss_ended}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=200)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between the teacher's sends")
    ap.add_argument("--drain", type=float, default=5.0, help="seconds to wait for the last message")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds after the students left before the RSS")
    ap.add_argument("--p99-goal", type=float, default=250.0, help="ms")
    ap.add_argument("--rss-slack", type=float, default=20.0, help="MiB over idle the RSS may stay once it ended")
    ap.add_argument("--watchers", type=int, default=0,
                    help="pages that also follow the session's stream (a student's playground does; 0: the peers only)")
    ap.add_argument("--watch-view", choices=("summary", "all"), default="summary",
                    help="what the watchers follow: the playground's ?external=summary, or every student's elements")
    ap.add_argument("--no-anchor", action="store_true", help="skip today's presenter-mode figure (load_classes.py)")
    args = ap.parse_args()

    try:
        server = start_server({"PYTHONMALLOC": "malloc"})
    except ServerDidNotStart as exc:
        print(f"load_class_peers: {exc}", file=sys.stderr)
        return 2
    try:
        result = asyncio.run(run(args, server.address, server.pid))
    finally:
        shut_down(server)
    lat = result["latencies"]
    p50, p99 = statistics.median(lat) if lat else float("nan"), percentile(lat, 0.99)
    mib = 1024
    load = os.getloadavg()[0]
    goals = (result["lost"] == 0 and p99 < args.p99_goal
             and result["rss_ended"] - result["rss_idle"] <= args.rss_slack * mib)
    print(f"message latency p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {max(lat, default=float('nan')):.1f} ms")
    print(f"server RSS: idle {result['rss_idle'] / mib:.0f} MiB, peak {result['rss_peak'] / mib:.0f} MiB, "
          f"students left {result['rss_left'] / mib:.0f} MiB, session deleted {result['rss_ended'] / mib:.0f} MiB")
    if args.watchers:
        print(f"{args.watchers} watchers of the session's stream got {result['watched'][0]} websocket messages; "
              f"the server closed {result['watched'][1]} of them")
    if result["closed"]:
        print(f"sockets closed early: {result['closed'][:5]}")
    print(f"load_class_peers: students={args.students} watchers={args.watchers}"
          f"{'' if not args.watchers else '/' + args.watch_view} steps={args.steps} "
          f"sent={args.students * args.steps} "
          f"received={len(lat)} lost={result['lost']} p50={p50:.1f}ms p99={p99:.1f}ms "
          f"rss_idle={result['rss_idle'] / mib:.0f}MiB rss_peak={result['rss_peak'] / mib:.0f}MiB "
          f"rss_left={result['rss_left'] / mib:.0f}MiB rss_ended={result['rss_ended'] / mib:.0f}MiB "
          f"load={load:.2f} goals={'met' if goals else 'FAILED'}", flush=True)
    if not args.no_anchor:
        anchor = subprocess.run([sys.executable, str(REPO / "benchmarks" / "load_classes.py"), "--classes", "1",
                                 "--students", str(args.students), "--steps", str(args.steps),
                                 "--interval", str(args.interval), "--settle", str(args.settle)],
                                capture_output=True, text=True, check=False)
        line = next((x for x in anchor.stdout.splitlines() if x.startswith("load_classes:")), None)
        print(line or f"load_classes: did not run ({anchor.returncode}): {anchor.stderr.strip()[-300:]}")
    return 0 if goals else 1


if __name__ == "__main__":
    sys.exit(main())
