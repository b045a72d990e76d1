"""Simulated sessions: any number of peers joined by in-memory links on a virtual clock.

Every byte a peer writes is a chunk on a link direction; it arrives `latency` virtual seconds
later and is handed to the other peer one protocol element at a time (or one chunk, when the
writer split an element: libzmq's greeting arrives as 10 + 1 + 53 octets, three steps). A
`ConnectionDissector` reads exactly the bytes that cross each link, so the log explains every
byte. The same seed and the same script of actions always give the same events, byte for byte.

API (everything is synchronous; times are virtual seconds)::

    sim = Simulation(seed=0, latency=0.001)
    sim.add_peer("server", "REP", mechanism="PLAIN", plain_server=True, username="admin", password="secret")
    sim.add_peer("client", "REQ", mechanism="PLAIN", username="admin", password="secret", identity=b"c1")
    conn = sim.connect("client", "server")     # -> "1"; the connecting side is the client (c2s)
    sim.send("client", [b"Hello"])             # queued by the socket's rules, written when possible
    sim.step()                                 # -> events of one element (or one chunk, or one timer)
    sim.run(until_t=1.0, max_steps=None)       # -> every event until then (or until idle)
    sim.rewind()                               # back to t=0: replays seed + script; run() repeats the session
    sim.inject("corrupt", conn="1", dir="c2s", offset=70)   # faults, see faults.FAULTS
    sim.events                                 # the whole log
    sim.state()                                # t, pending bytes per link direction, peers and connections
    sim.actions()                              # every external action so far, as `ScriptEntry`s

`add_peer(name, socket_type, *, version="3.1", mechanism="NULL"|"PLAIN"|"CURVE", identity=b"",
username=None, password=None, plain_server=False, plain_users=None, curve_server=False,
curve_publickey=None, curve_secretkey=None, curve_serverkey=None, strategy="partial",
heartbeat_ivl=0, heartbeat_ttl=0, heartbeat_timeout=None, handshake_ivl=30, reconnect_ivl=0.1,
reconnect_ivl_max=0, sndhwm=1000, rcvhwm=1000, max_frame_size=..., auto_recv=True)`: a CURVE
server without keys gets a keypair from the seeded generator, and a CURVE client without
`curve_serverkey` uses the key of the server it connects to. With `auto_recv` (the default) the
application reads every message as soon as the socket has it (a `recv` peer event); without it,
`recv(name)` reads one. Other actions: `subscribe(name, topic)`, `unsubscribe(name, topic)`,
`close(conn, side="client")`, `disconnect(client_name, server_name)` (stops reconnecting too),
`ping(conn, side, ttl=0, context=b"")` (the application's own PING, outside the heartbeat).

For the lesson player: `Simulation(..., unread_on_wire=True)` keeps bytes written towards a side
that has closed on the wire (the dissector shows them, as a capture would; the peer never reads
them), `on_write(conn, dir, offset, length)` is told of each write as it arrives, and `in_flight()`
says whether bytes or an end of stream are still on their way. Faults act through the public
pieces `peers.faults` uses: `link(conn=None)`, `peer(name)`, `close_side`, `write`, `reopen`,
`fault_event`, and each `Direction`'s `split`, `hold` and `flip`.

Events (dicts, JSON-ready; every one has `t` and a `seq` counter):

- wire elements, the event contract (docs/architecture.md) produced by the dissector: `conn`, `dir`,
  `offset`, `length`, `kind` (`greeting`, `command`, `frame`, `message`, `expert`), `fields` and
  the kind's keys (with `Simulation(fields=False)`, a frame or message whose fields
  `engine.events.refield` can make again has `framing` in their place);
- `{"kind": "link", "what": "open" | "bytes" | "eof" | "half-closed" | "closed" | "fault", "conn", ...}`:
  what the transport did; every delivery step starts with a `bytes` event (`dir`, `offset`,
  `length`, `hex`; with `Simulation(wire_data=True)`, `data`, the octets, in place of `hex`);
- `{"kind": "peer", "peer": name, "what": "handshake" | "recv" | "closed" | "ping" | "pong" |
  "ping-sent" | "subscription" | "send-blocked" | "reconnect" | ..., "conn", ...}`: what a peer did.

A step processes one scheduled item: the next delivery (the earliest arrival; ties in write
order), a timer (handshake timeout, heartbeat, reconnection), or an EOF. Application actions
(`send`, `subscribe`, ...) happen between steps; their effects (writes) are scheduled, not
delivered, so they cost no step. `rewind(to_step=0)` rebuilds the session from the seed and
replays the script up to `to_step`; stepping on replays the later actions at the same step
counts. A new action after a rewind drops the replayed future (a new branch). The script keeps
each action packed with `marshal` (bytes: no object the garbage collector tracks, where a busy
session keeps one entry per message and every tracked object lengthens the collections of the
older generations, which pause the whole server; nested tuples would stay tracked for a
collection per level).

The pieces, one job each: `Simulation` (here) has the clock and the log (a `timeline.Timeline`), stepping, the
script and rewind, and the peers' applications; its `wire` (`wire.Wire`) the links, writes, deliveries and
closes; its `tracker` (`tracking.Tracker`) the socket decisions and message ids; each peer is a
`simpeer.SimPeer`.

The peers are the same `PeerCore`s the TCP runtime drives, with the engine's fast path for the
messages of ready clear-text connections (it hands anything unusual to the strict decoder, so a
peer accepts and refuses exactly the same bytes); the dissector reads every byte either way.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import marshal
import random
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from ..engine.errors import LocalProtocolError
from ..engine.notation import parse_hex
from .faults import FAULTS
from .node import socket_options
from .options import PeerOptions
from .reactions import Reactions
from .simpeer import SimPeer
from .sockets import Again, SocketStateError
from .timeline import Timeline
from .tracking import RECV_DECISIONS, Tracker
from .wire import SIDES, Chunk, Direction, Link, Wire

DEFAULT_MAX_STEPS = 10_000


class ScriptEntry(NamedTuple):
    """One action of the script: what `rewind` replays (the action's arguments as (name, value) pairs)."""

    op: str
    t: float
    step: int
    args: tuple[tuple[str, Any], ...]


def _pack(op: str, t: float, step: int, args: tuple[tuple[str, Any], ...]) -> bytes | ScriptEntry:
    """An action as `Simulation.script` keeps it: marshalled (an argument marshal cannot write keeps it as a
    `ScriptEntry`). Takes the fields rather than a `ScriptEntry`: the usual case (every send) then makes none."""
    try:
        return marshal.dumps((op, t, step, args))
    except ValueError:
        return ScriptEntry(op, t, step, args)


def _unpack(packed: bytes | ScriptEntry) -> ScriptEntry:
    return ScriptEntry._make(marshal.loads(packed)) if type(packed) is bytes else packed


class Simulation:
    """Peers on a wire, a virtual clock and the event log (see the module docstring): the clock, stepping, the
    script and rewind, and the peers' applications; the links are its `wire`'s, the decisions and message ids
    its `tracker`'s."""

    def __init__(self, seed: int = 0, *, latency: float = 0.001, unread_on_wire: bool = False,
                 decisions: bool = False, window: int | None = None, fields: bool = True,
                 max_body: int | None = None, wire_data: bool = False) -> None:
        self.seed = seed
        # Without `fields`, frames and messages whose fields `engine.events.refield` makes again from their
        # dicts come without `fields` and with `framing` instead (a session builds them only when asked).
        self.fields = fields
        # With `max_body`, a frame's or message's body (and an application read's frames) longer than that is
        # cut in its event (`truncated`, its fields made from the whole bytes): what a session keeps of it.
        self.max_body = max_body
        # With `wire_data`, a link's `bytes` entries carry the octets themselves as `data` (bytes, not JSON) in
        # place of `hex`: a session keeps them as they are for its export (a 1 MB delivery's 2 MB of hex, made
        # and parsed back for each of 23 subscribers, cost more than the rest of the step).
        self.wire_data = wire_data
        self.latency = latency
        # Whether sockets report their decisions as `socket` events (and messages get `msg` ids); off, the
        # log is exactly what it was before topologies (two-peer sessions rely on that, byte for byte).
        self.decisions = decisions
        # The simulated TCP buffer of a direction (octets): a peer writes queued messages only while fewer are
        # in flight, and a reader at its RCVHWM stops reading, so back-pressure reaches the sender's pipe.
        # None: no limit (bytes always go, as before topologies).
        self.window = window
        # Whether bytes written towards a side that closed still cross the link (and the dissector), as a
        # capture would show them, or vanish unread (the default: the log then counts them as `unread`).
        self.unread_on_wire = unread_on_wire
        self.script: list[bytes | ScriptEntry] = []  # packed (see the module docstring); read with actions()
        self._replay: deque[ScriptEntry] = deque()
        self._replaying = False
        self._on_write: Callable[[str, str, int, int], None] | None = None
        self._reset()

    def _reset(self) -> None:
        self.rng = random.Random(self.seed)
        self.timeline = Timeline()
        self._log = self.timeline.log
        self.steps = 0
        self.peers: dict[str, SimPeer] = {}
        self.wire = Wire(self.timeline, self.rng, latency=self.latency, window=self.window,
                         unread_on_wire=self.unread_on_wire, topology=self.decisions, fields=self.fields,
                         max_body=self.max_body, wire_data=self.wire_data, on_write=self._on_write)
        self.links: dict[str, Link] = self.wire.links
        self.tracker = Tracker(self.timeline, self.wire, self.peers)
        if self.decisions:
            self.wire.on_message = self.tracker.tag_message
            self.wire.on_closed = self.tracker.trim_ids
        # Every peer, as a tuple for the loops that run per step (`_settle`): replaced, never changed in place.
        self._peer_list: tuple[SimPeer, ...] = ()
        # Timed actions (`schedule`), proxies, slow readers, and the peers `_settle` always visits in a topology
        # (proxies' nodes and slow readers: see `_settling_peers`).
        self._timed: list[tuple[float, int, str, dict[str, Any]]] = []
        self._timed_seq = itertools.count(1)
        self._proxies: list[tuple[SimPeer, SimPeer]] = []
        self._slow: tuple[SimPeer, ...] = ()
        self._always: set[SimPeer] = set()
        self.reactions = Reactions()  # (`react`)

    # ------------------------------------------------------------------ the clock and the log

    @property
    def t(self) -> float:
        """The virtual time, in seconds."""
        return self.timeline.t

    @t.setter
    def t(self, value: float) -> None:
        self.timeline.t = value

    @property
    def seq(self) -> int:
        """The sequence number of the last entry of the log."""
        return self.timeline.seq

    @property
    def events(self) -> list[dict[str, Any]]:
        """The whole log."""
        return self.timeline.events

    @property
    def on_write(self) -> Callable[[str, str, int, int], None] | None:
        """Told of every write as its first octets arrive: (conn, dir, offset, length). The log shows
        deliveries, one element at a time; a lesson also shows the writes themselves."""
        return self._on_write

    @on_write.setter
    def on_write(self, hook: Callable[[str, str, int, int], None] | None) -> None:
        self._on_write = self.wire.on_write = hook

    # ------------------------------------------------------------------ script

    def _action(self, op: str, **args: Any) -> Any:
        if op != "send":
            self.wire.all_dirty = True
        if not self._replaying:
            self._replay.clear()  # a new action after a rewind starts a new branch
        script = self.script
        script.append(_pack(op, self.timeline.rounded(), self.steps, tuple(args.items())))
        n = len(script)
        try:
            return getattr(self, f"_op_{op}")(**args)
        except Exception:
            del script[n - 1]  # (an action never records another: this is still its entry)
            raise

    def _apply_replay(self) -> None:
        while self._replay and self._replay[0].step <= self.steps:
            entry = self._replay.popleft()
            self.t = max(self.t, entry.t)  # run(until_t=...) may have moved the clock past the last step
            self._replaying = True
            try:
                self._action(entry.op, **dict(entry.args))
            finally:
                self._replaying = False

    def actions(self) -> list[ScriptEntry]:
        """Every external action so far, in order: what `rewind` replays."""
        return [_unpack(packed) for packed in self.script]

    def keep_replayed_future(self) -> None:
        """Puts the actions that a previous rewind left waiting (still in the future) back into the script,
        so that the next rewind keeps them too."""
        pending = [_pack(*entry) for entry in self._replay]
        if pending and all(packed not in self.script for packed in pending):
            self.script = [*self.script, *pending]

    def rewind(self, to_step: int = 0) -> list[dict[str, Any]]:
        """Back to t=0 (then forward to `to_step` steps) by replaying the seed and the script."""
        script = self.script
        self._reset()
        self.script = []
        self._replay = deque(map(_unpack, script))
        self._apply_replay()
        while self.steps < to_step:
            if not self._step_once():
                break
        return list(self.events)

    # ------------------------------------------------------------------ external actions

    def add_peer(self, name: str, socket_type: str, *, auto_recv: bool = True, **options: Any) -> None:
        """Adds a peer (see the module docstring for the options)."""
        self._action("add_peer", name=name, socket_type=socket_type, auto_recv=auto_recv, **options)

    def _op_add_peer(self, name: str, socket_type: str, auto_recv: bool = True, **options: Any) -> None:
        if name in self.peers:
            raise ValueError(f"a peer named {name!r} exists")
        options = dict(options)
        recv_every = options.pop("recv_every", None)
        echo = bool(options.pop("echo", False))
        if isinstance(options.get("identity"), str):
            options["identity"] = options["identity"].encode("utf-8")
        auto_serverkey = False
        if str(options.get("mechanism", "NULL")).upper() == "CURVE":
            if options.get("curve_server"):
                if options.get("curve_publickey") is None or options.get("curve_secretkey") is None:
                    from nacl.bindings import crypto_scalarmult_base

                    secret = self.rng.randbytes(32)
                    options["curve_secretkey"] = secret
                    options["curve_publickey"] = crypto_scalarmult_base(secret)
            elif options.get("curve_serverkey") is None:
                auto_serverkey = True
                options["curve_serverkey"] = bytes(32)  # replaced by the server's key at connect time
        peer_options = PeerOptions(socket_type, **options)
        peer = self.peers[name] = SimPeer(name, peer_options, auto_recv and not recv_every, auto_serverkey,
                                          rng=self.rng, emit=self._log)
        peer.recv_every = float(recv_every) if recv_every else None
        peer.echo = echo
        if self.decisions:
            peer.socket.observer = functools.partial(self.tracker.decision, peer)
            peer.core.on_output = self.wire.mark
        peer.index = len(self._peer_list)
        self._peer_list = tuple(self.peers.values())
        self._slow = tuple(p for p in self._peer_list if p.recv_every)
        self._always.update(self._slow)
        self._log({"kind": "peer", "peer": name, "what": "added", **peer_options.describe()})

    def connect(self, client_name: str, server_name: str) -> str:
        """Joins two peers (the first connects, the second binds); returns the connection id."""
        return self._action("connect", client_name=client_name, server_name=server_name)

    def _op_connect(self, client_name: str, server_name: str) -> str:
        client, server = self.peer(client_name), self.peer(server_name)
        if client is server:
            raise ValueError("a peer cannot connect to itself")
        if client.auto_serverkey:
            if server.options.curve_publickey is None:
                raise ValueError(f"{server_name} has no CURVE public key")
            client.options.curve_serverkey = server.options.curve_publickey
        link = self.wire.connect(client, server)
        self._settle()
        return link.id

    def send(self, peer_name: str, frames: list[bytes] | tuple[bytes, ...]) -> None:
        """The peer's application sends one message (it waits, as a blocked libzmq send would, when it must)."""
        # A tuple of bytes: the script keeps every message, packed (marshal writes tuples, not lists of bytes).
        frames = tuple([f.encode("utf-8") if isinstance(f, str) else bytes(f) for f in frames])
        self._action("send", peer_name=peer_name, frames=frames)

    def _op_send(self, peer_name: str, frames: tuple[bytes, ...] | list[bytes]) -> None:
        peer = self.peer(peer_name)
        if peer.proxy_to is not None:
            raise ValueError(f"{peer_name} is one side of a proxy: it has no application of its own")
        msg = tuple(frames)
        if self.decisions:
            tracker = self.tracker
            tracker.send(peer, msg, tracker.new_id())
            self._settle()
            return
        if peer.blocked:
            peer.blocked.append(msg)
        else:
            try:
                peer.core.send(msg)
            except Again:
                peer.blocked.append(msg)
                self._log({"kind": "peer", "peer": peer_name, "what": "send-blocked",
                           "frames": [f.hex() for f in msg],
                           "reason": "no peer can take the message yet; it waits, as libzmq's send() would"})
            except SocketStateError as exc:
                raise ValueError(str(exc)) from None
        self._settle()

    def recv(self, peer_name: str) -> list[bytes] | None:
        """For a peer without auto_recv: its application reads one message (None when there is none)."""
        return self._action("recv", peer_name=peer_name)

    def _op_recv(self, peer_name: str) -> list[bytes] | None:
        peer = self.peer(peer_name)
        try:
            msg = peer.core.recv()
        except SocketStateError as exc:
            raise ValueError(str(exc)) from None
        if msg is not None:
            self._log_recv(peer, msg)
        self._settle()
        return list(msg) if msg is not None else None

    def subscribe(self, peer_name: str, topic: bytes | str) -> None:
        """SUB/XSUB: subscribe to `topic`."""
        self._action("subscribe", peer_name=peer_name, topic=_b(topic), subscribe=True)

    def unsubscribe(self, peer_name: str, topic: bytes | str) -> None:
        """SUB/XSUB: cancel `topic`."""
        self._action("subscribe", peer_name=peer_name, topic=_b(topic), subscribe=False)

    def _op_subscribe(self, peer_name: str, topic: bytes, subscribe: bool) -> None:
        peer = self.peer(peer_name)
        try:
            (peer.core.subscribe if subscribe else peer.core.unsubscribe)(topic)
        except SocketStateError as exc:
            raise ValueError(str(exc)) from None
        self._settle()

    def schedule(self, at: float, op: str, **args: Any) -> None:
        """Carries out the action `op` (`send`, `connect`, `subscribe`, ...; the method's arguments) at virtual
        time `at`: a scripted send, a late connect (the slow joiner). It is one step when it comes."""
        if not hasattr(self, f"_op_{op}") or op in ("schedule", "add_peer", "inject"):
            raise ValueError(f"cannot schedule {op!r}")
        if op == "send":
            args["frames"] = tuple(_b(f) for f in args["frames"])
        self._action("schedule", at=float(at), action=op, args=args)

    def _op_schedule(self, at: float, action: str, args: dict[str, Any]) -> None:
        bisect.insort(self._timed, (at, next(self._timed_seq), action, dict(args)))

    def _fire_timed(self) -> None:
        _, _, op, args = self._timed.pop(0)
        try:
            getattr(self, f"_op_{op}")(**args)
        except ValueError as exc:
            self._log({"kind": "peer", "peer": str(args.get("peer_name") or args.get("client_name") or ""),
                       "what": "error", "action": op, "reason": str(exc)})

    def react(self, peer_names: list[str] | tuple[str, ...], read: list[bytes] | tuple[bytes, ...], occurrence: int,
              delay: float, frames: list[bytes] | tuple[bytes, ...]) -> None:
        """When the applications of `peer_names` (workers that answer alike: one peer, or a pool of REPs) have
        read the message `read` `occurrence` times (1: the first), the one that read it sends `frames` `delay`
        seconds later: a reply in reaction to its request (a replayed REP or ROUTER, a REQ's next request), which
        moves with the request when something earlier changes, and is never sent if the request never comes."""
        self._action("react", peer_names=tuple(peer_names), read=tuple(_b(f) for f in read),
                     occurrence=int(occurrence), delay=float(delay), frames=tuple(_b(f) for f in frames))

    def _op_react(self, peer_names: tuple[str, ...], read: tuple[bytes, ...], occurrence: int, delay: float,
                  frames: tuple[bytes, ...]) -> None:
        for name in peer_names:
            self.peer(name)  # (an unknown peer: ValueError now, not at the read)
        self.reactions.add(peer_names, read, occurrence, delay, frames)

    def proxy(self, frontend: str, backend: str) -> None:
        """zmq_proxy(frontend, backend): what either node receives, the other sends (their applications are the
        proxy)."""
        self._action("proxy", frontend=frontend, backend=backend)

    def _op_proxy(self, frontend: str, backend: str) -> None:
        front, back = self.peer(frontend), self.peer(backend)
        if front is back or front.proxy_to is not None or back.proxy_to is not None:
            raise ValueError("a proxy joins two different nodes, each in one proxy")
        front.proxy_to, back.proxy_to = back, front
        front.auto_recv = back.auto_recv = False
        self._proxies.append((front, back))
        self._always.update((front, back))
        self._settle()

    def add_topology(self, topology: Any, *, script: bool = True) -> None:
        """Adds a `peers.topology.Topology`: its nodes (subscribed), links (late ones scheduled at their `at`, closes
        at their `close_at`), proxies, later subscriptions and, with `script`, its scripted sends (`add_topology`).
        An external node (a program outside the lab, real sessions only) is refused: `ValueError`."""
        add_topology(self, topology, script=script)

    def close(self, conn: str, side: str = "client") -> None:
        """One side of a connection closes its TCP connection (the client reconnects, as libzmq does)."""
        self._action("close", conn=conn, side=side)

    def _op_close(self, conn: str, side: str = "client") -> None:
        link = self.link(conn)
        if side not in SIDES:
            raise ValueError("side is 'client' or 'server'")
        self.close_side(link, side, "closed by the application")
        self._settle()

    def ping(self, conn: str, side: str, ttl: float = 0, context: bytes | str = b"") -> None:
        """That side's application sends a PING of its own (ZMTP 3.1; `ttl` in deciseconds), outside the
        heartbeat's schedule."""
        self._action("ping", conn=conn, side=side, ttl=int(ttl), context=_b(context))

    def _op_ping(self, conn: str, side: str, ttl: int, context: bytes) -> None:
        link = self.link(conn)
        if side not in SIDES:
            raise ValueError("side is 'client' or 'server'")
        if link.side_closed[side]:
            raise ValueError(f"the {side} of connection {link.id} is closed")
        try:
            data = link.pcs[side].conn.ping(ttl, context)
        except LocalProtocolError as exc:
            raise ValueError(str(exc)) from None
        self.write(link, side, data)
        self._settle()

    def disconnect(self, client_name: str, server_name: str) -> None:
        """zmq_disconnect: the client stops (re)connecting to the server and closes the connection."""
        self._action("disconnect", client_name=client_name, server_name=server_name)

    def _op_disconnect(self, client_name: str, server_name: str) -> None:
        self.wire.disconnect(client_name, server_name)
        self._settle()

    def inject(self, fault: str, **args: Any) -> Any:
        """Applies a fault from `faults.FAULTS` (see there for each one's arguments)."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {', '.join(sorted(FAULTS))}")
        return self._action("inject", fault=fault, args=args)

    def _op_inject(self, fault: str, args: dict[str, Any]) -> Any:
        result = FAULTS[fault].apply(self, **args)
        self._settle()
        return result

    # ------------------------------------------------------------------ stepping

    def step(self) -> list[dict[str, Any]]:
        """Advances by one scheduled item that reports something; returns its events ([] when idle)."""
        events = self.timeline.events
        start = len(events)
        for _ in range(1000):
            if not self._step_once():
                break
            if len(events) > start:
                break
        return events[start:]

    def run(self, until_t: float | None = None, max_steps: int | None = None) -> list[dict[str, Any]]:
        """Steps until idle, until the next item lies after `until_t`, or `max_steps` steps
        (default 10,000 when no `until_t` is given); returns the events produced."""
        start = len(self.events)
        if max_steps is None and until_t is None:
            max_steps = DEFAULT_MAX_STEPS
        done = 0
        while max_steps is None or done < max_steps:
            if self._replay:
                self._apply_replay()
            item = self._next_item()
            if item is None:
                break
            if until_t is not None and item[0][0] > until_t:
                break
            self._take(item)  # (the item just ranked: `_step_once` would rank every link again for it)
            done += 1
        if until_t is not None and self.t < until_t and (max_steps is None or done < max_steps):
            self.t = until_t
        return self.events[start:]

    def _step_once(self) -> bool:
        if self._replay:
            self._apply_replay()
        item = self._next_item()
        if item is None:
            return False
        self._take(item)
        return True

    def _take(self, item: tuple[tuple, Callable[..., None], tuple]) -> None:
        """One step: the clock moves to the item's time, its action runs, the applications settle."""
        key, action, args = item
        timeline = self.timeline
        if key[0] > timeline.t:
            timeline.t = key[0]
        self.steps += 1
        wire = self.wire
        if wire.dirty is not None:
            if key[1] == 0 or key[1] == 1:  # a delivery or a timer: its link
                wire.dirty.add(args[0])
            else:
                wire.all_dirty = True
        action(*args)
        self._settle()

    def _next_item(self) -> tuple[tuple, Callable[..., None], tuple] | None:
        """The next scheduled item: (key, action, its arguments); None when idle. Keys order the items:
        (time, 0 delivery | 1 timer | 2 reconnection (the wire's), 3 timed action | 4 slow read, tie-breaker)."""
        item = self.wire.next_item()
        if self._timed:
            at, n, _, _ = self._timed[0]
            key = (at, 3, n)
            if item is None or key < item[0]:
                item = key, self._fire_timed, ()
        for i, peer in enumerate(self._slow):
            if peer.next_read is not None:
                key = (peer.next_read, 4, i)
                if item is None or key < item[0]:
                    item = key, self._slow_read, (peer,)
        return item

    # ------------------------------------------------------------------ the applications

    def _settle(self) -> None:
        """After any action: applications read and retry blocked sends, peers write, closed sides close."""
        peers = self._peer_list
        wire = self.wire
        for _ in range(100):
            moved = False  # something happened that the next round may build on
            if wire.dirty is not None and not wire.all_dirty:
                # (A topology: a socket gets something to read only from a delivery, on a link marked dirty.)
                peers = self._settling_peers()
            for peer in peers:
                if peer.blocked and self._retry_blocked(peer):
                    moved = True
                # (An unreadable socket's recv() gives None or refuses: skip it, the common case.)
                if peer.auto_recv and peer.socket.readable:
                    self._read_all(peer)
                elif peer.proxy_to is not None:
                    if self.tracker.pump(peer, peer.proxy_to):
                        moved = True
                elif peer.recv_every and peer.next_read is None and peer.socket.readable:
                    peer.next_read = self.t + peer.recv_every
            wrote, closed = wire.flush()
            if closed:
                moved = True
            # Writing only schedules deliveries: another round finds something new only when writing freed a
            # pipe that a blocked send waits for (this round read every socket and emptied every output).
            if wrote and not moved:
                for peer in peers:
                    if peer.blocked:
                        moved = True
                        break
            if not moved:
                break

    def _retry_blocked(self, peer: SimPeer) -> bool:
        """Sends what waits in `peer.blocked` as far as the socket takes it; True when something went."""
        return self.tracker.retry_blocked(peer) if self.decisions else peer.send_blocked()

    def _read_all(self, peer: SimPeer) -> None:
        """The application of an `auto_recv` peer reads every message its socket has."""
        socket = peer.socket
        while True:
            msg = peer.read()
            if msg is None:
                break
            self._log_recv(peer, msg)
            if not socket.readable:  # recv() would give None now: spare the call (a PULL's usual last one)
                break

    def _settling_peers(self) -> list[SimPeer]:
        """The peers `_settle` looks at in a topology: both ends of the dirty links, peers with sends waiting,
        proxies and slow readers; in the order they were added."""
        dirty = self.wire.dirty
        assert dirty is not None
        blocked = self.tracker.blocked_peers
        if len(dirty) == 1 and not self._always and not blocked:  # (the common case: one delivery, one link)
            for link in dirty:
                a, b = link.peers["client"], link.peers["server"]
                return [a, b] if a.index < b.index else [b, a]
        cand = self._always | blocked
        for link in dirty:
            cand.update(link.peers.values())
        return sorted(cand, key=_peer_index)

    def _log_recv(self, peer: SimPeer, msg: tuple[bytes, ...]) -> None:
        """The application read `msg`: a `recv` entry (with its `msg` id when tracked), then an echo's answer."""
        entry = _recv_entry(peer, msg, self.max_body)
        if self.decisions:
            self.tracker.read(peer, msg, entry)
        else:
            self._log(entry)
        if self.reactions.active:
            for delay, frames in self.reactions.read(peer.name, msg):
                self._op_schedule(self.t + delay, "send", {"peer_name": peer.name, "frames": frames})

    def _slow_read(self, peer: SimPeer) -> None:
        """A slow consumer's application reads one message (its next read comes `recv_every` later)."""
        peer.next_read = None
        msg = peer.read()
        if msg is not None:
            self._log_recv(peer, msg)

    # ------------------------------------------------------------------ lookups, the fault API and state

    def peer(self, name: str) -> SimPeer:
        try:
            return self.peers[name]
        except KeyError:
            raise ValueError(f"no peer named {name!r}") from None

    def link(self, conn: str | None = None) -> Link:
        """The link with that id; without one, the newest open link."""
        return self.wire.link(conn)

    def link_of(self, peer_a: str, peer_b: str) -> Link | None:
        """The newest open link between two peers (either way round)."""
        return self.wire.link_of(peer_a, peer_b)

    def write(self, link: Link, side: str, data: bytes) -> None:
        """That side of `link` writes `data` (a fault's raw bytes, an application's PING)."""
        self.wire.write(link, side, data)

    def close_side(self, link: Link, side: str, reason: str) -> None:
        """That side closes its end of `link`."""
        self.wire.close_side(link, side, reason)

    def reopen(self, link: Link, why: str) -> str | None:
        """The client closes `link` and, unless it was disconnected, connects again at once (with whatever
        its peers now announce); returns the new connection's id."""
        return self.wire.reopen(link, why)

    def fault_event(self, fault: str, **data: Any) -> None:
        """Logs that a fault acted: `{"kind": "link", "what": "fault", "fault", ...}`."""
        self._log({"kind": "link", "what": "fault", "fault": fault, **data})

    def in_flight(self) -> bool:
        """True while bytes or an end of stream are on their way on some link (timers aside)."""
        return self.wire.in_flight()

    def keylog(self) -> str:
        """The CURVE key log of the session's connections so far (engine.curve.keylog_line, one a connection):
        whoever holds it can read their boxes, as TLS's SSLKEYLOGFILE lets one read a TLS capture."""
        from ..engine.curve import keylog_text  # (only CURVE sessions load the cryptography)

        return keylog_text(k for peer in self.peers.values() for k in peer.core.session_keys)

    def idle(self) -> bool:
        """True when nothing is scheduled: no bytes in flight, no timer, no reconnection (cheaper than state()).

        The same answer as `_next_item() is None`, without ranking anything (a live session asks after
        every element)."""
        if not self.wire.idle() or self._timed:
            return False
        for peer in self._slow:  # noqa: SIM110
            if peer.next_read is not None:
                return False
        return True

    def replay_due(self) -> bool:
        """True when an action replayed after a rewind is due now: the next step applies it (even when idle)."""
        replay = self._replay
        return bool(replay) and replay[0].step <= self.steps

    def state(self) -> dict[str, Any]:
        """Where the session stands: virtual time, bytes in flight per link direction, peers and connections."""
        return {
            "t": round(self.t, 9), "steps": self.steps, "seq": self.seq, "seed": self.seed,
            "pending": self.wire.pending(),
            "idle": self._next_item() is None,
            "links": self.wire.state(),
            "peers": {name: {**peer.core.describe(), "blocked_sends": len(peer.blocked)}
                      for name, peer in self.peers.items()},
        }


def _recv_entry(peer: SimPeer, msg: tuple[bytes, ...], cap: int | None) -> dict[str, Any]:
    """The `recv` entry of an application's read (its frames cut at `cap` octets, if any)."""
    entry: dict[str, Any] = {"kind": "peer", "peer": peer.name, "what": "recv",
                             "frames": [f.hex() if cap is None else f[:cap].hex() for f in msg]}
    if cap is not None and any(len(f) > cap for f in msg):
        entry["truncated"] = True
    return entry


def _peer_index(peer: SimPeer) -> int:
    return peer.index


def add_topology(sim: Simulation, topology: Any, *, script: bool = True) -> None:
    """`Simulation.add_topology`: the topology's nodes, subscriptions, proxies, links (connects and closes), later
    subscriptions and script (timed sends, and replies as reactions)."""
    for node in topology.nodes:
        if node.external:
            raise ValueError(f"node {node.name!r}: external nodes need a real session (mode 'tcp'): a program "
                             "outside the lab runs in real time, not on the simulation's clock")
    for node in topology.nodes:
        opts = socket_options(node, server=topology.binds(node.name), sndhwm=node.sndhwm, rcvhwm=node.rcvhwm)
        if node.recv_every:
            opts["recv_every"] = node.recv_every
        if node.echo:
            opts["echo"] = True
        sim.add_peer(node.name, node.type, auto_recv=node.recv == "auto", **opts)
    for node in topology.nodes:
        for topic in node.subscribe:
            sim.subscribe(node.name, topic)
    for proxy in topology.proxies:
        sim.proxy(proxy.frontend, proxy.backend)
    for link in topology.links:
        if link.at > 0:
            sim.schedule(link.at, "connect", client_name=link.connect, server_name=link.bind)
        else:
            sim.connect(link.connect, link.bind)
        if link.close_at is not None:
            sim.schedule(link.close_at, "disconnect", client_name=link.connect, server_name=link.bind)
    for sub in topology.subscriptions:
        sim.schedule(sub.at, "subscribe", peer_name=sub.node, topic=sub.topic.encode("utf-8"),
                     subscribe=sub.subscribe)
    if script:
        for send in topology.script:
            if send.after is not None:  # (a reply: when its request is read)
                sim.react(send.after.by, tuple(parse_hex(f) for f in send.after.read), send.after.n,
                          send.after.think, send.frame_bytes())
            else:
                sim.schedule(send.at, "send", peer_name=send.sender, frames=send.frame_bytes())


def _b(value: bytes | str) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


__all__ = ["RECV_DECISIONS", "Chunk", "Direction", "Link", "ScriptEntry", "SimPeer", "Simulation", "socket_options"]
