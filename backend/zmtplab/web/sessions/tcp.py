"""Real sessions over loopback TCP: two peers, ours (`peers.tcp.TcpPeer`) or libzmq's (pyzmq), and a tap.

The server side binds on 127.0.0.1 (any free port); a forwarding tap listens on another
free port and the client side connects to the tap. For every connection the tap opens
one to the server and copies bytes both ways, feeding them to a `ConnectionDissector`
as they pass: the browser sees exactly what crossed the wire, whoever produced it.

Because every byte goes through the tap, the session controls the wire: `pause` holds
bytes in the tap (the peers feel TCP backpressure), `step` lets the next held chunk
through, `play` releases everything. Faults act on the wire too: `corrupt_byte`,
`split_writes`, `delay` and `close`; `kill` makes one peer die at once, as if its process
had been killed (whatever it had not yet written is lost). A real session cannot step back.

When the tap cannot reach the server (it was killed, or stopped listening), it reports an
`expert` event "target ... unreachable", stops listening (so a reconnecting client is refused
by the kernel instead of spinning through the tap), and the session's state says `closed`.
At most `session_max_connections` connections go through the tap at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ...engine.dissector import ConnectionDissector
from ...peers.faults import SESSION_FAULTS
from ...peers.sockets import Again, SocketStateError
from ...peers.tcp import TcpPeer
from ..models import GREETING_STRATEGY, PeerConfig, SessionCreate
from ..settings import Settings
from .session import Session, SessionConfigError, SessionError

log = logging.getLogger(__name__)

READ_SIZE = 64 * 1024
SEND_TIMEOUT = 5.0
# The session faults a real TCP session takes, and those only a simulated one does (peers.faults).
FAULTS = tuple(name for name, f in SESSION_FAULTS.items() if f.tcp)
SIMULATED_ONLY = tuple(name for name, f in SESSION_FAULTS.items() if not f.tcp)


@dataclass
class _Held:
    link: _Link
    dir: str
    data: bytes
    done: asyncio.Future


@dataclass
class _Link:
    """One connection through the tap."""

    conn: str
    writers: dict[str, asyncio.StreamWriter]  # direction -> where its bytes go
    dissector: ConnectionDissector = field(default_factory=ConnectionDissector)
    decryptor: Any = None  # a CURVE connection's CurveDecryptor, from its HELLO on (our peers know their keys)
    eof: set[str] = field(default_factory=set)
    closed: bool = False
    tasks: list[asyncio.Task] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})  # octets forwarded per direction


def _keys() -> tuple[bytes, bytes]:
    from nacl.public import PrivateKey

    secret = PrivateKey.generate()
    return bytes(secret.public_key), bytes(secret)


class _LabSide:
    """One of our peers (`TcpPeer`)."""

    def __init__(self, peer: TcpPeer) -> None:
        self.peer = peer
        self.drain: asyncio.Task | None = None

    async def send(self, frames: list[bytes]) -> None:
        try:
            await self.peer.send(frames, timeout=SEND_TIMEOUT)
        except TimeoutError:
            raise SessionError("could not send: no connection is ready to take the message") from None
        except (SocketStateError, Again, ValueError) as exc:
            raise SessionError(f"could not send: {exc}") from None

    def start_draining(self) -> None:
        async def run() -> None:
            with contextlib.suppress(Exception):
                while True:
                    await self.peer.recv()

        self.drain = asyncio.create_task(run())

    def subscribe_all(self, topic: bytes = b"") -> None:
        """A SUB subscribes to `topic` (every message by default)."""
        if self.peer.options.socket_type in ("SUB",):
            self.peer.subscribe(topic)

    async def close(self) -> None:
        if self.drain is not None:
            self.drain.cancel()
        await self.peer.close(linger=0)

    async def kill(self) -> None:
        """Dies at once: its connections are aborted, unwritten output is lost."""
        for proto in list(self.peer._protocols.values()):
            proto.abort()
        await self.close()


class _ZmqSide:
    """A real libzmq socket (pyzmq's asyncio flavour)."""

    def __init__(self, context: Any, socket: Any, authenticator: Any = None) -> None:
        self.context = context
        self.socket = socket
        self.authenticator = authenticator
        self.drain: asyncio.Task | None = None

    async def send(self, frames: list[bytes]) -> None:
        import zmq

        try:
            await asyncio.wait_for(self.socket.send_multipart(frames), SEND_TIMEOUT)
        except TimeoutError:
            raise SessionError("could not send: libzmq has no connection ready to take the message") from None
        except zmq.ZMQError as exc:
            raise SessionError(f"could not send: libzmq says {exc}") from None

    def start_draining(self) -> None:
        async def run() -> None:
            with contextlib.suppress(Exception):
                while True:
                    await self.socket.recv_multipart()

        self.drain = asyncio.create_task(run())

    def subscribe_all(self, topic: bytes = b"") -> None:
        """A SUB subscribes to `topic` (every message by default)."""
        import zmq

        if self.socket.type == zmq.SUB:
            self.socket.setsockopt(zmq.SUBSCRIBE, topic)

    async def close(self) -> None:
        if self.drain is not None:
            self.drain.cancel()
            with contextlib.suppress(BaseException):
                await self.drain
        self.socket.close(linger=0)
        if self.authenticator is not None:
            with contextlib.suppress(Exception):
                self.authenticator.stop()
        # term() waits for libzmq's I/O thread: never on the event loop.
        await asyncio.wait_for(asyncio.to_thread(self.context.destroy, 0), 5.0)

    async def kill(self) -> None:
        """Dies at once: linger 0 drops whatever libzmq had not yet written."""
        await self.close()


class TcpRuntime:
    """Drives a `tcp` session (see the module docstring)."""

    def __init__(self, session: Session, config: SessionCreate, settings: Settings) -> None:
        self.session = session
        self.config = config
        self.settings = settings
        self.playing = config.autoplay
        self.speed = 1.0
        self.server: _LabSide | _ZmqSide | None = None
        self.client: _LabSide | _ZmqSide | None = None
        self.tap: asyncio.AbstractServer | None = None
        self.server_port = 0
        self.links: dict[str, _Link] = {}  # open connections (closed ones are forgotten)
        self.connections = 0  # connections the tap has carried
        self.killed: set[str] = set()
        self.tap_port = 0
        self.target_lost = False
        self.held: deque[_Held] = deque()
        self.faults: list[tuple[str, dict[str, Any]]] = []
        self._ids = itertools.count()
        self._closed = False
        self._t0 = 0.0
        self._rng = random.Random()
        self._tasks: set[asyncio.Task] = set()

    @staticmethod
    def check(config: SessionCreate) -> None:
        """Refuses configurations a real session cannot run."""
        for side in ("server", "client"):
            peer: PeerConfig = getattr(config, side)
            if peer.libzmq and peer.version != "3.1":
                raise SessionConfigError(f"{side}: a libzmq peer always announces ZMTP 3.1 (it downgrades by "
                                         "itself for older peers); choose version 3.1")

    # ---- setup

    def _now(self) -> float:
        return asyncio.get_running_loop().time() - self._t0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._t0 = loop.time()
        cfg = self.config
        server_public, server_secret = _keys()
        client_public, client_secret = _keys()
        keys = {"server_public": server_public, "server_secret": server_secret,
                "client_public": client_public, "client_secret": client_secret}
        if cfg.server.libzmq:
            self.server, self.server_port = self._zmq_server(cfg.server, keys)
        else:
            peer = self._lab_peer(cfg.server, keys, server=True)
            endpoint = await peer.bind("tcp://127.0.0.1:0")
            self.server = _LabSide(peer)
            self.server_port = int(endpoint.rsplit(":", 1)[1])
        self.tap = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        tap_port = self.tap_port = self.tap.sockets[0].getsockname()[1]
        endpoint = f"tcp://127.0.0.1:{tap_port}"
        if cfg.client.libzmq:
            self.client = self._zmq_client(cfg.client, keys, endpoint)
        else:
            peer = self._lab_peer(cfg.client, keys, server=False)
            peer.connect(endpoint)
            self.client = _LabSide(peer)
        for side, peer_cfg in ((self.server, cfg.server), (self.client, cfg.client)):
            side.subscribe_all(peer_cfg.subscribe.encode())
            side.start_draining()

    def _lab_peer(self, cfg: PeerConfig, keys: dict[str, bytes], *, server: bool) -> TcpPeer:
        opts: dict[str, Any] = {"identity": cfg.identity.encode(), "version": cfg.version,
                                "strategy": GREETING_STRATEGY[cfg.greeting],
                                "mechanism": cfg.mechanism, "name": "server" if server else "client"}
        if cfg.mechanism == "PLAIN":
            if server:
                opts.update(plain_server=True, username=cfg.username or None,
                            password=cfg.password if cfg.username else None)
            else:
                opts.update(username=cfg.username, password=cfg.password)
        elif cfg.mechanism == "CURVE":
            if server:
                opts.update(curve_server=True, curve_publickey=keys["server_public"],
                            curve_secretkey=keys["server_secret"])
            else:
                opts.update(curve_serverkey=keys["server_public"], curve_publickey=keys["client_public"],
                            curve_secretkey=keys["client_secret"])
        try:
            return TcpPeer(cfg.type, **opts)
        except ValueError as exc:
            raise SessionConfigError(str(exc)) from None

    def _zmq_socket(self, cfg: PeerConfig, keys: dict[str, bytes], *, server: bool) -> tuple[Any, Any, Any]:
        import zmq
        import zmq.asyncio
        from zmq.utils import z85

        context = zmq.asyncio.Context()
        socket = context.socket(getattr(zmq, cfg.type))
        authenticator = None
        socket.setsockopt(zmq.LINGER, 0)
        if cfg.identity:
            socket.setsockopt(zmq.ROUTING_ID, cfg.identity.encode())
        if cfg.mechanism == "PLAIN":
            if server:
                socket.setsockopt(zmq.PLAIN_SERVER, 1)
                if cfg.username:
                    from zmq.auth.asyncio import AsyncioAuthenticator

                    authenticator = AsyncioAuthenticator(context)
                    authenticator.start()
                    authenticator.configure_plain(domain="*", passwords={cfg.username: cfg.password})
            else:
                socket.setsockopt(zmq.PLAIN_USERNAME, cfg.username.encode())
                socket.setsockopt(zmq.PLAIN_PASSWORD, cfg.password.encode())
        elif cfg.mechanism == "CURVE":
            if server:
                socket.setsockopt(zmq.CURVE_SERVER, 1)
                socket.setsockopt(zmq.CURVE_PUBLICKEY, z85.encode(keys["server_public"]))
                socket.setsockopt(zmq.CURVE_SECRETKEY, z85.encode(keys["server_secret"]))
            else:
                socket.setsockopt(zmq.CURVE_SERVERKEY, z85.encode(keys["server_public"]))
                socket.setsockopt(zmq.CURVE_PUBLICKEY, z85.encode(keys["client_public"]))
                socket.setsockopt(zmq.CURVE_SECRETKEY, z85.encode(keys["client_secret"]))
        return context, socket, authenticator

    def _zmq_server(self, cfg: PeerConfig, keys: dict[str, bytes]) -> tuple[_ZmqSide, int]:
        context, socket, auth = self._zmq_socket(cfg, keys, server=True)
        port = socket.bind_to_random_port("tcp://127.0.0.1")
        return _ZmqSide(context, socket, auth), port

    def _zmq_client(self, cfg: PeerConfig, keys: dict[str, bytes], endpoint: str) -> _ZmqSide:
        context, socket, auth = self._zmq_socket(cfg, keys, server=False)
        socket.connect(endpoint)
        return _ZmqSide(context, socket, auth)

    # ---- the tap

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closed or self.target_lost:
            writer.close()
            return
        limit = self.settings.session_max_connections
        if len(self.links) >= limit:
            self.session.error(f"a connection to the tap was refused: the session has {limit} open connections, "
                               "its limit")
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", self.server_port),
                                                          SEND_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            self._target_lost(str(exc) or type(exc).__name__)
            writer.transport.abort()
            return
        conn = str(next(self._ids))
        self.connections += 1
        link = _Link(conn, {"c2s": up_writer, "s2c": writer})
        self.links[conn] = link
        client_addr = writer.get_extra_info("peername") or ("127.0.0.1", 0)
        now = self._now()
        self.session.add_connection(conn, (client_addr[0], client_addr[1]), ("127.0.0.1", self.server_port), now)
        self._mark("open", conn=conn)
        link.tasks = [asyncio.create_task(self._pump(link, "c2s", reader)),
                      asyncio.create_task(self._pump(link, "s2c", up_reader))]
        for task in link.tasks:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self.session.push_state()

    def _mark(self, what: str, **data: Any) -> None:
        """A `link` log entry, as the simulation writes them: the page marks these in its sequence."""
        self.session.log({"kind": "link", "what": what, **data, "t": round(self._now(), 6)})

    def _target_lost(self, why: str) -> None:
        """The server cannot be reached: say so once, as an expert event and an error, and stop listening."""
        if self.target_lost:
            return
        self.target_lost = True
        conn = str(next(self._ids))
        text = f"target 127.0.0.1:{self.server_port} unreachable: {why}; the tap stopped listening"
        self.session.add_events([{"conn": conn, "dir": "c2s", "offset": 0, "length": 0, "kind": "expert",
                                  "severity": "error", "text": text, "fields": [], "t": round(self._now(), 6)}])
        self.session.error(f"the tap could not reach the server ({why}): it stopped listening. Reset the session "
                           "to start its peers again")
        if self.tap is not None:
            self.tap.close()
        self.session.push_state()

    async def _pump(self, link: _Link, direction: str, reader: asyncio.StreamReader) -> None:
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

    async def _gate(self, link: _Link, direction: str, data: bytes) -> None:
        """Forwards now, or holds the bytes until play/step lets them through (the reader waits meanwhile)."""
        if self.playing and not self.held:
            await self._forward(link, direction, data)
            return
        done = asyncio.get_running_loop().create_future()
        self.held.append(_Held(link, direction, data, done))
        self.session.push_state()
        await done

    async def _release(self, count: int | None) -> None:
        n = 0
        while self.held and (count is None or n < count):
            item = self.held.popleft()
            try:
                await self._forward(item.link, item.dir, item.data)
            finally:
                if not item.done.done():
                    item.done.set_result(None)
            n += 1

    async def _forward(self, link: _Link, direction: str, data: bytes) -> None:
        if link.closed:
            return
        data, split, delay = self._apply_faults(link, direction, data)
        if delay:
            await asyncio.sleep(delay)
        writer = link.writers[direction]
        t = self._now()
        self.session.add_wire(link.conn, direction, data, t)
        link.sent[direction] += len(data)
        self._dissect(link, link.dissector.receive_data(direction, data), t)
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

    def _apply_faults(self, link: _Link, direction: str, data: bytes) -> tuple[bytes, bool, float]:
        split, delay = False, 0.0
        remaining = []
        for name, args in self.faults:
            wanted = args.get("dir")
            if wanted not in (None, direction):
                remaining.append((name, args))
                continue
            if name == "corrupt_byte":
                at = args.get("offset")
                i = at if isinstance(at, int) and 0 <= at < len(data) else self._rng.randrange(len(data))
                corrupted = bytearray(data)
                corrupted[i] ^= 0xFF
                data = bytes(corrupted)
                self._mark("fault", fault="corrupt", conn=link.conn, dir=direction, offset=link.sent[direction] + i)
            elif name == "split_writes":
                split = True
                self._mark("fault", fault="split", conn=link.conn, dir=direction, at=[link.sent[direction]])
            elif name == "delay":
                delay = max(delay, _number(args.get("seconds"), 1.0, 0.0, 30.0))
                self._mark("fault", fault="delay", conn=link.conn, dir=direction, seconds=delay)
        self.faults = remaining
        return data, split, delay

    def _dissect(self, link: _Link, pairs: list[tuple[str, Any]], t: float) -> None:
        if not pairs:
            return
        events = []
        for d, event in self._with_decrypted(link, pairs):
            item = event.to_dict(with_fields=True)
            item["conn"] = link.conn
            item["dir"] = d
            item["t"] = round(t, 6)
            events.append(item)
        self.session.add_events(events)
        self.session.push_state()

    def _with_decrypted(self, link: _Link, pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
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
        for side in (self.server, self.client):
            if isinstance(side, _LabSide) and (key := side.peer.core.session_key(client_short)) is not None:
                return key
        return None

    def keylog(self) -> str:
        """The CURVE key log of our peers' connections so far (libzmq keeps its keys to itself)."""
        from ...engine.curve import keylog_text

        return keylog_text(k for side in (self.server, self.client) if isinstance(side, _LabSide)
                           for k in side.peer.core.session_keys)

    async def _half_close(self, link: _Link, direction: str) -> None:
        if not link.eof and not link.closed:  # the first side to close: say who
            side = "client" if direction == "c2s" else "server"
            self._mark("half-closed", conn=link.conn, side=side, reason=f"the {side} closed the connection")
        link.eof.add(direction)
        writer = link.writers[direction]
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()
        if link.eof >= {"c2s", "s2c"} and not link.closed:
            await self._close_link(link)

    async def _close_link(self, link: _Link) -> None:
        if link.closed:
            return
        link.closed = True
        t = self._now()
        self._dissect(link, link.dissector.close(), t)
        self.session.end_connection(link.conn, t)
        self._mark("closed", conn=link.conn)
        for writer in link.writers.values():
            writer.close()
        for item in [h for h in self.held if h.link is link]:
            self.held.remove(item)
            if not item.done.done():
                item.done.set_result(None)
        if self.links.get(link.conn) is link and not self._closed:
            del self.links[link.conn]  # its pump tasks end by themselves now that the writers are closed
        self.session.push_state()

    # ---- commands

    async def send(self, side: str, frames: list[bytes]) -> None:
        if side in self.killed:
            raise SessionError(f"the {side} was killed; reset the session to start it again")
        target = self.server if side == "server" else self.client
        if target is None:
            raise SessionError("the session is not running")
        await target.send(frames)

    async def play(self) -> None:
        self.playing = True
        await self._release(None)

    async def pause(self) -> None:
        self.playing = False

    async def step(self) -> None:
        self.playing = False
        if not self.held:
            raise SessionError("nothing is waiting on the wire")
        await self._release(1)

    async def step_back(self) -> None:
        raise SessionError("a real TCP session cannot step back (use a simulated session)")

    async def set_speed(self, value: float) -> None:
        self.speed = value  # real peers run in real time; kept for the state only

    async def fault(self, name: str, args: dict[str, Any]) -> None:
        if name in SIMULATED_ONLY:
            raise SessionError(f"the fault {name!r} needs a simulated session")
        if name not in FAULTS:
            raise SessionError(f"unknown fault {name!r}; one of {', '.join(FAULTS + SIMULATED_ONLY)}")
        if args.get("dir") not in (None, "c2s", "s2c"):
            raise SessionError("dir is 'c2s' or 's2c'")
        if name == "kill":
            await self._kill(args.get("peer", args.get("side", "server")))
            return
        peer = args.get("peer")
        if peer is not None and args.get("dir") is None and name != "close":
            if peer not in ("server", "client"):
                raise SessionError("peer is 'server' or 'client'")
            args = {**args, "dir": "s2c" if peer == "server" else "c2s"}  # the direction that peer writes
        if name == "close":
            self._mark("fault", fault="close", side=peer or "server")
            for link in list(self.links.values()):
                for writer in link.writers.values():
                    with contextlib.suppress(Exception):
                        writer.transport.abort()
                await self._close_link(link)
            return
        self.faults.append((name, dict(args)))

    async def _kill(self, side: Any) -> None:
        if side not in ("server", "client"):
            raise SessionError("side is 'server' or 'client'")
        if side in self.killed:
            raise SessionError(f"the {side} is already dead")
        target = self.server if side == "server" else self.client
        if target is None:
            raise SessionError("the session is not running")
        self.killed.add(side)
        self._mark("fault", fault="kill", peer=side)  # (before its connections close: the marks come in order)
        await target.kill()

    def position(self) -> int:
        return len(self.session.events)

    def total(self) -> int:
        return len(self.session.events)

    def closed(self) -> bool:
        """True once the runtime stopped, or when connections came and went and none is open now
        while nobody can open a new one (a peer was killed, or the tap lost its target)."""
        if self._closed:
            return True
        if self.links:
            return False
        return self.connections > 0 or self.target_lost

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for item in self.held:
            if not item.done.done():
                item.done.set_result(None)
        self.held.clear()
        if self.tap is not None:
            self.tap.close()
        for side in (self.client, self.server):
            if side is not None:
                with contextlib.suppress(Exception):
                    await side.close()
        for link in list(self.links.values()):
            for writer in link.writers.values():
                with contextlib.suppress(Exception):
                    writer.transport.abort()
            for task in link.tasks:
                task.cancel()
        tasks = [*self._tasks]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self.tap is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.tap.wait_closed(), 1.0)


def _number(value: Any, default: float, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return min(max(float(value), low), high)
