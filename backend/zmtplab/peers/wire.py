"""The wire of a simulation: in-memory TCP links between its peers (`Wire`), their directions and writes.

Every byte a peer writes is a `Chunk` on a link `Direction`; it arrives `latency` virtual seconds later and
is handed to the reader one protocol element at a time (or one chunk, when the writer split an element). A
`ConnectionDissector` reads exactly the bytes that cross each link, and its events go to the log as the
bytes they cover are delivered. A `Connecter` is a client's connect(): it opens a new link when the last one
closed, with libzmq's reconnection backoff. Faults act on a direction through its `split`, `hold` and `flip`.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Callable
from typing import Any

from ..engine import ConnectionDissector
from ..engine.errors import LocalProtocolError
from ..engine.events import refieldable
from .session import PeerConnection
from .simpeer import SimPeer
from .timeline import Timeline

C2S, S2C = "c2s", "s2c"
SIDES = ("client", "server")
OUT_DIR = {"client": C2S, "server": S2C}
IN_DIR = {"client": S2C, "server": C2S}
READER = {C2S: "server", S2C: "client"}
ELEMENT_KINDS = frozenset({"greeting", "command", "frame"})

# A scheduled item of the wire: (key, action, its arguments); keys order the items (see `Wire.next_item`).
Item = tuple[tuple, Callable[..., None], tuple]


class Chunk:
    """One write in flight on a link direction: `data` covers stream offsets `start`.., `pos` is the next
    octet to deliver; `fed` once the dissector has read it."""

    __slots__ = ("arrival", "data", "fed", "pos", "seq", "start")

    def __init__(self, start: int, data: bytes, arrival: float, seq: int) -> None:
        self.start = start
        self.data = data
        self.arrival = arrival
        self.seq = seq
        self.fed = False
        self.pos = start


class Direction:
    """One direction of a link: chunks in flight, faults waiting for their bytes, dissector events pending."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.reader = READER[name]  # the side that reads this direction
        self.chunks: deque[Chunk] = deque()
        self.written = 0
        self.delivered = 0
        self.hold_until = 0.0
        self.split_at: set[int] = set()
        self.corrupt: dict[int, int] = {}  # offset -> xor mask
        self.eof = False
        self.eof_time = 0.0
        self.eof_seq = 0
        self.eof_done = False
        self.dead = False  # the reader closed: nothing more is read
        self.pending: deque = deque()  # dissector events whose bytes are not all delivered yet

    @property
    def in_flight(self) -> int:
        return sum(len(c.data) - (c.pos - c.start) for c in self.chunks)

    # ---- what faults do to a direction (peers.faults)

    def split(self, offsets: list[int]) -> None:
        """Cuts the stream into separate writes at these absolute offsets: the writes in flight now, and the
        ones still to be written when they reach an offset."""
        if any(o <= self.delivered for o in offsets):
            raise ValueError(f"offsets up to {self.delivered} were already delivered in {self.name}")
        rebuilt = []
        for chunk in self.chunks:
            end = chunk.start + len(chunk.data)
            cursor = chunk.pos
            for o in [*(o for o in offsets if chunk.pos < o < end), end]:
                piece = Chunk(cursor, chunk.data[cursor - chunk.start:o - chunk.start], chunk.arrival, chunk.seq)
                piece.fed = chunk.fed
                rebuilt.append(piece)
                cursor = o
        self.chunks.clear()
        self.chunks.extend(rebuilt)
        self.split_at.update(o for o in offsets if o > self.written)

    def hold(self, until: float) -> None:
        """Nothing arrives in this direction before `until` (virtual seconds)."""
        self.hold_until = max(self.hold_until, until)

    def first_corruptible(self) -> int:
        """The first offset whose octet the dissector has not read yet (in flight unread, or not written)."""
        for chunk in self.chunks:
            if not chunk.fed:
                return chunk.start
        return self.written

    def flip(self, offset: int, xor: int) -> bool:
        """XORs the octet at `offset` with `xor`: now when it is in flight (True), else when it is written."""
        first = self.first_corruptible()
        if offset < first:
            raise ValueError(f"byte {offset} of {self.name} is already on its way (the first byte that can be "
                             f"corrupted is {first})")
        for chunk in self.chunks:
            if not chunk.fed and chunk.start <= offset < chunk.start + len(chunk.data):
                buf = bytearray(chunk.data)
                buf[offset - chunk.start] ^= xor
                chunk.data = bytes(buf)
                return True
        self.corrupt[offset] = self.corrupt.get(offset, 0) ^ xor
        return False


class Link:
    """One simulated TCP connection between a client (connecting) peer and a server peer."""

    def __init__(self, conn_id: str, num: int, client: SimPeer, server: SimPeer, connecter: Connecter) -> None:
        self.id = conn_id
        self.num = num
        self.peers = {"client": client, "server": server}
        self.connecter = connecter
        self.dirs = {C2S: Direction(C2S), S2C: Direction(S2C)}
        self.dir_list = (self.dirs[C2S], self.dirs[S2C])
        self.pcs: dict[str, PeerConnection] = {}
        self.pc_list: tuple[tuple[int, str, PeerConnection], ...] = ()  # (index in SIDES, side, pc), once opened
        self.side_closed = {"client": False, "server": False}
        self.closed = False
        self.dissector = ConnectionDissector()
        self.decryptor: Any = None  # a CURVE link's CurveDecryptor: its boxes opened for the log, from its HELLO on

    def session_key(self, client_short: bytes) -> bytes | None:
        """The link's CURVE session key, once one of its peers has it: the key log of our own peers."""
        for pc in self.pcs.values():
            found = pc.conn.mechanism.session_keys()
            if found is not None and found[0] == client_short:
                return found[1]
        return None

    def side_of(self, peer: SimPeer) -> str:
        """"client" or "server": the side `peer` has on this link."""
        return "client" if self.peers["client"] is peer else "server"

    def partner_of(self, peer: SimPeer) -> SimPeer:
        """The peer at the other end from `peer`."""
        return self.peers["server"] if self.peers["client"] is peer else self.peers["client"]


class Connecter:
    """A connect(): the client's persistent pipe, and reconnection with libzmq's backoff."""

    def __init__(self, num: int, client: SimPeer, server: SimPeer) -> None:
        self.num = num
        self.client = client
        self.server = server
        self.pipe = client.core.add_connect_pipe(f"connect-{num}")
        self.active = True
        self.next_attempt: float | None = None
        self.ivl = client.options.reconnect_ivl
        self.link: Link | None = None


class Wire:
    """A simulation's links: opening them (and again after a close, with backoff), writing, delivering one
    element at a time, ends of stream and closes, the peers' connection timers; the wire's part of the log.

    With `topology` (a simulation with decisions: many links, one busy at a time) it keeps track of the links
    something happened to (`dirty`, `mark`), so that `flush` and `next_item` look at those only."""

    def __init__(self, timeline: Timeline, rng: random.Random, *, latency: float, window: int | None,
                 unread_on_wire: bool, topology: bool, fields: bool, max_body: int | None, wire_data: bool,
                 on_write: Callable[[str, str, int, int], None] | None = None) -> None:
        self.timeline = timeline
        self.log = timeline.log
        self.rng = rng
        self.latency = latency
        self.window = window
        self.unread_on_wire = unread_on_wire
        self.fields = fields
        self.max_body = max_body
        self.wire_data = wire_data
        self.on_write = on_write  # (see `Simulation.on_write`)
        # Told of each message that crosses a link (its log entry made, not yet logged) and of each link that
        # closed: the tracker's, in a simulation with decisions.
        self.on_message: Callable[[Link, str, dict[str, Any]], None] | None = None
        self.on_closed: Callable[[Link], None] | None = None
        self.links: dict[str, Link] = {}
        # The links not closed yet (in opening order), for the loops that run per step: replaced, never changed
        # in place, so that a loop over the old tuple is not disturbed.
        self.open_links: tuple[Link, ...] = ()
        self.connecters: list[Connecter] = []
        self._conn_ids = itertools.count(1)
        self._write_seq = itertools.count(1)
        # With `topology`, `flush` writes only for the links where something happened since (the delivery's or
        # timer's link, a pipe that got messages, a new link) or, after any other action, all (`all_dirty`).
        # Without, it looks at every link, as before topologies.
        self.dirty: set[Link] | None = set() if topology else None
        self.all_dirty = True
        self._busy: set[Link] = set()  # (a topology: see `_active_links`)
        self._timers: set[Link] = set()

    # ---- what is scheduled

    def next_item(self) -> Item | None:
        """The wire's next scheduled item: (key, action, its arguments); None when it has none. Keys order the
        items: (time, 0 delivery | 1 timer | 2 reconnection, tie-breaker)."""
        best: tuple | None = None
        best_action: Callable[..., None] | None = None
        best_args: tuple = ()
        # (Only open links: a closed link has nothing in flight, no end of stream to come and no timer.)
        flow = self.window is not None
        for link in self.open_links if self.dirty is None else self._active_links():
            for d in link.dir_list:
                if d.chunks:
                    if flow and link.pcs[d.reader].read_blocked:
                        continue  # the reader is at its RCVHWM: it reads nothing more from the connection
                    head = d.chunks[0]
                    key = (head.arrival if head.arrival >= d.hold_until else d.hold_until, 0, head.seq)
                    if best is None or key < best:
                        best, best_action, best_args = key, self.deliver, (link, d)
                elif d.eof and not d.eof_done:
                    key = (max(d.eof_time, d.hold_until), 0, d.eof_seq)
                    if best is None or key < best:
                        best, best_action, best_args = key, self.deliver_eof, (link, d)
            for i, side, pc in link.pc_list:
                if pc.closed or link.side_closed[side]:
                    continue
                deadline = pc.deadline
                if deadline is not None:
                    key = (deadline, 1, link.num * 2 + i)
                    if best is None or key < best:
                        best, best_action, best_args = key, self.timer, (link, side)
        for c in self.connecters:
            if c.active and c.next_attempt is not None:
                key = (c.next_attempt, 2, c.num)
                if best is None or key < best:
                    best, best_action, best_args = key, self.reconnect, (c,)
        if best is None or best_action is None:
            return None
        return best, best_action, best_args

    def idle(self) -> bool:
        """True when the wire has nothing scheduled: the same answer as `next_item() is None`, without ranking
        anything (a live session asks after every element)."""
        flow = self.window is not None
        for link in self.open_links if self.dirty is None else self._active_links():
            for d in link.dir_list:
                if d.chunks:
                    if flow and link.pcs[d.reader].read_blocked:
                        continue  # (stalled until its reader reads: `next_item` skips it too)
                    return False
                if d.eof and not d.eof_done:
                    return False
            side_closed = link.side_closed
            for _, side, pc in link.pc_list:
                if not pc.closed and not side_closed[side] and pc.deadline is not None:
                    return False
        # (Loops rather than all() over generators: a live session asks this after every element.)
        for c in self.connecters:  # noqa: SIM110
            if c.active and c.next_attempt is not None:
                return False
        return True

    def in_flight(self) -> bool:
        """True while bytes or an end of stream are on their way on some link (timers aside)."""
        for link in self.open_links:
            for d in link.dir_list:
                if d.chunks or (d.eof and not d.eof_done):
                    return True
        return False

    def _active_links(self) -> tuple[Link, ...]:
        """A topology's open links that may have an item: bytes or an end of stream in flight (`_busy`, kept by
        `write` and `close_side`) or a timer (`_timers`, kept by `flush`); the others are dropped from `_busy`."""
        busy = self._busy
        for link in tuple(busy):
            c2s, s2c = link.dir_list
            if link.closed or not (c2s.chunks or s2c.chunks or (c2s.eof and not c2s.eof_done)
                                   or (s2c.eof and not s2c.eof_done)):
                busy.discard(link)
        timers = self._timers
        if not timers:
            return tuple(busy)
        return tuple(busy | {lk for lk in timers if not lk.closed})

    def mark(self, pc: PeerConnection) -> None:
        """A connection has messages to write (PeerCore's `on_output`): `flush` visits its link."""
        link = self.links.get(pc.id)
        if link is not None and self.dirty is not None:
            self.dirty.add(link)

    # ---- the items

    def deliver(self, link: Link, d: Direction) -> None:
        """Hands the reader of `d` its next element (or the rest of the chunk), logging the bytes first and
        then the dissector's events they complete."""
        dname = d.name
        chunk = d.chunks[0]
        pending = d.pending
        if not chunk.fed:
            chunk.fed = True
            for _, event in link.dissector.receive_data(dname, chunk.data):
                pending.append(event)
            if self.on_write is not None:
                self.on_write(link.id, dname, chunk.start, len(chunk.data))
        start = chunk.start
        pos = chunk.pos
        end = start + len(chunk.data)
        unit_end = end
        for event in pending:
            if event.kind in ELEMENT_KINDS:
                event_end = event.offset + event.length
                if event_end > pos:
                    unit_end = event_end if event_end < end else end
                    break
        data = chunk.data if pos == start and unit_end == end else chunk.data[pos - start:unit_end - start]
        entry = {"kind": "link", "what": "bytes", "conn": link.id, "dir": dname, "offset": pos, "length": len(data)}
        if self.wire_data:
            entry["data"] = data
        else:
            entry["hex"] = data.hex()
        self.log(entry)
        chunk.pos = unit_end
        d.delivered = unit_end
        if unit_end >= end:
            d.chunks.popleft()
        while pending:
            event = pending[0]
            if d.chunks and event.offset + event.length > unit_end:
                break
            pending.popleft()
            self._wire_event(link, dname, event)
        reader = d.reader
        if not link.side_closed[reader]:
            link.pcs[reader].receive(data, self.timeline.t)

    def _wire_event(self, link: Link, dname: str, event) -> None:
        framing = None if self.fields else refieldable(event)
        cap = self.max_body
        if cap is not None and event.length > cap and event.kind in ("frame", "message"):
            entry = {"conn": link.id, "dir": dname, **event.to_dict(max_body=cap)}  # (fields, octets cut)
        elif framing is None:
            entry = {"conn": link.id, "dir": dname, **event.to_dict()}
        else:
            entry = {"conn": link.id, "dir": dname, **event.to_dict(with_fields=False), "framing": framing}
        on_message = self.on_message
        if on_message is not None and event.kind == "message":
            on_message(link, dname, entry)
        self.log(entry)
        if event.kind == "command":
            # Our peers know their CURVE session keys: show what each box holds, right after the box.
            if link.decryptor is None and event.name == "HELLO":
                from ..engine.curve import CurveDecryptor  # (only CURVE sessions load the cryptography)

                link.decryptor = CurveDecryptor(link.session_key)
            if link.decryptor is not None:
                for d, view in link.decryptor.feed(dname, event):
                    entry = {"conn": link.id, "dir": d, **view.to_dict()}
                    if on_message is not None and view.kind == "message":
                        on_message(link, d, entry)
                    self.log(entry)

    def deliver_eof(self, link: Link, d: Direction) -> None:
        """The end of stream of `d` reaches its reader."""
        dname = d.name
        d.eof_done = True
        while d.pending:
            self._wire_event(link, dname, d.pending.popleft())
        self._link_event(link, "eof", dir=dname)
        reader = d.reader
        if not link.side_closed[reader]:
            link.pcs[reader].receive(b"", self.timeline.t)
        self._maybe_closed(link)

    def timer(self, link: Link, side: str) -> None:
        """That side's connection timer (handshake timeout, heartbeat) is due."""
        link.pcs[side].on_timer(self.timeline.t)

    def reconnect(self, connecter: Connecter) -> None:
        """A client's reconnection is due: a new link."""
        connecter.next_attempt = None
        self.open_link(connecter)

    # ---- links

    def _link_event(self, link: Link, what: str, **data: Any) -> None:
        self.log({"kind": "link", "what": what, "conn": link.id, **data})

    def connect(self, client: SimPeer, server: SimPeer) -> Link:
        """A client's connect() to a server: its connecter, and the first link."""
        connecter = Connecter(len(self.connecters) + 1, client, server)
        self.connecters.append(connecter)
        return self.open_link(connecter)

    def open_link(self, connecter: Connecter) -> Link:
        """A new link for `connecter`, its two connections started."""
        conn_id = str(next(self._conn_ids))
        link = Link(conn_id, int(conn_id), connecter.client, connecter.server, connecter)
        connecter.link = link
        self.links[conn_id] = link
        self.open_links = (*self.open_links, link)
        self._link_event(link, "open", client=connecter.client.name, server=connecter.server.name)
        try:
            client_conn = connecter.client.make_connection()
            server_conn = connecter.server.make_connection()
        except (LocalProtocolError, ValueError) as exc:
            raise ValueError(f"cannot make the connection: {exc}") from None
        link.pcs["client"] = connecter.client.core.open_connection(conn_id, is_client=True, pipe=connecter.pipe,
                                                                    connection=client_conn)
        link.pcs["server"] = connecter.server.core.open_connection(conn_id, is_client=False,
                                                                    connection=server_conn)
        link.pc_list = tuple((i, side, link.pcs[side]) for i, side in enumerate(SIDES))
        for side in SIDES:
            link.pcs[side].start(self.timeline.t)
        return link

    def write(self, link: Link, side: str, data: bytes) -> None:
        """That side writes `data`: chunks that arrive `latency` later (cut where a fault split the stream,
        flipped where one corrupts it)."""
        d = link.dirs[OUT_DIR[side]]
        if d.eof:
            return
        start = d.written
        end = start + len(data)
        if d.corrupt:
            hits = [o for o in d.corrupt if start <= o < end]
            if hits:
                buf = bytearray(data)
                for o in hits:
                    buf[o - start] ^= d.corrupt.pop(o)
                    self._link_event(link, "fault", fault="corrupt", dir=d.name, offset=o)
                data = bytes(buf)
        cuts = sorted(o for o in d.split_at if start < o < end) if d.split_at else None
        if cuts:
            d.split_at -= set(cuts)
        d.written = end
        if d.dead and not self.unread_on_wire:
            return
        arrival = self.timeline.t + self.latency
        if self.dirty is not None:
            self._busy.add(link)
        if not cuts:  # the common case: one write, one chunk
            d.chunks.append(Chunk(start, data, arrival, next(self._write_seq)))
            return
        bounds = [start, *cuts, end]
        for a, b in itertools.pairwise(bounds):
            d.chunks.append(Chunk(a, data[a - start:b - start], arrival, next(self._write_seq)))

    def close_side(self, link: Link, side: str, reason: str) -> None:
        """That side closes its end of the link (what it still had to write goes first)."""
        if link.side_closed[side]:
            return
        pc = link.pcs[side]
        if not pc.closed:
            pc.close(reason)
        data = pc.take_output()
        if data:
            self.write(link, side, data)
        link.side_closed[side] = True
        out_d, in_d = link.dirs[OUT_DIR[side]], link.dirs[IN_DIR[side]]
        out_d.eof = True
        out_d.eof_time = self.timeline.t + self.latency
        out_d.eof_seq = next(self._write_seq)
        if self.dirty is not None:
            self._busy.add(link)
        if out_d.dead and not self.unread_on_wire:  # the other side already closed: nobody reads this end
            out_d.eof_done = True
            out_d.chunks.clear()
        in_d.dead = True
        dropped = in_d.in_flight
        if not self.unread_on_wire:
            in_d.chunks.clear()
            in_d.pending.clear()
        self._link_event(link, "half-closed", side=side, reason=pc.close_reason or reason,
                         **({"unread": dropped} if dropped else {}))
        self._maybe_closed(link)

    def _maybe_closed(self, link: Link) -> None:
        if link.closed or not all(link.side_closed.values()):
            return
        for dname in (C2S, S2C):
            d = link.dirs[dname]
            if d.chunks or (d.eof and not d.eof_done):
                return
        link.closed = True
        self.open_links = tuple(lk for lk in self.open_links if lk is not link)
        for dname, event in link.dissector.close():
            self._wire_event(link, dname, event)
        self._link_event(link, "closed")
        for side in SIDES:
            link.peers[side].core.forget(link.pcs[side])
        if self.on_closed is not None:
            self.on_closed(link)
        connecter = link.connecter
        client_opts = connecter.client.options
        if connecter.active and connecter.link is link and client_opts.reconnect_ivl > 0:
            base = client_opts.reconnect_ivl
            delay = connecter.ivl + self.rng.random() * base
            if client_opts.reconnect_ivl_max > base:
                connecter.ivl = min(connecter.ivl * 2, client_opts.reconnect_ivl_max)
            connecter.next_attempt = self.timeline.t + delay
            self.log({"kind": "peer", "peer": connecter.client.name, "what": "reconnect",
                      "server": connecter.server.name, "delay": round(delay, 9)})

    def reopen(self, link: Link, why: str) -> str | None:
        """The client closes `link` and, unless it was disconnected, connects again at once (with whatever
        its peers now announce); returns the new connection's id."""
        connecter = link.connecter
        self.close_side(link, "client", f"reconnecting: {why}")
        if not connecter.active:
            return None
        connecter.next_attempt = None
        return self.open_link(connecter).id

    def disconnect(self, client_name: str, server_name: str) -> None:
        """zmq_disconnect: the client's connecters to the server stop, their open links close."""
        for c in self.connecters:
            if c.client.name == client_name and c.server.name == server_name and c.active:
                c.active = False
                c.next_attempt = None
                if c.link is not None and not c.link.closed:
                    self.close_side(c.link, "client", "disconnected by the application")

    def flush(self) -> tuple[bool, bool]:
        """Every open link's connections write what they have (within the TCP window), closed connections
        close their side; returns (something was written, a side closed)."""
        window = self.window
        wrote = closed = False
        links = self.open_links
        dirty = self.dirty
        if dirty is not None:  # (a topology: only the links something happened to; see `mark`)
            if self.all_dirty:
                self.all_dirty = False
            else:
                links = sorted(dirty, key=_link_num) if len(dirty) > 1 else tuple(dirty)
            dirty.clear()
        for link in links:
            if link.closed:  # (closed earlier in this round)
                continue
            side_closed = link.side_closed
            for _, side, pc in link.pc_list:
                if side_closed[side]:
                    continue
                if window is None:
                    data = pc.take_output(1 << 40)  # (b"" when it has nothing: cheaper than asking has_output)
                else:
                    d = link.dirs[OUT_DIR[side]]
                    data = pc.take_output(max(0, window - (d.written - d.delivered)))
                if data:
                    self.write(link, side, data)
                    wrote = True
                if pc.closed:
                    self.close_side(link, side, pc.close_reason or "closed")
                    closed = True
            if not link.closed and link.pcs["client"].ready:
                link.connecter.ivl = link.connecter.client.options.reconnect_ivl
            if dirty is not None:  # (timers change only where something happened: this link)
                timed = False
                if not link.closed:
                    for _, side, pc in link.pc_list:
                        if not pc.closed and not side_closed[side] and pc.deadline is not None:
                            timed = True
                            break
                if timed:
                    self._timers.add(link)
                elif self._timers:
                    self._timers.discard(link)
        return wrote, closed

    # ---- lookups

    def link(self, conn: str | None = None) -> Link:
        """The link with that id; without one, the newest open link."""
        if conn is None:
            for link in reversed(self.links.values()):
                if not link.closed:
                    return link
            raise ValueError("no open connection")
        try:
            return self.links[str(conn)]
        except KeyError:
            raise ValueError(f"no connection {conn!r}") from None

    def link_of(self, peer_a: str, peer_b: str) -> Link | None:
        """The newest open link between two peers (either way round)."""
        for link in reversed(list(self.links.values())):
            names = {link.peers["client"].name, link.peers["server"].name}
            if names == {peer_a, peer_b} and not link.closed:
                return link
        return None

    def state(self) -> dict[str, Any]:
        """Each link's ends, bytes pending and delivered per direction, and its sides' connections."""
        return {link.id: {
            "client": link.peers["client"].name, "server": link.peers["server"].name, "closed": link.closed,
            "pending": {dname: link.dirs[dname].in_flight for dname in (C2S, S2C)},
            "delivered": {dname: link.dirs[dname].delivered for dname in (C2S, S2C)},
            "sides": {side: {"closed": link.side_closed[side], **link.pcs[side].describe()} for side in SIDES},
        } for link in self.links.values()}

    def pending(self) -> int:
        """The octets in flight on every link."""
        return sum(link.dirs[d].in_flight for link in self.links.values() for d in (C2S, S2C))


def _link_num(link: Link) -> int:
    return link.num


__all__ = ["C2S", "IN_DIR", "OUT_DIR", "READER", "S2C", "SIDES", "Chunk", "Connecter", "Direction", "Link", "Wire"]
