"""The node spec: one ZeroMQ socket of a session or topology with its options, and the limits, defined once.

`Node` is the one shape of a node, validated by pydantic: a topology's nodes, a two-peer body's sides
(`web.models.PeerConfig.node`), a lesson's topology and a real session's nodes are all `Node`s, and
`socket_options` turns one into a socket's options. Its rules' words say what is wrong with a field
(`sndhwm is a whole number of messages ...`); `peers.topology` puts the node's name in front.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator

from ..engine.constants import MECHANISMS, SOCKET_TYPES, VERSIONS, mechanism_problem
from ..engine.notation import parse_endpoint

# The limits of a topology (the HTTP body, a saved file, a lesson): one place, read by every model.
MAX_NODES = 24
MAX_LINKS = 32
MAX_PROXIES = 12
MAX_SCRIPT = 256
MAX_SUBSCRIPTIONS = 16
MAX_FRAMES = 16
MAX_FRAME_TEXT = 4096
MAX_TEXT = 255  # octets: an identity, a username, a password, a subscription
MAX_HWM = 1_000_000
MAX_BUFFER = 16 << 20  # octets: a node's sndbuf/rcvbuf
MAX_AT = 3600.0  # seconds: the latest a scripted send or a late connect may happen
MAX_EXTERNAL_CONNECTIONS = 1000  # connections one external node may take at once (a lecture hall of students)
HEARTBEAT = ("heartbeat_ivl", "heartbeat_ttl", "heartbeat_timeout")  # a node's options, seconds (0: none)
MAX_HEARTBEAT = 6553.5  # seconds: a heartbeat's interval, TTL or timeout (the TTL's 16 bits of deciseconds)
GREETINGS = ("libzmq", "full")
RECV_MODES = ("auto", "manual")
SUBSCRIBER_TYPES = frozenset({"SUB", "XSUB"})
ECHO_TYPES = frozenset({"REP", "ROUTER", "DEALER", "PAIR"})
NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,32}")
# A node's whole-number options: what each counts (its 0 first) and its most.
COUNTS = {"sndhwm": ("a whole number of messages, 0 (no limit)", MAX_HWM),
          "rcvhwm": ("a whole number of messages, 0 (no limit)", MAX_HWM),
          "sndbuf": ("a number of octets, 0 (the system's)", MAX_BUFFER),
          "rcvbuf": ("a number of octets, 0 (the system's)", MAX_BUFFER)}
GREETING_STRATEGY = {"libzmq": "partial", "full": "full"}  # a node's greeting choice -> the engine's strategy


def check_text(what: str, value: Any, *, limit: int = MAX_TEXT) -> str:
    """`value` when it is text of at most `limit` UTF-8 octets; else `ValueError` naming `what`."""
    if not isinstance(value, str):
        raise ValueError(f"{what} is text")
    if len(value.encode("utf-8")) > limit:
        raise ValueError(f"{what} is longer than {limit} octets")
    return value


def check_name(value: Any) -> str:
    """A node's name (1 to 32 of A-Z a-z 0-9 _ . -); else `ValueError`."""
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        raise ValueError(f"a node name is 1 to 32 of A-Z a-z 0-9 _ . - (got {value!r})")
    return value


def check_number(what: str, value: Any, lo: float, hi: float) -> float:
    """A finite number (not a boolean) between `lo` and `hi`; else `ValueError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} is a number")
    if not lo <= value <= hi:
        raise ValueError(f"{what} is between {lo:g} and {hi:g}")
    return float(value)


def _flag(what: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{what} is true or false")
    return value


class Node(BaseModel):
    """One node: a ZeroMQ socket with its options. `recv` is how its application reads: "auto" (every
    message at once), "manual" (never by itself), or a number: one message every that many seconds (a
    slow consumer; written `{"every": seconds}`). `echo`: the application sends back every message it
    receives (REP: its reply). `sndbuf`/`rcvbuf`: the kernel's socket buffers in octets in real mode
    (ZMQ_SNDBUF/ZMQ_RCVBUF; 0: the system's), which hold messages beyond the HWMs; the simulation models
    a small TCP window either way. `subscribe`: a SUB's or XSUB's topic prefixes (none: it receives
    nothing, as in libzmq). `heartbeat_ivl`, `heartbeat_ttl`, `heartbeat_timeout`: ZMQ_HEARTBEAT_IVL, _TTL and
    _TIMEOUT in seconds (0: none; a timeout of 0 is the interval, as in libzmq).

    `external`: no socket of the lab's: a program outside it (any ZMTP 1.0-3.1 implementation, or a ZWS 2.0
    peer such as a browser) is this node. A real session listens for it on an endpoint made for the session,
    unless `endpoint` (`tcp://HOST:PORT`) names where the lab connects to it instead; `max_connections`: how
    many programs may be it at once (1 by default: one program is the node; a PAIR's link takes only one)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    type: str
    version: str = "3.1"
    mechanism: str = "NULL"
    identity: str = ""
    username: str = ""
    password: str = ""
    libzmq: bool = False
    greeting: str = "libzmq"
    subscribe: tuple[str, ...] = ()
    sndhwm: int = 1000
    rcvhwm: int = 1000
    recv: str | float = "auto"
    echo: bool = False
    x: float | None = None
    y: float | None = None
    sndbuf: int = 0
    rcvbuf: int = 0
    heartbeat_ivl: float = 0.0
    heartbeat_ttl: float = 0.0
    heartbeat_timeout: float = 0.0
    external: bool = False
    endpoint: str = ""
    max_connections: int = 1

    # ---- each field's rule (mode="before": the JSON value as given, so the words fit what was typed)

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> str:
        return check_name(value)

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> str:
        kind = str(value).upper()
        if kind not in SOCKET_TYPES:
            raise ValueError(f"type is one of {', '.join(SOCKET_TYPES)} (got {value!r})")
        return kind

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> str:
        if value not in VERSIONS:
            raise ValueError(f"version is one of {', '.join(VERSIONS)}")
        return value

    @field_validator("mechanism", mode="before")
    @classmethod
    def _mechanism(cls, value: Any) -> str:
        mechanism = str(value).upper()
        if mechanism not in MECHANISMS:
            raise ValueError(f"mechanism is one of {', '.join(MECHANISMS)}")
        return mechanism

    @field_validator("identity", "username", "password", mode="before")
    @classmethod
    def _short_text(cls, value: Any, info: ValidationInfo) -> str:
        return check_text(str(info.field_name), value)

    @field_validator("libzmq", "echo", mode="before")
    @classmethod
    def _bool(cls, value: Any, info: ValidationInfo) -> bool:
        return _flag(str(info.field_name), value)

    @field_validator("external", mode="before")
    @classmethod
    def _external(cls, value: Any) -> bool:
        return _flag("external", value)

    @field_validator("endpoint", mode="before")
    @classmethod
    def _endpoint(cls, value: Any) -> str:
        text = check_text("endpoint", value)
        if text:
            try:
                parsed = parse_endpoint(text, bind=False) if text.startswith("tcp://") else None
            except ValueError:
                parsed = None
            if parsed is None:
                raise ValueError(f"endpoint is tcp://HOST:PORT, where the lab connects to the external node "
                                 f"(got {text!r})")
        return text

    @field_validator("max_connections", mode="before")
    @classmethod
    def _max_connections(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_EXTERNAL_CONNECTIONS:
            raise ValueError(f"max_connections is a whole number from 1 to {MAX_EXTERNAL_CONNECTIONS}")
        return value

    @field_validator("greeting", mode="before")
    @classmethod
    def _greeting(cls, value: Any) -> str:
        if value not in GREETINGS:
            raise ValueError("greeting is 'libzmq' or 'full'")
        return value

    @field_validator("subscribe", mode="before")
    @classmethod
    def _subscribe(cls, value: Any, info: ValidationInfo) -> tuple[str, ...]:
        if value is None:
            return ()  # as in libzmq: a SUB receives nothing until it subscribes
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or len(items) > MAX_SUBSCRIPTIONS:
            raise ValueError(f"subscribe is a topic prefix or a list of at most {MAX_SUBSCRIPTIONS}")
        topics = tuple(check_text("a subscription", t) for t in items)
        kind = info.data.get("type")
        if kind is not None and kind not in SUBSCRIBER_TYPES:
            if any(topics):
                raise ValueError(f"only SUB and XSUB nodes subscribe (this one is a {kind})")
            return ()
        return topics

    @field_validator("sndhwm", "rcvhwm", "sndbuf", "rcvbuf", mode="before")
    @classmethod
    def _count(cls, value: Any, info: ValidationInfo) -> int:
        name = str(info.field_name)
        words, most = COUNTS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
            raise ValueError(f"{name} is {words} to {most}")
        return value

    @field_validator("recv", mode="before")
    @classmethod
    def _recv(cls, value: Any) -> str | float:
        if isinstance(value, str) and value in RECV_MODES:
            return value
        if isinstance(value, dict) and set(value) == {"every"}:
            return check_number("recv every", value["every"], 0.001, 60.0)
        if isinstance(value, float) and not isinstance(value, bool):  # (a Node's own value, given back)
            return check_number("recv every", value, 0.001, 60.0)
        raise ValueError("recv is 'auto', 'manual' or {\"every\": seconds}")

    @field_validator("heartbeat_ivl", "heartbeat_ttl", "heartbeat_timeout", mode="before")
    @classmethod
    def _heartbeat(cls, value: Any, info: ValidationInfo) -> float:
        return check_number(str(info.field_name), value, 0.0, MAX_HEARTBEAT)

    @field_validator("x", "y", mode="before")
    @classmethod
    def _place(cls, value: Any, info: ValidationInfo) -> float | None:
        return None if value is None else check_number(str(info.field_name), value, 0.0, 1.0)

    @model_validator(mode="after")
    def _together(self) -> Node:
        problem = mechanism_problem(self.version, self.mechanism)
        if problem:
            raise ValueError(problem)
        if self.echo and self.type not in ECHO_TYPES:
            raise ValueError(f"only {', '.join(sorted(ECHO_TYPES))} nodes echo (this one is a {self.type})")
        if not self.external:
            if self.endpoint or self.max_connections != 1:
                raise ValueError("endpoint and max_connections are an external node's (set external: true)")
        elif self.echo or self.libzmq or self.recv != "auto":
            raise ValueError("an external node runs no socket of the lab's: its own program reads, answers and "
                             "sends (no echo, libzmq or recv)")
        elif self.type == "PAIR" and self.max_connections > 1:
            raise ValueError("a PAIR takes one connection: an external PAIR's max_connections is 1")
        elif self.endpoint and self.max_connections > 1:
            raise ValueError("the lab connects once to an external node's endpoint: its max_connections is 1")
        return self

    # ---- derived

    @property
    def recv_every(self) -> float | None:
        """Seconds between the reads of a slow consumer, else None."""
        return None if isinstance(self.recv, str) else float(self.recv)

    def to_dict(self) -> dict[str, Any]:
        """The node as a topology's JSON writes it (what `Node.model_validate` takes back)."""
        out: dict[str, Any] = {"name": self.name, "type": self.type, "version": self.version,
                               "mechanism": self.mechanism, "identity": self.identity, "username": self.username,
                               "password": self.password, "libzmq": self.libzmq, "greeting": self.greeting,
                               "subscribe": list(self.subscribe), "sndhwm": self.sndhwm, "rcvhwm": self.rcvhwm,
                               "recv": self.recv if isinstance(self.recv, str) else {"every": self.recv}}
        if self.echo:
            out["echo"] = True
        for key in ("sndbuf", "rcvbuf", *HEARTBEAT):
            if value := getattr(self, key):  # (only when set: the saved topologies and presets stay as they were)
                out[key] = value
        if self.external:  # (only when set, as the buffers)
            out["external"] = True
            if self.endpoint:
                out["endpoint"] = self.endpoint
            if self.max_connections != 1:
                out["max_connections"] = self.max_connections
        if self.x is not None:
            out["x"] = self.x
        if self.y is not None:
            out["y"] = self.y
        return out


NODE_KEYS = frozenset(Node.model_fields)


def node_problem(where: str, raw: Any, exc: ValidationError) -> str:
    """The first of a node's problems, in words that name it: `node 'w1': sndhwm is ...` (`where`, as
    `node 3`, until its name is known to be good), an unknown key with the keys a node takes."""
    errors = exc.errors()
    extra = sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden")
    if extra:
        return f"{where}: unknown key {extra[0]!r}; it takes {', '.join(sorted(NODE_KEYS))}"
    first = errors[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    words = str(first["ctx"]["error"]) if first["type"] == "value_error" else f"{field}: {first['msg']}"
    name = raw.get("name") if isinstance(raw, dict) else None
    if field != "name" and isinstance(name, str) and NAME_RE.fullmatch(name):
        where = f"node {name!r}"
    return f"{where}: {words}"


def socket_options(node: Node, *, server: bool, **extra: Any) -> dict[str, Any]:
    """The `add_peer` options of a node, as the side that binds (`server`: the PLAIN or CURVE server) or
    connects; `extra` options go after its greeting's. The one place a node's settings become a socket's
    options: the simulation's, and real mode's `TcpPeer` (which adds CURVE keys)."""
    opts: dict[str, Any] = {"version": node.version, "mechanism": node.mechanism, "identity": node.identity.encode(),
                            "strategy": GREETING_STRATEGY[node.greeting]}
    opts.update({k: getattr(node, k) for k in HEARTBEAT if getattr(node, k)})  # (0 or None: no heartbeat)
    opts.update(extra)
    if node.mechanism == "PLAIN":
        if server:
            opts["plain_server"] = True
            if node.username:
                opts.update(username=node.username, password=node.password)
        else:
            opts.update(username=node.username, password=node.password)
    elif node.mechanism == "CURVE" and server:
        opts["curve_server"] = True  # keys come from the seeded generator; the client learns the public one
    return opts


__all__ = ["MAX_AT", "MAX_BUFFER", "MAX_EXTERNAL_CONNECTIONS", "MAX_FRAMES", "MAX_FRAME_TEXT", "MAX_LINKS",
           "MAX_NODES", "MAX_PROXIES", "MAX_SCRIPT", "MAX_SUBSCRIPTIONS", "MAX_TEXT", "NODE_KEYS", "Node", "check_name",
           "check_number", "check_text", "node_problem", "socket_options"]
