"""How the app is served: uvicorn's configuration for `zmtplab serve` (and the tests that run a real server).

uvicorn bounds neither the size nor the number of a request's header fields (httptools gathers a
header that never ends in memory: 50 unfinished 4 MB heads took 200 MiB), nor the time a client
takes to send a head (a connection that sends nothing is kept forever). `BoundedHttpProtocol`
refuses a head over `max_request_head` octets or `max_request_headers` fields with 431, as
production servers do (nginx, Apache: 8 KiB a line, 100 fields), answers a head still unfinished
`request_head_timeout` seconds after the connection opened (or the request began) with 408, and
closes the connection.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .settings import Settings
from .wsprotocol import CommandFrameProtocol


class _HeadTooLarge(Exception):
    """Raised in a parser callback to stop parsing a head that passed a limit."""


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bound on a request head's octets and fields (431 beyond) and on the
    time it takes to arrive (408 beyond).

    Use `bounded_http_protocol(settings)`, which sets the limits."""

    max_head = 32 * 1024
    max_headers = 100
    head_timeout = 30.0

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
        self._arm_head_timer()  # (a connection that never sends a request is not kept either)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

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


def bounded_http_protocol(settings: Settings) -> type[BoundedHttpProtocol]:
    """`BoundedHttpProtocol` with the head limits of `settings` (uvicorn's `http`)."""
    return type("BoundedHttpProtocol", (BoundedHttpProtocol,),
                {"max_head": settings.max_request_head, "max_headers": settings.max_request_headers,
                 "head_timeout": settings.request_head_timeout})


def uvicorn_config(app: FastAPI, settings: Settings, *, log_level: str = "info", **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for `app`: the address from `settings`, request heads bounded by
    `BoundedHttpProtocol`, websockets read by `CommandFrameProtocol`, and a websocket frame limit above the
    largest command the app accepts (so that the app, not the protocol, answers a command that is too long).
    `options` are uvicorn's own (tests pass `port`, `lifespan`, ...)."""
    values: dict[str, Any] = {"host": settings.host, "port": settings.port, "log_level": log_level,
                              "http": bounded_http_protocol(settings), "ws": CommandFrameProtocol,
                              "ws_max_size": max(settings.ws_max_message * 2, 1 << 20),
                              # (a progress stream open in a tab must not keep a stopping server up)
                              "timeout_graceful_shutdown": 10, **options}
    return uvicorn.Config(app, **values)

