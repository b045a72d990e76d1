"""ZeroMQ socket-type semantics as sans-IO routing logic over a set of pipes (one pipe per peer).

Both runtimes (the simulation and the asyncio TCP driver) use this module; it never touches
bytes, sockets or clocks. A `Pipe` is libzmq's pipe: a queue of outgoing messages (bounded by
the send high-water mark) and a queue of incoming ones (bounded by the receive high-water
mark) between the socket and one ZMTP connection. What goes in and out of a pipe is whole
messages (tuples of frames) and, towards a publisher, subscriptions (`Subscription` items);
the runtime turns them into wire bytes through the engine's `Connection`.

The rules, as libzmq 4.3 applies them:

- PUSH, DEALER, REQ send round-robin over the pipes that are not full (`lb_t`); PULL, DEALER,
  ROUTER, REP, PAIR, SUB, XSUB receive fair-queued: one message from each pipe with data in turn
  (`fq_t`).
- ROUTER names each pipe by the peer's Identity property or, when it has none, by a generated
  5-octet identity (0x00 and a 32-bit counter that starts at a random value); a second peer
  with an identity already in use is ignored. Received messages get the identity as their first
  frame; a sent message's first frame picks the pipe, and messages to unknown or full pipes are
  dropped (ZMQ_ROUTER_MANDATORY off).
- REQ prepends the empty delimiter and alternates strictly send/recv (anything else is EFSM);
  it takes the reply only from the pipe it sent to and drops replies without the delimiter.
  REP strips the envelope (every frame up to and including the first empty one), remembers it,
  and puts it back on the one reply it then allows; messages without a delimiter are dropped.
- PUB/XPUB send to each pipe whose subscriptions match the first frame by prefix, dropping for
  full pipes; subscriptions are kept per pipe. A ZMTP 1.0 peer cannot subscribe, so it is
  subscribed to everything (as libzmq injects a subscription for it). XPUB passes a subscription
  up only when the first pipe subscribes to a topic and a cancel only when the last one leaves
  (unless `xpub_verbose`), and passes other messages up as they are.
- SUB/XSUB count their subscriptions: every subscribe is sent to every pipe, a cancel only when
  the count drops to zero; a new pipe gets each topic once; received messages are filtered
  locally too (a ZMTP 1.0 publisher does not filter). XSUB turns sent 0x01/0x00-prefixed messages
  into subscriptions and cancels and sends other messages to every pipe.
- PAIR talks to one peer; a second one is refused.

A connect-side pipe exists from `connect()` on, across reconnections, so messages queue in it
before the connection is up (unless `immediate`), as in libzmq; a bind-side pipe lives as long
as its connection.

Decisions: a runtime that wants to show them sets `Socket.observer`, a callable that gets
`(what, rule, pipe, frames, detail)` for each decision the socket takes (`DECISIONS` lists
them; `peers.decisions` words them), once it is carried out (a routed message is in its pipe).
Without one (the default) nothing is reported and no decision costs more than a test of `None`.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable

from ..engine.constants import SOCKET_TYPES

LB_TYPES = frozenset({"PUSH", "DEALER", "REQ"})
FQ_TYPES = frozenset({"PULL", "DEALER", "ROUTER", "REP", "PAIR", "SUB", "XSUB", "REQ"})
PUBLISHERS = frozenset({"PUB", "XPUB"})
SUBSCRIBERS = frozenset({"SUB", "XSUB"})


# (what, rule) of every decision a socket reports to its observer; `detail` is what the rule needs beyond the pipe:
# the identity (ROUTER), the envelope's frame count (REP/REQ), the topic (subscriptions).
DECISIONS = frozenset({
    ("route", "round-robin"), ("queue", "round-robin"), ("route", "identity-routing"), ("route", "prefix-match"),
    ("route", "pair"), ("queue", "pair"), ("route", "envelope"), ("route", "fan-out"),
    ("drop", "router-mandatory-off"), ("drop", "sndhwm"), ("drop", "slow-joiner"), ("drop", "rep-peer-gone"),
    ("drop", "req-reply-peer"), ("drop", "req-delimiter"), ("drop", "rep-delimiter"),
    ("filter", "prefix-match"), ("filter", "slow-joiner"), ("filter", "no-subscription"),
    ("filter", "local-prefix-match"),
    ("block", "sndhwm"), ("block", "no-peer"), ("block", "rcvhwm"), ("unblock", "rcvhwm"),
    ("deliver", "fair-queue"), ("envelope", "identity-routing"), ("strip", "envelope"), ("strip", "delimiter"),
    ("subscribe", "subscribe"), ("subscribe", "cancel"),
})



def never_subscribed(socket: Socket) -> bool:
    """Whether `socket` is a SUB or XSUB that holds no subscription at all: it receives nothing, as in libzmq,
    until it subscribes (a publisher's "filter/slow-joiner" decision about its pipe is then "no-subscription":
    no subscription is on its way)."""
    return socket.type in SUBSCRIBERS and not socket.subscriptions


Observer = Callable[[str, str, "Pipe | None", "tuple[bytes, ...] | None", "bytes | int | None"], None]


class Again(Exception):
    """The operation would block (libzmq's EAGAIN): no pipe can take the message now, or nothing to receive."""


class SocketStateError(Exception):
    """The operation is not allowed now (EFSM: REQ/REP order) or not at all for this type (ENOTSUP)."""


class Subscription:
    """A subscribe or cancel waiting in a pipe's outgoing queue (SUB/XSUB towards a publisher)."""

    __slots__ = ("subscribe", "topic")

    def __init__(self, topic: bytes, subscribe: bool) -> None:
        self.topic = topic
        self.subscribe = subscribe

    def __repr__(self) -> str:
        return f"Subscription({self.topic!r}, {'subscribe' if self.subscribe else 'cancel'})"


class Pipe:
    """libzmq's pipe between the socket and one connection (see the module docstring)."""

    __slots__ = ("connect_side", "id", "in_fq", "inq", "out", "peer_identity", "read_blocked", "routing_id",
                 "topics", "up", "version")

    def __init__(self, pipe_id: str, *, connect_side: bool) -> None:
        self.id = pipe_id
        self.connect_side = connect_side
        self.up = False
        self.routing_id = b""
        self.peer_identity = b""
        self.version = "3.1"
        self.out: deque = deque()  # tuples of frames, or Subscription items
        self.inq: deque = deque()  # tuples of frames
        self.in_fq = False
        self.read_blocked = False
        self.topics: set[bytes] = set()  # what the peer subscribed to (publisher side)

    def __repr__(self) -> str:
        return f"Pipe({self.id!r}, up={self.up}, out={len(self.out)}, in={len(self.inq)})"


class Socket:
    """One ZeroMQ socket's routing logic (see the module docstring)."""

    def __init__(self, socket_type: str, *, sndhwm: int = 1000, rcvhwm: int = 1000, immediate: bool = False,
                 xpub_verbose: bool = False, rng: random.Random | None = None) -> None:
        socket_type = socket_type.upper()
        if socket_type not in SOCKET_TYPES:
            raise ValueError(f"unknown socket type {socket_type!r}")
        self.type = socket_type
        self.sndhwm = sndhwm if sndhwm > 0 else 1 << 62
        self.rcvhwm = rcvhwm if rcvhwm > 0 else 1 << 62
        self.rcvlwm = max(self.rcvhwm // 2, 1) if rcvhwm > 0 else 1 << 61
        self.immediate = immediate
        self.xpub_verbose = xpub_verbose
        self.rng = rng or random.Random()
        self.pipes: dict[str, Pipe] = {}
        self._out: list[Pipe] = []  # pipes that take outgoing messages (load-balanced or distributed)
        self._lb_next = 0
        self._fq: deque[Pipe] = deque()
        self._routes: dict[bytes, Pipe] = {}  # ROUTER: routing id -> pipe
        self._next_routing_id = self.rng.getrandbits(32)
        self.subscriptions: dict[bytes, int] = {}  # SUB/XSUB: topic -> count
        self._topic_pipes: dict[bytes, set[str]] = {}  # PUB/XPUB: topic -> subscribed pipe ids
        self._xpub_queue: deque[tuple[bytes, ...]] = deque()  # XPUB: what recv() returns
        self._req_pipe: Pipe | None = None
        self._req_waiting = False  # REQ: a request is out, the reply is next
        self._rep_pipe: Pipe | None = None
        self._rep_envelope: tuple[bytes, ...] | None = None  # REP: set while a reply is owed
        # Hooks the runtime sets: a pipe has new outgoing items; a full pipe was read below its low-water mark.
        self.on_output: Callable[[Pipe], None] = lambda pipe: None
        self.on_read_unblocked: Callable[[Pipe], None] = lambda pipe: None
        self.observer: Observer | None = None  # told of every decision (see the module docstring)
        # The type's send, for a message already checked to be a non-empty tuple of bytes (`send` checks; a
        # runtime that already did, on its hot path, calls this directly).
        self.send_tuple: Callable[[tuple[bytes, ...]], None] = {
            "PUSH": self._send_lb, "DEALER": self._send_lb, "REQ": self._send_req, "REP": self._send_rep,
            "ROUTER": self._send_router, "PUB": self._send_dist, "XPUB": self._send_dist, "SUB": self._no_send,
            "XSUB": self._send_xsub, "PULL": self._no_send, "PAIR": self._send_pair,
        }[socket_type]

    # ------------------------------------------------------------------ pipes

    def add_pipe(self, pipe_id: str, *, connect_side: bool) -> Pipe:
        """A new pipe: a connect-side one (persistent, usable before it is up) or a bind-side one."""
        if pipe_id in self.pipes:
            raise ValueError(f"pipe {pipe_id!r} exists")
        pipe = Pipe(pipe_id, connect_side=connect_side)
        self.pipes[pipe_id] = pipe
        if connect_side and not self.immediate and self.type not in PUBLISHERS and self.type != "ROUTER":
            if self.type == "PAIR" and self._out:
                return pipe  # refused when it comes up
            self._out.append(pipe)
        return pipe

    def pipe_up(self, pipe: Pipe, *, peer_identity: bytes = b"", version: str = "3.1") -> str | None:
        """The pipe's connection completed its handshake; returns why it is refused or ignored, else None."""
        pipe.peer_identity = peer_identity
        pipe.version = version
        kind = self.type
        if kind == "PAIR" and any(p is not pipe and p.up for p in self.pipes.values()):
            return "a PAIR socket talks to one peer at a time; this second connection is refused"
        if kind == "ROUTER":
            if peer_identity:
                if peer_identity in self._routes and self._routes[peer_identity] is not pipe:
                    return f"identity {peer_identity!r} is already in use: this peer is ignored (libzmq's rule)"
                pipe.routing_id = peer_identity
            else:
                pipe.routing_id = b"\x00" + (self._next_routing_id & 0xFFFFFFFF).to_bytes(4, "big")
                self._next_routing_id += 1
            self._routes[pipe.routing_id] = pipe
        pipe.up = True
        if kind in PUBLISHERS:
            if version == "1.0":
                self._add_topic(pipe, b"")  # a 1.0 subscriber cannot subscribe: it gets everything
        elif kind != "ROUTER" and pipe not in self._out:
            if kind == "PAIR" and self._out:
                self._out = [p for p in self._out if p.up or p is pipe]
            self._out.append(pipe)
        elif kind == "ROUTER" and pipe not in self._out:
            self._out.append(pipe)
        if kind in SUBSCRIBERS:
            # libzmq "hiccups" the pipe on (re)connection: queued subscriptions go, every topic is sent once.
            pipe.out = deque(item for item in pipe.out if not isinstance(item, Subscription))
            for topic in self.subscriptions:
                pipe.out.append(Subscription(topic, True))
        if pipe.out:
            self.on_output(pipe)
        return None

    def pipe_down(self, pipe: Pipe) -> None:
        """The pipe's connection ended; a connect-side pipe stays (and keeps its queue) for the reconnection."""
        if not pipe.connect_side:
            self.remove_pipe(pipe)
            return
        pipe.up = False
        self._forget_peer(pipe)
        if (self.immediate or self.type == "ROUTER" or self.type in PUBLISHERS) and pipe in self._out:
            self._out.remove(pipe)

    def remove_pipe(self, pipe: Pipe) -> None:
        """The pipe is gone for good (bind side closed, or the socket closes)."""
        pipe.up = False
        self._forget_peer(pipe)
        self.pipes.pop(pipe.id, None)
        if pipe in self._out:
            self._out.remove(pipe)
        pipe.out.clear()
        # Messages already received stay readable (libzmq terminates a pipe only once its reader drained it).
        pipe.read_blocked = False

    def _forget_peer(self, pipe: Pipe) -> None:
        if self._routes.get(pipe.routing_id) is pipe:
            del self._routes[pipe.routing_id]
        for topic in list(pipe.topics):
            self._remove_topic(pipe, topic)

    # ------------------------------------------------------------------ sending

    @property
    def writable(self) -> bool:
        """Whether send() would take a message now (always True for types that drop rather than block)."""
        if self.type in PUBLISHERS or self.type in ("ROUTER", "REP"):
            return True
        if self.type == "REQ" and self._req_waiting:
            return False
        return any(len(p.out) < self.sndhwm for p in self._out)

    def send(self, frames: list[bytes] | tuple[bytes, ...]) -> None:
        """Queues one message; raises `Again` when it would block and `SocketStateError` when not allowed."""
        if not frames:
            raise ValueError("a message has at least one frame")
        self.send_tuple(frames if type(frames) is tuple else tuple(frames))

    def _no_send(self, frames: tuple[bytes, ...]) -> None:
        raise SocketStateError(f"a {self.type} socket cannot send (ENOTSUP)")

    def _push(self, pipe: Pipe, item) -> None:
        was_empty = not pipe.out
        pipe.out.append(item)
        if was_empty:
            self.on_output(pipe)

    def _lb_pick(self, frames: tuple[bytes, ...]) -> Pipe:
        pipes = self._out
        n = len(pipes)
        hwm = self.sndhwm
        for _ in range(n):
            i = self._lb_next % n
            self._lb_next = (i + 1) % n  # (libzmq's lb: modulo the pipes there now, so a new one waits its turn)
            pipe = pipes[i]
            if len(pipe.out) < hwm:
                return pipe
        if self.observer is not None:
            self.observer("block", "sndhwm" if n else "no-peer", None, frames, None)
        raise Again("no peer can take the message now (none connected, or every pipe is at its high-water mark)")

    def _send_lb(self, frames: tuple[bytes, ...]) -> None:
        pipes = self._out
        if len(pipes) == 1:  # the common case, without the round-robin loop
            pipe = pipes[0]
            out = pipe.out
            if len(out) < self.sndhwm:
                out.append(frames)
                if self.observer is not None:
                    self.observer("route" if pipe.up else "queue", "round-robin", pipe, frames, None)
                if len(out) == 1:
                    self.on_output(pipe)
                return
            if self.observer is not None:
                self.observer("block", "sndhwm", None, frames, None)
            raise Again("the only pipe is at its high-water mark")
        pipe = self._lb_pick(frames)
        self._push(pipe, frames)
        if self.observer is not None:
            self.observer("route" if pipe.up else "queue", "round-robin", pipe, frames, None)

    def _send_pair(self, frames: tuple[bytes, ...]) -> None:
        for pipe in self._out:
            if len(pipe.out) < self.sndhwm:
                self._push(pipe, frames)
                if self.observer is not None:
                    self.observer("route" if pipe.up else "queue", "pair", pipe, frames, None)
                return
            break
        if self.observer is not None:
            self.observer("block", "sndhwm" if self._out else "no-peer", None, frames, None)
        raise Again("the PAIR peer is not connected or its pipe is full")

    def _send_req(self, frames: tuple[bytes, ...]) -> None:
        if self._req_waiting:
            raise SocketStateError("REQ must receive the reply before sending again (EFSM)")
        pipe = self._lb_pick(frames)
        self._push(pipe, (b"", *frames))
        if self.observer is not None:
            self.observer("route" if pipe.up else "queue", "round-robin", pipe, frames, None)
        self._req_pipe = pipe
        self._req_waiting = True

    def _send_rep(self, frames: tuple[bytes, ...]) -> None:
        if self._rep_envelope is None:
            raise SocketStateError("REP must receive a request before sending (EFSM)")
        pipe, envelope = self._rep_pipe, self._rep_envelope
        self._rep_pipe = self._rep_envelope = None
        if pipe is not None and pipe.up and self.pipes.get(pipe.id) is pipe and len(pipe.out) < self.sndhwm:
            self._push(pipe, (*envelope, *frames))
            if self.observer is not None:
                self.observer("route", "envelope", pipe, frames, len(envelope))
        elif self.observer is not None:  # the requester is gone or full: the reply is dropped, as libzmq's router does
            self.observer("drop", "rep-peer-gone", pipe, frames, len(envelope))

    def _send_router(self, frames: tuple[bytes, ...]) -> None:
        if len(frames) < 2:
            return  # only a routing id: nothing to send
        pipe = self._routes.get(frames[0])
        if pipe is None or len(pipe.out) >= self.sndhwm:
            if self.observer is not None:  # unknown or full peer: dropped (ZMQ_ROUTER_MANDATORY off)
                self.observer("drop", "router-mandatory-off" if pipe is None else "sndhwm", pipe, frames, frames[0])
            return
        self._push(pipe, frames[1:])
        if self.observer is not None:
            self.observer("route", "identity-routing", pipe, frames, frames[0])

    def matches(self, pipe: Pipe, first: bytes) -> bool:
        """Whether a publisher sends a message whose first frame is `first` to `pipe`."""
        return any(first.startswith(topic) for topic in pipe.topics)

    def _send_dist(self, frames: tuple[bytes, ...]) -> None:
        if self.observer is not None:
            self._send_dist_observed(frames, self.observer)
            return
        first = frames[0]
        hwm = self.sndhwm
        for pipe in self._out:
            if pipe.topics and len(pipe.out) < hwm and self.matches(pipe, first):
                self._push(pipe, frames)

    def _send_dist_observed(self, frames: tuple[bytes, ...], observer: Observer) -> None:
        """`_send_dist`, telling the observer what happened for every pipe (and for pipes not subscribed yet)."""
        first = frames[0]
        hwm = self.sndhwm
        sent = False
        for pipe in self.pipes.values():
            if not pipe.up:
                continue
            if pipe not in self._out or not pipe.topics:
                observer("filter", "slow-joiner", pipe, frames, None)
            elif not self.matches(pipe, first):
                observer("filter", "prefix-match", pipe, frames, None)
            elif len(pipe.out) >= hwm:
                observer("drop", "sndhwm", pipe, frames, None)
            else:
                self._push(pipe, frames)
                observer("route", "prefix-match", pipe, frames, None)
                sent = True
        if not sent and not any(p.up for p in self.pipes.values()):
            observer("drop", "slow-joiner", None, frames, None)

    def _send_xsub(self, frames: tuple[bytes, ...]) -> None:
        first = frames[0]
        if len(frames) == 1 and first[:1] == b"\x01":
            self.subscribe(first[1:])
        elif len(frames) == 1 and first[:1] == b"\x00":
            self.unsubscribe(first[1:])
        else:
            for pipe in self._out:
                if len(pipe.out) < self.sndhwm:
                    self._push(pipe, frames)
                    if self.observer is not None:
                        self.observer("route", "fan-out", pipe, frames, None)
                elif self.observer is not None:
                    self.observer("drop", "sndhwm", pipe, frames, None)

    # ------------------------------------------------------------------ subscriptions

    def subscribe(self, topic: bytes) -> None:
        """ZMQ_SUBSCRIBE (SUB/XSUB): counted; every subscribe goes to every pipe."""
        self._need_subscriber()
        self.subscriptions[topic] = self.subscriptions.get(topic, 0) + 1
        for pipe in self._subscriber_pipes():
            self._push(pipe, Subscription(topic, True))

    def unsubscribe(self, topic: bytes) -> None:
        """ZMQ_UNSUBSCRIBE: the cancel goes out only when the count drops to zero."""
        self._need_subscriber()
        count = self.subscriptions.get(topic)
        if count is None:
            return
        if count > 1:
            self.subscriptions[topic] = count - 1
            return
        del self.subscriptions[topic]
        for pipe in self._subscriber_pipes():
            self._push(pipe, Subscription(topic, False))

    def _subscriber_pipes(self) -> Iterable[Pipe]:
        # Pipes that are up get the item now; down connect-side pipes get every topic when they come up.
        return [p for p in self.pipes.values() if p.up]

    def _need_subscriber(self) -> None:
        if self.type not in SUBSCRIBERS:
            raise SocketStateError(f"a {self.type} socket does not subscribe")

    def on_subscription(self, pipe: Pipe, topic: bytes, subscribe: bool) -> None:
        """A peer subscribed or cancelled (SUBSCRIBE/CANCEL command or 0x01/0x00-prefixed message)."""
        if self.type not in PUBLISHERS:
            return
        if self.observer is not None:
            self.observer("subscribe", "subscribe" if subscribe else "cancel", pipe, None, topic)
        if subscribe:
            self._add_topic(pipe, topic)
        elif topic in pipe.topics:
            self._remove_topic(pipe, topic)

    def _add_topic(self, pipe: Pipe, topic: bytes) -> None:
        pipes = self._topic_pipes.setdefault(topic, set())
        first = not pipes
        pipes.add(pipe.id)
        pipe.topics.add(topic)
        if pipe not in self._out:
            self._out.append(pipe)
        if self.type == "XPUB" and (first or self.xpub_verbose):
            self._xpub_queue.append((b"\x01" + topic,))

    def _remove_topic(self, pipe: Pipe, topic: bytes) -> None:
        pipe.topics.discard(topic)
        pipes = self._topic_pipes.get(topic)
        if pipes is None:
            return
        pipes.discard(pipe.id)
        if not pipes:
            del self._topic_pipes[topic]
            if self.type == "XPUB":
                self._xpub_queue.append((b"\x00" + topic,))

    # ------------------------------------------------------------------ receiving

    def deliver(self, pipe: Pipe, frames: tuple[bytes, ...]) -> None:
        """A message arrived on `pipe`."""
        kind = self.type
        if kind in PUBLISHERS:
            if kind == "XPUB":
                self._xpub_queue.append(tuple(frames))
            return
        if kind == "PUSH":
            return
        pipe.inq.append(frames)
        self._queued(pipe)

    def deliver_many(self, pipe: Pipe, messages: list[tuple[bytes, ...]]) -> None:
        """Several messages that arrived on `pipe` (the TCP fast path)."""
        kind = self.type
        if kind in PUBLISHERS or kind == "PUSH":
            for frames in messages:
                self.deliver(pipe, frames)
            return
        pipe.inq.extend(messages)
        self._queued(pipe)

    def _queued(self, pipe: Pipe) -> None:
        """After messages joined `pipe`'s inbound queue: the pipe takes its turn in the fair queue, and a queue
        at the RCVHWM stops the pipe's reading (libzmq's back-pressure)."""
        if not pipe.in_fq:
            pipe.in_fq = True
            self._fq.append(pipe)
        if len(pipe.inq) >= self.rcvhwm and not pipe.read_blocked:
            pipe.read_blocked = True
            if self.observer is not None:
                self.observer("block", "rcvhwm", pipe, None, len(pipe.inq))

    @property
    def readable(self) -> bool:
        """Whether recv() has something (cheap check; REQ/REP/SUB may still drop what is queued)."""
        if self.type == "XPUB":
            return bool(self._xpub_queue)
        return bool(self._fq)

    def recv(self) -> tuple[bytes, ...] | None:
        """The next message as the application sees it, or None; raises `SocketStateError` (EFSM, ENOTSUP)."""
        kind = self.type
        if kind == "PULL" or kind == "DEALER" or kind == "PAIR":  # the common case: plain fair queueing
            fq = self._fq
            if len(fq) == 1:
                pipe = fq[0]
                inq = pipe.inq
                if inq:
                    frames = inq.popleft()
                    if not inq:
                        fq.popleft()
                        pipe.in_fq = False
                    if self.observer is not None:
                        self.observer("deliver", "fair-queue", pipe, frames, None)
                    if pipe.read_blocked and len(inq) <= self.rcvlwm:
                        self._unblock(pipe)
                    return frames
            got = self._fq_next()
            if got is None:
                return None
            if self.observer is not None:
                self.observer("deliver", "fair-queue", got[0], got[1], None)
            return got[1]
        if kind == "REQ":
            return self._recv_req()
        if kind == "REP":
            return self._recv_rep()
        if kind == "XPUB":
            return self._xpub_queue.popleft() if self._xpub_queue else None
        if kind in ("PUB", "PUSH"):
            raise SocketStateError(f"a {kind} socket cannot receive (ENOTSUP)")
        while True:
            got = self._fq_next()
            if got is None:
                return None
            pipe, frames = got
            if kind == "ROUTER":
                if self.observer is not None:
                    self.observer("envelope", "identity-routing", pipe, frames, pipe.routing_id)
                return (pipe.routing_id, *frames)
            if kind in SUBSCRIBERS and not self._wanted(frames[0]):
                if self.observer is not None:
                    self.observer("filter", "local-prefix-match", pipe, frames, None)
                continue
            if self.observer is not None:
                self.observer("deliver", "fair-queue", pipe, frames, None)
            return frames

    def _wanted(self, first: bytes) -> bool:
        return any(first.startswith(topic) for topic in self.subscriptions)

    def _fq_next(self) -> tuple[Pipe, tuple[bytes, ...]] | None:
        fq = self._fq
        while fq:
            pipe = fq[0]
            inq = pipe.inq
            if not inq:
                fq.popleft()
                pipe.in_fq = False
                continue
            frames = inq.popleft()
            if inq:
                if len(fq) > 1:
                    fq.rotate(-1)
            else:
                fq.popleft()
                pipe.in_fq = False
            if pipe.read_blocked and len(inq) <= self.rcvlwm:
                self._unblock(pipe)
            return pipe, frames
        return None

    def _unblock(self, pipe: Pipe) -> None:
        pipe.read_blocked = False
        if self.observer is not None:
            self.observer("unblock", "rcvhwm", pipe, None, len(pipe.inq))
        self.on_read_unblocked(pipe)

    def _recv_req(self) -> tuple[bytes, ...] | None:
        if not self._req_waiting:
            raise SocketStateError("REQ must send a request before receiving (EFSM)")
        while True:
            got = self._fq_next()
            if got is None:
                return None
            pipe, frames = got
            if pipe is not self._req_pipe or len(frames) < 2 or frames[0] != b"":
                if self.observer is not None:  # not from the peer we asked, or no delimiter: dropped
                    self.observer("drop", "req-reply-peer" if pipe is not self._req_pipe else "req-delimiter",
                                  pipe, frames, None)
                continue
            if self.observer is not None:
                self.observer("strip", "delimiter", pipe, frames, 1)
            self._req_waiting = False
            self._req_pipe = None
            return frames[1:]

    def _recv_rep(self) -> tuple[bytes, ...] | None:
        if self._rep_envelope is not None:
            raise SocketStateError("REP must send the reply before receiving again (EFSM)")
        while True:
            got = self._fq_next()
            if got is None:
                return None
            pipe, frames = got
            try:
                bottom = frames.index(b"")
            except ValueError:
                bottom = len(frames) - 1  # no delimiter: a malformed request, dropped
            if bottom == len(frames) - 1:  # (or an envelope without a body)
                if self.observer is not None:
                    self.observer("drop", "rep-delimiter", pipe, frames, None)
                continue
            if self.observer is not None:
                self.observer("strip", "envelope", pipe, frames, bottom + 1)
            self._rep_pipe = pipe
            self._rep_envelope = frames[:bottom + 1]
            return frames[bottom + 1:]

    # ------------------------------------------------------------------ state

    def describe(self) -> dict:
        """A JSON-friendly view of the socket's state."""
        out: dict = {
            "type": self.type,
            "pipes": {p.id: {"up": p.up, "out": len(p.out), "in": len(p.inq),
                             **({"routing_id": p.routing_id.hex()} if self.type == "ROUTER" and p.up else {}),
                             **({"topics": sorted(t.hex() for t in p.topics)} if self.type in PUBLISHERS else {})}
                      for p in self.pipes.values()},
        }
        if self.type in SUBSCRIBERS:
            out["subscriptions"] = {t.hex(): n for t, n in self.subscriptions.items()}
        if self.type == "REQ":
            out["awaiting_reply"] = self._req_waiting
        if self.type == "REP":
            out["reply_owed"] = self._rep_envelope is not None
        return out
