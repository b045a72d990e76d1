"""Topologies: named nodes (one ZeroMQ socket each), the links between them (one TCP connection each),
optional proxy steps, and a script of sends; the presets a teacher picks from.

A `Topology` is what `POST /api/sessions` takes besides the two-peer body, and the small JSON file
the page saves and shares (docs/architecture.md, "Topologies"). `Topology.from_dict` checks it and
raises `TopologyError` naming the node or link at fault; `to_dict` gives it back normalised. Both
runtimes build on it: the simulation (`peers.simulation`, through the web session) and the TCP mode.

A node is `peers.node.Node`, the one node spec (pydantic, with the limits); links, proxies and sends are
plain frozen dataclasses checked here, and `validate` checks how they relate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..engine.constants import is_valid_pair
from ..engine.notation import parse_hex
from .node import (
    MAX_AT,
    MAX_FRAME_TEXT,
    MAX_FRAMES,
    MAX_LINKS,
    MAX_NODES,
    MAX_PROXIES,
    MAX_SCRIPT,
    MAX_TEXT,
    NODE_KEYS,
    Node,
    check_name,
    check_number,
    check_text,
    node_problem,
)

NO_PROXY_TYPES = frozenset({"REQ", "REP"})  # strict send/recv alternation: zmq_proxy cannot drive them
LINK_KEYS = frozenset({"connect", "bind", "at", "close_at"})
PROXY_KEYS = frozenset({"frontend", "backend"})
SEND_KEYS = frozenset({"from", "frames", "at", "hex", "after"})
AFTER_KEYS = frozenset({"by", "read", "n", "think"})
SUBSCRIPTION_KEYS = frozenset({"node", "topic", "at", "cancel"})
TOPOLOGY_KEYS = frozenset({"nodes", "links", "proxies", "script", "subscriptions"})
SUBSCRIBERS = frozenset({"SUB", "XSUB"})


COPYING = frozenset({"PUB", "XPUB", "RADIO"})  # socket types that send each message to every peer


class TopologyError(ValueError):
    """A topology that cannot run; the text names the node, link or proxy at fault."""


@dataclass(frozen=True)
class Link:
    """One TCP connection: `connect` is the client (zmq_connect), `bind` the server (zmq_bind). `at`: when
    the connect happens (seconds; > 0 is a late joiner); `close_at`: when the client closes it for good (its
    socket disconnects: no reconnect), None: never."""

    connect: str
    bind: str
    at: float = 0.0
    close_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"connect": self.connect, "bind": self.bind}
        if self.at:
            out["at"] = self.at
        if self.close_at is not None:
            out["close_at"] = self.close_at
        return out


@dataclass(frozen=True)
class Proxy:
    """A zmq_proxy step: what `frontend` receives, `backend` sends, and back."""

    frontend: str
    backend: str

    def to_dict(self) -> dict[str, Any]:
        return {"frontend": self.frontend, "backend": self.backend}


@dataclass(frozen=True)
class After:
    """What a reply waits for: the applications of nodes `by` (one, or a pool of workers that answer alike) having
    read the message `read` (hex frames) `n` times; the one that read it sends `think` seconds later."""

    by: tuple[str, ...]
    read: tuple[str, ...]
    n: int = 1
    think: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"by": list(self.by), "read": list(self.read), "n": self.n, "think": self.think}


@dataclass(frozen=True)
class ScriptSend:
    """One scripted send: node `sender`'s application sends `frames` (text, or hex with `hex`) at `at` s; with
    `after`, in reaction to a message read instead (a replayed reply; `at` is when it was captured, what real
    mode keeps)."""

    sender: str
    frames: tuple[str, ...]
    at: float = 0.0
    hex: bool = False
    after: After | None = None

    def frame_bytes(self) -> tuple[bytes, ...]:
        return tuple(parse_hex(f) if self.hex else f.encode("utf-8") for f in self.frames)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from": self.sender, "frames": list(self.frames), "at": self.at}
        if self.hex:
            out["hex"] = True
        if self.after is not None:
            out["after"] = self.after.to_dict()
        return out


@dataclass(frozen=True)
class Subscription:
    """A subscription made (or, with `subscribe` false, cancelled) by a SUB's or XSUB's application at `at` s, after
    the start (a node's `subscribe` topics are made before it connects)."""

    node: str
    topic: str
    at: float
    subscribe: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"node": self.node, "topic": self.topic, "at": self.at}
        if not self.subscribe:
            out["cancel"] = True
        return out


@dataclass(frozen=True)
class Topology:
    """Nodes, links, proxies and a script (see the module docstring)."""

    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    proxies: tuple[Proxy, ...] = ()
    script: tuple[ScriptSend, ...] = ()
    subscriptions: tuple[Subscription, ...] = ()
    names: dict[str, Node] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", {n.name: n for n in self.nodes})

    def node(self, name: str) -> Node:
        try:
            return self.names[name]
        except KeyError:
            raise TopologyError(f"no node named {name!r}") from None

    def binds(self, name: str) -> bool:
        """Whether the node binds (is the server of some link)."""
        return any(link.bind == name for link in self.links)

    def proxied(self) -> set[str]:
        """Names of the nodes that a proxy drives."""
        return {n for p in self.proxies for n in (p.frontend, p.backend)}

    def deliveries(self, sender: str) -> int:
        """At most how many connections one message sent by `sender` crosses: a PUB, XPUB or RADIO copies it to every
        peer, other sockets pick one, and a proxy passes what a node of its takes on from its other node (at least 1;
        what a session's byte budget charges a send)."""
        partner = {**{p.frontend: p.backend for p in self.proxies}, **{p.backend: p.frontend for p in self.proxies}}

        def reach(name: str, seen: frozenset[str]) -> int:
            peers = [lk.bind if lk.connect == name else lk.connect for lk in self.links if name in (lk.connect,
                                                                                                     lk.bind)]
            if not peers:
                return 0
            hops = [1 + (reach(partner[p], seen | {p}) if p in partner and p not in seen else 0) for p in peers]
            node = self.names.get(name)
            return sum(hops) if node is not None and node.type in COPYING else max(hops)

        return max(1, reach(sender, frozenset({sender})))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": [n.to_dict() for n in self.nodes],
                               "links": [lk.to_dict() for lk in self.links]}
        if self.proxies:
            out["proxies"] = [p.to_dict() for p in self.proxies]
        if self.script:
            out["script"] = [s.to_dict() for s in self.script]
        if self.subscriptions:
            out["subscriptions"] = [s.to_dict() for s in self.subscriptions]
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Topology:
        """A checked topology from its JSON form (extra keys such as "mode" or "autoplay" are the caller's)."""
        if not isinstance(data, dict):
            raise TopologyError("a topology is an object with 'nodes' and 'links'")
        nodes_in = data.get("nodes")
        links_in = data.get("links", [])
        if not isinstance(nodes_in, list) or not nodes_in:
            raise TopologyError("'nodes' is a non-empty list")
        if not isinstance(links_in, list):
            raise TopologyError("'links' is a list")
        if len(nodes_in) > MAX_NODES:
            raise TopologyError(f"at most {MAX_NODES} nodes (this one has {len(nodes_in)})")
        if len(links_in) > MAX_LINKS:
            raise TopologyError(f"at most {MAX_LINKS} links (this one has {len(links_in)})")
        nodes = tuple(_node(i, raw) for i, raw in enumerate(nodes_in))
        links = tuple(_link(i, raw) for i, raw in enumerate(links_in))
        proxies_in = data.get("proxies") or []
        script_in = data.get("script") or []
        if not isinstance(proxies_in, list) or len(proxies_in) > MAX_PROXIES:
            raise TopologyError(f"'proxies' is a list of at most {MAX_PROXIES}")
        if not isinstance(script_in, list) or len(script_in) > MAX_SCRIPT:
            raise TopologyError(f"'script' is a list of at most {MAX_SCRIPT} sends")
        proxies = tuple(_proxy(i, raw) for i, raw in enumerate(proxies_in))
        script = tuple(_send(i, raw) for i, raw in enumerate(script_in))
        subs_in = data.get("subscriptions") or []
        if not isinstance(subs_in, list) or len(subs_in) > MAX_SCRIPT:
            raise TopologyError(f"'subscriptions' is a list of at most {MAX_SCRIPT}")
        subscriptions = tuple(_subscription(i, raw) for i, raw in enumerate(subs_in))
        return validate(cls(nodes, links, proxies, script, subscriptions))


def validate(topo: Topology) -> Topology:
    """Checks the relations between nodes, links and proxies; returns `topo` or raises `TopologyError`."""
    names: dict[str, Node] = {}
    for node in topo.nodes:
        if node.name in names:
            raise TopologyError(f"two nodes are named {node.name!r}")
        names[node.name] = node
    seen: dict[frozenset[str], int] = {}
    for i, link in enumerate(topo.links):
        where = f"link {i} ({link.connect} -> {link.bind})"
        for end in (link.connect, link.bind):
            if end not in names:
                raise TopologyError(f"{where}: no node named {end!r}")
        if link.connect == link.bind:
            raise TopologyError(f"{where}: a node cannot connect to itself")
        a, b = names[link.connect], names[link.bind]
        if not is_valid_pair(a.type, b.type):
            raise TopologyError(f"{where}: a {a.type} cannot talk to a {b.type} (23/ZMTP's table of socket "
                                f"pairs); a {a.type} talks to {_peers_of(a.type)}")
        pair = frozenset((link.connect, link.bind))
        if pair in seen:
            raise TopologyError(f"{where}: duplicates link {seen[pair]} (one connection per pair of nodes)")
        seen[pair] = i
    for node in topo.nodes:
        if node.external:
            ends = [lk for lk in topo.links if node.name in (lk.connect, lk.bind)]
            if len(ends) != 1:
                raise TopologyError(f"node {node.name!r}: an external node has one link (its endpoint is that "
                                    f"link's; this one has {len(ends)})")
            other = names[ends[0].bind if ends[0].connect == node.name else ends[0].connect]
            if other.external:
                raise TopologyError(f"node {node.name!r}: two external nodes cannot be linked (the lab runs "
                                    "neither end)")
            if "PAIR" in (other.type, node.type) and node.max_connections > 1:
                raise TopologyError(f"node {node.name!r}: a PAIR takes one connection: max_connections is 1")
            if ends[0].at:
                raise TopologyError(f"node {node.name!r}: an external node connects when its program does (no 'at')")
        if node.mechanism != "NULL":
            binds = topo.binds(node.name)
            connects = any(lk.connect == node.name for lk in topo.links)
            if binds and connects:
                raise TopologyError(f"node {node.name!r}: a {node.mechanism} node is a server where it binds and a "
                                    "client where it connects; give it one role (or use NULL)")
    proxied: set[str] = set()
    for i, proxy in enumerate(topo.proxies):
        where = f"proxy {i} ({proxy.frontend} <-> {proxy.backend})"
        for end in (proxy.frontend, proxy.backend):
            if end not in names:
                raise TopologyError(f"{where}: no node named {end!r}")
            if end in proxied:
                raise TopologyError(f"{where}: node {end!r} is already in a proxy")
            if names[end].type in NO_PROXY_TYPES:
                raise TopologyError(f"{where}: a {names[end].type} cannot be one side of a proxy (its strict "
                                    "send/receive order); use ROUTER and DEALER, as zmq_proxy's brokers do")
            if names[end].echo:
                raise TopologyError(f"{where}: node {end!r} echoes; a proxy's node has no application of its own")
            if names[end].external:
                raise TopologyError(f"{where}: node {end!r} is external; a proxy's ends are the lab's sockets")
        if proxy.frontend == proxy.backend:
            raise TopologyError(f"{where}: a proxy joins two different nodes")
        proxied.update((proxy.frontend, proxy.backend))
    for i, send in enumerate(topo.script):
        if send.sender not in names:
            raise TopologyError(f"script send {i}: no node named {send.sender!r}")
        kind = names[send.sender].type
        if kind in ("SUB", "PULL"):
            raise TopologyError(f"script send {i}: a {kind} ({send.sender}) cannot send")
        if send.sender in proxied:
            raise TopologyError(f"script send {i}: {send.sender!r} is driven by a proxy")
        if names[send.sender].external:
            raise TopologyError(f"script send {i}: {send.sender!r} is external; its own program sends")
        if send.after is not None:
            unknown = [b for b in send.after.by if b not in names]
            if unknown:
                raise TopologyError(f"script send {i}: after: no node named {unknown[0]!r}")
    for i, sub in enumerate(topo.subscriptions):
        if sub.node not in names:
            raise TopologyError(f"subscription {i}: no node named {sub.node!r}")
        if names[sub.node].type not in SUBSCRIBERS:
            raise TopologyError(f"subscription {i}: only SUB and XSUB nodes subscribe ({sub.node} is a "
                                f"{names[sub.node].type})")
    return topo


def two_peer(server: dict[str, Any] | Node, client: dict[str, Any] | Node) -> Topology:
    """The two-peer body as a topology: nodes "server" and "client", one link, the client connecting.
    (The two-peer SUB subscribes to its one `subscribe` text: empty is the empty prefix, every message; None
    or absent, nothing at all, as a libzmq SUB that never subscribed.) Unlike a topology,
    the two peers may be a pair 23/ZMTP refuses: the handshake then shows the refusal. A side given as a
    `Node` (`web.models.PeerConfig.node`) is taken as it is; a dict's keys other than a node's are left out."""
    nodes = []
    for i, (name, side) in enumerate((("server", server), ("client", client))):
        if isinstance(side, Node):
            nodes.append(side)
            continue
        raw = {k: v for k, v in side.items() if k in NODE_KEYS}
        raw["name"] = name
        nodes.append(_node(i, raw))
    return Topology(tuple(nodes), (Link(connect="client", bind="server"),))


# ---------------------------------------------------------------- parsing one piece


def _obj(where: str, raw: Any, keys: frozenset[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise TopologyError(f"{where} is an object")
    extra = sorted(k for k in raw if k not in keys)
    if extra:
        raise TopologyError(f"{where}: unknown key {extra[0]!r}; it takes {', '.join(sorted(keys))}")
    return raw


def _name(where: str, value: Any) -> str:
    try:
        return check_name(value)
    except ValueError as exc:
        raise TopologyError(f"{where}: {exc}") from None


def _number(where: str, value: Any, lo: float, hi: float) -> float:
    try:
        return check_number(where, value, lo, hi)
    except ValueError as exc:
        raise TopologyError(str(exc)) from None


def _text(where: str, value: Any, *, limit: int) -> str:
    try:
        return check_text(where, value, limit=limit)
    except ValueError as exc:
        raise TopologyError(str(exc)) from None


def _node(i: int, raw: Any) -> Node:
    """A node of the topology (a `Node` given is taken as it is: its model checked it)."""
    if isinstance(raw, Node):
        return raw
    if not isinstance(raw, dict):
        raise TopologyError(f"node {i} is an object")
    try:
        return Node.model_validate(raw)
    except ValidationError as exc:
        raise TopologyError(node_problem(f"node {i}", raw, exc)) from None


def _link(i: int, raw: Any) -> Link:
    where = f"link {i}"
    raw = _obj(where, raw, LINK_KEYS)
    at = _number(f"{where}: at", raw["at"], 0.0, MAX_AT) if raw.get("at") is not None else 0.0
    close_at = _number(f"{where}: close_at", raw["close_at"], at, MAX_AT) if raw.get("close_at") is not None else None
    return Link(connect=_name(f"{where}: connect", raw.get("connect")),
                bind=_name(f"{where}: bind", raw.get("bind")), at=at, close_at=close_at)


def _subscription(i: int, raw: Any) -> Subscription:
    where = f"subscription {i}"
    raw = _obj(where, raw, SUBSCRIPTION_KEYS)
    cancel = raw.get("cancel", False)
    if not isinstance(cancel, bool):
        raise TopologyError(f"{where}: cancel is true or false")
    return Subscription(node=_name(f"{where}: node", raw.get("node")),
                        topic=_text(f"{where}: topic", raw.get("topic", ""), limit=MAX_TEXT),
                        at=_number(f"{where}: at", raw.get("at"), 0.0, MAX_AT), subscribe=not cancel)


def _proxy(i: int, raw: Any) -> Proxy:
    where = f"proxy {i}"
    raw = _obj(where, raw, PROXY_KEYS)
    return Proxy(frontend=_name(f"{where}: frontend", raw.get("frontend")),
                 backend=_name(f"{where}: backend", raw.get("backend")))


def _send(i: int, raw: Any) -> ScriptSend:
    where = f"script send {i}"
    raw = _obj(where, raw, SEND_KEYS)
    frames = raw.get("frames")
    if not isinstance(frames, list) or not 1 <= len(frames) <= MAX_FRAMES:
        raise TopologyError(f"{where}: frames is a list of 1 to {MAX_FRAMES} texts")
    as_hex = raw.get("hex", False)
    if not isinstance(as_hex, bool):
        raise TopologyError(f"{where}: hex is true or false")
    texts = tuple(_text(f"{where}: a frame", f, limit=MAX_FRAME_TEXT) for f in frames)
    if as_hex:
        for f in texts:
            try:
                parse_hex(f)
            except ValueError:
                raise TopologyError(f"{where}: frame {f[:20]!r} is not hex") from None
    at = _number(f"{where}: at", raw["at"], 0.0, MAX_AT) if raw.get("at") is not None else 0.0
    after = _after(f"{where}: after", raw["after"]) if raw.get("after") is not None else None
    return ScriptSend(sender=_name(f"{where}: from", raw.get("from")), frames=texts, at=at, hex=as_hex, after=after)


def _after(where: str, raw: Any) -> After:
    raw = _obj(where, raw, AFTER_KEYS)
    by, read = raw.get("by"), raw.get("read")
    if not isinstance(by, list) or not 1 <= len(by) <= MAX_NODES:
        raise TopologyError(f"{where}: by is a list of 1 to {MAX_NODES} node names")
    if not isinstance(read, list) or not 1 <= len(read) <= MAX_FRAMES + 1:
        raise TopologyError(f"{where}: read is a list of 1 to {MAX_FRAMES + 1} hex frames")
    frames = tuple(_text(f"{where}: a frame", f, limit=MAX_FRAME_TEXT) for f in read)
    for f in frames:
        try:
            parse_hex(f)
        except ValueError:
            raise TopologyError(f"{where}: frame {f[:20]!r} is not hex") from None
    n = raw.get("n", 1)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1_000_000:
        raise TopologyError(f"{where}: n is a whole number from 1")
    think = _number(f"{where}: think", raw.get("think", 0.0), 0.0, MAX_AT)
    return After(tuple(_name(f"{where}: by", b) for b in by), frames, n, think)


def _peers_of(kind: str) -> str:
    from ..engine.constants import VALID_PEERS

    return " or ".join(sorted(VALID_PEERS[kind]))


# ---------------------------------------------------------------- presets


@dataclass(frozen=True)
class Preset:
    """A ready topology with its script, for the menu."""

    id: str
    title: str
    description: str
    topology: Topology

    def to_dict(self) -> dict[str, Any]:
        topo = self.topology.to_dict()
        script = topo.pop("script", [])
        return {"id": self.id, "title": self.title, "description": self.description, "topology": topo,
                "script": script}


def _preset(pid: str, title: str, description: str, topo: dict[str, Any]) -> Preset:
    return Preset(pid, title, description, Topology.from_dict(topo))


def _sends(sender: str, texts: list[str], start: float = 0.05, every: float = 0.05) -> list[dict[str, Any]]:
    return [{"from": sender, "frames": [t], "at": round(start + i * every, 6)} for i, t in enumerate(texts)]


# The HWM presets' messages and buffers: small messages would sit in the kernel's socket buffers (and the
# taps') in real mode, and no HWM would ever be reached there (the simulation's TCP window is 32 octets).
BUFFER = 1024  # octets asked for ZMQ_SNDBUF/ZMQ_RCVBUF (Linux's minimum is above it: the smallest there is)
PADDING = "." * 4000  # 4 KB a message: more than a minimal receive buffer holds

PRESETS: dict[str, Preset] = {p.id: p for p in (
    _preset("load-balancing", "Load balancing: PUSH to 3 PULL",
            "A ventilator PUSHes six tasks to three workers: round robin gives each worker every third task.",
            {"nodes": [{"name": "vent", "type": "PUSH", "x": 0.15, "y": 0.5},
                       *({"name": f"w{i}", "type": "PULL", "x": 0.8, "y": 0.2 + 0.3 * (i - 1)} for i in (1, 2, 3))],
             "links": [{"connect": f"w{i}", "bind": "vent"} for i in (1, 2, 3)],
             "script": _sends("vent", [f"task {i}" for i in range(1, 7)])}),
    _preset("router-dealers", "Routing by identity: ROUTER and 3 DEALER",
            "Three DEALERs with identities d1, d2, d3 say hello; the ROUTER answers each by its identity frame, "
            "and a reply to the unknown identity c9 is dropped (ROUTER_MANDATORY off).",
            {"nodes": [{"name": "router", "type": "ROUTER", "x": 0.2, "y": 0.5},
                       *({"name": f"d{i}", "type": "DEALER", "identity": f"d{i}", "x": 0.8,
                          "y": 0.2 + 0.3 * (i - 1)} for i in (1, 2, 3))],
             "links": [{"connect": f"d{i}", "bind": "router"} for i in (1, 2, 3)],
             "script": [*({"from": f"d{i}", "frames": [f"hello from d{i}"], "at": 0.05 * i} for i in (1, 2, 3)),
                        {"from": "router", "frames": ["d2", "for d2 only"], "at": 0.3},
                        {"from": "router", "frames": ["d1", "for d1 only"], "at": 0.35},
                        {"from": "router", "frames": ["c9", "for nobody"], "at": 0.4}]}),
    _preset("pub-sub-topics", "Publish-subscribe: PUB to 3 SUB with different subscriptions",
            "A PUB sends weather and sport updates; each SUB subscribed to a different prefix gets only what "
            "matches it (the PUB filters by prefix, per pipe).",
            {"nodes": [{"name": "pub", "type": "PUB", "x": 0.15, "y": 0.5},
                       {"name": "sub-1", "type": "SUB", "subscribe": ["weather."], "x": 0.8, "y": 0.2},
                       {"name": "sub-2", "type": "SUB", "subscribe": ["sport."], "x": 0.8, "y": 0.5},
                       {"name": "sub-3", "type": "SUB", "subscribe": [""], "x": 0.8, "y": 0.8}],
             "links": [{"connect": f"sub-{i}", "bind": "pub"} for i in (1, 2, 3)],
             "script": _sends("pub", ["weather.paris 12C", "sport.07 2-1", "weather.oslo -3C", "news.flash"],
                              start=0.1)}),
    _preset("extended-reqrep", "Extended request-reply: 3 REQ, a ROUTER/DEALER broker, 2 REP",
            "Three clients ask through a broker (a ROUTER frontend and a DEALER backend joined by zmq_proxy) and "
            "two echoing workers answer: the ROUTER adds each client's identity frame, the REP strips the "
            "envelope and puts it back on the reply, and the broker routes the reply home.",
            {"nodes": [*({"name": f"c{i}", "type": "REQ", "identity": f"c{i}", "x": 0.1, "y": 0.2 + 0.3 * (i - 1)}
                         for i in (1, 2, 3)),
                       {"name": "brk-front", "type": "ROUTER", "x": 0.42, "y": 0.5},
                       {"name": "brk-back", "type": "DEALER", "x": 0.58, "y": 0.5},
                       *({"name": f"w{i}", "type": "REP", "echo": True, "x": 0.9, "y": 0.3 + 0.4 * (i - 1)}
                         for i in (1, 2))],
             "links": [*({"connect": f"c{i}", "bind": "brk-front"} for i in (1, 2, 3)),
                       *({"connect": f"w{i}", "bind": "brk-back"} for i in (1, 2))],
             "proxies": [{"frontend": "brk-front", "backend": "brk-back"}],
             "script": [{"from": f"c{i}", "frames": [f"request from c{i}"], "at": 0.05 * i} for i in (1, 2, 3)]}),
    _preset("slow-joiner", "The slow joiner: a SUB that connects late",
            "The PUB starts publishing at once; sub-early is connected and gets everything, sub-late connects "
            "at about 0.2 s and never sees what was published before its subscription reached the PUB (update 4 "
            "goes out while its connection is up but its subscription is still on the way).",
            {"nodes": [{"name": "pub", "type": "PUB", "x": 0.15, "y": 0.5},
                       {"name": "sub-early", "type": "SUB", "subscribe": [""], "x": 0.8, "y": 0.3},
                       {"name": "sub-late", "type": "SUB", "subscribe": [""], "x": 0.8, "y": 0.7}],
             "links": [{"connect": "sub-early", "bind": "pub"},
                       {"connect": "sub-late", "bind": "pub", "at": 0.1955}],  # (its subscription arrives at 0.2005)
             "script": _sends("pub", [f"update {i}" for i in range(1, 9)], start=0.05, every=0.05)}),
    _preset("push-backpressure", "Back-pressure: PUSH to a slow PULL with a small HWM",
            "The worker reads one task every 0.5 s and both HWMs are 2: the queues fill, the PUSH's send "
            "blocks (it never drops), and each read lets one more task go. Each task carries 4 KB and the "
            "sockets' kernel buffers are the smallest there are (1 KiB asked; Linux gives 2.25 KiB to receive, "
            "4.5 KiB to send): in real mode the kernel, not only the HWMs, holds messages, and small ones "
            "would fill no queue.",
            {"nodes": [{"name": "vent", "type": "PUSH", "sndhwm": 2, "sndbuf": BUFFER, "x": 0.2, "y": 0.5},
                       {"name": "worker", "type": "PULL", "rcvhwm": 2, "rcvbuf": BUFFER, "recv": {"every": 0.5},
                        "x": 0.8, "y": 0.5}],
             "links": [{"connect": "worker", "bind": "vent"}],
             "script": _sends("vent", [f"task {i} {PADDING}" for i in range(1, 17)], start=0.05, every=0.02)}),
    _preset("pub-drops", "Drops: PUB to a slow SUB with a small HWM",
            "A fast SUB reads everything; a slow SUB reads one update every 0.5 s with HWMs of 2: once its "
            "pipe is full the PUB drops what it would send it (a PUB never blocks). Each update carries 4 KB "
            "and the PUB's and the slow SUB's kernel buffers are the smallest there are: in real mode the "
            "kernel holds a few updates beyond the HWMs, and small ones would fill no queue.",
            {"nodes": [{"name": "pub", "type": "PUB", "sndhwm": 2, "sndbuf": BUFFER, "x": 0.15, "y": 0.5},
                       {"name": "sub-fast", "type": "SUB", "subscribe": [""], "x": 0.8, "y": 0.3},
                       {"name": "sub-slow", "type": "SUB", "subscribe": [""], "rcvhwm": 2, "rcvbuf": BUFFER,
                        "recv": {"every": 0.5}, "x": 0.8, "y": 0.7}],
             "links": [{"connect": "sub-fast", "bind": "pub"}, {"connect": "sub-slow", "bind": "pub"}],
             "script": _sends("pub", [f"update {i} {PADDING}" for i in range(1, 25)], start=0.05, every=0.02)}),
)}


def preset(pid: str) -> Preset:
    """The preset with this id; `TopologyError` naming the ids otherwise."""
    try:
        return PRESETS[pid]
    except KeyError:
        raise TopologyError(f"no preset {pid!r}; one of {', '.join(PRESETS)}") from None


__all__ = [
    "MAX_LINKS",
    "MAX_NODES",
    "MAX_PROXIES",
    "MAX_SCRIPT",
    "PRESETS",
    "After",
    "Link",
    "Node",
    "Preset",
    "Proxy",
    "ScriptSend",
    "Subscription",
    "Topology",
    "TopologyError",
    "preset",
    "two_peer",
    "validate",
]
