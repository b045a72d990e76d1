"""A real session's nodes: ours (`LabSide`, a `peers.tcp.TcpPeer`) or libzmq's (`ZmqSide`, a pyzmq socket), made
from their `NodeSpec` (`lab_peer`, `zmq_side`) and driven alike (send, receive, subscribe, connect, close, kill);
`RealNode` is one node as the session runs it (where it listens, its connections, the messages it sent and read)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from ...peers.node import socket_options
from ...peers.sockets import Again, SocketStateError
from ...peers.tcp import TcpPeer
from ..session import SessionConfigError, SessionError
from .plan import NodeSpec

SEND_TIMEOUT = 5.0  # seconds a command's send waits for a connection that takes the message
RECV_RETRY = 0.005  # seconds before a REQ's application asks again for the reply it may not read yet


def curve_keypair() -> tuple[bytes, bytes]:
    """A new CURVE key pair: (public, secret)."""
    from nacl.public import PrivateKey

    secret = PrivateKey.generate()
    return bytes(secret.public_key), bytes(secret)


class LabSide:
    """One of our peers (`TcpPeer`)."""

    def __init__(self, peer: TcpPeer) -> None:
        self.peer = peer
        self.drain: asyncio.Task | None = None

    async def send(self, frames: list[bytes], timeout: float | None = SEND_TIMEOUT) -> None:
        try:
            await self.peer.send(frames, timeout=timeout)
        except TimeoutError:
            raise SessionError("could not send: no connection is ready to take the message") from None
        except (SocketStateError, Again, ValueError) as exc:
            raise SessionError(f"could not send: {exc}") from None

    async def try_send(self, frames: list[bytes]) -> bool:
        """Sends now if the socket takes the message at once; False when it would block."""
        try:
            self.peer.send_nowait(frames)
        except Again:
            return False
        except (SocketStateError, ValueError) as exc:
            raise SessionError(f"could not send: {exc}") from None
        return True

    async def recv(self) -> list[bytes]:
        while True:
            try:
                return await self.peer.recv()
            except SocketStateError:
                # A REQ before its request (or a REP owing its reply) may not read yet; libzmq's poll simply
                # waits: so does this application, until the socket's state allows it.
                if self.peer.closed:
                    raise
                await asyncio.sleep(RECV_RETRY)

    async def try_recv(self) -> list[bytes] | None:
        """The next message if one is waiting, else None."""
        try:
            return self.peer.recv_nowait()
        except SocketStateError as exc:
            raise SessionError(f"could not read: {exc}") from None

    def start_draining(self) -> None:
        async def run() -> None:
            with contextlib.suppress(Exception):
                while True:
                    await self.peer.recv()

        self.drain = asyncio.create_task(run())

    def subscribe_all(self, topic: bytes = b"") -> None:
        """A SUB subscribes to `topic` (every message by default)."""
        if self.peer.options.socket_type in ("SUB",):
            self.peer.subscribe(topic)

    def connect(self, endpoint: str) -> None:
        self.peer.connect(endpoint)

    async def close(self) -> None:
        if self.drain is not None:
            self.drain.cancel()
        await self.peer.close(linger=0)

    async def kill(self) -> None:
        """Dies at once: its connections are aborted, unwritten output is lost."""
        self.peer.abort()
        await self.close()


class ZmqSide:
    """A real libzmq socket (pyzmq's asyncio flavour)."""

    def __init__(self, context: Any, socket: Any, authenticator: Any = None) -> None:
        self.context = context
        self.socket = socket
        self.authenticator = authenticator
        self.drain: asyncio.Task | None = None
        self.monitor: asyncio.Task | None = None
        self.handshakes = 0  # connections whose handshake libzmq completed, and whose pipe the socket took
        self.handshake = asyncio.Event()  # set (and cleared by whoever waits) at each of them

    def watch(self) -> None:
        """Follows the socket's connections through libzmq's monitor. libzmq's I/O thread hands a connection's
        pipe to the socket (and takes a closed one away) as a command the socket processes only at its next
        send or receive, which libzmq throttles: a message sent soon after a handshake could go round the
        pipes without the new one. After each handshake and each disconnection the socket processes its
        commands at once (ZMQ_EVENTS), as an application that polls it would."""
        import zmq
        from zmq.utils.monitor import parse_monitor_message

        monitor = self.socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED)

        async def run() -> None:
            try:
                while True:
                    event = parse_monitor_message(await monitor.recv_multipart())["event"]
                    self.socket.getsockopt(zmq.EVENTS)  # (libzmq sent the pipe's command before the event)
                    if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                        self.handshakes += 1
                        self.handshake.set()
            except (asyncio.CancelledError, zmq.ZMQError):
                pass
            finally:
                monitor.close(linger=0)

        self.monitor = asyncio.create_task(run())

    async def send(self, frames: list[bytes], timeout: float | None = SEND_TIMEOUT) -> None:
        import zmq

        # libzmq's send processes the socket's pending commands (pipes attached or ended) only if it has not
        # done so in the last millisecond or so; ZMQ_EVENTS processes them now, so the message goes round the
        # pipes libzmq has told the socket about.
        self.socket.getsockopt(zmq.EVENTS)
        try:
            await asyncio.wait_for(self.socket.send_multipart(frames), timeout)
        except TimeoutError:
            raise SessionError("could not send: libzmq has no connection ready to take the message") from None
        except zmq.ZMQError as exc:
            raise SessionError(f"could not send: libzmq says {exc}") from None

    async def try_send(self, frames: list[bytes]) -> bool:
        """Sends now if libzmq takes the message at once (ZMQ_DONTWAIT); False on EAGAIN."""
        import zmq

        try:
            await self.socket.send_multipart(frames, flags=zmq.DONTWAIT)
        except zmq.Again:
            return False
        except zmq.ZMQError as exc:
            raise SessionError(f"could not send: libzmq says {exc}") from None
        return True

    async def recv(self) -> list[bytes]:
        return await self.socket.recv_multipart()

    async def try_recv(self) -> list[bytes] | None:
        """The next message if libzmq has one (ZMQ_DONTWAIT), else None."""
        import zmq

        try:
            return await self.socket.recv_multipart(flags=zmq.DONTWAIT)
        except zmq.Again:
            return None
        except zmq.ZMQError as exc:
            raise SessionError(f"could not read: libzmq says {exc}") from None

    def start_draining(self) -> None:
        async def run() -> None:
            with contextlib.suppress(Exception):
                while True:
                    await self.socket.recv_multipart()

        self.drain = asyncio.create_task(run())

    def subscribe_all(self, topic: bytes = b"") -> None:
        """A SUB subscribes to `topic` (every message by default)."""
        import zmq

        if self.socket.type == zmq.SUB:
            self.socket.setsockopt(zmq.SUBSCRIBE, topic)

    def connect(self, endpoint: str) -> None:
        self.socket.connect(endpoint)

    async def close(self) -> None:
        for task in (self.drain, self.monitor):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        self.socket.close(linger=0)
        if self.authenticator is not None:
            with contextlib.suppress(Exception):
                self.authenticator.stop()
        # term() waits for libzmq's I/O thread: never on the event loop.
        await asyncio.wait_for(asyncio.to_thread(self.context.destroy, 0), 5.0)

    async def kill(self) -> None:
        """Dies at once: linger 0 drops whatever libzmq had not yet written."""
        await self.close()


@dataclass
class RealNode:
    """One node as the session runs it (see the module docstring)."""

    spec: NodeSpec
    host: str
    side: LabSide | ZmqSide | None = None
    port: int = 0  # where it listens (0: it binds nothing)
    ws_port: int = 0  # where it listens for the ZWS connections of an external node the app bridges in (0: none)
    conns: dict[str, str] = field(default_factory=dict)  # our peer's connection id -> the session's (tap's)
    ports: dict[int, str] = field(default_factory=dict)  # our peer's connections not yet mapped, by port
    read: set[int] = field(default_factory=set)  # the message ids its application read
    pipe_conns: dict[str, str] = field(default_factory=dict)  # our peer's connect pipe -> its connection now
    sending: int | None = None  # the id of the message its application is sending
    out: set[int] = field(default_factory=set)  # the message ids it sent or, as a proxy's end, passed on
    blocked: bool = False  # our socket said a send blocks, and it has not gone yet
    pipes: dict[str, str] = field(default_factory=dict)  # our peer's connect pipe id -> the far node's name


Side = LabSide | ZmqSide


def lab_peer(spec: NodeSpec, keys: dict[str, bytes], topology: bool, on_event: Any = None) -> TcpPeer:
    """Our peer for node `spec`, as the simulation makes a node's socket (`socket_options`), with real CURVE keys;
    in a topology with its high-water marks and buffers, and `on_event` told of its connections."""
    server = spec.binds
    opts = socket_options(spec, server=server, name=spec.name)
    if topology:
        opts.update(sndhwm=spec.sndhwm, rcvhwm=spec.rcvhwm, sndbuf=spec.sndbuf, rcvbuf=spec.rcvbuf, on_event=on_event)
    if spec.mechanism == "CURVE":  # real keys here, where the simulation draws them from its seed
        if server:
            opts.update(curve_publickey=keys["server_public"], curve_secretkey=keys["server_secret"])
        else:
            opts.update(curve_serverkey=keys["server_public"], curve_publickey=keys["client_public"],
                        curve_secretkey=keys["client_secret"])
    try:
        return TcpPeer(spec.type, **opts)
    except ValueError as exc:
        raise SessionConfigError(f"{spec.name}: {exc}" if topology else str(exc)) from None


def zmq_side(cfg: NodeSpec, keys: dict[str, bytes], topology: bool) -> ZmqSide:
    """libzmq's socket for node `cfg` (pyzmq's asyncio flavour), with its mechanism's options and real CURVE keys;
    in a topology with its high-water marks and buffers."""
    import zmq
    import zmq.asyncio
    from zmq.utils import z85

    server = cfg.binds
    context = zmq.asyncio.Context()
    socket = context.socket(getattr(zmq, cfg.type))
    authenticator = None
    socket.setsockopt(zmq.LINGER, 0)
    if topology:
        socket.setsockopt(zmq.SNDHWM, cfg.sndhwm)
        socket.setsockopt(zmq.RCVHWM, cfg.rcvhwm)
        if cfg.sndbuf:
            socket.setsockopt(zmq.SNDBUF, cfg.sndbuf)
        if cfg.rcvbuf:
            socket.setsockopt(zmq.RCVBUF, cfg.rcvbuf)
    if cfg.identity:
        socket.setsockopt(zmq.ROUTING_ID, cfg.identity.encode())
    if cfg.mechanism == "PLAIN":
        if server:
            socket.setsockopt(zmq.PLAIN_SERVER, 1)
            if cfg.username:
                from zmq.auth.asyncio import AsyncioAuthenticator

                authenticator = AsyncioAuthenticator(context)
                authenticator.start()
                authenticator.configure_plain(domain="*", passwords={cfg.username: cfg.password})
        else:
            socket.setsockopt(zmq.PLAIN_USERNAME, cfg.username.encode())
            socket.setsockopt(zmq.PLAIN_PASSWORD, cfg.password.encode())
    elif cfg.mechanism == "CURVE":
        if server:
            socket.setsockopt(zmq.CURVE_SERVER, 1)
            socket.setsockopt(zmq.CURVE_PUBLICKEY, z85.encode(keys["server_public"]))
            socket.setsockopt(zmq.CURVE_SECRETKEY, z85.encode(keys["server_secret"]))
        else:
            socket.setsockopt(zmq.CURVE_SERVERKEY, z85.encode(keys["server_public"]))
            socket.setsockopt(zmq.CURVE_PUBLICKEY, z85.encode(keys["client_public"]))
            socket.setsockopt(zmq.CURVE_SECRETKEY, z85.encode(keys["client_secret"]))
    return ZmqSide(context, socket, authenticator)


def subscribe(node: RealNode, topic: bytes) -> None:
    """A topology's SUB or XSUB node subscribes to `topic` (an XSUB by sending the subscription message)."""
    side = node.side
    if isinstance(side, LabSide):
        side.peer.subscribe(topic)
    elif isinstance(side, ZmqSide):
        import zmq

        if node.spec.type == "SUB":
            side.socket.setsockopt(zmq.SUBSCRIBE, topic)
        else:
            side.socket.send(b"\x01" + topic)


def lab_peers(nodes: dict[str, RealNode]) -> list[TcpPeer]:
    """Our peers among `nodes` (libzmq's keep their keys to themselves)."""
    return [node.side.peer for node in nodes.values() if isinstance(node.side, LabSide)]
