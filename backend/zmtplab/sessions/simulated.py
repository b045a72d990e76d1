"""Simulated sessions: two peers on `peers.simulation.Simulation`'s virtual clock, played element by element.

`step` moves the simulation until the next protocol element (greeting, command, frame,
message, expert) has crossed the wire; `play` does that every `sim_step_interval / speed`
seconds of real time; `step_back` rewinds the simulation (it is deterministic: the same seed
and script give the same bytes) to just before the last element. A message sent or a fault
injected after stepping back starts a new branch of the session.

The simulation's own log also has `link` and `peer` entries (bytes delivered, handshakes,
messages the applications received, faults); they go to the browser as
`{"type": "log", "entry": ...}` messages (to the sockets that want them), and the bytes they
report are the session's wire bytes (for the pcapng export).

A topology session (nodes and links, or a preset) runs its topology on a simulation with
decisions on (`Simulation(decisions=True, window=WINDOW)`): its sockets' decisions (`socket`
events) and its applications' reads (`peer recv`) are events too, beside the wire elements, in
the stream, the export and the step history; each node has its own address in the export
(127.0.0.N). The two-peer body runs exactly as before topologies.

A session playing live (an interval under `LIVE`) whose player waits for work plays what a
`send` sets going within the command itself: the same elements in the same order as the player
would on waking, without a task switch per message (a busy server runs a hundred such sessions).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from ..engine.constants import mechanism_problem
from ..engine.events import WIRE_KINDS
from ..peers.faults import FAULTS, SESSION_FAULTS
from ..peers.node import socket_options
from ..peers.simulation import Simulation
from .session import (
    CLIENT_IP,
    SERVER_IP,
    SIM_CLIENT_PORT,
    SIM_SERVER_PORT,
    Session,
    SessionConfigError,
    SessionError,
    SessionNotice,
    check_manual,
)
from .setup import SessionSetup

log = logging.getLogger(__name__)

MAX_STEPS_PER_ELEMENT = 64  # deliveries without a new element before a step gives up (e.g. an idle session)
MAX_ELEMENTS_PER_TURN = 256  # elements a playing session catches up on before it lets others run
TURN_SECONDS = 0.005  # and the time it may take doing so (its next element waits for the next turn)
MAX_BACKLOG = 1.0  # seconds of playback a session that fell behind catches up on at most
LIVE = 0.002  # an interval shorter than this (a timer's resolution) plays whatever is ready at once
WIRE = frozenset(WIRE_KINDS)
WINDOW = 32  # octets a topology's simulated TCP connection holds in flight once its reader stops (back-pressure)


class SimulatedRuntime:
    """Drives a `simulated` session (see the module docstring)."""

    def __init__(self, session: Session, *, seed: int = 0, simulation: dict[str, Any] | None = None,
                 peers: dict[str, dict[str, Any]] | None = None, player: bool = True) -> None:
        """`simulation`: options of the `Simulation` beyond a session's (a lesson's latency, window, fields);
        `peers`: a two-peer body's peers' `add_peer` options when the caller says more than a node holds (a lesson's
        heartbeats, properties), in place of the nodes' `socket_options`; `player`: whether `start` starts the
        asyncio task that plays the session (not when a synchronous driver steps it, `sessions.driver`)."""
        self.session = session
        self.has_player = player
        setup = session.setup
        self.limits = session.limits
        self.topology = session.topology  # None: the two-peer body
        self.nodes = setup.topology.names  # (a two-peer body's: server and client)
        self.peer_options = peers
        # Without fields: the session makes a frame's or message's fields only for those who ask (most
        # pages never open most elements).
        cap = self.limits.session_event_max_body  # (what a session keeps of a body: cut where it is made)
        options: dict[str, Any] = {"seed": seed, "fields": False, "max_body": cap, "wire_data": True}
        if self.topology is not None:
            options.update(decisions=True, window=WINDOW)
        self.sim = Simulation(**{**options, **(simulation or {})})
        self.conns: list[dict[str, Any]] = []  # a topology's connections so far: conn, link, client, server
        self._addresses = ({n.name: f"127.0.0.{i + 1}" for i, n in enumerate(self.topology.nodes)}
                           if self.topology is not None else {})
        self.playing = setup.autoplay
        self.speed = 1.0
        self.consumed = 0  # how much of sim.events the session has seen
        self.high_water = 0  # the most elements this branch has had (the state's `total`)
        self.history: list[int] = []  # sim.steps before each element, for step_back
        self._wake = asyncio.Event()
        self._player: asyncio.Task | None = None
        self._parked = False  # the player waits for a command (paused, or nothing scheduled)
        self._due = 0.0  # when the player plays its next element (the loop's clock)
        self._closed = False

    @staticmethod
    def check(setup: SessionSetup) -> None:
        """Refuses setups a simulation cannot run (libzmq's nodes are real sockets, external ones real programs)."""
        for node in setup.topology.nodes:
            if node.libzmq:
                raise SessionConfigError(f"{node.name}: libzmq peers need a real session (mode 'tcp')"
                                         if setup.two_peer else
                                         f"node {node.name!r}: libzmq nodes need a real session (mode 'tcp')")
            if node.external:  # (a program outside the lab cannot live on the virtual clock)
                raise SessionConfigError(f"node {node.name!r}: external nodes need a real session (mode 'tcp'): a "
                                         "program outside the lab runs in real time, not on the simulation's clock")
        if setup.two_peer:  # (a topology's nodes are checked as they are made)
            for node in setup.topology.nodes:
                problem = mechanism_problem(node.version, node.mechanism)
                if problem:
                    raise SessionConfigError(f"{node.name}: {problem}")

    # ---- setup

    async def start(self) -> None:
        self._set_up()
        if self.has_player:
            self._player = asyncio.create_task(self._play_loop(), name=f"session-{self.session.id}-player")

    def _set_up(self) -> None:
        if self.topology is not None:
            try:
                self.sim.add_topology(self.topology)
            except ValueError as exc:
                raise SessionConfigError(str(exc)) from None
            self.absorb()
            return
        server, client = self.nodes["server"], self.nodes["client"]
        given = self.peer_options or {}
        try:
            self.sim.add_peer("server", server.type, **given.get("server", socket_options(server, server=True)))
            self.sim.add_peer("client", client.type, **given.get("client", socket_options(client, server=False)))
            self.sim.connect("client", "server")
            for peer in (server, client):
                if peer.type == "SUB":
                    # (a subscription given, "" the empty prefix: every message; none: as a libzmq SUB that
                    # never subscribed)
                    for topic in peer.subscribe:
                        self.sim.subscribe(peer.name, topic.encode())
        except ValueError as exc:
            raise SessionConfigError(str(exc)) from None
        self.absorb()

    # ---- moving the simulation

    def absorb(self) -> int:
        """Passes the simulation's new log entries on; returns how many elements they held."""
        sim_events = self.sim.events
        if not sim_events:
            return 0
        session = self.session
        # The session keeps the elements (as JSON); the simulation's copies can go (rewind rebuilds them),
        # so they are renumbered in place rather than copied.
        entries = sim_events[:]
        del sim_events[:]
        self.consumed = 0
        elements = 0
        add_event = session.add_event
        logs = session.log_subscribers
        session_conn = _SESSION_CONN
        topology = self.topology is not None
        for entry in entries:  # in the simulation's order: a message before the `recv` it caused
            conn = entry.get("conn")
            if conn is not None:  # (`_renumber`, inline: every entry of a busy session comes here)
                ours = session_conn.get(conn)
                if ours is not None:
                    entry["conn"] = ours
                else:
                    _renumber(entry)
            kind = entry["kind"]
            if kind in WIRE:
                add_event(entry, entry.pop("framing", None))
                elements += 1
                continue
            if topology and (kind == "socket" or (kind == "peer" and entry["what"] == "recv")):
                add_event(entry)
                elements += 1
                continue
            if kind == "link":
                if entry["what"] == "bytes":
                    session.add_wire(entry["conn"], entry["dir"], self._wire_octets(entry), entry["t"])
                else:
                    self._link_entry(entry)
            if logs:
                session.log(entry)
        if len(session.events) > self.high_water:
            self.high_water = len(session.events)
        return elements

    def _wire_octets(self, entry: dict[str, Any]) -> bytes:
        """A `bytes` entry's octets, which it carries as `data` (`Simulation(wire_data=True)`); the entry gets
        the `hex` of the log contract instead, cut to `session_event_max_body` octets as the log would cut it."""
        data = entry.get("data")
        if data is None:
            return bytes.fromhex(entry.get("hex", ""))
        cap = self.limits.session_event_max_body
        items = list(entry.items())
        entry.clear()
        for key, value in items:  # (`hex` where `data` was: the log's keys keep their order)
            if key == "data":
                entry["hex"] = data[:cap].hex()
            else:
                entry[key] = value
        if len(data) > cap:
            entry["truncated"] = True
        return data

    def _link_entry(self, entry: dict[str, Any]) -> None:
        if entry.get("kind") != "link":
            return
        what, conn, t = entry.get("what"), str(entry.get("conn")), float(entry.get("t", 0.0))
        if what == "open":
            n = int(conn) if conn.isdigit() else 0
            if self.topology is not None:
                self._topology_conn(conn, n, entry, t)
                return
            self.session.add_connection(conn, (CLIENT_IP, SIM_CLIENT_PORT + n), (SERVER_IP, SIM_SERVER_PORT), t)
        elif what == "bytes":
            self.session.add_wire(conn, entry["dir"], self._wire_octets(entry), t)
        elif what == "closed":
            self.session.end_connection(conn, t)

    def _topology_conn(self, conn: str, n: int, entry: dict[str, Any], t: float) -> None:
        """A topology's connection opened: each node at its own address, the link it belongs to in `conns`."""
        client, server = str(entry.get("client")), str(entry.get("server"))
        addresses = self._addresses
        self.session.add_connection(conn, (addresses.get(client, CLIENT_IP), SIM_CLIENT_PORT + n),
                                    (addresses.get(server, SERVER_IP), SIM_SERVER_PORT), t)
        assert self.topology is not None
        link = next((i for i, lk in enumerate(self.topology.links) if lk.connect == client and lk.bind == server), None)
        self.conns.append({"conn": conn, "link": link, "client": client, "server": server})
        self.session.topology_changed()

    def advance(self) -> int:
        """One element forward (several deliveries when an element comes in pieces); returns elements added."""
        sim = self.sim
        before = sim.steps
        added = 0
        for _ in range(MAX_STEPS_PER_ELEMENT):
            if not sim.step():
                break
            added += self.absorb()
            if added:
                break
        if sim.steps != before:
            self.history.append(before)
        return added

    def _idle(self) -> bool:
        """Nothing scheduled, and no replayed action (after a step back) due at this step."""
        sim = self.sim
        return sim.idle() and not sim.replay_due()

    async def _play_loop(self) -> None:
        """Plays one element every `sim_step_interval / speed` seconds, on a schedule: a session that
        woke late (a busy server, a fast speed) plays every element that is due in one turn. At the
        highest speeds (an interval under `LIVE`) it plays whatever is ready as soon as it is ready:
        elements reach the browser as fast as the traffic arrives."""
        loop = asyncio.get_running_loop()
        self._due = loop.time()
        wake = self._wake
        while not self._closed:
            if self.playing:
                interval = self.limits.sim_step_interval / self.speed
                if not self._turn(loop.time(), interval):
                    await asyncio.sleep(0.0 if interval < LIVE else max(0.0, self._due - loop.time()))
                    continue
            # Paused, or nothing scheduled: sleep until a command pokes us. Nothing else can schedule
            # anything: every command that gives the simulation work (send, fault, play, speed) pokes or
            # plays at once (`_play_now`). (No timer here: one per idle wait, that is per message of a
            # busy session, would cost more than the step.)
            wake.clear()
            self._parked = True
            try:
                await wake.wait()
            finally:
                self._parked = False
            self._due = loop.time()

    def _turn(self, now: float, interval: float) -> bool:
        """Plays what is due at `now` (everything ready, when `interval` is under `LIVE`); returns True when
        the player should wait for a command: nothing is scheduled (or a failure paused the session)."""
        live = interval < LIVE
        due = max(self._due, now - MAX_BACKLOG)
        added = 0
        ran_out = False  # the last advance() found nothing to show
        idle = False  # known to be idle
        began = time.perf_counter()
        try:
            for _ in range(MAX_ELEMENTS_PER_TURN):
                step = self.advance()
                if not step:
                    ran_out = True
                    break
                added += step
                due += interval
                if (due > now and not live) or not self.playing:
                    break
                if time.perf_counter() - began > TURN_SECONDS:
                    break  # (the rest in the next turn: one session's megabytes never hold the loop for long)
                if self._idle():  # (cheaper than an advance() that finds nothing)
                    ran_out = idle = True
                    break
        except Exception as exc:  # a bug must not leave a session spinning
            log.exception("simulation step failed")
            self.playing = False
            self.session.error(f"the simulation stopped: {type(exc).__name__}: {exc}")
            self.session.push_state()
            return True  # paused now: wait for a command
        if added:
            self.session.push_state()
        if ran_out and (idle or self._idle()):
            return True
        self._due = due if added else now + interval
        return False

    def _play_now(self) -> None:
        """After a command that gave the simulation work: a live session whose player waits for work plays
        it here and now, exactly as the player would have on waking (same elements, same order), without
        the task switch; anything else pokes the player."""
        if self._parked and self.playing and not self._closed:
            interval = self.limits.sim_step_interval / self.speed
            # Live, the schedule plays no part (everything ready plays at once) and the player takes the
            # clock afresh when it wakes: no need to read it here.
            if interval < LIVE and self._turn(self._due, interval):
                return  # played everything: the player goes on waiting
        self._poke()

    def _poke(self) -> None:
        self._wake.set()

    # ---- commands

    async def send(self, side: str, frames: list[bytes]) -> None:
        try:
            self.sim.send(side, frames)
        except ValueError as exc:
            raise SessionError(f"could not send: {exc}") from None
        self._new_branch()
        self.absorb()
        self._play_now()

    async def recv(self, node: str) -> None:
        spec = self.topology.names.get(node) if self.topology is not None else None
        check_manual(node, spec.recv if spec is not None else None)
        try:
            frames = self.sim.recv(node)
        except ValueError as exc:
            raise SessionError(f"could not read: {exc}") from None
        if frames is None:
            raise SessionError(f"{node} has no message waiting")
        self._new_branch()
        self.absorb()
        self._play_now()

    def _new_branch(self) -> None:
        self.high_water = len(self.session.events)

    async def play(self) -> None:
        self.playing = True
        self._poke()

    async def pause(self) -> None:
        self.playing = False

    async def step(self) -> None:
        self.playing = False
        if not self.advance():
            raise SessionNotice("nothing more happens: send a message or inject a fault")

    async def step_back(self) -> None:
        self.playing = False
        if not self.history:
            raise SessionNotice("already at the start")
        target = self.history.pop()
        # Simulation.rewind() rebuilds from the actions so far, without those a previous rewind left waiting
        # (still in the future): put them back so a second step back keeps them.
        self.sim.keep_replayed_future()
        # On the event loop on purpose: the simulation seeds CURVE's randomness by patching the engine
        # module while it runs, which must never overlap real (tcp) sessions' handshakes in another thread.
        events = self.sim.rewind(to_step=target)
        del self.sim.events[:]
        self.consumed = 0
        session = self.session
        # The rewound log is a prefix of the old one: keep as many elements, rebuild the wire bytes.
        session.wire.clear()
        session.wire_bytes = 0
        session.endpoints.clear()
        self.conns.clear()
        count = 0
        topology = self.topology is not None
        for entry in events:
            kind = entry.get("kind")
            if kind in WIRE or (topology and (kind == "socket" or (kind == "peer" and entry.get("what") == "recv"))):
                count += 1
            else:
                self._link_entry(_renumbered(entry))
        session.truncate_events(count)

    async def set_speed(self, value: float) -> None:
        self.speed = value
        self._poke()

    async def fault(self, name: str, args: dict[str, Any]) -> None:
        session_fault = SESSION_FAULTS.get(name)
        if session_fault is not None and session_fault.simulated is None:
            raise SessionError(f"the fault {name!r} needs a real session (mode 'tcp'); here try 'close'")
        fault = session_fault.simulated if session_fault is not None else name
        if fault not in FAULTS:
            names = sorted({*FAULTS, *(n for n, f in SESSION_FAULTS.items() if f.simulated is not None)})
            raise SessionError(f"unknown fault {name!r}; one of {', '.join(names)}")
        params = FAULTS[fault].params
        if self.topology is not None:
            args = self._node_to_side(args)
        args = _peer_to_direction(fault, args)
        unknown = [k for k in args if k not in params and not (fault == "split" and k == "count")]
        if unknown:
            raise SessionError(f"fault {name!r} takes no argument {unknown[0]!r}; it takes {', '.join(params)}")
        kwargs = dict(args)
        if kwargs.get("conn") is not None:
            kwargs["conn"] = _sim_conn(kwargs["conn"])
        if fault == "split" and "at" not in kwargs:
            kwargs = self._split_args(kwargs)
        try:
            self.sim.inject(fault, **kwargs)
        except (ValueError, TypeError, KeyError) as exc:
            raise SessionError(f"fault {name!r} failed: {exc}") from None
        self._new_branch()
        self.absorb()
        self._poke()

    def _node_to_side(self, args: dict[str, Any]) -> dict[str, Any]:
        """In a topology the page names a node (`peer`): on connection `conn` (by default the node's newest open
        one) it is the server or the client."""
        node = args.get("peer")
        if node is None:
            return args
        links = [lk for lk in self.sim.links.values() if node in (lk.peers["client"].name, lk.peers["server"].name)]
        if args.get("conn") is not None:
            conn = _sim_conn(args["conn"])
            links = [lk for lk in links if lk.id == conn]
        else:
            links = [lk for lk in links if not lk.closed]
        if not links:
            raise SessionError(f"node {node!r} has no such connection")
        link = links[-1]
        side = "client" if link.peers["client"].name == node else "server"
        return {**args, "peer": side, "conn": str(int(link.id) - 1)}

    def _split_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """`split_writes` without offsets: the next `count` (16) octets of the direction, one write each."""
        count = args.pop("count", 16)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 4096:
            raise SessionError("count is a number of octets, 1 to 4096")
        links = [lk for lk in self.sim.links.values() if not lk.closed]
        conn = args.get("conn")  # already the simulation's id
        link = self.sim.links.get(str(conn)) if conn is not None else (links[-1] if links else None)
        if link is None:
            raise SessionError("no open connection")
        direction = args.get("dir") or "c2s"
        if direction not in ("c2s", "s2c"):
            raise SessionError("dir is 'c2s' or 's2c'")
        start = link.dirs[direction].delivered
        return {**args, "conn": link.id, "dir": direction, "at": list(range(start + 1, start + 1 + count))}

    # ---- state

    def position(self) -> int:
        return len(self.session.events)

    def total(self) -> int:
        return max(self.high_water, len(self.session.events))

    def closed(self) -> bool:
        links = self.sim.links.values()
        return bool(links) and all(link.closed for link in links)

    def up(self) -> bool:
        return True  # (the simulation's links come up on its own clock, with the script)

    def at_end(self) -> bool:
        return self.position() >= self.total() and self._idle()

    def can_step_back(self) -> bool:
        return bool(self.history)

    def keylog(self) -> str:
        return self.sim.keylog()

    async def close(self) -> None:
        self._closed = True
        self._poke()
        if self._player is not None:
            self._player.cancel()
            with contextlib.suppress(BaseException):
                await self._player


TRANSPORT_FAULTS = frozenset({"corrupt", "split", "delay", "garbage"})  # they act on one direction (`dir`)


def _peer_to_direction(fault: str, args: dict[str, Any]) -> dict[str, Any]:
    """The page names the peer whose output a fault affects (`peer`): a transport fault takes the direction
    that peer writes (`dir`), `close` the side that closes."""
    peer = args.get("peer")
    if peer is None or (fault not in TRANSPORT_FAULTS and fault != "close"):
        return args
    if peer not in ("server", "client"):
        raise SessionError("peer is 'server' or 'client'")
    rest = {k: v for k, v in args.items() if k != "peer"}
    if fault == "close":
        return {"side": peer, **rest}
    return {"dir": "s2c" if peer == "server" else "c2s", **rest}


def _renumbered(entry: dict[str, Any]) -> dict[str, Any]:
    """A copy of a log entry with the session's connection id: the simulation counts from 1, sessions
    (like captures and the tcp tap) from 0."""
    entry = dict(entry)
    _renumber(entry)
    return entry


_SESSION_CONN: dict[str, str] = {}  # the simulation's connection id -> the session's (a cache)


def _renumber(entry: dict[str, Any]) -> None:
    """Gives a log entry the session's connection id, in place (see `_renumbered`)."""
    conn = entry.get("conn")
    if type(conn) is str:
        ours = _SESSION_CONN.get(conn)
        if ours is None:
            if not conn.isdigit():
                return
            ours = str(int(conn) - 1)
            if len(_SESSION_CONN) < 4096:
                _SESSION_CONN[conn] = ours
        entry["conn"] = ours


def _sim_conn(conn: Any) -> str:
    """The simulation's id of a session connection id."""
    text = str(conn)
    if not text.isdigit():
        raise SessionError(f"no connection {text!r}")
    return str(int(text) + 1)
