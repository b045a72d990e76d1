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
import socket
from typing import Any

from ...engine.constants import mechanism_problem
from ...peers.faults import SESSION_FAULTS
from ..session import NodeFull, Session, SessionConfigError, SessionError, SessionNotice, check_manual
from ..setup import SessionSetup
from . import external
from .applications import Applications
from .messages import MessageIds
from .nodes import (
    SEND_TIMEOUT,
    LabSide,
    RealNode,
    Side,
    ZmqSide,
    curve_keypair,
    lab_peer,
    lab_peers,
    subscribe,
    zmq_side,
)
from .plan import Plan
from .socket_decisions import Decisions
from .state import TcpState
from .taps import Taps

ZWS_RESOURCE = "/zmq"  # where the lab's end of an external link listens for the ZWS connections the app bridges in
# The session faults a real TCP session takes, and those only a simulated one does (peers.faults).
FAULTS = tuple(name for name, f in SESSION_FAULTS.items() if f.tcp)
SIMULATED_ONLY = tuple(name for name, f in SESSION_FAULTS.items() if not f.tcp)


class TcpRuntime:
    """Drives a `tcp` session (see the module docstring): its nodes (`nodes`), taps (`taps.Taps`), a topology's
    applications (`applications.Applications`) and our sockets' decisions (`socket_decisions.Decisions`), which
    share a `TcpState`; here the commands and the state."""

    def __init__(self, session: Session) -> None:
        setup = session.setup
        self.session = session
        self.plan = Plan.of(setup.topology, two_peer=setup.two_peer)
        self.state = TcpState(session, session.limits, self.plan, playing=setup.autoplay)
        self.speed = 1.0
        self.nodes = self.state.nodes
        self.conns = self.state.conns  # a topology's connections so far (the session's topology message shows them)
        self.killed = self.state.killed
        self.messages = MessageIds()
        self.taps = Taps(self.state, self.messages)
        self.decisions = Decisions(self.state, self.messages, self.taps.map_ports)
        self.applications = Applications(self.state, self.taps, self.messages, self.send)

    @staticmethod
    def check(setup: SessionSetup) -> None:
        """Refuses setups a real session cannot run."""
        for node in setup.topology.nodes:
            if node.libzmq and node.version != "3.1":
                raise SessionConfigError(f"{node.name}: a libzmq peer always announces ZMTP 3.1 (it downgrades by "
                                         "itself for older peers); choose version 3.1" if setup.two_peer else
                                         f"{node.name}: a libzmq node always announces ZMTP 3.1 (it downgrades by "
                                         "itself for older peers); choose version 3.1")
            problem = mechanism_problem(node.version, node.mechanism)
            if problem and setup.two_peer:  # (a topology's nodes are checked as they are made)
                raise SessionConfigError(f"{node.name}: {problem}")

    # ---- what the state, the two-peer tests and tools know of the runtime

    @property
    def playing(self) -> bool:
        return self.state.playing

    @playing.setter
    def playing(self, value: bool) -> None:
        self.state.playing = value

    @property
    def started(self) -> bool:
        """A topology: every link is up and the script's clock runs."""
        return self.applications.started

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
        return self.taps.taps[0].listener if self.taps.taps else None

    @property
    def tap_port(self) -> int:
        return self.taps.taps[0].port if self.taps.taps else 0

    # ---- setup

    async def start(self) -> None:
        state, plan = self.state, self.plan
        state.t0 = asyncio.get_running_loop().time()
        server_public, server_secret = curve_keypair()
        client_public, client_secret = curve_keypair()
        keys = {"server_public": server_public, "server_secret": server_secret,
                "client_public": client_public, "client_secret": client_secret}
        for i, spec in enumerate(plan.nodes):
            host = f"127.0.0.{i + 1}" if plan.topology else "127.0.0.1"
            node = self.nodes[spec.name] = RealNode(spec, host)
            if spec.external:
                continue  # (a program outside the lab: see `external`)
            if spec.libzmq:
                node.side = zmq_side(spec, keys, plan.topology)
                if plan.topology:
                    node.side.watch()
                if spec.listens:
                    node.port = node.side.socket.bind_to_random_port(f"tcp://{host}")
            else:
                peer = lab_peer(spec, keys, plan.topology,
                                on_event=lambda event, node=node: self.decisions.peer_event(node, event))
                if plan.topology:
                    self.decisions.watch(node, peer)
                node.side = LabSide(peer)
                if spec.listens:
                    endpoint = await peer.bind(f"tcp://{host}:0")
                    node.port = int(endpoint.rsplit(":", 1)[1])
                if spec.serves:
                    with contextlib.suppress(ValueError):  # (a node that cannot speak ZWS takes TCP programs only)
                        endpoint = await peer.bind(f"ws://{host}:0{ZWS_RESOURCE}")
                        node.ws_port = int(endpoint.rsplit(":", 1)[1].partition("/")[0])
        await self.taps.open()
        if not plan.topology:
            client = self.nodes["client"].side
            assert client is not None  # (every node has its side by now)
            client.connect(f"tcp://127.0.0.1:{self.tap_port}")
            for node in self.nodes.values():
                assert node.side is not None
                if node.spec.subscribe:
                    node.side.subscribe_all(node.spec.subscribe[0].encode())
                node.side.start_draining()
            return
        for node in self.nodes.values():
            if node.side is None:
                continue  # (an external node subscribes by itself)
            if node.spec.type in ("SUB", "XSUB"):
                for topic in node.spec.subscribe:
                    subscribe(node, topic.encode())
        state.spawn(self.applications.bring_up())

    def external_endpoints(self) -> dict[str, dict[str, Any]]:
        """Where each external node's program connects (`endpoint`, `zws`): the topology message shows them."""
        return external.endpoints(self.session.id, self.taps.taps, self.state.limits, self.session.setup.origin)

    async def bridge(self, name: str, peer: tuple[str, int]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A new ZWS connection of external node `name`, which the app bridges in (`web.zws_bridge`): the streams of
        a connection to the lab node's `ws://` listener (its resource `ZWS_RESOURCE`), through the node's ZWS tap,
        which dissects it; `peer` is the program's address. `SessionError` when the node takes none (not external,
        its link's lab end speaks no ZWS, or it has its `max_connections`)."""
        tap = self.taps.external_tap(name, zws=True)
        if tap is None:
            node = self.nodes.get(name)
            if node is None or not node.spec.external or node.spec.endpoint:
                raise SessionError(f"no external node named {name!r} waits for connections in this session")
            raise SessionError(f"external node {name!r} takes no ZWS connection: the lab's end of its link speaks "
                               "no ZWS (a libzmq node, or its mechanism)")
        most = self.nodes[name].spec.max_connections
        if self.taps.external_links(name) >= most:
            raise NodeFull(f"external node {name!r} takes {most} connection(s) at once (its max_connections)")
        ours, theirs = socket.socketpair()
        reader, writer = await asyncio.open_connection(sock=theirs)
        self.state.spawn(self.taps.adopt(tap, reader, writer, peer))
        return await asyncio.open_connection(sock=ours)

    def keylog(self) -> str:
        """The CURVE key log of our peers' connections so far (libzmq keeps its keys to itself)."""
        from ...engine.curve import keylog_text  # (only CURVE sessions load the cryptography)

        return keylog_text(k for peer in lab_peers(self.nodes) for k in peer.core.session_keys)

    # ---- commands

    def _node(self, name: str) -> RealNode:
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
        if node is not None and node.spec.external:
            raise SessionError(f"node {side} is external: its own program sends")
        if target is None:
            raise SessionError("the session is not running")
        if not self.plan.topology or node is None:
            await target.send(frames)
            return
        msg = node.sending = self.messages.sent(node, frames)
        try:
            if await target.try_send(frames):
                return
            libzmq = isinstance(target, ZmqSide)
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
        self.applications.received(node, frames)

    def _libzmq_blocked(self, node: RealNode, what: str, msg: int) -> None:
        """What a libzmq node's application sees of a send that blocks: EAGAIN first, the send done later."""
        text = (f"{node.spec.type} (libzmq) would block: zmq_send with ZMQ_DONTWAIT said EAGAIN, so the "
                "application waits in a blocking send" if what == "block" else
                f"send unblocked: {node.spec.type} (libzmq) took the message that waited")
        self.session.add_event({"kind": "socket", "node": node.spec.name, "what": what,
                                "rule": "sndhwm" if what == "block" else "send", "text": text, "msg": msg,
                                "hwm": node.spec.sndhwm, "libzmq": True, "t": round(self.state.now(), 6)})
        self.session.push_state()

    async def play(self) -> None:
        self.playing = True
        await self.taps.release(None)

    async def pause(self) -> None:
        self.playing = False

    async def step(self) -> None:
        self.playing = False
        if not self.taps.held:
            raise SessionNotice("nothing is waiting on the wire")
        await self.taps.release(1)

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
            self.state.mark("fault", fault="close", side=peer or "server")
            await self.taps.close_connections(peer, args.get("conn"))
            return
        self.taps.faults.append((name, dict(args)))

    async def _kill(self, side: Any) -> None:
        if self.plan.topology:
            node = self._node(str(side))
        else:
            if side not in ("server", "client"):
                raise SessionError("side is 'server' or 'client'")
            node = self.nodes.get(side)
        if side in self.killed:
            raise SessionError(f"the {side} is already dead")
        if node is not None and node.spec.external:
            raise SessionError(f"node {side} is external: the lab cannot kill its program (close its connections)")
        if node is None or node.side is None:
            raise SessionError("the session is not running")
        self.killed.add(side)
        self.state.mark("fault", fault="kill", peer=side)  # (before its connections close: the marks come in order)
        await node.side.kill()

    def position(self) -> int:
        return len(self.session.events)

    def total(self) -> int:
        return len(self.session.events)

    def up(self) -> bool:
        """False while a topology brings its links up one at a time (see `Applications.bring_up`): a send then could go
        round a socket's pipes without the links still to come."""
        return self.applications.started or not self.plan.topology

    def at_end(self) -> bool:
        return False  # (real peers: more may come whenever they send, or the kernel hands it on)

    def can_step_back(self) -> bool:
        return False

    def closed(self) -> bool:
        """True once the runtime stopped, or when connections came and went and none is open now
        while nobody can open a new one (a peer was killed, or the taps lost their targets)."""
        if self.state.closed:
            return True
        if self.taps.links or any(tap.external and not tap.spec.outbound for tap in self.taps.taps):
            return False  # (an external node's endpoint waits for its program, however often it comes and goes)
        return self.taps.connections > 0 or self.taps.target_lost

    async def close(self) -> None:
        state = self.state
        if state.closed:
            return
        state.closed = True
        self.taps.stop()
        # The applications, proxies and script first: they must not use a socket that is closing.
        for task in [*state.tasks]:
            if not any(task in link.tasks for link in self.taps.links.values()):
                task.cancel()
        order = ["client", "server"] if not self.plan.topology else list(self.nodes)
        for name in order:
            side = self.nodes[name].side if name in self.nodes else None
            if side is not None:
                with contextlib.suppress(Exception):
                    await side.close()
        self.taps.abort()
        tasks = [*state.tasks]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.taps.wait_closed()
