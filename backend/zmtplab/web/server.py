"""How the app is served: uvicorn's configuration for `zmtplab serve` (and the tests that run a real server).

uvicorn bounds neither the size nor the number of a request's header fields (httptools gathers a
header that never ends in memory: 50 unfinished 4 MB heads took 200 MiB), nor the time a client
takes to send a head (a connection that sends nothing is kept forever). `BoundedHttpProtocol`
refuses a head over `max_request_head` octets or `max_request_headers` fields with 431, as
production servers do (nginx, Apache: 8 KiB a line, 100 fields), answers a head still unfinished
`request_head_timeout` seconds after the connection opened (or the request began) with 408, and
closes the connection.

Nor does uvicorn bound the connections one client holds: 1,100 idle connections from one address under a
1,024-file limit refused everyone for 30 s. A `ConnectionTable` counts every open connection (websockets
included) by client address (an IPv6 /64 as one) and which of them wait for a request: an address may hold
`max_connections_per_client` connections and `max_idle_connections_per_client` idle ones (a connection over
either is answered 503 and closed at once), and when the server holds as many as it can (`max_connections`,
by default its file limit less a reserve) the oldest idle connection of the address holding the most idle
ones makes room for the new one.
"""

from __future__ import annotations

import asyncio
import json
import resource
from collections import Counter
from typing import Any, cast

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .core.limits import address_key
from .core.settings import Settings
from .core.wsprotocol import CommandFrameProtocol

FILE_RESERVE = 128  # file descriptors kept for what is not a connection (stores, pipes, workers) by default


class ConnectionTable:
    """The open connections of one server by client address, and which of them are idle (see the module
    docstring); keyed by transport, which a websocket upgrade keeps."""

    def __init__(self, per_client: int, idle_per_client: int, capacity: int) -> None:
        self.per_client = per_client
        self.idle_per_client = idle_per_client
        self.capacity = capacity
        self.where: dict[asyncio.BaseTransport, str] = {}  # transport -> address key
        self.count: Counter[str] = Counter()
        self.idle: dict[asyncio.BaseTransport, str] = {}  # oldest idle first
        self.idle_count: Counter[str] = Counter()

    def open(self, transport: asyncio.BaseTransport) -> str | None:
        """Registers a new connection (idle); returns why it is refused instead (it is then not registered)."""
        peer = transport.get_extra_info("peername")
        key = address_key(str(peer[0])) if isinstance(peer, tuple) and peer else "unknown"
        if self.count[key] >= self.per_client:
            return f"this address has {self.per_client} connections open to the server (its limit per address)"
        if self.idle_count[key] >= self.idle_per_client:
            return (f"this address has {self.idle_per_client} connections open that send no request (its limit "
                    "per address)")
        if len(self.where) >= self.capacity and not self._close_an_idle_one():
            return "the server holds as many connections as it can; try again in a moment"
        self.where[transport] = key
        self.count[key] += 1
        self.set_idle(transport, True)
        return None

    def set_idle(self, transport: asyncio.BaseTransport, idle: bool) -> None:
        key = self.where.get(transport)
        if key is None or (transport in self.idle) == idle:
            return
        if idle:
            self.idle[transport] = key
            self.idle_count[key] += 1
        else:
            del self.idle[transport]
            self._uncount(self.idle_count, key)

    def closed(self, transport: asyncio.BaseTransport) -> None:
        self.set_idle(transport, False)
        key = self.where.pop(transport, None)
        if key is not None:
            self._uncount(self.count, key)

    def _close_an_idle_one(self) -> bool:
        """Closes the oldest idle connection of the address holding the most idle ones; False when none is."""
        if not self.idle:
            return False
        heavy = self.idle_count.most_common(1)[0][0]
        transport = next(t for t, k in self.idle.items() if k == heavy)
        self.closed(transport)
        transport.close()
        return True

    @staticmethod
    def _uncount(counter: Counter[str], key: str) -> None:
        counter[key] -= 1
        if counter[key] <= 0:
            del counter[key]


class _HeadTooLarge(Exception):
    """Raised in a parser callback to stop parsing a head that passed a limit."""


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bound on a request head's octets and fields (431 beyond) and on the
    time it takes to arrive (408 beyond).

    Use `bounded_http_protocol(settings)`, which sets the limits."""

    max_head = 32 * 1024
    max_headers = 100
    head_timeout = 30.0
    table: ConnectionTable | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_head = False
        self.head_octets = 0  # what arrived since this head began (while it is unfinished)
        self.field_octets = 0  # the URL's and the fields' octets, as the parser hands them over
        self.field_count = 0
        self.refusal: str | None = None
        self.head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (A TCP connection's transport is a Transport; uvicorn's signature narrows asyncio's to it.)
        super().connection_made(cast(asyncio.Transport, transport))
        refusal = self.table.open(transport) if self.table is not None else None
        if refusal is not None:
            self._refuse(refusal, b"503 Service Unavailable")
            return
        self._arm_head_timer()  # (a connection that never sends a request is not kept either)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        if self.table is not None:
            self.table.closed(self.transport)
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.table is not None and not self.transport.is_closing():
            self.table.set_idle(self.transport, True)

    def handle_websocket_upgrade(self) -> None:
        super().handle_websocket_upgrade()  # (the table keeps the transport, never idle again, until it closes)

    def data_received(self, data: bytes) -> None:
        """Feeds the parser; refuses a head that is still unfinished past the limit (httptools buffers it)."""
        if self.refusal is not None:
            return
        continued = self.in_head  # (a head that began within `data` may follow a body's last octets)
        super().data_received(data)
        if self.in_head and self.refusal is None and not self.transport.is_closing():
            self.head_octets += len(data) if continued else self.field_octets
            if self.head_octets > self.max_head:
                self._refuse(f"the request head is larger than {self.max_head} octets")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.table is not None:
            self.table.set_idle(self.transport, False)
        if self.head_timer is None:
            self._arm_head_timer()
        self.in_head = True
        self.head_octets = self.field_octets = self.field_count = 0

    def on_url(self, url: bytes) -> None:
        self.field_octets += len(url)
        if self.field_octets > self.max_head:
            self.refusal = f"the request head is larger than {self.max_head} octets"
            raise _HeadTooLarge
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.field_count += 1
        self.field_octets += len(name) + len(value) + 4
        if self.field_count > self.max_headers:
            self.refusal = f"the request has more than {self.max_headers} header fields"
        elif self.field_octets > self.max_head:
            self.refusal = f"the request head is larger than {self.max_head} octets"
        if self.refusal is not None:
            raise _HeadTooLarge
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self.in_head = False
        self._disarm_head_timer()
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a parser error, which a refused head also is (httptools turns the callback's
        exception into an HttpParserError): 431 then."""
        if self.refusal is None:
            super().send_400_response(msg)
        else:
            self._refuse(self.refusal)

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self.head_timer = self.loop.call_later(self.head_timeout, self._head_too_slow)

    def _disarm_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_too_slow(self) -> None:
        self.head_timer = None
        if self.transport.is_closing() or self.refusal is not None:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._arm_head_timer()  # a response is still being sent: the next head waits for it
        elif self.in_head:
            self._refuse(f"the request head did not arrive within {self.head_timeout:g} s",
                         b"408 Request Timeout")
        elif self.cycle is None:  # nothing was sent at all
            self.transport.close()

    def _refuse(self, detail: str, status: bytes = b"431 Request Header Fields Too Large") -> None:
        self.refusal = detail
        self.in_head = False
        self._disarm_head_timer()
        body = json.dumps({"detail": detail}).encode()
        head = [b"HTTP/1.1 " + status + b"\r\n"]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body),
                 b"x-content-type-options: nosniff\r\n", b"connection: close\r\n\r\n"]
        self.transport.write(b"".join(head) + body)
        self.transport.close()


class TrackedCommandFrameProtocol(CommandFrameProtocol):
    """`CommandFrameProtocol` that tells the server's `ConnectionTable` when its connection closes (use
    `tracked_ws_protocol`)."""

    table: ConnectionTable | None = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.table is not None:
            self.table.closed(self.transport)
        super().connection_lost(exc)


def raise_file_limit() -> int:
    """Raises this process's soft limit on open files to its hard limit (Debian's default soft limit, 1,024, is
    a few hundred connections); returns the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def connection_table(settings: Settings) -> ConnectionTable:
    """A server's `ConnectionTable` with the limits of `settings` (`max_connections`: the file limit less
    `FILE_RESERVE` unless set)."""
    capacity = settings.max_connections
    if capacity is None:
        capacity = max(64, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - FILE_RESERVE)
    return ConnectionTable(settings.max_connections_per_client, settings.max_idle_connections_per_client, capacity)


def bounded_http_protocol(settings: Settings, table: ConnectionTable | None = None) -> type[BoundedHttpProtocol]:
    """`BoundedHttpProtocol` with the head limits of `settings` (uvicorn's `http`), counting its connections in
    `table`."""
    return type("BoundedHttpProtocol", (BoundedHttpProtocol,),
                {"max_head": settings.max_request_head, "max_headers": settings.max_request_headers,
                 "head_timeout": settings.request_head_timeout, "table": table})


def tracked_ws_protocol(table: ConnectionTable) -> type[TrackedCommandFrameProtocol]:
    """The websocket protocol (uvicorn's `ws`) of a server whose connections `table` counts."""
    return type("TrackedCommandFrameProtocol", (TrackedCommandFrameProtocol,), {"table": table})


def uvicorn_config(app: FastAPI, settings: Settings, *, log_level: str = "info", **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for `app`: the address from `settings`, request heads bounded by
    `BoundedHttpProtocol`, websockets read by `CommandFrameProtocol`, connections counted per address by a
    `ConnectionTable`, and a websocket frame limit above the
    largest command the app accepts (so that the app, not the protocol, answers a command that is too long).
    `options` are uvicorn's own (tests pass `port`, `lifespan`, ...)."""
    table = connection_table(settings)
    values: dict[str, Any] = {"host": settings.host, "port": settings.port, "log_level": log_level,
                              "http": bounded_http_protocol(settings, table), "ws": tracked_ws_protocol(table),
                              "ws_max_size": max(settings.ws_max_message * 2, 1 << 20),
                              # Websocket compression runs on the event loop: a session's burst of events (megabytes
                              # of hex) took 20-60 ms of zlib per message there, a pause for every client.
                              "ws_per_message_deflate": False,
                              # (a progress stream open in a tab must not keep a stopping server up)
                              "timeout_graceful_shutdown": 10, **options}
    return uvicorn.Config(app, **values)

