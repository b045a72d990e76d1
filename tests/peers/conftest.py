"""Helpers for the peer tests: bounded asyncio runs and pyzmq sockets on the same event loop."""

from __future__ import annotations

import asyncio
import contextlib
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
