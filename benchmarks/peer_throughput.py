"""PUSH -> PULL throughput over loopback TCP: our asyncio peers against pyzmq (libzmq), same setup, same run.

Each side runs in its own process (the receiver binds, the sender connects). The rate is the
message count over the time from the sender's first send() to the receiver's last recv() (both
read the same wall clock), so connection set-up is included; the receiver checks that it got
every message, in order. Messages are one 64-octet frame. The last line is

    peer_throughput: ours=... msg/s pyzmq=... msg/s ratio=...

Usage: python benchmarks/peer_throughput.py [--count N] [--size 64] [--repeat 3] [--uvloop]
(the best of `--repeat` runs is reported for each side).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import queue
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backend"))


def _loop_runner(use_uvloop: bool):
    if use_uvloop:
        import uvloop

        return uvloop.run
    return asyncio.run


# ---------------------------------------------------------------- ours


def ours_pull(count: int, port_q, result_q, use_uvloop: bool) -> None:
    from zmtplab.peers.tcp import TcpPeer

    async def main() -> None:
        pull = TcpPeer("PULL")
        endpoint = await pull.bind("tcp://127.0.0.1:0")
        port_q.put(int(endpoint.rsplit(":", 1)[1]))
        recv_nowait = pull.recv_nowait
        got = 0
        last = None
        while got < count:
            msg = recv_nowait()
            if msg is None:
                msg = await pull.recv(timeout=30)
            got += 1
            last = msg
        result_q.put((time.time(), last[0][:8]))
        await pull.close(linger=0)

    _loop_runner(use_uvloop)(main())


def ours_push(count: int, size: int, port: int, start_q, use_uvloop: bool) -> None:
    from zmtplab.peers.tcp import TcpPeer

    async def main() -> None:
        push = TcpPeer("PUSH")
        body = bytes(size)
        last = [(count - 1).to_bytes(8, "big") + body[8:]]
        msg = [body]
        send = push.send
        start_q.put(time.time())
        push.connect(f"tcp://127.0.0.1:{port}")
        for _ in range(count - 1):
            await send(msg)
        await send(last)
        await push.close(linger=30)

    _loop_runner(use_uvloop)(main())


# ---------------------------------------------------------------- pyzmq


def zmq_pull(count: int, port_q, result_q, use_uvloop: bool) -> None:
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    sock.rcvtimeo = 30000
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    port_q.put(port)
    recv = sock.recv
    for _ in range(count - 1):
        recv()
    last = recv()
    result_q.put((time.time(), last[:8]))
    sock.close(0)
    ctx.term()


def zmq_push(count: int, size: int, port: int, start_q, use_uvloop: bool) -> None:
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    body = bytes(size)
    last = (count - 1).to_bytes(8, "big") + body[8:]
    send = sock.send
    start_q.put(time.time())
    sock.connect(f"tcp://127.0.0.1:{port}")
    for _ in range(count - 1):
        send(body)
    send(last)
    sock.close(linger=30000)
    ctx.term()


# ---------------------------------------------------------------- harness


def run_pair(puller, pusher, count: int, size: int, use_uvloop: bool) -> float:
    ctx = mp.get_context("spawn")
    port_q, result_q, start_q = ctx.Queue(), ctx.Queue(), ctx.Queue()
    receiver = ctx.Process(target=puller, args=(count, port_q, result_q, use_uvloop))
    receiver.start()
    port = port_q.get(timeout=30)
    sender = ctx.Process(target=pusher, args=(count, size, port, start_q, use_uvloop))
    sender.start()
    deadline = time.monotonic() + 120
    while True:
        try:
            end, tag = result_q.get(timeout=0.5)
            start = start_q.get(timeout=5)
            if tag != (count - 1).to_bytes(8, "big"):
                raise RuntimeError("the last message received is not the last one sent")
            rate = count / (end - start)
            break
        except queue.Empty:
            if time.monotonic() > deadline or sender.exitcode not in (None, 0) or receiver.exitcode is not None:
                sender.kill()
                receiver.kill()
                raise RuntimeError(f"benchmark run failed (sender exit {sender.exitcode}, "
                                   f"receiver exit {receiver.exitcode})") from None
    sender.join(60)
    receiver.join(60)
    for proc in (sender, receiver):
        if proc.is_alive():
            proc.kill()
    return rate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--uvloop", action="store_true", help="run our peers on uvloop instead of asyncio's loop")
    args = parser.parse_args(argv)
    ours: list[float] = []
    theirs: list[float] = []
    for i in range(args.repeat):
        ours.append(run_pair(ours_pull, ours_push, args.count, args.size, args.uvloop))
        theirs.append(run_pair(zmq_pull, zmq_push, args.count, args.size, False))
        print(f"run {i + 1}: ours={ours[-1]:,.0f} msg/s pyzmq={theirs[-1]:,.0f} msg/s", flush=True)
    best_ours, best_theirs = max(ours), max(theirs)
    loop = "uvloop" if args.uvloop else "asyncio"
    print(f"{args.count} messages of {args.size} octets, PUSH->PULL over 127.0.0.1, best of {args.repeat}; "
          f"our peers on {loop}")
    print(f"peer_throughput: ours={best_ours:.0f} msg/s pyzmq={best_theirs:.0f} msg/s "
          f"ratio={best_ours / best_theirs:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
