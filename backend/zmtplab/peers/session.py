"""A peer without I/O: one socket (`sockets.Socket`) and its connections, each an engine `Connection`
plus libzmq's per-connection timers (handshake timeout, heartbeats). Both runtimes drive it.

A runtime creates a `PeerCore`, opens a `PeerConnection` for every TCP connection (or simulated
link), and then only moves bytes and time:

- `pc.start(now)` once the transport is up, `pc.receive(data, now)` for bytes in (`b""` for
  end-of-stream), `pc.on_timer(now)` when `pc.deadline` (a time, or None) has passed;
- `pc.take_output()` for the bytes to write (greeting pieces, handshake commands, PONGs, PINGs and
  the messages queued in the connection's pipe); after it, `pc.closed` says the transport should be
  closed once those bytes are written;
- `pc.read_blocked` says the pipe is at its receive high-water mark: stop reading until
  `PeerCore.on_read_unblocked` fires for it.

The core reports what happens as peer-level event dicts (`{"kind": "peer", "what": ...}`) through
its `emit` callback, and asks for output to be flushed through `on_output(pc)`.

Timers follow libzmq 4.3 (stream_engine_base/zmtp_engine): the handshake must finish within
`handshake_ivl`; once ready, a 3.1 connection sends PING (TTL = `heartbeat_ttl` in deciseconds)
every `heartbeat_ivl`; a PING that goes out arms a timeout of `heartbeat_timeout` (default: the
interval), a received PING with a TTL arms a timer of that TTL, and any traffic from the peer
disarms both. When one fires the connection is closed ("heartbeat timeout").
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

from ..engine import Connection, RemoteProtocolError, ZwsConnection
from ..engine.connection import CLOSED, READY
from ..engine.errors import LocalProtocolError
from ..engine.events import (
    ConnectionClosed,
    HandshakeComplete,
    MessageReceived,
    PingReceived,
    PongReceived,
    SubscriptionChanged,
)
from ..engine.fastpath import FastPath
from .options import PeerOptions
from .sockets import Again, Pipe, Socket, Subscription

log = logging.getLogger("zmtplab.peers")

C2S, S2C = "c2s", "s2c"
OUTPUT_BUDGET = 256 * 1024  # octets of queued messages encoded per take_output() call
_NO_TIMERS = (None, None, None, None)


class PeerCore:
    """One peer: options, socket semantics and connections (see the module docstring)."""

    def __init__(self, options: PeerOptions, *, name: str = "", rng: random.Random | None = None,
                 emit: Callable[[dict[str, Any]], None] | None = None,
                 on_output: Callable[[PeerConnection], None] | None = None,
                 fast_path: bool = True, report_messages: bool = False, log_closures: bool = True) -> None:
        self.options = options
        self.log_closures = log_closures
        self.name = name
        self.rng = rng or random.Random()
        self.socket = Socket(options.socket_type, sndhwm=options.sndhwm, rcvhwm=options.rcvhwm,
                             immediate=options.immediate, xpub_verbose=options.xpub_verbose, rng=self.rng)
        self.socket.on_output = self._pipe_output
        self.socket.on_read_unblocked = self._pipe_unblocked
        self.emit = emit or (lambda event: None)
        self.on_output = on_output or (lambda pc: None)
        self.on_read_unblocked: Callable[[PeerConnection], None] = lambda pc: None
        self.fast_path = fast_path
        self.report_messages = report_messages
        self.connections: dict[str, PeerConnection] = {}
        self._pipe_conn: dict[str, PeerConnection] = {}
        # CURVE session keys of this peer's connections, as they complete their handshakes: (the client's
        # short-term public key, the session key) pairs, the lines of a key log (engine.curve.keylog_line).
        self.session_keys: list[tuple[bytes, bytes]] = []

    def session_key(self, client_short: bytes) -> bytes | None:
        """The CURVE session key of this peer's connection whose client short-term public key is `client_short`
        (one that completed its handshake, or one still in it that has made its key), or None."""
        live = (pc.conn.mechanism.session_keys() for pc in list(self.connections.values()))
        for found in (*self.session_keys, *live):
            if found is not None and found[0] == client_short:
                return found[1]
        return None

    # ------------------------------------------------------------------ connections

    def open_connection(self, conn_id: str, *, is_client: bool, pipe: Pipe | None = None,
                        connection: Connection | ZwsConnection | None = None) -> PeerConnection:
        """A new connection; `pipe` is the connect-side pipe it serves (bind side: created on handshake)."""
        pc = PeerConnection(self, conn_id, is_client=is_client, pipe=pipe, connection=connection)
        self.connections[conn_id] = pc
        return pc

    def add_connect_pipe(self, pipe_id: str) -> Pipe:
        """The persistent pipe of a connect() (messages queue in it before the connection is up)."""
        return self.socket.add_pipe(pipe_id, connect_side=True)

    def _pipe_output(self, pipe: Pipe) -> None:
        pc = self._pipe_conn.get(pipe.id)
        if pc is not None and pc.ready:
            self.on_output(pc)

    def _pipe_unblocked(self, pipe: Pipe) -> None:
        pc = self._pipe_conn.get(pipe.id)
        if pc is not None:
            self.on_read_unblocked(pc)

    def _attach(self, pc: PeerConnection, peer_identity: bytes, version: str) -> str | None:
        pipe = pc.pipe
        if pipe is None:
            pipe = pc.pipe = self.socket.add_pipe(pc.id, connect_side=False)
        refused = self.socket.pipe_up(pipe, peer_identity=peer_identity, version=version)
        if refused is None:
            self._pipe_conn[pipe.id] = pc
        elif not pipe.connect_side:
            self.socket.remove_pipe(pipe)
            pc.pipe = None
        return refused

    def _detach(self, pc: PeerConnection) -> None:
        pipe = pc.pipe
        if pipe is None or self._pipe_conn.get(pipe.id) is not pc:
            return
        del self._pipe_conn[pipe.id]
        self.socket.pipe_down(pipe)

    def forget(self, pc: PeerConnection) -> None:
        """The runtime is done with a closed connection."""
        self.connections.pop(pc.id, None)

    # ------------------------------------------------------------------ application API

    def send(self, frames: list[bytes] | tuple[bytes, ...]) -> None:
        """Queues one message by the socket's rules; raises `Again` or `SocketStateError`."""
        self.socket.send(frames)

    def recv(self) -> tuple[bytes, ...] | None:
        """The next message for the application, or None."""
        return self.socket.recv()

    def subscribe(self, topic: bytes) -> None:
        self.socket.subscribe(topic)

    def unsubscribe(self, topic: bytes) -> None:
        self.socket.unsubscribe(topic)

    def peer_event(self, what: str, pc: PeerConnection | None = None, **data: Any) -> None:
        event: dict[str, Any] = {"kind": "peer", "peer": self.name, "what": what}
        if pc is not None:
            event["conn"] = pc.id
        event.update(data)
        self.emit(event)

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly view of the peer and its connections."""
        return {"options": self.options.describe(), "socket": self.socket.describe(),
                "connections": {cid: pc.describe() for cid, pc in self.connections.items()}}


class PeerConnection:
    """One ZMTP connection of a peer: engine `Connection`, timers and its pipe (see the module docstring)."""

    def __init__(self, core: PeerCore, conn_id: str, *, is_client: bool, pipe: Pipe | None = None,
                 connection: Connection | ZwsConnection | None = None) -> None:
        self.core = core
        self.id = conn_id
        self.is_client = is_client
        self.out_dir = C2S if is_client else S2C
        self.in_dir = S2C if is_client else C2S
        self.conn = connection or core.options.make_connection()
        self.pipe = pipe
        self.ready = False
        self.closed = False
        self.close_reason: str | None = None
        self.mute = False  # a fault: this side stops writing anything (a hung peer)
        self.ignored = False  # attached to nothing (ROUTER duplicate identity): its messages are dropped
        self.received = 0  # octets
        self.sent = 0
        self.messages_in = 0
        self.handshake_deadline: float | None = None
        self.ping_deadline: float | None = None
        self.timeout_deadline: float | None = None
        self.ttl_deadline: float | None = None
        self._out: list[bytes] = []
        self._fast: FastPath | None = None  # bulk encoding
        self._fast_rx: FastPath | None = None  # bulk decoding
        self._ping_seq = 0

    # ------------------------------------------------------------------ runtime API

    @property
    def read_blocked(self) -> bool:
        pipe = self.pipe
        return pipe is not None and pipe.read_blocked and self.ready

    @property
    def deadline(self) -> float | None:
        """The earliest timer, or None."""
        timers = (self.handshake_deadline, self.ping_deadline, self.timeout_deadline, self.ttl_deadline)
        if timers == _NO_TIMERS:  # the common case (asked before every simulation step)
            return None
        best = None
        for t in timers:
            if t is not None and (best is None or t < best):
                best = t
        return best

    def start(self, now: float) -> None:
        """The transport is up: our first greeting bytes, and the handshake timer."""
        self._out.append(self.conn.start())
        ivl = self.core.options.handshake_ivl
        if ivl and ivl > 0:
            self.handshake_deadline = now + ivl

    def receive(self, data: bytes, now: float) -> None:
        """Bytes from the peer (b"" at end of stream)."""
        if self.closed:
            return
        if not data:
            self.conn.receive_data(b"")
            self._drain_events(now)
            if not self.closed:
                self._close("peer closed the connection", error=False)
            return
        self.received += len(data)
        if self.ready:
            self.timeout_deadline = None
            self.ttl_deadline = None
            fast = self._fast_rx
            if fast is not None:
                messages = fast.receive(data)
                if messages:
                    self.messages_in += len(messages)
                    if self.core.report_messages:
                        for frames in messages:
                            self.core.peer_event("received", self, frames=[f.hex() for f in frames])
                    if self.pipe is not None and not self.ignored:
                        self.core.socket.deliver_many(self.pipe, messages)
                if fast.fell_back:
                    self._drain_events(now)
                if fast.error is not None:
                    self._protocol_error(fast.error)
                return
        try:
            self.conn.receive_data(data)
        except RemoteProtocolError as exc:
            self._drain_events(now)
            self._protocol_error(exc)
            return
        self._drain_events(now)

    def on_timer(self, now: float) -> None:
        """Handles every timer whose time has come."""
        if self.closed:
            return
        opts = self.core.options
        if self.handshake_deadline is not None and now >= self.handshake_deadline:
            self.handshake_deadline = None
            self._fail(f"handshake timed out: not complete after {opts.handshake_ivl:g} s")
            return
        if self.ttl_deadline is not None and now >= self.ttl_deadline:
            self._fail("heartbeat timeout: nothing received within the TTL the peer's PING asked for")
            return
        if self.timeout_deadline is not None and now >= self.timeout_deadline:
            self._fail(f"heartbeat timeout: no traffic within {opts.effective_heartbeat_timeout:g} s of a PING")
            return
        if self.ping_deadline is not None and now >= self.ping_deadline:
            self.ping_deadline = now + opts.heartbeat_ivl
            ttl_ds = min(round(opts.heartbeat_ttl * 10), 0xFFFF)
            try:
                self._out.append(self.conn.ping(ttl_ds))
            except LocalProtocolError:
                self.ping_deadline = None
                return
            timeout = opts.effective_heartbeat_timeout
            if self.timeout_deadline is None and timeout > 0:
                self.timeout_deadline = now + timeout
            self.core.peer_event("ping-sent", self, ttl=ttl_ds)

    def take_output(self, budget: int = OUTPUT_BUDGET) -> bytes:
        """Every byte to write now: the engine's own output, then queued messages (up to `budget` octets)."""
        conn = self.conn
        out = self._out
        if conn.has_data_to_send:  # (asking first is cheaper than an empty data_to_send(), the common case)
            out.append(conn.data_to_send())
        pipe = self.pipe
        if self.ready and not self.closed and pipe is not None and pipe.out and not self.ignored:
            self._encode_pipe(pipe, budget)
        if not out:
            return b""
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        if self.mute:
            return b""
        self.sent += len(data)
        return data

    @property
    def has_output(self) -> bool:
        """Whether `take_output()` may have bytes: the engine's own, or queued messages once ready."""
        pipe = self.pipe
        return (bool(self._out) or self.conn.has_data_to_send
                or (self.ready and pipe is not None and bool(pipe.out)))

    def close(self, reason: str = "closed locally") -> None:
        """Closes from our side (the runtime then closes the transport)."""
        if not self.closed:
            self.conn.close(reason)
            self._close(reason, error=False)

    def lost(self, reason: str) -> None:
        """The transport is gone (reset, or closed under us)."""
        if not self.closed:
            self._close(reason, error=True)

    # ------------------------------------------------------------------ internals

    def _encode_pipe(self, pipe: Pipe, budget: int) -> None:
        conn = self.conn
        items = pipe.out
        out = self._out
        fast = self._fast
        size = 0
        while items and size < budget:
            item = items[0]
            if fast is not None and type(item) is tuple:  # takes at least this message (the common case first)
                data, _ = fast.encode_queue(items, budget - size)
                out.append(data)
                size += len(data)
                continue
            if isinstance(item, Subscription):
                items.popleft()
                try:
                    data = conn.subscribe(item.topic) if item.subscribe else conn.cancel(item.topic)
                except LocalProtocolError:
                    continue
                out.append(data)
                size += len(data)
                continue
            items.popleft()
            data = conn.send(item)
            out.append(data)
            size += len(data)

    def _drain_events(self, now: float) -> None:
        core = self.core
        conn = self.conn
        while True:
            event = conn.next_event()
            if event is None:
                break
            if isinstance(event, MessageReceived):
                self.messages_in += 1
                if core.report_messages:
                    core.peer_event("received", self, frames=[f.hex() for f in event.frames])
                if self.pipe is not None and not self.ignored:
                    core.socket.deliver(self.pipe, event.frames)
            elif isinstance(event, HandshakeComplete):
                self._on_handshake(event, now)
            elif isinstance(event, SubscriptionChanged):
                core.peer_event("subscription", self, topic=event.topic.hex(), subscribe=event.subscribe)
                if self.pipe is not None and not self.ignored:
                    core.socket.on_subscription(self.pipe, event.topic, event.subscribe)
            elif isinstance(event, PingReceived):
                ttl = event.ttl
                if ttl and self.ttl_deadline is None:
                    self.ttl_deadline = now + ttl / 10
                core.peer_event("ping", self, ttl=ttl, context=event.context.hex())
            elif isinstance(event, PongReceived):
                core.peer_event("pong", self, context=event.context.hex())
            elif isinstance(event, ConnectionClosed):
                self._close(event.reason, error=event.error)

    def _on_handshake(self, event: HandshakeComplete, now: float) -> None:
        core = self.core
        opts = core.options
        self.ready = True
        self.handshake_deadline = None
        # Heartbeats: 3.1's PING commands, and over ZWS WebSocket pings (libzmq's ws engine pings so too).
        if opts.heartbeat_ivl > 0 and (event.version == "3.1" or self.conn.framing == "zws"):
            self.ping_deadline = now + opts.heartbeat_ivl
        info = {"version": event.version, "mechanism": event.mechanism,
                "peer_socket_type": event.peer_socket_type, "peer_identity": event.peer_identity.hex()}
        if event.user_id is not None:
            info["user_id"] = event.user_id
        core.peer_event("handshake", self, **info)
        keys = self.conn.mechanism.session_keys()
        if keys is not None:
            core.session_keys.append(keys)
        refused = core._attach(self, event.peer_identity, event.version)
        if refused is not None:
            if core.socket.type == "ROUTER":
                self.ignored = True
                core.peer_event("ignored", self, reason=refused)
                if core.log_closures:
                    log.warning("%s connection %s: %s", core.name or core.socket.type, self.id, refused)
            else:
                self._fail(refused)
            return
        if self.pipe is not None:
            self.pipe.read_blocked = len(self.pipe.inq) >= core.socket.rcvhwm
        conn = self.conn
        if (core.fast_path and isinstance(conn, Connection) and conn.framing == "3"
                and conn.mechanism.name in ("NULL", "PLAIN")):
            self._fast = FastPath(conn)
            # A publisher's incoming messages may be 3.0-style subscriptions: the engine turns those into
            # SubscriptionChanged events, so they keep the engine's own receive path.
            if conn.socket_type not in ("PUB", "XPUB"):
                self._fast_rx = self._fast
        if self.pipe is not None and self.pipe.out:
            core.on_output(self)

    def _protocol_error(self, exc: RemoteProtocolError) -> None:
        reason = f"protocol error: {exc}"
        if not self.closed:
            self._close(reason, error=True)
        else:
            self.close_reason = self.close_reason or reason

    def _fail(self, reason: str) -> None:
        self.conn.close(reason)
        self._close(reason, error=True)

    def _close(self, reason: str, *, error: bool) -> None:
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        self.handshake_deadline = self.ping_deadline = self.timeout_deadline = self.ttl_deadline = None
        core = self.core
        core._detach(self)
        core.peer_event("closed", self, reason=reason, error=error)
        name = core.name or core.socket.type
        if not core.log_closures:
            return
        if error:
            log.warning("%s connection %s closed: %s", name, self.id, reason)
        else:
            log.info("%s connection %s closed: %s", name, self.id, reason)

    def describe(self) -> dict[str, Any]:
        conn = self.conn
        return {"dir": self.out_dir, "state": "closed" if self.closed else conn.state, "version": conn.version,
                "mechanism": conn.mechanism.name, "peer_socket_type": conn.peer_socket_type,
                "peer_identity": conn.peer_identity.hex(), "received": self.received, "sent": self.sent,
                "pipe": self.pipe.id if self.pipe is not None else None, "close_reason": self.close_reason,
                "mute": self.mute}


__all__ = ["C2S", "CLOSED", "READY", "S2C", "Again", "PeerConnection", "PeerCore"]
