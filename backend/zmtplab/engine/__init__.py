"""The sans-IO ZMTP engine: a strict peer (`Connection`) and a lenient dissector (`ConnectionDissector`).

It imports nothing else of ZMTP Lab and touches no socket, event loop or clock.
"""

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
)
from .mechanisms import Mechanism, NullMechanism, PlainClient, PlainServer

__all__ = [
    "Command", "Connection", "ConnectionClosed", "ConnectionDissector", "CurveClient", "CurveServer", "Event",
    "Expert", "Field", "Frame", "Gap", "Greeting", "HandshakeComplete", "LocalProtocolError", "Mechanism",
    "Message", "MessageReceived", "NullMechanism", "PingReceived", "PlainClient", "PlainServer", "PongReceived",
    "ProtocolError", "RemoteProtocolError", "StreamDecoder", "SubscriptionChanged", "WireEvent",
    "generate_keypair", "z85_decode", "z85_encode",
]
