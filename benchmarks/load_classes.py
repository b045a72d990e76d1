"""Load: lecture halls in presenter mode. Students follow their teacher's steps; latency, loss and memory.

Starts `zmtplab serve` (uvicorn, a real process) on a free port with `ZMTPLAB_CLASS_MAX_STUDENTS` set to
`--students`, creates `--classes` classes (`POST /api/classes`), connects each class's teacher (its `auth`
message first) and `--students` students per class (the `websockets` library, spread over `--procs` client
processes). Then every teacher sends `--steps` states, one every `--interval` seconds (the teacher's rate
limit is 20 a second); each student notes when each step arrives. A step's latency is from the teacher's
send to a student's receipt (CLOCK_MONOTONIC is one clock for every process of the machine); a step a
student never saw is lost (a student who falls behind is given the latest state instead of the queue,
so a skipped step counts as lost here).

Memory: the server's RSS (/proc/PID/status) at idle before the students come, its most while they are
there (sampled every half second), a few seconds after every student has left (the classes still
open), and after the teachers end the classes. Idle is measured after one student joined and left (the
first websocket loads modules that stay). issue 22.4 asks that it come back to its idle level.

    load_classes: classes=1 students=1000 steps=50 sent=... received=... lost=0 p50=...ms p99=...ms
                  rss_idle=...MiB rss_peak=...MiB rss_left=...MiB rss_ended=...MiB load=... goals=met|FAILED

The exit status is non-zero when a goal fails: no loss, p99 under `--p99-goal` ms (150), and RSS after the
students left within `--rss-slack` MiB (20) of its idle level. `zmtplab serve` runs on glibc's
allocator (PYTHONMALLOC=malloc; `--server-malloc pymalloc` to compare): CPython's own allocator keeps
partly used 1 MiB arenas (a crowd's objects leave survivors scattered through them), glibc's heap gives its
free pages back on the trim `web.core.memory` runs when a big class empties.
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

from load_sessions import cpu_seconds, http_json, loads, rss_kib
from serverkit import REPO, ServerDidNotStart, shut_down, start_server

# ---------------------------------------------------------------- one client process (students)


async def student(base: str, code: str, arrivals: dict[int, float], closed: list[str], go: asyncio.Event):
    import websockets

    ws = await websockets.connect(f"ws://{base}/ws/classes/{code}?role=student", max_size=None,
                                  ping_interval=None, compression=None, open_timeout=60)

    async def read() -> None:
        try:
            async for raw in ws:
                now = time.monotonic()
                msg = loads(raw)
                if msg.get("type") == "state":
                    arrivals.setdefault(msg["step"], now)
                elif msg.get("type") == "hello" and msg.get("state"):
                    arrivals.setdefault(msg["state"]["step"], now)
        except websockets.ConnectionClosed as exc:
            if exc.rcvd is None or exc.rcvd.code != 1000:
                closed.append(f"{exc.rcvd.code if exc.rcvd else '?'} {exc.rcvd.reason if exc.rcvd else ''}")

    task = asyncio.create_task(read())
    await go.wait()
    await ws.close()
    await task


def client_process(jobs: list[str], base: str, ready_q: mp.Queue, go_q: mp.Queue, result_q: mp.Queue) -> None:
    """Students of `jobs` (one class code per student) until told to leave; reports their arrivals."""
    try:
        import uvloop

        run = uvloop.run
    except ImportError:  # pragma: no cover
        run = asyncio.run

    async def main() -> dict:
        go = asyncio.Event()
        arrivals: list[dict[int, float]] = [{} for _ in jobs]
        closed: list[str] = []
        tasks = []
        for i in range(0, len(jobs), 50):
            batch = [asyncio.create_task(student(base, code, arrivals[i + k], closed, go))
                     for k, code in enumerate(jobs[i:i + 50])]
            tasks += batch
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        failed = [t for t in tasks if t.done() and t.exception() is not None]
        if failed:
            raise RuntimeError(f"{len(failed)} students could not join: {failed[0].exception()!r}")
        ready_q.put(len(jobs))
        await asyncio.to_thread(go_q.get)  # the lesson is over: leave
        go.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        return {"arrivals": [(code, a) for code, a in zip(jobs, arrivals, strict=True)], "closed": closed[:20]}

    try:
        result_q.put(run(main()))
    except BaseException as exc:  # report, never hang the parent
        result_q.put({"failure": f"{type(exc).__name__}: {exc}"})


# ---------------------------------------------------------------- the teachers


async def warm_up(base: str, code: str) -> None:
    """One student joins and leaves."""
    import websockets

    async with websockets.connect(f"ws://{base}/ws/classes/{code}?role=student") as ws:
        await ws.recv()


async def teach(base: str, classes: list[dict], steps: int, interval: float) -> dict[tuple[str, int], float]:
    """Every teacher sends `steps` states; returns when each was sent, by (class code, step)."""
    import websockets

    sockets = []
    for c in classes:
        ws = await websockets.connect(f"ws://{base}/ws/classes/{c['code']}?role=teacher", max_size=None,
                                      ping_interval=None, compression=None)
        await ws.send(json.dumps({"type": "auth", "token": c["teacher_token"]}))
        sockets.append(ws)

    async def drain(ws) -> None:
        try:
            async for _ in ws:
                pass
        except websockets.ConnectionClosed:
            pass

    readers = [asyncio.create_task(drain(ws)) for ws in sockets]
    sent: dict[tuple[str, int], float] = {}
    start = time.monotonic() + 0.5
    for step in range(1, steps + 1):
        delay = start + (step - 1) * interval - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        for c, ws in zip(classes, sockets, strict=True):
            sent[(c["code"], step)] = time.monotonic()
            await ws.send(json.dumps({"type": "state", "lesson": "greeting", "step": step,
                                      "selection": {"element": step % 7, "field": 1}, "highlights": [0, 2]}))
    await asyncio.sleep(0)
    teach.sockets = sockets  # type: ignore[attr-defined]  # ended after the students leave
    teach.readers = readers  # type: ignore[attr-defined]
    return sent


async def end_classes() -> None:
    for ws in teach.sockets:  # type: ignore[attr-defined]
        await ws.send(json.dumps({"type": "end"}))
    await asyncio.gather(*teach.readers, return_exceptions=True)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- the run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--classes", type=int, default=1)
    ap.add_argument("--students", type=int, default=1000, help="students per class (also the server's cap)")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between a teacher's steps")
    ap.add_argument("--procs", type=int, default=2, help="client processes for the students")
    ap.add_argument("--drain", type=float, default=5.0, help="seconds to wait for the last step")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds after the students left before the RSS")
    ap.add_argument("--p99-goal", type=float, default=150.0, help="ms")
    ap.add_argument("--backend", default=str(REPO / "backend"),
                    help="the backend directory the server runs from (another checkout's, to compare)")
    ap.add_argument("--server-malloc", choices=["default", "pymalloc", "malloc"], default="default",
                    help="the server's PYTHONMALLOC (default: what `zmtplab serve` chooses, glibc's `malloc`): with "
                         "`malloc`, every object is glibc's, so the trim after a class empties gives back what "
                         "pymalloc's partly used arenas would keep")
    ap.add_argument("--rss-slack", type=float, default=20.0, help="MiB over idle the RSS may stay after")
    args = ap.parse_args()

    try:
        server = start_server({"ZMTPLAB_CLASS_MAX_STUDENTS": str(args.students),
                               "PYTHONMALLOC": None if args.server_malloc == "default" else args.server_malloc},
                              backend=args.backend)
    except ServerDidNotStart as exc:
        print(f"load_classes: {exc}", file=sys.stderr)
        return 2
    base = server.address
    ctx = mp.get_context("spawn")
    procs: list[mp.Process] = []
    results: list[dict] = []
    try:
        classes = []
        for _ in range(args.classes):
            status, body = http_json("POST", f"http://{base}/api/classes", {})
            if status != 201:
                print(f"load_classes: POST /api/classes answered {status}: {body}", file=sys.stderr)
                return 2
            classes.append(body)
        # Idle means a server that has served a student once (the websocket stack's modules are loaded on
        # the first connection, and they stay).
        asyncio.run(warm_up(base, classes[0]["code"]))
        time.sleep(args.settle)
        rss_idle = rss_kib(server.pid)
        load_before = os.getloadavg()

        samples: list[int] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                samples.append(rss_kib(server.pid))
                stop.wait(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        jobs = [c["code"] for c in classes for _ in range(args.students)]
        n = max(1, min(args.procs, len(jobs)))
        ready_q, go_q, result_q = ctx.Queue(), ctx.Queue(), ctx.Queue()
        for i in range(n):
            p = ctx.Process(target=client_process, args=(jobs[i::n], base, ready_q, go_q, result_q), daemon=True)
            p.start()
            procs.append(p)
        t_setup = time.monotonic()
        ready = 0
        while ready < len(jobs):
            try:
                ready += ready_q.get(timeout=180)
            except Exception:
                print("load_classes: the students did not join", file=sys.stderr)
                return 2
        for c in classes:
            info = http_json("GET", f"http://{base}/api/classes/{c['code']}")[1]
            if info.get("students") != args.students:
                print(f"load_classes: class {c['code']} has {info.get('students')} students", file=sys.stderr)
        print(f"{len(jobs)} students in {args.classes} class(es) joined in {time.monotonic() - t_setup:.1f} s; "
              f"server RSS {rss_idle / 1024:.0f} MiB idle, {rss_kib(server.pid) / 1024:.0f} MiB with them", flush=True)

        loop = asyncio.new_event_loop()
        cpu0 = cpu_seconds(server.pid)
        sent = loop.run_until_complete(teach(base, classes, args.steps, args.interval))
        time.sleep(args.drain)
        cpu = cpu_seconds(server.pid) - cpu0
        load = os.getloadavg()
        for _ in procs:
            go_q.put("leave")
        for _ in procs:
            results.append(result_q.get(timeout=180))
        stop.set()
        sampler.join()
        rss_peak = max(samples, default=0)
        time.sleep(args.settle)
        rss_left = rss_kib(server.pid)
        loop.run_until_complete(end_classes())
        loop.close()
        time.sleep(args.settle)
        rss_ended = rss_kib(server.pid)
    finally:
        shut_down(server, procs)

    failures = [r["failure"] for r in results if "failure" in r]
    if failures:
        print("load_classes: a client process failed: " + "; ".join(failures), file=sys.stderr)
        return 2
    lat: list[float] = []
    by_step: dict[int, list[float]] = {}
    expected = received = 0
    for r in results:
        for code, arrivals in r["arrivals"]:
            for step in range(1, args.steps + 1):
                expected += 1
                t = arrivals.get(step)
                if t is not None:
                    received += 1
                    lat.append(t - sent[(code, step)])
                    by_step.setdefault(step, []).append(t - sent[(code, step)])
    lat.sort()
    lost = expected - received
    p50 = statistics.median(lat) * 1000 if lat else float("nan")
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else float("nan")
    worst = lat[-1] * 1000 if lat else float("nan")
    closed = [c for r in results for c in r["closed"]]
    mib = 1024
    print(f"{args.classes} class(es) x {args.students} students x {args.steps} steps every {args.interval:g} s: "
          f"{expected} deliveries expected, {received} received, lost {lost}")
    print(f"step latency p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {worst:.1f} ms; server CPU {cpu:.1f} s "
          f"({cpu / max(expected, 1) * 1e6:.0f} us per delivery); load average {load[0]:.1f} "
          f"(before: {load_before[0]:.1f}) on {os.cpu_count()} CPUs")
    print(f"server RSS: idle {rss_idle / mib:.0f} MiB, peak {rss_peak / mib:.0f} MiB, "
          f"{args.settle:g} s after the students left {rss_left / mib:.0f} MiB, "
          f"after the classes ended {rss_ended / mib:.0f} MiB")
    slowest = sorted(by_step.items(), key=lambda kv: -max(kv[1]))[:5]
    print("slowest steps (step: median, max ms): " + ", ".join(
        f"{k}: {statistics.median(v) * 1000:.0f}, {max(v) * 1000:.0f}" for k, v in slowest))
    if closed:
        print(f"sockets closed early: {closed[:5]}")
    ok = lost == 0 and p99 < args.p99_goal and rss_left / mib < rss_idle / mib + args.rss_slack
    print(f"load_classes: classes={args.classes} students={args.students} steps={args.steps} sent={expected} "
          f"received={received} lost={lost} p50={p50:.1f}ms p99={p99:.1f}ms rss_idle={rss_idle / mib:.0f}MiB "
          f"rss_peak={rss_peak / mib:.0f}MiB rss_left={rss_left / mib:.0f}MiB rss_ended={rss_ended / mib:.0f}MiB "
          f"load={load[0]:.1f} server_malloc={args.server_malloc} goals={'met' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
