"""Following one application message across connections: the hops through a broker, proxy or forwarder.

A hop is a message that came in to a socket of one node (a host: the loopback's IPv4 and IPv6 addresses are
one) and left a socket of the same node on another connection, as a relay forwards it. What makes a hop
certain is ZeroMQ's own rules, not payload text:

* Only sockets a relay can use take part (`RELAY_IN` receive, `RELAY_OUT` send), each with sockets of its own
  pattern on the other side (a ROUTER/DEALER queue, a PULL/PUSH streamer, an XSUB/XPUB forwarder, PAIRs). A
  REQ or REP is an endpoint: its strict send/receive turns make it no relay.
* A socket never forwards what it sent itself (copies from one PUB are fan-out, not forwards), and a relay
  never sends a message back into the socket it came in on: a message in to a ROUTER is never the origin of a
  message another client sends in to that same ROUTER. Such chains are impossible, not ambiguous.
* A ROUTER prepends the routing id of the connection a message came in on, and strips it to choose the
  connection a reply goes out on (`peers.sockets.Socket`, the simulator's own ROUTER, checks every hop that
  goes through one). So a request in on connection A leaves the relay with A's routing id in front of it, and
  a reply goes out on A only when it came back with that id. The id of A is its peer's Identity when READY
  announced one; a routing id the ROUTER generated is learned from the hops themselves: an id fits a
  connection when every request that left with it pairs, in order, with a request that came in on that
  connection, and every reply that came back with it with a reply that left on it. Ids are given to
  connections one to one; where more than one assignment fits, the hops of those ids are `ambiguous`, and
  `why` says which ids and connections the capture cannot tell apart.
* Without an envelope (streamers, forwarders, DEALER-to-DEALER queues, PAIRs) a hop is the same frames, in
  and out within `window` seconds; where several messages that came in could be the one that left, the
  earliest not yet forwarded is taken and the hop is ambiguous, with why.

`RelayLog` keeps, as the capture streams by, only the messages that can be part of a hop: those in to a relay
socket of a node that also has a relay socket of the same pattern sending, and those out of such a socket.
A capture without relays (a PUSH fanning out to PULLs, a ROUTER answering its DEALERs) costs nothing here.
`flows()` links the hops into paths at the end. Memory is bounded by `max_kept` messages.
"""

from __future__ import annotations

import contextlib
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..engine.fields import text_or_hex
from ..engine.notation import format_address
from ..peers.sockets import Socket
from .facts import ConnFacts

Address = tuple[str, int]

MAX_FLOWS = 10_000
MAX_KEPT = 500_000  # messages kept for matching: memory stays bounded
MAX_CANDIDATES = 256  # messages in a message out may forward: the latest within the window
MAX_ROUTER_IDS = 400  # routing ids of one ROUTER whose assignment is worked out exactly (beyond: greedily)
LARGE = 256  # frames longer than this are kept as (length, hash) only

PATTERN = {"ROUTER": "reqrep", "DEALER": "reqrep", "PUSH": "pipeline", "PULL": "pipeline", "PUB": "pubsub",
           "XPUB": "pubsub", "SUB": "pubsub", "XSUB": "pubsub", "PAIR": "pair"}
RELAY_IN = frozenset({"ROUTER", "DEALER", "PULL", "SUB", "XSUB", "PAIR"})
RELAY_OUT = frozenset({"ROUTER", "DEALER", "PUSH", "PUB", "XPUB", "PAIR"})
FAN_OUT = frozenset({"pubsub"})  # one message in may leave on many connections


def host(ip: str) -> str:
    """The node an address belongs to, as far as a capture can tell: the loopback's IPv4 and IPv6 are one."""
    if ip.startswith("127.") or ip == "::1":
        return "loopback"
    if ip.startswith("::ffff:") and "." in ip:
        return ip[7:]
    return ip


Frames = tuple[Any, ...]  # frame bodies, a long one as (length, hash)


def compact(frames: list[bytes]) -> Frames:
    return tuple(f if len(f) <= LARGE else (len(f), hash(f)) for f in frames)


@dataclass(slots=True)
class Msg:
    """One message of one direction: the k-th (`seq`) of connection `conn`'s direction `dir`."""

    conn: str
    dir: str
    seq: int
    ts: float
    frames: Frames
    packets: list[int]
    preview: str  # its last frame, shown
    sender: Address
    receiver: Address
    sender_type: str
    receiver_type: str

    @property
    def key(self) -> tuple[str, str, int]:
        return self.conn, self.dir, self.seq


@dataclass(slots=True)
class Hop:
    """`came` in to a relay and left it as `went`."""

    came: Msg
    went: Msg
    basis: str  # routing-id | identity | same
    routing_id: bytes | None = None
    ambiguous: str | None = None  # why, when the capture cannot tell


@dataclass
class _Node:
    # The relay sockets of the node, by pattern: each receiving one with the peers that feed it, each sending one
    # with the peers it sends to (a socket is its endpoint).
    feeds: dict[str, dict[Address, set[Address]]] = field(default_factory=dict)
    sends: dict[str, dict[Address, set[Address]]] = field(default_factory=dict)
    ins: list[Msg] = field(default_factory=list)
    outs: list[Msg] = field(default_factory=list)

    def relays_in(self, pattern: str, sender: Address, receiver: Address) -> bool:
        """Whether a message `sender` sends to `receiver` (a socket here) may be forwarded: another socket here of
        the pattern sends to someone else than these two."""
        return any(socket != sender and peers - {sender, receiver}
                   for socket, peers in self.sends.get(pattern, {}).items())

    def relays_out(self, pattern: str, sender: Address, receiver: Address) -> bool:
        """Whether a message `sender` (a socket here) sends to `receiver` may forward one: a socket here of the
        pattern is fed by someone else than these two."""
        return any(socket != receiver and peers - {sender, receiver}
                   for socket, peers in self.feeds.get(pattern, {}).items())


class RelayLog:
    """Keeps the messages that can be part of a hop (a `facts.MessageHandler`) and links them (`flows()`)."""

    def __init__(self, *, window: float = 1.0, max_kept: int = MAX_KEPT) -> None:
        self.window = window
        self.max_kept = max_kept
        self.kept = 0
        self.partial = False  # more messages could be hops than were kept
        self.nodes: dict[str, _Node] = {}
        self.conns: dict[str, ConnFacts] = {}
        self._roles_of: dict[tuple[str, str], tuple[bool, bool]] = {}  # what `wants` found, for the calls after it

    # ------------------------------------------------------------------ streaming

    def sockets_seen(self, facts: ConnFacts) -> None:
        """Notes the relay sockets of a connection whose socket types are known (a `facts.ReadyHandler`)."""
        for d in ("c2s", "s2c"):
            ends, kind = facts.ends(d), facts.sender(d)  # (the sender's socket type is that end's socket)
            if ends is None or kind is None or kind not in PATTERN:
                continue
            mine, peer = ends
            node = self._node(mine)
            if kind in RELAY_OUT:
                node.sends.setdefault(PATTERN[kind], {}).setdefault(mine, set()).add(peer)
            if kind in RELAY_IN:
                node.feeds.setdefault(PATTERN[kind], {}).setdefault(mine, set()).add(peer)

    def _node(self, addr: Address) -> _Node:
        key = host(addr[0])
        found = self.nodes.get(key)
        if found is None:
            found = self.nodes[key] = _Node()
        return found

    def _roles(self, facts: ConnFacts, d: str) -> tuple[bool, bool]:
        """(kept as a message in to a relay, kept as one out of a relay)."""
        ends = facts.ends(d)
        sender_type, receiver_type = facts.sender(d), facts.sender("s2c" if d == "c2s" else "c2s")
        if ends is None or sender_type is None or receiver_type is None:
            return False, False
        self.sockets_seen(facts)
        sender, receiver = ends
        into = receiver_type in RELAY_IN and self._node(receiver).relays_in(PATTERN[receiver_type], sender, receiver)
        out = sender_type in RELAY_OUT and self._node(sender).relays_out(PATTERN[sender_type], sender, receiver)
        return into, out

    def wants(self, facts: ConnFacts, d: str) -> bool:
        roles = self._roles_of[(facts.conn, d)] = self._roles(facts, d)
        return roles[0] or roles[1]

    def __call__(self, facts: ConnFacts, d: str, messages: list[tuple[int, list[bytes]]], ts: Sequence[float],
                 packets: Sequence[list[int]]) -> None:
        into, out = self._roles_of.get((facts.conn, d)) or self._roles(facts, d)
        if not (into or out):
            return
        if self.kept >= self.max_kept:
            self.partial = True
            return
        self.conns[facts.conn] = facts
        ends = facts.ends(d)
        assert ends is not None
        sender, receiver = ends
        sender_type = facts.sender(d) or ""
        receiver_type = facts.sender("s2c" if d == "c2s" else "c2s") or ""
        seq = facts.messages[d]
        ins, outs = self._node(receiver).ins, self._node(sender).outs
        for n, (k, frames) in enumerate(messages):
            if not frames:
                continue
            msg = Msg(facts.conn, d, seq + n, ts[k], compact(frames), packets[k], _show(frames[-1]), sender, receiver,
                      sender_type, receiver_type)
            if into:
                ins.append(msg)
            if out:
                outs.append(msg)
            self.kept += 1

    # ------------------------------------------------------------------ linking

    def hops(self) -> list[Hop]:
        """Every hop of the capture (see the module docstring)."""
        found: list[Hop] = []
        for node in self.nodes.values():
            if node.ins and node.outs:
                found += _NodeHops(node, self.conns, self.window).hops()
        return found

    def flows(self) -> tuple[list[dict[str, Any]], int]:
        """The paths, one per message that ends one (at most `MAX_FLOWS` of them), and how many there are."""
        before: dict[tuple[str, str, int], Hop] = {}
        has_next: set[tuple[str, str, int]] = set()
        for hop in self.hops():
            before[hop.went.key] = hop
            has_next.add(hop.came.key)
        ends = sorted((h for k, h in before.items() if k not in has_next), key=lambda h: h.went.ts)
        out = []
        for last in ends[:MAX_FLOWS]:
            path = [last]
            while path[-1].came.key in before and len(path) < 64:
                path.append(before[path[-1].came.key])
            path.reverse()
            out.append(_flow(path))
        return out, len(ends)


class _NodeHops:
    """The hops through one node: candidates by frames and rules, then routing ids assigned to connections."""

    def __init__(self, node: _Node, conns: dict[str, ConnFacts], window: float) -> None:
        self.node = node
        self.conns = conns
        self.window = window
        self.by_tail: dict[Any, tuple[list[float], list[Msg]]] = {}  # last frame -> (times, messages), in time order
        for m in sorted(node.ins, key=lambda m: m.ts):
            times, msgs = self.by_tail.setdefault(m.frames[-1], ([], []))
            times.append(m.ts)
            msgs.append(m)

    def candidates(self, went: Msg) -> list[tuple[Msg, str, Address | None, bytes | None]]:
        """(came, relation, the ROUTER whose connection's id binds it, that id) for each message `went` may
        forward; relation is `request` (a ROUTER's routing id added), `reply` (removed) or `same`."""
        out: list[tuple[Msg, str, Address | None, bytes | None]] = []
        times, msgs = self.by_tail.get(went.frames[-1], ([], []))
        end = bisect_right(times, went.ts)
        start = max(bisect_left(times, went.ts - self.window), end - MAX_CANDIDATES)
        for came in msgs[start:end]:
            if came.conn == went.conn or came.sender == went.sender or came.receiver == went.receiver:
                continue  # its own connection; copies from one socket; back into the socket it came from
            if PATTERN.get(came.receiver_type) != PATTERN.get(went.sender_type):
                continue
            a, b = came.frames, went.frames
            if came.receiver_type == "ROUTER" and len(b) > len(a) and b[len(b) - len(a):] == a:
                rid = b[len(b) - len(a) - 1]
                if isinstance(rid, bytes):
                    out.append((came, "request", came.receiver, rid))
            elif went.sender_type == "ROUTER" and len(a) > len(b) and a[len(a) - len(b):] == b:
                rid = a[len(a) - len(b) - 1]
                if isinstance(rid, bytes):
                    out.append((came, "reply", went.sender, rid))
            elif "ROUTER" not in (came.receiver_type, went.sender_type) and a == b:
                out.append((came, "same", None, None))
        return out

    def hops(self) -> list[Hop]:
        bound: dict[Address, list[tuple[Msg, Msg, str, bytes]]] = {}  # ROUTER -> (came, went, relation, id)
        free: list[tuple[Msg, list[Msg]]] = []
        for went in sorted(self.node.outs, key=lambda m: m.ts):
            found = self.candidates(went)
            routed = [c for c in found if c[2] is not None]
            if routed:
                for came, relation, router, rid in routed:
                    assert router is not None and rid is not None
                    bound.setdefault(router, []).append((came, went, relation, rid))
            elif found:
                free.append((went, [c[0] for c in found]))
        out = self._same(free)
        for router, options in bound.items():
            out += _RouterHops(router, options, self.conns).hops()
        return out

    def _same(self, free: list[tuple[Msg, list[Msg]]]) -> list[Hop]:
        """Hops without an envelope: each message out takes the earliest message in not yet forwarded (a
        message in may leave on many connections where the pattern fans out)."""
        used: dict[tuple[tuple[str, str, int], str], bool] = {}  # (came, the connection it left on) for fan-out
        taken: set[tuple[str, str, int]] = set()
        out = []
        for went, cands in free:
            fan = PATTERN.get(went.sender_type) in FAN_OUT
            open_ = [c for c in cands if (fan and (c.key, went.conn) not in used) or (not fan and c.key not in taken)]
            if not open_:
                continue
            came = min(open_, key=lambda c: c.ts)
            others = {c.conn for c in open_ if c.conn != came.conn}
            why = None
            if others:
                why = (f"the same frames came in on connection(s) {', '.join(sorted(others | {came.conn}))} within "
                       f"{(went.ts - min(c.ts for c in open_)) * 1e3:.2f} ms before it left: the earliest is taken")
            used[(came.key, went.conn)] = True
            taken.add(came.key)
            out.append(Hop(came, went, "same", None, why))
        return out


Option = tuple[Msg, Msg, str, bytes]  # (came, went, relation, the routing id that binds them)


class _RouterHops:
    """The hops through one ROUTER: which routing id is which of its connections, then each hop by it."""

    def __init__(self, router: Address, options: list[Option], conns: dict[str, ConnFacts]) -> None:
        self.router = router
        self.options = options
        self.conns = conns

    def known_ids(self) -> dict[str, set[bytes]]:
        """The routing ids the peers announced (READY's Identity), by connection (the event contract shows an
        Identity as text, or as hex when it is not UTF-8: both readings)."""
        out: dict[str, set[bytes]] = {}
        for conn in {came.conn if rel == "request" else went.conn for came, went, rel, _ in self.options}:
            facts = self.conns.get(conn)
            if facts is None:
                continue
            peer = "c2s" if facts.server == self.router else "s2c"
            ident = facts.identities.get(peer)
            if ident:
                out[conn] = _identity_readings(ident)
        return out

    @staticmethod
    def pairing(conn: str, rid: bytes, options: list[Option]) -> list[tuple[Msg, Msg, str]] | None:
        """The hops if `rid` is `conn`'s routing id: every request that left with it paired, in order, with one
        that came in on `conn`, and every reply that came back with it with one that left on `conn`; None when
        they do not all pair (or there is nothing to pair)."""
        out: list[tuple[Msg, Msg, str]] = []
        for relation in ("request", "reply"):
            allowed = {(id(c), id(w)) for c, w, rel, r in options if rel == relation and r == rid}
            if not allowed:
                continue
            cames = {id(c): c for c, w, rel, r in options if rel == relation and r == rid}
            wents = {id(w): w for c, w, rel, r in options if rel == relation and r == rid}
            if relation == "request":  # each request out with this id: from a request in on `conn`
                must = sorted(wents.values(), key=lambda m: m.ts)
                pool = sorted((c for c in cames.values() if c.conn == conn), key=lambda m: m.ts)
                pairs = _in_order(pool, must, allowed, must_first=False)
            else:  # each reply back with this id: out on `conn`
                must = sorted(cames.values(), key=lambda m: m.ts)
                pool = sorted((w for w in wents.values() if w.conn == conn), key=lambda m: m.ts)
                pairs = _in_order(must, pool, allowed, must_first=True)
            if pairs is None:
                return None
            out += [(c, w, relation) for c, w in pairs]
        return out or None

    def hops(self) -> list[Hop]:
        known = self.known_ids()
        by_id: dict[bytes, list[Option]] = {}
        for option in self.options:
            by_id.setdefault(option[3], []).append(option)
        fits: dict[bytes, dict[str, list[tuple[Msg, Msg, str]]]] = {}
        claimed = {r for readings in known.values() for r in readings}
        for rid, options in sorted(by_id.items()):
            for conn in sorted({c.conn if rel == "request" else w.conn for c, w, rel, _r in options}):
                if (conn in known and rid not in known[conn]) or (conn not in known and rid in claimed):
                    continue
                paired = self.pairing(conn, rid, options)
                if paired:
                    fits.setdefault(rid, {})[conn] = paired
        assignment, unsure = _assign({r: set(c) for r, c in fits.items()})
        model = _RouterModel(assignment)
        out = []
        for rid, conn in assignment.items():
            basis = "identity" if rid in known.get(conn, ()) else "routing-id"
            why = unsure.get(rid)
            for came, went, relation in fits[rid][conn]:
                if model.fits(came, went, relation, rid):
                    out.append(Hop(came, went, basis, rid, why))
        return out


def _in_order(firsts: list[Msg], seconds: list[Msg], allowed: set[tuple[int, int]], *,
              must_first: bool) -> list[tuple[Msg, Msg]] | None:
    """Pairs each message of the list that must be paired (`firsts` when `must_first`, else `seconds`) with one of
    the other list, in time order, each pair allowed; None when one cannot be paired."""
    pairs = []
    if must_first:
        j = 0
        for a in firsts:
            while j < len(seconds) and (id(a), id(seconds[j])) not in allowed:
                if seconds[j].ts > a.ts + 3600:
                    break
                j += 1
            if j == len(seconds):
                return None
            pairs.append((a, seconds[j]))
            j += 1
        return pairs
    i = 0
    for b in seconds:
        while i < len(firsts) and (id(firsts[i]), id(b)) not in allowed:
            i += 1
        if i == len(firsts):
            return None
        pairs.append((firsts[i], b))
        i += 1
    return pairs


def _matching(fits: dict[bytes, set[str]]) -> dict[str, bytes]:
    """A maximum matching of routing ids to connections (conn -> id), by augmenting paths (Kuhn's algorithm);
    beyond `MAX_ROUTER_IDS` ids, each takes the first connection it fits that is still free."""
    match: dict[str, bytes] = {}
    order = sorted(fits, key=lambda r: (len(fits[r]), r))
    if len(order) > MAX_ROUTER_IDS:
        for rid in order:
            free = next((c for c in sorted(fits[rid]) if c not in match), None)
            if free is not None:
                match[free] = rid
        return match

    def augment(rid: bytes, seen: set[str]) -> bool:
        for conn in sorted(fits[rid]):
            if conn in seen:
                continue
            seen.add(conn)
            if conn not in match or augment(match[conn], seen):
                match[conn] = rid
                return True
        return False

    for rid in order:
        augment(rid, set())
    return match


def _assign(fits: dict[bytes, set[str]]) -> tuple[dict[bytes, str], dict[bytes, str]]:
    """Routing ids given to connections one to one (a maximum matching over what fits), and for each id that
    another matching as large gives to another connection, why the capture cannot tell."""
    match = _matching(fits)
    assignment = {rid: conn for conn, rid in match.items()}
    unsure: dict[bytes, str] = {}
    if len(fits) > MAX_ROUTER_IDS:
        return assignment, unsure
    for rid, conn in assignment.items():
        if len(fits[rid]) < 2:
            continue
        without = {r: (c - {conn} if r == rid else c) for r, c in fits.items()}
        other = _matching(without)
        if len(other) == len(match) and rid in other.values():
            elsewhere = next(c for c, r in other.items() if r == rid)
            unsure[rid] = (f"routing id {_show(rid)} fits connection {conn} and connection {elsewhere} alike (their "
                           "requests and replies interleave the same way): the capture cannot tell which it is")
    return assignment, unsure


class _RouterModel:
    """The simulator's ROUTER (`peers.sockets.Socket`) with one pipe per connection, each up with the routing id
    assigned to it: a request hop must read as [id, *what came in] and end what left; a reply hop must be routed
    by its id to the connection it left on."""

    def __init__(self, assignment: dict[bytes, str]) -> None:
        self.socket = Socket("ROUTER")
        self.pipes = {}
        self.routed: list[Any] = []
        for rid, conn in assignment.items():
            pipe = self.socket.add_pipe(conn, connect_side=False)
            refused = self.socket.pipe_up(pipe, peer_identity=rid)
            if refused is None:
                self.pipes[conn] = pipe
        self.socket.observer = self._observe

    def _observe(self, what: str, rule: str, pipe: Any, frames: Any, detail: Any) -> None:
        self.routed.append((what, pipe))

    def fits(self, came: Msg, went: Msg, relation: str, rid: bytes) -> bool:
        if relation == "request":
            pipe = self.pipes.get(came.conn)
            if pipe is None:
                return False
            self.socket.deliver(pipe, tuple(came.frames))
            read = self.socket.recv()
            return read is not None and read[0] == rid and went.frames[len(went.frames) - len(read):] == read
        self.routed.clear()
        self.socket.send((rid, *went.frames))
        for pipe in self.pipes.values():
            pipe.out.clear()
        return any(what == "route" and pipe is not None and pipe.id == went.conn for what, pipe in self.routed)


def _identity_readings(shown: str) -> set[bytes]:
    """The octets an Identity shown by the event contract (text where UTF-8, else hex) may be."""
    out = {shown.encode()}
    with contextlib.suppress(ValueError):
        out.add(bytes.fromhex(shown))
    return out


def _flow(path: list[Hop]) -> dict[str, Any]:
    msgs = [path[0].came] + [h.went for h in path]
    hops = [{"conn": m.conn, "dir": m.dir, "ts": m.ts, "packets": list(m.packets), "from": format_address(*m.sender),
             "to": format_address(*m.receiver), "frames": len(m.frames)} for m in msgs]
    steps = []
    for hop in path:
        a, b = hop.came.frames, hop.went.frames
        if len(b) > len(a):
            change, envelope = "added", b[:len(b) - len(a)]
        elif len(a) > len(b):
            change, envelope = "removed", a[:len(a) - len(b)]
        else:
            change, envelope = "same", ()
        step = {"node": hop.came.receiver[0], "latency": hop.went.ts - hop.came.ts, "envelope": change,
                "frames": [_show(f) if isinstance(f, bytes) else f"({f[0]} octets)" for f in envelope],
                "basis": hop.basis}
        if hop.routing_id is not None:
            step["routing_id"] = _show(hop.routing_id)
        steps.append(step)
    whys = [h.ambiguous for h in path if h.ambiguous]
    out = {"hops": hops, "steps": steps, "message": msgs[0].preview, "ambiguous": bool(whys),
           "latency": msgs[-1].ts - msgs[0].ts}
    if whys:
        out["why"] = "; ".join(dict.fromkeys(whys))
    return out


def _show(data: bytes, limit: int = 64) -> str:
    return text_or_hex(data[:limit]) + ("…" if len(data) > limit else "")


__all__ = ["Hop", "Msg", "RelayLog", "host"]
