"""A capture as a runnable model: `analyze`'s nodes and connections become sockets and links, what each
application sent becomes its sends at their captured times.

`ReplayModel.from_capture` reads the capture once (`analysis.analyze_with_facts`, with the script of every
message) and builds:

* `sockets`: one per socket the capture shows (a node of the analysis; a broker node is one socket per port it
  listens on), named by type in the order they first appear (`push`, `pull1`, `pull2`, ...), with the options
  the capture tells: socket type, ZMTP version, mechanism, identity, subscriptions and when they were made,
  the heartbeat its PINGs show (interval, TTL);
* `links`: one per connection, the connecting socket to the binding one, at the time it connected;
* `proxies`: a broker node of two sockets that forwards what it reads unchanged (zmq_proxy);
* `sends`: each application's messages as it handed them to its socket (a REQ's without the delimiter, a REP's
  without the envelope, a ROUTER's with the routing id of the peer it went to, a PUB's once however many
  subscribers got it); the sockets a proxy drives send nothing of their own;
* `captured`: per connection and direction, the messages as the capture shows them (the fidelity check's
  reference), and `notes`: what the replay does differently from the capture and why (CURVE as NULL, PLAIN
  credentials, identities the replay gives so that a ROUTER's sends can name a peer).

Times are virtual seconds from the capture's start, through `TimeMap`: the capture's times, with gaps shorter
than `MIN_GAP` between two things that happened stretched to it (the simulator's links take a millisecond a hop,
loopback takes microseconds: a reply must not be sent before its request arrived).
"""

from __future__ import annotations

import bisect
import itertools
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

from ..analysis import analyze_with_facts
from ..analysis.facts import ConnFacts
from ..peers.node import MAX_AT, MAX_FRAME_TEXT, MAX_FRAMES, MAX_LINKS, MAX_NODES, MAX_SCRIPT, NAME_RE, Node
from ..peers.topology import After, Link, Proxy, ScriptSend, Subscription, Topology
from .curve import infer as infer_curve

MAX_MESSAGES = 20_000  # messages of the capture the replay takes (the rest: a note)
MAX_BODY = 1 << 20  # octets of a frame the replay keeps
MIN_GAP = 0.01  # seconds: the least virtual time between two things the capture shows one after the other
HANDSHAKE_SLACK = 0.05  # a subscription this soon after the handshake was made before the connect
COPYING = frozenset({"PUB", "XPUB", "RADIO"})
PROXY_PAIRS = {frozenset({"ROUTER", "DEALER"}), frozenset({"XSUB", "XPUB"}), frozenset({"PULL", "PUSH"}),
               frozenset({"SUB", "PUB"}), frozenset({"SUB", "XPUB"}), frozenset({"XSUB", "PUB"}),
               frozenset({"PAIR"})}
DEALT = frozenset({"PUSH", "DEALER"})  # sockets that deal their sends round robin over their pipes
BURST = 0.002  # seconds: sends of one load-balancing socket closer than this went out as one batch
FANOUT_WINDOW = 1.0  # seconds: copies of one PUB send reach its subscribers within this
HOP = 0.001  # seconds: the simulator's link latency (a request is read that long after the capture shows it)


class ReplayError(ValueError):
    """A capture that cannot be replayed (nothing of it is ZeroMQ between known sockets)."""


@dataclass
class Socket:
    """One socket of the replay: a simulated peer, and a node of the topology."""

    name: str
    type: str
    endpoints: list[str]
    version: str = "3.1"
    mechanism: str = "NULL"
    identity: str = ""
    username: str = ""
    password: str = ""
    greeting: str = "libzmq"  # libzmq's greeting, in three writes
    subscribe: list[str] = field(default_factory=list)  # topics subscribed before connecting
    subscriptions: list[tuple[float, str, bool]] = field(default_factory=list)  # later: (at, topic, subscribe)
    heartbeat_ivl: float = 0.0
    heartbeat_ttl: float = 0.0
    heartbeat_timeout: float | None = None
    sndhwm: int = 1000
    rcvhwm: int = 1000
    recv_every: float | None = None
    proxied: bool = False
    first: float = 0.0

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type, "endpoints": self.endpoints,
                               "version": self.version, "mechanism": self.mechanism}
        if self.identity:
            out["identity"] = self.identity
        if self.type in ("SUB", "XSUB"):
            out["subscribe"] = list(self.subscribe)
        for key in ("heartbeat_ivl", "heartbeat_ttl", "heartbeat_timeout", "recv_every"):
            value = getattr(self, key)
            if value:
                out[key] = value
        if self.proxied:
            out["proxy"] = True
        return out


@dataclass
class ReplayLink:
    """One connection: `client` connects to `server` at `at`; `conns`, the capture's connection ids it plays."""

    client: str
    server: str
    at: float
    conns: list[str]
    closed_at: float | None = None  # the client closed it (zmq_disconnect or its socket's close)


@dataclass(frozen=True)
class Send:
    """An application's send: `frames` handed to socket `sender` at `at`. A reply (`after`: the sockets whose
    applications answer alike, the message one of them read, and which time they read that message) is sent
    `think` seconds after that read instead, by the one that read it: `at` is when the capture shows it, what the
    replay does when the request comes as captured."""

    sender: str
    frames: tuple[bytes, ...]
    at: float
    after: tuple[tuple[str, ...], tuple[bytes, ...], int] | None = None
    think: float = 0.0


class TimeMap:
    """Capture time -> virtual time: monotone, piecewise linear over the capture's moments (see the module)."""

    def __init__(self, start: float, moments: list[float]) -> None:
        self.start = start
        xs = sorted({m - start for m in moments if m >= start})
        self.xs: list[float] = []
        self.ys: list[float] = []
        y = 0.0
        for x in xs:
            if self.xs:
                y += max(x - self.xs[-1], MIN_GAP)
            else:
                y = x
            self.xs.append(x)
            self.ys.append(y)

    def at(self, rel: float) -> float:
        """Virtual time of `rel` seconds after the capture's start."""
        xs, ys = self.xs, self.ys
        if not xs or rel <= xs[0]:
            return max(rel, 0.0)
        i = bisect.bisect_right(xs, rel) - 1
        if i >= len(xs) - 1:
            return ys[-1] + (rel - xs[-1])
        x0, x1, y0, y1 = xs[i], xs[i + 1], ys[i], ys[i + 1]
        return y0 + (rel - x0) * (y1 - y0) / (x1 - x0)

    def of(self, ts: float) -> float:
        """Virtual time of the capture's timestamp `ts`."""
        return self.at(ts - self.start)

    def back(self, t: float) -> float:
        """Seconds after the capture's start of virtual time `t` (the inverse)."""
        xs, ys = self.xs, self.ys
        if not ys or t <= ys[0]:
            return t
        i = bisect.bisect_right(ys, t) - 1
        if i >= len(ys) - 1:
            return xs[-1] + (t - ys[-1])
        y0, y1, x0, x1 = ys[i], ys[i + 1], xs[i], xs[i + 1]
        return x0 + (t - y0) * (x1 - x0) / (y1 - y0) if y1 > y0 else x0


@dataclass
class ReplayModel:
    """What `from_capture` made of a capture (see the module docstring)."""

    sockets: dict[str, Socket]
    links: list[ReplayLink]
    proxies: list[tuple[str, str]]
    sends: list[Send]
    captured: dict[tuple[str, str], list[tuple[bytes, ...]]]
    conn_ends: dict[str, tuple[str, str]]  # capture conn -> (client socket, server socket)
    endpoints: dict[str, tuple[str, str]]  # capture conn -> (client endpoint, server endpoint)
    gaps: dict[tuple[str, str], int]  # (conn, dir) -> octets the capture lacks
    encrypted: set[str]
    findings: list[dict[str, Any]]
    notes: list[dict[str, Any]]
    time: TimeMap
    end: float  # virtual time the capture's last moment maps to

    # ---------------------------------------------------------------- building

    @classmethod
    def from_capture(cls, source: str | bytes | BinaryIO, *, max_messages: int = MAX_MESSAGES,
                     curve_keys: Mapping[bytes, bytes] | None = None) -> ReplayModel:
        """Reads the capture and builds its replay; `ReplayError` when nothing in it can be replayed. `curve_keys`:
        a CURVE key log (`engine.curve.parse_keylog`), which opens the boxes of the connections it has keys of."""
        analysis, facts = analyze_with_facts(source, script=max_messages, script_body=MAX_BODY, curve_keys=curve_keys)
        return cls.from_analysis(analysis, facts, max_messages=max_messages)

    @classmethod
    def from_analysis(cls, analysis: dict[str, Any], facts: dict[str, ConnFacts], *,
                      max_messages: int = MAX_MESSAGES) -> ReplayModel:
        notes: list[dict[str, Any]] = []
        inferred = infer_curve(analysis, facts)
        rows = [c for c in analysis["connections"] if c["zmtp"] and c["client_type"] and c["server_type"]]
        if not rows:
            raise ReplayError("the capture holds no ZeroMQ connection whose two socket types are known")
        script = (analysis.get("script") or [])[:max_messages]
        if len(script) >= max_messages:
            notes.append(note("cut", f"the replay takes the capture's first {max_messages} messages",
                              limit=max_messages))
        start = min(c["first_ts"] for c in rows)

        # -- sockets: one per endpoint group (a broker node: one per port)
        ep_socket: dict[str, Socket] = {}
        sockets: list[Socket] = []
        first_seen: dict[str, float] = {}
        for c in rows:
            for side in ("client", "server"):
                first_seen[c[side]] = min(first_seen.get(c[side], c["first_ts"]), c["first_ts"])
        for node in analysis["nodes"]:
            groups: dict[tuple[int | str, str], list[str]] = {}
            for ep in node["endpoints"]:
                types = node["sockets"].get(ep) or []
                if not types or ep not in first_seen:
                    continue
                key: tuple[int | str, str] = (ep.rpartition(":")[2] if node["broker"] else node["id"], types[0])
                groups.setdefault(key, []).append(ep)
            for (_, stype), eps in groups.items():
                sock = Socket("", stype, eps, first=min(first_seen[ep] for ep in eps))
                sockets.append(sock)
                for ep in eps:
                    ep_socket[ep] = sock
        sockets.sort(key=lambda s: (s.first, s.endpoints[0]))
        by_type: dict[str, int] = {}
        for s in sockets:
            by_type[s.type] = by_type.get(s.type, 0) + 1
        counters: dict[str, int] = {}
        for s in sockets:
            base = s.type.lower()
            if by_type[s.type] > 1:
                counters[s.type] = counters.get(s.type, 0) + 1
                s.name = f"{base}{counters[s.type]}"
            else:
                s.name = base
        by_name = {s.name: s for s in sockets}

        # -- proxies: a broker node's two sockets that forward unchanged
        proxies: list[tuple[str, str]] = []
        for node in analysis["nodes"]:
            if not node["broker"]:
                continue
            socks = list({id(ep_socket[ep]): ep_socket[ep] for ep in node["endpoints"] if ep in ep_socket}.values())
            if len(socks) == 2 and frozenset(s.type for s in socks) in PROXY_PAIRS:
                front, back = sorted(socks, key=lambda s: 0 if s.type in ("ROUTER", "XSUB", "PULL", "SUB") else 1)
                front.proxied = back.proxied = True
                proxies.append((front.name, back.name))
            else:
                notes.append(note("broker", f"the broker of {', '.join(s.name for s in socks)} is replayed by what "
                                  "it sent, at the captured times (its own logic is not in the capture)",
                                  sockets=[s.name for s in socks]))

        # -- links and each socket's options from its connections
        links: list[ReplayLink] = []
        pair_link: dict[tuple[str, str], ReplayLink] = {}
        conn_ends: dict[str, tuple[str, str]] = {}
        endpoints: dict[str, tuple[str, str]] = {}
        moments: list[float] = []
        curved = False
        plain = False
        for c in rows:
            client, server = ep_socket.get(c["client"]), ep_socket.get(c["server"])
            if client is None or server is None or client is server:
                continue
            conn_ends[c["conn"]] = (client.name, server.name)
            endpoints[c["conn"]] = (c["client"], c["server"])
            at_ts = c["first_ts"]  # (its SYN, or its first packet)
            moments.append(at_ts)
            link = pair_link.get((client.name, server.name))
            if link is None:
                link = pair_link[(client.name, server.name)] = ReplayLink(client.name, server.name, at_ts, [])
                links.append(link)
            link.conns.append(c["conn"])
            close = c.get("close") or {}
            if close.get("by") == "client" and close.get("ts") is not None:
                link.closed_at = close["ts"]
                moments.append(close["ts"])
            for sock, d in ((client, "c2s"), (server, "s2c")):
                version = (c.get("versions") or {}).get(d)
                if version in ("3.1", "3.0", "2.0", "1.0"):
                    sock.version = version
                ident = (c.get("identities") or {}).get(d)
                if ident:
                    sock.identity = ident
            mech = c.get("mechanism") or "NULL"
            if mech == "CURVE":
                curved = True
            elif mech == "PLAIN":
                plain = True
                for sock in (client, server):
                    sock.mechanism = "PLAIN"
                client.username, client.password = "user", "password"
            f = facts.get(c["conn"])
            if f is not None:
                for sock, d in ((client, "c2s"), (server, "s2c")):
                    _heartbeat(sock, f, d)
            sub = client if client.type in ("SUB",) else server if server.type in ("SUB",) else None
            if sub is not None:
                handshake = c.get("handshake_ts") or at_ts
                for s in c.get("subscriptions") or []:
                    subscribe = s["what"] == "subscribe"
                    if subscribe and s["ts"] <= handshake + HANDSHAKE_SLACK and not sub.subscriptions:
                        if s["topic"] not in sub.subscribe:
                            sub.subscribe.append(s["topic"])
                    elif not any(t == s["topic"] and on == subscribe for _, t, on in sub.subscriptions):
                        sub.subscriptions.append((s["ts"], s["topic"], subscribe))
                        moments.append(s["ts"])
        if not links:
            raise ReplayError("the capture holds no connection between two sockets the replay can tell apart")
        if inferred:
            notes.append(note("curve", "CURVE connections without their session keys are replayed as NULL: their "
                              "socket types and messages are inside boxes, so the replay takes who connected when "
                              "and each box's time and size, with stand-in payloads of the captured sizes (a key "
                              "log gives the real ones)"))
            notes.extend(note("curve-types", f"the CURVE connections to {server}: {why}", server=server)
                         for server, why in inferred)
        if curved and any(not c.get("inferred") for c in rows if c.get("mechanism") == "CURVE"):
            notes.append(note("curve-keylog", "CURVE connections opened with the key log are replayed as NULL, with "
                              "the socket types and messages inside their boxes"))
        if plain:
            notes.append(note("plain", "PLAIN's credentials are not kept by the analysis: the replay's clients "
                              "say 'user'/'password' and its servers accept every client"))

        # -- the applications' sends
        captured: dict[tuple[str, str], list[tuple[bytes, ...]]] = {}
        raw_sends: list[tuple[float, Socket, tuple[bytes, ...], str]] = []  # (ts, sender, wire frames, conn)
        for entry in script:
            frames = tuple(bytes.fromhex(f) for f in entry["frames"])
            captured.setdefault((entry["conn"], entry["dir"]), []).append(frames)
            ends = conn_ends.get(entry["conn"])
            if ends is None:
                continue
            sender = by_name[ends[0] if entry["dir"] == "c2s" else ends[1]]
            moments.append(entry["ts"])
            if sender.proxied or sender.type == "SUB":
                continue
            raw_sends.append((entry["ts"], sender, frames, entry["conn"]))
        # ROUTER applications name their peers by routing id: a peer without an identity gets one
        routers = {sender.name for _, sender, _, _ in raw_sends if sender.type == "ROUTER"}
        named: list[str] = []
        for link in links:
            for router, peer in ((link.server, link.client), (link.client, link.server)):
                if router in routers and not by_name[peer].identity:
                    by_name[peer].identity = peer
                    named.append(peer)
        if named:
            notes.append(note("identity", f"{', '.join(named)} had no identity: the replay gives each its name, so "
                              "that the ROUTER's sends can name it (libzmq made up a routing id)", sockets=named))
        last_message = max((e["ts"] for e in script), default=None)
        for link in links:  # a close after the last message is the capture's teardown, not an application leaving
            if link.closed_at is not None and (last_message is None or link.closed_at >= last_message):
                link.closed_at = None
        time = TimeMap(start, moments)
        brokers = {name for n in notes if n["what"] == "broker" for name in n["details"]["sockets"]}
        sends = _application_sends(raw_sends, conn_ends, by_name, time)
        _as_replies(sends, script, conn_ends, by_name, time, brokers)
        for link in links:
            link.at = time.of(link.at)
            if link.closed_at is not None:
                link.closed_at = time.of(link.closed_at)
        for s in sockets:
            s.subscriptions = [(time.of(ts), topic, on) for ts, topic, on in s.subscriptions]
        notes.extend(_read_speeds(script, conn_ends, facts, by_name))
        gaps = {(conn, d): f.gaps[d][1] for conn, f in facts.items() for d in f.gaps if f.gaps[d][1]}
        for (conn, d), octets in sorted(gaps.items()):
            notes.append(note("capture-loss", f"the capture lacks {octets} octets of connection {conn} ({d}): the "
                              "messages in them are not in the capture, so the replay does not send them",
                              conn=conn, dir=d, octets=octets))
        encrypted = {c["conn"] for c in rows if c.get("mechanism") == "CURVE"}
        end = time.of(max(c["last_ts"] for c in rows))
        return cls({s.name: s for s in sockets}, links, proxies, sends, captured, conn_ends, endpoints, gaps,
                   encrypted, analysis["findings"], notes, time, end)

    # ---------------------------------------------------------------- views

    def topology(self) -> Topology:
        """The replay as a topology of the playground (`POST /api/sessions`): nodes with their heartbeats, links at
        their times (and the clients' closes), the proxies, each application's sends as the script and the
        subscriptions made later: what `simulate` plays, as a session plays it."""
        nodes = tuple(Node(name=s.name, type=s.type, version=s.version, mechanism=s.mechanism,
                           identity=s.identity, username=s.username, password=s.password, libzmq=False,
                           subscribe=tuple(s.subscribe) if s.type in ("SUB", "XSUB") else (),
                           sndhwm=s.sndhwm, rcvhwm=s.rcvhwm,
                           recv=max(round(s.recv_every, 3), 0.001) if s.recv_every else "auto",
                           heartbeat_ivl=s.heartbeat_ivl, heartbeat_ttl=s.heartbeat_ttl,
                           heartbeat_timeout=s.heartbeat_timeout or 0.0)
                      for s in self.sockets.values())
        links = tuple(Link(connect=lk.client, bind=lk.server, at=round(lk.at, 6),
                           close_at=None if lk.closed_at is None else round(max(lk.closed_at, lk.at), 6))
                      for lk in self.links)
        proxies = tuple(Proxy(frontend=f, backend=b) for f, b in self.proxies)
        script = tuple(_script_send(s) for s in self.sends)
        subscriptions = tuple(Subscription(s.name, topic, round(at, 6), on) for s in self.sockets.values()
                              for at, topic, on in s.subscriptions)
        return Topology(nodes, links, proxies, script, subscriptions)

    def topology_notes(self) -> list[dict[str, Any]]:
        """What the playground's topology leaves out of this replay: nothing today (its heartbeats, later
        subscriptions and clients' closes are the topology's too); the list stays for what a session cannot play."""
        return []

    def nodes(self) -> list[dict[str, Any]]:
        return [s.describe() for s in self.sockets.values()]


def note(what: str, text: str, **details: Any) -> dict[str, Any]:
    """One note of the replay: `what` it is about, its `text`, its numbers or names."""
    return {"what": what, "text": text, **({"details": details} if details else {})}


def _read_speeds(script: list[dict[str, Any]], conn_ends: dict[str, tuple[str, str]], facts: dict[str, ConnFacts],
                 by_name: dict[str, Socket]) -> list[dict[str, Any]]:
    """How fast each application read, as the capture shows it, set as its socket's `recv_every`; the notes.

    A reader that keeps up leaves no trace (its reads are as fast as the deliveries): it reads as fast as it can. A
    reader that does not fills its socket and then its TCP window, which closes (the receiver's zero windows, the
    analysis's back-pressure): then what it read, it read over the time the deliveries to it took, and its pace
    is that time over the messages less one."""
    times: dict[str, list[float]] = {}
    zeros: dict[str, int] = {}
    for conn, (client, server) in conn_ends.items():
        f = facts.get(conn)
        if f is None:
            continue
        for d, reader in (("c2s", server), ("s2c", client)):
            closed = sum(1 for r in f.zero_windows.values() if r.dir != d)  # (a window the reader advertised)
            if closed and not by_name[reader].proxied:
                zeros[reader] = zeros.get(reader, 0) + closed
                times.setdefault(reader, [])
    for entry in script:
        ends = conn_ends.get(entry["conn"])
        if ends is not None:
            reader = ends[1] if entry["dir"] == "c2s" else ends[0]
            if reader in times:
                times[reader].append(entry["ts"])
    out = []
    for reader, ts in times.items():
        if len(ts) < 2:
            continue
        span = max(ts) - min(ts)
        every = round(span / (len(ts) - 1), 3)
        if every <= 0:
            continue
        by_name[reader].recv_every = every
        out.append(note("read-speed", f"{reader} read about one message every {every:g} s: its TCP window closed "
                        f"{zeros[reader]} times (back-pressure) and it took {len(ts)} messages over {span:.3f} s; the "
                        "replay reads at that pace (recv_every), the other sockets as fast as they can",
                        socket=reader, recv_every=every))
    return out


def _heartbeat(sock: Socket, facts: ConnFacts, d: str) -> None:
    """A socket's heartbeat from its PINGs on one connection: their interval and the TTL they announce."""
    pings = [c for c in facts.commands if c.name == "PING" and c.ref.dir == d]
    if not pings:
        return
    ttl = max((c.details.get("ttl") or 0) for c in pings) / 10
    if ttl:
        sock.heartbeat_ttl = ttl
    if len(pings) >= 2:
        gaps = [b.ref.ts - a.ref.ts for a, b in itertools.pairwise(pings)]
        sock.heartbeat_ivl = round(statistics.median(gaps), 3)
    elif not sock.heartbeat_ivl:
        sock.heartbeat_ivl = 1.0


def _application_sends(raw: list[tuple[float, Socket, tuple[bytes, ...], str]],
                       conn_ends: dict[str, tuple[str, str]], by_name: dict[str, Socket],
                       time: TimeMap) -> list[Send]:
    """The wire's messages as the applications sent them (see the module docstring)."""
    out: list[Send] = []
    pending: dict[str, list[tuple[float, tuple[bytes, ...], set[str]]]] = {}  # a PUB's sends not on every conn
    for ts, sender, frames, conn in _in_send_order(raw):
        kind = sender.type
        if kind in COPYING:
            recent = pending.setdefault(sender.name, [])
            recent[:] = [r for r in recent if ts - r[0] <= FANOUT_WINDOW]
            copy = next((r for r in recent if r[1] == frames and conn not in r[2]), None)
            if copy is not None:
                copy[2].add(conn)
                continue
            recent.append((ts, frames, {conn}))
        elif kind == "REQ":
            frames = frames[1:] if frames and frames[0] == b"" else frames
        elif kind == "REP":
            frames = frames[frames.index(b"") + 1:] if b"" in frames else frames
        elif kind == "ROUTER":
            client, server = conn_ends[conn]
            peer = by_name[client if sender.name == server else server]
            frames = (peer.identity.encode("utf-8"), *frames)
        out.append(Send(sender.name, frames, time.of(ts)))
    return out


REPLIERS = frozenset({"REP", "ROUTER", "REQ"})  # sockets whose sends answer what they read (a REQ's next request
# follows the reply to its last one)


def _as_replies(sends: list[Send], script: list[dict[str, Any]], conn_ends: dict[str, tuple[str, str]],
                by_name: dict[str, Socket], time: TimeMap, brokers: set[str]) -> None:
    """Marks each REP's and ROUTER's send that answers a request as a reply to it (`Send.after`, `Send.think`):
    the earliest request of that peer the socket had not answered, when it came before (a ROUTER's send with
    none is its own, and stays at its time; a broker's, whose logic the capture does not hold, too); and a REQ's
    next request as following the reply it read. A REP or REQ reads a message without its envelope, a ROUTER
    with the peer's routing id first. REPs with the same peers are workers of one pool (behind one DEALER):
    whichever reads a request answers it as the capture shows it answered."""
    partners: dict[str, set[str]] = {}
    for client, server in conn_ends.values():
        partners.setdefault(client, set()).add(server)
        partners.setdefault(server, set()).add(client)
    pools: dict[str, tuple[str, ...]] = {}
    for name, sock in by_name.items():
        same = [n for n, s in by_name.items() if s.type == "REP" and partners.get(n) == partners.get(name)]
        pools[name] = tuple(same) if sock.type == "REP" else (name,)
    incoming: dict[str, list[tuple[float, str, tuple[bytes, ...]]]] = {}  # socket -> (ts, conn, what it read)
    for entry in script:
        ends = conn_ends.get(entry["conn"])
        if ends is None:
            continue
        client, server = ends
        sender, receiver = (client, server) if entry["dir"] == "c2s" else (server, client)
        sock = by_name[receiver]
        if sock.type not in REPLIERS or sock.proxied or receiver in brokers:
            continue
        frames = tuple(bytes.fromhex(f) for f in entry["frames"])
        if sock.type in ("REP", "REQ"):
            read = frames[frames.index(b"") + 1:] if b"" in frames else frames
        else:
            read = (by_name[sender].identity.encode("utf-8"), *frames)
        incoming.setdefault(receiver, []).append((entry["ts"], sender, read))
    occurrences: dict[tuple[tuple[str, ...], tuple[bytes, ...]], list[float]] = {}  # (pool, read) -> times read
    for name in sorted(incoming, key=lambda n: pools[n]):
        for ts, _, read in incoming[name]:
            occurrences.setdefault((pools[name], read), []).append(ts)
    for name, requests in incoming.items():
        pool = pools[name]
        numbered = []
        for ts, peer, read in requests:
            times = sorted(occurrences[(pool, read)])
            numbered.append((time.of(ts), peer, read, bisect.bisect_left(times, ts) + 1))
        sock = by_name[name]
        answered = [False] * len(numbered)
        for j, send in enumerate(sends):
            if send.sender != name:
                continue
            to = send.frames[0].decode("utf-8", "replace") if sock.type == "ROUTER" and send.frames else None
            k = next((i for i, (at, peer, _, _) in enumerate(numbered) if not answered[i] and at <= send.at
                      and (to is None or by_name[peer].identity == to)), None)
            if k is None:
                continue
            answered[k] = True
            at, _, read, occurrence = numbered[k]
            sends[j] = replace(send, after=(pool, read, occurrence), think=max(send.at - at - HOP, 0.0))


def _in_send_order(raw: list[tuple[float, Socket, tuple[bytes, ...], str]]
                   ) -> list[tuple[float, Socket, tuple[bytes, ...], str]]:
    """The wire's messages in the order their applications sent them. The capture gives each connection's in
    order, but a load-balancing socket (PUSH, DEALER) writes one burst of sends to its pipes as a batch per
    connection: within a burst (sends less than `BURST` apart) its messages are dealt back one connection at a
    time, as round robin took them, and all get the burst's first time."""
    raw = sorted(raw, key=lambda r: r[0])
    out: list[tuple[float, Socket, tuple[bytes, ...], str]] = []
    bursts: dict[str, list[tuple[float, Socket, tuple[bytes, ...], str]]] = {}
    last: dict[str, float] = {}

    def flush(name: str) -> None:
        burst = bursts.pop(name, [])
        per_conn: dict[str, list[tuple[float, Socket, tuple[bytes, ...], str]]] = {}
        for r in burst:
            per_conn.setdefault(r[3], []).append(r)
        queues = list(per_conn.values())
        t0 = burst[0][0] if burst else 0.0
        while queues:
            for q in queues:
                r = q.pop(0)
                out.append((t0, r[1], r[2], r[3]))
            queues = [q for q in queues if q]

    for r in raw:
        ts, sender = r[0], r[1]
        if sender.type not in DEALT:
            out.append(r)
            continue
        if sender.name in bursts and ts - last[sender.name] > BURST:
            flush(sender.name)
        bursts.setdefault(sender.name, []).append(r)
        last[sender.name] = ts
    for name in list(bursts):
        flush(name)
    out.sort(key=lambda r: r[0])  # (stable: a burst keeps its dealt order)
    return out


def _script_send(send: Send) -> ScriptSend:
    """A send as the topology's script has it: text frames where every frame is UTF-8 text, else hex; a reply
    with what it waits for."""
    after = None
    if send.after is not None:
        by, read, n = send.after
        after = After(by, tuple(f.hex() for f in read), n, round(send.think, 6))
    try:
        texts = tuple(f.decode("utf-8") for f in send.frames)
        if any(not t.isprintable() for t in texts):
            raise ValueError
        return ScriptSend(send.sender, texts, round(send.at, 6), after=after)
    except ValueError:
        return ScriptSend(send.sender, tuple(f.hex() for f in send.frames), round(send.at, 6), hex=True, after=after)


def fits_topology(model: ReplayModel) -> list[str]:
    """Why the playground cannot take this replay as a topology (empty: it can): its limits."""
    out = []
    if len(model.sockets) > MAX_NODES:
        out.append(f"{len(model.sockets)} sockets (at most {MAX_NODES})")
    if len(model.links) > MAX_LINKS:
        out.append(f"{len(model.links)} connections (at most {MAX_LINKS})")
    if len(model.sends) > MAX_SCRIPT:
        out.append(f"{len(model.sends)} sends (at most {MAX_SCRIPT})")
    if any(s.at > MAX_AT for s in model.sends):
        out.append(f"sends later than {MAX_AT:g} s")
    if any(len(s.frames) > MAX_FRAMES or any(len(f) * 2 > MAX_FRAME_TEXT for f in s.frames) for s in model.sends):
        out.append(f"messages of more than {MAX_FRAMES} frames or {MAX_FRAME_TEXT // 2} octets a frame")
    if any(not NAME_RE.fullmatch(s.name) for s in model.sockets.values()):
        out.append("socket names the topology does not take")
    return out
