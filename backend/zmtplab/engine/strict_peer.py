"""What a strict peer does whatever carries its frames: `StrictPeer`, the base of `Connection` (ZMTP over TCP)
and `ZwsConnection` (ZMTP over WebSocket, 45/ZWS).

Once here: the peer events and the bytes to send, the mechanism's steps (`_apply`), the peer's metadata
and socket type checked against 23/ZMTP's table, the commands of an established connection answered (PING,
PONG, SUBSCRIBE, CANCEL, ERROR), and messages delivered (a publisher's 3.0-style subscriptions recognised).
A subclass frames: `_command(body)` is the wire bytes of one command, and `_fail(reason, send_error=)`
refuses the peer its way.
"""

from __future__ import annotations

from collections import deque
from enum import StrEnum

from .commands import pong_body
from .constants import IDENTITY_AWARE, SOCKET_TYPES, VALID_PEERS
from .errors import LocalProtocolError
from .events import (
    Command,
    ConnectionClosed,
    Event,
    HandshakeComplete,
    MessageReceived,
    PingReceived,
    PongReceived,
    SubscriptionChanged,
)
from .mechanisms import Mechanism, NullMechanism, Step


class ConnectionState(StrEnum):
    """Where a connection is; a `str` (`"ready"`, ...), so it reads and prints as its value."""

    GREETING = "greeting"
    HANDSHAKE = "handshake"
    READY = "ready"
    CLOSED = "closed"


GREETING, HANDSHAKE, READY, CLOSED = ConnectionState


class StrictPeer:
    """One side of a connection, its framing left to a subclass (see the module docstring)."""

    def __init__(self, socket_type: str, *, mechanism: Mechanism | None, identity: bytes,
                 properties: dict[str, bytes] | None) -> None:
        socket_type = socket_type.upper()
        if socket_type not in SOCKET_TYPES:
            raise LocalProtocolError(f"unknown socket type {socket_type!r}")
        if len(identity) > 255:
            raise LocalProtocolError("an identity has at most 255 octets")
        self.socket_type = socket_type
        self.mechanism = mechanism or NullMechanism()
        self.identity = identity
        self.extra_properties = dict(properties or {})
        self.state: ConnectionState = GREETING
        self.version: str | None = None  # negotiated
        self.peer_socket_type: str | None = None
        self.peer_identity: bytes = b""
        self.peer_metadata: dict[str, bytes] = {}
        self.user_id: str | None = None
        self.close_reason: str | None = None
        self._events: deque[Event] = deque()
        self._out = bytearray()

    # ------------------------------------------------------------------ public API

    def next_event(self) -> Event | None:
        """The next peer event, or None when more data is needed."""
        return self._events.popleft() if self._events else None

    def events(self) -> list[Event]:
        """Every pending peer event."""
        out = list(self._events)
        self._events.clear()
        return out

    def data_to_send(self) -> bytes:
        """Bytes the connection produced by itself (greeting or upgrade, handshake replies, PONGs, ...)."""
        if not self._out:  # the usual answer: a peer asks after every write
            return b""
        out = bytes(self._out)
        self._out.clear()
        return out

    @property
    def has_data_to_send(self) -> bool:
        """Whether `data_to_send()` has bytes (cheaper than asking for them)."""
        return bool(self._out)

    def _check_send(self, frames: list[bytes] | tuple[bytes, ...]) -> None:
        """LocalProtocolError unless a message of `frames` may be sent now (ready, one frame at least)."""
        if self.state != READY:
            raise LocalProtocolError(f"cannot send a message in state {self.state}")
        if not frames:
            raise LocalProtocolError("a message has at least one frame")

    # ------------------------------------------------------------------ the subclass's framing

    def _command(self, body: bytes) -> bytes:
        """The wire bytes of one command frame carrying `body`."""
        raise NotImplementedError

    def _fail(self, reason: str, *, send_error: bool = True) -> None:
        """Refuses the peer (an ERROR where the handshake allows one) and closes."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the rules

    def _metadata(self) -> dict[str, bytes]:
        props = {"Socket-Type": self.socket_type.encode()}
        if self.socket_type in IDENTITY_AWARE:
            props["Identity"] = self.identity
        props.update(self.extra_properties)
        return props

    def _apply(self, step: Step) -> None:
        """What the mechanism wants after a command: commands to send, the peer's metadata once it is done."""
        if step.error is not None:
            self._fail(step.error, send_error=step.reply_error)
            return
        if step.user_id is not None:
            self.user_id = step.user_id
        if step.done:
            # Check the peer's metadata before anything we send says we accept it.
            metadata = step.peer_metadata or {}
            lowered = {k.lower(): v for k, v in metadata.items()}
            peer_type = lowered.get("socket-type", b"").decode("ascii", "replace").upper()
            if not peer_type:
                self._fail("peer's metadata has no Socket-Type")
                return
            self.peer_metadata = metadata
            self.peer_socket_type = peer_type
            self.peer_identity = lowered.get("identity", b"")
            if not self._check_peer_type(peer_type):
                return
        for body in step.send:
            self._out += self._command(body)
        if step.done:
            self._handshake_done(self.peer_metadata)

    def _check_peer_type(self, peer_type: str) -> bool:
        if peer_type not in VALID_PEERS.get(self.socket_type, frozenset()):
            self._fail(f"invalid socket type: a {self.socket_type} socket cannot talk to {peer_type}")
            return False
        return True

    def _handshake_done(self, metadata: dict[str, bytes]) -> None:
        self.state = READY
        self._events.append(HandshakeComplete(version=self.version or "", mechanism=self.mechanism.name,
                                              peer_socket_type=self.peer_socket_type,
                                              peer_identity=self.peer_identity,
                                              peer_properties=dict(metadata), user_id=self.user_id))

    def _on_traffic_command(self, command: Command) -> bool:
        """A command once the handshake is done: PING (answered with PONG), PONG, SUBSCRIBE, CANCEL, ERROR;
        False for any other (libzmq ignores those)."""
        name = command.name
        if name == "PING":
            context = bytes.fromhex(command.details.get("context", ""))
            self._out += self._command(pong_body(context))
            self._events.append(PingReceived(ttl=command.details.get("ttl", 0), context=context))
        elif name == "PONG":
            self._events.append(PongReceived(context=bytes.fromhex(command.details.get("context", ""))))
        elif name in ("SUBSCRIBE", "CANCEL"):
            self._events.append(SubscriptionChanged(topic=bytes.fromhex(command.details.get("topic", "")),
                                                    subscribe=name == "SUBSCRIBE"))
        elif name == "ERROR":
            self._close(f"peer sent ERROR: {command.details.get('reason', '')}", error=True)
        else:
            return False
        return True

    def _deliver(self, frames: tuple[bytes, ...]) -> None:
        if self.socket_type in ("PUB", "XPUB") and len(frames) == 1 and frames[0][:1] in (b"\x00", b"\x01"):
            self._events.append(SubscriptionChanged(topic=frames[0][1:], subscribe=frames[0][0] == 1))
            return
        self._events.append(MessageReceived(frames=frames))

    def _receiving(self, data: bytes) -> bool:
        """Whether `receive_data(data)` has bytes to read: not once closed; b"" (the end of the stream) closes."""
        if self.state == CLOSED:
            return False
        if not data:
            self._close("peer closed the connection", error=self.state != READY)
            return False
        return True

    def _close(self, reason: str, *, error: bool) -> None:
        if self.state == CLOSED:
            return
        self.state = CLOSED
        self.close_reason = reason
        self._events.append(ConnectionClosed(reason=reason, error=error))
