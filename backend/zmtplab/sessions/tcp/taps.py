"""The links of a real session: one forwarding tap per link, the wire between them.

A link's connecting node connects to its tap (`Tap`), and for every connection (`Link`) the tap opens one to the
bound node and copies bytes both ways, feeding them to a `ConnectionDissector` as they pass (CURVE boxes opened
when one of our peers has the key), tagging messages with their ids and watching a topology link's handshake
(`Tap.up`). Paused (`TcpState.playing` false), the taps hold the bytes (`Held`: the peers feel TCP backpressure)
until `release`; faults strike the bytes as they pass (`corrupt_byte`, `split_writes`, `delay`) or the
connections (`close_connections`). A tap that cannot reach its node says so and stops listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ...engine.dissector import ConnectionDissector
from ...engine.zws_dissector import ZwsDissector
from . import external
from .messages import MessageIds
from .nodes import SEND_TIMEOUT, RealNode, lab_peers
from .plan import LinkSpec, NodeSpec
from .state import TcpState

READ_SIZE = 64 * 1024


@dataclass
class Held:
    link: Link
    dir: str
    data: bytes
    done: asyncio.Future


@dataclass
class Tap:
    """A link's listening tap: its connecting node connects here, each connection is forwarded to `target`."""

    spec: LinkSpec
    target: tuple[str, int]
    listener: asyncio.AbstractServer | None = None
    port: int = 0
    lost: bool = False
    up: asyncio.Event = field(default_factory=asyncio.Event)  # a connection's handshake (and subscriptions) done
    zws: bool = False  # an external node's ZWS connections, bridged in by the app (`Taps.adopt`): no listener
    failing: bool = False  # the lab cannot reach an external node's endpoint (said once, until it can)
    host: str = "127.0.0.1"  # where it listens

    @property
    def external(self) -> str | None:
        """The external node whose connections this tap carries, if any."""
        return self.spec.external


@dataclass
class Link:
    """One connection through a tap."""

    conn: str
    writers: dict[str, asyncio.StreamWriter]  # direction -> where its bytes go
    tap: Tap | None = None
    dissector: ConnectionDissector | ZwsDissector = field(default_factory=ConnectionDissector)
    decryptor: Any = None  # a CURVE connection's CurveDecryptor, from its HELLO on (our peers know their keys)
    eof: set[str] = field(default_factory=set)
    closed: bool = False
    tasks: list[asyncio.Task] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})  # octets forwarded per direction
    ready: set[str] = field(default_factory=set)  # directions whose handshake is done
    subscriptions: int = 0  # SUBSCRIBE elements seen from a SUB end
    ports: tuple[int, int] = (0, 0)  # the client's own port, the tap's port towards the server
    tagged: dict[str, set[int]] = field(default_factory=lambda: {"c2s": set(), "s2c": set()})  # message ids seen
    doubt: str = ""  # the last warning the dissector gave of an external program's bytes


class Taps:
    """A real session's taps and the connections through them (see the module docstring)."""

    def __init__(self, state: TcpState, messages: MessageIds) -> None:
        self.state = state
        self.messages = messages
        self.taps: list[Tap] = []
        self.links: dict[str, Link] = {}  # open connections (closed ones are forgotten)
        self.connections = 0  # connections the taps have carried
        self.held: deque[Held] = deque()
        self.faults: list[tuple[str, dict[str, Any]]] = []
        self._ids = itertools.count()
        self._rng = random.Random()

    @property
    def target_lost(self) -> bool:
        """Every tap lost its node."""
        return bool(self.taps) and all(tap.lost for tap in self.taps)

    async def open(self) -> None:
        """A listening tap for every link of the plan, on a free port, forwarding to the link's bound node."""
        nodes = self.state.nodes
        limits = self.state.limits
        for spec in self.state.plan.links:
            tap = Tap(spec, external.target(spec, nodes, limits))
            if spec.external and not spec.outbound:
                tap.host = limits.session_external_host
            limit = tap_buffer(nodes[spec.connect].spec, nodes[spec.bind].spec) or 1 << 16
            tap.listener = await asyncio.start_server(lambda r, w, tap=tap: self._accept(tap, r, w), tap.host, 0,
                                                      limit=limit)
            tap.port = tap.listener.sockets[0].getsockname()[1]
            self.taps.append(tap)
            lab = nodes[spec.lab]
            if spec.external and not spec.outbound and lab.ws_port:
                self.taps.append(Tap(spec, (lab.host, lab.ws_port), zws=True))

    def external_tap(self, name: str, zws: bool = False) -> Tap | None:
        """The tap of external node `name`'s connections (`zws`: those the app bridges in), if it has one."""
        return next((tap for tap in self.taps if tap.external == name and tap.zws == zws and not tap.spec.outbound),
                    None)

    def external_links(self, name: str) -> int:
        """The open connections of external node `name`."""
        return sum(1 for link in self.links.values() if link.tap is not None and link.tap.external == name)

    async def adopt(self, tap: Tap, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    peer: tuple[str, int]) -> None:
        """Takes a connection the app bridges in (an external node's ZWS one) as if it had come to `tap`."""
        await self._accept(tap, reader, writer, peer)

    async def _accept(self, tap: Tap, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      peer: tuple[str, int] | None = None) -> None:
        if self.state.closed or tap.lost:
            writer.close()
            return
        if tap.external is not None and not tap.spec.outbound:
            most = self.state.nodes[tap.external].spec.max_connections
            if self.external_links(tap.external) >= most:
                self.state.session.error(f"a connection for external node {tap.external} was refused: it takes "
                                         f"{most} at once (its max_connections)")
                writer.transport.abort()
                return
        else:
            limit = self.state.limits.session_max_connections
            if self.state.plan.topology:
                limit = max(limit, len(self.taps))
            if sum(1 for link in self.links.values() if link.tap is None or link.tap.external is None) >= limit:
                self.state.session.error(f"a connection to the tap was refused: the session has {limit} open "
                                         "connections, its limit")
                writer.transport.abort()
                return
        try:
            buffer = tap_buffer(self.state.nodes[tap.spec.connect].spec, self.state.nodes[tap.spec.bind].spec)
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(*tap.target, limit=buffer or 1 << 16), SEND_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            if tap.spec.outbound:  # (the program may not be up yet: our node connects again, as a socket does)
                if not tap.failing:
                    self.state.session.error(f"could not reach external node {tap.external} at {tap.target[0]}:"
                                             f"{tap.target[1]} ({str(exc) or type(exc).__name__}); trying again")
                    tap.failing = True
            else:
                self._lose_target(tap, str(exc) or type(exc).__name__)
            writer.transport.abort()
            return
        tap.failing = False
        if buffer:
            for w in (writer, up_writer):
                small_buffers(w, buffer)
        conn = str(next(self._ids))
        self.connections += 1
        # (What one direction may hold of an element: the session's whole budget of sends, whoever connected; an
        # external program's connection holds what a tap's does.)
        held = self.state.limits.session_max_sent_bytes + (1 << 20)
        if tap.external is not None:
            held = self.state.limits.session_external_max_held
        dissector = ZwsDissector(max_held=held) if tap.zws else ConnectionDissector(max_held=held)
        link = Link(conn, {"c2s": up_writer, "s2c": writer}, tap, dissector=dissector)
        self.links[conn] = link
        client_addr = peer or writer.get_extra_info("peername") or ("127.0.0.1", 0)
        upstream = up_writer.get_extra_info("sockname") or ("127.0.0.1", 0)
        link.ports = (client_addr[1], upstream[1])
        now = self.state.now()
        spec = tap.spec
        if self.state.plan.topology:
            client = (self.state.nodes[spec.client].host, client_addr[1])
            if spec.external == spec.client:
                client = (str(client_addr[0]), int(client_addr[1]))  # (the program's own address)
            entry: dict[str, Any] = {"conn": conn, "link": spec.index, "client": spec.client, "server": spec.server}
            if tap.zws:
                entry["transport"] = "zws"
            self.state.conns.append(entry)
            for node_name in (spec.connect, spec.bind):
                self.map_ports(self.state.nodes[node_name])
        else:
            client = (client_addr[0], client_addr[1])
        self.state.session.add_connection(conn, client, tap.target, now)
        self.state.mark("open", conn=conn)
        link.tasks = [asyncio.create_task(self._pump(link, "c2s", reader)),
                      asyncio.create_task(self._pump(link, "s2c", up_reader))]
        if tap.external is not None:
            link.tasks.append(asyncio.create_task(self._handshake_deadline(link)))
        for task in link.tasks:
            self.state.tasks.add(task)
            task.add_done_callback(self.state.tasks.discard)
        if self.state.plan.topology:
            self.state.session.topology_changed()
        self.state.session.push_state()

    def map_ports(self, node: RealNode) -> None:
        """Maps our peer's connections to the taps' ids, by the port both ends see (whichever saw it first)."""
        for link in self.links.values():
            for port, pc_id in list(node.ports.items()):
                if port in link.ports:
                    node.conns[pc_id] = link.conn
                    del node.ports[port]

    def _lose_target(self, tap: Tap, why: str) -> None:
        """A tap cannot reach its node: say so once, as an expert event and an error, and stop listening."""
        if tap.lost:
            return
        tap.lost = True
        conn = str(next(self._ids))
        host, port = tap.target
        text = f"target {host}:{port} unreachable: {why}; the tap stopped listening"
        self.state.session.add_events([{"conn": conn, "dir": "c2s", "offset": 0, "length": 0, "kind": "expert",
                                        "severity": "error", "text": text, "fields": [],
                                        "t": round(self.state.now(), 6)}])
        if self.state.plan.topology:
            self.state.session.error(f"the tap of link {tap.spec.index} could not reach {tap.spec.server} ({why}): it "
                                     "stopped listening. Reset the session to start its nodes again")
        else:
            self.state.session.error(f"the tap could not reach the server ({why}): it stopped listening. Reset the "
                                     "session to start its peers again")
        if tap.listener is not None:
            tap.listener.close()
        self.state.session.push_state()

    async def _pump(self, link: Link, direction: str, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                data = await reader.read(READ_SIZE)
                if not data:
                    break
                await self._gate(link, direction, data)
        except (ConnectionError, OSError):
            pass
        finally:
            await self._half_close(link, direction)

    async def _gate(self, link: Link, direction: str, data: bytes) -> None:
        """Forwards now, or holds the bytes until play/step lets them through (the reader waits meanwhile)."""
        if self.state.playing and not self.held:
            await self._forward_bytes(link, direction, data)
            return
        done = asyncio.get_running_loop().create_future()
        self.held.append(Held(link, direction, data, done))
        self.state.session.push_state()
        await done

    async def release(self, count: int | None) -> None:
        n = 0
        while self.held and (count is None or n < count):
            item = self.held.popleft()
            try:
                await self._forward_bytes(item.link, item.dir, item.data)
            finally:
                if not item.done.done():
                    item.done.set_result(None)
            n += 1

    async def _forward_bytes(self, link: Link, direction: str, data: bytes) -> None:
        if link.closed:
            return
        data, split, delay = self._apply_faults(link, direction, data)
        if delay:
            await asyncio.sleep(delay)
        writer = link.writers[direction]
        t = self.state.now()
        self.state.session.add_wire(link.conn, direction, data, t)
        link.sent[direction] += len(data)
        began = time.thread_time()
        pairs = link.dissector.receive_data(direction, data)
        self._dissect(link, pairs, t)
        if link.tap is not None and link.tap.external is not None:
            # An external program is nobody's to trust: what the dissector calls an error (or an element over its
            # budget) from its side ends the connection before a byte of it reaches our node, and its dissection
            # takes at most its share of a core (beyond it the reader rests: a flood slows that connection only).
            problem, doubt = external.refusal(link.tap.spec, direction, pairs)
            link.doubt = doubt or link.doubt
            if problem is not None:
                await self.refuse(link, problem)
                return
            share = self.state.limits.session_external_cpu_share
            spent = time.thread_time() - began
            if spent > 0.0005 and share < 1:
                await asyncio.sleep(spent * (1 - share) / share)
        if writer.is_closing():
            return  # (the far end is gone: asyncio would only warn on every write until the link closes)
        try:
            if split:
                for i in range(len(data)):
                    writer.write(data[i:i + 1])
                    await writer.drain()
                    await asyncio.sleep(0.001)
            else:
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass

    def _fault_dir(self, link: Link, args: dict[str, Any]) -> str | None:
        """The direction a fault acts on in this link (None: any); in a topology `node` names the writer, and
        `conn` (when given) the one connection it strikes."""
        if args.get("conn") is not None and str(args["conn"]) != str(link.conn):
            return ""  # not this link
        node = args.get("node")
        if node is not None and link.tap is not None:
            if node == link.tap.spec.client:
                return "c2s"
            if node == link.tap.spec.server:
                return "s2c"
            return ""  # not this link
        return args.get("dir")

    def _apply_faults(self, link: Link, direction: str, data: bytes) -> tuple[bytes, bool, float]:
        split, delay = False, 0.0
        remaining = []
        for name, args in self.faults:
            wanted = self._fault_dir(link, args)
            if wanted not in (None, direction):
                remaining.append((name, args))
                continue
            if name == "corrupt_byte":
                at = args.get("offset")
                i = at if isinstance(at, int) and 0 <= at < len(data) else self._rng.randrange(len(data))
                corrupted = bytearray(data)
                corrupted[i] ^= 0xFF
                data = bytes(corrupted)
                self.state.mark("fault", fault="corrupt", conn=link.conn, dir=direction,
                                offset=link.sent[direction] + i)
            elif name == "split_writes":
                split = True
                self.state.mark("fault", fault="split", conn=link.conn, dir=direction, at=[link.sent[direction]])
            elif name == "delay":
                delay = max(delay, number_in(args.get("seconds"), 1.0, 0.0, 30.0))
                self.state.mark("fault", fault="delay", conn=link.conn, dir=direction, seconds=delay)
        self.faults = remaining
        return data, split, delay

    def _dissect(self, link: Link, pairs: list[tuple[str, Any]], t: float) -> None:
        if not pairs:
            return
        events = []
        for d, event in self._with_decrypted(link, pairs):
            item = event.to_dict(with_fields=True)
            item["conn"] = link.conn
            item["dir"] = d
            item["t"] = round(t, 6)
            events.append(item)
            if link.tap is not None and self.state.plan.topology:
                self._watch_handshake(link, d, event)
                if event.kind == "message" and not item.get("decrypted"):
                    self._tag(link, d, event, item)
        self.state.session.add_events(events)
        self.state.session.push_state()

    def _tag(self, link: Link, direction: str, event: Any, item: dict[str, Any]) -> None:
        """A message on the wire gets its id (see `messages.MessageIds.tag`), from the node that wrote it."""
        assert link.tap is not None
        writer = self.state.nodes[link.tap.spec.client if direction == "c2s" else link.tap.spec.server]
        frames = [p.body for p in event.parts]
        if writer.spec.external:  # (its program's sends get their ids here, on the wire, as it makes them)
            self.messages.with_id(item, self.messages.sent(writer, frames))
            return
        self.messages.tag(writer, link.tagged[direction], frames, item)

    def _watch_handshake(self, link: Link, direction: str, event: Any) -> None:
        """Sets the link's tap `up` once both sides are ready and a SUB end's subscriptions have crossed."""
        kind = event.kind
        if kind == "greeting" and event.version in ("1.0", "2.0"):
            # (No handshake commands before 3.0; an external program's own greeting must have come too: the lab
            # node's downgraded one says nothing of what the program sent.)
            external = link.tap is not None and link.tap.external is not None
            link.ready.update((direction,) if external else ("c2s", "s2c"))
        elif kind == "command" and event.name in ("READY", "INITIATE"):
            link.ready.add(direction)
        elif kind == "command" and event.name == "SUBSCRIBE":
            link.subscriptions += 1
        elif kind == "message" and link.ready >= {"c2s", "s2c"}:
            first = event.parts[0].body if event.parts else b""
            if first[:1] == b"\x01":  # a 3.0 subscription
                link.subscriptions += 1
        assert link.tap is not None
        spec = link.tap.spec
        wanted = 0
        for name in (spec.connect, spec.bind):
            node = self.state.nodes[name].spec
            if node.type in ("SUB", "XSUB"):
                wanted += len(node.subscribe)
        if link.ready >= {"c2s", "s2c"} and link.subscriptions >= wanted:
            link.tap.up.set()

    def _with_decrypted(self, link: Link, pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """The dissector's events, each CURVE box followed by what it holds, when one of our peers has the key."""
        out = []
        for d, event in pairs:
            out.append((d, event))
            if event.kind != "command":
                continue
            if link.decryptor is None and event.name == "HELLO":
                from ...engine.curve import CurveDecryptor  # (only CURVE sessions load the cryptography)

                link.decryptor = CurveDecryptor(self._session_key)
            if link.decryptor is not None:
                out.extend(link.decryptor.feed(d, event))
        return out

    def _session_key(self, client_short: bytes) -> bytes | None:
        for peer in lab_peers(self.state.nodes):
            if (key := peer.core.session_key(client_short)) is not None:
                return key
        return None

    async def refuse(self, link: Link, why: str) -> None:
        """Ends an external node's connection that broke the rules: an `expert` error naming why, then a close."""
        if link.closed:
            return
        assert link.tap is not None and link.tap.external is not None
        text = f"external node {link.tap.external}: {why}; the connection was closed"
        self.state.session.add_events([{"conn": link.conn, "dir": "c2s" if link.tap.spec.client == link.tap.external
                                        else "s2c", "offset": 0, "length": 0, "kind": "expert", "severity": "error",
                                        "rule": "external", "text": text, "fields": [],
                                        "t": round(self.state.now(), 6)}])
        self.state.session.error(text)
        for writer in link.writers.values():
            with contextlib.suppress(Exception):
                writer.transport.abort()
        await self.close_link(link)

    async def _handshake_deadline(self, link: Link) -> None:
        """An external connection that has not finished its greeting and handshake in time (counted while the
        session plays: paused, the tap holds its bytes) is refused: a never-ending greeting, a slowloris."""
        limit = self.state.limits.session_external_handshake_timeout
        waited = 0.0
        while waited < limit and not link.closed:
            await asyncio.sleep(0.1)
            if link.ready >= {"c2s", "s2c"}:
                return
            if self.state.playing and not self.held:
                waited += 0.1
        if not link.closed:
            await self.refuse(link, f"no greeting and handshake within {limit:g} s")

    async def _half_close(self, link: Link, direction: str) -> None:
        if not link.eof and not link.closed:  # the first side to close: say who
            side = "client" if direction == "c2s" else "server"
            self.state.mark("half-closed", conn=link.conn, side=side, reason=f"the {side} closed the connection")
        link.eof.add(direction)
        if link.tap is not None and link.tap.external is not None:
            lab = "s2c" if link.tap.spec.client == link.tap.external else "c2s"
            if direction == lab and not self.state.closed and len(link.eof) == 1:  # (our node ended it first)
                if not link.ready >= {"c2s", "s2c"}:
                    await self.refuse(link, "the lab's node closed the connection before the handshake was done (it "
                                      "could not read what the program sent as the ZMTP it speaks)")
                    return
                if link.doubt:  # (what the dissector found wrong in the program's bytes is why, most likely)
                    await self.refuse(link, f"the lab's node closed the connection after this: {link.doubt}")
                    return
            await self.close_link(link)  # (half a connection to a program outside is no use to anyone: both go)
            return
        writer = link.writers[direction]
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()
        if link.eof >= {"c2s", "s2c"} and not link.closed:
            await self.close_link(link)

    async def close_link(self, link: Link) -> None:
        if link.closed:
            return
        link.closed = True
        t = self.state.now()
        self._dissect(link, link.dissector.close(), t)
        self.state.session.end_connection(link.conn, t)
        self.state.mark("closed", conn=link.conn)
        for writer in link.writers.values():
            writer.close()
        for item in [h for h in self.held if h.link is link]:
            self.held.remove(item)
            if not item.done.done():
                item.done.set_result(None)
        if self.links.get(link.conn) is link and not self.state.closed:
            del self.links[link.conn]  # its pump tasks end by themselves now that the writers are closed
        self.state.session.push_state()

    async def close_connections(self, node: Any = None, conn: Any = None) -> None:
        """The `close` fault: aborts the connections of `node` in a topology (all of them without one), or only
        connection `conn`, as a peer that resets them."""
        topology = self.state.plan.topology
        for link in list(self.links.values()):
            if topology and node is not None and link.tap is not None and node not in (
                    link.tap.spec.connect, link.tap.spec.bind):
                continue  # (a topology closes the connections of the node named, all of them without one)
            if conn is not None and str(conn) != str(link.conn):
                continue  # (or only the one connection named)
            for writer in link.writers.values():
                with contextlib.suppress(Exception):
                    writer.transport.abort()
            await self.close_link(link)

    def stop(self) -> None:
        """Stops listening and lets whatever the taps hold go nowhere (the session is closing)."""
        for item in self.held:
            if not item.done.done():
                item.done.set_result(None)
        self.held.clear()
        for tap in self.taps:
            if tap.listener is not None:
                tap.listener.close()

    def abort(self) -> None:
        """Aborts every connection and cancels its pumps (after the nodes closed)."""
        for link in list(self.links.values()):
            for writer in link.writers.values():
                with contextlib.suppress(Exception):
                    writer.transport.abort()
            for task in link.tasks:
                task.cancel()

    async def wait_closed(self) -> None:
        """Waits (a second at most) until the listeners closed."""
        for tap in self.taps:
            if tap.listener is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(tap.listener.wait_closed(), 1.0)


def tap_buffer(*ends: NodeSpec) -> int:
    """The buffer a link's tap keeps each way: the smallest receive buffer its two nodes set (0: none set). The
    tap stands in the receiver's place: buffering more would hide its high-water mark behind the tap's queue
    (and less than a sender's buffer would slow a link whose reader is fast)."""
    sizes = [end.rcvbuf for end in ends if end.rcvbuf]
    return min(sizes, default=0)


def small_buffers(writer: asyncio.StreamWriter, size: int) -> None:
    """A tap connection's kernel buffers and asyncio write buffer, both `size` octets."""
    import socket as pysocket

    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(pysocket.SOL_SOCKET, pysocket.SO_SNDBUF, size)
            sock.setsockopt(pysocket.SOL_SOCKET, pysocket.SO_RCVBUF, size)
    writer.transport.set_write_buffer_limits(high=size)


def number_in(value: Any, default: float, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return min(max(float(value), low), high)
