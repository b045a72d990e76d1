"""What a capture says, connection by connection: gathered from its events in one pass.

`Collector.add()` takes what `CaptureDissector.feed_runs()` gives (event dicts without fields, and
`SourcedRun`s of ordinary frames), in capture order. It keeps per connection what the analyses
need (socket types, identities, handshake times, heartbeats, subscriptions, the dissector's own expert
findings, CURVE handshake commands, when each side last sent anything) and hands application messages to
the `on_message` handlers that want them, so flows and per-socket counts are followed as the capture
streams by. A run of messages no handler wants is counted without being taken apart: the bulk of a big
capture costs a few operations per run.

Subscriptions are not messages: SUBSCRIBE/CANCEL commands, and the single-frame messages beginning with
%x01 (subscribe) or %x00 (cancel) that a SUB sends to a ZMTP 3.0 peer and an XSUB sends on any version,
are kept as subscriptions and counted as nothing else.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..capture.dissect import SourcedRun
from ..peers.sockets import SUBSCRIBERS

DIRS = ("c2s", "s2c")
OTHER = {"c2s": "s2c", "s2c": "c2s"}
TRAFFIC_KEPT = 256  # times of each direction's latest elements (when a side last sent anything before a close)
BOXES_KEPT = 20_000  # CURVE MESSAGE boxes kept per connection (what a replay without the keys infers from)
BOX_OVERHEAD = 17  # octets of a MESSAGE box besides the frame it carries: its MAC (16) and the frame's flags (1)

# The dissector's own findings that the diagnosis builds on (engine/dissector.py).
KEPT_EXPERT_RULES = frozenset({"mechanism", "socket-type", "handshake", "unreadable", "greeting"})
ZERO_WINDOW = "tcp.analysis.zero_window"  # the reassembler's note (capture/dissect.py), which back-pressure cites


@dataclass(frozen=True, slots=True)
class EventRef:
    """Where an event sits: enough for a reader (or the viewer) to find it."""

    conn: str
    dir: str
    offset: int
    kind: str
    packets: tuple[int, ...]
    ts: float
    index: int | None = None  # its position in its connection, where the source numbers events (the web store)

    def to_dict(self) -> dict[str, Any]:
        out = {"conn": self.conn, "dir": self.dir, "offset": self.offset, "kind": self.kind,
               "packets": list(self.packets), "ts": self.ts}
        if self.index is not None:
            out["index"] = self.index
        return out


def ref(event: dict[str, Any]) -> EventRef:
    """The reference of an event dict."""
    return EventRef(event["conn"], event["dir"], event["offset"], event["kind"], tuple(event.get("packets") or ()),
                    event["ts"], event.get("index"))


@dataclass(slots=True)
class Command:
    """A command worth keeping: PING, PONG, ERROR, CURVE's HELLO and WELCOME."""

    ref: EventRef
    name: str
    details: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Subscription:
    """A subscribe or cancel, as a SUBSCRIBE/CANCEL command or a %x01/%x00 message (`form`)."""

    ref: EventRef
    what: str  # subscribe | cancel
    topic: bytes
    form: str  # command | message


@dataclass(frozen=True, slots=True)
class Box:
    """A CURVE MESSAGE box as the capture shows it without the keys: its direction, time, packet and how many
    octets of frame it carries (the frame's flags are inside the box)."""

    dir: str
    ts: float
    packet: int
    size: int


Address = tuple[str, int]
Endpoints = Callable[[str], tuple[Address, Address] | None]  # conn -> (client, server)


@dataclass(slots=True)
class ConnFacts:
    """One TCP connection as its events describe it."""

    conn: str
    client: Address | None = None
    server: Address | None = None
    versions: dict[str, str] = field(default_factory=dict)
    mechanism: str | None = None
    socket_types: dict[str, str] = field(default_factory=dict)
    identities: dict[str, str] = field(default_factory=dict)  # as the event contract shows them
    greeted: dict[str, float] = field(default_factory=dict)  # when each side's greeting was complete
    ready: dict[str, float] = field(default_factory=dict)  # when each side's handshake was done
    metadata: dict[str, EventRef] = field(default_factory=dict)  # each side's READY (or INITIATE)
    messages: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})
    encrypted: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})  # CURVE MESSAGE boxes
    boxes: list[Box] = field(default_factory=list)  # the first BOXES_KEPT of them, in order
    first_message: dict[str, float] = field(default_factory=dict)
    last_event: dict[str, float] = field(default_factory=dict)
    traffic: dict[str, deque[float]] = field(
        default_factory=lambda: {d: deque(maxlen=TRAFFIC_KEPT) for d in DIRS})
    commands: list[Command] = field(default_factory=list)
    experts: list[tuple[str, str, str, EventRef]] = field(default_factory=list)  # rule, severity, text, where
    subscriptions: list[Subscription] = field(default_factory=list)
    gaps: dict[str, list[int]] = field(default_factory=dict)  # direction -> [gaps, octets] the capture lacks
    zero_windows: dict[int, EventRef] = field(default_factory=dict)  # the zero-window notes, by their packet

    def sender(self, direction: str) -> str | None:
        """The socket type that sends in `direction`."""
        return self.socket_types.get(direction)

    def ends(self, direction: str) -> tuple[Address, Address] | None:
        """(sender, receiver) endpoints of `direction`, when the connection's endpoints are known."""
        if self.client is None or self.server is None:
            return None
        return (self.client, self.server) if direction == "c2s" else (self.server, self.client)

    def handshake_done(self) -> float | None:
        """When both sides were done with the handshake, if they were."""
        if all(d in self.ready for d in DIRS):
            return max(self.ready.values())
        return None

    def last_traffic(self, direction: str, before: float | None = None) -> float | None:
        """When `direction`'s sender last sent anything (a greeting, command or frame), at or before `before`."""
        times = self.traffic[direction]
        if before is None:
            return times[-1] if times else None
        i = bisect_right(times, before)
        return times[i - 1] if i else None


class MessageHandler(Protocol):
    """Follows messages as the capture streams by. `wants(facts, dir)` says whether it needs the messages of one
    direction (asked again whenever a handshake completes somewhere: a new socket may change the answer);
    `__call__(facts, dir, messages, ts, packets)` gets them in batches: `messages` are (k, frame bodies), the
    message's time is ts[k] and the frames that carried it packets[k]; `facts.messages[dir]` is, during the
    call, the number of messages of that direction before the batch."""

    def wants(self, facts: ConnFacts, d: str) -> bool: ...

    def __call__(self, facts: ConnFacts, d: str, messages: list[tuple[int, list[bytes]]], ts: Sequence[float],
                 packets: Sequence[list[int]]) -> None: ...


SubscriptionHandler = Callable[[ConnFacts, Subscription], None]
# (facts, dir, how many messages, when the batch began): every batch, untaken apart
CountHandler = Callable[[ConnFacts, str, int, float], None]
ReadyHandler = Callable[[ConnFacts], None]  # a side of the connection finished its handshake: its socket is known


class Collector:
    """Gathers `ConnFacts` from one capture's events; hands batches of messages to the `on_message` handlers
    that want them, each batch's count to the `on_count` handlers and each subscription to the
    `on_subscription` handlers as they come. `endpoints(conn)` gives a connection's (client, server)
    addresses."""

    def __init__(self, endpoints: Endpoints, on_message: list[MessageHandler] | None = None,
                 on_subscription: list[SubscriptionHandler] | None = None,
                 on_count: list[CountHandler] | None = None, on_ready: list[ReadyHandler] | None = None) -> None:
        self.endpoints = endpoints
        self.conns: dict[str, ConnFacts] = {}
        self.on_message = on_message or []
        self.on_subscription = on_subscription or []
        self.on_count = on_count or []
        self.on_ready = on_ready or []
        self._generation = 0  # bumped at each handshake: what the handlers want may change
        self._wanted: dict[tuple[str, str], tuple[int, list[MessageHandler]]] = {}

    def facts(self, conn: str) -> ConnFacts:
        found = self.conns.get(conn)
        if found is None:
            found = self.conns[conn] = ConnFacts(conn)
            ends = self.endpoints(conn)
            if ends is not None:
                found.client, found.server = ends
        return found

    def _ready(self, facts: ConnFacts, d: str, ts: float) -> None:
        facts.ready[d] = ts
        self._generation += 1
        for handle in self.on_ready:
            handle(facts)

    def _handlers(self, facts: ConnFacts, d: str) -> list[MessageHandler]:
        key = (facts.conn, d)
        cached = self._wanted.get(key)
        if cached is not None and cached[0] == self._generation:
            return cached[1]
        wanted = [h for h in self.on_message if h.wants(facts, d)]
        self._wanted[key] = (self._generation, wanted)
        return wanted

    def add(self, item: dict[str, Any] | SourcedRun) -> None:
        """Takes one item of `CaptureDissector.feed_runs()`."""
        if isinstance(item, SourcedRun):
            self._run(item)
        else:
            self._event(item)

    def _run(self, item: SourcedRun) -> None:
        facts = self.facts(item.conn)
        d = item.dir
        ts = item.ts
        traffic = facts.traffic[d]
        traffic.append(ts[0])
        if ts[-1] != ts[0]:
            traffic.append(ts[-1])
        facts.last_event[d] = ts[-1]
        handlers = self._handlers(facts, d)
        run = item.run
        if not handlers and facts.socket_types.get(d) not in SUBSCRIBERS and d in facts.first_message \
                and run.starts is not None:
            n = run.count - len(run.starts)  # (a run's events are its frames and its messages)
            for count in self.on_count:
                count(facts, d, n, ts[0])
            facts.messages[d] += n
            return
        messages = run.messages()
        if facts.socket_types.get(d) in SUBSCRIBERS:
            messages = self._without_subscriptions(facts, item, messages)
        if not messages:
            return
        facts.first_message.setdefault(d, ts[messages[0][0]])
        for handle in handlers:
            handle(facts, d, messages, ts, item.packets)
        for count in self.on_count:
            count(facts, d, len(messages), ts[messages[0][0]])
        facts.messages[d] += len(messages)

    def _without_subscriptions(self, facts: ConnFacts, item: SourcedRun,
                               messages: list[tuple[int, list[bytes]]]) -> list[tuple[int, list[bytes]]]:
        kept = []
        offsets: dict[int, int] | None = None
        for k, frames in messages:
            if len(frames) == 1 and frames[0][:1] in (b"\x00", b"\x01"):
                if offsets is None:
                    offsets = {i: offset for i, offset, _length in item.run.spans()}
                where = EventRef(facts.conn, item.dir, offsets[k], "message", tuple(item.packets[k]), item.ts[k])
                self._subscribed(facts, Subscription(where, "subscribe" if frames[0][0] else "cancel", frames[0][1:],
                                                     "message"))
            else:
                kept.append((k, frames))
        return kept

    def _event(self, event: dict[str, Any]) -> None:
        facts = self.facts(event["conn"])
        d = event["dir"]
        kind = event["kind"]
        if kind in ("frame", "greeting", "command"):
            facts.last_event[d] = event["ts"]
            facts.traffic[d].append(event["ts"])
        if kind == "message":
            frames = [bytes.fromhex(f) for f in event["frames"]]
            if event.get("decrypted"):  # (a key log's: the MESSAGE box it came from was counted)
                for handle in self._handlers(facts, d):
                    handle(facts, d, [(0, frames)], [event["ts"]], [event.get("packets") or []])
                return
            if facts.socket_types.get(d) in SUBSCRIBERS and len(frames) == 1 and frames[0][:1] in (b"\x00", b"\x01"):
                self._subscribed(facts, Subscription(ref(event), "subscribe" if frames[0][0] else "cancel",
                                                     frames[0][1:], "message"))
                return
            facts.first_message.setdefault(d, event["ts"])
            for handle in self._handlers(facts, d):
                handle(facts, d, [(0, frames)], [event["ts"]], [event.get("packets") or []])
            for count in self.on_count:
                count(facts, d, 1, event["ts"])
            facts.messages[d] += 1
        elif kind == "greeting":
            facts.versions[d] = event["version"]
            facts.greeted[d] = event["ts"]
            facts.mechanism = facts.mechanism or event.get("mechanism")
            if event.get("socket_type"):
                facts.socket_types[d] = event["socket_type"]
            if event.get("identity") is not None:
                facts.identities[d] = event["identity"]
            if event["version"] in ("1.0", "2.0"):
                self._ready(facts, d, event["ts"])
        elif kind == "command":
            self._command(facts, event, d)
        elif kind == "expert" and event["rule"] in KEPT_EXPERT_RULES:
            facts.experts.append((event["rule"], event["severity"], event["text"], ref(event)))
        elif kind == "expert" and event["rule"] == ZERO_WINDOW and len(facts.zero_windows) < 1024:
            where = ref(event)
            facts.zero_windows.setdefault(where.packets[0] if where.packets else -1, where)
        elif kind == "gap":
            gaps = facts.gaps.setdefault(d, [0, 0])
            gaps[0] += 1
            gaps[1] += event["length"]

    def _command(self, facts: ConnFacts, event: dict[str, Any], d: str) -> None:
        name = event["name"]
        if name == "MESSAGE":
            if event.get("decrypted"):
                return
            facts.encrypted[d] += 1
            if len(facts.boxes) < BOXES_KEPT:
                packets = event.get("packets") or [-1]
                facts.boxes.append(Box(d, event["ts"], packets[0], max(event.get("box_size", 0) - BOX_OVERHEAD, 0)))
            for count in self.on_count:
                count(facts, d, 1, event["ts"])
            facts.messages[d] += 1
            facts.first_message.setdefault(d, event["ts"])
        elif name in ("READY", "INITIATE"):
            props = {k.lower(): v for k, v in (event.get("properties") or {}).items()}
            if "socket-type" in props:
                facts.socket_types[d] = str(props["socket-type"]).upper()
            if "identity" in props:
                facts.identities[d] = props["identity"]
            if (name == "READY" or facts.mechanism in ("PLAIN", "CURVE")) and d not in facts.ready:
                facts.metadata.setdefault(d, ref(event))
                self._ready(facts, d, event["ts"])
        elif name in ("PING", "PONG", "ERROR", "HELLO", "WELCOME"):
            details = {k: event[k] for k in ("ttl", "context", "reason", "hex") if k in event}
            facts.commands.append(Command(ref(event), name, details))
        elif name in ("SUBSCRIBE", "CANCEL"):
            self._subscribed(facts, Subscription(ref(event), name.lower(), bytes.fromhex(event.get("topic") or ""),
                                                 "command"))

    def _subscribed(self, facts: ConnFacts, sub: Subscription) -> None:
        facts.subscriptions.append(sub)
        for handle in self.on_subscription:
            handle(facts, sub)
