"""A simulated peer (`SimPeer`): a `PeerCore` with what its application does in a simulation.

Its application may read every message at once (`auto_recv`), one every `recv_every` seconds (a slow
consumer), echo what it reads, or be one side of a proxy (`proxy_to`); sends its socket cannot take yet wait
in `blocked`, as a blocked libzmq send would. Faults change what its next connections announce (`overrides`).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import Any

from ..engine import Connection
from .options import PeerOptions
from .session import PeerCore
from .sockets import Again, SocketStateError


class SimPeer:
    """One peer of a simulation: its socket (`core`), its application's habits, and the faults it is under."""

    def __init__(self, name: str, options: PeerOptions, auto_recv: bool, auto_serverkey: bool, *,
                 rng: random.Random, emit: Callable[[dict[str, Any]], None]) -> None:
        self.name = name
        self.options = options
        self.auto_recv = auto_recv
        self.auto_serverkey = auto_serverkey
        self.core = PeerCore(options, name=name, rng=rng, emit=emit, fast_path=True, log_closures=False)
        self.random = rng.randbytes  # CURVE's keys and nonces: from the seed, so a session replays exactly
        self.socket = self.core.socket
        self.blocked: deque[tuple[bytes, ...]] = deque()  # sends waiting (libzmq would block the caller)
        self.blocked_ids: deque[int | None] = deque()  # their message ids (a simulation with decisions)
        self.overrides: dict[str, Any] = {}  # faults: what the next connections announce instead
        self.recv_every: float | None = None  # a slow consumer: one read every that many seconds
        self.next_read: float | None = None
        self.echo = False  # the application sends back every message it receives
        self.proxy_to: SimPeer | None = None  # a proxy's node: what it receives goes out there
        self.index = 0  # its place among the simulation's peers

    def read(self) -> tuple[bytes, ...] | None:
        """Its application reads one message: None when the socket has none (or refuses to read now)."""
        try:
            return self.socket.recv()
        except SocketStateError:
            return None

    def send_blocked(self) -> bool:
        """Sends what waits in `blocked` as far as the socket takes it; True when something went."""
        core = self.core
        blocked = self.blocked
        sent = False
        while blocked:
            try:
                core.send(blocked[0])
            except (Again, SocketStateError):
                break
            blocked.popleft()
            sent = True
        return sent

    def make_connection(self) -> Connection:
        """The engine connection of its next link, announcing what the faults it is under say."""
        opts = self.options
        o = self.overrides
        version = o.get("version", opts.version)
        mechanism_name = o.get("mechanism", opts.mechanism)
        if mechanism_name != opts.mechanism or version != opts.version or "password" in o:
            fake = PeerOptions(opts.socket_type, identity=opts.identity, version=version, strategy=opts.strategy,
                               mechanism=mechanism_name,
                               username=o.get("username", opts.username or "user"),
                               password=o.get("password", opts.password or "password"),
                               plain_server=opts.plain_server and mechanism_name == "PLAIN",
                               plain_users=opts.plain_users,
                               curve_server=opts.curve_server and mechanism_name == "CURVE",
                               curve_publickey=opts.curve_publickey, curve_secretkey=opts.curve_secretkey,
                               curve_serverkey=o.get("curve_serverkey", opts.curve_serverkey),
                               max_frame_size=opts.max_frame_size)
            mechanism = fake.make_mechanism(self.random)
        else:
            mechanism = opts.make_mechanism(self.random)
        return Connection(o.get("socket_type", opts.socket_type), mechanism=mechanism, identity=opts.identity,
                          version=version, strategy=opts.strategy, max_frame_size=opts.max_frame_size,
                          properties=opts.properties)


__all__ = ["SimPeer"]
