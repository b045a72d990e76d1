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

The peers are the same `PeerCore`s the TCP runtime drives, with the engine's fast path for the
messages of ready clear-text connections (it hands anything unusual to the strict decoder, so a
peer accepts and refuses exactly the same bytes); the dissector reads every byte either way.
"""

from __future__ import annotations

import functools
import itertools
import marshal
import random
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from ..engine import Connection, ConnectionDissector
from ..engine.errors import LocalProtocolError
from ..engine.events import refieldable
from . import decisions as words
from .node import socket_options
from .options import PeerOptions
from .session import PeerConnection, PeerCore
from .sockets import Again, Pipe, SocketStateError, never_subscribed

C2S, S2C = "c2s", "s2c"
SIDES = ("client", "server")
OUT_DIR = {"client": C2S, "server": S2C}
IN_DIR = {"client": S2C, "server": C2S}
READER = {C2S: "server", S2C: "client"}
ELEMENT_KINDS = frozenset({"greeting", "command", "frame"})
DEFAULT_MAX_STEPS = 10_000
# Decisions about a message the socket received (the others are about one being sent, or about no message).
RECV_DECISIONS = frozenset({("deliver", "fair-queue"), ("envelope", "identity-routing"), ("strip", "envelope"),
                            ("strip", "delimiter"), ("drop", "req-reply-peer"), ("drop", "req-delimiter"),
                            ("drop", "rep-delimiter"), ("filter", "local-prefix-match")})
NO_MESSAGE = frozenset({"subscribe", "unblock"})


# ---------------------------------------------------------------- the pieces


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


class Chunk:
    """One write in flight on a link direction: `data` covers stream offsets `start`.., `pos` is the next
    octet to deliver; `fed` once the dissector has read it."""

    __slots__ = ("arrival", "data", "fed", "pos", "seq", "start")

    def __init__(self, start: int, data: bytes, arrival: float, seq: int) -> None:
        self.start = start
        self.data = data
        self.arrival = arrival
        self.seq = seq
        self.fed = False
        self.pos = start


class Direction:
    """One direction of a link: chunks in flight, faults waiting for their bytes, dissector events pending."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.reader = READER[name]  # the side that reads this direction
        self.chunks: deque[Chunk] = deque()
        self.written = 0
        self.delivered = 0
        self.hold_until = 0.0
        self.split_at: set[int] = set()
        self.corrupt: dict[int, int] = {}  # offset -> xor mask
        self.eof = False
        self.eof_time = 0.0
        self.eof_seq = 0
        self.eof_done = False
        self.dead = False  # the reader closed: nothing more is read
        self.pending: deque = deque()  # dissector events whose bytes are not all delivered yet

    @property
    def in_flight(self) -> int:
        return sum(len(c.data) - (c.pos - c.start) for c in self.chunks)

    # ---- what faults do to a direction (peers.faults)

    def split(self, offsets: list[int]) -> None:
        """Cuts the stream into separate writes at these absolute offsets: the writes in flight now, and the
        ones still to be written when they reach an offset."""
        if any(o <= self.delivered for o in offsets):
            raise ValueError(f"offsets up to {self.delivered} were already delivered in {self.name}")
        rebuilt = []
        for chunk in self.chunks:
            end = chunk.start + len(chunk.data)
            cursor = chunk.pos
            for o in [*(o for o in offsets if chunk.pos < o < end), end]:
                piece = Chunk(cursor, chunk.data[cursor - chunk.start:o - chunk.start], chunk.arrival, chunk.seq)
                piece.fed = chunk.fed
                rebuilt.append(piece)
                cursor = o
        self.chunks.clear()
        self.chunks.extend(rebuilt)
        self.split_at.update(o for o in offsets if o > self.written)

    def hold(self, until: float) -> None:
        """Nothing arrives in this direction before `until` (virtual seconds)."""
        self.hold_until = max(self.hold_until, until)

    def first_corruptible(self) -> int:
        """The first offset whose octet the dissector has not read yet (in flight unread, or not written)."""
        for chunk in self.chunks:
            if not chunk.fed:
                return chunk.start
        return self.written

    def flip(self, offset: int, xor: int) -> bool:
        """XORs the octet at `offset` with `xor`: now when it is in flight (True), else when it is written."""
        first = self.first_corruptible()
        if offset < first:
            raise ValueError(f"byte {offset} of {self.name} is already on its way (the first byte that can be "
                             f"corrupted is {first})")
        for chunk in self.chunks:
            if not chunk.fed and chunk.start <= offset < chunk.start + len(chunk.data):
                buf = bytearray(chunk.data)
                buf[offset - chunk.start] ^= xor
                chunk.data = bytes(buf)
                return True
        self.corrupt[offset] = self.corrupt.get(offset, 0) ^ xor
        return False


class Link:
    """One simulated TCP connection between a client (connecting) peer and a server peer."""

    def __init__(self, conn_id: str, num: int, client: SimPeer, server: SimPeer, connecter: _Connecter) -> None:
        self.id = conn_id
        self.num = num
        self.peers = {"client": client, "server": server}
        self.connecter = connecter
        self.dirs = {C2S: Direction(C2S), S2C: Direction(S2C)}
        self.dir_list = (self.dirs[C2S], self.dirs[S2C])
        self.pcs: dict[str, PeerConnection] = {}
        self.pc_list: tuple[tuple[int, str, PeerConnection], ...] = ()  # (index in SIDES, side, pc), once opened
        self.side_closed = {"client": False, "server": False}
        self.closed = False
        self.dissector = ConnectionDissector()
        self.decryptor: Any = None  # a CURVE link's CurveDecryptor: its boxes opened for the log, from its HELLO on

    def session_key(self, client_short: bytes) -> bytes | None:
        """The link's CURVE session key, once one of its peers has it: the key log of our own peers."""
        for pc in self.pcs.values():
            found = pc.conn.mechanism.session_keys()
            if found is not None and found[0] == client_short:
                return found[1]
        return None

    def side_of(self, peer: SimPeer) -> str:
        """"client" or "server": the side `peer` has on this link."""
        return "client" if self.peers["client"] is peer else "server"

    def partner_of(self, peer: SimPeer) -> SimPeer:
        """The peer at the other end from `peer`."""
        return self.peers["server"] if self.peers["client"] is peer else self.peers["client"]


class _Connecter:
    """A connect(): the client's persistent pipe, and reconnection with libzmq's backoff."""

    def __init__(self, num: int, client: SimPeer, server: SimPeer) -> None:
        self.num = num
        self.client = client
        self.server = server
        self.pipe = client.core.add_connect_pipe(f"connect-{num}")
        self.active = True
        self.next_attempt: float | None = None
        self.ivl = client.options.reconnect_ivl
        self.link: Link | None = None


class SimPeer:
    def __init__(self, sim: Simulation, name: str, options: PeerOptions, auto_recv: bool,
                 auto_serverkey: bool) -> None:
        self.name = name
        self.options = options
        self.auto_recv = auto_recv
        self.auto_serverkey = auto_serverkey
        self.core = PeerCore(options, name=name, rng=sim.rng, emit=sim._log, fast_path=True, log_closures=False)
        self.random = sim.rng.randbytes  # CURVE's keys and nonces: from the seed, so a session replays exactly
        self.socket = self.core.socket
        self.blocked: deque[tuple[bytes, ...]] = deque()  # sends waiting (libzmq would block the caller)
        self.blocked_ids: deque[int | None] = deque()  # their message ids (a simulation with decisions)
        self.overrides: dict[str, Any] = {}  # faults: what the next connections announce instead
        self.recv_every: float | None = None  # a slow consumer: one read every that many seconds
        self.next_read: float | None = None
        self.echo = False  # the application sends back every message it receives
        self.proxy_to: SimPeer | None = None  # a proxy's node: what it receives goes out there
        self.index = 0  # its place among the simulation's peers

    def make_connection(self) -> Connection:
        opts = self.options
        o = self.overrides
        version = o.get("version", opts.version)
        mechanism_name = o.get("mechanism", opts.mechanism)
        if mechanism_name != opts.mechanism or version != opts.version or "password" in o:
            fake = PeerOptions(opts.socket_type, identity=opts.identity, version=version, strategy=opts.strategy,
                               mechanism=mechanism_name,
                               username=o.get("username", opts.username or "user"),
                               password=o.get("password", opts.password or "password"),
                               plain_server=opts.plain_server and mechanism_name == "PLAIN",
                               plain_users=opts.plain_users,
                               curve_server=opts.curve_server and mechanism_name == "CURVE",
                               curve_publickey=opts.curve_publickey, curve_secretkey=opts.curve_secretkey,
                               curve_serverkey=o.get("curve_serverkey", opts.curve_serverkey),
                               max_frame_size=opts.max_frame_size)
            mechanism = fake.make_mechanism(self.random)
        else:
            mechanism = opts.make_mechanism(self.random)
        return Connection(o.get("socket_type", opts.socket_type), mechanism=mechanism, identity=opts.identity,
                          version=version, strategy=opts.strategy, max_frame_size=opts.max_frame_size,
                          properties=opts.properties)


# ---------------------------------------------------------------- the simulation


class Simulation:
    """Peers, links, a virtual clock and the event log (see the module docstring)."""

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
        # Told of every write as its first octets arrive: (conn, dir, offset, length). The log shows deliveries,
        # one element at a time; a lesson also shows the writes themselves.
        self.on_write: Callable[[str, str, int, int], None] | None = None
        self._reset()

    def _reset(self) -> None:
        self.rng = random.Random(self.seed)
        self.t = 0.0
        self._t_last = 0.0
        self._t_round = 0.0
        self.steps = 0
        self.seq = 0
        self.events: list[dict[str, Any]] = []
        self.peers: dict[str, SimPeer] = {}
        self.links: dict[str, Link] = {}
        # The same, as tuples for the loops that run per step (`_settle`, `_next_item`, `idle`): every peer,
        # and the links not closed yet (in opening order). Replaced, never changed in place, so that a loop
        # over the old tuple is not disturbed.
        self._peer_list: tuple[SimPeer, ...] = ()
        self._open_links: tuple[Link, ...] = ()
        self._connecters: list[_Connecter] = []
        self._conn_ids = itertools.count(1)
        self._write_seq = itertools.count(1)
        # Topologies: message ids along each pipe (out: sent, not yet on the wire; in: received, not yet read),
        # the id being sent and the last one read, replies' requests, timed actions, proxies, slow readers.
        self._msg_ids = itertools.count(1)
        self._out_ids: dict[tuple[str, str], deque[int]] = {}
        self._in_ids: dict[tuple[str, str], deque[int]] = {}
        self._sending: int | None = None
        self._retrying = False
        self._received: int | None = None
        self.reply_to: dict[int, int] = {}
        self._timed: list[tuple[float, int, str, dict[str, Any]]] = []
        self._timed_seq = itertools.count(1)
        self._proxies: list[tuple[SimPeer, SimPeer]] = []
        self._slow: tuple[SimPeer, ...] = ()
        # With decisions (a topology), `_settle` writes only for the links where something happened since (the
        # delivery's or timer's link, a pipe that got messages, a new link) or, after any other action, all:
        # many links, one busy at a time. Without, it looks at every link, as before topologies.
        self._dirty: set[Link] | None = set() if self.decisions else None
        self._all_dirty = True
        self._busy: set[Link] = set()  # (a topology: see `_active_links`)
        self._always: set[SimPeer] = set()  # proxies' nodes and slow readers (see `_settling_peers`)
        self._blocked_peers: set[SimPeer] = set()  # peers with sends waiting (a topology: `_send_tracked`)
        self._said: dict[tuple[str, str, str, str | None], tuple[bool, str | None]] = {}  # (`_socket_event`)
        self._timers: set[Link] = set()

    # ------------------------------------------------------------------ the log

    def _log(self, event: dict[str, Any]) -> None:
        t = self.t
        if t != self._t_last:  # (`_t_rounded`, inline: every entry of the log comes here)
            self._t_last = t
            self._t_round = round(t, 9)
        event["t"] = self._t_round
        self.seq += 1
        event["seq"] = self.seq
        self.events.append(event)

    def _t_rounded(self) -> float:
        """`round(self.t, 9)`, remembered for the current time (rounding a float is slow, and every entry
        of a step has the same time)."""
        t = self.t
        if t != self._t_last:
            self._t_last = t
            self._t_round = round(t, 9)
        return self._t_round

    def _link_event(self, link: Link, what: str, **data: Any) -> None:
        self._log({"kind": "link", "what": what, "conn": link.id, **data})

    # ------------------------------------------------------------------ script

    def _action(self, op: str, **args: Any) -> Any:
        if op != "send":
            self._all_dirty = True
        if not self._replaying:
            self._replay.clear()  # a new action after a rewind starts a new branch
        script = self.script
        script.append(_pack(op, self._t_rounded(), self.steps, tuple(args.items())))
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
        peer = self.peers[name] = SimPeer(self, name, peer_options, auto_recv and not recv_every, auto_serverkey)
        peer.recv_every = float(recv_every) if recv_every else None
        peer.echo = echo
        if self.decisions:
            peer.socket.observer = functools.partial(self._decision, peer)
            peer.core.on_output = self._mark
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
        connecter = _Connecter(len(self._connecters) + 1, client, server)
        self._connecters.append(connecter)
        link = self._open_link(connecter)
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
            self._send_tracked(peer, msg, next(self._msg_ids))
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

    def _send_tracked(self, peer: SimPeer, msg: tuple[bytes, ...], msg_id: int | None) -> bool:
        """Sends with decisions on: the message carries `msg_id` through its socket's decisions; one that
        would block waits in `peer.blocked` (True when it went now)."""
        if peer.blocked:
            peer.blocked.append(msg)
            peer.blocked_ids.append(msg_id)
            self._socket_event(peer, "queue", "blocked", None, msg, len(peer.blocked) - 1, msg_id)
            return False
        self._blocked_peers.discard(peer)
        self._sending = msg_id
        try:
            peer.core.send(msg)
        except Again:
            peer.blocked.append(msg)
            peer.blocked_ids.append(msg_id)
            self._blocked_peers.add(peer)
            return False
        except SocketStateError as exc:
            raise ValueError(str(exc)) from None
        finally:
            self._sending = None
        return True

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
        import bisect

        bisect.insort(self._timed, (at, next(self._timed_seq), action, dict(args)))

    def _fire_timed(self) -> None:
        _, _, op, args = self._timed.pop(0)
        try:
            getattr(self, f"_op_{op}")(**args)
        except ValueError as exc:
            self._log({"kind": "peer", "peer": str(args.get("peer_name") or args.get("client_name") or ""),
                       "what": "error", "action": op, "reason": str(exc)})

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
        """Adds a `peers.topology.Topology`: its nodes (subscribed), links (late ones scheduled at their `at`),
        proxies and, with `script`, its scripted sends."""
        for node in topology.nodes:
            opts = socket_options(node, server=topology.binds(node.name), sndhwm=node.sndhwm, rcvhwm=node.rcvhwm)
            if node.recv_every:
                opts["recv_every"] = node.recv_every
            if node.echo:
                opts["echo"] = True
            self.add_peer(node.name, node.type, auto_recv=node.recv == "auto", **opts)
        for node in topology.nodes:
            for topic in node.subscribe:
                self.subscribe(node.name, topic)
        for proxy in topology.proxies:
            self.proxy(proxy.frontend, proxy.backend)
        for link in topology.links:
            if link.at > 0:
                self.schedule(link.at, "connect", client_name=link.connect, server_name=link.bind)
            else:
                self.connect(link.connect, link.bind)
        if script:
            for send in topology.script:
                self.schedule(send.at, "send", peer_name=send.sender, frames=send.frame_bytes())

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
        for c in self._connecters:
            if c.client.name == client_name and c.server.name == server_name and c.active:
                c.active = False
                c.next_attempt = None
                if c.link is not None and not c.link.closed:
                    self.close_side(c.link, "client", "disconnected by the application")
        self._settle()

    def inject(self, fault: str, **args: Any) -> Any:
        """Applies a fault from `faults.FAULTS` (see there for each one's arguments)."""
        from .faults import FAULTS

        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {', '.join(sorted(FAULTS))}")
        return self._action("inject", fault=fault, args=args)

    def _op_inject(self, fault: str, args: dict[str, Any]) -> Any:
        from .faults import FAULTS

        result = FAULTS[fault].apply(self, **args)
        self._settle()
        return result

    # ------------------------------------------------------------------ stepping

    def step(self) -> list[dict[str, Any]]:
        """Advances by one scheduled item that reports something; returns its events ([] when idle)."""
        start = len(self.events)
        for _ in range(1000):
            if not self._step_once():
                break
            if len(self.events) > start:
                break
        return self.events[start:]

    def run(self, until_t: float | None = None, max_steps: int | None = None) -> list[dict[str, Any]]:
        """Steps until idle, until the next item lies after `until_t`, or `max_steps` steps
        (default 10,000 when no `until_t` is given); returns the events produced."""
        start = len(self.events)
        if max_steps is None and until_t is None:
            max_steps = DEFAULT_MAX_STEPS
        done = 0
        while max_steps is None or done < max_steps:
            self._apply_replay()
            item = self._next_item()
            if item is None:
                break
            if until_t is not None and item[0][0] > until_t:
                break
            self._step_once()
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
        key, action, args = item
        if key[0] > self.t:
            self.t = key[0]
        self.steps += 1
        if self._dirty is not None:
            if key[1] == 0 or key[1] == 1:  # a delivery or a timer: its link
                self._dirty.add(args[0])
            else:
                self._all_dirty = True
        action(*args)
        self._settle()
        return True

    def _next_item(self) -> tuple[tuple, Callable[..., None], tuple] | None:
        """The next scheduled item: (key, action, its arguments); None when idle. Keys order the items:
        (time, 0 delivery | 1 timer | 2 reconnection, tie-breaker)."""
        best: tuple | None = None
        best_action: Callable[..., None] | None = None
        best_args: tuple = ()
        # (Only open links: a closed link has nothing in flight, no end of stream to come and no timer.)
        flow = self.window is not None
        for link in self._open_links if self._dirty is None else self._active_links():
            for d in link.dir_list:
                if d.chunks:
                    if flow and link.pcs[d.reader].read_blocked:
                        continue  # the reader is at its RCVHWM: it reads nothing more from the connection
                    head = d.chunks[0]
                    key = (head.arrival if head.arrival >= d.hold_until else d.hold_until, 0, head.seq)
                    if best is None or key < best:
                        best, best_action, best_args = key, self._deliver, (link, d)
                elif d.eof and not d.eof_done:
                    key = (max(d.eof_time, d.hold_until), 0, d.eof_seq)
                    if best is None or key < best:
                        best, best_action, best_args = key, self._deliver_eof, (link, d)
            for i, side, pc in link.pc_list:
                if pc.closed or link.side_closed[side]:
                    continue
                deadline = pc.deadline
                if deadline is not None:
                    key = (deadline, 1, link.num * 2 + i)
                    if best is None or key < best:
                        best, best_action, best_args = key, self._timer, (link, side)
        for c in self._connecters:
            if c.active and c.next_attempt is not None:
                key = (c.next_attempt, 2, c.num)
                if best is None or key < best:
                    best, best_action, best_args = key, self._reconnect, (c,)
        if self._timed:
            at, n, _, _ = self._timed[0]
            key = (at, 3, n)
            if best is None or key < best:
                best, best_action, best_args = key, self._fire_timed, ()
        for i, peer in enumerate(self._slow):
            if peer.next_read is not None:
                key = (peer.next_read, 4, i)
                if best is None or key < best:
                    best, best_action, best_args = key, self._slow_read, (peer,)
        if best is None or best_action is None:
            return None
        return best, best_action, best_args

    # ------------------------------------------------------------------ items

    def _deliver(self, link: Link, d: Direction) -> None:
        dname = d.name
        chunk = d.chunks[0]
        pending = d.pending
        if not chunk.fed:
            chunk.fed = True
            for _, event in link.dissector.receive_data(dname, chunk.data):
                pending.append(event)
            if self.on_write is not None:
                self.on_write(link.id, dname, chunk.start, len(chunk.data))
        start = chunk.start
        pos = chunk.pos
        end = start + len(chunk.data)
        unit_end = end
        for event in pending:
            if event.kind in ELEMENT_KINDS:
                event_end = event.offset + event.length
                if event_end > pos:
                    unit_end = event_end if event_end < end else end
                    break
        data = chunk.data if pos == start and unit_end == end else chunk.data[pos - start:unit_end - start]
        entry = {"kind": "link", "what": "bytes", "conn": link.id, "dir": dname, "offset": pos, "length": len(data)}
        if self.wire_data:
            entry["data"] = data
        else:
            entry["hex"] = data.hex()
        self._log(entry)
        chunk.pos = unit_end
        d.delivered = unit_end
        if unit_end >= end:
            d.chunks.popleft()
        while pending:
            event = pending[0]
            if d.chunks and event.offset + event.length > unit_end:
                break
            pending.popleft()
            self._wire_event(link, dname, event)
        reader = d.reader
        if not link.side_closed[reader]:
            link.pcs[reader].receive(data, self.t)

    def _wire_event(self, link: Link, dname: str, event) -> None:
        framing = None if self.fields else refieldable(event)
        cap = self.max_body
        if cap is not None and event.length > cap and event.kind in ("frame", "message"):
            entry = {"conn": link.id, "dir": dname, **event.to_dict(max_body=cap)}  # (fields, octets cut)
        elif framing is None:
            entry = {"conn": link.id, "dir": dname, **event.to_dict()}
        else:
            entry = {"conn": link.id, "dir": dname, **event.to_dict(with_fields=False), "framing": framing}
        if self.decisions and event.kind == "message":
            self._tag_message(link, dname, entry)
        self._log(entry)
        if event.kind == "command":
            # Our peers know their CURVE session keys: show what each box holds, right after the box.
            if link.decryptor is None and event.name == "HELLO":
                from ..engine.curve import CurveDecryptor  # (only CURVE sessions load the cryptography)

                link.decryptor = CurveDecryptor(link.session_key)
            if link.decryptor is not None:
                for d, view in link.decryptor.feed(dname, event):
                    entry = {"conn": link.id, "dir": d, **view.to_dict()}
                    if self.decisions and view.kind == "message":
                        self._tag_message(link, d, entry)
                    self._log(entry)

    def _tag_message(self, link: Link, dname: str, entry: dict[str, Any]) -> None:
        """A message crossed the wire: it is the next one its writer's pipe sent; it joins the reader's pipe."""
        writer = "client" if dname == C2S else "server"
        wpc = link.pcs[writer]
        if wpc.pipe is None:
            return
        ids = self._out_ids.get((link.peers[writer].name, wpc.pipe.id))
        if not ids:
            return
        msg = ids.popleft()
        entry["msg"] = msg
        reply_to = self.reply_to.get(msg)
        if reply_to is not None:
            entry["reply_to"] = reply_to
        reader = READER[dname]
        rpc = link.pcs[reader]
        if rpc.pipe is not None and not rpc.ignored:
            self._in_ids.setdefault((link.peers[reader].name, rpc.pipe.id), deque()).append(msg)

    def _deliver_eof(self, link: Link, d: Direction) -> None:
        dname = d.name
        d.eof_done = True
        while d.pending:
            self._wire_event(link, dname, d.pending.popleft())
        self._link_event(link, "eof", dir=dname)
        reader = d.reader
        if not link.side_closed[reader]:
            link.pcs[reader].receive(b"", self.t)
        self._maybe_closed(link)

    def _timer(self, link: Link, side: str) -> None:
        link.pcs[side].on_timer(self.t)

    def _reconnect(self, connecter: _Connecter) -> None:
        connecter.next_attempt = None
        self._open_link(connecter)

    # ------------------------------------------------------------------ links

    def _open_link(self, connecter: _Connecter) -> Link:
        conn_id = str(next(self._conn_ids))
        link = Link(conn_id, int(conn_id), connecter.client, connecter.server, connecter)
        connecter.link = link
        self.links[conn_id] = link
        self._open_links = (*self._open_links, link)
        self._link_event(link, "open", client=connecter.client.name, server=connecter.server.name)
        try:
            client_conn = connecter.client.make_connection()
            server_conn = connecter.server.make_connection()
        except (LocalProtocolError, ValueError) as exc:
            raise ValueError(f"cannot make the connection: {exc}") from None
        link.pcs["client"] = connecter.client.core.open_connection(conn_id, is_client=True, pipe=connecter.pipe,
                                                                    connection=client_conn)
        link.pcs["server"] = connecter.server.core.open_connection(conn_id, is_client=False,
                                                                    connection=server_conn)
        link.pc_list = tuple((i, side, link.pcs[side]) for i, side in enumerate(SIDES))
        for side in SIDES:
            link.pcs[side].start(self.t)
        return link

    def write(self, link: Link, side: str, data: bytes) -> None:
        d = link.dirs[OUT_DIR[side]]
        if d.eof:
            return
        start = d.written
        end = start + len(data)
        if d.corrupt:
            hits = [o for o in d.corrupt if start <= o < end]
            if hits:
                buf = bytearray(data)
                for o in hits:
                    buf[o - start] ^= d.corrupt.pop(o)
                    self._link_event(link, "fault", fault="corrupt", dir=d.name, offset=o)
                data = bytes(buf)
        cuts = sorted(o for o in d.split_at if start < o < end) if d.split_at else None
        if cuts:
            d.split_at -= set(cuts)
        d.written = end
        if d.dead and not self.unread_on_wire:
            return
        arrival = self.t + self.latency
        if self._dirty is not None:
            self._busy.add(link)
        if not cuts:  # the common case: one write, one chunk
            d.chunks.append(Chunk(start, data, arrival, next(self._write_seq)))
            return
        bounds = [start, *cuts, end]
        for a, b in itertools.pairwise(bounds):
            d.chunks.append(Chunk(a, data[a - start:b - start], arrival, next(self._write_seq)))

    def close_side(self, link: Link, side: str, reason: str) -> None:
        if link.side_closed[side]:
            return
        pc = link.pcs[side]
        if not pc.closed:
            pc.close(reason)
        data = pc.take_output()
        if data:
            self.write(link, side, data)
        link.side_closed[side] = True
        out_d, in_d = link.dirs[OUT_DIR[side]], link.dirs[IN_DIR[side]]
        out_d.eof = True
        out_d.eof_time = self.t + self.latency
        out_d.eof_seq = next(self._write_seq)
        if self._dirty is not None:
            self._busy.add(link)
        if out_d.dead and not self.unread_on_wire:  # the other side already closed: nobody reads this end
            out_d.eof_done = True
            out_d.chunks.clear()
        in_d.dead = True
        dropped = in_d.in_flight
        if not self.unread_on_wire:
            in_d.chunks.clear()
            in_d.pending.clear()
        self._link_event(link, "half-closed", side=side, reason=pc.close_reason or reason,
                         **({"unread": dropped} if dropped else {}))
        self._maybe_closed(link)

    def _maybe_closed(self, link: Link) -> None:
        if link.closed or not all(link.side_closed.values()):
            return
        for dname in (C2S, S2C):
            d = link.dirs[dname]
            if d.chunks or (d.eof and not d.eof_done):
                return
        link.closed = True
        self._open_links = tuple(lk for lk in self._open_links if lk is not link)
        for dname, event in link.dissector.close():
            self._wire_event(link, dname, event)
        self._link_event(link, "closed")
        for side in SIDES:
            link.peers[side].core.forget(link.pcs[side])
        if self.decisions:
            self._trim_ids(link)
        connecter = link.connecter
        client_opts = connecter.client.options
        if connecter.active and connecter.link is link and client_opts.reconnect_ivl > 0:
            base = client_opts.reconnect_ivl
            delay = connecter.ivl + self.rng.random() * base
            if client_opts.reconnect_ivl_max > base:
                connecter.ivl = min(connecter.ivl * 2, client_opts.reconnect_ivl_max)
            connecter.next_attempt = self.t + delay
            self._log({"kind": "peer", "peer": connecter.client.name, "what": "reconnect",
                       "server": connecter.server.name, "delay": round(delay, 9)})

    def _settle(self) -> None:
        """After any action: applications read and retry blocked sends, peers write, closed sides close."""
        peers = self._peer_list
        window = self.window
        for _ in range(100):
            moved = False  # something happened that the next round may build on
            wrote = False
            if self._dirty is not None and not self._all_dirty:
                # (A topology: a socket gets something to read only from a delivery, on a link marked dirty.)
                peers = self._settling_peers()
            for peer in peers:
                if peer.blocked and self._retry_blocked(peer):
                    moved = True
                # (An unreadable socket's recv() gives None or refuses: skip it, the common case.)
                if peer.auto_recv and peer.socket.readable:
                    self._read_all(peer)
                elif peer.proxy_to is not None:
                    if self._pump(peer, peer.proxy_to):
                        moved = True
                elif peer.recv_every and peer.next_read is None and peer.socket.readable:
                    peer.next_read = self.t + peer.recv_every
            links = self._open_links
            dirty = self._dirty
            if dirty is not None:  # (a topology: only the links something happened to; see `_mark`)
                if self._all_dirty:
                    self._all_dirty = False
                else:
                    links = sorted(dirty, key=_link_num) if len(dirty) > 1 else tuple(dirty)
                dirty.clear()
            for link in links:
                if link.closed:  # (closed earlier in this round)
                    continue
                side_closed = link.side_closed
                for _, side, pc in link.pc_list:
                    if side_closed[side]:
                        continue
                    if window is None:
                        data = pc.take_output(1 << 40)  # (b"" when it has nothing: cheaper than asking has_output)
                    else:
                        d = link.dirs[OUT_DIR[side]]
                        data = pc.take_output(max(0, window - (d.written - d.delivered)))
                    if data:
                        self.write(link, side, data)
                        wrote = True
                    if pc.closed:
                        self.close_side(link, side, pc.close_reason or "closed")
                        moved = True
                if not link.closed and link.pcs["client"].ready:
                    link.connecter.ivl = link.connecter.client.options.reconnect_ivl
                if dirty is not None:  # (timers change only where something happened: this link)
                    timed = False
                    if not link.closed:
                        for _, side, pc in link.pc_list:
                            if not pc.closed and not side_closed[side] and pc.deadline is not None:
                                timed = True
                                break
                    if timed:
                        self._timers.add(link)
                    elif self._timers:
                        self._timers.discard(link)
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
        core = peer.core
        blocked = peer.blocked
        sent = False
        tracked = self.decisions
        while blocked:
            if tracked:
                self._sending = peer.blocked_ids[0] if peer.blocked_ids else None
                self._retrying = True  # (a send that still blocks was reported when it first did)
            try:
                core.send(blocked[0])
            except (Again, SocketStateError):
                break
            finally:
                self._sending = None
                self._retrying = False
            msg = blocked.popleft()
            if tracked:
                msg_id = peer.blocked_ids.popleft() if peer.blocked_ids else None
                self._socket_event(peer, "unblock", "send", None, msg, None, msg_id)
            sent = True
        if not blocked:
            self._blocked_peers.discard(peer)
        return sent

    def _read_all(self, peer: SimPeer) -> None:
        """The application of an `auto_recv` peer reads every message its socket has."""
        socket = peer.socket
        while True:
            try:
                msg = socket.recv()
            except SocketStateError:
                break
            if msg is None:
                break
            self._log_recv(peer, msg)
            if not socket.readable:  # recv() would give None now: spare the call (a PULL's usual last one)
                break

    def _active_links(self) -> tuple[Link, ...]:
        """A topology's open links that may have an item: bytes or an end of stream in flight (`_busy`, kept by
        `write` and `close_side`) or a timer (`_timers`, kept by `_settle`); the others are dropped from `_busy`."""
        busy = self._busy
        for link in tuple(busy):
            c2s, s2c = link.dir_list
            if link.closed or not (c2s.chunks or s2c.chunks or (c2s.eof and not c2s.eof_done)
                                   or (s2c.eof and not s2c.eof_done)):
                busy.discard(link)
        timers = self._timers
        if not timers:
            return tuple(busy)
        return tuple(busy | {lk for lk in timers if not lk.closed})

    def _settling_peers(self) -> list[SimPeer]:
        """The peers `_settle` looks at in a topology: both ends of the dirty links, peers with sends waiting,
        proxies and slow readers; in the order they were added."""
        dirty = self._dirty
        assert dirty is not None
        blocked = self._blocked_peers
        if len(dirty) == 1 and not self._always and not blocked:  # (the common case: one delivery, one link)
            for link in dirty:
                a, b = link.peers["client"], link.peers["server"]
                return [a, b] if a.index < b.index else [b, a]
        cand = self._always | blocked
        for link in dirty:
            cand.update(link.peers.values())
        return sorted(cand, key=_peer_index)

    def _mark(self, pc: PeerConnection) -> None:
        """A connection has messages to write (PeerCore's `on_output`): `_settle` visits its link."""
        link = self.links.get(pc.id)
        if link is not None and self._dirty is not None:
            self._dirty.add(link)

    def _log_recv(self, peer: SimPeer, msg: tuple[bytes, ...]) -> None:
        """The application read `msg`: a `recv` entry (with its `msg` id when tracked), then an echo's answer."""
        cap = self.max_body
        entry: dict[str, Any] = {"kind": "peer", "peer": peer.name, "what": "recv",
                                 "frames": [f.hex() if cap is None else f[:cap].hex() for f in msg]}
        if cap is not None and any(len(f) > cap for f in msg):
            entry["truncated"] = True
        if not self.decisions:
            self._log(entry)
            return
        received, self._received = self._received, None
        if received is not None:
            entry["msg"] = received
            reply_to = self.reply_to.get(received)
            if reply_to is not None:
                entry["reply_to"] = reply_to
        self._log(entry)
        if peer.echo:
            reply = next(self._msg_ids)
            if received is not None:
                self.reply_to[reply] = received
            try:
                self._send_tracked(peer, msg, reply)
            except ValueError as exc:
                self._log({"kind": "peer", "peer": peer.name, "what": "error", "action": "echo", "reason": str(exc)})

    def _slow_read(self, peer: SimPeer) -> None:
        """A slow consumer's application reads one message (its next read comes `recv_every` later)."""
        peer.next_read = None
        try:
            msg = peer.socket.recv()
        except SocketStateError:
            return
        if msg is not None:
            self._log_recv(peer, msg)

    def _pump(self, src: SimPeer, dst: SimPeer) -> bool:
        """One proxy direction: what `src` has goes out of `dst` (zmq_proxy stalls while `dst` cannot send)."""
        moved = False
        socket = src.socket
        while not dst.blocked and socket.readable:
            try:
                msg = socket.recv()
            except SocketStateError:
                break
            if msg is None:
                break
            msg_id, self._received = self._received, None
            self._send_tracked(dst, msg, msg_id)
            moved = True
        return moved

    def _decision(self, peer: SimPeer, what: str, rule: str, pipe: Pipe | None, frames: tuple[bytes, ...] | None,
                  detail: bytes | int | None) -> None:
        """A socket's decision (peers.sockets' observer) becomes a `socket` event, with the message's id."""
        msg: int | None = None
        if what == "route" or what == "queue":  # (a message sent: the common case first)
            msg = self._sending
            if msg is not None and pipe is not None:
                key = (peer.name, pipe.id)
                ids = self._out_ids.get(key)
                if ids is None:
                    ids = self._out_ids[key] = deque()
                ids.append(msg)
        elif what == "block" and self._retrying:
            return
        elif (what, rule) in RECV_DECISIONS:
            ids = self._in_ids.get((peer.name, pipe.id)) if pipe is not None else None
            msg = ids.popleft() if ids else None
            if what != "drop" and what != "filter":
                self._received = msg
        elif what not in NO_MESSAGE and not (what == "block" and rule == "rcvhwm"):
            msg = self._sending
            if rule == "slow-joiner" and what == "filter":
                far = self.peers.get(self._pipe_end(peer, pipe)[0] or "")
                if far is not None and never_subscribed(far.socket):
                    rule = "no-subscription"
        self._socket_event(peer, what, rule, pipe, frames, detail, msg)

    def _socket_event(self, peer: SimPeer, what: str, rule: str, pipe: Pipe | None,
                      frames: tuple[bytes, ...] | None, detail: bytes | int | None, msg: int | None) -> None:
        """Logs a `socket` event; its `args` are the sentence's values that the event does not already carry
        (`peer`, `depth` and `hwm` are keys of their own)."""
        socket = peer.socket
        opts = peer.options
        if detail is None and pipe is not None and frames and (rule == "round-robin" or rule == "fair-queue"):
            # (The common case, a message routed or read, without the general case's questions.)
            far, conn = self._pipe_end(peer, pipe)
            if rule == "fair-queue":
                depth, hwm = len(pipe.inq), opts.rcvhwm
            else:
                depth, hwm = len(pipe.out), opts.sndhwm
            said = self._said.get((what, rule, peer.name, far))
            if said is None:  # (the sentence and whether it quotes the message, once per pipe and decision)
                quotes = "msg" in words.FIELDS.get(what + "/" + rule, ("msg",))
                said = self._said[(what, rule, peer.name, far)] = (
                    quotes, None if quotes else words.text(what, rule, {"type": socket.type, "peer": far}))
            if said[0]:
                args = {"type": socket.type, "msg": words.shown(_body(frames))}
                text = words.text(what, rule, {**args, "peer": far})
            else:
                args = {"type": socket.type}
                text = said[1]
            event = self._event_head(peer, what, text, rule, far, conn, msg)
            event["depth"] = depth
            event["hwm"] = hwm
            event["args"] = args
            self._log(event)
            return
        inbound = rule in ("rcvhwm", "fair-queue", "delimiter", "local-prefix-match") or (what, rule) in RECV_DECISIONS
        args: dict[str, Any] = {"type": socket.type}
        far, conn = self._pipe_end(peer, pipe)
        if far is not None:
            args["peer"] = far
        if frames:
            args["msg"] = words.shown(_body(frames[1:] if socket.type == "ROUTER" and what in ("route", "drop")
                                            and len(frames) > 1 else frames))
        if isinstance(detail, bytes):
            args["identity" if rule in ("identity-routing", "router-mandatory-off", "sndhwm") else "topic"] = (
                words.shown(detail))
        elif isinstance(detail, int):
            args["frames" if what in ("strip", "route", "drop") else "depth"] = detail
        if what == "queue" and rule == "blocked":
            args["depth"] = detail
        hwm = opts.rcvhwm if inbound else opts.sndhwm
        args["hwm"] = hwm
        if pipe is not None:
            args.setdefault("depth", len(pipe.inq) if inbound else len(pipe.out))
            if rule in ("prefix-match",) or rule == "subscribe":
                args["subs"] = words.subs(pipe.topics)
        if rule == "local-prefix-match":
            args["subs"] = words.subs(socket.subscriptions)
        event = self._event_head(peer, what, words.text(what, rule, args), rule, far, conn, msg)
        if pipe is not None:
            event["depth"] = args["depth"]
            event["hwm"] = hwm
        elif what == "block":
            event["hwm"] = hwm
        for key in ("peer", "depth", "hwm"):
            if key in event:
                args.pop(key, None)
        event["args"] = args
        self._log(event)

    def _event_head(self, peer: SimPeer, what: str, text: str, rule: str, far: str | None, conn: str | None,
                    msg: int | None) -> dict[str, Any]:
        """A socket event's common keys, in the contract's order: the node, the decision, the pipe's far end and
        connection, the message and what it answers."""
        event: dict[str, Any] = {"kind": "socket", "node": peer.name, "what": what, "text": text, "rule": rule}
        if far is not None:
            event["peer"] = far
        if conn is not None:
            event["conn"] = conn
        if msg is not None:
            event["msg"] = msg
            reply_to = self.reply_to.get(msg)
            if reply_to is not None:
                event["reply_to"] = reply_to
        return event

    def _pipe_end(self, peer: SimPeer, pipe: Pipe | None) -> tuple[str | None, str | None]:
        """The node at the far end of `peer`'s pipe, and the connection it runs on now (if any)."""
        if pipe is None:
            return None, None
        pid = pipe.id
        if pid.startswith("connect-"):
            connecter = self._connecters[int(pid[8:]) - 1]
            link = connecter.link
            return connecter.server.name, (link.id if link is not None and not link.closed else None)
        link = self.links.get(pid)
        if link is None:
            return None, None
        return link.partner_of(peer).name, link.id

    def _trim_ids(self, link: Link) -> None:
        """A closed link lost the messages it carried unread: their ids leave the writers' pipes."""
        for side in SIDES:
            pipe = link.pcs[side].pipe
            if pipe is None:
                continue
            key = (link.peers[side].name, pipe.id)
            ids = self._out_ids.get(key)
            if not ids:
                continue
            if not pipe.connect_side:
                del self._out_ids[key]
                continue
            queued = sum(1 for item in pipe.out if type(item) is tuple)
            while len(ids) > queued:
                ids.popleft()

    # ------------------------------------------------------------------ lookups and state

    def peer(self, name: str) -> SimPeer:
        try:
            return self.peers[name]
        except KeyError:
            raise ValueError(f"no peer named {name!r}") from None

    def link(self, conn: str | None = None) -> Link:
        """The link with that id; without one, the newest open link."""
        if conn is None:
            for link in reversed(self.links.values()):
                if not link.closed:
                    return link
            raise ValueError("no open connection")
        try:
            return self.links[str(conn)]
        except KeyError:
            raise ValueError(f"no connection {conn!r}") from None

    def reopen(self, link: Link, why: str) -> str | None:
        """The client closes `link` and, unless it was disconnected, connects again at once (with whatever
        its peers now announce); returns the new connection's id."""
        connecter = link.connecter
        self.close_side(link, "client", f"reconnecting: {why}")
        if not connecter.active:
            return None
        connecter.next_attempt = None
        return self._open_link(connecter).id

    def fault_event(self, fault: str, **data: Any) -> None:
        """Logs that a fault acted: `{"kind": "link", "what": "fault", "fault", ...}`."""
        self._log({"kind": "link", "what": "fault", "fault": fault, **data})

    def link_of(self, peer_a: str, peer_b: str) -> Link | None:
        """The newest open link between two peers (either way round)."""
        for link in reversed(list(self.links.values())):
            names = {link.peers["client"].name, link.peers["server"].name}
            if names == {peer_a, peer_b} and not link.closed:
                return link
        return None

    def in_flight(self) -> bool:
        """True while bytes or an end of stream are on their way on some link (timers aside)."""
        for link in self._open_links:
            for d in link.dir_list:
                if d.chunks or (d.eof and not d.eof_done):
                    return True
        return False

    def keylog(self) -> str:
        """The CURVE key log of the session's connections so far (engine.curve.keylog_line, one a connection):
        whoever holds it can read their boxes, as TLS's SSLKEYLOGFILE lets one read a TLS capture."""
        from ..engine.curve import keylog_text  # (only CURVE sessions load the cryptography)

        return keylog_text(k for peer in self.peers.values() for k in peer.core.session_keys)

    def idle(self) -> bool:
        """True when nothing is scheduled: no bytes in flight, no timer, no reconnection (cheaper than state()).

        The same answer as `_next_item() is None`, without ranking anything (a live session asks after
        every element)."""
        flow = self.window is not None
        for link in self._open_links if self._dirty is None else self._active_links():
            for d in link.dir_list:
                if d.chunks:
                    if flow and link.pcs[d.reader].read_blocked:
                        continue  # (stalled until its reader reads: `_next_item` skips it too)
                    return False
                if d.eof and not d.eof_done:
                    return False
            side_closed = link.side_closed
            for _, side, pc in link.pc_list:
                if not pc.closed and not side_closed[side] and pc.deadline is not None:
                    return False
        # (Loops rather than all() over generators: a live session asks this after every element.)
        for c in self._connecters:
            if c.active and c.next_attempt is not None:
                return False
        if self._timed:
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
        links = {}
        for link in self.links.values():
            links[link.id] = {
                "client": link.peers["client"].name, "server": link.peers["server"].name, "closed": link.closed,
                "pending": {dname: link.dirs[dname].in_flight for dname in (C2S, S2C)},
                "delivered": {dname: link.dirs[dname].delivered for dname in (C2S, S2C)},
                "sides": {side: {"closed": link.side_closed[side], **link.pcs[side].describe()} for side in SIDES},
            }
        return {
            "t": round(self.t, 9), "steps": self.steps, "seq": self.seq, "seed": self.seed,
            "pending": sum(link.dirs[d].in_flight for link in self.links.values() for d in (C2S, S2C)),
            "idle": self._next_item() is None,
            "links": links,
            "peers": {name: {**peer.core.describe(), "blocked_sends": len(peer.blocked)}
                      for name, peer in self.peers.items()},
        }


def _link_num(link: Link) -> int:
    return link.num


def _peer_index(peer: SimPeer) -> int:
    return peer.index


def _body(frames: tuple[bytes, ...]) -> bytes:
    """The frame a decision's text quotes: the first after an envelope's empty delimiter, else the first."""
    if b"" in frames:
        i = frames.index(b"")
        if i + 1 < len(frames):
            return frames[i + 1]
    return frames[0]


def _b(value: bytes | str) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


__all__ = ["Chunk", "Direction", "Link", "ScriptEntry", "SimPeer", "Simulation"]
