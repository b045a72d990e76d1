"""Load: many websocket clients, each in its own simulated PUSH/PULL session, sending at a steady rate.

Starts `zmtplab serve` (uvicorn, a real process) on a free port, then `--clients` websocket
clients (the `websockets` library, asyncio; spread over `--procs` client processes so that
the clients' own JSON parsing does not distort the figures). Each client creates its own
session (`POST /api/sessions`, simulated, server PUSH, client PULL), waits for the handshake,
and sends `--rate` messages a second for `--duration` seconds from the PUSH side, on a fixed
schedule. Every message carries its client and sequence number; the client counts the
`message` events that come back (the PULL side's direction, s2c) and measures the time from
its send to the event's arrival.

Pacing: a simulated session plays one protocol element every `sim_step_interval / speed`
seconds (0.3 s at speed 1, for people to follow). Here each client first sends
`{"type": "speed", "value": 1000}` (the fastest the public API allows, 0.3 ms an element), so
the session delivers as fast as traffic arrives; the server runs with its defaults except the
session count limits (`ZMTPLAB_MAX_SESSIONS`, `ZMTPLAB_MAX_SESSIONS_PER_CLIENT`, raised to
`--clients`, and `ZMTPLAB_SESSION_RESERVE`, 0, since every client comes from 127.0.0.1) and the websocket burst
allowance (`ZMTPLAB_WS_BURST`, `--burst`: a client process the OS starved for a moment catches up on
its schedule in a burst; the rate stays the default 200 commands a second). The clients
connect with `?batch=1&log=0&fields=0`, as the page does (it fetches an element's fields when it is
opened).

Where the load runs: the clients share the machine with the server, as they would not in a class (there
they are browsers on other machines). `--pin` confines the client processes to every CPU but the first,
which leaves that one to the server (not pinned itself); by default nothing is confined, as in the
README's figures.

`--burner N` starts N busy processes (a pure-Python loop each, at normal priority) before the sessions are
set up and stops them once the run is over: the other work of a shared machine, made repeatable (issue 22
asks for p99 under 100 ms with one burner on the box).

The server's RSS is sampled from /proc/PID/status every half second; its CPU time (and the client
processes') is reported per message sent, with the machine's load average: the machine runs the
clients too, and anything else running on it shows in the latencies.

The anchor: after the messages (and `--drain`), the same clients send `{"type": "pause"}` at the same rate
for `--floor` seconds (10; 0 skips it). A pause goes through everything a message does but the simulation
(the socket, uvicorn, Starlette, the command's validation, the session's lock and state message): the
server's CPU per pause is the floor the websocket path puts under any command, printed beside the CPU per
message with their ratio, and the difference is what the session and its simulation cost. The summary ends
with

    load_sessions: clients=100 sent=... delivered=... lost=0 p50=...ms p99=...ms rss_max=...MiB
                   server_cpu=...us/msg floor=...us/cmd ratio=... load=... burners=N clients_pinned=yes|no
                   goals=met|FAILED   (on one line)

and the exit status is non-zero when a goal fails: no loss, p99 under `--p99-goal` ms (100),
RSS under `--rss-goal` MiB (1024), server CPU per message at most `--cpu-goal` µs (40, issue 22).

Usage: python benchmarks/load_sessions.py [--clients 100] [--rate 100] [--duration 60] [--procs 2] [--pin]
                                         [--burner N] [--floor 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
import urllib.request

from serverkit import REPO, ServerDidNotStart, shut_down, start_server

sys.path.insert(0, str(REPO / "backend"))

try:
    import orjson

    loads = orjson.loads
except ImportError:  # pragma: no cover - orjson is a dependency of the project
    loads = json.loads


PAUSE = json.dumps({"type": "pause"})


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_times(pid: int) -> tuple[float, float]:
    """User and system CPU time the process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far."""
    return sum(cpu_times(pid))


def http_json(method: str, url: str, body: dict | None = None, timeout: float = 30.0) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


# ---------------------------------------------------------------- one client process


class Client:
    def __init__(self, cid: int, base: str, rate: float) -> None:
        self.cid = cid
        self.base = base
        self.rate = rate
        self.sent: dict[int, float] = {}
        self.latencies: list[float] = []
        self.delivered = 0
        self.unexpected = 0
        self.errors: list[str] = []
        self.closed: str | None = None
        self.ready = asyncio.Event()
        self.ws = None
        self.prefix = f"{cid}:".encode()

    async def open(self) -> None:
        import websockets

        status, body = await asyncio.to_thread(
            http_json, "POST", f"http://{self.base}/api/sessions",
            {"mode": "simulated", "server": {"type": "PUSH"}, "client": {"type": "PULL"}})
        if status != 201:
            raise RuntimeError(f"client {self.cid}: POST /api/sessions answered {status}: {body}")
        self.ws = await websockets.connect(f"ws://{self.base}/ws/sessions/{body['id']}?batch=1&log=0&fields=0",
                                           max_size=None, ping_interval=None, compression=None)
        await self.ws.send(json.dumps({"type": "speed", "value": 1000}))
        self.reader = asyncio.create_task(self.read())

    def handle(self, msg: dict, now: float) -> None:
        kind = msg.get("type")
        if kind == "event":
            ev = msg["event"]
            if ev.get("kind") == "message" and ev.get("dir") == "s2c":
                body = bytes.fromhex(ev["frames"][0])
                if body.startswith(self.prefix):
                    seq = int(body[len(self.prefix):].split(b":", 1)[0])
                    t0 = self.sent.pop(seq, None)
                    if t0 is None:
                        self.unexpected += 1
                    else:
                        self.delivered += 1
                        self.latencies.append(now - t0)
            elif ev.get("kind") == "command" and ev.get("name") == "READY" and ev.get("dir") == "s2c":
                self.ready.set()
        elif kind == "error":
            self.errors.append(str(msg.get("detail")))

    async def read(self) -> None:
        import websockets

        assert self.ws is not None
        try:
            async for raw in self.ws:
                now = time.monotonic()
                msg = loads(raw)
                if isinstance(msg, list):  # a batch of messages in one websocket frame
                    for m in msg:
                        self.handle(m, now)
                else:
                    self.handle(msg, now)
        except websockets.ConnectionClosed as exc:
            self.closed = f"{exc.rcvd.code if exc.rcvd else '?'} {exc.rcvd.reason if exc.rcvd else ''}"
        else:
            self.closed = "closed"

    async def run(self, start: float, duration: float) -> None:
        assert self.ws is not None
        count = int(duration * self.rate)
        pad = "x" * 16
        for seq in range(count):
            due = start + seq / self.rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self.sent[seq] = time.monotonic()
            await self.ws.send(f'{{"type":"send","from":"server","frames":["{self.cid}:{seq}:{pad}"]}}')
        self.count = count

    async def pauses(self, start: float, duration: float) -> int:
        """The floor's commands: a pause at the same rate and schedule (see the module docstring)."""
        assert self.ws is not None
        count = int(duration * self.rate)
        for seq in range(count):
            delay = start + seq / self.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await self.ws.send(PAUSE)
        return count


def client_process(ids: list[int], base: str, rate: float, duration: float, drain: float, floor: float,
                   ready_q: mp.Queue, go_q: mp.Queue, result_q: mp.Queue, cpus: set[int] | None = None) -> None:
    if cpus:
        os.sched_setaffinity(0, cpus)  # (see "Where the load runs" in the module docstring)
    try:
        import uvloop

        run = uvloop.run
    except ImportError:  # pragma: no cover
        run = asyncio.run

    async def main() -> dict:
        clients = [Client(cid, base, rate) for cid in ids]
        for i in range(0, len(clients), 10):
            await asyncio.gather(*(c.open() for c in clients[i:i + 10]))
        await asyncio.wait_for(asyncio.gather(*(c.ready.wait() for c in clients)), 60)
        ready_q.put(len(clients))
        start_wall = await asyncio.to_thread(go_q.get)
        start = time.monotonic() + (start_wall - time.time())
        cpu0 = time.process_time()
        await asyncio.gather(*(c.run(start, duration) for c in clients))
        deadline = time.monotonic() + drain
        while time.monotonic() < deadline and any(c.sent for c in clients):
            await asyncio.sleep(0.1)
        cpu = time.process_time() - cpu0
        result = {
            "cpu": cpu,
            "sent": sum(c.count for c in clients),
            "delivered": sum(c.delivered for c in clients),
            "unexpected": sum(c.unexpected for c in clients),
            "latencies": [x for c in clients for x in c.latencies],
            "errors": [e for c in clients for e in c.errors[:3]][:20],
            "closed_early": [c.closed for c in clients if c.closed and c.closed != "closed"][:20],
        }
        if floor > 0:  # (the anchor: see the module docstring)
            result_q.put(result)
            start_wall = await asyncio.to_thread(go_q.get)
            start = time.monotonic() + (start_wall - time.time())
            counts = await asyncio.gather(*(c.pauses(start, floor) for c in clients))
            result = {"commands": sum(counts)}
        for c in clients:
            await c.ws.close()
        return result

    try:
        result_q.put(run(main()))
    except BaseException as exc:  # report, never hang the parent
        result_q.put({"failure": f"{type(exc).__name__}: {exc}"})


def _drain(q: mp.Queue) -> list[dict]:
    """What a queue holds now (a client process that failed put its failure there)."""
    out = []
    while True:
        try:
            out.append(q.get(timeout=0.5))
        except Exception:
            return out


def burn() -> None:
    """A background CPU burner (see `--burner`): busy until terminated."""
    n = 0
    while True:
        n = (n * 1103515245 + 12345) & 0x7FFFFFFF


# ---------------------------------------------------------------- the run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--rate", type=float, default=100.0, help="messages per second per client")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of sending")
    ap.add_argument("--procs", type=int, default=2, help="client processes")
    ap.add_argument("--pin", action="store_true",
                    help="confine the client processes to every CPU but the first, leaving that one to the "
                         "server (nothing is confined on a machine with one CPU)")
    ap.add_argument("--drain", type=float, default=15.0, help="seconds to wait for the last events")
    ap.add_argument("--burst", type=int, default=1000,
                    help="the server's websocket burst allowance (ZMTPLAB_WS_BURST): a client process the OS "
                         "starved for a while catches up on its schedule in a burst; the rate limit stays 200/s")
    ap.add_argument("--burner", type=int, default=0, metavar="N",
                    help="N busy processes on the machine for the whole run (other work on a shared box)")
    ap.add_argument("--floor", type=float, default=10.0,
                    help="seconds of pause commands after the run: the websocket path's CPU per command (0: skip)")
    ap.add_argument("--p99-goal", type=float, default=100.0, help="ms")
    ap.add_argument("--cpu-goal", type=float, default=40.0, help="server CPU per message, µs")
    ap.add_argument("--rss-goal", type=float, default=1024.0, help="MiB")
    args = ap.parse_args()

    try:
        # (every client comes from 127.0.0.1: no session kept back for addresses that run none)
        server = start_server({"ZMTPLAB_MAX_SESSIONS": str(args.clients),
                               "ZMTPLAB_MAX_SESSIONS_PER_CLIENT": str(args.clients),
                               "ZMTPLAB_SESSION_RESERVE": "0",
                               "ZMTPLAB_WS_BURST": str(args.burst)})
    except ServerDidNotStart as exc:
        print(f"load_sessions: {exc}", file=sys.stderr)
        return 2
    base = server.address
    procs: list[mp.Process] = []
    ctx = mp.get_context("spawn")
    burners = [ctx.Process(target=burn, daemon=True) for _ in range(max(0, args.burner))]
    for b in burners:
        b.start()
    try:
        rss_idle = rss_kib(server.pid)

        ready_q, go_q, result_q = ctx.Queue(), ctx.Queue(), ctx.Queue()
        available = sorted(os.sched_getaffinity(0))
        client_cpus = set(available[1:]) if args.pin and len(available) > 1 else None
        n = max(1, min(args.procs, args.clients))
        shares = [list(range(i, args.clients, n)) for i in range(n)]
        for ids in shares:
            p = ctx.Process(target=client_process, args=(ids, base, args.rate, args.duration, args.drain, args.floor,
                                                         ready_q, go_q, result_q, client_cpus), daemon=True)
            p.start()
            procs.append(p)
        ready = 0
        t_setup = time.monotonic()
        while ready < args.clients:
            try:
                ready += ready_q.get(timeout=120)
            except Exception:
                why = [r["failure"] for r in _drain(result_q) if "failure" in r][:3]
                print("load_sessions: clients did not get ready" + (f": {'; '.join(why)}" if why else ""),
                      file=sys.stderr)
                return 2
        print(f"{args.clients} sessions ready in {time.monotonic() - t_setup:.1f} s; server RSS "
              f"{rss_idle / 1024:.0f} MiB idle, {rss_kib(server.pid) / 1024:.0f} MiB with the sessions", flush=True)

        samples: list[int] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                with_rss = rss_kib(server.pid)
                samples.append(with_rss)
                stop.wait(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start_wall = time.time() + 1.0
        load_before = os.getloadavg()
        cpu0 = cpu_seconds(server.pid)
        sys0 = cpu_times(server.pid)[1]
        for _ in procs:
            go_q.put(start_wall)
        results = []
        for _ in procs:
            results.append(result_q.get(timeout=args.duration + args.drain + 120))
        stop.set()
        sampler.join()
        rss_end = rss_kib(server.pid)
        cpu = cpu_seconds(server.pid) - cpu0
        system = cpu_times(server.pid)[1] - sys0
        load = os.getloadavg()
        floor_cpu, commands = 0.0, 0
        if args.floor > 0 and not any("failure" in r for r in results):
            cpu1 = cpu_seconds(server.pid)
            for _ in procs:
                go_q.put(time.time() + 0.5)
            for _ in procs:
                commands += result_q.get(timeout=args.floor + 120).get("commands", 0)
            time.sleep(0.3)  # (the last commands, still on their way)
            floor_cpu = cpu_seconds(server.pid) - cpu1
    finally:
        for b in burners:
            b.terminate()
        for b in burners:
            b.join(5)
        shut_down(server, procs)

    failures = [r["failure"] for r in results if "failure" in r]
    if failures:
        print("load_sessions: a client process failed: " + "; ".join(failures), file=sys.stderr)
        return 2
    sent = sum(r["sent"] for r in results)
    delivered = sum(r["delivered"] for r in results)
    lat = sorted(x for r in results for x in r["latencies"])
    p50 = statistics.median(lat) * 1000 if lat else float("nan")
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else float("nan")
    worst = lat[-1] * 1000 if lat else float("nan")
    rss_max = max(samples, default=rss_end) / 1024
    errors = [e for r in results for e in r["errors"]]
    closed = [c for r in results for c in r["closed_early"]]
    print(f"sent {sent} messages ({args.clients} clients x {args.rate:g}/s x {args.duration:g} s); "
          f"delivered {delivered}; lost {sent - delivered} (not delivered {args.drain:g} s after the last send); "
          f"unexpected {sum(r['unexpected'] for r in results)}")
    cpu_per_msg = cpu / max(sent, 1) * 1e6
    print(f"event latency p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {worst:.1f} ms; server CPU {cpu_per_msg:.0f} us "
          f"per message; load average {load[0]:.1f} ({len(burners)} background burner(s))")
    print(f"server RSS: idle {rss_idle / 1024:.0f} MiB, max {rss_max:.0f} MiB, end {rss_end / 1024:.0f} MiB")
    client_cpu = sum(r["cpu"] for r in results)
    print(f"server CPU: {cpu:.1f} s ({cpu_per_msg:.0f} us per message; the kernel's part, system calls and "
          f"loopback TCP, {system:.1f} s); client processes' CPU: {client_cpu:.1f} s "
          f"({client_cpu / max(sent, 1) * 1e6:.0f} us per message); machine load average {load[0]:.1f} on "
          f"{os.cpu_count()} CPUs (load average before the run: {load_before[0]:.1f})")
    print("client processes on CPUs " + (",".join(map(str, sorted(client_cpus))) + ", the server on the others"
                                         if client_cpus else "shared with the server (not confined)"))
    floor_per_cmd = floor_cpu / commands * 1e6 if commands else float("nan")
    ratio = cpu_per_msg / floor_per_cmd if commands else float("nan")
    if commands:
        print(f"the anchor, the websocket path alone: {commands} pause commands ({args.floor:g} s at the same rate), "
              f"server CPU {floor_per_cmd:.0f} us per command; a message costs {ratio:.2f}x that, the session and "
              f"its simulation {cpu_per_msg - floor_per_cmd:.0f} us of it (goal: {args.cpu_goal:g} us a message "
              "in all)")
    if errors:
        print(f"errors from the server (first ones): {errors[:5]}")
    if closed:
        print(f"sockets closed early: {closed[:5]}")
    ok = sent == delivered and p99 < args.p99_goal and rss_max < args.rss_goal and cpu_per_msg <= args.cpu_goal
    print(f"load_sessions: clients={args.clients} sent={sent} delivered={delivered} lost={sent - delivered} "
          f"p50={p50:.1f}ms p99={p99:.1f}ms rss_max={rss_max:.0f}MiB server_cpu={cpu_per_msg:.0f}us/msg "
          f"floor={floor_per_cmd:.0f}us/cmd ratio={ratio:.2f} load={load[0]:.1f} burners={len(burners)} "
          f"clients_pinned={'yes' if client_cpus else 'no'} goals={'met' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
