"""A strict ZMTP peer, sans-IO: `receive_data()` bytes in, `next_event()` events out, `send()` bytes out.

The connection plays one side of one ZMTP connection. It negotiates the version as
23/ZMTP's "Detecting ZMTP 1.0 and 2.0 Peers" describes (strategy "partial", what libzmq
does: signature, then the major version, then the rest, so the greeting leaves in
10 + 1 + 53 octets) or sends its whole greeting at once (strategy "full"). It runs the
mechanism's handshake, checks the peer's socket type against 23/ZMTP's table (sending
ERROR and closing when it is invalid), answers PING with PONG, and turns frames into
whole messages. It never touches a socket or a clock.
"""

from __future__ import annotations

from .commands import cancel_body, error_body, ping_body, subscribe_body
from .constants import MAX_PING_CONTEXT, VERSIONS, mechanism_problem
from .decoder import StreamDecoder
from .detection import FAMILY_V1, FAMILY_V2, FAMILY_V3
from .errors import LocalProtocolError, RemoteProtocolError
from .events import Command, Event, Greeting, Message
from .framing import encode_frame, encode_message
from .greeting import encode_v1_identity, encode_v2_tail, greeting_rest, signature
from .mechanisms import MESSAGE_FLAG_COMMAND, MESSAGE_FLAG_MORE, Mechanism
from .strict_peer import CLOSED, GREETING, HANDSHAKE, READY, ConnectionState, StrictPeer

__all__ = ["CLOSED", "GREETING", "HANDSHAKE", "READY", "VERSIONS", "Connection", "ConnectionState"]


class Connection(StrictPeer):
    """One side of a ZMTP connection (see the module docstring; what it shares with the ZWS peer is
    `StrictPeer`'s)."""

    def __init__(
        self,
        socket_type: str,
        *,
        mechanism: Mechanism | None = None,
        identity: bytes = b"",
        version: str = "3.1",
        strategy: str = "partial",
        max_frame_size: int | None = None,
        properties: dict[str, bytes] | None = None,
    ) -> None:
        super().__init__(socket_type, mechanism=mechanism, identity=identity, properties=properties)
        if version not in VERSIONS:
            raise LocalProtocolError(f"unsupported version {version!r}; one of {', '.join(VERSIONS)}")
        if strategy not in ("partial", "full"):
            raise LocalProtocolError("strategy is 'partial' or 'full'")
        problem = mechanism_problem(version, self.mechanism.name)
        if problem:
            raise LocalProtocolError(problem)
        self.own_version = version
        self.strategy = strategy if version != "1.0" else "full"
        self._own_family = FAMILY_V3 if version.startswith("3") else version
        self.decoder = StreamDecoder(strict=True, peer_family=lambda: self._own_family,
                                      max_frame_size=max_frame_size)
        self._greeting_stage = 0  # 0 nothing sent, 1 signature, 2 + major, 3 complete
        self._started = False
        self._incoming_frames: list[bytes] = []

    # ------------------------------------------------------------------ public API

    def start(self) -> bytes:
        """The first bytes to write once the TCP connection is up."""
        if self._started:
            raise LocalProtocolError("start() was already called")
        self._started = True
        if self.own_version == "1.0":
            self._out += encode_v1_identity(self.identity)
            self._greeting_stage = 3
        elif self.strategy == "full":
            if self.own_version == "2.0":
                self._out += signature() + b"\x01" + encode_v2_tail(self.socket_type, self.identity)
            else:
                self._out += signature() + b"\x03" + self._greeting_rest()
            self._greeting_stage = 3
        else:
            # libzmq's way: a pseudo-signature whose padding is identity length + 1, so that a
            # 1.0 peer reads it as the header of our identity frame (15/ZMTP and 23/ZMTP).
            self._out += signature(len(self.identity))
            self._greeting_stage = 1
        return self.data_to_send()

    def receive_data(self, data: bytes) -> None:
        """Feeds bytes from the peer; raises `RemoteProtocolError` when they break the protocol."""
        if not self._receiving(data):
            return
        try:
            try:
                self.decoder.receive_data(data)
            except RemoteProtocolError as exc:
                # What was decoded before the bad bytes still counts (libzmq delivers it), so the
                # result does not depend on how the bytes were cut into chunks.
                failure: RemoteProtocolError | None = exc
            else:
                failure = None
            self._advance_greeting()
            while self.state != CLOSED:
                event = self.decoder.next_event()
                if event is None:
                    break
                self._handle(event)
            if failure is not None:
                raise failure
        except RemoteProtocolError as exc:
            self._close(str(exc), error=True)
            raise

    def send(self, frames: list[bytes] | tuple[bytes, ...]) -> bytes:
        """The wire bytes of one message; only once the handshake is complete."""
        self._check_send(frames)
        encrypted = self.mechanism.encode_message(frames)
        if encrypted is not None:
            return encrypted
        return encode_message(frames, framing=self._framing)

    def ping(self, ttl_ds: int = 0, context: bytes = b"") -> bytes:
        """A PING command (ZMTP 3.1 only); `ttl_ds` in deciseconds."""
        self._need_31("PING")
        if len(context) > MAX_PING_CONTEXT or not 0 <= ttl_ds <= 0xFFFF:
            raise LocalProtocolError("PING context is at most 16 octets and the TTL fits 16 bits")
        return self._command(ping_body(ttl_ds, context))

    def subscribe(self, topic: bytes) -> bytes:
        """A subscription: SUBSCRIBE for 3.1 peers, a 0x01-prefixed message for older ones."""
        return self._subscription(topic, True)

    def cancel(self, topic: bytes) -> bytes:
        """A cancelled subscription: CANCEL for 3.1 peers, a 0x00-prefixed message for older ones."""
        return self._subscription(topic, False)

    def close(self, reason: str = "closed locally") -> None:
        """Marks the connection closed from our side."""
        self._close(reason, error=False)

    @property
    def framing(self) -> str:
        """The framing in use: "3", "2" or "1"."""
        return self._framing

    # ------------------------------------------------------------------ internals

    @property
    def _framing(self) -> str:
        return self.decoder.framing or "3"

    def _greeting_rest(self) -> bytes:
        minor = int(self.own_version.split(".")[1])
        return greeting_rest(minor=minor, mechanism=self.mechanism.name, as_server=self.mechanism.as_server)

    def _command(self, body: bytes) -> bytes:
        if self.state not in (HANDSHAKE, READY):
            raise LocalProtocolError(f"cannot send a command in state {self.state}")
        encrypted = getattr(self.mechanism, "encode_command", None)
        if self.state == READY and encrypted is not None:
            return encrypted(body)
        return encode_frame(body, command=True, framing="3")

    def _need_31(self, what: str) -> None:
        if self.state != READY:
            raise LocalProtocolError(f"cannot send {what} before the handshake completes")
        if self.version != "3.1":
            raise LocalProtocolError(f"{what} needs ZMTP 3.1; this connection speaks {self.version}")

    def _subscription(self, topic: bytes, subscribe: bool) -> bytes:
        if self.socket_type not in ("SUB", "XSUB"):
            raise LocalProtocolError(f"a {self.socket_type} socket does not subscribe")
        if self.state != READY:
            raise LocalProtocolError("cannot subscribe before the handshake completes")
        if self.version == "3.1":
            return self._command(subscribe_body(topic) if subscribe else cancel_body(topic))
        return self.send([(b"\x01" if subscribe else b"\x00") + topic])

    def _fail(self, reason: str, *, send_error: bool = True) -> None:
        """Refuses the peer: queues ERROR (when the handshake allows one) and closes."""
        if send_error and self.state == HANDSHAKE and self._framing == "3":
            self._out += encode_frame(error_body(reason), command=True)
        self._close(reason, error=True)

    def _advance_greeting(self) -> None:
        """Sends the next piece of our greeting as the peer's greeting reveals its version."""
        if self.state != GREETING:
            return
        decoder = self.decoder
        family = decoder.family
        received = decoder.received
        if self._greeting_stage == 1:
            if family == FAMILY_V1:
                # The peer is 1.0: our 10 octets were the header of an identity frame; send its body.
                self._out += self.identity
                self._greeting_stage = 3
            elif received >= 10 and self.own_version == "2.0":
                # 15/ZMTP: the peer is 2.0 or later; send our revision, socket type and identity.
                self._out += b"\x01" + encode_v2_tail(self.socket_type, self.identity)
                self._greeting_stage = 3
            elif received >= 10:
                self._out += b"\x03"
                self._greeting_stage = 2
        if self._greeting_stage == 2 and family is not None and received >= 11:
            if family == FAMILY_V3:
                self._out += self._greeting_rest()
            elif family == FAMILY_V2:
                if self.mechanism.name != "NULL":
                    self._fail(f"peer speaks ZMTP 2.0, which cannot do {self.mechanism.name}", send_error=False)
                    return
                self._out += encode_v2_tail(self.socket_type, self.identity)
            self._greeting_stage = 3
        if family not in (None, FAMILY_V3, self._own_family) and self._own_family != FAMILY_V1:
            if self.strategy == "full":
                self._fail(f"peer speaks ZMTP {family}; a full-greeting peer cannot downgrade", send_error=False)
            elif self.mechanism.name != "NULL":
                self._fail(f"peer speaks ZMTP {family}, which cannot do {self.mechanism.name}", send_error=False)

    def _handle(self, event: Event) -> None:
        if isinstance(event, Message):
            self._on_message(event)
        elif isinstance(event, Command):
            self._on_command(event)
        elif isinstance(event, Greeting):
            self._on_greeting(event)

    def _on_greeting(self, greeting: Greeting) -> None:
        if greeting.version in ("1.0", "2.0"):
            self.version = greeting.version
            self.peer_socket_type = greeting.socket_type
            self.peer_identity = greeting.identity or b""
            self.state = HANDSHAKE
            if greeting.version == "2.0" and greeting.socket_type is None:
                return  # an octet 15/ZMTP lacks: the decoder's error, raised right after this event, closes
            if self.peer_socket_type is not None and not self._check_peer_type(self.peer_socket_type):
                return
            self._handshake_done({})
            return
        if self.own_version in ("1.0", "2.0"):
            # We announced an older version; a 3.x peer is expected to downgrade, not send a 3.x greeting.
            self._fail(f"peer sent a ZMTP {greeting.version} greeting to a {self.own_version} peer",
                       send_error=False)
            return
        peer_major, peer_minor = (int(x) for x in greeting.version.split(".")[:2])
        own_minor = int(self.own_version.split(".")[1])
        self.version = "3.1" if (peer_major > 3 or peer_minor >= 1) and own_minor >= 1 else "3.0"
        self.state = HANDSHAKE
        if (greeting.mechanism or "") != self.mechanism.name:
            # 23/ZMTP: a mechanism mismatch MUST close the connection.
            self._fail(f"mechanism mismatch: we use {self.mechanism.name}, peer announced {greeting.mechanism}",
                       send_error=False)
            return
        # libzmq 4.3 sends as-server 0 even from a PLAIN or CURVE server, so a client cannot insist on
        # seeing 1; only two peers that both claim the server role are refused.
        if self.mechanism.name != "NULL" and greeting.as_server and self.mechanism.as_server:
            self._fail(f"both peers are servers of {self.mechanism.name}")
            return
        step = self.mechanism.start(self._metadata())
        self._apply(step)

    def _on_command(self, command: Command) -> None:
        if self.state == HANDSHAKE:
            self._apply(self.mechanism.on_command(command, self._metadata()))
            return
        if self._on_traffic_command(command):
            return
        if command.name == "MESSAGE" and self.mechanism.name == "CURVE":
            flags, body = self.mechanism.decode_message_command(command)
            if flags & MESSAGE_FLAG_COMMAND:
                self._on_command_inside(body)
                return
            self._incoming_frames.append(body)
            if not flags & MESSAGE_FLAG_MORE:
                frames, self._incoming_frames = tuple(self._incoming_frames), []
                self._deliver(frames)
        # Other commands (JOIN, LEAVE, unknown) are ignored, as libzmq ignores them.

    def _on_command_inside(self, body: bytes) -> None:
        """A command that CURVE carried inside a MESSAGE box (flags bit 1 in libzmq's encoding)."""
        from .commands import decode_command

        decoded = decode_command(body, 0, "CURVE-INNER")
        inner = Command(0, len(body), name=decoded.name, raw=body, details=decoded.details)
        self._on_command(inner)

    def _on_message(self, message: Message) -> None:
        if self.state != READY:
            raise RemoteProtocolError("message before the handshake completed", offset=message.offset,
                                      rule="traffic")
        if self.mechanism.name == "CURVE":
            # libzmq sends each CURVE MESSAGE as a data frame (COMMAND clear): open every one as a MESSAGE.
            for part in message.parts:
                self._on_command(Command(part.offset, part.length, name="MESSAGE", raw=part.header + part.body))
                if self.state != READY:
                    return
            return
        self._deliver(tuple(message.frames))
