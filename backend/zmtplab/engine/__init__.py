"""The sans-IO ZMTP engine: a strict peer (`Connection`) and a lenient dissector (`ConnectionDissector`), and
the same two for ZMTP over WebSocket, 45/ZWS (`ZwsConnection`, `ZwsDissector`).

It imports nothing else of ZMTP Lab and touches no socket, event loop or clock.

Names load on first use (PEP 562), so a program that needs only the dissector does not pay
for the peer and its CURVE cryptography at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "Connection": "connection",
    "CurveClient": "curve", "CurveServer": "curve", "generate_keypair": "curve", "z85_decode": "curve",
    "z85_encode": "curve",
    "StreamDecoder": "decoder",
    "ConnectionDissector": "dissector",
    "LocalProtocolError": "errors", "ProtocolError": "errors", "RemoteProtocolError": "errors",
    "Command": "events", "ConnectionClosed": "events", "Event": "events", "Expert": "events", "Field": "events",
    "Frame": "events", "Gap": "events", "Greeting": "events", "HandshakeComplete": "events", "Message": "events",
    "MessageReceived": "events", "PingReceived": "events", "PongReceived": "events",
    "SubscriptionChanged": "events", "WireEvent": "events",
    "Mechanism": "mechanisms", "NullMechanism": "mechanisms", "PlainClient": "mechanisms",
    "PlainServer": "mechanisms",
    "ZwsFrame": "events", "ZwsGreeting": "events",
    "ZwsConnection": "zws_connection", "ZwsDissector": "zws_dissector",
}

__all__ = [
    "Command", "Connection", "ConnectionClosed", "ConnectionDissector", "CurveClient", "CurveServer", "Event",
    "Expert", "Field", "Frame", "Gap", "Greeting", "HandshakeComplete", "LocalProtocolError", "Mechanism",
    "Message", "MessageReceived", "NullMechanism", "PingReceived", "PlainClient", "PlainServer", "PongReceived",
    "ProtocolError", "RemoteProtocolError", "StreamDecoder", "SubscriptionChanged", "WireEvent",
    "ZwsConnection", "ZwsDissector", "ZwsFrame", "ZwsGreeting", "generate_keypair", "z85_decode", "z85_encode",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        try:  # a submodule not imported yet, e.g. `zmtplab.engine.framing`
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from .connection import Connection
    from .curve import CurveClient, CurveServer, generate_keypair, z85_decode, z85_encode
    from .decoder import StreamDecoder
    from .dissector import ConnectionDissector
    from .errors import LocalProtocolError, ProtocolError, RemoteProtocolError
    from .events import (
        Command,
        ConnectionClosed,
        Event,
        Expert,
        Field,
        Frame,
        Gap,
        Greeting,
        HandshakeComplete,
        Message,
        MessageReceived,
        PingReceived,
        PongReceived,
        SubscriptionChanged,
        WireEvent,
        ZwsFrame,
        ZwsGreeting,
    )
    from .mechanisms import Mechanism, NullMechanism, PlainClient, PlainServer
    from .zws_connection import ZwsConnection
    from .zws_dissector import ZwsDissector
