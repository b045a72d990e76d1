"""A strict ZWS peer (45/ZWS: ZeroMQ over WebSocket 2.0), sans-IO, with `Connection`'s interface.

The WebSocket protocol is wsproto's (the opening handshake through h11, framing, masking, ping/pong, the
closing handshake); this module adds ZWS on top: the subprotocol offered and chosen (`zws.client_offer`,
`zws.choose`), one binary message per ZeroMQ frame with its flag octet, then either the mechanism's
handshake (NULL's READY, PLAIN's HELLO/WELCOME/INITIATE/READY: the engine's mechanisms, as for ZMTP) or,
for `ZWS2.0` without mechanism, each side's routing id as its first message. It checks the peer's socket
type against 23/ZMTP's table (45/ZWS "Socket Compatibility"), answers WebSocket pings, and turns frames
into whole messages. It never touches a socket or a clock.

`start()`, `receive_data()`, `next_event()`, `data_to_send()`, `send()`, `subscribe()`, `cancel()`,
`ping()` and `close()` are `Connection`'s, so the peers' runtimes drive either one; `framing` is "zws".
"""

from __future__ import annotations

import contextlib

from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState as WsState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    Pong,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError as WsLocalError
from wsproto.utilities import RemoteProtocolError as WsRemoteError

from .commands import decode_command, error_body
from .errors import LocalProtocolError, RemoteProtocolError
from .events import Command, PingReceived, PongReceived
from .mechanisms import Mechanism
from .strict_peer import CLOSED, HANDSHAKE, READY, StrictPeer
from .zws import FLAG_COMMAND, FLAG_MORE, RESERVED_FLAGS, choose, client_offer, fits, mechanism_of, routing_ids

MECHANISMS = ("NULL", "PLAIN")
"""The mechanisms this peer speaks over ZWS (45/ZWS defines NULL and PLAIN; libzmq adds CURVE, read by the
dissector only)."""


class ZwsConnection(StrictPeer):
    """One side of a ZWS connection (see the module docstring; what it shares with ZMTP's `Connection` is
    `StrictPeer`'s)."""

    framing = "zws"

    def __init__(
        self,
        socket_type: str,
        *,
        client: bool,
        mechanism: Mechanism | None = None,
        identity: bytes = b"",
        host: str = "localhost",
        target: str = "/",
        protocols: list[str] | None = None,
        max_frame_size: int | None = None,
        properties: dict[str, bytes] | None = None,
    ) -> None:
        """`protocols`: a client's offer (default: libzmq's for the mechanism, `ZWS2.0/NULL,ZWS2.0` for
        NULL), or the subprotocols a server accepts (default: every one that fits its mechanism)."""
        super().__init__(socket_type, mechanism=mechanism, identity=identity, properties=properties)
        if self.mechanism.name not in MECHANISMS:
            raise LocalProtocolError(f"ZWS here speaks {' and '.join(MECHANISMS)}, not {self.mechanism.name}")
        offer = list(protocols) if protocols is not None else (client_offer(self.mechanism.name) if client else None)
        if offer is not None and not any(fits(p, self.mechanism.name) for p in offer):
            raise LocalProtocolError(f"none of {', '.join(offer) or 'no subprotocols'} fits the "
                                     f"{self.mechanism.name} mechanism")
        self.client = client
        self.host = host
        self.target = target
        self.protocols = offer
        self.max_frame_size = max_frame_size
        self.protocol: str | None = None  # the subprotocol chosen (also `version`, what HandshakeComplete says)
        self.ws = WSConnection(ConnectionType.CLIENT if client else ConnectionType.SERVER)
        self._started = False
        self._message = bytearray()  # the WebSocket message being received
        self._frames: list[bytes] = []  # the frames of the ZeroMQ message being received

    # ------------------------------------------------------------------ public API

    def start(self) -> bytes:
        """The first bytes to write once the TCP connection is up: a client's HTTP upgrade request (a server
        waits for the request)."""
        if self._started:
            raise LocalProtocolError("start() was already called")
        self._started = True
        if self.client:
            self._out += self.ws.send(Request(host=self.host, target=self.target, subprotocols=self.protocols or []))
        return self.data_to_send()

    def receive_data(self, data: bytes) -> None:
        """Feeds bytes from the peer (b"" at end of stream); raises `RemoteProtocolError` when they break the
        protocol (having queued what tells the peer: a rejection or a close frame)."""
        if not self._receiving(data):
            return
        try:
            self.ws.receive_data(data)
            for event in self.ws.events():
                self._on_ws_event(event)
                if self.state == CLOSED:
                    break
        except WsRemoteError as exc:  # the opening handshake (HTTP, or the upgrade's headers)
            if not self.client and exc.event_hint is not None:
                with contextlib.suppress(WsLocalError):  # (a hint wsproto cannot send in its state)
                    self._out += self.ws.send(exc.event_hint)
            self._close(f"bad WebSocket upgrade: {exc}", error=True)
            raise RemoteProtocolError(f"bad WebSocket upgrade: {exc}", offset=0, rule="upgrade") from None
        except RemoteProtocolError as exc:
            self._fail(str(exc), code=1002)
            raise

    def send(self, frames: list[bytes] | tuple[bytes, ...]) -> bytes:
        """The wire bytes of one message: one binary WebSocket message per frame; only once ready."""
        self._check_send(frames)
        last = len(frames) - 1
        return b"".join(self._frame(bytes(f), FLAG_MORE if i < last else 0) for i, f in enumerate(frames))

    def subscribe(self, topic: bytes) -> bytes:
        """A subscription: a %x01-prefixed message (45/ZWS Publish-Subscribe)."""
        return self._subscription(topic, True)

    def cancel(self, topic: bytes) -> bytes:
        """A cancelled subscription: a %x00-prefixed message."""
        return self._subscription(topic, False)

    def ping(self, ttl_ds: int = 0, context: bytes = b"") -> bytes:
        """A WebSocket ping carrying `context` (libzmq's ZWS heartbeat; a TTL has no place in it)."""
        if self.state != READY:
            raise LocalProtocolError("cannot ping before the handshake completes")
        if len(context) > 125:
            raise LocalProtocolError("a ping carries at most 125 octets")
        return self.ws.send(Ping(payload=context))

    def close(self, reason: str = "closed locally") -> None:
        """Marks the connection closed from our side, with a close frame (1000) when the WebSocket is open."""
        if self.state == CLOSED:
            return
        self._send_close(1000, reason)
        self._close(reason, error=False)

    # ------------------------------------------------------------------ WebSocket events

    def _on_ws_event(self, event: object) -> None:
        if isinstance(event, BytesMessage):
            self._message += event.data
            if self.max_frame_size is not None and len(self._message) > self.max_frame_size + 1:
                self._fail(f"frame of more than {self.max_frame_size} octets", code=1009)
                return
            if event.message_finished:
                payload, self._message = bytes(self._message), bytearray()
                self._on_payload(payload)
        elif isinstance(event, Ping):
            self._out += self.ws.send(event.response())
            self._events.append(PingReceived(context=bytes(event.payload)))
        elif isinstance(event, Pong):
            self._events.append(PongReceived(context=bytes(event.payload)))
        elif isinstance(event, CloseConnection):
            self._on_close(event)
        elif isinstance(event, Request):
            self._on_request(event)
        elif isinstance(event, AcceptConnection):
            self._on_accept(event)
        elif isinstance(event, RejectConnection):
            self._close(f"the server refused the WebSocket upgrade: HTTP {event.status_code}", error=True)
        elif isinstance(event, TextMessage):
            raise RemoteProtocolError("a text message: ZWS messages are binary (45/ZWS)", offset=0, rule="opcode")

    def _on_request(self, request: Request) -> None:
        chosen = choose(list(request.subprotocols), self.mechanism.name, self.protocols)
        if chosen is None:
            offered = ", ".join(request.subprotocols) or "none"
            self._out += self.ws.send(RejectConnection(status_code=400))
            self._close(f"no subprotocol we speak among the client's: {offered}", error=True)
            return
        self.target = request.target
        self._out += self.ws.send(AcceptConnection(subprotocol=chosen))
        self._begin(chosen)

    def _on_accept(self, accept: AcceptConnection) -> None:
        chosen = accept.subprotocol
        if chosen is None:
            self._fail("the server chose no subprotocol", code=1002)
            return
        if not fits(chosen, self.mechanism.name):
            self._fail(f"the server chose {chosen}, which we cannot speak", code=1002)
            return
        self._begin(chosen)

    def _on_close(self, event: CloseConnection) -> None:
        if self.ws.state == WsState.OPEN:
            # wsproto says so for a frame it could not parse: the connection is ours to close.
            raise RemoteProtocolError(f"bad WebSocket frame: {event.reason}", offset=0, rule="frame")
        if self.ws.state == WsState.REMOTE_CLOSING:
            self._out += self.ws.send(event.response())
        normal = event.code in (1000, 1001)
        reason = (f"peer closed the WebSocket (code {event.code}: {event.reason})" if event.reason
                  else f"peer closed the WebSocket (code {event.code})")
        self._close(reason, error=self.state != READY or not normal)

    # ------------------------------------------------------------------ ZWS

    def _begin(self, protocol: str) -> None:
        self.protocol = self.version = protocol
        self.state = HANDSHAKE
        if routing_ids(protocol):
            self._out += self._frame(self.identity, 0)
            return
        self._apply(self.mechanism.start(self._metadata()))

    def _on_payload(self, payload: bytes) -> None:
        if not payload:
            raise RemoteProtocolError("an empty WebSocket message: a ZWS frame starts with its flag octet "
                                      "(45/ZWS Framing)", offset=0, rule="flags")
        flags, body = payload[0], payload[1:]
        if flags & RESERVED_FLAGS:
            raise RemoteProtocolError(f"reserved flag bits set: 0x{flags & RESERVED_FLAGS:02x}", offset=0,
                                      rule="flags")
        if routing_ids(self.protocol):
            if flags & FLAG_COMMAND:
                raise RemoteProtocolError("a command on a connection without mechanism, whose traffic is messages "
                                          "only (45/ZWS)", offset=0, rule="traffic")
            if self.state == HANDSHAKE:
                if flags:
                    raise RemoteProtocolError(f"a routing id is one final message frame; its flags are 0x{flags:02x}",
                                              offset=0, rule="identity")
                self.peer_identity = body
                self._handshake_done({})
                return
        if flags & FLAG_COMMAND:
            self._on_command(body, flags)
            return
        if self.state != READY:
            raise RemoteProtocolError("message before the handshake completed", offset=0, rule="traffic")
        self._frames.append(body)
        if not flags & FLAG_MORE:
            frames, self._frames = tuple(self._frames), []
            self._deliver(frames)

    def _on_command(self, body: bytes, flags: int) -> None:
        if flags & FLAG_MORE:
            raise RemoteProtocolError("MORE flag set on a command frame", offset=0, rule="flags")
        decoded = decode_command(body, 0, mechanism_of(self.protocol))
        for severity, text, rule, at, _ in decoded.problems:
            if severity == "error":
                raise RemoteProtocolError(text, offset=at, rule=rule)
        command = Command(0, len(body), name=decoded.name, raw=body, details=decoded.details,
                          metadata=decoded.metadata)
        if self.state == HANDSHAKE:
            self._apply(self.mechanism.on_command(command, self._metadata()))
            return
        self._on_traffic_command(command)  # (other commands are ignored, as libzmq ignores them)

    # ------------------------------------------------------------------ internals

    def _command(self, body: bytes) -> bytes:
        return self._frame(body, FLAG_COMMAND)

    def _frame(self, body: bytes, flags: int) -> bytes:
        return self.ws.send(BytesMessage(data=bytes((flags,)) + body))

    def _subscription(self, topic: bytes, subscribe: bool) -> bytes:
        if self.socket_type not in ("SUB", "XSUB"):
            raise LocalProtocolError(f"a {self.socket_type} socket does not subscribe")
        if self.state != READY:
            raise LocalProtocolError("cannot subscribe before the handshake completes")
        return self.send([(b"\x01" if subscribe else b"\x00") + topic])

    def _send_close(self, code: int, reason: str) -> None:
        if self.ws.state in (WsState.OPEN, WsState.REMOTE_CLOSING):
            self._out += self.ws.send(CloseConnection(code=code, reason=reason[:100]))

    def _fail(self, reason: str, *, send_error: bool = True, code: int = 1008) -> None:
        """Refuses the peer: an ERROR during a mechanism's handshake (as `Connection` does), then a close frame."""
        if self.state == CLOSED:
            return
        if send_error and self.state == HANDSHAKE and not routing_ids(self.protocol):
            self._out += self._command(error_body(reason))
        self._send_close(code, reason)
        self._close(reason, error=True)
