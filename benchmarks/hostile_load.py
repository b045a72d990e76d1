"""Load: hostile clients beside normal users (issue 31). What normal users wait for while one client floods.

Starts `zmtplab serve` (a real process, `serverkit`) and runs phases of `--seconds` each. In every phase
normal users, in a process of their own, do what a class does: `GET /api/health`, the playground's page
(`GET /`), and a session command's round trip (a `pause` on a session's websocket until its `state` comes
back), each every 20 ms; their latencies give p50 and p99. Beside them, in the main process, one hostile
load per phase (loopback only):

- `quiet`: none, the anchor the others are compared with;
- `tap-garbage`, `tap-empty`, `tap-2^63`: one tap (`POST /api/live`) with a viewer reading it (`?batch=1`)
  carries random octets, empty frames after a handshake, or one frame that declares 2^63 octets, as fast as
  the server takes them;
- `fanout`: sessions of a PUB and 23 SUBs, each sent 1 MB, read, and deleted, one after the other;
- `uploads`: five connections uploading for ever: empty multipart parts (four) and data after the form's
  end (one), each started again once answered;
- `idle-conns`: 1,100 connections from another loopback address that never send a request.

    phase        health p50/p99      page p50/p99       command p50/p99     hostile            rss idle/peak/after
    quiet        1.1 / 4.0 ms        ...

The server's RSS is sampled every 0.25 s (its peak), and read again `--settle` seconds after the phase (what
it gave back). `--backend DIR` runs another checkout's server (to compare with the code from before).
The exit status is 1 when health's p99 under a tap flood passes `--p99-goal` ms (100, issue 31).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import socket
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from load_sessions import http_json, rss_kib
from serverkit import REPO, shut_down, start_server

PHASES = ["quiet", "tap-garbage", "tap-empty", "tap-2^63", "fanout", "uploads", "idle-conns"]
TAPS = {"tap-garbage", "tap-empty", "tap-2^63"}
GREETING = b"\xff" + b"\x00" * 8 + b"\x7f\x03\x01NULL" + b"\x00" * 16 + b"\x00" + b"\x00" * 31
READY = b"\x04\x1a\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH"
MIB = 1 << 20


# ---------------------------------------------------------------- normal users (a process of their own)


def percentiles(values: list[float]) -> tuple[float, float]:
    """p50 and p99 of `values`, in ms."""
    if not values:
        return float("nan"), float("nan")
    ordered = sorted(values)
    return 1000 * ordered[len(ordered) // 2], 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def users(base: str, seconds: float, out: mp.Queue) -> None:
    """Health, the page and a session command, each every 20 ms for `seconds`; puts their latencies on `out`."""
    from websockets.sync.client import connect

    stop = time.monotonic() + seconds
    found: dict[str, list[float]] = {"health": [], "page": [], "command": []}
    failed: dict[str, int] = {"health": 0, "page": 0, "command": 0}

    def loop(kind: str, once: Callable[[], None]) -> None:
        while time.monotonic() < stop:
            started = time.perf_counter()
            try:
                once()
                found[kind].append(time.perf_counter() - started)
            except Exception:
                failed[kind] += 1
            time.sleep(0.02)

    def get(path: str) -> None:
        with urllib.request.urlopen(f"http://{base}{path}", timeout=30) as r:
            r.read()

    status, made = http_json("POST", f"http://{base}/api/sessions", {
        "mode": "simulated", "server": {"type": "PUSH"}, "client": {"type": "PULL"}, "autoplay": False})
    session = made.get("id")

    def command() -> None:
        ws.send('{"type":"pause"}')
        while json.loads(ws.recv(timeout=30)).get("type") != "state":
            pass

    threads = [threading.Thread(target=loop, args=("health", lambda: get("/api/health"))),
               threading.Thread(target=loop, args=("page", lambda: get("/")))]
    for t in threads:
        t.start()
    if status == 201:
        with connect(f"ws://{base}/ws/sessions/{session}", max_size=None, open_timeout=30) as ws:
            while json.loads(ws.recv(timeout=30)).get("type") != "state":  # (the events so far, then the state)
                pass
            loop("command", command)
        http_json("DELETE", f"http://{base}/api/sessions/{session}")
    for t in threads:
        t.join()
    out.put((found, failed))


# ---------------------------------------------------------------- hostile loads (threads of this process)


class Hostile:
    """One phase's hostile load: `start()`, then `stop()`; `volume` says how much it sent or did."""

    def __init__(self, server: object, phase: str) -> None:
        self.server = server
        self.base = f"127.0.0.1:{server.port}"  # type: ignore[attr-defined]
        self.phase = phase
        self.done = threading.Event()
        self.threads: list[threading.Thread] = []
        self.sent = 0
        self.rounds = 0
        self.sockets: list[socket.socket] = []
        self.cleanup: list[Callable[[], None]] = []

    @property
    def volume(self) -> str:
        if self.phase == "idle-conns":
            return f"{len(self.sockets)} connections"
        if self.phase == "fanout":
            return f"{self.rounds} sessions"
        if self.phase == "uploads":
            return f"{self.sent / MIB:.0f} MiB in {self.rounds} bodies"
        return f"{self.sent / MIB:.0f} MiB"

    def spawn(self, target: Callable[[], None]) -> None:
        def run() -> None:
            with contextlib.suppress(Exception):
                target()
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.threads.append(t)

    def start(self) -> None:
        if self.phase in TAPS:
            self.tap()
        elif self.phase == "fanout":
            self.spawn(self.fanout)
        elif self.phase == "uploads":
            for n in range(5):
                self.spawn(lambda n=n: self.upload(epilogue=n == 0))
        elif self.phase == "idle-conns":
            for _ in range(1100):
                with contextlib.suppress(OSError):
                    s = socket.socket()
                    s.bind(("127.0.0.2", 0))
                    s.connect(("127.0.0.1", self.server.port))  # type: ignore[attr-defined]
                    self.sockets.append(s)

    def stop(self) -> None:
        self.done.set()
        for s in self.sockets:
            s.close()
        for t in self.threads:
            t.join(30)
        for undo in self.cleanup:
            with contextlib.suppress(Exception):
                undo()

    def tap(self) -> None:
        target = socket.create_server(("127.0.0.1", 0))
        self.sockets.append(target)

        def sink() -> None:
            conn, _ = target.accept()
            with conn:
                while not self.done.is_set() and conn.recv(MIB):
                    pass

        self.spawn(sink)
        _, made = http_json("POST", f"http://{self.base}/api/live",
                            {"source": "tap", "target": f"127.0.0.1:{target.getsockname()[1]}"})
        source = made["id"]
        _, info = http_json("GET", f"http://{self.base}/api/live/{source}")
        listen = int(info["source"]["listen"].rsplit(":", 1)[1])
        self.cleanup.append(lambda: http_json("DELETE", f"http://{self.base}/api/live/{source}"))

        def viewer() -> None:
            from websockets.sync.client import connect

            with connect(f"ws://{self.base}/ws/live/{source}?batch=1", max_size=None, open_timeout=60) as ws:
                while not self.done.is_set():
                    with contextlib.suppress(TimeoutError):
                        ws.recv(timeout=0.5)

        self.spawn(viewer)
        if self.phase == "tap-garbage":
            head, chunk = b"", os.urandom(MIB)
        elif self.phase == "tap-empty":
            head, chunk = GREETING + READY, b"\x00\x00" * (MIB // 2)
        else:
            head, chunk = GREETING + READY + b"\x02" + (1 << 63).to_bytes(8, "big"), b"x" * MIB

        def flood() -> None:
            with socket.create_connection(("127.0.0.1", listen)) as s:
                s.sendall(head)
                while not self.done.is_set():
                    s.sendall(chunk)
                    self.sent += len(chunk)

        self.spawn(flood)

    def fanout(self) -> None:
        from websockets.sync.client import connect

        topology = {"mode": "simulated", "autoplay": True,
                    "nodes": [{"name": "pub", "type": "PUB"}] + [{"name": f"s{i}", "type": "SUB", "subscribe": [""]}
                                                                 for i in range(23)],
                    "links": [{"connect": f"s{i}", "bind": "pub"} for i in range(23)]}
        while not self.done.is_set():
            status, made = http_json("POST", f"http://{self.base}/api/sessions", topology)
            if status != 201:
                time.sleep(0.5)
                continue
            session = made["id"]
            try:
                with connect(f"ws://{self.base}/ws/sessions/{session}?batch=1&log=0&fields=0", max_size=None,
                             open_timeout=60) as ws:
                    ws.send(json.dumps({"type": "speed", "value": 1000}))
                    seen = 0
                    while seen < 23:
                        seen += ws.recv(timeout=60).count('"name":"SUBSCRIBE"')
                    ws.send(json.dumps({"type": "send", "from": "pub", "frames": ["m" * (MIB - 256)]}))
                    messages = 0
                    while messages < 23:
                        text = ws.recv(timeout=60)
                        messages += text.count('"kind":"message"')
                        self.sent += len(text)
            finally:
                http_json("DELETE", f"http://{self.base}/api/sessions/{session}")
            self.rounds += 1

    def upload(self, *, epilogue: bool) -> None:
        form = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.pcapng\"\r\n\r\n"
                + (REPO / "captures" / "req_rep.pcapng").read_bytes() + b"\r\n--b--\r\n")
        first, more = (form, b"e" * MIB) if epilogue else (b"--b\r\n\r\n\r\n", b"--b\r\n\r\n\r\n" * 8192)
        while not self.done.is_set():
            with socket.create_connection(("127.0.0.1", self.server.port)) as s:  # type: ignore[attr-defined]
                s.sendall(b"POST /api/captures HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; "
                          b"boundary=b\r\nTransfer-Encoding: chunked\r\n\r\n")
                piece = first
                with contextlib.suppress(OSError):
                    while not self.done.is_set():
                        s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                        self.sent += len(piece)
                        piece = more
                answer = b""
                with contextlib.suppress(OSError):
                    s.settimeout(10)
                    answer = s.recv(4096)
            self.rounds += 1
            if answer.startswith(b"HTTP/1.1 201"):
                body = answer.split(b"\r\n\r\n", 1)[1]
                with contextlib.suppress(ValueError, KeyError):
                    http_json("DELETE", f"http://{self.base}/api/captures/{json.loads(body)['id']}")


# ---------------------------------------------------------------- one run


def run_phase(server: object, phase: str, seconds: float, settle: float) -> dict:
    pid = server.process.pid  # type: ignore[attr-defined]
    before = rss_kib(pid)
    context = mp.get_context("spawn")
    out: mp.Queue = context.Queue()
    hostile = Hostile(server, phase)
    hostile.start()
    normal = context.Process(target=users, args=(f"127.0.0.1:{server.port}", seconds, out))  # type: ignore[attr-defined]
    normal.start()
    peak = before
    while normal.is_alive():
        peak = max(peak, rss_kib(pid))
        normal.join(0.25)
    found, failed = out.get(timeout=30)
    hostile.stop()
    time.sleep(settle)
    return {"phase": phase, "found": found, "failed": failed, "volume": hostile.volume,
            "rss": (before // 1024, peak // 1024, rss_kib(pid) // 1024)}


def report(result: dict) -> str:
    parts = [f"{result['phase']:<12}"]
    for kind in ("health", "page", "command"):
        p50, p99 = percentiles(result["found"][kind])
        failed = result["failed"][kind]
        parts.append(f"{kind} {p50:6.1f}/{p99:6.1f} ms" + (f" ({failed} failed)" if failed else ""))
    before, peak, after = result["rss"]
    parts.append(f"hostile {result['volume']}")
    parts.append(f"rss {before}/{peak}/{after} MiB")
    return "  ".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="each phase's length")
    ap.add_argument("--settle", type=float, default=4.0, help="seconds after a phase before RSS is read again")
    ap.add_argument("--phases", default=",".join(PHASES), help="which phases, comma-separated")
    ap.add_argument("--runs", type=int, default=1, help="runs of every phase (medians of their p99s)")
    ap.add_argument("--backend", type=Path, default=REPO / "backend", help="the checkout whose server runs")
    ap.add_argument("--p99-goal", type=float, default=100.0, help="health's p99 under a tap flood, ms")
    args = ap.parse_args()
    phases = [p for p in args.phases.split(",") if p]
    with open("/proc/loadavg") as f:
        load_before = f.read().split()[0]
    server = start_server(quiet=bool(os.environ.get("QUIET", "1")), backend=args.backend)
    p99s: dict[str, list[float]] = {p: [] for p in phases}
    try:
        time.sleep(1.0)
        for n in range(args.runs):
            for phase in phases:
                result = run_phase(server, phase, args.seconds, args.settle)
                p99s[phase].append(percentiles(result["found"]["health"])[1])
                print(f"run {n + 1}  {report(result)}", flush=True)
    finally:
        shut_down(server)
    with open("/proc/loadavg") as f:
        load_after = f.read().split()[0]
    quiet = statistics.median(p99s["quiet"]) if p99s.get("quiet") else None
    print(f"health p99, median of {args.runs} run(s) (load {load_before} -> {load_after}):")
    met = True
    for phase, values in p99s.items():
        median = statistics.median(values)
        ratio = f"  {median / quiet:.1f}x quiet" if quiet and phase != "quiet" else ""
        goal = ""
        if phase in TAPS:
            goal = "  goal met" if median < args.p99_goal else f"  goal ({args.p99_goal:g} ms) NOT met"
            met = met and median < args.p99_goal
        print(f"  {phase:<12} {median:7.1f} ms{ratio}{goal}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
