"""Real sessions over loopback TCP: nodes that are ours (`peers.tcp.TcpPeer`) or libzmq's (pyzmq), and taps.

A two-peer session has nodes `server` and `client` and one link; a topology session has up to
24 nodes and 32 links. Every node that is bound binds its own loopback address (127.0.0.N in a
topology, 127.0.0.1 for two peers) on a free port, and every link gets its own forwarding tap
on another free port: the link's connecting node connects to the tap, and for every
connection the tap opens one to the bound node and copies bytes both ways, feeding them to a
`ConnectionDissector` as they pass. The browser sees exactly what crossed the wire, whoever
produced it, each connection with its own id; a topology session's `conns` say which link it is.

Because every byte goes through a tap, the session controls the wire: `pause` holds bytes in
the taps (the peers feel TCP backpressure), `step` lets the next held chunk through, `play`
releases everything. Faults act on the wire too: `corrupt_byte`, `split_writes`, `delay` and
`close`; `kill` makes one node die at once, as if its process had been killed (whatever it had
not yet written is lost). A real session cannot step back.

A topology session brings its links up one at a time, in the topology's order (each waits for
the previous one's handshake, and a SUB's subscriptions to cross), so that a socket's pipes come
up in link order, as in the simulation; a link with a `delay` (a late joiner) connects that many
seconds after the others are up, and the script of a preset (its messages' `at` seconds) counts
from then too. Each node's application reads as its `recv` says (`auto`: at once; `{"every": s}`:
one message every s seconds, a slow consumer; `manual`: never by itself); what it reads is a
`peer recv` event. A REP node's application answers every request (see `_answer`); the two ends of
a `proxies` entry forward to each other, as zmq_proxy does. Our nodes' socket decisions
(`peers.sockets`) are `socket` events; libzmq keeps its decisions to itself.

When a tap cannot reach its node (it was killed, or stopped listening), it reports an `expert`
event "target ... unreachable", stops listening (so a reconnecting client is refused by the kernel
instead of spinning through the tap), and a session whose every tap did so says `closed`.
At most `session_max_connections` connections (or, in a topology, one per link if that is more)
go through the taps at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...engine.constants import mechanism_problem
from ...engine.dissector import ConnectionDissector
from ...peers import decisions
from ...peers.faults import SESSION_FAULTS
from ...peers.node import socket_options
from ...peers.simulation import RECV_DECISIONS
from ...peers.sockets import SUBSCRIBERS, Again, Pipe, Socket, SocketStateError, never_subscribed
from ...peers.tcp import TcpPeer
from ...peers.topology import Node, Topology
from ..models import PeerConfig, SessionCreate
from ..settings import Settings
from .session import Session, SessionConfigError, SessionError, SessionNotice, check_manual

log = logging.getLogger(__name__)

READ_SIZE = 64 * 1024
SEND_TIMEOUT = 5.0
LINK_UP_TIMEOUT = 5.0  # seconds a topology link gets to complete its handshake before the next one goes anyway
RECV_RETRY = 0.005  # seconds before a REQ's application asks again for the reply it may not read yet
SUBSCRIPTION_GRACE = 0.05  # after a subscription crossed the wire, time for the publisher to take it in
# The session faults a real TCP session takes, and those only a simulated one does (peers.faults).
FAULTS = tuple(name for name, f in SESSION_FAULTS.items() if f.tcp)
SIMULATED_ONLY = tuple(name for name, f in SESSION_FAULTS.items() if not f.tcp)
CANNOT_RECV = frozenset({"PUSH", "PUB"})


class NodeSpec(Node):
    """A node as a real session runs it (from a topology, or a two-peer body's side): the node spec,
    and whether some link binds it (it is then its mechanism's server). Its kernel buffers (`sndbuf`,
    `rcvbuf`) size the taps of its links too."""

    binds: bool = False

    @classmethod
    def of(cls, node: Node, binds: bool) -> NodeSpec:
        return cls(**dict(node), binds=binds)

    @property
    def every(self) -> float | None:
        """The slow consumer's interval between reads, or None."""
        return None if isinstance(self.recv, str) else float(self.recv)


@dataclass
class LinkSpec:
    """One link: `connect` opens a TCP connection to `bind`, `delay` seconds after the others are up."""

    index: int
    connect: str
    bind: str
    delay: float = 0.0


@dataclass
class Plan:
    """A real session's nodes, links, proxies and script (a two-peer body is nodes server/client, one link)."""

    nodes: list[NodeSpec]
    links: list[LinkSpec]
    proxies: list[tuple[str, str]] = field(default_factory=list)
    script: list[tuple[float, str, list[bytes]]] = field(default_factory=list)  # (at, from, frames)
    topology: bool = False  # False: the two-peer body, run exactly as before topologies

    @classmethod
    def two_peer(cls, config: SessionCreate) -> Plan:
        assert config.server is not None and config.client is not None  # (a two-peer body has both)
        return cls([NodeSpec.of(config.server.node("server"), True), NodeSpec.of(config.client.node("client"), False)],
                   [LinkSpec(0, "client", "server")])

    @classmethod
    def of(cls, topo: Topology) -> Plan:
        """A topology's plan."""
        nodes = [NodeSpec.of(n, topo.binds(n.name)) for n in topo.nodes]
        links = [LinkSpec(i, lk.connect, lk.bind, lk.at) for i, lk in enumerate(topo.links)]
        script = [(s.at, s.sender, list(s.frame_bytes())) for s in topo.script]
        return cls(nodes, links, [(p.frontend, p.backend) for p in topo.proxies], script, topology=True)


@dataclass
class _Held:
    link: _Link
    dir: str
    data: bytes
    done: asyncio.Future


@dataclass
class _Tap:
    """A link's listening tap: its connecting node connects here, each connection is forwarded to `target`."""

    spec: LinkSpec
    target: tuple[str, int]
    listener: asyncio.AbstractServer | None = None
    port: int = 0
    lost: bool = False
    up: asyncio.Event = field(default_factory=asyncio.Event)  # a connection's handshake (and subscriptions) done


@dataclass
class _Link:
    """One connection through a tap."""

    conn: str
    writers: dict[str, asyncio.StreamWriter]  # direction -> where its bytes go
    tap: _Tap | None = None
    dissector: ConnectionDissector = field(default_factory=ConnectionDissector)
    decryptor: Any = None  # a CURVE connection's CurveDecryptor, from its HELLO on (our peers know their keys)
    eof: set[str] = field(default_factory=set)
    closed: bool = False
    tasks: list[asyncio.Task] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})  # octets forwarded per direction
    ready: set[str] = field(default_factory=set)  # directions whose handshake is done
    subscriptions: int = 0  # SUBSCRIBE elements seen from a SUB end
    ports: tuple[int, int] = (0, 0)  # the client's own port, the tap's port towards the server
    tagged: dict[str, set[int]] = field(default_factory=lambda: {"c2s": set(), "s2c": set()})  # message ids seen


def _keys() -> tuple[bytes, bytes]:
    from nacl.public import PrivateKey

    secret = PrivateKey.generate()
    return bytes(secret.public_key), bytes(secret)


class _LabSide:
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


class _ZmqSide:
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
class _Node:
    spec: NodeSpec
    host: str
    side: _LabSide | _ZmqSide | None = None
    port: int = 0  # where it listens (0: it binds nothing)
    conns: dict[str, str] = field(default_factory=dict)  # our peer's connection id -> the session's (tap's)
    ports: dict[int, str] = field(default_factory=dict)  # our peer's connections not yet mapped, by port
    read: set[int] = field(default_factory=set)  # the message ids its application read
    pipe_conns: dict[str, str] = field(default_factory=dict)  # our peer's connect pipe -> its connection now
    sending: int | None = None  # the id of the message its application is sending
    out: set[int] = field(default_factory=set)  # the message ids it sent or, as a proxy's end, passed on
    blocked: bool = False  # our socket said a send blocks, and it has not gone yet
    pipes: dict[str, str] = field(default_factory=dict)  # our peer's connect pipe id -> the far node's name


Side = _LabSide | _ZmqSide


class TcpRuntime:
    """Drives a `tcp` session (see the module docstring)."""

    def __init__(self, session: Session, config: SessionCreate, settings: Settings,
                 topology: Topology | None = None) -> None:
        self.session = session
        self.config = config
        self.settings = settings
        self.plan = Plan.of(topology) if topology is not None else Plan.two_peer(config)
        self.playing = config.autoplay
        self.speed = 1.0
        self.nodes: dict[str, _Node] = {}
        self.taps: list[_Tap] = []
        self.links: dict[str, _Link] = {}  # open connections (closed ones are forgotten)
        self.conns: list[dict[str, Any]] = []  # every connection so far: conn, link, client, server (topologies)
        self.connections = 0  # connections the taps have carried
        self.killed: set[str] = set()
        self.held: deque[_Held] = deque()
        self.faults: list[tuple[str, dict[str, Any]]] = []
        self.started = False  # a topology: every link is up and the script's clock runs
        self._ids = itertools.count()
        self._msg_ids = itertools.count(1)
        self._msgs: dict[tuple[bytes, ...], list[int]] = {}  # a message's body -> the ids of its sends, oldest first
        self.reply_to: dict[int, int] = {}  # an echo's message id -> the id of the request it answers
        self._closed = False
        self._t0 = 0.0
        self._rng = random.Random()
        self._tasks: set[asyncio.Task] = set()
        self._on_topology: Callable[[], None] | None = getattr(session, "topology_changed", None)

    @staticmethod
    def check(config: SessionCreate) -> None:
        """Refuses configurations a real session cannot run."""
        for side in ("server", "client"):
            peer: PeerConfig = getattr(config, side)
            if peer.libzmq and peer.version != "3.1":
                raise SessionConfigError(f"{side}: a libzmq peer always announces ZMTP 3.1 (it downgrades by "
                                         "itself for older peers); choose version 3.1")
            problem = mechanism_problem(peer.version, peer.mechanism)
            if problem:
                raise SessionConfigError(f"{side}: {problem}")

    @staticmethod
    def check_topology(topo: Topology) -> None:
        """Refuses topologies a real session cannot run."""
        for node in topo.nodes:
            if node.libzmq and node.version != "3.1":
                raise SessionConfigError(f"{node.name}: a libzmq node always announces ZMTP 3.1 (it downgrades by "
                                         "itself for older peers); choose version 3.1")

    # ---- what the two-peer tests and tools know of the runtime

    @property
    def server(self) -> Side | None:
        node = self.nodes.get("server")
        return node.side if node is not None else None

    @property
    def client(self) -> Side | None:
        node = self.nodes.get("client")
        return node.side if node is not None else None

    @property
    def server_port(self) -> int:
        node = self.nodes.get("server")
        return node.port if node is not None else 0

    @property
    def tap(self) -> asyncio.AbstractServer | None:
        """The first link's tap (the only one of a two-peer session)."""
        return self.taps[0].listener if self.taps else None

    @property
    def tap_port(self) -> int:
        return self.taps[0].port if self.taps else 0

    @property
    def target_lost(self) -> bool:
        return bool(self.taps) and all(tap.lost for tap in self.taps)

    # ---- setup

    def _now(self) -> float:
        return asyncio.get_running_loop().time() - self._t0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._t0 = loop.time()
        plan = self.plan
        server_public, server_secret = _keys()
        client_public, client_secret = _keys()
        keys = {"server_public": server_public, "server_secret": server_secret,
                "client_public": client_public, "client_secret": client_secret}
        for i, spec in enumerate(plan.nodes):
            host = f"127.0.0.{i + 1}" if plan.topology else "127.0.0.1"
            node = self.nodes[spec.name] = _Node(spec, host)
            if spec.libzmq:
                node.side = self._zmq_side(spec, keys)
                if plan.topology:
                    node.side.watch()
                if spec.binds:
                    node.port = node.side.socket.bind_to_random_port(f"tcp://{host}")
            else:
                peer = self._lab_peer(spec, keys, node)
                node.side = _LabSide(peer)
                if spec.binds:
                    endpoint = await peer.bind(f"tcp://{host}:0")
                    node.port = int(endpoint.rsplit(":", 1)[1])
        for link in plan.links:
            target = self.nodes[link.bind]
            tap = _Tap(link, (target.host, target.port))
            limit = _tap_buffer(self.nodes[link.connect].spec, target.spec) or 1 << 16
            tap.listener = await asyncio.start_server(lambda r, w, tap=tap: self._accept(tap, r, w), "127.0.0.1", 0,
                                                      limit=limit)
            tap.port = tap.listener.sockets[0].getsockname()[1]
            self.taps.append(tap)
        if not plan.topology:
            client = self.nodes["client"].side
            assert client is not None  # (every node has its side by now)
            client.connect(f"tcp://127.0.0.1:{self.taps[0].port}")
            for node in self.nodes.values():
                assert node.side is not None
                if node.spec.subscribe:
                    node.side.subscribe_all(node.spec.subscribe[0].encode())
                node.side.start_draining()
            return
        for node in self.nodes.values():
            assert node.side is not None
            if node.spec.type in ("SUB", "XSUB"):
                for topic in node.spec.subscribe:
                    self._subscribe(node, topic.encode())
        self._spawn(self._bring_up())

    def _subscribe(self, node: _Node, topic: bytes) -> None:
        side = node.side
        if isinstance(side, _LabSide):
            side.peer.subscribe(topic)
        elif isinstance(side, _ZmqSide):
            import zmq

            if node.spec.type == "SUB":
                side.socket.setsockopt(zmq.SUBSCRIBE, topic)
            else:
                side.socket.send(b"\x01" + topic)

    def _spawn(self, coro: Any) -> asyncio.Task:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _lab_peer(self, cfg: NodeSpec, keys: dict[str, bytes], node: _Node) -> TcpPeer:
        server = cfg.binds
        opts = socket_options(cfg, server=server, name=cfg.name)  # as the simulation makes a node's socket
        if self.plan.topology:
            opts.update(sndhwm=cfg.sndhwm, rcvhwm=cfg.rcvhwm, sndbuf=cfg.sndbuf, rcvbuf=cfg.rcvbuf,
                        on_event=lambda event, node=node: self._peer_event(node, event))
        if cfg.mechanism == "CURVE":  # real keys here, where the simulation draws them from its seed
            if server:
                opts.update(curve_publickey=keys["server_public"], curve_secretkey=keys["server_secret"])
            else:
                opts.update(curve_serverkey=keys["server_public"], curve_publickey=keys["client_public"],
                            curve_secretkey=keys["client_secret"])
        try:
            peer = TcpPeer(cfg.type, **opts)
        except ValueError as exc:
            raise SessionConfigError(f"{cfg.name}: {exc}" if self.plan.topology else str(exc)) from None
        if self.plan.topology:
            self._watch_decisions(node, peer)
        return peer

    def _zmq_side(self, cfg: NodeSpec, keys: dict[str, bytes]) -> _ZmqSide:
        import zmq
        import zmq.asyncio
        from zmq.utils import z85

        server = cfg.binds
        context = zmq.asyncio.Context()
        socket = context.socket(getattr(zmq, cfg.type))
        authenticator = None
        socket.setsockopt(zmq.LINGER, 0)
        if self.plan.topology:
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
        return _ZmqSide(context, socket, authenticator)

    # ---- a topology's links, applications and script

    async def _bring_up(self) -> None:
        """Connects the links one at a time in order (each after the previous one is up, or has had its
        time), starts the applications and proxies, then the late joiners and the script on one clock."""
        plan = self.plan
        loop = asyncio.get_running_loop()
        handshakes: dict[str, int] = {}  # per libzmq node, the handshakes of its links brought up so far
        for tap in self.taps:
            if tap.spec.delay > 0:
                continue
            self._connect(tap)
            deadline = loop.time() + LINK_UP_TIMEOUT
            while not tap.up.is_set():
                # Paused, the tap holds the handshake: wait as long as the user takes, the clock restarts then.
                if self.playing and loop.time() > deadline:
                    self.session.error(f"link {tap.spec.index} ({tap.spec.connect} -> {tap.spec.bind}) did not "
                                       f"come up within {LINK_UP_TIMEOUT:g} s; the next one goes anyway")
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(tap.up.wait(), 0.05)
                if not self.playing:
                    deadline = loop.time() + LINK_UP_TIMEOUT
            if tap.up.is_set():
                await self._pipes_taken(tap, handshakes, loop.time() + LINK_UP_TIMEOUT)
        await asyncio.sleep(SUBSCRIPTION_GRACE)
        proxied = {name for pair in plan.proxies for name in pair}
        for node in self.nodes.values():
            if node.spec.name not in proxied and node.spec.type not in CANNOT_RECV and node.spec.recv != "manual":
                self._spawn(self._application(node))
        for front, back in plan.proxies:
            self._spawn(self._forward(self.nodes[front], self.nodes[back]))
            self._spawn(self._forward(self.nodes[back], self.nodes[front]))
        self.started = True
        self.session.push_state()  # (`up` in the state)
        start = loop.time()
        for tap in self.taps:
            if tap.spec.delay > 0:
                self._spawn(self._late(tap, start + tap.spec.delay))
        senders: dict[str, list[tuple[float, list[bytes]]]] = {}
        for at, name, frames in sorted(plan.script, key=lambda item: item[0]):
            senders.setdefault(name, []).append((at, frames))
        for name, messages in senders.items():
            self._spawn(self._play_script(name, start, messages))

    async def _pipes_taken(self, tap: _Tap, handshakes: dict[str, int], deadline: float) -> None:
        """Waits (until `deadline`) until each libzmq end of a link whose handshake crossed the wire has the
        link's pipe in its socket (see `_ZmqSide.watch`), so that its pipes are in link order before the next
        link, or a send, comes. (libzmq reports no handshake for a 1.0 or 2.0 peer: nothing to wait for.)"""
        loop = asyncio.get_running_loop()
        ends = [self.nodes[tap.spec.connect], self.nodes[tap.spec.bind]]
        if any(end.spec.version in ("1.0", "2.0") for end in ends):
            return
        for end in ends:
            side = end.side
            if not isinstance(side, _ZmqSide):
                continue
            want = handshakes[end.spec.name] = handshakes.get(end.spec.name, 0) + 1
            while side.handshakes < want and loop.time() < deadline:
                side.handshake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(side.handshake.wait(), deadline - loop.time())

    def _connect(self, tap: _Tap) -> None:
        node = self.nodes[tap.spec.connect]
        assert node.side is not None
        if isinstance(node.side, _LabSide):
            # (TcpPeer names a connect's pipe by the order of its connect() calls)
            node.pipes[f"connect-{len(node.pipes) + 1}"] = tap.spec.bind
        node.side.connect(f"tcp://127.0.0.1:{tap.port}")

    async def _late(self, tap: _Tap, when: float) -> None:
        await asyncio.sleep(max(0.0, when - asyncio.get_running_loop().time()))
        self._connect(tap)

    async def _play_script(self, name: str, start: float, messages: list[tuple[float, list[bytes]]]) -> None:
        """One node's part of the script, in order, each send at its `at` and never sooner after the node's
        previous send than the script has them apart: a send that blocks, or a machine too busy to send on
        time, holds back that node's later sends by as much, as an application's send loop would, instead of
        letting them leave in a burst (a burst of a PUB's updates would fill even a fast reader's pipe)."""
        loop = asyncio.get_running_loop()
        done, last = start, 0.0  # when the previous send returned, and its `at`
        for at, frames in messages:
            await asyncio.sleep(max(0.0, start + at - loop.time(), done + at - last - loop.time()))
            try:
                await self.send(name, frames, timeout=None)
            except SessionError as exc:
                self.session.error(f"{name}: {exc}")
            done, last = loop.time(), at

    async def _application(self, node: _Node) -> None:
        """The node's application reads as its `recv` says; a REP answers each request."""
        side = node.side
        assert side is not None
        every = node.spec.every
        with contextlib.suppress(SessionError, SocketStateError):
            while not self._closed:
                if every:
                    await asyncio.sleep(every)
                frames = await side.recv()
                msg = self._received(node, frames)
                if node.spec.echo:
                    await self._echo(node, frames, msg)

    async def _echo(self, node: _Node, frames: list[bytes], request: int | None) -> None:
        """An echoing application sends back what it read, as it read it (a REP: its reply; a ROUTER: to the
        identity the message came from)."""
        node.sending = self._sent(node, frames, reply_to=request)
        assert node.side is not None
        try:
            await node.side.send(frames, timeout=None)
        finally:
            node.sending = None

    async def _forward(self, source: _Node, sink: _Node) -> None:
        """One direction of a zmq_proxy between two nodes: whatever `source` receives, `sink` sends."""
        assert source.side is not None and sink.side is not None
        with contextlib.suppress(SessionError, SocketStateError):
            while not self._closed:
                frames = await source.side.recv()
                msg = self._known(source, frames)  # (a proxy hop keeps the message's id)
                if msg is not None:
                    source.read.add(msg)
                    sink.read.add(msg)  # (what comes back through the sink is another message: a reply)
                    sink.out.add(msg)
                sink.sending = msg
                try:
                    await sink.side.send(frames, timeout=None)
                finally:
                    sink.sending = None

    def _sent(self, node: _Node, frames: list[bytes], reply_to: int | None = None) -> int:
        """A new message id for an application's send, remembered by its body (see `_received`; a node never
        receives its own message: an echo's reply is a new one, `reply_to` the request's)."""
        msg = next(self._msg_ids)
        self._msgs.setdefault(_body(frames), []).append(msg)
        node.read.add(msg)
        node.out.add(msg)
        if reply_to is not None:
            self.reply_to[msg] = reply_to
        return msg

    def _known(self, node: _Node, frames: list[bytes]) -> int | None:
        """The id of the oldest send with this body that `node` has not read yet (see `_received`)."""
        return next((m for m in self._msgs.get(_body(frames), ()) if m not in node.read), None)

    def _received(self, node: _Node, frames: list[bytes]) -> int | None:
        """A `peer recv` event for what an application read; its `msg` is the oldest send with the same body
        that this node has not read yet (a real wire carries no ids: this is how a libzmq hop is followed,
        and a PUB's one message to several SUBs keeps its one id)."""
        event: dict[str, Any] = {"kind": "peer", "what": "recv", "peer": node.spec.name,
                                 "frames": [f.hex() for f in frames], "t": round(self._now(), 6)}
        msg = self._known(node, frames)
        if msg is not None:
            node.read.add(msg)
            self._with_id(event, msg)
        self.session.add_event(event)
        self.session.push_state()
        return msg

    # ---- our nodes' socket decisions

    def _never_subscribed(self, name: str) -> bool:
        """Whether node `name` is a SUB/XSUB that subscribed to nothing (ours: its socket says; libzmq's: its
        node's subscriptions, the only ones it makes)."""
        node = self.nodes.get(name)
        if node is None or node.spec.type not in SUBSCRIBERS:
            return False
        if isinstance(node.side, _LabSide):
            return never_subscribed(node.side.peer.core.socket)
        return not node.spec.subscribe

    def _watch_decisions(self, node: _Node, peer: TcpPeer) -> None:
        """Our socket's decisions (`peers.sockets`' observer) become `socket` events, worded by `peers.decisions`."""
        socket = peer.core.socket
        socket.observer = lambda what, rule, pipe, frames, detail: self._decision(
            node, socket, what, rule, pipe, frames, detail)

    def _decision(self, node: _Node, socket: Socket, what: str, rule: str, pipe: Pipe | None,
                  frames: tuple[bytes, ...] | None, detail: bytes | int | None) -> None:
        if what == "block" and rule != "rcvhwm":
            if node.blocked:
                return  # (TcpPeer.send tries again whenever a pipe moves: one block until the send goes)
            node.blocked = True
        elif node.blocked and what in ("route", "queue"):
            node.blocked = False
            self._decision(node, socket, "unblock", "send", None, None, None)
        inbound = rule in ("rcvhwm", "fair-queue", "delimiter", "local-prefix-match") or (what, rule) in RECV_DECISIONS
        msg = None
        if what in ("unblock", "subscribe") or rule == "rcvhwm":
            pass
        elif inbound and frames:
            msg = self._known(node, list(frames))
        else:
            msg = node.sending
        args: dict[str, Any] = {"type": socket.type}
        far, conn = self._pipe_end(node, pipe)
        if far is not None:
            args["peer"] = far
            if what == "filter" and rule == "slow-joiner" and self._never_subscribed(far):
                rule = "no-subscription"
        if frames:
            body = frames[1] if socket.type == "ROUTER" and what in ("route", "drop") and len(frames) > 1 else frames[0]
            args["msg"] = decisions.shown(body)
        if isinstance(detail, bytes):
            key = "identity" if rule in ("identity-routing", "router-mandatory-off", "sndhwm") else "topic"
            args[key] = decisions.shown(detail)
        elif isinstance(detail, int):
            args["frames" if what in ("strip", "route", "drop") else "depth"] = detail
        hwm = node.spec.rcvhwm if inbound else node.spec.sndhwm
        args["hwm"] = hwm
        if pipe is not None:
            args.setdefault("depth", len(pipe.inq) if inbound else len(pipe.out))
            if rule in ("prefix-match", "subscribe"):
                args["subs"] = decisions.subs(pipe.topics)
        if rule == "local-prefix-match":
            args["subs"] = decisions.subs(socket.subscriptions)
        event: dict[str, Any] = {"kind": "socket", "node": node.spec.name, "what": what,
                                 "text": decisions.text(what, rule, args), "rule": rule}
        if far is not None:
            event["peer"] = far
        if conn is not None:
            event["conn"] = conn
        if msg is not None:
            self._with_id(event, msg)
        if pipe is not None or what == "block":
            event["depth"] = args.get("depth", 0)
            event["hwm"] = hwm
        event["args"] = args
        event["t"] = round(self._now(), 6)
        self.session.add_event(event)

    def _pipe_end(self, node: _Node, pipe: Pipe | None) -> tuple[str | None, str | None]:
        """The node at the far end of our peer's pipe, and the session's id of the connection it runs on now."""
        if pipe is None:
            return None, None
        pc_id = node.pipe_conns.get(pipe.id, pipe.id)  # (a bind-side pipe is named after its connection)
        conn = node.conns.get(pc_id)
        far = node.pipes.get(pipe.id)
        if far is None and conn is not None:
            far = next((c["server"] if c["client"] == node.spec.name else c["client"]
                        for c in self.conns if c["conn"] == conn), None)
        return far, conn

    def _peer_event(self, node: _Node, event: dict[str, Any]) -> None:
        """Notes the port of each new connection of our peer (its own as a client, the tap's as a server)."""
        what = event.get("what")
        if what not in ("connected", "accepted"):
            return
        if what == "connected" and isinstance(node.side, _LabSide):
            pc = node.side.peer.connections.get(str(event.get("conn")))
            if pc is not None and pc.pipe is not None:
                node.pipe_conns[pc.pipe.id] = pc.id
        address = event.get("local" if what == "connected" else "remote") or ""
        port = address.rsplit(":", 1)[-1]
        if port.isdigit():
            node.ports[int(port)] = str(event.get("conn"))
            self._map_ports(node)

    # ---- the taps

    async def _accept(self, tap: _Tap, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closed or tap.lost:
            writer.close()
            return
        limit = self.settings.session_max_connections
        if self.plan.topology:
            limit = max(limit, len(self.taps))
        if len(self.links) >= limit:
            self.session.error(f"a connection to the tap was refused: the session has {limit} open connections, "
                               "its limit")
            writer.transport.abort()
            return
        try:
            buffer = _tap_buffer(self.nodes[tap.spec.connect].spec, self.nodes[tap.spec.bind].spec)
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(*tap.target, limit=buffer or 1 << 16), SEND_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            self._target_lost(tap, str(exc) or type(exc).__name__)
            writer.transport.abort()
            return
        if buffer:
            for w in (writer, up_writer):
                _small_buffers(w, buffer)
        conn = str(next(self._ids))
        self.connections += 1
        # (What one direction may hold of an element: the session's whole budget of sends, whoever connected.)
        held = self.settings.session_max_sent_bytes + (1 << 20)
        link = _Link(conn, {"c2s": up_writer, "s2c": writer}, tap, dissector=ConnectionDissector(max_held=held))
        self.links[conn] = link
        client_addr = writer.get_extra_info("peername") or ("127.0.0.1", 0)
        upstream = up_writer.get_extra_info("sockname") or ("127.0.0.1", 0)
        link.ports = (client_addr[1], upstream[1])
        now = self._now()
        spec = tap.spec
        if self.plan.topology:
            client = (self.nodes[spec.connect].host, client_addr[1])
            self.conns.append({"conn": conn, "link": spec.index, "client": spec.connect, "server": spec.bind})
            for node_name in (spec.connect, spec.bind):
                self._map_ports(self.nodes[node_name])
        else:
            client = (client_addr[0], client_addr[1])
        self.session.add_connection(conn, client, tap.target, now)
        self._mark("open", conn=conn)
        link.tasks = [asyncio.create_task(self._pump(link, "c2s", reader)),
                      asyncio.create_task(self._pump(link, "s2c", up_reader))]
        for task in link.tasks:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if self._on_topology is not None and self.plan.topology:
            self._on_topology()
        self.session.push_state()

    def _map_ports(self, node: _Node) -> None:
        """Maps our peer's connections to the taps' ids, by the port both ends see (whichever saw it first)."""
        for link in self.links.values():
            for port, pc_id in list(node.ports.items()):
                if port in link.ports:
                    node.conns[pc_id] = link.conn
                    del node.ports[port]

    def _mark(self, what: str, **data: Any) -> None:
        """A `link` log entry, as the simulation writes them: the page marks these in its sequence."""
        self.session.log({"kind": "link", "what": what, **data, "t": round(self._now(), 6)})

    def _target_lost(self, tap: _Tap, why: str) -> None:
        """A tap cannot reach its node: say so once, as an expert event and an error, and stop listening."""
        if tap.lost:
            return
        tap.lost = True
        conn = str(next(self._ids))
        host, port = tap.target
        text = f"target {host}:{port} unreachable: {why}; the tap stopped listening"
        self.session.add_events([{"conn": conn, "dir": "c2s", "offset": 0, "length": 0, "kind": "expert",
                                  "severity": "error", "text": text, "fields": [], "t": round(self._now(), 6)}])
        if self.plan.topology:
            self.session.error(f"the tap of link {tap.spec.index} could not reach {tap.spec.bind} ({why}): it "
                               "stopped listening. Reset the session to start its nodes again")
        else:
            self.session.error(f"the tap could not reach the server ({why}): it stopped listening. Reset the "
                               "session to start its peers again")
        if tap.listener is not None:
            tap.listener.close()
        self.session.push_state()

    async def _pump(self, link: _Link, direction: str, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                data = await reader.read(READ_SIZE)
                if not data:
                    break
                await self._gate(link, direction, data)
        except (ConnectionError, OSError):
            pass
        finally:
            await self._half_close(link, direction)

    async def _gate(self, link: _Link, direction: str, data: bytes) -> None:
        """Forwards now, or holds the bytes until play/step lets them through (the reader waits meanwhile)."""
        if self.playing and not self.held:
            await self._forward_bytes(link, direction, data)
            return
        done = asyncio.get_running_loop().create_future()
        self.held.append(_Held(link, direction, data, done))
        self.session.push_state()
        await done

    async def _release(self, count: int | None) -> None:
        n = 0
        while self.held and (count is None or n < count):
            item = self.held.popleft()
            try:
                await self._forward_bytes(item.link, item.dir, item.data)
            finally:
                if not item.done.done():
                    item.done.set_result(None)
            n += 1

    async def _forward_bytes(self, link: _Link, direction: str, data: bytes) -> None:
        if link.closed:
            return
        data, split, delay = self._apply_faults(link, direction, data)
        if delay:
            await asyncio.sleep(delay)
        writer = link.writers[direction]
        t = self._now()
        self.session.add_wire(link.conn, direction, data, t)
        link.sent[direction] += len(data)
        self._dissect(link, link.dissector.receive_data(direction, data), t)
        if writer.is_closing():
            return  # (the far end is gone: asyncio would only warn on every write until the link closes)
        try:
            if split:
                for i in range(len(data)):
                    writer.write(data[i:i + 1])
                    await writer.drain()
                    await asyncio.sleep(0.001)
            else:
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass

    def _fault_dir(self, link: _Link, args: dict[str, Any]) -> str | None:
        """The direction a fault acts on in this link (None: any); in a topology `node` names the writer, and
        `conn` (when given) the one connection it strikes."""
        if args.get("conn") is not None and str(args["conn"]) != str(link.conn):
            return ""  # not this link
        node = args.get("node")
        if node is not None and link.tap is not None:
            if node == link.tap.spec.connect:
                return "c2s"
            if node == link.tap.spec.bind:
                return "s2c"
            return ""  # not this link
        return args.get("dir")

    def _apply_faults(self, link: _Link, direction: str, data: bytes) -> tuple[bytes, bool, float]:
        split, delay = False, 0.0
        remaining = []
        for name, args in self.faults:
            wanted = self._fault_dir(link, args)
            if wanted not in (None, direction):
                remaining.append((name, args))
                continue
            if name == "corrupt_byte":
                at = args.get("offset")
                i = at if isinstance(at, int) and 0 <= at < len(data) else self._rng.randrange(len(data))
                corrupted = bytearray(data)
                corrupted[i] ^= 0xFF
                data = bytes(corrupted)
                self._mark("fault", fault="corrupt", conn=link.conn, dir=direction, offset=link.sent[direction] + i)
            elif name == "split_writes":
                split = True
                self._mark("fault", fault="split", conn=link.conn, dir=direction, at=[link.sent[direction]])
            elif name == "delay":
                delay = max(delay, _number(args.get("seconds"), 1.0, 0.0, 30.0))
                self._mark("fault", fault="delay", conn=link.conn, dir=direction, seconds=delay)
        self.faults = remaining
        return data, split, delay

    def _dissect(self, link: _Link, pairs: list[tuple[str, Any]], t: float) -> None:
        if not pairs:
            return
        events = []
        for d, event in self._with_decrypted(link, pairs):
            item = event.to_dict(with_fields=True)
            item["conn"] = link.conn
            item["dir"] = d
            item["t"] = round(t, 6)
            events.append(item)
            if link.tap is not None and self.plan.topology:
                self._watch_handshake(link, d, event)
                if event.kind == "message" and not item.get("decrypted"):
                    self._tag(link, d, event, item)
        self.session.add_events(events)
        self.session.push_state()

    def _tag(self, link: _Link, direction: str, event: Any, item: dict[str, Any]) -> None:
        """A message on the wire gets the id of the oldest message with its body that its writer sent (or
        passed on) and this direction has not carried yet."""
        assert link.tap is not None
        writer = self.nodes[link.tap.spec.connect if direction == "c2s" else link.tap.spec.bind]
        seen = link.tagged[direction]
        msg = next((m for m in self._msgs.get(_body([p.body for p in event.parts]), ())
                    if m in writer.out and m not in seen), None)
        if msg is not None:
            seen.add(msg)
            self._with_id(item, msg)

    def _with_id(self, event: dict[str, Any], msg: int) -> None:
        event["msg"] = msg
        reply_to = self.reply_to.get(msg)
        if reply_to is not None:
            event["reply_to"] = reply_to

    def _watch_handshake(self, link: _Link, direction: str, event: Any) -> None:
        """Sets the link's tap `up` once both sides are ready and a SUB end's subscriptions have crossed."""
        kind = event.kind
        if kind == "greeting" and event.version in ("1.0", "2.0"):
            link.ready.update(("c2s", "s2c"))  # (no handshake commands before 3.0)
        elif kind == "command" and event.name in ("READY", "INITIATE"):
            link.ready.add(direction)
        elif kind == "command" and event.name == "SUBSCRIBE":
            link.subscriptions += 1
        elif kind == "message" and link.ready >= {"c2s", "s2c"}:
            first = event.parts[0].body if event.parts else b""
            if first[:1] == b"\x01":  # a 3.0 subscription
                link.subscriptions += 1
        assert link.tap is not None
        spec = link.tap.spec
        wanted = 0
        for name in (spec.connect, spec.bind):
            node = self.nodes[name].spec
            if node.type in ("SUB", "XSUB"):
                wanted += len(node.subscribe)
        if link.ready >= {"c2s", "s2c"} and link.subscriptions >= wanted:
            link.tap.up.set()

    def _with_decrypted(self, link: _Link, pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """The dissector's events, each CURVE box followed by what it holds, when one of our peers has the key."""
        out = []
        for d, event in pairs:
            out.append((d, event))
            if event.kind != "command":
                continue
            if link.decryptor is None and event.name == "HELLO":
                from ...engine.curve import CurveDecryptor  # (only CURVE sessions load the cryptography)

                link.decryptor = CurveDecryptor(self._session_key)
            if link.decryptor is not None:
                out.extend(link.decryptor.feed(d, event))
        return out

    def _lab_peers(self) -> list[TcpPeer]:
        return [node.side.peer for node in self.nodes.values() if isinstance(node.side, _LabSide)]

    def _session_key(self, client_short: bytes) -> bytes | None:
        for peer in self._lab_peers():
            if (key := peer.core.session_key(client_short)) is not None:
                return key
        return None

    def keylog(self) -> str:
        """The CURVE key log of our peers' connections so far (libzmq keeps its keys to itself)."""
        from ...engine.curve import keylog_text

        return keylog_text(k for peer in self._lab_peers() for k in peer.core.session_keys)

    async def _half_close(self, link: _Link, direction: str) -> None:
        if not link.eof and not link.closed:  # the first side to close: say who
            side = "client" if direction == "c2s" else "server"
            self._mark("half-closed", conn=link.conn, side=side, reason=f"the {side} closed the connection")
        link.eof.add(direction)
        writer = link.writers[direction]
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()
        if link.eof >= {"c2s", "s2c"} and not link.closed:
            await self._close_link(link)

    async def _close_link(self, link: _Link) -> None:
        if link.closed:
            return
        link.closed = True
        t = self._now()
        self._dissect(link, link.dissector.close(), t)
        self.session.end_connection(link.conn, t)
        self._mark("closed", conn=link.conn)
        for writer in link.writers.values():
            writer.close()
        for item in [h for h in self.held if h.link is link]:
            self.held.remove(item)
            if not item.done.done():
                item.done.set_result(None)
        if self.links.get(link.conn) is link and not self._closed:
            del self.links[link.conn]  # its pump tasks end by themselves now that the writers are closed
        self.session.push_state()

    # ---- commands

    def _node(self, name: str) -> _Node:
        node = self.nodes.get(name)
        if node is None:
            raise SessionError(f"no node named {name!r}; one of {', '.join(self.nodes)}")
        return node

    async def send(self, side: str, frames: list[bytes], timeout: float | None = SEND_TIMEOUT) -> None:
        if side in self.killed:
            who = f"node {side}" if self.plan.topology else f"the {side}"
            raise SessionError(f"{who} was killed; reset the session to start it again")
        node = self.nodes.get(side)
        if node is None and self.plan.topology:
            self._node(side)
        target = node.side if node is not None else None
        if target is None:
            raise SessionError("the session is not running")
        if not self.plan.topology or node is None:
            await target.send(frames)
            return
        msg = node.sending = self._sent(node, frames)
        try:
            if await target.try_send(frames):
                return
            libzmq = isinstance(target, _ZmqSide)
            if libzmq:  # (our sockets say it themselves, and why)
                self._libzmq_blocked(node, "block", msg)
            await target.send(frames, timeout)
            if libzmq:
                self._libzmq_blocked(node, "unblock", msg)
        finally:
            node.sending = None

    async def recv(self, name: str) -> None:
        node = self.nodes.get(name) if self.plan.topology else None
        check_manual(name, node.spec.recv if node is not None else None)
        assert node is not None
        if name in self.killed:
            raise SessionError(f"node {name} was killed; reset the session to start it again")
        assert node.side is not None
        frames = await node.side.try_recv()
        if frames is None:
            raise SessionError(f"{name} has no message waiting")
        self._received(node, frames)

    def _libzmq_blocked(self, node: _Node, what: str, msg: int) -> None:
        """What a libzmq node's application sees of a send that blocks: EAGAIN first, the send done later."""
        text = (f"{node.spec.type} (libzmq) would block: zmq_send with ZMQ_DONTWAIT said EAGAIN, so the "
                "application waits in a blocking send" if what == "block" else
                f"send unblocked: {node.spec.type} (libzmq) took the message that waited")
        self.session.add_event({"kind": "socket", "node": node.spec.name, "what": what,
                                "rule": "sndhwm" if what == "block" else "send", "text": text, "msg": msg,
                                "hwm": node.spec.sndhwm, "libzmq": True, "t": round(self._now(), 6)})
        self.session.push_state()

    async def play(self) -> None:
        self.playing = True
        await self._release(None)

    async def pause(self) -> None:
        self.playing = False

    async def step(self) -> None:
        self.playing = False
        if not self.held:
            raise SessionNotice("nothing is waiting on the wire")
        await self._release(1)

    async def step_back(self) -> None:
        raise SessionError("a real TCP session cannot step back (use a simulated session)")

    async def set_speed(self, value: float) -> None:
        self.speed = value  # real peers run in real time; kept for the state only

    async def fault(self, name: str, args: dict[str, Any]) -> None:
        if name in SIMULATED_ONLY:
            raise SessionError(f"the fault {name!r} needs a simulated session")
        if name not in FAULTS:
            raise SessionError(f"unknown fault {name!r}; one of {', '.join(FAULTS + SIMULATED_ONLY)}")
        if args.get("dir") not in (None, "c2s", "s2c"):
            raise SessionError("dir is 'c2s' or 's2c'")
        if name == "kill":
            await self._kill(args.get("peer", args.get("side", "server")))
            return
        peer = args.get("peer")
        if peer is not None and args.get("dir") is None and name != "close":
            if self.plan.topology:
                self._node(str(peer))
                args = {**args, "node": peer}  # the direction it writes, link by link
            else:
                if peer not in ("server", "client"):
                    raise SessionError("peer is 'server' or 'client'")
                args = {**args, "dir": "s2c" if peer == "server" else "c2s"}  # the direction that peer writes
        if name == "close":
            self._mark("fault", fault="close", side=peer or "server")
            for link in list(self.links.values()):
                if self.plan.topology and peer is not None and link.tap is not None and peer not in (
                        link.tap.spec.connect, link.tap.spec.bind):
                    continue  # (a topology closes the connections of the node named, all of them without one)
                if args.get("conn") is not None and str(args["conn"]) != str(link.conn):
                    continue  # (or only the one connection named)
                for writer in link.writers.values():
                    with contextlib.suppress(Exception):
                        writer.transport.abort()
                await self._close_link(link)
            return
        self.faults.append((name, dict(args)))

    async def _kill(self, side: Any) -> None:
        if self.plan.topology:
            node = self._node(str(side))
        else:
            if side not in ("server", "client"):
                raise SessionError("side is 'server' or 'client'")
            node = self.nodes.get(side)
        if side in self.killed:
            raise SessionError(f"the {side} is already dead")
        if node is None or node.side is None:
            raise SessionError("the session is not running")
        self.killed.add(side)
        self._mark("fault", fault="kill", peer=side)  # (before its connections close: the marks come in order)
        await node.side.kill()

    def position(self) -> int:
        return len(self.session.events)

    def total(self) -> int:
        return len(self.session.events)

    def up(self) -> bool:
        """False while a topology brings its links up one at a time (see `_bring_up`): a send then could go
        round a socket's pipes without the links still to come."""
        return self.started or not self.plan.topology

    def at_end(self) -> bool:
        return False  # (real peers: more may come whenever they send, or the kernel hands it on)

    def can_step_back(self) -> bool:
        return False

    def closed(self) -> bool:
        """True once the runtime stopped, or when connections came and went and none is open now
        while nobody can open a new one (a peer was killed, or the taps lost their targets)."""
        if self._closed:
            return True
        if self.links:
            return False
        return self.connections > 0 or self.target_lost

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for item in self.held:
            if not item.done.done():
                item.done.set_result(None)
        self.held.clear()
        for tap in self.taps:
            if tap.listener is not None:
                tap.listener.close()
        # The applications, proxies and script first: they must not use a socket that is closing.
        for task in [*self._tasks]:
            if not any(task in link.tasks for link in self.links.values()):
                task.cancel()
        order = ["client", "server"] if not self.plan.topology else list(self.nodes)
        for name in order:
            side = self.nodes[name].side if name in self.nodes else None
            if side is not None:
                with contextlib.suppress(Exception):
                    await side.close()
        for link in list(self.links.values()):
            for writer in link.writers.values():
                with contextlib.suppress(Exception):
                    writer.transport.abort()
            for task in link.tasks:
                task.cancel()
        tasks = [*self._tasks]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for tap in self.taps:
            if tap.listener is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(tap.listener.wait_closed(), 1.0)


def _tap_buffer(*ends: NodeSpec) -> int:
    """The buffer a link's tap keeps each way: the smallest receive buffer its two nodes set (0: none set). The
    tap stands in the receiver's place: buffering more would hide its high-water mark behind the tap's queue
    (and less than a sender's buffer would slow a link whose reader is fast)."""
    sizes = [end.rcvbuf for end in ends if end.rcvbuf]
    return min(sizes, default=0)


def _small_buffers(writer: asyncio.StreamWriter, size: int) -> None:
    """A tap connection's kernel buffers and asyncio write buffer, both `size` octets."""
    import socket as pysocket

    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(pysocket.SOL_SOCKET, pysocket.SO_SNDBUF, size)
            sock.setsockopt(pysocket.SOL_SOCKET, pysocket.SO_RCVBUF, size)
    writer.transport.set_write_buffer_limits(high=size)


def _body(frames: list[bytes]) -> tuple[bytes, ...]:
    """What identifies a message across hops: the frames after its envelope (up to an empty delimiter), the
    last one when there is none (a ROUTER adds, and a DEALER or REQ hop may add, routing frames before it)."""
    if b"" in frames:
        return tuple(frames[frames.index(b"") + 1:])
    return tuple(frames[-1:])


def _number(value: Any, default: float, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return min(max(float(value), low), high)
