"""A real topology's life: its links brought up one at a time, in the topology's order (each waits for the previous
one's handshake, and a SUB's subscriptions to cross, so that a socket's pipes come up in link order, as in the
simulation), then each node's application (reading as its `recv` says: at once, one message every so often, or
only when asked; a REP or an echoing node answering), the two ends of each proxy forwarding to each other as
zmq_proxy does, the late joiners (a link's `delay`) and the script, on one clock. What an application reads is a
`peer recv` event."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from ...peers.sockets import SocketStateError
from ..session import SessionError
from .messages import MessageIds
from .nodes import LabSide, RealNode, ZmqSide
from .state import TcpState
from .taps import Tap, Taps

LINK_UP_TIMEOUT = 5.0  # seconds a topology link gets to complete its handshake before the next one goes anyway
SUBSCRIPTION_GRACE = 0.05  # after a subscription crossed the wire, time for the publisher to take it in
CANNOT_RECV = frozenset({"PUSH", "PUB"})

Send = Callable[..., Awaitable[None]]  # the runtime's send (node, frames, timeout)


class Applications:
    """A real topology's bring-up, applications, proxies and script (see the module docstring); `send` is the
    runtime's (the script's sends are the commands' sends)."""

    def __init__(self, state: TcpState, taps: Taps, messages: MessageIds, send: Send) -> None:
        self.state = state
        self.taps = taps
        self.messages = messages
        self.send = send
        self.started = False  # every link is up and the script's clock runs

    async def bring_up(self) -> None:
        """Connects the links one at a time in order (each after the previous one is up, or has had its
        time), starts the applications and proxies, then the late joiners and the script on one clock."""
        plan = self.state.plan
        loop = asyncio.get_running_loop()
        handshakes: dict[str, int] = {}  # per libzmq node, the handshakes of its links brought up so far
        for tap in self.taps.taps:
            if tap.external:  # (its program comes when it comes: the lab connects to it, or waits for it, meanwhile)
                if tap.spec.outbound:
                    self.connect(tap)
                continue
            if tap.spec.delay > 0:
                continue
            self.connect(tap)
            deadline = loop.time() + LINK_UP_TIMEOUT
            while not tap.up.is_set():
                # Paused, the tap holds the handshake: wait as long as the user takes, the clock restarts then.
                if self.state.playing and loop.time() > deadline:
                    self.state.session.error(f"link {tap.spec.index} ({tap.spec.connect} -> {tap.spec.bind}) did not "
                                             f"come up within {LINK_UP_TIMEOUT:g} s; the next one goes anyway")
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(tap.up.wait(), 0.05)
                if not self.state.playing:
                    deadline = loop.time() + LINK_UP_TIMEOUT
            if tap.up.is_set():
                await self._pipes_taken(tap, handshakes, loop.time() + LINK_UP_TIMEOUT)
        await asyncio.sleep(SUBSCRIPTION_GRACE)
        proxied = {name for pair in plan.proxies for name in pair}
        for node in self.state.nodes.values():
            if (node.spec.name not in proxied and node.spec.type not in CANNOT_RECV and node.spec.recv != "manual"
                    and not node.spec.external):
                self.state.spawn(self._application(node))
        for front, back in plan.proxies:
            self.state.spawn(self._forward(self.state.nodes[front], self.state.nodes[back]))
            self.state.spawn(self._forward(self.state.nodes[back], self.state.nodes[front]))
        self.started = True
        self.state.session.push_state()  # (`up` in the state)
        start = loop.time()
        for tap in self.taps.taps:
            if tap.spec.delay > 0:
                self.state.spawn(self._late(tap, start + tap.spec.delay))
        senders: dict[str, list[tuple[float, list[bytes]]]] = {}
        for at, name, frames in sorted(plan.script, key=lambda item: item[0]):
            senders.setdefault(name, []).append((at, frames))
        for name, messages in senders.items():
            self.state.spawn(self._play_script(name, start, messages))

    async def _pipes_taken(self, tap: Tap, handshakes: dict[str, int], deadline: float) -> None:
        """Waits (until `deadline`) until each libzmq end of a link whose handshake crossed the wire has the
        link's pipe in its socket (see `ZmqSide.watch`), so that its pipes are in link order before the next
        link, or a send, comes. (libzmq reports no handshake for a 1.0 or 2.0 peer: nothing to wait for.)"""
        loop = asyncio.get_running_loop()
        ends = [self.state.nodes[tap.spec.connect], self.state.nodes[tap.spec.bind]]
        if any(end.spec.version in ("1.0", "2.0") for end in ends):
            return
        for end in ends:
            side = end.side
            if not isinstance(side, ZmqSide):
                continue
            want = handshakes[end.spec.name] = handshakes.get(end.spec.name, 0) + 1
            while side.handshakes < want and loop.time() < deadline:
                side.handshake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(side.handshake.wait(), deadline - loop.time())

    def connect(self, tap: Tap) -> None:
        node = self.state.nodes[tap.spec.client]
        assert node.side is not None
        if isinstance(node.side, LabSide):
            # (TcpPeer names a connect's pipe by the order of its connect() calls)
            node.pipes[f"connect-{len(node.pipes) + 1}"] = tap.spec.server
        node.side.connect(f"tcp://127.0.0.1:{tap.port}")

    async def _late(self, tap: Tap, when: float) -> None:
        await asyncio.sleep(max(0.0, when - asyncio.get_running_loop().time()))
        self.connect(tap)

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
                self.state.session.error(f"{name}: {exc}")
            done, last = loop.time(), at

    async def _application(self, node: RealNode) -> None:
        """The node's application reads as its `recv` says; a REP answers each request."""
        side = node.side
        assert side is not None
        every = node.spec.every
        with contextlib.suppress(SessionError, SocketStateError):
            while not self.state.closed:
                if every:
                    await asyncio.sleep(every)
                frames = await side.recv()
                msg = self.received(node, frames)
                if node.spec.echo:
                    await self._echo(node, frames, msg)

    async def _echo(self, node: RealNode, frames: list[bytes], request: int | None) -> None:
        """An echoing application sends back what it read, as it read it (a REP: its reply; a ROUTER: to the
        identity the message came from)."""
        node.sending = self.messages.sent(node, frames, reply_to=request)
        assert node.side is not None
        try:
            await node.side.send(frames, timeout=None)
        finally:
            node.sending = None

    async def _forward(self, source: RealNode, sink: RealNode) -> None:
        """One direction of a zmq_proxy between two nodes: whatever `source` receives, `sink` sends."""
        assert source.side is not None and sink.side is not None
        with contextlib.suppress(SessionError, SocketStateError):
            while not self.state.closed:
                frames = await source.side.recv()
                msg = self.messages.known(source, frames)  # (a proxy hop keeps the message's id)
                if msg is not None:
                    source.read.add(msg)
                    sink.read.add(msg)  # (what comes back through the sink is another message: a reply)
                    sink.out.add(msg)
                sink.sending = msg
                try:
                    await sink.side.send(frames, timeout=None)
                finally:
                    sink.sending = None

    def received(self, node: RealNode, frames: list[bytes]) -> int | None:
        """A `peer recv` event for what an application read; its `msg` is the oldest send with the same body
        that this node has not read yet (a real wire carries no ids: this is how a libzmq hop is followed,
        and a PUB's one message to several SUBs keeps its one id)."""
        event: dict[str, Any] = {"kind": "peer", "what": "recv", "peer": node.spec.name,
                                 "frames": [f.hex() for f in frames], "t": round(self.state.now(), 6)}
        msg = self.messages.known(node, frames)
        if msg is not None:
            node.read.add(msg)
            self.messages.with_id(event, msg)
        self.state.session.add_event(event)
        self.state.session.push_state()
        return msg
