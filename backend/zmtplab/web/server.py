"""How the app is served: uvicorn's configuration for `zmtplab serve` (and the tests that run a real server).

uvicorn bounds neither the size nor the number of a request's header fields (httptools gathers a
header that never ends in memory: 50 unfinished 4 MB heads took 200 MiB). `BoundedHttpProtocol`
refuses a head over `max_request_head` octets or `max_request_headers` fields with 431, as
production servers do (nginx, Apache: 8 KiB a line, 100 fields), and closes the connection.
"""

from __future__ import annotations

import json
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .settings import Settings
from .wsprotocol import CommandFrameProtocol


class _HeadTooLarge(Exception):
    """Raised in a parser callback to stop parsing a head that passed a limit."""


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bound on a request head's octets and fields (431 beyond).

    Use `bounded_http_protocol(settings)`, which sets the two limits."""

    max_head = 32 * 1024
    max_headers = 100

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_head = False
        self.head_octets = 0  # what arrived since this head began (while it is unfinished)
        self.field_octets = 0  # the URL's and the fields' octets, as the parser hands them over
        self.field_count = 0
        self.refusal: str | None = None

    def data_received(self, data: bytes) -> None:
        """Feeds the parser; refuses a head that is still unfinished past the limit (httptools buffers it)."""
        if self.refusal is not None:
            return
        super().data_received(data)
        if self.in_head and self.refusal is None and not self.transport.is_closing():
            self.head_octets += len(data)
            if self.head_octets > self.max_head:
                self._refuse(f"the request head is larger than {self.max_head} octets")

    def on_message_begin(self) -> None:
        super().on_message_begin()
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
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a parser error, which a refused head also is (httptools turns the callback's
        exception into an HttpParserError): 431 then."""
        if self.refusal is None:
            super().send_400_response(msg)
        else:
            self._refuse(self.refusal)

    def _refuse(self, detail: str) -> None:
        self.refusal = detail
        self.in_head = False
        body = json.dumps({"detail": detail}).encode()
        head = [b"HTTP/1.1 431 Request Header Fields Too Large\r\n"]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body),
                 b"x-content-type-options: nosniff\r\n", b"connection: close\r\n\r\n"]
        self.transport.write(b"".join(head) + body)
        self.transport.close()


def bounded_http_protocol(settings: Settings) -> type[BoundedHttpProtocol]:
    """`BoundedHttpProtocol` with the head limits of `settings` (uvicorn's `http`)."""
    return type("BoundedHttpProtocol", (BoundedHttpProtocol,),
                {"max_head": settings.max_request_head, "max_headers": settings.max_request_headers})


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

