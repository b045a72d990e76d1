"""Lesson files: the pydantic models of a lesson and its steps, and the loader.

A lesson is one YAML file in this directory (`greeting.yaml` holds lesson `greeting`):

```yaml
title: The greeting, byte by byte
summary: One sentence for the lesson list.
order: 10                       # position in the list
references: [{title: 23/ZMTP, url: "https://rfc.zeromq.org/spec/23/"}]
steps:
  - title: Two peers say hello
    session:                    # a source: session | wire | capture (the first step needs one;
      server: {type: PUSH}      # a later step without one continues the previous step's source)
      client: {type: PULL}
    do:                         # actions on the source (a session or wire source only)
      - until: {dir: s2c, kind: greeting}
    run: false                  # no implicit `run` after the actions
    element: {dir: c2s, kind: greeting}
    highlight: [signature, {field: padding, value: "0000000000000001"}]
    narration: |
      Markdown: **bold**, *em*, `code`, [links](https://rfc.zeromq.org/spec/23/), lists, ``` blocks.
    question:
      prompt: Which byte says this frame is LONG?
      answer: {field: flags}    # or {byte: N} (offset within the element) or {choice: "..."}
      explain: Bit 1 of the flags octet.
```

Sources:

- `session`: two simulated peers (`PeerOptions` of the engine runtime: type, version, mechanism,
  identity, PLAIN credentials, heartbeats ...) joined by an in-memory link on a virtual clock.
- `wire`: hand-written bytes (`bytes` actions), fed to the dissector and to strict engine peers
  (`client`/`server`, optional) that must accept them unless `allow_errors`.
- `capture`: a capture by file name, optionally one connection: a teacher's own beside their lessons
  (`ZMTPLAB_LESSONS_DIR`), else a sample capture the package ships (the repository's `captures/`;
  `zmtplab.resources`).
- `topology`: several simulated nodes, `{preset: ID}` or `{nodes, links, proxies}` as a topology
  session's body has them (`peers.topology` checks them: docs/architecture.md, "Topologies").

Actions: `run` (deliver until nothing moves), `deliver: N` (the next N writes), `until: ELEMENT`
(deliver until that element exists), `send: {from, frames}`, `ping: {from, ttl, context}`,
`subscribe`/`unsubscribe: {from, topic}`, `wait: SECONDS` (virtual time: heartbeats fire),
`close: client|server`, `bytes: {from, hex | text | parts}` (hand-written bytes). On a topology,
`from` is a node, and two more: `connect: {connect, bind}` (a late link), `recv: {node, count}`
(a node with `recv: manual` reads). A selector's `node` and `peer` pick a socket decision
(`kind: socket`, with `what` and `rule`) or a wire element by the node that sent it and the one
it went to; a step's `decisions` are socket decisions it marks besides its element, and `expect`
takes `inbox: {NODE: [messages]}` (exactly what that node's application read) and `decisions`
(selectors, with `count` for an exact number). A step's `exercise` is a task the server checks: a typed answer
(`accept`) or a topology the student builds (`check`: the nodes it must have, the actions played on it, then
`inbox`, `received` and `dropped`; `start`: what the playground's editor opens with); README.md has an example.

Every model forbids unknown keys, so a typo is an error, and `LessonError` names the file and the
step (by number and title) it is about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..engine.constants import SOCKET_TYPES
from ..resources import lessons_dir
from .problems import LessonError, invalid, validation_problems

LESSON_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
CAPTURE_NAME = re.compile(r"^[A-Za-z0-9_.-]+\.pcapng?$")
HEX_CLEAN = re.compile(r"(0x|\\x|[\s:,._-])", re.IGNORECASE)
MAX_CHUNK = 1 << 20

Side = Literal["client", "server"]
Direction = Literal["c2s", "s2c"]
Kind = Literal["greeting", "command", "frame", "message", "expert", "gap", "socket"]
NODE_NAME = r"^[A-Za-z0-9_.-]{1,32}$"
# A node of a session or wire source: its two sides. (A topology names its own nodes.)
NodeName = Annotated[str, Field(pattern=NODE_NAME)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------- bytes


class Chunk(_Model):
    """Octets written in a lesson: `hex` (spaces, colons allowed), or `text` (UTF-8), `repeat` times."""

    hex: str | None = None
    text: str | None = None
    repeat: int = Field(1, ge=1, le=MAX_CHUNK)

    @model_validator(mode="after")
    def _one(self) -> Chunk:
        if (self.hex is None) == (self.text is None):
            raise invalid("lessons.error.chunk_one_of")
        if self.hex is not None:
            cleaned = HEX_CLEAN.sub("", self.hex)
            if len(cleaned) % 2 or not re.fullmatch(r"[0-9A-Fa-f]*", cleaned):
                raise invalid("lessons.error.not_hex", value=repr(self.hex))
        if len(self.raw_once()) * self.repeat > MAX_CHUNK:
            raise invalid("lessons.error.chunk_too_long", limit=MAX_CHUNK)
        return self

    def raw_once(self) -> bytes:
        if self.hex is not None:
            return bytes.fromhex(HEX_CLEAN.sub("", self.hex))
        return (self.text or "").encode("utf-8")

    def to_bytes(self) -> bytes:
        return self.raw_once() * self.repeat


def _chunk(value: Any) -> Any:
    """A bare string is text."""
    return {"text": value} if isinstance(value, str) else value


FrameSpec = Annotated[Chunk, Field(description="a frame body: a string (text) or a chunk")]


# ---------------------------------------------------------------- sources


class PeerSpec(_Model):
    """One simulated peer: the `PeerOptions` a lesson may set."""

    type: str
    identity: str = ""
    version: Literal["3.1", "3.0", "2.0", "1.0"] = "3.1"
    strategy: Literal["partial", "full"] = "partial"
    mechanism: Literal["NULL", "PLAIN"] = "NULL"
    username: str | None = None
    password: str | None = None
    plain_server: bool = False
    plain_users: dict[str, str] | None = None
    heartbeat_ivl: float = Field(0.0, ge=0, le=3600)
    heartbeat_ttl: float = Field(0.0, ge=0, le=6553)
    heartbeat_timeout: float | None = Field(None, ge=0, le=3600)
    properties: dict[str, str] = Field(default_factory=dict)

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        value = value.upper()
        if value not in SOCKET_TYPES:
            raise invalid("lessons.error.socket_type", value=repr(value), types=", ".join(SOCKET_TYPES))
        return value

    @field_validator("mechanism", mode="before")
    @classmethod
    def _mech(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        return str(value) if isinstance(value, float | int) else value

    def settings(self) -> dict[str, Any]:
        """The `PeerOptions` keyword arguments this peer sets (what `Simulation.add_peer` takes)."""
        return {
            "identity": self.identity.encode("utf-8"), "version": self.version, "strategy": self.strategy,
            "mechanism": self.mechanism, "username": self.username, "password": self.password,
            "plain_server": self.plain_server, "plain_users": self.plain_users, "heartbeat_ivl": self.heartbeat_ivl,
            "heartbeat_ttl": self.heartbeat_ttl, "heartbeat_timeout": self.heartbeat_timeout,
            "properties": {k: v.encode("utf-8") for k, v in self.properties.items()},
        }

    def options(self):  # -> PeerOptions (imported lazily: the loader needs no runtime)
        from ..peers.options import PeerOptions

        return PeerOptions(self.type, **self.settings())


class SessionSource(_Model):
    """Two simulated peers on a virtual clock; the client connects to the server."""

    server: PeerSpec
    client: PeerSpec
    seed: int = 1
    allow_errors: bool = False  # a peer may close with an error (lessons about failures)

    @model_validator(mode="after")
    def _check(self) -> SessionSource:
        for side in ("server", "client"):
            try:
                getattr(self, side).options()
            except ValueError as exc:
                raise invalid("lessons.error.peer", side=side, text_error=str(exc)) from None
        return self


class TopologySource(_Model):
    """Several simulated nodes: a preset's topology (`preset: ID`), or nodes, links and proxies as a session's
    topology body has them (docs/architecture.md), on the same virtual clock; checked by `peers.topology`."""

    preset: str | None = Field(None, max_length=40)
    nodes: list[dict[str, Any]] = Field(default_factory=list, max_length=24)
    links: list[dict[str, Any]] = Field(default_factory=list, max_length=32)
    proxies: list[dict[str, Any]] = Field(default_factory=list, max_length=12)
    # Octets a connection's direction holds in flight (the kernels' TCP buffers): a reader at its RCVHWM stops
    # reading, and a writer writes while fewer are in flight (at least one message), so back-pressure reaches
    # the sender's pipe. None: no limit (nothing ever waits in a sender's pipe once the connection is up).
    window: int | None = Field(None, ge=1, le=1 << 30)
    seed: int = 1
    allow_errors: bool = False

    @model_validator(mode="after")
    def _check(self) -> TopologySource:
        if (self.preset is None) == (not self.nodes):
            raise invalid("lessons.error.topology_one_of")
        self.topology()  # a ValueError names the node or link at fault
        return self

    def topology(self):  # -> peers.topology.Topology (imported lazily: the loader needs no runtime)
        """The checked topology (a preset's comes with its script); a ValueError names what is wrong."""
        from ..peers import topology

        if self.preset is not None:
            return topology.preset(self.preset).topology
        return topology.Topology.from_dict({"nodes": self.nodes, "links": self.links, "proxies": self.proxies})

    def node_names(self) -> list[str]:
        return [node.name for node in self.topology().nodes]


class WireSource(_Model):
    """Hand-written bytes; `client`/`server` are strict engine peers that read what the other side wrote."""

    client: PeerSpec | None = None
    server: PeerSpec | None = None
    allow_errors: bool = False


class CaptureSource(_Model):
    """A sample capture the package ships (the repository's `captures/`), by file name."""

    file: str
    conn: str | None = None

    @field_validator("file")
    @classmethod
    def _file(cls, value: str) -> str:
        if not CAPTURE_NAME.match(value):
            raise invalid("lessons.error.capture_name", value=repr(value))
        return value


# ---------------------------------------------------------------- actions


class ElementSelector(_Model):
    """Which element of the scene a step points at: filters, then the `index`-th match (negative: from the end)."""

    dir: Direction | None = None
    kind: Kind | None = None
    name: str | None = None  # command name
    more: bool | None = None  # frames
    long: bool | None = None  # frames
    text: str | None = None  # an expert's or a socket decision's text contains this
    conn: str | None = None
    node: str | None = None  # socket decisions (kind socket): the node that decided
    what: str | None = None  # ... route, queue, drop, block, filter, deliver, strip, envelope, ...
    rule: str | None = None  # ... round-robin, fair-queue, identity-routing, sndhwm, ...
    peer: str | None = None  # ... the node at the far end of the pipe
    index: int = 0


class SendAction(_Model):
    from_: NodeName = Field(alias="from")
    frames: list[FrameSpec] = Field(min_length=1, max_length=64)

    @field_validator("frames", mode="before")
    @classmethod
    def _frames(cls, value: Any) -> Any:
        return [_chunk(v) for v in value] if isinstance(value, list) else value


class PingAction(_Model):
    from_: Side = Field(alias="from")
    ttl: int = Field(0, ge=0, le=0xFFFF)
    context: str = Field("", max_length=16)


class TopicAction(_Model):
    from_: NodeName = Field(alias="from")
    topic: str = Field("", max_length=255)


class LinkAction(_Model):
    """A topology's node connects (late) to another: a link as a topology's `links` have it."""

    connect: NodeName
    bind: NodeName


class RecvAction(_Model):
    """A node whose application reads by hand (`recv: manual`) reads `count` messages."""

    node: NodeName
    count: int = Field(1, ge=1, le=10_000)

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, value: Any) -> Any:
        return {"node": value} if isinstance(value, str) else value


class BytesAction(_Model):
    from_: Side = Field(alias="from")
    parts: list[Chunk] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, dict) and "parts" not in value and ("hex" in value or "text" in value):
            value = dict(value)
            part = {k: value.pop(k) for k in ("hex", "text", "repeat") if k in value}
            value["parts"] = [part]
        if isinstance(value, dict) and isinstance(value.get("parts"), list):
            value = {**value, "parts": [_chunk(p) for p in value["parts"]]}
        return value

    def to_bytes(self) -> bytes:
        return b"".join(p.to_bytes() for p in self.parts)


class Action(_Model):
    """One action; exactly one of its fields is set (a bare `run` in YAML is `{run: true}`)."""

    run: bool | None = None
    deliver: int | None = Field(None, ge=1, le=10_000)
    until: ElementSelector | None = None
    send: SendAction | None = None
    ping: PingAction | None = None
    subscribe: TopicAction | None = None
    unsubscribe: TopicAction | None = None
    wait: float | None = Field(None, gt=0, le=3600)
    close: Side | None = None
    bytes_: BytesAction | None = Field(None, alias="bytes")
    connect: LinkAction | None = None  # topology sources
    recv: RecvAction | None = None  # topology sources

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, value: Any) -> Any:
        if value == "run":
            return {"run": True}
        if isinstance(value, dict) and len(value) != 1:
            raise invalid("lessons.error.action_keys", keys=str(sorted(value)))
        return value

    @property
    def name(self) -> str:
        for key, value in self:
            if value is not None:
                return key.rstrip("_")
        return "?"


# ---------------------------------------------------------------- highlights, questions, steps


class Highlight(_Model):
    """A field of the step's element to highlight: by engine field name, optionally its value, and the
    `index`-th of the fields that match (a READY has several `property-name` fields)."""

    field: str
    value: Any = None
    index: int = Field(0, ge=0)
    label: str | None = Field(None, max_length=80)

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, value: Any) -> Any:
        return {"field": value} if isinstance(value, str) else value


class Answer(_Model):
    """A question's answer: a field of the element, a byte offset within the element, or a choice."""

    field: str | None = None
    value: Any = None  # with `field`: which of several same-named fields
    byte: int | None = Field(None, ge=0)
    choice: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Answer:
        given = [k for k in ("field", "byte", "choice") if getattr(self, k) is not None]
        if len(given) != 1:
            raise invalid("lessons.error.answer_one_of")
        if self.value is not None and self.field is None:
            raise invalid("lessons.error.answer_value")
        return self

    @property
    def kind(self) -> str:
        return "field" if self.field is not None else "byte" if self.byte is not None else "choice"


class Question(_Model):
    prompt: str = Field(min_length=1, max_length=500)
    answer: Answer
    choices: list[str] | None = Field(None, min_length=2, max_length=8)
    explain: str | None = Field(None, max_length=2000)
    hint: str | None = Field(None, max_length=500)

    @model_validator(mode="after")
    def _check(self) -> Question:
        if self.answer.choice is not None:
            if not self.choices or self.answer.choice not in self.choices:
                raise invalid("lessons.error.choice_answer")
        elif self.choices:
            raise invalid("lessons.error.choices_without_answer")
        return self


def _inbox_chunks(value: Any) -> Any:
    """An inbox's messages with their bare strings as text chunks."""
    if not isinstance(value, dict):
        return value
    return {k: [[_chunk(f) for f in m] if isinstance(m, list) else m for m in v] if isinstance(v, list) else v
            for k, v in value.items()}


class ExerciseCheck(_Model):
    """How an exercise checks the topology a student built: the nodes it must have (name: socket type), the
    actions played on it (a topology's actions, naming those nodes; `run` when none), then what must hold:
    how many messages a node's application read (`received`), exactly which (`inbox`), how many messages the
    sockets dropped (`dropped`)."""

    nodes: dict[NodeName, str] = Field(min_length=1, max_length=24)
    do: list[Action] = Field(default_factory=list, max_length=200)
    received: dict[NodeName, int] = Field(default_factory=dict)
    inbox: dict[NodeName, list[list[FrameSpec]]] = Field(default_factory=dict)
    dropped: int | None = Field(None, ge=0)

    @field_validator("nodes")
    @classmethod
    def _types(cls, value: dict[str, str]) -> dict[str, str]:
        for name, kind in value.items():
            if kind.upper() not in SOCKET_TYPES:
                raise invalid("lessons.error.node_socket_type", name=name, value=repr(kind),
                              types=", ".join(SOCKET_TYPES))
        return {name: kind.upper() for name, kind in value.items()}

    @field_validator("inbox", mode="before")
    @classmethod
    def _inbox(cls, value: Any) -> Any:
        return _inbox_chunks(value)

    @model_validator(mode="after")
    def _names(self) -> ExerciseCheck:
        names = list(self.nodes)
        for action in self.do:
            if action.name not in TOPOLOGY_ACTIONS:
                raise invalid("lessons.error.topology_action", action=action.name)
            for name in _action_nodes(action):
                if name not in names:
                    raise invalid("lessons.error.action_node", action=action.name, name=repr(name),
                                  names=", ".join(names))
        for name in [*self.received, *self.inbox]:
            if name not in names:
                raise invalid("lessons.error.not_a_node", name=repr(name), names=", ".join(names))
        return self


class Exercise(_Model):
    """A task for the student, checked by the server: a typed answer (`accept`: the texts accepted; a number is
    compared as a number, so `0x40`, `64` and `64 octets` are one answer), or a topology built in the playground
    (`check`; `start`: the topology the playground's editor opens with, a preset or nodes and links)."""

    task: str = Field(min_length=1, max_length=4000)
    accept: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(None, min_length=1,
                                                                                     max_length=20)
    check: ExerciseCheck | None = None
    start: TopologySource | None = None
    hint: str | None = Field(None, max_length=500)
    explain: str | None = Field(None, max_length=2000)

    @model_validator(mode="after")
    def _one(self) -> Exercise:
        if (self.accept is None) == (self.check is None):
            raise invalid("lessons.error.exercise_one_of")
        if self.start is not None and self.check is None:
            raise invalid("lessons.error.exercise_start")
        return self

    @property
    def kind(self) -> str:
        return "answer" if self.accept is not None else "topology"


class ReceivedExpect(_Model):
    peer: NodeName
    frames: list[FrameSpec]

    @field_validator("frames", mode="before")
    @classmethod
    def _frames(cls, value: Any) -> Any:
        return [_chunk(v) for v in value] if isinstance(value, list) else value


class DecisionExpect(ElementSelector):
    """Socket decisions that must be in a scene: the selector's filters (`kind` is `socket`), and how many."""

    count: int | None = Field(None, ge=0)


class Expect(_Model):
    """What must be true after a step (checked by the player, so a lesson cannot silently drift)."""

    log: list[str] = Field(default_factory=list)  # substrings of the peer log
    experts: list[str] = Field(default_factory=list)  # substrings of expert texts in the scene
    received: list[ReceivedExpect] = Field(default_factory=list)  # messages the applications received
    writes: dict[Direction, list[int]] = Field(default_factory=dict)  # sizes of a direction's first writes
    # Topology sources: every message a node's application received so far, in order (exactly these).
    inbox: dict[str, list[list[FrameSpec]]] = Field(default_factory=dict)
    # Topology sources: socket decisions that must be in the scene (`count`: exactly that many match).
    decisions: list[DecisionExpect] = Field(default_factory=list)

    @field_validator("inbox", mode="before")
    @classmethod
    def _inbox(cls, value: Any) -> Any:
        return _inbox_chunks(value)


SOURCE_KINDS = ("session", "wire", "capture", "topology")
TOPOLOGY_ACTIONS = frozenset({"run", "deliver", "until", "send", "subscribe", "unsubscribe", "wait", "connect", "recv"})


class Step(_Model):
    title: str = Field(min_length=1, max_length=120)
    narration: str = Field(min_length=1, max_length=8000)
    session: SessionSource | None = None
    wire: WireSource | None = None
    capture: CaptureSource | None = None
    topology: TopologySource | None = None
    do: list[Action] = Field(default_factory=list, max_length=200)
    run: bool = True
    element: ElementSelector | None = None
    highlight: list[Highlight] = Field(default_factory=list, max_length=32)
    # Socket decisions the step points at besides its element (topology sources): marked in the scene.
    decisions: list[ElementSelector] = Field(default_factory=list, max_length=16)
    question: Question | None = None
    exercise: Exercise | None = None
    expect: Expect | None = None

    @model_validator(mode="after")
    def _check(self) -> Step:
        sources = [k for k in SOURCE_KINDS if getattr(self, k) is not None]
        if len(sources) > 1:
            raise invalid("lessons.error.sources", sources=" and ".join(sources))
        if self.highlight and self.element is None:
            raise invalid("lessons.error.highlight_element")
        if self.question is not None and self.question.answer.kind != "choice" and self.element is None:
            raise invalid("lessons.error.question_element")
        if self.question is not None and self.exercise is not None:
            raise invalid("lessons.error.question_and_exercise")
        return self

    @property
    def source_kind(self) -> str | None:
        for k in SOURCE_KINDS:
            if getattr(self, k) is not None:
                return k
        return None


SIDES = ("client", "server")


def _action_nodes(action: Action) -> list[str]:
    """The nodes (or sides) an action names."""
    named = [getattr(v, "from_", None) for _, v in action if v is not None and hasattr(v, "from_")]
    if action.connect is not None:
        named += [action.connect.connect, action.connect.bind]
    if action.recv is not None:
        named.append(action.recv.node)
    return named


def _node_problem(step: Step, kind: str | None, names: list[str]) -> tuple[str, dict[str, str]] | None:
    """What is wrong with the nodes a step names (None when nothing), as a catalog id and its values: an action
    or an expectation must name a node of the step's source, topology actions go with a topology, and socket
    decisions come from one only."""
    listed = ", ".join(names)
    for action in step.do:
        if kind == "topology" and action.name not in TOPOLOGY_ACTIONS:
            return "lessons.error.topology_takes", {"action": action.name,
                                                    "actions": ", ".join(sorted(TOPOLOGY_ACTIONS))}
        if kind != "topology" and action.name in ("connect", "recv"):
            return "lessons.error.topology_only", {"action": action.name, "kind": str(kind)}
        for name in _action_nodes(action):
            if name not in names:
                return "lessons.error.action_not_here", {"action": action.name, "name": repr(name), "names": listed}
    expect = step.expect
    wanted = [r.peer for r in expect.received] + list(expect.inbox) if expect is not None else []
    for name in wanted:
        if name not in names:
            return "lessons.error.expect_not_here", {"name": repr(name), "names": listed}
    decisions = list(step.decisions) + (list(expect.decisions) if expect is not None else [])
    if decisions and kind != "topology":
        return "lessons.error.decisions_source", {}
    if expect is not None and expect.inbox and kind != "topology":
        return "lessons.error.inbox_source", {}
    return None


class Reference(_Model):
    title: str
    url: str


class Lesson(_Model):
    id: str
    title: str = Field(min_length=1, max_length=120)
    summary: str = Field(min_length=1, max_length=400)
    order: int = 1000
    level: Literal["beginner", "intermediate", "advanced"] = "beginner"
    references: list[Reference] = Field(default_factory=list)
    steps: list[Step] = Field(min_length=1, max_length=100)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not LESSON_ID.match(value):
            raise invalid("lessons.error.lesson_id", value=repr(value))
        return value

    @model_validator(mode="after")
    def _first_source(self) -> Lesson:
        if self.steps[0].source_kind is None:
            raise invalid("lessons.error.first_source")
        kind = None
        names: list[str] = []
        for number, step in enumerate(self.steps, 1):
            kind = step.source_kind or kind
            if step.do and kind == "capture":
                raise invalid("lessons.error.capture_actions", step=number)
            if step.topology is not None:
                names = step.topology.node_names()
            elif step.source_kind is not None:
                names = list(SIDES)
            problem = _node_problem(step, kind, names)
            if problem:
                raise invalid(problem[0], step=number, title=step.title, **problem[1])
        return self

    def summary_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "summary": self.summary, "level": self.level,
                "step_count": len(self.steps)}


# ---------------------------------------------------------------- loading


def default_lessons_dir() -> Path:
    """The lessons shipped with the package: this package's data (`zmtplab.resources`)."""
    return lessons_dir()


def load_lesson_file(path: Path) -> Lesson:
    """One lesson; `LessonError` names the file and the step when it is not valid."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LessonError.at(path.name, "lessons.error.cannot_read", text_error=str(exc)) from None
    if not isinstance(data, dict):
        raise LessonError.at(path.name, "lessons.error.not_mapping")
    data = dict(data)
    stem = path.stem
    if "id" in data and data["id"] != stem:
        raise LessonError.at(path.name, "lessons.error.id_mismatch", value=repr(data["id"]))
    data.setdefault("id", stem)
    try:
        return Lesson.model_validate(data)
    except ValidationError as exc:
        raise LessonError(*validation_problems(path.name, data, exc)) from None


def load_lessons(directory: Path | None = None) -> dict[str, Lesson]:
    """Every `*.yaml` lesson in `directory` (the shipped ones by default), in list order."""
    directory = directory or default_lessons_dir()
    lessons = [load_lesson_file(p) for p in sorted(directory.glob("*.yaml"))]
    lessons.sort(key=lambda lesson: (lesson.order, lesson.id))
    return {lesson.id: lesson for lesson in lessons}


@dataclass(frozen=True)
class LoadedLessons:
    """Lessons of several directories: each lesson and the directory it came from (its translations are there),
    and the files that could not be loaded, each with what is wrong (a `LessonError`: the file, the step)."""

    lessons: dict[str, Lesson]
    directories: dict[str, Path]
    problems: list[tuple[Path, LessonError]]


def load_lesson_dirs(directories: list[Path]) -> LoadedLessons:
    """The lessons of `directories`, in list order; a later directory's lesson replaces an earlier one of the same
    id (a teacher's own version of a shipped lesson). A file that is not a valid lesson does not stop the others:
    it is listed in `problems`. A directory that does not exist is a problem too."""
    found: dict[str, tuple[Lesson, Path]] = {}
    problems: list[tuple[Path, LessonError]] = []
    for directory in directories:
        if not directory.is_dir():
            problems.append((directory, LessonError.at(str(directory), "lessons.error.no_directory")))
            continue
        for path in sorted(directory.glob("*.yaml")):
            try:
                lesson = load_lesson_file(path)
            except LessonError as exc:
                problems.append((path, exc))
                continue
            found[lesson.id] = (lesson, directory)
    ordered = sorted(found.values(), key=lambda item: (item[0].order, item[0].id))
    return LoadedLessons({lesson.id: lesson for lesson, _ in ordered},
                         {lesson.id: directory for lesson, directory in ordered}, problems)
