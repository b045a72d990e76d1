"""Playground sessions: two peers (simulated, or real over loopback TCP) whose every element streams to browsers.

A `Session` keeps the annotated events of its connection(s) (the event contract of
docs/architecture.md, with `fields`, `t` and `seq`) and the raw bytes that crossed the wire (for
the pcapng export).
It fans out to any number of websocket subscribers: each gets the events so far on
connect (read from the log as its socket sends them), then every new event, state change, reset and error.

What one session may make the server hold is bounded in octets (issue 31): each event keeps at most
`session_event_max_body` octets of its body (longer ones are cut, `truncated`, their fields made from the
whole bytes first), the events together `session_max_event_bytes` of JSON, each socket's queue
`session_max_queue_bytes`, and a `send` is charged once per connection it may cross (`Topology.deliveries`)
against `session_max_sent_bytes`.

The peers are driven by a runtime: `simulated.SimulatedRuntime` (a deterministic simulation on a
virtual clock: play, pause, step, step back, speed) or `tcp.TcpRuntime` (real peers, ours or
libzmq's, through a forwarding tap that dissects the bytes as they pass). The
`manager.SessionManager` creates sessions, and ends them when their last websocket has been gone
for the grace period, or when they are idle too long; ending a session frees its peers
and ports.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import logging
import time
import zlib
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import orjson

from ..capture.pcapwriter import PcapngWriter
from ..engine.events import cut_bodies, refield
from ..engine.notation import parse_hex
from .limits import SessionLimits
from .setup import SessionSetup

log = logging.getLogger(__name__)

SERVER_IP, CLIENT_IP = "127.0.0.1", "127.0.0.1"
SIM_SERVER_PORT = 25555
SIM_CLIENT_PORT = 40000
LATER_PEER_OPTIONS = {"greeting": "libzmq", "subscribe": ""}  # peer options newer than the export format, by default
BACKLOG_BYTES = 1 << 20  # octets of events one read of a subscriber's backlog gives (one at least)
SUMMARY_PERIOD = 1.0  # seconds: a summary subscriber's topology message comes at most this often as a class changes


class SessionError(Exception):
    """A command the session cannot carry out; its text goes to the browser as `{"type": "error"}`."""


class NodeFull(SessionError):
    """An external node already has its `max_connections`: one more program is refused."""


class SessionNotice(SessionError):
    """A command that found nothing to do, which is no fault ("nothing more happens"): its `error` message says
    `"severity": "info"`, and the page shows it as a note, not as an error."""


def check_manual(name: str, recv: str | float | None) -> None:
    """Refuses a `recv` command for node `name` unless its application reads by hand (`recv` "manual"; None:
    there is no such node)."""
    if recv is None:
        raise SessionError(f"no node named {name!r} (recv is for a topology's nodes whose recv is 'manual')")
    if recv != "manual":
        how = "as each message comes" if recv == "auto" else f"one message every {recv:g} s"
        raise SessionError(f"{name} reads by itself ({how}); only a node with recv 'manual' waits for recv")


class SessionConfigError(ValueError):
    """A session configuration that cannot run (the web app answers 422)."""


class TooManySessions(OverflowError):
    """The server, or this client, runs as many sessions as it may (the web app answers 429)."""


class SessionNotFound(KeyError):
    """No session has this id (any more): the web app answers 404, its socket closes with 4404."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session with id {session_id!r}")

    def __str__(self) -> str:  # (its text, where a KeyError would quote it)
        return str(self.args[0])


class EventNotFound(IndexError):
    """A session has no event at this position (the web app answers 404)."""

    def __init__(self, seq: int) -> None:
        super().__init__(f"the session has no event {seq}")


class WireChunk(NamedTuple):
    """Bytes that crossed one direction of one connection at time `t` (seconds since the session start).

    `Session.wire` keeps them as plain tuples (`WireChunk._make` reads one): the garbage collector
    stops tracking a plain tuple of atoms (not a subclass's), and a busy session keeps one per
    message; every tracked object lengthens every full collection, a pause of the whole server."""

    conn: str
    dir: str
    data: bytes
    t: float


@dataclass
class ConnEndpoints:
    """The addresses a connection gets in the pcapng export."""

    client: tuple[str, int]
    server: tuple[str, int]
    opened: float
    closed: float | None = None


class Runtime(Protocol):
    """What drives a session's peers (see `simulated.SimulatedRuntime` and `live.TcpRuntime`)."""

    playing: bool
    speed: float

    async def start(self) -> None: ...
    async def close(self) -> None: ...
    async def send(self, side: str, frames: list[bytes]) -> None: ...
    async def recv(self, node: str) -> None: ...  # a topology's manual node reads one message
    async def play(self) -> None: ...
    async def pause(self) -> None: ...
    async def step(self) -> None: ...
    async def step_back(self) -> None: ...
    async def set_speed(self, value: float) -> None: ...
    async def fault(self, name: str, args: dict[str, Any]) -> None: ...
    def position(self) -> int: ...
    def total(self) -> int: ...
    def closed(self) -> bool: ...
    def up(self) -> bool: ...  # a real topology's first links are up and its script runs (see `state`)
    def at_end(self) -> bool: ...  # nothing more is scheduled: only a send, a fault or a read moves the session on
    def can_step_back(self) -> bool: ...
    def keylog(self) -> str: ...  # the CURVE key log of our peers' connections (engine.curve.keylog_line)


class EventLog:
    """A session's events as JSON text, in order: the newest in a list, older ones in zlib-compressed
    blocks of `BLOCK` (events compress about tenfold; a busy session holds tens of thousands).

    Each event has a code (`codes`, one octet each): `NO_FIELDS` (an event without `fields`, such as a
    socket decision), `FIELDS` (kept with its fields), or a framing's character ("3", "2", "1"): a frame
    or message kept without its fields, which `engine.events.refield` makes again from that framing.

    The first block holds `first_block` events (1 to `BLOCK`): sessions give theirs different sizes so
    that sessions started together, and as busy as each other, do not all compress a block in the same
    turn of the event loop (a pause for every socket at once)."""

    BLOCK = 256
    NO_FIELDS, FIELDS = 0, 1

    def __init__(self, first_block: int = BLOCK) -> None:
        self.first_block = max(1, min(first_block, self.BLOCK))
        self.blocks: list[bytes] = []
        self.tail: list[str] = []
        self.codes = bytearray()
        self.sizes = array("I")  # each event's text length
        self.bytes = 0  # their sum: the octets of JSON the log holds (compressed or not)
        self.count = 0  # len(self), kept as an attribute: the hot path asks for it with every event
        self.tail_limit = self.first_block  # when the tail becomes a block

    def __len__(self) -> int:
        return self.count

    def append(self, text: str, code: int = FIELDS) -> None:
        tail = self.tail
        tail.append(text)
        self.codes.append(code)
        self.sizes.append(len(text))
        self.bytes += len(text)
        self.count += 1
        if len(tail) >= self.tail_limit:
            # JSON text never holds a raw newline: it separates the events of a block.
            self.blocks.append(zlib.compress("\n".join(tail).encode(), 1))
            self.tail = []
            self.tail_limit = self.BLOCK

    @staticmethod
    def _unpack(block: bytes) -> list[str]:
        return zlib.decompress(block).decode().split("\n")

    def __iter__(self) -> Iterator[str]:
        for block in self.blocks:
            yield from self._unpack(block)
        yield from self.tail

    def items(self) -> Iterator[tuple[str, int]]:
        """Every event's text with its code."""
        return zip(self, self.codes, strict=True)

    def _locate(self, index: int) -> tuple[int, int]:
        """The block (`len(blocks)`: the tail) that holds event `index`, and its place in it."""
        if index < self.first_block:
            return 0, index
        k, r = divmod(index - self.first_block, self.BLOCK)
        return k + 1, r

    def get(self, index: int) -> tuple[str, int]:
        """Event `index`'s text and code; IndexError when there is none."""
        if not 0 <= index < self.count:
            raise IndexError(index)
        k, r = self._locate(index)
        text = self._unpack(self.blocks[k])[r] if k < len(self.blocks) else self.tail[r]
        return text, self.codes[index]

    def texts(self, start: int, stop: int, max_bytes: int | None = None) -> list[tuple[str, int]]:
        """The texts and codes of events `start` to `stop - 1` (each block unpacked once); with `max_bytes`, only
        as many as reach that many octets (one at least)."""
        out: list[tuple[str, int]] = []
        stop = min(stop, self.count)
        if max_bytes is not None:
            total, end = 0, start
            while end < stop and (total < max_bytes or end == start):
                total += self.sizes[end]
                end += 1
            stop = end
        i = max(start, 0)
        while i < stop:
            k, r = self._locate(i)
            block = self._unpack(self.blocks[k]) if k < len(self.blocks) else self.tail
            take = min(stop - i, len(block) - r)
            out.extend(zip(block[r:r + take], self.codes[i:i + take], strict=True))
            i += take
        return out

    def _tail_start(self) -> int:
        blocks = len(self.blocks)
        return self.first_block + (blocks - 1) * self.BLOCK if blocks else 0

    def truncate(self, count: int) -> None:
        """Keeps the first `count` events."""
        if count >= len(self):
            return
        count = max(count, 0)
        if count < self.first_block:
            k, r = 0, count
        else:
            k, r = divmod(count - self.first_block, self.BLOCK)
            k += 1
        if k < len(self.blocks):
            self.tail = self._unpack(self.blocks[k])[:r]
            del self.blocks[k:]
        else:
            del self.tail[r:]
        del self.codes[count:]
        self.bytes -= sum(self.sizes[count:])
        del self.sizes[count:]
        self._recount()

    def clear(self) -> None:
        self.blocks.clear()
        self.tail.clear()
        self.codes.clear()
        self.sizes = array("I")
        self.bytes = 0
        self._recount()

    def _recount(self) -> None:
        blocks = len(self.blocks)
        self.count = self._tail_start() + len(self.tail)
        self.tail_limit = self.BLOCK if blocks else self.first_block


class Output(Protocol):
    """Where a subscriber's messages go, each JSON text, in order (the web app's `web.wspump.Outbox`): `put_text`
    queues one, `mark_due` says the state is due (made by the `due` function the output was made with, when it is
    sent), `end` says no more will come."""

    def put_text(self, text: str) -> None: ...
    def mark_due(self) -> None: ...
    def end(self) -> None: ...


class OutputFactory(Protocol):
    """Makes a subscriber's `Output`: at most `limit` messages (`max_bytes` octets) queued, past which the
    subscriber is given up; `control` messages first, then the `backlog` (read as it is sent: up to n more texts a
    call, none at its end), then what is put; `due` makes the due message."""

    def __call__(self, limit: int, *, max_bytes: int, due: Callable[[], str], control: list[str],
                 backlog: Callable[[int], list[str]] | tuple[()]) -> Output: ...


class Subscriber:
    """One subscriber of a session (a websocket, in the web app): its `Output`, whether it wants `log` messages and
    events' `fields`. The events the session had when it subscribed are its backlog, read from the log as they are
    sent, up to `backlog_end` (lowered when the session steps back or resets before they are sent)."""

    def __init__(self, make_output: OutputFactory, limit: int, max_bytes: int, state: Callable[[], str],
                 logs: bool = True, marks: bool = False, fields: bool = True, control: list[str] | None = None,
                 events: EventLog | None = None, hidden: bytearray | None = None) -> None:
        self.log = events
        self.hidden = hidden  # (one octet an event, 1: it is not sent: a class's connection, to a summary subscriber)
        self.backlog_pos = 0
        self.backlog_end = events.count if events is not None else 0
        self.out = make_output(limit, max_bytes=max_bytes, due=state, control=control or [],
                               backlog=self._backlog if self.backlog_end else ())
        self.put_text = self.out.put_text  # (bound once: the session's hot path calls it for every event)
        self.mark_due = self.out.mark_due
        self.end = self.out.end
        self.logs = logs  # whether it wants the `log` messages of simulated sessions
        self.marks = marks  # without `logs`: only the `log` messages that are marks (see `is_mark`)
        self.fields = fields  # whether its events carry `fields` (else the page asks for an element's: `event`)
        self.summary = hidden is not None  # a class's connections only summarised (`Session.subscribe`)
        self.topology = False  # whether it gets the topology message

    def _backlog(self, n: int) -> list[str]:
        """The next `n` events of the backlog (fewer past `BACKLOG_BYTES` octets; none at its end), those
        `hidden` marks left out (one at least while there are more)."""
        log = self.log
        if log is None:
            return []
        shape = full_text if self.fields else bare_text
        hidden = self.hidden
        if hidden is None:
            start = self.backlog_pos
            texts = log.texts(start, min(self.backlog_end, start + n), BACKLOG_BYTES)
            self.backlog_pos = start + len(texts)
            return ['{"type":"event","event":' + shape(text, code) + "}" for text, code in texts]
        out: list[str] = []
        pos, end, taken = self.backlog_pos, min(self.backlog_end, len(hidden)), 0
        while pos < end and len(out) < n and taken < BACKLOG_BYTES:
            # (runs of events it is sent, found in C: a class's hundreds of connections are skipped, never read)
            start = hidden.find(0, pos, end)
            if start < 0:
                pos = end
                break
            stop = hidden.find(1, start, end)
            texts = log.texts(start, min(end if stop < 0 else stop, start + n - len(out)), BACKLOG_BYTES - taken)
            out.extend('{"type":"event","event":' + shape(text, code) + "}" for text, code in texts)
            taken += sum(len(text) for text, _ in texts)
            pos = start + len(texts)
        self.backlog_pos = pos if pos < end else self.backlog_end
        return out

    def put(self, message: dict[str, Any]) -> None:
        self.put_text(dumps(message))


class Command(Protocol):
    """A validated command (`sessions.commands`): it carries itself out on the session, under its lock."""

    async def apply(self, session: Session) -> None: ...


class Session:
    """One playground session (see the module docstring)."""

    def __init__(self, session_id: str, setup: SessionSetup, limits: SessionLimits,
                 runtime_factory: Callable[[Session], Runtime], client: str = "") -> None:
        self.id = session_id
        self.setup = setup
        self.limits = limits
        self.topology = None if setup.two_peer else setup.topology  # None: the two-peer body
        self.client = client
        self.messages = 0  # messages and faults carried since the start (or the last reset)
        self.sent_bytes = 0
        self.created = time.time()
        self.wall0 = self.created
        # The first block's size comes from the id (random for real sessions), see EventLog.
        self.events = EventLog(first_block=1 + zlib.crc32(session_id.encode()) % EventLog.BLOCK)
        self.wire: list[tuple[str, str, bytes, float]] = []  # WireChunk fields, as plain tuples
        self.wire_bytes = 0
        self.endpoints: dict[str, ConnEndpoints] = {}
        self.subscribers: set[Subscriber] = set()
        self.log_subscribers = 0  # how many of them want `log` messages, all or marks (kept by (un)subscribe)
        self.full_log_subscribers = 0  # how many want all of them
        self.field_subscribers = 0  # how many want events with their fields
        self.summary_subscribers = 0  # how many want a class's connections only summarised
        # A class: an external node taking more than one connection (students' pages); its connections.
        self.class_nodes = {n.name for n in self.topology.nodes if n.external and n.max_connections > 1} \
            if self.topology is not None else set()
        self.class_conns: set[str] = set()
        self.in_class = bytearray()  # one octet an event of the log: 1 when it is on one of `class_conns`
        self._conns_seen = 0  # of the runtime's `conns`, those sorted into `class_conns` so far
        self._summary_timer: asyncio.TimerHandle | None = None  # a summary topology message due soon
        self._state_soon = False  # the subscribers are told the state is due at the end of this turn of the loop
        self.last_active = time.monotonic()
        self.last_detached = time.monotonic()
        self.ended = False
        self._runtime_factory = runtime_factory
        self.runtime: Runtime = runtime_factory(self)
        self.lock = asyncio.Lock()
        self.events_dropped = 0

    # ---- called by runtimes

    def add_events(self, events: list[dict[str, Any]]) -> None:
        """Appends events (contract dicts with conn, dir, fields, t) and sends them to every subscriber."""
        for ev in events:
            self.add_event(ev)

    def add_event(self, ev: dict[str, Any], framing: str | None = None) -> None:
        """Appends one event (see `add_events`); it is serialised once, for the log and every subscriber.
        With `framing`, `ev` is a frame or message without its fields, which `engine.events.refield` makes again
        from that framing (for the subscribers that want them, and when asked)."""
        events = self.events
        seq = events.count
        limits = self.limits
        if seq >= limits.session_max_events or events.bytes >= limits.session_max_event_bytes:
            self.events_dropped += 1
            if self.events_dropped == 1:
                self.broadcast({"type": "error", "detail": f"the session keeps at most "
                                f"{limits.session_max_events} events and {limits.session_max_event_bytes} "
                                "octets of them; later ones are not shown"})
            return
        ev["seq"] = seq
        text = orjson.dumps(ev).decode()
        code = ord(framing) if framing is not None else EventLog.FIELDS if "fields" in ev else EventLog.NO_FIELDS
        if len(text) > self._cut_above:  # (a big body: the text is checked, not every event's keys)
            ev, code = self._cut(ev, code)
            text = orjson.dumps(ev).decode()
        events.append(text, code)
        in_class = bool(self.class_conns) and ev.get("conn") in self.class_conns
        self.in_class.append(in_class)
        subscribers: set[Subscriber] | list[Subscriber] = self.subscribers
        if not subscribers:
            return
        wanting = self.field_subscribers
        if in_class and self.summary_subscribers:
            # A student's connection in a class: the teacher's full view gets it, a summary subscriber not
            # (each of a class's connections to each student's page is the class size squared).
            subscribers = [sub for sub in subscribers if not sub.summary]
            if not subscribers:
                return
            wanting = sum(1 for sub in subscribers if sub.fields)
        if code == EventLog.NO_FIELDS or (code == EventLog.FIELDS and wanting == len(subscribers)):
            message = '{"type":"event","event":' + text + "}"
            for sub in subscribers:
                sub.put_text(message)
            return
        # Some sockets want the fields, others not: each its own text, made once.
        full = ('{"type":"event","event":' + (text if code == EventLog.FIELDS else dumps(with_fields(ev, code))) + "}"
                if wanting else "")
        if wanting == len(subscribers):
            bare = ""
        elif code == EventLog.FIELDS:  # (from the event at hand: cheaper than reading its text back)
            bare = '{"type":"event","event":' + dumps({k: v for k, v in ev.items() if k != "fields"}) + "}"
        else:
            bare = '{"type":"event","event":' + text + "}"
        for sub in subscribers:
            sub.put_text(full if sub.fields else bare)

    @property
    def _cut_above(self) -> int:
        """Texts longer than this may hold a body over `session_event_max_body` (its hex is twice its octets,
        `hex` repeats a frame's body, and fields show the first 4 KiB of it)."""
        return 4 * self.limits.session_event_max_body + 16384

    def _cut(self, ev: dict[str, Any], code: int) -> tuple[dict[str, Any], int]:
        """`ev` with its bodies cut to `session_event_max_body` octets (all frames of a message together), and
        with its fields made from the whole bytes first (each field's value shows 4 KiB at most); the code it
        is kept with."""
        limit = self.limits.session_event_max_body
        frames = ev.get("frames")
        each = limit // max(1, len(frames)) if isinstance(frames, list) else limit
        if code > EventLog.FIELDS:
            ev = with_fields(ev, code)
        cut_bodies(ev, each, hex_slack=64)
        fields = ev.get("fields")
        if isinstance(fields, list) and len(fields) > 64:  # (a message of many frames: one field each)
            ev = {k: v for k, v in ev.items() if k != "fields"}
        return ev, EventLog.FIELDS if "fields" in ev else EventLog.NO_FIELDS

    def event(self, seq: int) -> dict[str, Any]:
        """Event `seq` with its fields; `EventNotFound` (an IndexError) when there is none."""
        try:
            text, code = self.events.get(seq)
        except IndexError:
            raise EventNotFound(seq) from None
        return orjson.loads(full_text(text, code))

    def truncate_events(self, count: int) -> None:
        """Forgets every event after the first `count` (stepping back). Browsers drop theirs when the next
        state message says `position` (events with `seq` >= position are gone)."""
        self.events.truncate(count)
        del self.in_class[count:]
        for sub in self.subscribers:  # (a backlog not yet sent stops where the log now ends)
            sub.backlog_end = min(sub.backlog_end, count)

    def add_wire(self, conn: str, direction: str, data: bytes, t: float) -> None:
        """Records bytes that crossed the wire (kept for the export, up to a limit)."""
        if not data or self.wire_bytes + len(data) > self.limits.session_max_wire_bytes:
            return
        self.wire_bytes += len(data)
        self.wire.append((conn, direction, data if type(data) is bytes else bytes(data), t))

    def truncate_wire(self, t: float) -> None:
        """Forgets wire bytes recorded after time `t` (stepping back)."""
        keep = [c for c in self.wire if c[3] <= t]
        self.wire = keep
        self.wire_bytes = sum(len(c[2]) for c in keep)

    def add_connection(self, conn: str, client: tuple[str, int], server: tuple[str, int], t: float) -> None:
        """Records a connection's addresses for the export."""
        self.endpoints.setdefault(conn, ConnEndpoints(client, server, t))

    def end_connection(self, conn: str, t: float) -> None:
        endpoints = self.endpoints.get(conn)
        if endpoints is not None and endpoints.closed is None:
            endpoints.closed = t
            if conn in self.class_conns:
                self._summary_soon()

    def state(self) -> dict[str, Any]:
        r = self.runtime
        return {"type": "state", "playing": bool(r.playing), "speed": float(r.speed), "position": r.position(),
                "total": r.total(), "closed": r.closed(), "up": r.up(), "mode": self.setup.mode,
                "at_end": r.at_end(), "can_step_back": r.can_step_back()}

    def push_state(self) -> None:
        """Sends the state soon: each subscriber sends one state message after what it has queued, for any
        number of changes until then, computed when it is sent (so its `position` covers every event sent
        before it). A busy session changes its state with every message; its sockets send the state once
        a batch. The subscribers are told once a turn of the event loop, however many changes it made (a class's
        200 deliveries of one send, to 200 watching pages, were 40,000 calls)."""
        if self._state_soon or not self.subscribers:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # (no loop: a caller outside one, told now)
            self._mark_due()
            return
        self._state_soon = True
        loop.call_soon(self._mark_due)

    def _mark_due(self) -> None:
        self._state_soon = False
        for sub in self.subscribers:
            sub.mark_due()

    def _state_text(self) -> str:
        return dumps(self.state())

    def error(self, detail: str) -> None:
        """Tells every subscriber about a problem that is not an answer to one of its commands."""
        self.broadcast({"type": "error", "detail": detail})

    def broadcast(self, message: dict[str, Any]) -> None:
        if self.subscribers:
            self.broadcast_text(dumps(message))

    def broadcast_text(self, text: str) -> None:
        for sub in self.subscribers:  # (put_text never changes the set)
            sub.put_text(text)

    def log(self, entry: dict[str, Any]) -> None:
        """A `log` message (what else happened in a simulated session) for the subscribers that want them."""
        if not self.log_subscribers:  # the common case for a busy session: no socket asks for the log
            return
        mark = is_mark(entry)
        if not mark and not self.full_log_subscribers:  # (the page: marks only, and most entries are bytes)
            return
        entry_text = dumps(entry)
        if len(entry_text) > self._cut_above:  # (the bytes of a big message: cut like an event's body)
            entry_text = dumps(cut_bodies(dict(entry), self.limits.session_event_max_body, hex_slack=0))
        text = '{"type":"log","entry":' + entry_text + "}"
        hide = bool(self.summary_subscribers) and entry.get("conn") in self.class_conns
        for sub in self.subscribers:
            if (sub.logs or (mark and sub.marks)) and not (hide and sub.summary):
                sub.put_text(text)

    # ---- subscribers

    def subscribe(self, make_output: OutputFactory, logs: bool = True, marks: bool = False,
                  topology: bool | None = None, fields: bool = True, summary: bool = False) -> Subscriber:
        """A new subscriber, its messages going to an output `make_output` makes, that first gets the topology
        message (`topology`; by default only in topology sessions), the events so far and the state (with
        `marks`, and no `logs`, the marks among the log entries from now on; without `fields`, events without
        their fields). With `summary`, a class's connections (those of an external node taking more than one)
        are only summarised: none of their events or marks, and a topology message that counts them (see
        `topology_message`), sent again at most once a `SUMMARY_PERIOD` as students come and go."""
        wants_topology = topology or (topology is None and self.topology is not None)
        self._sort_conns()
        first = [dumps(self.topology_message(summary=summary))] if wants_topology else []
        sub = Subscriber(make_output, self.limits.session_max_events + 1000, self.limits.session_max_queue_bytes,
                         self._state_text, logs=logs, marks=marks, fields=fields, control=first, events=self.events,
                         hidden=self.in_class if summary else None)
        sub.topology = bool(wants_topology)
        sub.put(self.state())
        self.subscribers.add(sub)
        self._count_log_subscribers()
        self.touch()
        return sub

    def topology_message(self, summary: bool = False) -> dict[str, Any]:
        """`{"type": "topology", "topology"}`: the nodes, links, proxies and script (passwords hidden; an external
        node with its `endpoint` and `zws` URL), and the connections so far (`conns`: conn, link, client, server).
        With `summary`, `conns` leaves a class's connections out and each external node taking more than one says
        how many are open (`connected`)."""
        topo = self.setup.topology.to_dict()
        reached = getattr(self.runtime, "external_endpoints", None)
        endpoints = reached() if reached is not None else {}
        conns = list(getattr(self.runtime, "conns", None) or [])
        if summary:
            self._sort_conns()
            open_ = [c for c in conns if c["conn"] in self.class_conns and self._is_open(c["conn"])]
            conns = [c for c in conns if c["conn"] not in self.class_conns]
        for node in topo["nodes"]:
            if node.get("password"):
                node["password"] = "***"
            node.update(endpoints.get(node["name"], ()))  # (an external node's: where its program connects)
            if summary and node["name"] in self.class_nodes:
                node["connected"] = sum(1 for c in open_ if node["name"] in (c["client"], c["server"]))
        return {"type": "topology", "topology": {**topo, "mode": self.setup.mode, "conns": conns}}

    def topology_changed(self) -> None:
        """A connection of the topology opened or reopened: every subscriber gets the topology message again (a
        summary subscriber at once when it is one of the lab's own, else within `SUMMARY_PERIOD`, once for
        however many students came)."""
        if not self.subscribers:
            return
        before = len(self.class_conns)
        self._sort_conns()
        if not self.summary_subscribers:
            self.broadcast(self.topology_message())
            return
        text = dumps(self.topology_message())
        for sub in self.subscribers:
            if not sub.summary:
                sub.put_text(text)
        if len(self.class_conns) > before:
            self._summary_soon()
        else:
            self._send_summary()

    def _summary_soon(self) -> None:
        """The summary subscribers' topology message, within `SUMMARY_PERIOD` (once for every change till then)."""
        if self.summary_subscribers and self._summary_timer is None and not self.ended:
            loop = asyncio.get_running_loop()
            self._summary_timer = loop.call_later(SUMMARY_PERIOD, self._send_summary)

    def _send_summary(self) -> None:
        if self._summary_timer is not None:
            self._summary_timer.cancel()
            self._summary_timer = None
        if not self.summary_subscribers or self.ended:
            return
        text = dumps(self.topology_message(summary=True))
        for sub in self.subscribers:
            if sub.summary and sub.topology:
                sub.put_text(text)

    def _sort_conns(self) -> None:
        """Notes the runtime's new connections that are a class's (of an external node taking more than one)."""
        conns = getattr(self.runtime, "conns", None)
        if not self.class_nodes or not conns or self.topology is None or len(conns) <= self._conns_seen:
            return
        links = self.topology.links
        for entry in conns[self._conns_seen:]:
            index = entry.get("link")  # (None: a proxy's connection)
            link = links[index] if isinstance(index, int) and 0 <= index < len(links) else None
            if link is not None and (link.connect in self.class_nodes or link.bind in self.class_nodes):
                self.class_conns.add(entry["conn"])
        self._conns_seen = len(conns)

    def _is_open(self, conn: str) -> bool:
        endpoints = self.endpoints.get(conn)
        return endpoints is not None and endpoints.closed is None

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)
        self._count_log_subscribers()
        if not self.subscribers:
            self.last_detached = time.monotonic()

    def _count_log_subscribers(self) -> None:
        self.log_subscribers = sum(1 for s in self.subscribers if s.logs or s.marks)
        self.full_log_subscribers = sum(1 for s in self.subscribers if s.logs)
        self.field_subscribers = sum(1 for s in self.subscribers if s.fields)
        self.summary_subscribers = sum(1 for s in self.subscribers if s.summary)

    def touch(self) -> None:
        self.last_active = time.monotonic()

    # ---- lifecycle and commands

    async def start(self) -> None:
        await self.runtime.start()

    async def close(self) -> None:
        if self.ended:
            return
        self.ended = True
        if self._summary_timer is not None:
            self._summary_timer.cancel()
            self._summary_timer = None
        with contextlib.suppress(Exception):
            await self.runtime.close()
        for sub in list(self.subscribers):
            sub.end()

    async def reset(self) -> None:
        """Starts over: new peers, no events."""
        old = self.runtime
        await old.close()
        self.events.clear()
        self.in_class.clear()
        for sub in self.subscribers:
            sub.backlog_end = 0
        self.wire.clear()
        self.wire_bytes = 0
        self.endpoints.clear()
        self.class_conns.clear()
        self._conns_seen = 0
        self.events_dropped = 0
        self.messages = 0
        self.sent_bytes = 0
        self.wall0 = time.time()
        self.broadcast({"type": "reset"})
        self.runtime = self._runtime_factory(self)
        await self.runtime.start()

    async def command(self, cmd: Command) -> None:
        """Carries out one validated command (`sessions.commands`); raises `SessionError` for the browser to see."""
        self.touch()
        async with self.lock:
            if self.ended:
                raise SessionError("the session has ended")
            await cmd.apply(self)
        self.push_state()

    def count_message(self) -> None:
        """Counts a message or fault against `session_max_messages` (`SessionError` past it)."""
        limit = self.limits.session_max_messages
        if self.messages >= limit:
            raise SessionError(f"this session has carried its limit of {limit} messages and faults; "
                               "reset it or start a new session")
        self.messages += 1

    def charge(self, sender: str, frames: list[bytes]) -> None:
        """Counts a message's octets against `session_max_sent_bytes`, once per connection it may cross: a PUB's
        1 MB to 23 SUBs is 23 MB of events and output (`SessionError` past the budget)."""
        size = sum(map(len, frames)) * (self.topology.deliveries(sender) if self.topology else 1)
        if self.sent_bytes + size > self.limits.session_max_sent_bytes:
            raise SessionError(f"this session has carried its limit of {self.limits.session_max_sent_bytes}"
                               " octets of messages (each counted once per connection it crosses); reset it "
                               "or start a new session")
        self.sent_bytes += size

    def frames(self, frames: list[str], as_hex: bool) -> list[bytes]:
        """A `send`'s frames as octets (text as UTF-8, or hex), within `session_max_frames` and `session_max_body`."""
        if len(frames) > self.limits.session_max_frames:
            raise SessionError(f"at most {self.limits.session_max_frames} frames per message")
        limit = self.limits.session_max_body
        out = []
        for i, frame in enumerate(frames):
            if as_hex:
                try:
                    data = parse_hex(frame)
                except ValueError as exc:
                    raise SessionError(f"frame {i + 1} is not hex: {exc}") from None
            else:
                data = frame.encode("utf-8")
            if len(data) > limit:
                raise SessionError(f"frame {i + 1} is larger than {limit} octets")
            out.append(data)
        return out

    # ---- export

    def export_json(self) -> str:
        """The configuration (passwords hidden) and every event, as JSON text. A topology session's configuration
        is its mode, `topology` (normalised, passwords hidden, with its connections) and `preset`."""
        if self.topology is not None:
            topo = self.topology_message()["topology"]
            config = {"mode": self.setup.mode, "topology": topo, "autoplay": self.setup.autoplay}
            if self.setup.preset is not None:
                config["preset"] = self.setup.preset
            head = dumps({"id": self.id, "mode": self.setup.mode, "config": config, "started": self.wall0})
            return head[:-1] + ',"events":[' + self._event_texts() + "]}"
        config = copy.deepcopy(self.setup.request)
        # Options added later appear only when set: the export of a session that does not use them is unchanged.
        if config.get("autoplay") is True:
            del config["autoplay"]
        for side in ("server", "client"):
            for key, default in LATER_PEER_OPTIONS.items():
                if config[side].get(key) == default:
                    del config[side][key]
            if config[side].get("password"):
                config[side]["password"] = "***"
        head = dumps({"id": self.id, "mode": self.setup.mode, "config": config, "started": self.wall0})
        return head[:-1] + ',"events":[' + self._event_texts() + "]}"

    def _event_texts(self) -> str:
        """Every event with its fields, as the JSON texts of an array's items."""
        return ",".join(full_text(text, code) for text, code in self.events.items())

    def export_pcapng(self) -> bytes:
        """The session's bytes as a capture: one synthetic TCP connection per session connection."""
        out = io.BytesIO()
        writer = PcapngWriter(out)
        base = self.wall0
        conns: dict[str, Any] = {}
        last_t: dict[str, float] = {}
        wire = [WireChunk._make(c) for c in self.wire]
        for n, cid in enumerate(sorted(set(self.endpoints) | {c.conn for c in wire}, key=_conn_key)):
            ep = self.endpoints.get(cid) or ConnEndpoints((CLIENT_IP, SIM_CLIENT_PORT + n),
                                                          (SERVER_IP, SIM_SERVER_PORT), 0.0)
            tcp = writer.add_connection(client=ep.client, server=ep.server)
            first = min([c.t for c in wire if c.conn == cid], default=ep.opened)
            opened = min(ep.opened, first)
            tcp.handshake(base + opened)
            conns[cid] = tcp
            last_t[cid] = opened
        for chunk in sorted(wire, key=lambda c: c.t):
            ts = max(chunk.t, last_t[chunk.conn])
            conns[chunk.conn].send(chunk.dir, chunk.data, base + ts)
            last_t[chunk.conn] = ts
        for cid, tcp in conns.items():
            ep = self.endpoints.get(cid)
            if ep is not None and ep.closed is not None:
                tcp.close(base + max(ep.closed, last_t[cid]))
        writer.flush()
        return out.getvalue()


def _conn_key(conn: str) -> tuple[int, str]:
    return (int(conn), conn) if conn.isdigit() else (1 << 62, conn)


MARKS = frozenset({"open", "half-closed", "closed", "fault"})


def is_mark(entry: dict[str, Any]) -> bool:
    """A log entry the page marks in its sequence: a connection opened or closed (and why), a fault."""
    return entry.get("kind") == "link" and entry.get("what") in MARKS


AFTER_FIELDS = frozenset({"msg", "reply_to", "t", "seq"})  # the keys a simulated element has after its `fields`


def full_text(text: str, code: int) -> str:
    """An event's text (as the log keeps it, with its code) with its fields."""
    return text if code <= EventLog.FIELDS else dumps(with_fields(orjson.loads(text), code))


def with_fields(ev: dict[str, Any], code: int) -> dict[str, Any]:
    """An event (kept with `code`) with its fields, as the simulation would have made it."""
    if code <= EventLog.FIELDS:
        return ev
    fields = refield(ev, chr(code))
    out: dict[str, Any] = {}
    for key, value in ev.items():
        if fields is not None and key in AFTER_FIELDS:  # (where the simulation's event had them)
            out["fields"] = fields
            fields = None
        out[key] = value
    if fields is not None:
        out["fields"] = fields
    return out


def bare_text(text: str, code: int) -> str:
    """An event's text (as the log keeps it, with its code) without fields."""
    if code != EventLog.FIELDS:
        return text
    ev = orjson.loads(text)
    ev.pop("fields", None)
    return dumps(ev)


def dumps(message: dict[str, Any]) -> str:
    """A websocket message (or an event) as compact JSON text."""
    return orjson.dumps(message).decode()
