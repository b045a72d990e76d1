"""Running a `ReplayModel` on the simulator, with one thing changed or none.

`apply_changes` takes `NODE.OPTION=VALUE` changes (`OPTIONS` lists them; times are seconds from the capture's
start, as the capture shows them) and gives a changed copy of the model. `simulate` plays a model on
`peers.Simulation` (the playground's socket rules; decisions on, the same small TCP window as a topology
session) and gives an `Outcome`: each socket's application reads, each link's messages per direction, and the
findings `analysis` makes of the replay's own bytes, written as a capture (the same rules as `zmtplab analyze`).
"""

from __future__ import annotations

import copy
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..analysis import analyze_capture
from ..capture.pcapwriter import PcapngWriter
from ..engine.constants import VERSIONS
from ..peers.simulation import Simulation
from .model import ReplayError, ReplayModel

WINDOW = 32  # octets in flight once a reader stops: a topology session's simulated TCP window
TAIL = 1.0  # virtual seconds the replay runs on after the capture's last moment
MAX_SLOW_TAIL = 600.0  # virtual seconds more, at most, for a slow reader to read what it was sent
MAX_STEPS = 2_000_000
SEND_ONLY = frozenset({"PUSH", "PUB", "RADIO"})  # sockets whose applications read nothing

OPTIONS: dict[str, str] = {
    "connect_at": "seconds from the capture's start at which the socket's links connect",
    "subscribe_at": "seconds from the capture's start at which a SUB makes its subscriptions",
    "subscribe": "a SUB's one topic prefix ('' every message)",
    "sndhwm": "ZMQ_SNDHWM, messages",
    "rcvhwm": "ZMQ_RCVHWM, messages",
    "heartbeat_ivl": "ZMQ_HEARTBEAT_IVL, seconds (0: none)",
    "heartbeat_timeout": "ZMQ_HEARTBEAT_TIMEOUT, seconds",
    "heartbeat_ttl": "ZMQ_HEARTBEAT_TTL, seconds",
    "version": "ZMTP version: 3.1, 3.0, 2.0 or 1.0",
    "mechanism": "NULL or PLAIN",
    "recv_every": "seconds between the application's reads (0: as fast as it can)",
    "identity": "the socket's identity (routing id)",
}


@dataclass(frozen=True)
class Change:
    """`socket.option=value`, as the user wrote it."""

    socket: str
    option: str
    value: str

    def __str__(self) -> str:
        return f"{self.socket}.{self.option}={self.value}"


def parse_change(text: str) -> Change:
    """`NODE.OPTION=VALUE` -> `Change`; `ReplayError` saying what is wrong."""
    target, eq, value = text.partition("=")
    node, dot, option = target.rpartition(".")
    if not eq or not dot or not node:
        raise ReplayError(f"{text!r}: a change is NODE.OPTION=VALUE")
    if option not in OPTIONS:
        raise ReplayError(f"{text!r}: unknown option {option!r}; one of {', '.join(OPTIONS)}")
    return Change(node, option, value.strip())


def _number(change: Change, kind: type[float] | type[int]) -> float:
    """The change's value: seconds (`float`, 0 to 3600) or a count of messages (`int`, 0 to 1000000)."""
    seconds = kind is float
    try:
        value = kind(change.value)
    except ValueError:
        raise ReplayError(f"{change}: {change.option} is a number of seconds" if seconds
                          else f"{change}: {change.option} is a whole number of messages") from None
    if not 0 <= value <= (3600 if seconds else 1_000_000):
        raise ReplayError(f"{change}: {change.option} is between 0 and 3600 seconds" if seconds
                          else f"{change}: {change.option} is between 0 and 1000000")
    return value


def apply_changes(model: ReplayModel, changes: Iterable[Change]) -> ReplayModel:
    """A copy of `model` with the changes made; `ReplayError` naming the change at fault."""
    out = copy.deepcopy(model)
    for change in changes:
        sock = out.sockets.get(change.socket)
        if sock is None:
            raise ReplayError(f"{change}: no socket named {change.socket!r}; the replay's sockets are "
                              f"{', '.join(out.sockets)}")
        opt = change.option
        if opt == "connect_at":
            at = out.time.at(_number(change, float))
            mine = [lk for lk in out.links if lk.client == sock.name] or [lk for lk in out.links
                                                                          if lk.server == sock.name]
            for lk in mine:
                lk.at = at
        elif opt in ("subscribe_at", "subscribe"):
            if sock.type != "SUB":
                raise ReplayError(f"{change}: {sock.name} is a {sock.type}, not a SUB")
            if opt == "subscribe":
                sock.subscribe, sock.subscriptions = [change.value], []
            else:
                at = out.time.at(_number(change, float))
                topics = list(dict.fromkeys([*sock.subscribe, *(t for _, t, on in sock.subscriptions if on)]))
                sock.subscribe = []
                sock.subscriptions = [(at, t, True) for t in (topics or [""])]
        elif opt in ("sndhwm", "rcvhwm"):
            setattr(sock, opt, int(_number(change, int)))
        elif opt in ("heartbeat_ivl", "heartbeat_ttl", "heartbeat_timeout", "recv_every"):
            seconds = _number(change, float)
            setattr(sock, opt, seconds or (None if opt in ("heartbeat_timeout", "recv_every") else 0.0))
        elif opt == "version":
            if change.value not in VERSIONS:
                raise ReplayError(f"{change}: version is one of {', '.join(VERSIONS)}")
            sock.version = change.value
            if change.value in ("2.0", "1.0"):
                sock.mechanism = "NULL"
        elif opt == "mechanism":
            mech = change.value.upper()
            if mech not in ("NULL", "PLAIN"):
                raise ReplayError(f"{change}: mechanism is NULL or PLAIN")
            sock.mechanism = mech
            if mech == "PLAIN" and not any(lk.server == sock.name for lk in out.links):
                sock.username, sock.password = sock.username or "user", sock.password or "password"
        elif opt == "identity":
            if len(change.value.encode()) > 255:
                raise ReplayError(f"{change}: an identity has at most 255 octets")
            sock.identity = change.value
    return out


@dataclass
class Outcome:
    """What a replay did: per socket what its application read, per link and direction what crossed it, the
    analysis's findings of its bytes, and what went wrong in it (a send the socket refused)."""

    delivered: dict[str, list[tuple[bytes, ...]]]
    wire: dict[tuple[str, str, str], list[tuple[bytes, ...]]]  # (client, server, dir) -> messages
    findings: list[dict[str, Any]]
    finding_ends: list[list[tuple[str, str]]]  # per finding: its connections' (client, server) sockets
    errors: list[dict[str, Any]] = field(default_factory=list)
    sends: dict[str, int] = field(default_factory=dict)


def simulate(model: ReplayModel) -> Outcome:
    """Plays `model` on the simulator until just after the capture's last moment (see the module docstring)."""
    sim = Simulation(seed=0, decisions=True, window=WINDOW)
    try:  # (the playground's topology of the replay: what a session of it plays, played the same way)
        sim.add_topology(model.topology())
    except ValueError as exc:
        raise ReplayError(f"the simulator cannot build this replay: {exc}") from None
    end = max([model.end, *(s.at for s in model.sends), *(lk.at for lk in model.links)]) + TAIL
    slowest = max((s.recv_every or 0.0 for s in model.sockets.values()), default=0.0)
    end += min(slowest * len(model.sends), MAX_SLOW_TAIL)  # (a slow reader reads what it was sent, up to a point)
    sim.run(until_t=end, max_steps=MAX_STEPS)
    return _outcome(model, sim.events)


def _outcome(model: ReplayModel, events: list[dict[str, Any]]) -> Outcome:
    pairs: dict[str, tuple[str, str]] = {}
    delivered: dict[str, list[tuple[bytes, ...]]] = {name: [] for name, s in model.sockets.items()
                                                     if not s.proxied and s.type not in SEND_ONLY}
    wire: dict[tuple[str, str, str], list[tuple[bytes, ...]]] = {}
    errors: list[dict[str, Any]] = []
    for ev in events:
        kind = ev.get("kind")
        if kind == "message":
            pair = pairs.get(ev["conn"])
            if pair is not None:
                wire.setdefault((*pair, ev["dir"]), []).append(tuple(bytes.fromhex(f) for f in ev["frames"]))
        elif kind == "link" and ev["what"] == "open":
            pairs[ev["conn"]] = (ev["client"], ev["server"])
        elif kind == "peer":
            if ev["what"] == "recv" and ev["peer"] in delivered:
                delivered[ev["peer"]].append(tuple(bytes.fromhex(f) for f in ev["frames"]))
            elif ev["what"] == "error":
                errors.append({"socket": ev["peer"], "action": ev.get("action"), "reason": ev.get("reason")})
    analysis = analyze_capture(io.BytesIO(_pcapng(model, events, pairs)))
    ends = {c["conn"]: (c["client"], c["server"]) for c in analysis["connections"]}
    by_endpoint = {ep: (client, server) for client, server, ep in _link_endpoints(model, pairs).values()}
    finding_ends = [[by_endpoint.get(ends.get(c, ("", "")), ("", "")) for c in f["conns"]]
                    for f in analysis["findings"]]
    sends: dict[str, int] = {}
    for send in model.sends:
        sends[send.sender] = sends.get(send.sender, 0) + 1
    return Outcome(delivered, wire, analysis["findings"], finding_ends, errors, sends)


def _link_endpoints(model: ReplayModel,
                    pairs: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str, tuple[str, str]]]:
    """Each simulated link's sockets and the endpoints its capture shows it by: the captured connection's (a
    later connection of the same two sockets: the next client port)."""
    captured: dict[tuple[str, str], tuple[str, str]] = {}
    for conn, (client, server) in model.conn_ends.items():
        captured.setdefault((client, server), model.endpoints[conn])
    out: dict[str, tuple[str, str, tuple[str, str]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for conn, pair in pairs.items():
        k = seen[pair] = seen.get(pair, -1) + 1
        c_ep, s_ep = captured.get(pair) or (f"10.0.0.{len(out) % 250 + 1}:40000", "10.0.1.1:5555")
        host, _, port = c_ep.rpartition(":")
        out[conn] = (*pair, (f"{host}:{int(port) + k}" if k else c_ep, s_ep))
    return out


def _address(ep: str) -> tuple[str, int]:
    host, _, port = ep.rpartition(":")
    return host.strip("[]"), int(port)


def _pcapng(model: ReplayModel, events: list[dict[str, Any]], pairs: dict[str, tuple[str, str]]) -> bytes:
    """The replay's bytes as a capture, each link at its captured endpoints, times mapped back to the capture's."""
    out = io.BytesIO()
    writer = PcapngWriter(out)
    link_eps = _link_endpoints(model, pairs)
    tcp: dict[str, Any] = {}
    last: dict[str, float] = {}
    start, back = model.time.start, model.time.back
    for ev in events:
        if ev.get("kind") != "link":
            continue
        conn, what = ev["conn"], ev["what"]
        ts = start + back(ev["t"])
        if what == "open" and conn in link_eps:
            c_ep, s_ep = link_eps[conn][2]
            tcp[conn] = writer.add_connection(client=_address(c_ep), server=_address(s_ep))
            tcp[conn].handshake(ts)
            last[conn] = ts
        elif conn not in tcp:
            continue
        elif what == "bytes":
            ts = max(ts, last[conn])
            tcp[conn].send(ev["dir"], bytes.fromhex(ev["hex"]), ts)
            last[conn] = ts
        elif what == "closed":
            tcp.pop(conn).close(max(ts, last[conn]))
    writer.flush()
    return out.getvalue()
