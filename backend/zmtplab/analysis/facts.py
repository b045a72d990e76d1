"""What a capture says, connection by connection: gathered from its events in one pass.

`Collector.add()` takes what `CaptureDissector.feed_runs()` gives (event dicts without fields, and
`SourcedRun`s of ordinary frames), in capture order. It keeps per connection what the analyses
need (socket types, identities, handshake times, PINGs, subscriptions, the dissector's own expert
findings, CURVE handshake commands) and hands every application message to the `on_message`
callbacks, so flows and per-socket counts are followed as the capture streams by.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..capture.dissect import SourcedRun

DIRS = ("c2s", "s2c")
OTHER = {"c2s": "s2c", "s2c": "c2s"}

# The dissector's own findings that the diagnosis builds on (engine/dissector.py).
ZERO_WINDOW = "tcp.analysis.zero_window"  # the reassembler's note (capture/dissect.py)
KEPT_EXPERT_RULES = frozenset({"mechanism", "socket-type", "handshake", "unreadable", ZERO_WINDOW})


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
    """A command worth keeping: PING, ERROR, SUBSCRIBE/CANCEL, CURVE's HELLO and WELCOME."""

    ref: EventRef
    name: str
    details: dict[str, Any]


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
    ready: dict[str, float] = field(default_factory=dict)  # when each side's handshake was done
    metadata: dict[str, EventRef] = field(default_factory=dict)  # each side's READY (or INITIATE)
    messages: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})
    first_message: dict[str, float] = field(default_factory=dict)
    last_event: dict[str, float] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)
    experts: list[tuple[str, str, str, EventRef]] = field(default_factory=list)  # rule, severity, text, where
    subscriptions: list[tuple[EventRef, str, bytes]] = field(default_factory=list)  # where, subscribe|cancel, topic
    # TCP zero windows: [where (the receiver's segment), when the sender's data went through again or None]
    stalls: list[list[Any]] = field(default_factory=list)
    open_stalls: dict[str, list[Any]] = field(default_factory=dict)  # sending direction -> its open stall

    def sender(self, direction: str) -> str | None:
        """The socket type that sends in `direction`."""
        return self.socket_types.get(direction)

    def ends(self, direction: str) -> tuple[Address, Address] | None:
        """(sender, receiver) endpoints of `direction`, when the connection's endpoints are known."""
        if self.client is None or self.server is None:
            return None
        return (self.client, self.server) if direction == "c2s" else (self.server, self.client)

    def data_moved(self, direction: str, ts: float) -> None:
        """Data went through in `direction`: a zero window that held it back is over."""
        stall = self.open_stalls.pop(direction, None)
        if stall is not None:
            stall[1] = ts

    def handshake_done(self) -> float | None:
        """When both sides were done with the handshake, if they were."""
        if all(d in self.ready for d in DIRS):
            return max(self.ready.values())
        return None


# handler(facts, dir, messages, ts, packets): `messages` are (k, frame bodies), the message's time is ts[k] and
# the frames that carried it packets[k]. Messages come in batches (a run of them), so a handler that has nothing to
# do for a connection pays once per batch, not per message.
MessageHandler = Callable[[ConnFacts, str, list[tuple[int, list[bytes]]], Sequence[float], Sequence[list[int]]], None]
SubscriptionHandler = Callable[[ConnFacts, EventRef, str, bytes], None]


class Collector:
    """Gathers `ConnFacts` from one capture's events; calls each `on_message` handler with every batch of
    messages and each `on_subscription(facts, where, "subscribe"|"cancel", topic)` as they come.
    `endpoints(conn)` gives a connection's (client, server) addresses."""

    def __init__(self, endpoints: Endpoints, on_message: list[MessageHandler] | None = None,
                 on_subscription: list[SubscriptionHandler] | None = None) -> None:
        self.endpoints = endpoints
        self.conns: dict[str, ConnFacts] = {}
        self.on_message = on_message or []
        self.on_subscription = on_subscription or []

    def facts(self, conn: str) -> ConnFacts:
        found = self.conns.get(conn)
        if found is None:
            found = self.conns[conn] = ConnFacts(conn)
            ends = self.endpoints(conn)
            if ends is not None:
                found.client, found.server = ends
        return found

    def add(self, item: dict[str, Any] | SourcedRun) -> None:
        """Takes one item of `CaptureDissector.feed_runs()`."""
        if isinstance(item, SourcedRun):
            facts = self.facts(item.conn)
            d = item.dir
            handlers = self.on_message
            messages = item.run.messages()
            facts.messages[d] += len(messages)
            if facts.open_stalls:
                facts.data_moved(d, item.ts[0])
            if messages:
                if d not in facts.first_message:
                    facts.first_message[d] = item.ts[messages[0][0]]
                facts.last_event[d] = item.ts[messages[-1][0]]
                for handle in handlers:
                    handle(facts, d, messages, item.ts, item.packets)
            return
        self._event(item)

    def _event(self, event: dict[str, Any]) -> None:
        facts = self.facts(event["conn"])
        d = event["dir"]
        kind = event["kind"]
        if kind in ("frame", "greeting", "command"):
            facts.last_event[d] = event["ts"]
            if facts.open_stalls:
                facts.data_moved(d, event["ts"])
        if kind == "message":
            frames = [bytes.fromhex(f) for f in event["frames"]]
            facts.messages[d] += 1
            facts.first_message.setdefault(d, event["ts"])
            self._subscription_message(facts, event, d, frames)
            for handle in self.on_message:
                handle(facts, d, [(0, frames)], [event["ts"]], [event.get("packets") or []])
        elif kind == "greeting":
            facts.versions[d] = event["version"]
            facts.mechanism = facts.mechanism or event.get("mechanism")
            if event.get("socket_type"):
                facts.socket_types[d] = event["socket_type"]
            if event.get("identity") is not None:
                facts.identities[d] = event["identity"]
            if event["version"] in ("1.0", "2.0"):
                facts.ready[d] = event["ts"]
        elif kind == "command":
            self._command(facts, event, d)
        elif kind == "expert" and event["rule"] in KEPT_EXPERT_RULES:
            where = ref(event)
            facts.experts.append((event["rule"], event["severity"], event["text"], where))
            if event["rule"] == ZERO_WINDOW and OTHER[d] not in facts.open_stalls:
                stall = [where, None]
                facts.stalls.append(stall)
                facts.open_stalls[OTHER[d]] = stall

    def _command(self, facts: ConnFacts, event: dict[str, Any], d: str) -> None:
        name = event["name"]
        if name in ("READY", "INITIATE"):
            props = {k.lower(): v for k, v in (event.get("properties") or {}).items()}
            if "socket-type" in props:
                facts.socket_types[d] = str(props["socket-type"]).upper()
            if "identity" in props:
                facts.identities[d] = props["identity"]
            if name == "READY" or facts.mechanism in ("PLAIN", "CURVE"):
                facts.ready.setdefault(d, event["ts"])
                facts.metadata.setdefault(d, ref(event))
        elif name in ("PING", "ERROR", "HELLO", "WELCOME"):
            details = {k: event[k] for k in ("ttl", "context", "reason", "hex") if k in event}
            facts.commands.append(Command(ref(event), name, details))
        elif name in ("SUBSCRIBE", "CANCEL"):
            self._subscribed(facts, ref(event), name.lower(), bytes.fromhex(event.get("topic") or ""))

    def _subscribed(self, facts: ConnFacts, where: EventRef, what: str, topic: bytes) -> None:
        facts.subscriptions.append((where, what, topic))
        for handle in self.on_subscription:
            handle(facts, where, what, topic)

    def _subscription_message(self, facts: ConnFacts, event: dict[str, Any], d: str, frames: list[bytes]) -> None:
        # Before 3.1 a SUB subscribes with a message: %x01 (subscribe) or %x00 (cancel), then the topic.
        if facts.sender(d) not in ("SUB", "XSUB") or len(frames) != 1 or frames[0][:1] not in (b"\x00", b"\x01"):
            return
        versions = [facts.versions.get(x, "3.1") for x in DIRS]
        if min(versions, key=lambda v: tuple(int(p) for p in v.split("."))) >= "3.1":
            return
        self._subscribed(facts, ref(event), "subscribe" if frames[0][0] == 1 else "cancel", frames[0][1:])
