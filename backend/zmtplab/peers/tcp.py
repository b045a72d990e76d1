"""Real peers over asyncio TCP that interoperate with libzmq: the I/O half of `session.PeerCore`.

```python
async with TcpPeer("PULL", on_event=print) as pull:
    endpoint = await pull.bind("tcp://127.0.0.1:0")        # -> "tcp://127.0.0.1:45123"
    ...
    frames = await pull.recv(timeout=5)                      # list[bytes]

push = TcpPeer("PUSH", heartbeat_ivl=1.0)
push.connect("tcp://127.0.0.1:45123")                       # returns at once; reconnects with backoff
await push.send([b"hello", b"world"])                        # waits at the high-water mark
await push.close()
```

Endpoints are `tcp://host:port` (ZMTP) or `ws://host:port/path` (45/ZWS: ZeroMQ over WebSocket, the
engine's `ZwsConnection` on the same TCP driver; NULL or PLAIN, the subprotocols from `zws_protocols`).

`TcpPeer(socket_type, *, name="", on_event=None, on_wire=None, report_messages=False,
fast_path=True, sndbuf=0, rcvbuf=0, **options)` (sndbuf/rcvbuf: each connection's kernel socket
buffers and asyncio write buffer, in octets, 0 the system's) takes every `PeerOptions` field as a
keyword (identity, version,
mechanism, username/password, plain_server, plain_users, curve_server, curve_publickey,
curve_secretkey, curve_serverkey, curve_authenticate, heartbeat_ivl/ttl/timeout, handshake_ivl,
reconnect_ivl(_max), sndhwm, rcvhwm, max_frame_size, immediate, xpub_verbose, properties, zws_protocols).

- `await bind(endpoint) -> str` (port 0 or `*` picks one; the real endpoint is returned); any
  number of connections is accepted. `connect(endpoint) -> str` starts a connecter that
  reconnects after `reconnect_ivl` (plus libzmq's random jitter, doubling up to
  `reconnect_ivl_max`) whenever the connection fails or ends; `await wait_ready(n)` waits for n
  connections to finish their handshake.
- `await send(frames, timeout=None)`, `send_nowait(frames)` (raises `Again`), `await recv(timeout=None)`,
  `recv_nowait()`, `subscribe(topic)`, `unsubscribe(topic)`.
- `await drain(timeout=None) -> bool` waits until nothing is queued (messages in pipes, those of a
  connect() whose connection is not up yet included, and octets in transports); `unsent()` counts it.
  `await close(linger=1.0)` drains for up to `linger` s (ZMQ_LINGER: negative waits as long as it
  takes, 0 drops at once; connecters keep reconnecting meanwhile) and then closes everything.
- `on_event(dict)` gets peer-level events (`{"kind": "peer", "what": "connected" | "accepted" |
  "handshake" | "closed" | "ping" | "pong" | "ping-sent" | "subscription" | "reconnect" |
  "connect-failed" | "ignored" | "received", "conn": ..., "t": seconds since the peer started,
  ...}`); `on_wire(conn_id, dir, data)` sees every byte read or written, per connection and
  direction (`c2s` is from the connecting side), so an observer can run a `ConnectionDissector`
  over a real session. `report_messages=True` adds a "received" event per message (as ZMTP
  delivered it, before the socket's rules).

I/O: writes are coalesced (one `transport.write` per connection per loop iteration); reading
parses everything a `data_received` brings (the engine's `FastPath` once a clear-text connection
is ready); a pipe at its receive high-water mark pauses reading, and `pause_writing` from the
transport stops draining the send pipes, so `send()` waits -- backpressure end to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket as pysocket
from collections.abc import Callable
from typing import Any, cast

from ..engine.errors import LocalProtocolError
from ..engine.notation import format_address
from ..engine.notation import parse_endpoint as parse_any_endpoint
from .options import PeerOptions
from .session import PeerConnection, PeerCore
from .sockets import Again, SocketStateError

__all__ = ["Again", "SocketStateError", "TcpPeer", "parse_endpoint", "ws_target"]

log = logging.getLogger("zmtplab.peers")
WireCallback = Callable[[str, str, bytes], None]
EventCallback = Callable[[dict[str, Any]], None]


def parse_endpoint(endpoint: str, *, bind: bool) -> tuple[str, int]:
    """(host, port) of `tcp://host:port` or `ws://host:port/path`; `*` as host (bind) is every interface, `*` or 0
    as port is any."""
    if "://" not in endpoint:
        raise ValueError(f"only tcp:// and ws:// endpoints are supported, not {endpoint!r}")
    parsed = parse_any_endpoint(endpoint, bind=bind)
    return parsed.host, parsed.port


def ws_target(endpoint: str) -> str | None:
    """The resource of a `ws://` endpoint ("/" when it names none), None for any other."""
    if not endpoint.startswith("ws://"):
        return None
    return "/" + endpoint[len("ws://"):].partition("/")[2]


class _ZmtpProtocol(asyncio.Protocol):
    """One TCP connection: bytes <-> `PeerConnection`."""

    def __init__(self, peer: TcpPeer, *, is_client: bool, connecter: _Connecter | None = None,
                 ws: tuple[str, str] | None = None) -> None:
        """`ws`: (Host header, resource) for a ws:// connection, whose engine is a `ZwsConnection`."""
        self.peer = peer
        self.is_client = is_client
        self.connecter = connecter
        self.ws = ws
        self.transport: asyncio.Transport | None = None
        self.pc: PeerConnection | None = None
        self.loop = peer._use_loop()
        self.lost = self.loop.create_future()
        self._flush_scheduled = False
        self._write_paused = False
        self._read_paused = False
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._closing = False

    # ---- asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A TCP connection's transport is a Transport (uvloop's are not its subclasses, so no isinstance).
        stream = self.transport = cast(asyncio.Transport, transport)
        peer = self.peer
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(pysocket.IPPROTO_TCP, pysocket.TCP_NODELAY, 1)
                for option, size in zip((pysocket.SO_SNDBUF, pysocket.SO_RCVBUF), peer.buffers, strict=True):
                    if size:
                        sock.setsockopt(pysocket.SOL_SOCKET, option, size)
        if peer.buffers[0]:  # (asyncio's own write buffer would otherwise hold what the kernel's does not)
            stream.set_write_buffer_limits(high=peer.buffers[0])
        conn_id = str(next(peer._ids))
        pipe = self.connecter.pipe if self.connecter is not None else None
        connection = None
        if self.ws is not None:
            connection = peer.options.make_zws_connection(client=self.is_client, host=self.ws[0], target=self.ws[1])
        pc = self.pc = peer.core.open_connection(conn_id, is_client=self.is_client, pipe=pipe, connection=connection)
        peer._protocols[conn_id] = self
        remote = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        peer.core.peer_event("connected" if self.is_client else "accepted", pc,
                             remote=_addr(remote), local=_addr(local))
        pc.start(self.loop.time())
        self._after_io()

    def data_received(self, data: bytes) -> None:
        pc = self.pc
        assert pc is not None
        on_wire = self.peer.on_wire
        if on_wire is not None:
            on_wire(pc.id, pc.in_dir, data)
        pc.receive(data, self.loop.time())
        self._after_io()

    def eof_received(self) -> bool:
        pc = self.pc
        assert pc is not None
        pc.receive(b"", self.loop.time())
        self._after_io()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        pc = self.pc
        peer = self.peer
        if self._timer is not None:
            self._timer.cancel()
        if pc is not None:
            pc.lost(f"connection lost: {exc}" if exc else "connection closed")
            peer._protocols.pop(pc.id, None)
            peer.core.forget(pc)
        if not self.lost.done():
            self.lost.set_result(None)
        peer._changed()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self.schedule_flush()

    # ---- our side

    def schedule_flush(self) -> None:
        if not self._flush_scheduled and self.transport is not None:
            self._flush_scheduled = True
            self.loop.call_soon(self._flush_cb)

    def _flush_cb(self) -> None:
        self._flush_scheduled = False
        self._after_io()

    def _flush(self) -> None:
        pc = self.pc
        transport = self.transport
        if pc is None or transport is None or self._closing:
            return
        pipe = pc.pipe
        before = len(pipe.out) if pipe is not None else 0
        data = pc.take_output(0 if self._write_paused else 256 * 1024)
        if data:
            on_wire = self.peer.on_wire
            if on_wire is not None:
                on_wire(pc.id, pc.out_dir, data)
            transport.write(data)
        if pipe is not None and len(pipe.out) < before:
            self.peer._wake_senders()
        if not self._write_paused and pc.has_output and not pc.closed:
            self.schedule_flush()

    def _after_io(self) -> None:
        pc = self.pc
        if pc is None or self._closing:
            return
        self._flush()
        peer = self.peer
        if pc.closed:
            self._closing = True
            if self.transport is not None:
                self.transport.close()  # writes what is buffered first
            peer._changed()
            return
        blocked = pc.read_blocked
        if blocked != self._read_paused and self.transport is not None:
            self._read_paused = blocked
            if blocked:
                self.transport.pause_reading()
            else:
                self.transport.resume_reading()
        deadline = pc.deadline
        if deadline != self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._timer_at = deadline
            if deadline is not None:
                self._timer = self.loop.call_at(deadline, self._on_timer)
        if peer._recv_waiter is not None and peer.core.socket.readable:
            peer._wake_receivers()

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        pc = self.pc
        if pc is not None:
            pc.on_timer(self.loop.time())
        self._after_io()

    def resume_if_unblocked(self) -> None:
        self._after_io()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


def _addr(addr: Any) -> str | None:
    if isinstance(addr, tuple) and len(addr) >= 2:
        return format_address(str(addr[0]), addr[1])
    return None


class _Connecter:
    """connect(): a persistent pipe and a task that (re)connects with libzmq's backoff."""

    def __init__(self, peer: TcpPeer, endpoint: str, host: str, port: int, pipe_id: str) -> None:
        self.peer = peer
        self.endpoint = endpoint
        self.host = host
        self.port = port
        self.pipe = peer.core.add_connect_pipe(pipe_id)
        target = ws_target(endpoint)
        self.ws = None if target is None else (endpoint[len("ws://"):].partition("/")[0], target)
        self.protocol: _ZmtpProtocol | None = None
        self.ivl = peer.options.reconnect_ivl
        self.stopped = False
        self.task = peer._use_loop().create_task(self._run())

    def _next_delay(self) -> float:
        opts = self.peer.options
        base = opts.reconnect_ivl
        jitter = self.peer.core.rng.random() * base if base > 0 else 0.0
        delay = self.ivl + jitter
        if opts.reconnect_ivl_max > base:
            self.ivl = min(self.ivl * 2, opts.reconnect_ivl_max)
        return delay

    async def _run(self) -> None:
        peer = self.peer
        loop = peer._use_loop()
        opts = peer.options
        while not self.stopped:
            try:
                _, proto = await asyncio.wait_for(
                    loop.create_connection(lambda: _ZmtpProtocol(peer, is_client=True, connecter=self, ws=self.ws),
                                           self.host, self.port),
                    timeout=max(opts.handshake_ivl, 1.0) if opts.handshake_ivl else None)
            except (TimeoutError, OSError) as exc:
                peer.core.peer_event("connect-failed", endpoint=self.endpoint,
                                     reason=str(exc) or exc.__class__.__name__)
            else:
                self.protocol = proto
                if self.stopped:
                    # stop() came as the connection completed, and Python 3.11's wait_for swallows such
                    # a cancellation: awaiting `lost` would wait for the other side to hang up.
                    break
                await proto.lost
                self.protocol = None
                if proto.pc is not None and proto.pc.ready:
                    self.ivl = opts.reconnect_ivl  # a connection that worked resets the backoff
            if self.stopped or opts.reconnect_ivl <= 0:
                break
            delay = self._next_delay()
            peer.core.peer_event("reconnect", endpoint=self.endpoint, delay=round(delay, 3))
            await asyncio.sleep(delay)

    async def stop(self) -> None:
        self.stopped = True
        if not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task


class TcpPeer:
    """A ZeroMQ socket over asyncio TCP (see the module docstring)."""

    def __init__(self, socket_type: str, *, name: str = "", on_event: EventCallback | None = None,
                 on_wire: WireCallback | None = None, report_messages: bool = False, fast_path: bool = True,
                 sndbuf: int = 0, rcvbuf: int = 0, **options: Any) -> None:
        self.options = PeerOptions(socket_type, **options)
        self.buffers = (sndbuf, rcvbuf)  # kernel socket buffers in octets, as ZMQ_SNDBUF/ZMQ_RCVBUF (0: the system's)
        self.on_event = on_event
        self.on_wire = on_wire
        self.core = PeerCore(self.options, name=name, emit=self._emit, on_output=self._want_flush,
                             fast_path=fast_path, report_messages=report_messages)
        self.core.on_read_unblocked = self._unblocked
        self._socket_send = self.core.socket.send_tuple
        self._socket_recv = self.core.socket.recv
        self.loop: asyncio.AbstractEventLoop | None = None  # the running loop, set on first use
        self._loop: asyncio.AbstractEventLoop | None = None
        self._t0 = 0.0
        self._protocols: dict[str, _ZmtpProtocol] = {}
        self._servers: list[asyncio.AbstractServer] = []
        self._connecters: list[_Connecter] = []
        self._ids = itertools.count(1)
        self._pipe_ids = itertools.count(1)
        self._recv_waiter: asyncio.Future | None = None
        self._send_waiter: asyncio.Future | None = None
        self._change_waiter: asyncio.Future | None = None
        self.closed = False
        self.endpoints: list[str] = []

    # ------------------------------------------------------------------ plumbing

    def _use_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self.loop = self._loop
            self._t0 = self._loop.time()
        return self._loop

    def _emit(self, event: dict[str, Any]) -> None:
        if self._loop is not None:
            event["t"] = round(self._loop.time() - self._t0, 6)
        if self.on_event is not None:
            self.on_event(event)
        if event.get("what") == "handshake":
            self._wake_senders()  # a pipe comes up: a send() waiting for a peer (bound PUSH) can go
        self._changed()

    def _changed(self) -> None:
        w = self._change_waiter
        if w is not None and not w.done():
            w.set_result(None)
        self._change_waiter = None

    def _want_flush(self, pc: PeerConnection) -> None:
        proto = self._protocols.get(pc.id)
        if proto is not None:
            proto.schedule_flush()

    def _unblocked(self, pc: PeerConnection) -> None:
        proto = self._protocols.get(pc.id)
        if proto is not None and self._loop is not None:
            self._loop.call_soon(proto.resume_if_unblocked)

    def _wake_senders(self) -> None:
        w = self._send_waiter
        if w is not None:
            self._send_waiter = None
            if not w.done():
                w.set_result(None)

    def _wake_receivers(self) -> None:
        w = self._recv_waiter
        if w is not None:
            self._recv_waiter = None
            if not w.done():
                w.set_result(None)

    async def _wait(self, attr: str, deadline: float | None) -> None:
        loop = self._use_loop()
        fut = getattr(self, attr)
        if fut is None or fut.done():
            fut = loop.create_future()
            setattr(self, attr, fut)
        if deadline is None:
            await asyncio.shield(fut)
            return
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError
        await asyncio.wait_for(asyncio.shield(fut), remaining)

    # ------------------------------------------------------------------ endpoints

    async def bind(self, endpoint: str) -> str:
        """Listens on `endpoint`; returns it with the real port."""
        loop = self._use_loop()
        host, port = parse_endpoint(endpoint, bind=True)
        target = ws_target(endpoint)
        self._check_ws(target)
        ws = None if target is None else ("", target)
        server = await loop.create_server(lambda: _ZmtpProtocol(self, is_client=False, ws=ws), host, port,
                                          reuse_address=True)
        self._servers.append(server)
        sock = server.sockets[0]
        name = sock.getsockname()
        shown = f"[{name[0]}]" if ":" in name[0] else name[0]
        real = f"tcp://{shown}:{name[1]}" if target is None else f"ws://{shown}:{name[1]}{target}"
        self.endpoints.append(real)
        self.core.peer_event("listening", endpoint=real)
        return real

    def connect(self, endpoint: str) -> str:
        """Starts connecting to `endpoint` (and reconnecting when needed); returns at once."""
        self._use_loop()
        host, port = parse_endpoint(endpoint, bind=False)
        self._check_ws(ws_target(endpoint))
        connecter = _Connecter(self, endpoint, host, port, f"connect-{next(self._pipe_ids)}")
        self._connecters.append(connecter)
        return endpoint

    def _check_ws(self, target: str | None) -> None:
        """ValueError when this peer cannot speak ZWS (a ws:// endpoint) as it is set up."""
        if target is not None:
            try:
                self.options.make_zws_connection(client=True)
            except LocalProtocolError as exc:
                raise ValueError(str(exc)) from None

    async def disconnect(self, endpoint: str) -> None:
        """Stops connecting to `endpoint` and closes its connection."""
        for connecter in [c for c in self._connecters if c.endpoint == endpoint]:
            await connecter.stop()
            self._connecters.remove(connecter)
            if connecter.protocol is not None and connecter.protocol.transport is not None:
                connecter.protocol.transport.close()
            self.core.socket.remove_pipe(connecter.pipe)

    # ------------------------------------------------------------------ messages

    @property
    def connections(self) -> dict[str, PeerConnection]:
        """The open connections by id."""
        return self.core.connections

    def ready_count(self) -> int:
        return sum(1 for pc in self.core.connections.values() if pc.ready and not pc.closed)

    async def wait_ready(self, count: int = 1, timeout: float | None = None) -> None:
        """Waits until `count` connections have completed their handshake."""
        await self.wait_for(lambda: self.ready_count() >= count, timeout)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float | None = None) -> None:
        """Waits until `predicate()` holds (checked whenever something happens); TimeoutError otherwise."""
        loop = self._use_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not predicate():
            try:
                await self._wait("_change_waiter", deadline)
            except TimeoutError:
                if predicate():
                    return
                raise TimeoutError(f"condition not met within {timeout} s") from None

    @staticmethod
    def _frames(frames: Any) -> tuple[bytes, ...]:
        kind = type(frames)
        if kind is list or kind is tuple:
            for f in frames:
                if type(f) is not bytes:
                    break
            else:  # the common case: already a list or tuple of bytes
                if not frames:
                    raise ValueError("a message has at least one frame")
                return frames if kind is tuple else tuple(frames)
        if isinstance(frames, (bytes, bytearray, memoryview, str)):
            raise TypeError("a message is a list of frames (bytes)")
        out = tuple(f.encode() if isinstance(f, str) else bytes(f) for f in frames)
        if not out:
            raise ValueError("a message has at least one frame")
        return out

    def send_nowait(self, frames: Any) -> None:
        """Queues one message now; raises `Again` when it would block, `SocketStateError` when not allowed."""
        if self.closed:
            raise SocketStateError("the peer is closed")
        self.core.socket.send_tuple(self._frames(frames))

    async def send(self, frames: Any, timeout: float | None = None) -> None:
        """Queues one message, waiting while no pipe can take it (no peer yet, or high-water mark)."""
        kind = type(frames)
        if kind is list or kind is tuple:
            for f in frames:
                if type(f) is not bytes:
                    msg = self._frames(frames)
                    break
            else:
                msg = frames if kind is tuple else tuple(frames)
                if not msg:
                    raise ValueError("a message has at least one frame")
                if not self.closed:
                    try:
                        self._socket_send(msg)  # the common case: taken at once
                        return
                    except Again:
                        pass
        else:
            msg = self._frames(frames)
        send = self._socket_send
        deadline = None
        while True:
            if self.closed:
                raise SocketStateError("the peer is closed")
            try:
                send(msg)
                return
            except Again:
                loop = self._use_loop()
                if deadline is None and timeout is not None:
                    deadline = loop.time() + timeout
                try:
                    await self._wait("_send_waiter", deadline)
                except TimeoutError:
                    raise TimeoutError(f"send did not complete within {timeout} s") from None

    def recv_nowait(self) -> list[bytes] | None:
        """The next message, or None."""
        msg = self._socket_recv()
        return list(msg) if msg is not None else None

    async def recv(self, timeout: float | None = None) -> list[bytes]:
        """The next message (a list of frames)."""
        recv = self.core.socket.recv
        deadline = None
        while True:
            msg = recv()
            if msg is not None:
                return list(msg)
            if self.closed:
                raise SocketStateError("the peer is closed")
            loop = self._use_loop()
            if deadline is None and timeout is not None:
                deadline = loop.time() + timeout
            try:
                await self._wait("_recv_waiter", deadline)
            except TimeoutError:
                raise TimeoutError(f"nothing received within {timeout} s") from None

    def subscribe(self, topic: bytes | str) -> None:
        self.core.subscribe(topic.encode() if isinstance(topic, str) else bytes(topic))
        self._flush_all()

    def unsubscribe(self, topic: bytes | str) -> None:
        self.core.unsubscribe(topic.encode() if isinstance(topic, str) else bytes(topic))
        self._flush_all()

    def _flush_all(self) -> None:
        for proto in self._protocols.values():
            proto.schedule_flush()

    # ------------------------------------------------------------------ closing

    def unsent(self) -> tuple[int, int]:
        """What is not on the wire yet: messages queued in pipes (up or still connecting), octets in transports."""
        messages = sum(len(p.out) for p in self.core.socket.pipes.values())
        octets = 0
        for proto in self._protocols.values():
            if proto.transport is not None and not proto.transport.is_closing():
                octets += proto.transport.get_write_buffer_size()
        return messages, octets

    def pending_output(self) -> int:
        """Messages still queued in pipes plus octets still buffered in transports."""
        return sum(self.unsent())

    async def drain(self, timeout: float | None = None) -> bool:
        """Waits up to `timeout` s (None: as long as it takes) until nothing is unsent; whether nothing is."""
        loop = self._use_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self.pending_output():
            if deadline is not None and loop.time() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    def abort(self) -> None:
        """Aborts every connection at once (what was not written yet is lost), as a process that dies would."""
        for proto in list(self._protocols.values()):
            proto.abort()

    async def close(self, linger: float = 1.0) -> None:
        """Stops listening, drains for up to `linger` s (negative: as long as it takes), closes everything."""
        if self.closed:
            return
        for server in self._servers:
            server.close()
        if linger != 0:
            # Connecters keep (re)connecting meanwhile: a connect()'s queue waits for its peer, as in libzmq.
            await self.drain(None if linger < 0 else linger)
        for connecter in self._connecters:
            connecter.stopped = True
        self.closed = True
        for connecter in self._connecters:
            await connecter.stop()
        protos = list(self._protocols.values())
        for proto in protos:
            if proto.pc is not None:
                proto.pc.close("peer closed")
            if proto.transport is not None:
                proto.transport.close()
        if protos:
            await asyncio.wait([p.lost for p in protos], timeout=1.0)
        for proto in protos:
            if not proto.lost.done():
                proto.abort()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)
        self._wake_receivers()
        self._wake_senders()
        self._changed()

    async def __aenter__(self) -> TcpPeer:
        self._use_loop()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
