"""Helpers for the peer tests: bounded asyncio runs and pyzmq sockets on the same event loop."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import subprocess
import threading
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import zmq
import zmq.asyncio

T = TypeVar("T")
TIMEOUT = 10.0
MIB = bytes(range(256)) * 4096


def run(coro: Awaitable[T], timeout: float = 30.0) -> T:
    """Runs a coroutine on a fresh event loop, bounded by `timeout` seconds."""

    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


@contextlib.asynccontextmanager
async def zmq_context() -> AsyncIterator[zmq.asyncio.Context]:
    """A pyzmq asyncio context whose sockets close with linger 0."""
    ctx = zmq.asyncio.Context()
    try:
        yield ctx
    finally:
        for sock in list(getattr(ctx, "_sockets", ())):
            sock.close(linger=0)
        ctx.destroy(linger=0)


def zsock(ctx: zmq.asyncio.Context, kind: int, **options: Any) -> zmq.asyncio.Socket:
    """A pyzmq socket with linger 0 and the given options (e.g. identity=b"x", heartbeat_ivl=100)."""
    sock = ctx.socket(kind)
    sock.linger = 0
    for name, value in options.items():
        setattr(sock, name, value)
    return sock


def zbind(sock: zmq.asyncio.Socket) -> str:
    """Binds to an ephemeral port on 127.0.0.1; returns the endpoint."""
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    return f"tcp://127.0.0.1:{port}"


async def zrecv(sock: zmq.asyncio.Socket, timeout: float = TIMEOUT) -> list[bytes]:
    return await asyncio.wait_for(sock.recv_multipart(), timeout)


async def zsend(sock: zmq.asyncio.Socket, frames: list[bytes], timeout: float = TIMEOUT) -> None:
    await asyncio.wait_for(sock.send_multipart(frames), timeout)


class EventLog:
    """Collects a TcpPeer's peer events."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def what(self, what: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("what") == what]


class LineError(RuntimeError):
    """A helper process answered `err ...`."""


class LineDriven:
    """A helper process holding another implementation's sockets, driven one command line at a time (JeroMQ's
    tests/peers/jeromq/ZPeer.java, libzmq's tests/peers/libzmq_ws/zpeer.py): frames are hex, a message is its
    frames joined by ","; every command answers one line, "ok ...", "msg ...", "timeout" or "err ...". """

    what = "helper"  # for messages

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lock = threading.Lock()
        self.names = itertools.count(1)
        self.open: list[str] = []
        self.version = self.call("version")

    def call(self, *words: str) -> str:
        """Sends one command; returns its answer without `ok ` (raises `LineError` on `err`)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(" ".join(words) + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline().rstrip("\n")
        if not answer:
            raise LineError(f"{self.what} exited (status {self.proc.poll()}) on {words[:2]}")
        if answer.startswith("err "):
            raise LineError(answer[4:])
        return answer[3:] if answer.startswith("ok") else answer

    def new(self, *words: str) -> str:
        """`new NAME ...`: a socket's name, closed by `close_all()`."""
        name = f"s{next(self.names)}"
        self.call("new", name, *words)
        self.open.append(name)
        return name

    def close_all(self) -> None:
        while self.open:
            self.call("close", self.open.pop())

    def quit(self) -> None:
        if self.proc.poll() is None:
            self.call("quit")
        self.proc.wait(10)


class LineSocket:
    """One socket in a `LineDriven` helper; the blocking calls run in a thread, off the event loop."""

    def __init__(self, helper: LineDriven, name: str) -> None:
        self.helper = helper
        self.name = name

    def connect(self, endpoint: str) -> None:
        self.helper.call("connect", self.name, endpoint)

    def subscribe(self, topic: bytes) -> None:
        self.helper.call("sub", self.name, topic.hex())

    def unsubscribe(self, topic: bytes) -> None:
        self.helper.call("unsub", self.name, topic.hex())

    async def send(self, frames: list[bytes]) -> None:
        answer = await asyncio.to_thread(self.helper.call, "send", self.name, ",".join(f.hex() for f in frames))
        if answer == "timeout":
            raise TimeoutError(f"{self.helper.what} {self.name} could not send")

    async def recv(self, timeout: float = TIMEOUT) -> list[bytes]:
        answer = await asyncio.to_thread(self.helper.call, "recv", self.name, str(int(timeout * 1000)))
        if answer == "timeout":
            raise TimeoutError(f"{self.helper.what} {self.name} received nothing within {timeout} s")
        assert answer.startswith("msg ")
        return [bytes.fromhex(f) for f in answer[4:].split(",")]
