"""What a peer is: socket type, identity, ZMTP version, mechanism and credentials, timers and limits.

`PeerOptions` is shared by both runtimes (the simulation and the asyncio TCP driver). Times
are in seconds (the CLI takes libzmq's milliseconds and converts). The defaults are libzmq's,
except `max_frame_size` (libzmq has no limit by default; see docs/peers.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..engine import Connection, Mechanism, NullMechanism, PlainClient, PlainServer, ZwsConnection
from ..engine.constants import MECHANISMS, SOCKET_TYPES, VERSIONS, mechanism_problem

DEFAULT_MAX_FRAME = 64 * 1024 * 1024


def _as_bytes(value: bytes | str | None) -> bytes | None:
    if value is None:
        return None
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


@dataclass
class PeerOptions:
    """Every setting of one peer (one ZeroMQ socket); see the module docstring."""

    socket_type: str
    identity: bytes = b""
    version: str = "3.1"
    strategy: str = "partial"
    mechanism: str = "NULL"
    # PLAIN: a client's credentials; on a server (plain_server=True) the one account it accepts,
    # or `plain_users` (username -> password); with neither, every client is accepted (libzmq without ZAP).
    username: str | None = None
    password: str | None = None
    plain_server: bool = False
    plain_users: dict[str, str] | None = None
    # CURVE: keys as 32 raw octets or 40 Z85 characters.
    curve_server: bool = False
    curve_publickey: bytes | str | None = None
    curve_secretkey: bytes | str | None = None
    curve_serverkey: bytes | str | None = None
    curve_authenticate: Callable[[bytes], str | None] | None = None
    # Timers (seconds), as libzmq's ZMQ_HEARTBEAT_IVL/TTL/TIMEOUT, ZMQ_HANDSHAKE_IVL, ZMQ_RECONNECT_IVL(_MAX).
    heartbeat_ivl: float = 0.0
    heartbeat_ttl: float = 0.0
    heartbeat_timeout: float | None = None  # None: the interval, as libzmq
    handshake_ivl: float = 30.0
    reconnect_ivl: float = 0.1
    reconnect_ivl_max: float = 0.0
    # Limits: ZMQ_SNDHWM/ZMQ_RCVHWM (messages per pipe) and the largest frame accepted (octets; None: no limit).
    sndhwm: int = 1000
    rcvhwm: int = 1000
    max_frame_size: int | None = DEFAULT_MAX_FRAME
    immediate: bool = False  # ZMQ_IMMEDIATE: queue only to connected peers
    xpub_verbose: bool = False  # ZMQ_XPUB_VERBOSE: pass every subscription up, not only new ones
    properties: dict[str, bytes] = field(default_factory=dict)  # extra READY metadata (X-... names)
    # ws:// (45/ZWS): the subprotocols a client offers or a server accepts, in order (None: libzmq's offer,
    # ZWS2.0/NULL,ZWS2.0 for NULL; a server accepts every one that fits its mechanism).
    zws_protocols: list[str] | None = None

    def __post_init__(self) -> None:
        self.socket_type = self.socket_type.upper()
        if self.socket_type not in SOCKET_TYPES:
            raise ValueError(f"unknown socket type {self.socket_type!r}; one of {', '.join(SOCKET_TYPES)}")
        self.mechanism = self.mechanism.upper()
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {self.mechanism!r}; one of {', '.join(MECHANISMS)}")
        self.identity = _as_bytes(self.identity) or b""
        if len(self.identity) > 255:
            raise ValueError("an identity has at most 255 octets")
        if self.mechanism == "CURVE":
            if self.curve_server:
                self._curve_server_keys()
            else:
                self._curve_server_key()
        if self.mechanism == "PLAIN" and not self.plain_server and (self.username is None or self.password is None):
            raise ValueError("a PLAIN client needs a username and a password")
        if self.version not in VERSIONS:
            raise ValueError(f"unsupported ZMTP version {self.version!r}")
        problem = mechanism_problem(self.version, self.mechanism)
        if problem:
            raise ValueError(problem)

    # ------------------------------------------------------------------ derived

    @property
    def effective_heartbeat_timeout(self) -> float:
        """ZMQ_HEARTBEAT_TIMEOUT, which defaults to the interval."""
        return self.heartbeat_ivl if self.heartbeat_timeout is None else self.heartbeat_timeout

    def make_mechanism(self, random: Callable[[int], bytes] | None = None) -> Mechanism:
        """A fresh mechanism object (they keep per-connection state); CURVE draws its randomness from `random`
        (default: the OS)."""
        if self.mechanism == "NULL":
            return NullMechanism()
        if self.mechanism == "PLAIN":
            if self.plain_server:
                return PlainServer(self._plain_authenticator())
            return PlainClient(self.username or "", self.password or "")
        from ..engine.curve import CurveClient, CurveServer

        if self.curve_server:
            return CurveServer(*self._curve_server_keys(), authenticate=self.curve_authenticate, random=random)
        return CurveClient(self._curve_server_key(), self.curve_publickey, self.curve_secretkey, random=random)

    def _curve_server_keys(self) -> tuple[bytes | str, bytes | str]:
        """A CURVE server's public and secret keys; ValueError when one is missing."""
        public, secret = self.curve_publickey, self.curve_secretkey
        if public is None or secret is None:
            raise ValueError("a CURVE server needs its public and secret keys")
        return public, secret

    def _curve_server_key(self) -> bytes | str:
        """The server's public key, which a CURVE client needs; ValueError when it is missing."""
        if self.curve_serverkey is None:
            raise ValueError("a CURVE client needs the server's public key (curve_serverkey)")
        return self.curve_serverkey

    def _plain_authenticator(self) -> Callable[[str, str], str | None] | None:
        users = dict(self.plain_users or {})
        if self.username is not None:
            users[self.username] = self.password or ""
        if not users:
            return None  # accept everyone, as libzmq does when no ZAP handler is installed

        def authenticate(username: str, password: str) -> str | None:
            return username if users.get(username) == password else None

        return authenticate

    def make_connection(self) -> Connection:
        """A fresh engine `Connection` for one TCP connection of this peer."""
        return Connection(self.socket_type, mechanism=self.make_mechanism(), identity=self.identity,
                          version=self.version, strategy=self.strategy, max_frame_size=self.max_frame_size,
                          properties=self.properties)

    def make_zws_connection(self, *, client: bool, host: str = "localhost", target: str = "/") -> ZwsConnection:
        """A fresh engine `ZwsConnection` for one ws:// connection of this peer (`host` and `target`: a client's
        Host header and resource)."""
        return ZwsConnection(self.socket_type, client=client, mechanism=self.make_mechanism(), identity=self.identity,
                             host=host, target=target, protocols=self.zws_protocols,
                             max_frame_size=self.max_frame_size, properties=self.properties)

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly summary (no secrets)."""
        out: dict[str, Any] = {"type": self.socket_type, "version": self.version, "mechanism": self.mechanism,
                               "identity": self.identity.hex()}
        if self.mechanism == "PLAIN":
            out["role"] = "server" if self.plain_server else "client"
            if not self.plain_server:
                out["username"] = self.username
        if self.mechanism == "CURVE":
            out["role"] = "server" if self.curve_server else "client"
        if self.heartbeat_ivl:
            out["heartbeat_ivl"] = self.heartbeat_ivl
        return out
