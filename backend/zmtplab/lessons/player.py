"""Plays a lesson: every step's source and actions, deterministically, into one `StepScene` per step.

A scene is what the browser shows at that step: the annotated events so far (the event contract
of docs/architecture.md, with fields), the element the step points at (an index into those
events), the highlighted fields (indexes into that element's fields), the writes that crossed the
link, what the applications received, and the peers' log (handshakes, closes, PINGs).

Sources:

- `session`: two peers with ZeroMQ socket semantics in a simulated session, the playground's own
  (`zmtplab.sessions`, driven synchronously by `sessions.driver.SessionDriver`; the scene is made from
  its stream): an in-memory link whose writes arrive 1 ms (virtual) later, in write order, its
  dissector reading every byte that crosses (also the bytes a peer that already closed never
  reads, as a capture would show them). Actions deliver what is in flight; only `wait` lets the
  clock run on to timers (heartbeats), so a lesson plays the same way every time. The scene shows
  the simulation's wire elements (connection "0"), the writes as they arrive, the messages the
  applications received and the peers' notes in words.
- `wire`: hand-written bytes, fed to the dissector and to strict engine `Connection`s that must
  accept them (a spec's worked example, byte for byte).
- `capture`: a sample capture dissected by the capture reader.
- `topology`: a topology's nodes in the same kind of session, one connection per link (numbered from 0 in link
  order, as a session numbers them, a `connect` action's link after them). The scene keeps each wire
  element's connection,
  shows the sockets' decisions (`kind: socket`) and the applications' receives (`kind: peer`,
  `what: recv`) as events, as a topology session's stream has them, and carries the topology
  with its `conns` (connection -> client and server node) and the `decisions` the step marks.

Anything a step names that does not exist (an element, a field, a field with that value, an
answer) raises `LessonPlayError` naming the lesson and the step: the lesson check in the test
suite plays every lesson through here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field as dc_field
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from ..engine import Connection, ConnectionDissector, RemoteProtocolError
from ..engine.errors import LocalProtocolError
from ..engine.events import (
    ConnectionClosed,
    HandshakeComplete,
    MessageReceived,
    PingReceived,
    PongReceived,
    SubscriptionChanged,
)
from ..engine.fields import text_or_hex
from ..i18n import DEFAULT, text, translate
from ..peers.topology import Link, Topology, two_peer, validate
from ..resources import sample_captures_dir
from ..sessions import SessionSetup
from ..sessions.driver import SessionDriver
from . import markdown
from .loader import (
    Action,
    CaptureSource,
    ElementSelector,
    Exercise,
    ExerciseCheck,
    Expect,
    Highlight,
    Lesson,
    Question,
    SessionSource,
    Step,
    TopologySource,
    WireSource,
)

LATENCY = 0.001  # virtual seconds per write on the simulated link
MAX_DELIVERIES = 100_000
MAX_WAIT_STEPS = 100_000
EXERCISE_DELIVERIES = 20_000  # a student's topology, checked: at most this many deliveries (an echo loop ends)
OTHER = {"client": "server", "server": "client"}
OUT_DIR = {"client": "c2s", "server": "s2c"}
# What a peer reports that the scene's log shows (`recv` becomes a received message).
PEER_NOTES = frozenset({"handshake", "closed", "ping-sent", "ping", "pong", "subscription", "ignored"})


class LessonPlayError(Exception):
    """A step that cannot be played or resolved; the text names the lesson and the step (once `play_lesson` has
    said which: `lesson`, `step`, `title`), and `render` says it in another language."""

    def __init__(self, problem: str, *, lesson: str | None = None, step: int | None = None,
                 title: str | None = None) -> None:
        self.problem, self.lesson, self.step, self.title = problem, lesson, step, title
        where = "" if lesson is None else f"lesson {lesson}: step {step} ({title!r}): "
        super().__init__(where + problem)

    def render(self, lang: str = DEFAULT) -> str:
        """The text in `lang`."""
        problem = translate(self.problem, lang)
        if self.lesson is None:
            return problem
        return text("lessons.where.play", lang, lesson=self.lesson, number=self.step, title=repr(self.title),
                    problem=problem)


# ---------------------------------------------------------------- scenes


@dataclass
class StepScene:
    """One step, played (see the module docstring)."""

    lesson: str
    number: int
    title: str
    source: dict[str, Any]
    events: list[dict[str, Any]]
    writes: list[dict[str, Any]]
    received: list[dict[str, Any]]
    log: list[dict[str, Any]]
    element: int | None = None
    field: int | None = None
    highlights: list[dict[str, Any]] = dc_field(default_factory=list)
    question: Question | None = None
    answer_fields: list[int] = dc_field(default_factory=list)
    decisions: list[int] = dc_field(default_factory=list)  # socket decisions the step points at (event indexes)
    topology: dict[str, Any] | None = None  # a topology source's nodes, links, proxies and conns

    def public(self) -> dict[str, Any]:
        """The JSON the browser gets (the question without its answer)."""
        out: dict[str, Any] = {
            "lesson": self.lesson, "number": self.number, "title": self.title, "source": self.source,
            "events": self.events, "element": self.element, "field": self.field, "highlights": self.highlights,
            "writes": self.writes, "received": self.received, "log": self.log, "question": None,
        }
        if self.topology is not None:  # (only then: the other lessons' scenes stay as they were)
            out["topology"] = self.topology
            out["decisions"] = self.decisions
        if self.question is not None:
            q = self.question
            out["question"] = {"prompt": q.prompt, "kind": q.answer.kind, "choices": q.choices}
        return out


class _Source:
    """What every source keeps: events, writes, received messages, the log."""

    kind = "?"

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.writes: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []
        self.log: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.conns: dict[str, tuple[str, str]] = {}  # simulated sources: conn -> (client node, server node)
        self.now = 0.0

    def describe(self) -> dict[str, Any]:
        return {"type": self.kind}

    def apply(self, action: Action) -> None:
        raise LessonPlayError(f"a {self.kind} source takes no `{action.name}` action")

    def settle(self) -> None:
        """Delivers everything in flight (nothing to do for a capture)."""

    def _add_events(self, pairs) -> None:
        for direction, event in pairs:
            item = {"conn": "0", "dir": direction, **event.to_dict(), "t": round(self.now, 6)}
            item["seq"] = len(self.events)
            self.events.append(item)

    def _note(self, peer: str, what: str, text: str, *, error: bool = False) -> None:
        entry = {"t": round(self.now, 6), "peer": peer, "what": what, "text": text}
        if error:
            entry["error"] = True
        self.log.append(entry)


class _SimulationSource(_Source):
    """Nodes in a simulated session (`sessions.driver.SessionDriver`: the playground's own session, driven here
    without an event loop), one connection per link in link order (a `connect` action's link after them): a
    topology's nodes, links and proxies, or a session's two peers, a two-node topology (`server` and `client`, the
    client connecting: connection "0"). The scene is made from the session's stream, as its websocket carries it
    (the events with their fields, the log). See the module docstring.

    A topology's scene shows what a topology session's stream has (`as_topology`): the sockets' decisions and
    the applications' receives as events, each write with its connection, and a send that must wait is shown
    waiting. A session's shows the wire elements alone, and a send that must wait is an error (nobody in a
    session reads by hand: it would wait forever)."""

    def __init__(self, spec: SessionSource | TopologySource) -> None:
        super().__init__()
        self.spec = spec
        self.max_deliveries = MAX_DELIVERIES
        self.as_topology = isinstance(spec, TopologySource)
        self.conn: str | None = None  # a session's one connection, as the simulation numbers it
        # As a lesson has always played: each write arrives 1 ms (virtual) later, bytes towards a side that closed
        # still cross the wire (a capture would show them), every element with its fields.
        simulation: dict[str, Any] = {"latency": LATENCY, "unread_on_wire": True, "fields": True,
                                      "max_body": None, "wire_data": False}
        if isinstance(spec, TopologySource):
            self.kind = "topology"
            self.topo = spec.topology()
            for node in self.topo.nodes:
                if node.mechanism != "NULL":
                    raise LessonPlayError(f"node {node.name}: a lesson's topology uses the NULL mechanism")
            # Decisions on (the session's): sockets report them and messages get ids, in the lesson's window.
            self.driver = SessionDriver(SessionSetup("simulated", self.topo), seed=spec.seed,
                                        simulation={**simulation, "window": spec.window})
        else:
            self.kind = "session"
            self.topo = two_peer({"type": spec.server.type}, {"type": spec.client.type})
            # The peers as the lesson sets them (heartbeats, properties, PLAIN's users); no reconnection: a lesson's
            # connection, once closed, stays closed.
            peers = {side: {"reconnect_ivl": 0, **getattr(spec, side).settings()} for side in ("server", "client")}
            self.driver = SessionDriver(SessionSetup("simulated", self.topo, two_peer=True), seed=spec.seed,
                                        simulation=simulation, peers=peers)
        self.sim = self.driver.sim
        self.sim.on_write = self._on_write
        self.driver.subscribe(self._take, logs=True, topology=False)
        self.driver.start()
        if not self.as_topology:
            self.conn = next(iter(self.sim.links))
        self.links = list(self.topo.links)  # the topology's links, then the ones `connect` actions add

    def describe(self) -> dict[str, Any]:
        spec = self.spec
        if isinstance(spec, TopologySource):
            return {"type": "topology", "nodes": [{"name": n.name, "type": n.type} for n in self.topo.nodes],
                    **({"preset": spec.preset} if spec.preset else {})}
        out: dict[str, Any] = {"type": "session"}
        for side in ("server", "client"):
            peer = getattr(spec, side).options().describe()
            peer["identity"] = text_or_hex(bytes.fromhex(peer.get("identity", "")))  # shown as text where it is
            out[side] = peer
        return out

    def topology(self) -> dict[str, Any]:
        """The topology as a session's `topology` message has it: nodes, links, proxies and the conns so far."""
        out = {**self.topo.to_dict(), "links": [link.to_dict() for link in self.links]}
        out.pop("script", None)
        index = {(link.connect, link.bind): i for i, link in enumerate(self.links)}
        out["conns"] = [{"conn": conn, "link": index.get((client, server)), "client": client, "server": server}
                        for conn, (client, server) in self.conns.items()]
        return out

    # ---- the session's stream, as a scene shows it

    def _on_write(self, conn: str, direction: str, offset: int, length: int) -> None:
        write: dict[str, Any] = {"conn": _scene_conn(conn)} if self.as_topology else {}
        write.update(dir=direction, offset=offset, length=length, t=round(self.sim.t, 6))
        self.writes.append(write)

    def _take(self, text: str) -> None:
        """Takes in one message of the session's stream (JSON text): elements (each keeping its connection), received
        messages, socket decisions, peer notes; the connections as they open."""
        message = orjson.loads(text)
        kind = message["type"]
        if kind not in ("event", "log"):
            return  # (its state and topology messages: the scene has its own)
        entry = message["event" if kind == "event" else "entry"]
        kind = entry["kind"]
        if kind == "link":
            if entry["what"] == "open":
                self.conns[entry["conn"]] = (entry["client"], entry["server"])
            return
        if kind == "peer":
            self._peer_entry(entry)
            if entry["what"] != "recv" or not self.as_topology:
                return
        item = {**entry, "t": round(entry["t"], 6)}
        if not self.as_topology:
            item["conn"] = "0"  # (a session's one connection is connection 0 of its scenes)
        item["seq"] = len(self.events)
        self.events.append(item)

    def _peer_entry(self, event: dict[str, Any]) -> None:
        side = event["peer"]
        what = event["what"]
        self.now = event["t"]
        error = False
        if what == "recv":
            frames = [bytes.fromhex(f) for f in event["frames"]]
            self.received.append({"t": round(self.now, 6), "peer": side, "frames": [text_or_hex(f) for f in frames],
                                  "hex": event["frames"]})
            return
        if what not in PEER_NOTES:
            return  # the simulation's own entries (a peer added, a send that waits)
        if what == "handshake":
            peer_type = event.get("peer_socket_type")
            text = (f"handshake complete: ZMTP {event.get('version')} {event.get('mechanism')}, "
                    + (f"peer is {peer_type}" if peer_type else "the peer names no socket type (ZMTP 1.0)"))
            if event.get("peer_identity"):
                text += f" with identity {text_or_hex(bytes.fromhex(event['peer_identity']))!r}"
            if event.get("user_id"):
                text += f"; user id {event['user_id']!r}"
        elif what == "closed":
            error = bool(event.get("error"))
            text = f"closed: {event.get('reason')}"
            if error:
                self.errors.append(f"{side} {text}")
        elif what == "ping-sent":
            text = f"heartbeat: sent PING with TTL {event.get('ttl')} ds"
        elif what == "ping":
            text = f"received PING (TTL {event.get('ttl')} ds, context {event.get('context') or 'empty'}); PONG queued"
        elif what == "pong":
            text = f"received PONG (context {event.get('context') or 'empty'})"
        elif what == "subscription":
            topic = text_or_hex(bytes.fromhex(event.get("topic", "")))
            text = f"peer {'subscribed to' if event.get('subscribe') else 'cancelled'} {topic!r}"
        else:  # ignored
            text = f"connection ignored: {event.get('reason')}"
        self._note(side, what, text, error=error)

    # ---- moving on

    def _step(self) -> bool:
        """One delivery (or timer) of the simulation; False when nothing is on its way, or nothing could move
        (what is in flight waits for a reader at its RCVHWM)."""
        return self.driver.deliver()

    def settle(self) -> None:
        for _ in range(self.max_deliveries):
            if not self._step():
                return
        raise LessonPlayError(f"the {self.kind} never settles")

    def _session_conn(self, action: str) -> str:
        """The connection a session's `ping`, `close` and `bytes` act on (a topology takes none of them)."""
        if self.conn is None:
            raise LessonPlayError(f"a topology source takes no `{action}` action")
        return self.conn

    # ---- actions

    def apply(self, action: Action) -> None:
        name = action.name
        sim = self.sim
        if name == "run":
            self.settle()
        elif name == "deliver":
            for _ in range(action.deliver or 0):
                if not self._step():
                    raise LessonPlayError(f"deliver: only fewer than {action.deliver} writes were in flight")
        elif name == "until":
            assert action.until is not None
            for _ in range(MAX_DELIVERIES):
                if _select(self.events, action.until, strict=False, conns=self.conns) is not None:
                    break
                if not self._step():
                    raise LessonPlayError(f"until: the link went quiet before {_describe(action.until)} appeared")
        elif name == "send":
            send = action.send
            assert send is not None
            try:
                sim.send(send.from_, [f.to_bytes() for f in send.frames])
            except ValueError as exc:
                raise LessonPlayError(f"send from {send.from_}: {exc}") from None
            if not self.as_topology and sim.peer(send.from_).blocked:
                raise LessonPlayError(f"send from {send.from_}: no peer can take the message yet")
        elif name == "connect":
            link = action.connect
            assert link is not None
            new = Link(connect=link.connect, bind=link.bind)
            validate(Topology(self.topo.nodes, (*self.links, new), self.topo.proxies))
            self.links.append(new)
            sim.connect(link.connect, link.bind)
        elif name == "recv":
            recv = action.recv
            assert recv is not None
            for n in range(recv.count):
                if sim.recv(recv.node) is None:
                    # A blocking read waits for what is on its way (reading made room: the sender goes on).
                    self.driver.absorb()
                    self.settle()
                    if sim.recv(recv.node) is None:
                        raise LessonPlayError(f"recv: {recv.node} had only {n} of {recv.count} messages to read")
        elif name == "ping":
            ping = action.ping
            assert ping is not None
            try:
                sim.ping(self._session_conn(name), ping.from_, ping.ttl, ping.context.encode("utf-8"))
            except ValueError as exc:
                raise LessonPlayError(f"ping from {ping.from_}: {exc}") from None
            self.driver.absorb()
            self._note(ping.from_, "ping-sent", f"sent PING with TTL {ping.ttl} ds")
        elif name in ("subscribe", "unsubscribe"):
            topic = action.subscribe or action.unsubscribe
            assert topic is not None
            try:
                (sim.subscribe if name == "subscribe" else sim.unsubscribe)(topic.from_, topic.topic.encode("utf-8"))
            except ValueError as exc:
                if name == "subscribe":  # (two texts, so that each can be said in another language)
                    raise LessonPlayError(f"subscribe from {topic.from_}: {exc}") from None
                raise LessonPlayError(f"unsubscribe from {topic.from_}: {exc}") from None
        elif name == "wait":
            target = sim.t + (action.wait or 0.0)
            sim.run(until_t=target, max_steps=MAX_WAIT_STEPS)
            if sim.t < target:  # (run() stops short only after MAX_WAIT_STEPS steps)
                raise LessonPlayError("wait: the timers never settle")
        elif name == "close":
            assert action.close is not None
            sim.close(self._session_conn(name), action.close)
        elif name == "bytes":
            raw = action.bytes_
            assert raw is not None
            sim.inject("garbage", conn=self._session_conn(name), dir=OUT_DIR[raw.from_], data=raw.to_bytes())
        else:  # pragma: no cover - the model admits nothing else
            super().apply(action)
        self.driver.absorb()
        self.now = max(self.now, sim.t)


class _WireSource(_Source):
    """Hand-written bytes checked by strict engine peers (see the module docstring)."""

    kind = "wire"

    def __init__(self, spec: WireSource) -> None:
        super().__init__()
        self.spec = spec
        self.dissector = ConnectionDissector()
        self.sent = {"c2s": 0, "s2c": 0}
        self.peers: dict[str, Connection] = {}  # side -> its strict engine peer
        for side in ("client", "server"):
            peer = getattr(spec, side)
            if peer is not None:
                conn = peer.options().make_connection()
                conn.start()
                conn.data_to_send()
                self.peers[side] = conn

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "wire"}
        for side in ("server", "client"):
            peer = getattr(self.spec, side)
            if peer is not None:
                out[side] = {"type": peer.type, "version": peer.version, "mechanism": peer.mechanism}
        return out

    def apply(self, action: Action) -> None:
        if action.name == "run":
            return
        if action.name != "bytes":
            super().apply(action)
        raw = action.bytes_
        assert raw is not None
        data = raw.to_bytes()
        direction = OUT_DIR[raw.from_]
        self.now += LATENCY
        self.writes.append({"dir": direction, "offset": self.sent[direction], "length": len(data),
                            "t": round(self.now, 6)})
        self.sent[direction] += len(data)
        self._add_events(self.dissector.receive_data(direction, data))
        reader = OTHER[raw.from_]
        conn = self.peers.get(reader)
        if conn is None:
            return
        try:
            conn.receive_data(data)
        except RemoteProtocolError as exc:
            self.errors.append(f"{reader} refused the bytes: {exc}")
            self._note(reader, "closed", f"protocol error: {exc}", error=True)
        conn.data_to_send()
        for event in conn.events():
            if isinstance(event, HandshakeComplete):
                peer_type = event.peer_socket_type or "of no stated type"
                self._note(reader, "handshake",
                           f"handshake complete: ZMTP {event.version} {event.mechanism}, peer is {peer_type}")
            elif isinstance(event, MessageReceived):
                self.received.append({"t": round(self.now, 6), "peer": reader,
                                      "frames": [text_or_hex(f) for f in event.frames],
                                      "hex": [f.hex() for f in event.frames]})
            elif isinstance(event, ConnectionClosed):
                if event.error:
                    self.errors.append(f"{reader} closed: {event.reason}")
                self._note(reader, "closed", f"closed: {event.reason}", error=event.error)
            elif isinstance(event, PingReceived | PongReceived | SubscriptionChanged):
                self._note(reader, event.kind, event.kind)


class _CaptureSource(_Source):
    kind = "capture"

    def __init__(self, spec: CaptureSource, captures_dirs: list[Path]) -> None:
        super().__init__()
        self.spec = spec
        if not captures_dirs:
            raise LessonPlayError(f"sample capture {spec.file}: this installation has no sample captures")
        path = next((d / spec.file for d in captures_dirs if (d / spec.file).is_file()), None)
        if path is None:
            raise LessonPlayError(f"capture {spec.file} not found in {' or '.join(str(d) for d in captures_dirs)}")
        events = _dissect(str(path))
        conn = spec.conn if spec.conn is not None else (events[0]["conn"] if events else "0")
        self.conn = conn
        self.events = [{**ev, "seq": i} for i, ev in enumerate(e for e in events if e["conn"] == conn)]
        if not self.events:
            raise LessonPlayError(f"{spec.file} has no ZMTP connection {conn!r}")

    def describe(self) -> dict[str, Any]:
        return {"type": "capture", "file": self.spec.file, "conn": self.conn}


@lru_cache(maxsize=32)
def _dissect(path: str) -> list[dict[str, Any]]:
    from ..capture.dissect import dissect_capture

    return list(dissect_capture(path))


# ---------------------------------------------------------------- resolving


def _describe(sel: ElementSelector) -> str:
    parts = [f"{k}={v!r}" for k, v in sel.model_dump(exclude_none=True).items() if k != "index"]
    return f"element ({', '.join(parts) or 'any'}; index {sel.index})"


def _scene_conn(conn: Any) -> Any:
    """A scene's connection id: the simulation counts from 1, scenes from 0, as a session's stream (and a
    capture) does, so a lesson's link #0 is the playground's #0."""
    return str(int(conn) - 1) if isinstance(conn, str) and conn.isdigit() else conn


def _ends(ev: dict[str, Any], conns: dict[str, tuple[str, str]]) -> tuple[Any, Any]:
    """(the node that decided or sent, the node at the far end) of a socket decision or a wire element."""
    if ev.get("kind") == "socket":
        return ev.get("node"), ev.get("peer")
    client, server = conns.get(str(ev.get("conn")), (None, None))
    return (client, server) if ev.get("dir") == "c2s" else (server, client)


def _matches(ev: dict[str, Any], sel: ElementSelector, conns: dict[str, tuple[str, str]] | None = None) -> bool:
    if sel.node is not None or sel.peer is not None:
        node, peer = _ends(ev, conns or {})
        if (sel.node is not None and node != sel.node) or (sel.peer is not None and peer != sel.peer):
            return False
    if sel.what is not None and (ev.get("kind") != "socket" or ev.get("what") != sel.what):
        return False
    if sel.rule is not None and ev.get("rule") != sel.rule:
        return False
    if sel.dir is not None and ev.get("dir") != sel.dir:
        return False
    if sel.kind is not None and ev.get("kind") != sel.kind:
        return False
    if sel.name is not None and str(ev.get("name", "")).upper() != sel.name.upper():
        return False
    if sel.more is not None and ev.get("more") is not sel.more:
        return False
    if sel.long is not None and ev.get("long") is not sel.long:
        return False
    if sel.text is not None and sel.text.lower() not in str(ev.get("text", "")).lower():
        return False
    return sel.conn is None or ev.get("conn") == sel.conn


def _select(events: list[dict[str, Any]], sel: ElementSelector, *, strict: bool = True,
            conns: dict[str, tuple[str, str]] | None = None) -> int | None:
    found = [i for i, ev in enumerate(events) if _matches(ev, sel, conns)]
    try:
        return found[sel.index]
    except IndexError:
        if strict:
            raise LessonPlayError(f"no {_describe(sel)} in the scene ({len(found)} match)") from None
        return None


def same_value(actual: Any, wanted: Any) -> bool:
    """A field value as a lesson states it: equal, or equal as text (YAML may read 0x04 as a number)."""
    if actual == wanted:
        return True
    a, w = str(actual).strip().lower(), str(wanted).strip().lower()
    return a == w or a.startswith(w + " (")  # "0x04" matches the flags value "0x04 (COMMAND)"


def _field_candidates(ev: dict[str, Any], name: str, value: Any) -> list[int]:
    fields = ev.get("fields") or []
    return [i for i, f in enumerate(fields) if f["name"] == name and (value is None or same_value(f["value"], value))]


def _resolve_highlight(ev: dict[str, Any], hl: Highlight) -> dict[str, Any]:
    found = _field_candidates(ev, hl.field, hl.value)
    if len(found) <= hl.index:
        names = sorted({f["name"] for f in ev.get("fields") or []})
        kind, listed = ev.get("kind"), ", ".join(names)
        if hl.value is None and not hl.index:
            raise LessonPlayError(f"field {hl.field!r} is not in the {kind} element; its fields: {listed}")
        raise LessonPlayError(f"field {hl.field!r} with value {hl.value!r} (index {hl.index}) is not in the {kind} "
                              f"element; its fields: {listed}")
    i = found[hl.index]
    f = ev["fields"][i]
    return {"field": i, "name": f["name"], "offset": f["offset"], "length": f["length"], "value": f["value"],
            "label": hl.label or f["name"]}


def _texts(messages: list[list[str]]) -> list[list[str]]:
    return [[text_or_hex(bytes.fromhex(f)) for f in m] for m in messages]


def _check_expect(src: _Source, expect: Expect) -> None:
    log_text = "\n".join(e["text"] for e in src.log)
    for want in expect.log:
        if want.lower() not in log_text.lower():
            raise LessonPlayError(f"expected {want!r} in the peer log; it says:\n{log_text or '(nothing)'}")
    experts = [str(ev.get("text", "")) for ev in src.events if ev.get("kind") == "expert"]
    for want in expect.experts:
        if not any(want.lower() in t.lower() for t in experts):
            raise LessonPlayError(f"expected an expert finding with {want!r}; found: {experts}")
    for want in expect.received:
        frames = [f.to_bytes().hex() for f in want.frames]
        if not any(r["peer"] == want.peer and r["hex"] == frames for r in src.received):
            raise LessonPlayError(f"expected {want.peer} to receive {[f.to_bytes() for f in want.frames]}; "
                                  f"received: {[(r['peer'], r['frames']) for r in src.received]}")
    for node, messages in expect.inbox.items():
        wanted = [[f.to_bytes().hex() for f in m] for m in messages]
        got = [r["hex"] for r in src.received if r["peer"] == node]
        if got != wanted:
            raise LessonPlayError(f"expected {node} to have received exactly {_texts(wanted)}; it received "
                                  f"{_texts(got)}")
    for want in expect.decisions:
        found = [ev for ev in src.events if ev.get("kind") == "socket" and _matches(ev, want, src.conns)]
        if (want.count is None and not found) or (want.count is not None and len(found) != want.count):
            shown = [ev.get("text") for ev in src.events if ev.get("kind") == "socket"]
            raise LessonPlayError(f"expected {'some' if want.count is None else want.count} socket decision(s) "
                                  f"{_describe(want)}, found {len(found)}; the decisions: {shown}")
    for direction, sizes in expect.writes.items():
        got = [w["length"] for w in src.writes if w["dir"] == direction][: len(sizes)]
        if got != sizes:
            raise LessonPlayError(f"expected the first {direction} writes to be {sizes} octets, not {got}")


def _play_step(lesson: Lesson, number: int, step: Step, src: _Source) -> StepScene:
    for action in step.do:
        src.apply(action)
    if step.run:
        src.settle()
    allow = getattr(getattr(src, "spec", None), "allow_errors", True)
    if src.errors and not allow:
        raise LessonPlayError("a peer failed (set allow_errors on the source if the lesson means it): "
                              + "; ".join(src.errors))
    if step.expect is not None:
        _check_expect(src, step.expect)
    scene = StepScene(lesson=lesson.id, number=number, title=step.title, source=src.describe(),
                      events=list(src.events), writes=list(src.writes), received=list(src.received),
                      log=list(src.log), question=step.question)
    if isinstance(src, _SimulationSource) and src.as_topology:
        scene.topology = src.topology()
        scene.decisions = [_select(src.events, sel.model_copy(update={"kind": "socket"}), conns=src.conns)
                           for sel in step.decisions]
    if step.element is not None:
        scene.element = _select(src.events, step.element, conns=src.conns)
        ev = src.events[scene.element]
        # (`highlight`: the step's highlight each one is, which its label in another language follows)
        scene.highlights = [{**_resolve_highlight(ev, hl), "highlight": n} for n, hl in enumerate(step.highlight)]
        if scene.highlights:
            scene.field = scene.highlights[0]["field"]
        q = step.question
        if q is not None and q.answer.field is not None:
            scene.answer_fields = _field_candidates(ev, q.answer.field, q.answer.value)
            if not scene.answer_fields:
                raise LessonPlayError(f"the answer field {q.answer.field!r} is not in the element")
        if q is not None and q.answer.byte is not None and q.answer.byte >= ev.get("length", 0):
            raise LessonPlayError(f"the answer byte {q.answer.byte} is outside the {ev.get('length')}-octet element")
        if q is not None and q.answer.kind != "choice":
            _keep_answer_back(scene, ev)
    return scene


def answer_fields(scene: StepScene) -> list[int]:
    """The fields of the step's element that are its question's answer: the answer field's candidates, or the
    field holding the answer byte."""
    q = scene.question
    if q is None or q.answer.kind == "choice" or scene.element is None:
        return []
    if q.answer.kind == "field":
        return list(scene.answer_fields)
    ev = scene.events[scene.element]
    at = ev.get("offset", 0) + (q.answer.byte or 0)
    return [i for i, f in enumerate(ev.get("fields") or []) if f["offset"] <= at < f["offset"] + f["length"]]


def _keep_answer_back(scene: StepScene, ev: dict[str, Any]) -> None:
    """A question answered by a click must not be answered already: the scene neither selects nor highlights the
    field it asks for (the step's other highlights stay, the first of them selected). The answer lights up once
    it is given (`check_answer`'s `fields`)."""
    answer = set(answer_fields(scene))
    scene.highlights = [hl for hl in scene.highlights if hl["field"] not in answer]
    scene.field = scene.highlights[0]["field"] if scene.highlights else None


def play_lesson(lesson: Lesson, *, captures_dir: Path | None = None, own_dir: Path | None = None) -> list[StepScene]:
    """Every step of `lesson`, played in order (see the module docstring); a capture step's file is looked up in
    `own_dir` (the lesson's own directory: a teacher's captures beside their lessons) first, then in
    `captures_dir`, by default the package's sample captures (`zmtplab.resources`)."""
    captures_dir = captures_dir or sample_captures_dir()
    captures_dirs = [d for d in (own_dir, captures_dir) if d is not None]
    scenes: list[StepScene] = []
    src: _Source | None = None
    for number, step in enumerate(lesson.steps, 1):
        try:
            if step.session is not None:
                src = _SimulationSource(step.session)
            elif step.wire is not None:
                src = _WireSource(step.wire)
            elif step.capture is not None:
                src = _CaptureSource(step.capture, captures_dirs)
            elif step.topology is not None:
                src = _SimulationSource(step.topology)
            assert src is not None  # the loader insists the first step has a source
            scenes.append(_play_step(lesson, number, step, src))
        except (LessonPlayError, ValueError, LocalProtocolError) as exc:
            raise LessonPlayError(str(exc), lesson=lesson.id, step=number, title=step.title) from None
    return scenes


# ---------------------------------------------------------------- answers


def answer_key(scene: StepScene, submission: dict[str, Any]) -> dict[str, Any] | None:
    """What a submission answered, the same for every student whatever their language, to count a class's answers
    by: `{"choice": i}` (the choice's place), `{"field": name}` (the field clicked) or `{"offset": n}` (a byte
    outside every field, or a byte question's octet); None when it names nothing in the step's element."""
    q = scene.question
    if q is None:
        return None
    if q.answer.kind == "choice":
        choice = submission.get("choice")
        folded = [c.casefold() for c in q.choices or []]
        if isinstance(choice, str) and choice.strip().casefold() in folded:
            return {"choice": folded.index(choice.strip().casefold())}
        return None
    if scene.element is None or submission.get("index") != scene.element:
        return None
    element = scene.events[scene.element]
    fields = element.get("fields") or []
    offset, picked = submission.get("offset"), submission.get("field")
    if q.answer.kind == "byte" and isinstance(offset, int):
        return {"offset": offset - element["offset"]}
    if isinstance(picked, int) and 0 <= picked < len(fields):
        return {"field": fields[picked]["name"]}
    if isinstance(offset, int):
        at = [f for f in fields if f["offset"] <= offset < f["offset"] + f["length"]]
        return {"field": min(at, key=lambda f: f["length"])["name"]} if at else {"offset": offset - element["offset"]}
    return None


def check_answer(scene: StepScene, submission: dict[str, Any]) -> dict[str, Any]:
    """Checks a submission `{choice}` or `{index, field?, offset?}` against the step's question.

    `index` is the element the student picked, `field` a field index in it, `offset` a byte's
    stream offset (a click in the hex dump). Returns `{correct, message, explain, fields}` where
    `explain` is the narration tree of the question's explanation and `fields` the answer's fields in the element
    (to light up), both on a correct answer only.
    """
    q = scene.question
    if q is None:
        raise LookupError("this step asks no question")
    kind = q.answer.kind
    correct = False
    if kind == "choice":
        choice = submission.get("choice")
        correct = isinstance(choice, str) and choice.strip().casefold() == (q.answer.choice or "").casefold()
    else:
        element = scene.events[scene.element] if scene.element is not None else None
        index = submission.get("index")
        if element is not None and index == scene.element:
            fields = element.get("fields") or []
            picked = submission.get("field")
            offset = submission.get("offset")
            if not isinstance(offset, int) and isinstance(picked, int) and 0 <= picked < len(fields):
                f = fields[picked]
                if kind == "field":
                    correct = picked in scene.answer_fields
                elif f["length"] == 1:
                    offset = f["offset"]
            if isinstance(offset, int) and not correct:
                if kind == "field":
                    correct = any(fields[i]["offset"] <= offset < fields[i]["offset"] + fields[i]["length"]
                                  for i in scene.answer_fields)
                else:
                    correct = offset - element["offset"] == q.answer.byte
    if correct:
        return {"correct": True, "message": "Correct.",
                "explain": markdown.parse(q.explain) if q.explain else [], "fields": answer_fields(scene)}
    return {"correct": False, "message": q.hint or "Not quite: look again.", "explain": [], "fields": []}


# ---------------------------------------------------------------- exercises

NUMBER = re.compile(r"^\s*(0x[0-9a-f]+|[+-]?\d+(?:\.\d+)?)(?:\s*[^\d\s.][^\d]*)?\s*$", re.IGNORECASE)


def _number(answer: str) -> float | None:
    """The number an answer gives (`64`, `0x40`, `64 octets`, `64 个字节`), None when it gives none."""
    m = NUMBER.match(answer)
    if m is None:
        return None
    digits = m.group(1)
    return float(int(digits, 16)) if digits.lower().startswith("0x") else float(digits)


def same_answer(given: str, accepted: str) -> bool:
    """Whether a typed answer is an accepted one: the same number, or the same words (case and spaces aside)."""
    a, b = _number(given), _number(accepted)
    if a is not None and b is not None and re.fullmatch(r"\s*(0x[0-9a-f]+|[+-]?\d+(\.\d+)?)\s*", accepted, re.I):
        return a == b
    return " ".join(given.split()).casefold() == " ".join(accepted.split()).casefold()


def exercise_start(exercise: Exercise) -> dict[str, Any] | None:
    """The topology a topology exercise's playground opens with: its `start` (a preset's nodes and links), the
    messages the check sends as its script (so Start shows what the check will do); None without a `start`."""
    if exercise.start is None or exercise.check is None:
        return None
    start = exercise.start.topology().to_dict()
    script = []
    for i, send in enumerate(a.send for a in exercise.check.do if a.send is not None):
        frames = [f.to_bytes() for f in send.frames]
        try:
            entry: dict[str, Any] = {"from": send.from_, "frames": [f.decode("utf-8") for f in frames]}
        except UnicodeDecodeError:
            entry = {"from": send.from_, "frames": [f.hex() for f in frames], "hex": True}
        script.append({**entry, "at": round(0.05 * (i + 1), 3)})
    start.pop("script", None)
    if script:
        start["script"] = script
    return start


def _shown(messages: list[list[str]]) -> str:
    return ", ".join(" | ".join(m) for m in _texts(messages))


def _topology_problems(check: ExerciseCheck, body: Any, lang: str) -> list[str]:
    """What a student's topology does not do that the check wants, in `lang` (nothing: it does all)."""
    if not isinstance(body, dict) or not isinstance(body.get("nodes"), list) or not body["nodes"]:
        return [text("lessons.exercise.no_topology", lang)]
    try:
        spec = TopologySource(nodes=body["nodes"], links=body.get("links") or [], proxies=body.get("proxies") or [])
    except ValueError as exc:  # (pydantic's ValidationError is one: its first error says what is wrong)
        errors = getattr(exc, "errors", None)
        why = errors()[0]["msg"].removeprefix("Value error, ") if callable(errors) else str(exc)
        return [text("lessons.exercise.invalid", lang, error=why)]
    have = {node.name: node.type for node in spec.topology().nodes}
    problems = [text("lessons.exercise.no_node", lang, name=name, type=kind) if name not in have else
                text("lessons.exercise.wrong_type", lang, name=name, type=kind, got=have[name])
                for name, kind in check.nodes.items() if have.get(name) != kind]
    if problems:
        return problems
    try:
        src = _SimulationSource(spec)
        src.max_deliveries = EXERCISE_DELIVERIES
        for action in check.do:
            src.apply(action)
        src.settle()
    except (LessonPlayError, ValueError, LocalProtocolError) as exc:
        return [text("lessons.exercise.failed", lang, error=str(exc))]
    if src.errors:
        return [text("lessons.exercise.failed", lang, error="; ".join(src.errors))]
    inboxes = {name: [r["hex"] for r in src.received if r["peer"] == name] for name in check.nodes}
    for name, count in check.received.items():
        if len(inboxes[name]) != count:
            problems.append(text("lessons.exercise.received", lang, name=name, count=count, got=len(inboxes[name])))
    for name, messages in check.inbox.items():
        wanted = [[f.to_bytes().hex() for f in m] for m in messages]
        if inboxes[name] != wanted:
            key = ("lessons.exercise.inbox_empty" if not inboxes[name] else
                   "lessons.exercise.inbox_unwanted" if not wanted else "lessons.exercise.inbox")
            problems.append(text(key, lang, name=name, wanted=_shown(wanted), got=_shown(inboxes[name])))
    if check.dropped is not None:
        dropped = sum(1 for ev in src.events if ev.get("kind") == "socket" and ev.get("what") == "drop")
        if dropped != check.dropped:
            problems.append(text("lessons.exercise.dropped", lang, count=check.dropped, got=dropped))
    return problems


def check_exercise(exercise: Exercise, submission: dict[str, Any], lang: str = "en") -> dict[str, Any]:
    """Checks a student's work on `exercise` (a step's, in `lang`): `{answer}`, a typed answer, or `{topology}`,
    the topology built (a topology session's body: nodes, links, proxies; its mode and script are not used: the
    check plays its own actions on the simulator). Returns `{correct, message, problems, explain}`: `problems`
    says what the topology does not do (each in words), `explain` is the explanation's narration tree once
    correct."""
    if exercise.accept is not None:
        given = submission.get("answer")
        problems: list[str] = []
        correct = isinstance(given, str) and any(same_answer(given, a) for a in exercise.accept)
    else:
        assert exercise.check is not None
        problems = _topology_problems(exercise.check, submission.get("topology"), lang)
        correct = not problems
    if correct:
        return {"correct": True, "message": text("lessons.answer.correct", lang), "problems": [],
                "explain": markdown.parse(exercise.explain) if exercise.explain else []}
    return {"correct": False, "message": exercise.hint or text("lessons.answer.not_quite", lang),
            "problems": problems, "explain": []}
