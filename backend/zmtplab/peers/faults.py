"""Faults a simulation injects on demand: `Simulation.inject(name, **args)`.

`FAULTS` maps each name to a `Fault` with a description and its arguments (the web layer lists
them). Transport faults act on one link direction (`conn`, `dir` = "c2s" | "s2c"); peer faults
change what a peer announces on its next connections and reconnect it at once, so the effect is
visible in the following steps:

| name | arguments | effect |
|---|---|---|
| split | conn, dir, at: [offsets] | cut that direction's stream into separate writes at these absolute offsets |
| delay | conn, dir, seconds | nothing more arrives in that direction for `seconds` of virtual time |
| close | conn, side="client" | that side closes its TCP connection (the client then reconnects) |
| corrupt | conn, dir, offset=None, xor=0xFF | flip bits of one byte (default: the next byte not yet on its way) |
| garbage | conn, dir, data=hex | the writer of that direction writes these bytes into the stream |
| wrong_mechanism | peer=None, conn=None, mechanism=None | the peer announces another mechanism |
| invalid_socket_pair | peer=None, conn=None, socket_type=None | announce a type the partner cannot talk to |
| zmtp_version | peer=None, conn=None, version="2.0" | the peer speaks an older ZMTP ("2.0" or "1.0") |
| bad_password | peer=None, conn=None | a PLAIN client sends a wrong password (its server then checks accounts) |
| stop_answering | peer=None, conn=None | the peer hangs: it writes nothing more on that connection (see below) |

`stop_answering` leaves PINGs unanswered, so the other side's heartbeat times out (a 1 s heartbeat is
turned on there if it had none); before the handshake it makes the handshake time out.

`peer` defaults to the client of `conn`, and `conn` to the newest open connection.

`SESSION_FAULTS` is the one table of the faults a playground session takes by name (the websocket's
`{"type": "fault", "fault", "args"}`): which simulation fault each applies, and whether a real TCP
session (`web.sessions.tcp`) can inject it too. The simulated runtime also takes every name of `FAULTS`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..engine.constants import SOCKET_TYPES, VALID_PEERS
from .simpeer import SimPeer
from .wire import Link


class FaultTarget(Protocol):
    """What a fault acts on: the public fault API of `peers.simulation.Simulation` (which imports this module,
    so that this one cannot import it)."""

    rng: random.Random
    links: dict[str, Link]

    @property
    def t(self) -> float: ...

    def link(self, conn: str | None = None) -> Link: ...

    def peer(self, name: str) -> SimPeer: ...

    def write(self, link: Link, side: str, data: bytes) -> None: ...

    def close_side(self, link: Link, side: str, reason: str) -> None: ...

    def reopen(self, link: Link, why: str) -> str | None: ...

    def fault_event(self, fault: str, **data: Any) -> None: ...


@dataclass(frozen=True)
class Fault:
    """One fault: what it does, its arguments, and the function that applies it."""

    name: str
    description: str
    apply: Callable[..., Any]
    params: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------- helpers


def _direction(name: str) -> str:
    if name not in ("c2s", "s2c"):
        raise ValueError("dir is 'c2s' or 's2c'")
    return name


def _target(sim: FaultTarget, peer: str | None, conn: str | None) -> tuple[SimPeer, Link | None]:
    if peer is not None:
        return sim.peer(peer), (sim.link(conn) if conn is not None else None)
    link = sim.link(conn)
    return link.peers["client"], link


def _partner(sim: FaultTarget, target: SimPeer, link: Link | None) -> SimPeer | None:
    if link is not None:
        return link.partner_of(target)
    for candidate in reversed(sim.links.values()):
        if target in candidate.peers.values():
            return candidate.partner_of(target)
    return None


def _reconnect(sim: FaultTarget, target: SimPeer, why: str) -> list[str]:
    """Closes the target's open connections and opens new ones at once (with its new settings)."""
    new_ids = []
    for link in [lk for lk in sim.links.values() if not lk.closed]:
        if target in link.peers.values():
            new_id = sim.reopen(link, why)
            if new_id is not None:
                new_ids.append(new_id)
    return new_ids


# ---------------------------------------------------------------- transport faults


def split(sim: FaultTarget, conn: str | None = None, dir: str = "c2s", at: list[int] | int = 0) -> None:
    """Cuts the direction's stream into separate writes at the given absolute offsets."""
    link = sim.link(conn)
    offsets = sorted({int(o) for o in ([at] if isinstance(at, int) else at)})
    link.dirs[_direction(dir)].split(offsets)
    sim.fault_event("split", conn=link.id, dir=dir, at=offsets)


def delay(sim: FaultTarget, conn: str | None = None, dir: str = "c2s", seconds: float = 0.1) -> None:
    """Holds the direction: nothing arrives before now + `seconds`."""
    link = sim.link(conn)
    d = link.dirs[_direction(dir)]
    d.hold(sim.t + float(seconds))
    sim.fault_event("delay", conn=link.id, dir=dir, until=round(d.hold_until, 9))


def close(sim: FaultTarget, conn: str | None = None, side: str = "client") -> None:
    """That side closes its TCP connection."""
    link = sim.link(conn)
    if side not in ("client", "server"):
        raise ValueError("side is 'client' or 'server'")
    sim.fault_event("close", conn=link.id, side=side)
    sim.close_side(link, side, "connection closed (fault)")


def corrupt(sim: FaultTarget, conn: str | None = None, dir: str = "c2s", offset: int | None = None,
            xor: int = 0xFF) -> int:
    """Flips bits (XOR `xor`) of the byte at `offset` of the direction's stream; returns the offset."""
    link = sim.link(conn)
    d = link.dirs[_direction(dir)]
    if not 0 < xor < 256:
        raise ValueError("xor is 1..255")
    offset = d.first_corruptible() if offset is None else int(offset)
    now = d.flip(offset, xor)
    sim.fault_event("corrupt" if now else "corrupt-armed", conn=link.id, dir=dir, offset=offset)
    return offset


def garbage(sim: FaultTarget, conn: str | None = None, dir: str = "c2s", data: str | bytes = "") -> None:
    """The writer of the direction writes raw bytes (hex text or bytes) into its stream."""
    link = sim.link(conn)
    raw = bytes.fromhex(data) if isinstance(data, str) else bytes(data)
    if not raw:
        raw = b"GET / HTTP/1.1\r\nHost: zmtplab\r\n\r\n"
    side = "client" if _direction(dir) == "c2s" else "server"
    sim.fault_event("garbage", conn=link.id, dir=dir, length=len(raw))
    sim.write(link, side, raw)


# ---------------------------------------------------------------- peer faults


def wrong_mechanism(sim: FaultTarget, peer: str | None = None, conn: str | None = None,
                    mechanism: str | None = None) -> list[str]:
    """The peer announces another mechanism than its partner uses; returns the new connection ids."""
    target, _ = _target(sim, peer, conn)
    current = target.overrides.get("mechanism", target.options.mechanism)
    mechanism = (mechanism or {"NULL": "PLAIN", "PLAIN": "NULL", "CURVE": "NULL"}[current]).upper()
    if mechanism not in ("NULL", "PLAIN", "CURVE"):
        raise ValueError("mechanism is NULL, PLAIN or CURVE")
    target.overrides["mechanism"] = mechanism
    if mechanism == "CURVE" and target.options.curve_serverkey is None:
        target.overrides["curve_serverkey"] = sim.rng.randbytes(32)
    sim.fault_event("wrong_mechanism", peer=target.name, mechanism=mechanism)
    return _reconnect(sim, target, f"{target.name} now announces {mechanism}")


def invalid_socket_pair(sim: FaultTarget, peer: str | None = None, conn: str | None = None,
                        socket_type: str | None = None) -> list[str]:
    """The peer announces a socket type its partner cannot talk to (23/ZMTP's table)."""
    target, link = _target(sim, peer, conn)
    partner = _partner(sim, target, link)
    if socket_type is None:
        if partner is None:
            raise ValueError("give socket_type: the peer has no partner yet")
        other = partner.options.socket_type
        socket_type = next(t for t in SOCKET_TYPES if t not in VALID_PEERS[other])
    socket_type = socket_type.upper()
    if socket_type not in SOCKET_TYPES:
        raise ValueError(f"unknown socket type {socket_type!r}")
    target.overrides["socket_type"] = socket_type
    sim.fault_event("invalid_socket_pair", peer=target.name, socket_type=socket_type)
    return _reconnect(sim, target, f"{target.name} now announces {socket_type}")


def zmtp_version(sim: FaultTarget, peer: str | None = None, conn: str | None = None,
                 version: str = "2.0") -> list[str]:
    """The peer speaks ZMTP 2.0 or 1.0 (only NULL exists there)."""
    target, _ = _target(sim, peer, conn)
    if version not in ("3.1", "3.0", "2.0", "1.0"):
        raise ValueError("version is 3.1, 3.0, 2.0 or 1.0")
    target.overrides["version"] = version
    if version in ("2.0", "1.0"):
        target.overrides["mechanism"] = "NULL"
    sim.fault_event("zmtp_version", peer=target.name, version=version)
    return _reconnect(sim, target, f"{target.name} now speaks ZMTP {version}")


def bad_password(sim: FaultTarget, peer: str | None = None, conn: str | None = None) -> list[str]:
    """A PLAIN client sends a wrong password; a server that accepted everyone now checks its accounts."""
    target, link = _target(sim, peer, conn)
    opts = target.options
    if opts.mechanism != "PLAIN" or opts.plain_server:
        raise ValueError(f"{target.name} is not a PLAIN client")
    partner = _partner(sim, target, link)
    if partner is not None and partner.options.plain_server and partner.options.username is None \
            and not partner.options.plain_users:
        partner.options.plain_users = {opts.username or "": opts.password or ""}
    target.overrides["password"] = (opts.password or "") + "-wrong"
    sim.fault_event("bad_password", peer=target.name)
    return _reconnect(sim, target, f"{target.name} now sends a wrong password")


def stop_answering(sim: FaultTarget, peer: str | None = None, conn: str | None = None) -> str:
    """The peer hangs on one connection: it writes nothing more (no PONG); the other side times out."""
    target, link = _target(sim, peer, conn)
    if link is None:
        link = next((lk for lk in reversed(sim.links.values()) if not lk.closed and target in lk.peers.values()),
                    None)
        if link is None:
            raise ValueError(f"{target.name} has no open connection")
    side = link.side_of(target)
    other_side = "server" if side == "client" else "client"
    link.pcs[side].mute = True
    other = link.peers[other_side]
    other_pc = link.pcs[other_side]
    if other.options.heartbeat_ivl <= 0:
        other.options.heartbeat_ivl = 1.0
        if other_pc.ready and other_pc.conn.version == "3.1" and other_pc.ping_deadline is None:
            other_pc.ping_deadline = sim.t + 1.0
    sim.fault_event("stop_answering", peer=target.name, conn=link.id)
    return link.id


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault("split", "cut a direction's bytes into separate writes at chosen offsets", split,
              {"conn": "connection id", "dir": "c2s or s2c", "at": "list of absolute offsets"}),
        Fault("delay", "hold a direction for some virtual seconds", delay,
              {"conn": "connection id", "dir": "c2s or s2c", "seconds": "virtual seconds"}),
        Fault("close", "one side closes the TCP connection", close,
              {"conn": "connection id", "side": "client or server"}),
        Fault("corrupt", "flip the bits of one byte on the wire", corrupt,
              {"conn": "connection id", "dir": "c2s or s2c", "offset": "absolute offset (default: next)",
               "xor": "bit mask, default 0xFF"}),
        Fault("garbage", "write raw bytes into a direction", garbage,
              {"conn": "connection id", "dir": "c2s or s2c", "data": "hex"}),
        Fault("wrong_mechanism", "a peer announces another security mechanism", wrong_mechanism,
              {"peer": "peer name", "conn": "connection id", "mechanism": "NULL, PLAIN or CURVE"}),
        Fault("invalid_socket_pair", "a peer announces a socket type its partner cannot talk to",
              invalid_socket_pair, {"peer": "peer name", "conn": "connection id", "socket_type": "type"}),
        Fault("zmtp_version", "a peer speaks ZMTP 2.0 or 1.0", zmtp_version,
              {"peer": "peer name", "conn": "connection id", "version": "2.0 or 1.0"}),
        Fault("bad_password", "a PLAIN client sends a wrong password", bad_password,
              {"peer": "peer name", "conn": "connection id"}),
        Fault("stop_answering", "a peer hangs: PINGs go unanswered until the heartbeat times out",
              stop_answering, {"peer": "peer name", "conn": "connection id"}),
    )
}



@dataclass(frozen=True)
class SessionFault:
    """A fault a playground session takes by name: the simulation's fault it applies (None: real peers only),
    and whether a real TCP session can inject it."""

    name: str
    simulated: str | None
    tcp: bool

    def modes(self) -> list[str]:
        """The session modes that take it: "simulated", "tcp"."""
        return [mode for mode, ok in (("simulated", self.simulated is not None), ("tcp", self.tcp)) if ok]


SESSION_FAULTS: dict[str, SessionFault] = {
    f.name: f
    for f in (
        SessionFault("corrupt_byte", "corrupt", tcp=True),
        SessionFault("split_writes", "split", tcp=True),
        SessionFault("delay", "delay", tcp=True),
        SessionFault("close", "close", tcp=True),
        SessionFault("kill", None, tcp=True),  # a real process dies; a simulated peer has no process
        SessionFault("wrong_mechanism", "wrong_mechanism", tcp=False),
        SessionFault("stop_pong", "stop_answering", tcp=False),
    )
}

__all__ = ["FAULTS", "SESSION_FAULTS", "Fault", "SessionFault"]
