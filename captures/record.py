#!/usr/bin/env python3
"""Record sample ZMTP captures from real libzmq peers (pyzmq) with dumpcap.

Usage::

    python captures/record.py [--out DIR] [--only NAME ...] [--list] [--table]

For every scenario this starts ``dumpcap -i lo -f 'tcp port P' -w DIR/NAME.pcapng``,
waits until dumpcap reports that it is capturing ("File: ..."), runs the scenario on
127.0.0.1:P, lets the TCP teardown reach the wire, and stops dumpcap with SIGINT.
Each scenario has its own port so that a capture only ever holds its own traffic.

Most scenarios are two pyzmq sockets talking to each other. A few put a small
hand-written peer (``RawPeer``) on one side to make libzmq show behaviour that two
libzmq peers never produce between themselves: the downgrade to ZMTP 2.0 and 1.0,
ZMTP 3.0 subscriptions (0x01-prefixed messages instead of SUBSCRIBE commands) and a
heartbeat TTL running out. The libzmq side of those captures is still real libzmq.

Exit status: 0 when every selected scenario was recorded, 1 when a scenario failed,
2 when dumpcap is missing or cannot capture on ``lo``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import zmq
from zmq.utils.monitor import recv_monitor_message

HOST = "127.0.0.1"
#: Every blocking zmq call gives up after this long, so a broken scenario cannot hang.
TIMEOUT_MS = 3000
#: How long to wait for dumpcap to report its output file (= capturing) before giving up.
DUMPCAP_START_TIMEOUT = 10.0
#: Time after a scenario for FIN/ACK segments to reach the capture before it stops.
SETTLE = 0.3
#: A reconnect interval far longer than any scenario: a failing handshake is then
#: attempted exactly once and the capture stays small and deterministic.
NO_RECONNECT_MS = 60_000
ZAP_ENDPOINT = "inproc://zeromq.zap.01"


class CaptureError(RuntimeError):
    """dumpcap is missing, lacks permission or did not start capturing."""


class ScenarioError(RuntimeError):
    """A scenario did not see the traffic it expected."""


# --------------------------------------------------------------------------- dumpcap


class Dumpcap:
    """Runs dumpcap on the loopback interface for one TCP port (a context manager).

    Entering starts dumpcap and returns once it is capturing; leaving stops it with
    SIGINT (then terminate, then kill) and always waits for the process.
    """

    def __init__(self, port: int, out: Path, interface: str = "lo", ports: int = 1) -> None:
        """Remember what to capture (``ports`` consecutive ports from ``port``); nothing starts before ``__enter__``."""
        self.port = port
        self.ports = ports
        self.out = out
        self.interface = interface
        self.stderr_lines: list[str] = []
        self.packets: int | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._capturing = threading.Event()
        self._reader: threading.Thread | None = None

    @staticmethod
    def executable() -> str:
        """Return the path of dumpcap or raise CaptureError saying how to get it."""
        path = shutil.which("dumpcap")
        if path is None:
            raise CaptureError(
                "dumpcap not found on PATH: install it (Debian: apt-get install tshark, "
                "which pulls in wireshark-common) and run as root or as a member of the "
                "'wireshark' group"
            )
        return path

    def _read_stderr(self) -> None:
        """Collect dumpcap's stderr lines and flag the moment it starts capturing.

        dumpcap prints "Capturing on 'lo'" before it opens the interface, and
        "File: PATH" only once the pcap handle, the filter and the output file are
        all set up ("capture started successfully" in dumpcap.c), so "File:" is the
        signal that packets sent from now on will be in the capture.
        """
        assert self._proc is not None and self._proc.stderr is not None
        for raw in self._proc.stderr:
            line = raw.strip("\r\n").lstrip("\r")
            self.stderr_lines.append(line)
            if line.startswith("File:"):
                self._capturing.set()
            elif line.startswith("Packets captured:"):
                with suppress(ValueError):
                    self.packets = int(line.split(":", 1)[1])

    def __enter__(self) -> Dumpcap:
        """Start dumpcap and block until it captures; raise CaptureError otherwise."""
        cmd = [
            self.executable(),
            "-i", self.interface,
            "-f", f"tcp portrange {self.port}-{self.port + self.ports - 1}" if self.ports > 1
            else f"tcp port {self.port}",
            "-w", str(self.out),
        ]  # fmt: skip
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self._reader = threading.Thread(target=self._read_stderr, name="dumpcap-stderr", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + DUMPCAP_START_TIMEOUT
        while not self._capturing.wait(0.05):
            exited = self._proc.poll() is not None
            if exited or time.monotonic() > deadline:
                self.stop()
                detail = " | ".join(line for line in self.stderr_lines if line) or "no output"
                why = (
                    f"exited with status {self._proc.returncode}"
                    if exited
                    else f"did not report 'File: ...' within {DUMPCAP_START_TIMEOUT:.0f} s"
                )
                raise CaptureError(
                    f"dumpcap could not capture on {self.interface!r}: it {why}: {detail}. Capturing "
                    "needs root or CAP_NET_RAW/CAP_NET_ADMIN on dumpcap (Debian: dpkg-reconfigure "
                    "wireshark-common and join the 'wireshark' group)"
                )
        # From here on the kernel buffers matching packets for dumpcap; the pause is
        # only a margin, not the synchronisation itself.
        time.sleep(0.05)
        return self

    def stop(self) -> None:
        """Stop dumpcap (SIGINT lets it flush and close the file) and wait for it."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=2)

    def __exit__(self, *exc: object) -> None:
        """Always stop dumpcap, whatever happened inside the block."""
        self.stop()


# ------------------------------------------------------------------ zmq helpers


def endpoint(port: int) -> str:
    """Return the tcp endpoint for ``port`` on the loopback address."""
    return f"tcp://{HOST}:{port}"


@contextmanager
def zmq_context() -> Iterator[zmq.Context]:
    """Yield a fresh context and destroy it (all sockets, linger 0) afterwards.

    A fresh context per scenario keeps ZAP handlers and sockets from leaking
    between scenarios.
    """
    ctx = zmq.Context()
    try:
        yield ctx
    finally:
        ctx.destroy(linger=0)


def make_socket(ctx: zmq.Context, kind: int, **options: int | bytes) -> zmq.Socket:
    """Create a socket with linger 0, send/receive timeouts and extra options.

    Options are given by pyzmq name without the prefix (``ROUTING_ID=b"x"``) and are
    set before bind/connect, which is when libzmq reads most of them.
    """
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, TIMEOUT_MS)
    sock.setsockopt(zmq.SNDTIMEO, TIMEOUT_MS)
    for name, value in options.items():
        sock.setsockopt(getattr(zmq, name), value)
    return sock


def recv_expect(sock: zmq.Socket, expected: list[bytes], what: str) -> None:
    """Receive one multipart message and raise ScenarioError unless it is ``expected``."""
    try:
        got = sock.recv_multipart()
    except zmq.Again as exc:
        raise ScenarioError(f"{what}: nothing received within {TIMEOUT_MS} ms") from exc
    if got != expected:
        raise ScenarioError(f"{what}: expected {expected!r}, got {got!r}")


def send_routed(sock: zmq.Socket, frames: list[bytes], timeout: float = 3.0) -> None:
    """Send from a ROUTER with ROUTER_MANDATORY, retrying until the peer is routable.

    A connecting ROUTER only knows its peer's identity after the handshake, and
    ROUTER_MANDATORY makes an early send fail with EHOSTUNREACH instead of dropping it.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock.send_multipart(frames)
            return
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EHOSTUNREACH or time.monotonic() > deadline:
                raise ScenarioError(f"could not route to {frames[0]!r}: {exc}") from exc
            time.sleep(0.01)


def event_name(event: int) -> str:
    """Return the monitor event's name (``HANDSHAKE_FAILED_AUTH``) or its number."""
    try:
        return zmq.Event(event).name or str(event)
    except ValueError:
        return str(event)


def protocol_error_name(value: int) -> str:
    """Return the ZMQ_PROTOCOL_ERROR_* name for a monitor event value, if any."""
    for name in dir(zmq):
        if name.startswith("PROTOCOL_ERROR_") and getattr(zmq, name) == value:
            return name.removeprefix("PROTOCOL_ERROR_")
    return str(value)


class Monitor:
    """Watches a socket's monitor events, used to know when a handshake is over."""

    def __init__(self, sock: zmq.Socket) -> None:
        """Start monitoring ``sock`` (call before connect so no event is missed)."""
        self.sock = sock
        self.pipe = sock.get_monitor_socket()
        self.seen: list[tuple[str, int]] = []

    def wait_for(self, *wanted: int, timeout: float = 3.0) -> tuple[int, int]:
        """Return ``(event, value)`` of the first of ``wanted`` events; raise on timeout."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not self.pipe.poll(int(left * 1000)):
                break
            msg = recv_monitor_message(self.pipe)
            event, value = int(msg["event"]), int(msg["value"])
            self.seen.append((event_name(event), value))
            if event in wanted:
                return event, value
        names = ", ".join(event_name(e) for e in wanted)
        raise ScenarioError(f"monitor: none of {names} within {timeout} s (saw {self.seen})")

    def close(self) -> None:
        """Stop monitoring and close the monitor pipe."""
        with suppress(zmq.ZMQError):
            self.sock.disable_monitor()
        self.pipe.close(linger=0)


def describe_failed_handshake(monitor: Monitor) -> str:
    """Wait until a handshake has failed and the connection is gone; describe it.

    libzmq reports a mechanism mismatch as HANDSHAKE_FAILED_PROTOCOL, but a socket
    type mismatch only as DISCONNECTED, so both are accepted; a successful handshake
    is an error.
    """
    try:
        event, _value = monitor.wait_for(
            zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_SUCCEEDED, zmq.EVENT_DISCONNECTED
        )
        if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            raise ScenarioError("expected a failed handshake, but it succeeded")
        if event != zmq.EVENT_DISCONNECTED:
            monitor.wait_for(zmq.EVENT_DISCONNECTED)
    finally:
        monitor.close()
    events = [
        f"{name}({protocol_error_name(val)})" if name == "HANDSHAKE_FAILED_PROTOCOL" else name
        for name, val in monitor.seen
    ]
    return f"client events: {' '.join(events)}"


ZapPolicy = Callable[[bytes, list[bytes]], bool]
"""Decides a ZAP request: ``policy(mechanism, credentials) -> accepted``."""


def plain_users(users: dict[bytes, bytes]) -> ZapPolicy:
    """Return a policy accepting PLAIN users from ``users`` and nothing else."""

    def policy(mechanism: bytes, credentials: list[bytes]) -> bool:
        return mechanism == b"PLAIN" and len(credentials) == 2 and users.get(credentials[0]) == credentials[1]

    return policy


def deny_all(mechanism: bytes, credentials: list[bytes]) -> bool:
    """A policy that refuses every connection."""
    return False


class ZapHandler(threading.Thread):
    """A minimal ZAP handler (RFC 27) answering 200 or 400 according to a policy.

    It binds ``inproc://zeromq.zap.01`` in the scenario's context, so libzmq asks it
    about every PLAIN/CURVE handshake (and NULL ones on sockets with a ZAP domain).
    A 400 makes libzmq send an ERROR command on the wire.
    """

    def __init__(self, ctx: zmq.Context, policy: ZapPolicy) -> None:
        """Prepare the handler; call ``start()`` and then ``wait_ready()``."""
        super().__init__(name="zap-handler", daemon=True)
        self.ctx = ctx
        self.policy = policy
        self.requests: list[list[bytes]] = []
        self._ready = threading.Event()
        self._stop_event = threading.Event()
        self._error: BaseException | None = None

    def run(self) -> None:
        """Bind the ZAP endpoint and answer requests until ``stop()``."""
        # The socket is created in this thread because zmq sockets are not thread-safe.
        sock = make_socket(self.ctx, zmq.REP)
        try:
            sock.bind(ZAP_ENDPOINT)
            self._ready.set()
            while not self._stop_event.is_set():
                if not sock.poll(50):
                    continue
                request = sock.recv_multipart()
                self.requests.append(request)
                version, request_id, _domain, _address, _identity, mechanism, *credentials = request
                if self.policy(mechanism, credentials):
                    user = credentials[0] if mechanism == b"PLAIN" else b"anonymous"
                    sock.send_multipart([version, request_id, b"200", b"OK", user, b""])
                else:
                    sock.send_multipart([version, request_id, b"400", b"Access denied", b"", b""])
        except BaseException as exc:  # reported by wait_ready() in the caller
            self._error = exc
            self._ready.set()
        finally:
            sock.close(linger=0)

    def wait_ready(self) -> None:
        """Block until the handler is bound; re-raise its error if binding failed."""
        if not self._ready.wait(3) or self._error is not None:
            raise ScenarioError(f"ZAP handler did not start: {self._error}")

    def stop(self) -> None:
        """Ask the handler to finish and wait for it."""
        self._stop_event.set()
        self.join(timeout=2)


@contextmanager
def zap_handler(ctx: zmq.Context, policy: ZapPolicy) -> Iterator[ZapHandler]:
    """Run a ZapHandler for the duration of the block."""
    handler = ZapHandler(ctx, policy)
    handler.start()
    try:
        handler.wait_ready()
        yield handler
    finally:
        handler.stop()


def wait_auth_failure(monitor: Monitor, server: zmq.Socket) -> str:
    """Wait until the client's handshake was refused and it disconnected; describe it."""
    try:
        event, value = monitor.wait_for(
            zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_SUCCEEDED
        )
        if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            raise ScenarioError("expected the ZAP handler to refuse the client, but the handshake succeeded")
        monitor.wait_for(zmq.EVENT_DISCONNECTED)
    finally:
        monitor.close()
    if server.poll(100):
        raise ScenarioError("the server received a message although authentication failed")
    return f"client: {event_name(event)} {value}"


# ------------------------------------------------------------- a hand-made peer


def zmtp3_greeting(minor: int, mechanism: bytes = b"NULL", as_server: bool = False) -> bytes:
    """Return a 64-byte ZMTP 3.x greeting (23/ZMTP, 37/ZMTP)."""
    return (
        b"\xff" + b"\x00" * 8 + b"\x7f"
        + bytes([3, minor])
        + mechanism.ljust(20, b"\x00")
        + bytes([1 if as_server else 0])
        + b"\x00" * 31
    )  # fmt: skip


def zmtp3_frame(body: bytes, more: bool = False, command: bool = False) -> bytes:
    """Return one ZMTP 3.x frame: flags (MORE=1, LONG=2, COMMAND=4), size, body."""
    flags = (1 if more else 0) | (4 if command else 0)
    if len(body) > 255:
        return bytes([flags | 2]) + struct.pack(">Q", len(body)) + body
    return bytes([flags, len(body)]) + body


def zmtp3_command(name: bytes, data: bytes = b"") -> bytes:
    """Return a ZMTP 3.x command frame: name length, name, command data."""
    return zmtp3_frame(bytes([len(name)]) + name + data, command=True)


def zmtp3_ready(properties: dict[bytes, bytes]) -> bytes:
    """Return a READY command frame carrying the metadata ``properties``."""
    data = b"".join(bytes([len(k)]) + k + struct.pack(">I", len(v)) + v for k, v in properties.items())
    return zmtp3_command(b"READY", data)


class RawPeer:
    """A blocking TCP peer that speaks ZMTP by hand, with a timeout on every read.

    Used where libzmq talking to libzmq cannot show something (older versions, an
    expiring heartbeat TTL). It only checks what it needs to; the dissector is the
    tool that explains the bytes.
    """

    def __init__(self, sock: socket.socket) -> None:
        """Wrap a connected socket; every read times out after TIMEOUT_MS."""
        self.sock = sock
        self.sock.settimeout(TIMEOUT_MS / 1000)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @classmethod
    def connect(cls, port: int) -> RawPeer:
        """Connect to 127.0.0.1:port."""
        return cls(socket.create_connection((HOST, port), timeout=TIMEOUT_MS / 1000))

    def send(self, data: bytes) -> None:
        """Send all of ``data``."""
        self.sock.sendall(data)

    def recv_exact(self, size: int) -> bytes:
        """Read exactly ``size`` bytes; raise ScenarioError on EOF or timeout."""
        buf = bytearray()
        while len(buf) < size:
            try:
                chunk = self.sock.recv(size - len(buf))
            except TimeoutError as exc:
                raise ScenarioError(f"raw peer: timed out after {bytes(buf)!r}") from exc
            if not chunk:
                raise ScenarioError(f"raw peer: connection closed after {bytes(buf)!r}")
            buf += chunk
        return bytes(buf)

    def recv_frame3(self) -> tuple[int, bytes]:
        """Read one ZMTP 3.x / 2.0 frame and return ``(flags, body)``."""
        flags = self.recv_exact(1)[0]
        size = struct.unpack(">Q", self.recv_exact(8))[0] if flags & 2 else self.recv_exact(1)[0]
        return flags, self.recv_exact(size)

    def recv_command3(self, name: bytes) -> bytes:
        """Read one frame, check it is the command ``name`` and return its data."""
        flags, body = self.recv_frame3()
        if not flags & 4 or body[1 : 1 + body[0]] != name:
            raise ScenarioError(f"raw peer: expected {name.decode()} command, got flags={flags} {body!r}")
        return body[1 + body[0] :]

    def wait_closed(self, timeout: float) -> float:
        """Wait until the other side closes; return how long it took in seconds."""
        start = time.monotonic()
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(4096):
                pass
        except TimeoutError as exc:
            raise ScenarioError(f"raw peer: connection still open after {timeout} s") from exc
        return time.monotonic() - start

    def close(self) -> None:
        """Close the TCP connection."""
        with suppress(OSError):
            self.sock.close()


class RawServer(threading.Thread):
    """Accepts one connection on 127.0.0.1:port and runs ``handler`` on it in a thread."""

    def __init__(self, port: int, handler: Callable[[RawPeer], None]) -> None:
        """Bind and listen right away, so a client may connect as soon as this returns."""
        super().__init__(name="raw-server", daemon=True)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((HOST, port))
        self.listener.listen(1)
        self.listener.settimeout(TIMEOUT_MS / 1000)
        self.handler = handler
        self.error: BaseException | None = None

    def run(self) -> None:
        """Accept one client, run the handler, close; keep any error for ``finish()``."""
        peer: RawPeer | None = None
        try:
            conn, _ = self.listener.accept()
            peer = RawPeer(conn)
            self.handler(peer)
        except BaseException as exc:
            self.error = exc
        finally:
            if peer is not None:
                peer.close()
            self.listener.close()

    def finish(self) -> None:
        """Wait for the handler and re-raise what went wrong in it."""
        self.join(timeout=TIMEOUT_MS / 1000 + 2)
        if self.is_alive():
            raise ScenarioError("raw server did not finish")
        if self.error is not None:
            raise ScenarioError(f"raw server: {self.error}") from self.error


# ------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Scenario:
    """One capture: which sockets talk on which port, and the code that does it.

    ``run(port, out_dir)`` performs the exchange and returns a short note for the
    progress line (for example the monitor event libzmq reported).
    """

    name: str
    port: int
    server: str
    client: str
    summary: str
    run: Callable[[int, Path], str]
    ports: int = 1  # a topology uses the ports port .. port + ports - 1 (a broker binds two)


SCENARIOS: dict[str, Scenario] = {}


def scenario(
    name: str, port: int, server: str, client: str, summary: str, ports: int = 1
) -> Callable[[Callable[[int, Path], str]], Callable[[int, Path], str]]:
    """Register the decorated function as the scenario ``name`` on ``port`` (and the ``ports - 1`` after it)."""

    def register(func: Callable[[int, Path], str]) -> Callable[[int, Path], str]:
        taken = {q for sc in SCENARIOS.values() for q in range(sc.port, sc.port + sc.ports)}
        if name in SCENARIOS or taken & set(range(port, port + ports)):
            raise ValueError(f"duplicate scenario name or port: {name} {port}")
        SCENARIOS[name] = Scenario(name, port, server, client, summary, func, ports)
        return func

    return register


@scenario("push_pull", 15601, "PUSH", "PULL", "server sends `My Message` and `second`")
def run_push_pull(port: int, out_dir: Path) -> str:
    """PUSH (bind) sends two single-frame messages to PULL (connect)."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PUSH)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.PULL)
        client.connect(endpoint(port))
        server.send(b"My Message")
        server.send(b"second")
        recv_expect(client, [b"My Message"], "PULL")
        recv_expect(client, [b"second"], "PULL")
    return ""


@scenario(
    "dealer_router", 15602, "ROUTER", "DEALER, identity `client-1`",
    "2 times: DEALER sends [``, `request i`]; ROUTER replies [``, `reply i`]",
)  # fmt: skip
def run_dealer_router(port: int, out_dir: Path) -> str:
    """DEALER with a routing id does two request/replies with a ROUTER."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.DEALER, ROUTING_ID=b"client-1")
        client.connect(endpoint(port))
        for i in (1, 2):
            client.send_multipart([b"", b"request %d" % i])
            recv_expect(server, [b"client-1", b"", b"request %d" % i], "ROUTER")
            server.send_multipart([b"client-1", b"", b"reply %d" % i])
            recv_expect(client, [b"", b"reply %d" % i], "DEALER")
    return ""


@scenario("req_rep", 15603, "REP", "REQ", "2 times: `Hello` -> `World` (with the empty delimiter frame)")
def run_req_rep(port: int, out_dir: Path) -> str:
    """REQ and REP do two round trips; libzmq adds the empty delimiter on the wire."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.REP)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.REQ)
        client.connect(endpoint(port))
        for _ in range(2):
            client.send(b"Hello")
            recv_expect(server, [b"Hello"], "REP")
            server.send(b"World")
            recv_expect(client, [b"World"], "REQ")
    return ""


@scenario(
    "router_router", 15604, "ROUTER, identity `server`", "ROUTER, identity `client`",
    "client routes `hello` to `server`; server routes `hello back` to `client`",
)  # fmt: skip
def run_router_router(port: int, out_dir: Path) -> str:
    """Two ROUTERs with identities address each other by those identities."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER, ROUTING_ID=b"server")
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.ROUTER, ROUTING_ID=b"client", ROUTER_MANDATORY=1)
        client.connect(endpoint(port))
        send_routed(client, [b"server", b"hello"])
        recv_expect(server, [b"client", b"hello"], "server ROUTER")
        server.send_multipart([b"client", b"hello back"])
        recv_expect(client, [b"server", b"hello back"], "client ROUTER")
    return ""


@scenario(
    "dealer_dealer", 15605, "DEALER", "DEALER",
    "client sends [`hello`, `dealer`]; server sends `hi`",
)  # fmt: skip
def run_dealer_dealer(port: int, out_dir: Path) -> str:
    """Two DEALERs exchange messages freely (no envelopes)."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.DEALER)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.DEALER)
        client.connect(endpoint(port))
        client.send_multipart([b"hello", b"dealer"])
        recv_expect(server, [b"hello", b"dealer"], "server DEALER")
        server.send(b"hi")
        recv_expect(client, [b"hi"], "client DEALER")
    return ""


@scenario(
    "dealer_rep", 15606, "REP", "DEALER",
    "DEALER sends [``, `question`] (delimiter by hand); REP answers `answer`",
)  # fmt: skip
def run_dealer_rep(port: int, out_dir: Path) -> str:
    """A DEALER talks to REP by adding the empty delimiter frame itself."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.REP)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.DEALER)
        client.connect(endpoint(port))
        client.send_multipart([b"", b"question"])
        recv_expect(server, [b"question"], "REP")
        server.send(b"answer")
        recv_expect(client, [b"", b"answer"], "DEALER")
    return ""


@scenario("req_router", 15607, "ROUTER", "REQ", "REQ sends `hello`; ROUTER replies `world` to it")
def run_req_router(port: int, out_dir: Path) -> str:
    """REQ talks to a ROUTER; the ROUTER sees [routing id, ``, body]."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.REQ)
        client.connect(endpoint(port))
        client.send(b"hello")
        try:
            routing_id, delimiter, body = server.recv_multipart()
        except (zmq.Again, ValueError) as exc:
            raise ScenarioError(f"ROUTER: bad or missing request: {exc}") from exc
        if (delimiter, body) != (b"", b"hello"):
            raise ScenarioError(f"ROUTER: unexpected request {[delimiter, body]!r}")
        server.send_multipart([routing_id, b"", b"world"])
        recv_expect(client, [b"world"], "REQ")
    return ""


@scenario(
    "pub_sub", 15608, "PUB", "SUB",
    "SUB subscribes `weather` and ``; PUB sends [`weather`, `sunny 21C`] and `sports 3-1`; "
    "SUB cancels `weather`",
)  # fmt: skip
def run_pub_sub(port: int, out_dir: Path) -> str:
    """SUBSCRIBE/CANCEL commands (ZMTP 3.1) around two published messages."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PUB)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.SUB)
        client.setsockopt(zmq.SUBSCRIBE, b"weather")
        client.setsockopt(zmq.SUBSCRIBE, b"")
        monitor = Monitor(client)
        client.connect(endpoint(port))
        monitor.wait_for(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        monitor.close()
        # PUB drops messages until the subscriptions have arrived and been processed;
        # there is no event for that on PUB, so give the loopback a moment.
        time.sleep(0.2)
        server.send_multipart([b"weather", b"sunny 21C"])
        server.send(b"sports 3-1")
        recv_expect(client, [b"weather", b"sunny 21C"], "SUB")
        recv_expect(client, [b"sports 3-1"], "SUB")
        client.setsockopt(zmq.UNSUBSCRIBE, b"weather")
        time.sleep(0.1)  # let CANCEL leave before linger 0 would drop it
    return ""


@scenario(
    "xpub_xsub", 15609, "XPUB", "XSUB",
    "XSUB sends `\\x01topic`; XPUB sends [`topic`, `data`]; XSUB sends `upstream` and `\\x00topic`",
)  # fmt: skip
def run_xpub_xsub(port: int, out_dir: Path) -> str:
    """XSUB sends subscriptions as 0x01/0x00-prefixed messages plus one plain message."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.XPUB)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.XSUB)
        client.connect(endpoint(port))
        client.send(b"\x01topic")
        recv_expect(server, [b"\x01topic"], "XPUB")
        server.send_multipart([b"topic", b"data"])
        recv_expect(client, [b"topic", b"data"], "XSUB")
        # XPUB passes messages that are not subscriptions up to the application.
        client.send(b"upstream")
        recv_expect(server, [b"upstream"], "XPUB")
        client.send(b"\x00topic")
        recv_expect(server, [b"\x00topic"], "XPUB")
    return ""


@scenario(
    "pair", 15610, "PAIR, heartbeat 100 ms", "PAIR, heartbeat 100 ms",
    "`ping?` / `pong!`, then ~400 ms idle: PING/PONG commands both ways",
)  # fmt: skip
def run_pair(port: int, out_dir: Path) -> str:
    """Two PAIRs with ZMQ_HEARTBEAT_IVL=100 ms so PING and PONG appear on the wire."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PAIR, HEARTBEAT_IVL=100)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.PAIR, HEARTBEAT_IVL=100)
        client.connect(endpoint(port))
        client.send(b"ping?")
        recv_expect(server, [b"ping?"], "server PAIR")
        server.send(b"pong!")
        recv_expect(client, [b"pong!"], "client PAIR")
        time.sleep(0.4)
    return ""


@scenario(
    "multipart", 15611, "PULL", "PUSH",
    "client sends [300 bytes 00..ff 00..2b (long frame), `short`] and [`a`, `b`, `c`]",
)  # fmt: skip
def run_multipart(port: int, out_dir: Path) -> str:
    """A long frame (size > 255, 8-byte size field) followed by short frames."""
    long_body = bytes(i % 256 for i in range(300))
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PULL)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.PUSH)
        client.connect(endpoint(port))
        client.send_multipart([long_body, b"short"])
        client.send_multipart([b"a", b"b", b"c"])
        recv_expect(server, [long_body, b"short"], "PULL")
        recv_expect(server, [b"a", b"b", b"c"], "PULL")
    return ""


@scenario(
    "empty_frames", 15612, "PULL", "PUSH",
    "client sends [``], [``, ``, `end`] and [`start`, ``]",
)  # fmt: skip
def run_empty_frames(port: int, out_dir: Path) -> str:
    """Zero-length frames in every position of a message."""
    messages = [[b""], [b"", b"", b"end"], [b"start", b""]]
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PULL)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.PUSH)
        client.connect(endpoint(port))
        for message in messages:
            client.send_multipart(message)
        for message in messages:
            recv_expect(server, message, "PULL")
    return ""


PLAIN_USERS = plain_users({b"admin": b"secret"})


@scenario(
    "plain_ok", 15613, "REP, PLAIN server + ZAP handler", "REQ, PLAIN `admin` / `secret`",
    "HELLO with credentials, WELCOME, INITIATE, READY; `Hello` -> `World`",
)  # fmt: skip
def run_plain_ok(port: int, out_dir: Path) -> str:
    """PLAIN handshake accepted by a ZAP handler, then one request/reply."""
    with zmq_context() as ctx, zap_handler(ctx, PLAIN_USERS) as zap:
        server = make_socket(ctx, zmq.REP, PLAIN_SERVER=1)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.REQ, PLAIN_USERNAME=b"admin", PLAIN_PASSWORD=b"secret")
        client.connect(endpoint(port))
        client.send(b"Hello")
        recv_expect(server, [b"Hello"], "REP")
        server.send(b"World")
        recv_expect(client, [b"World"], "REQ")
        return f"ZAP requests: {len(zap.requests)}"


@scenario(
    "plain_denied", 15614, "REP, PLAIN server + ZAP handler", "REQ, PLAIN `admin` / `wrong`",
    "HELLO; ZAP says 400; server sends ERROR `400` (malformed, see README) and both close",
)  # fmt: skip
def run_plain_denied(port: int, out_dir: Path) -> str:
    """PLAIN handshake rejected by the ZAP handler (status 400)."""
    with zmq_context() as ctx, zap_handler(ctx, PLAIN_USERS):
        server = make_socket(ctx, zmq.REP, PLAIN_SERVER=1)
        server.bind(endpoint(port))
        client = make_socket(
            ctx, zmq.REQ, PLAIN_USERNAME=b"admin", PLAIN_PASSWORD=b"wrong", RECONNECT_IVL=NO_RECONNECT_MS
        )
        monitor = Monitor(client)
        client.connect(endpoint(port))
        client.send(b"Hello")  # queued; never delivered
        return wait_auth_failure(monitor, server)


@scenario(
    "curve", 15615, "REP, CURVE server", "REQ, CURVE client (knows the server key)",
    "HELLO, WELCOME, INITIATE, READY; `Hello` -> `World` as MESSAGE commands",
)  # fmt: skip
def run_curve(port: int, out_dir: Path) -> str:
    """CURVE handshake and two encrypted messages; the long-term keys go to a JSON file.

    The keys are throwaway. With the server's secret key a dissector can open the
    HELLO and WELCOME boxes; the rest needs the short-term keys, which never leave
    libzmq.
    """
    server_public, server_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.REP, CURVE_SERVER=1, CURVE_SECRETKEY=server_secret)
        server.bind(endpoint(port))
        client = make_socket(
            ctx, zmq.REQ,
            CURVE_SERVERKEY=server_public, CURVE_PUBLICKEY=client_public, CURVE_SECRETKEY=client_secret,
        )  # fmt: skip
        client.connect(endpoint(port))
        client.send(b"Hello")
        recv_expect(server, [b"Hello"], "REP")
        server.send(b"World")
        recv_expect(client, [b"World"], "REQ")
    keys = {
        "note": "throwaway long-term keys (Z85) used to record curve.pcapng",
        "server": {"public": server_public.decode(), "secret": server_secret.decode()},
        "client": {"public": client_public.decode(), "secret": client_secret.decode()},
    }
    (out_dir / "curve.keys.json").write_text(json.dumps(keys, indent=2) + "\n")
    return "keys in curve.keys.json"


@scenario(
    "curve_denied", 15616, "REP, CURVE server + ZAP handler refusing all", "REQ, CURVE client",
    "HELLO, WELCOME, INITIATE; ZAP says 400; server sends ERROR `400` and both close",
)  # fmt: skip
def run_curve_denied(port: int, out_dir: Path) -> str:
    """A CURVE handshake that the ZAP handler refuses after INITIATE."""
    server_public, server_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    with zmq_context() as ctx, zap_handler(ctx, deny_all):
        server = make_socket(ctx, zmq.REP, CURVE_SERVER=1, CURVE_SECRETKEY=server_secret)
        server.bind(endpoint(port))
        client = make_socket(
            ctx, zmq.REQ, RECONNECT_IVL=NO_RECONNECT_MS,
            CURVE_SERVERKEY=server_public, CURVE_PUBLICKEY=client_public, CURVE_SECRETKEY=client_secret,
        )  # fmt: skip
        monitor = Monitor(client)
        client.connect(endpoint(port))
        client.send(b"Hello")  # queued; never delivered
        return wait_auth_failure(monitor, server)


@scenario(
    "null_denied", 15617, "REP, NULL, ZAP domain `global` + ZAP handler refusing all", "REQ, NULL",
    "greetings; client sends READY, server ERROR `400` instead of READY (they may cross); both close",
)  # fmt: skip
def run_null_denied(port: int, out_dir: Path) -> str:
    """NULL consults ZAP only when the server socket has a ZAP domain."""
    with zmq_context() as ctx, zap_handler(ctx, deny_all):
        server = make_socket(ctx, zmq.REP, ZAP_DOMAIN=b"global")
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.REQ, RECONNECT_IVL=NO_RECONNECT_MS)
        monitor = Monitor(client)
        client.connect(endpoint(port))
        client.send(b"Hello")  # queued; never delivered
        return wait_auth_failure(monitor, server)


@scenario(
    "mismatch_push_push", 15618, "PUSH", "PUSH",
    "greetings and READY (Socket-Type PUSH) both ways, then both close: no ERROR",
)  # fmt: skip
def run_mismatch_push_push(port: int, out_dir: Path) -> str:
    """Incompatible socket types: libzmq rejects the peer's READY metadata."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PUSH)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.PUSH, RECONNECT_IVL=NO_RECONNECT_MS)
        monitor = Monitor(client)
        client.connect(endpoint(port))
        return describe_failed_handshake(monitor)


@scenario(
    "mechanism_mismatch", 15619, "REP, PLAIN server", "REQ, NULL",
    "greetings announce PLAIN and NULL, then both close: no ERROR",
)  # fmt: skip
def run_mechanism_mismatch(port: int, out_dir: Path) -> str:
    """A NULL client meets a PLAIN server: the greetings disagree on the mechanism."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.REP, PLAIN_SERVER=1)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.REQ, RECONNECT_IVL=NO_RECONNECT_MS)
        monitor = Monitor(client)
        client.connect(endpoint(port))
        return describe_failed_handshake(monitor)


@scenario(
    "heartbeat_ttl", 15620, "ROUTER", "DEALER, heartbeat 100 ms, TTL 2 s, timeout 1 s",
    "`hi`, then ~350 ms idle: client PINGs carry TTL 20 (deciseconds), server PONGs",
)  # fmt: skip
def run_heartbeat_ttl(port: int, out_dir: Path) -> str:
    """Only the client heartbeats; its PINGs carry ZMQ_HEARTBEAT_TTL in deciseconds."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        client = make_socket(
            ctx, zmq.DEALER, ROUTING_ID=b"hb", HEARTBEAT_IVL=100, HEARTBEAT_TTL=2000, HEARTBEAT_TIMEOUT=1000
        )
        client.connect(endpoint(port))
        client.send(b"hi")
        recv_expect(server, [b"hb", b"hi"], "ROUTER")
        time.sleep(0.35)
    return ""


@scenario(
    "heartbeat_ttl_expiry", 15621, "ROUTER", "hand-made ZMTP 3.1 DEALER",
    "client sends PING TTL 3 (300 ms) context `ctx1`; libzmq PONGs `ctx1`, then closes "
    "after 300 ms of silence",
)  # fmt: skip
def run_heartbeat_ttl_expiry(port: int, out_dir: Path) -> str:
    """libzmq enforces the TTL a peer announced in PING by closing the connection."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        peer = RawPeer.connect(port)
        try:
            peer.send(zmtp3_greeting(minor=1))
            greeting = peer.recv_exact(64)
            if greeting[10:12] != b"\x03\x01":
                raise ScenarioError(f"unexpected libzmq greeting {greeting.hex()}")
            peer.send(zmtp3_ready({b"Socket-Type": b"DEALER"}))
            peer.recv_command3(b"READY")
            peer.send(zmtp3_command(b"PING", struct.pack(">H", 3) + b"ctx1"))
            pong = peer.recv_command3(b"PONG")
            if pong != b"ctx1":
                raise ScenarioError(f"PONG context {pong!r}, expected b'ctx1'")
            waited = peer.wait_closed(timeout=3)
        finally:
            peer.close()
    return f"libzmq closed {waited * 1000:.0f} ms after PONG"


@scenario(
    "sub_zmtp30", 15622, "hand-made ZMTP 3.0 PUB", "SUB (libzmq)",
    "peer greets 3.0, so libzmq subscribes with a `\\x01weather` message, not a command; "
    "receives `weather sunny`; cancels with `\\x00weather`",
)  # fmt: skip
def run_sub_zmtp30(port: int, out_dir: Path) -> str:
    """libzmq's SUB falls back to 3.0 subscription messages when the peer says 3.0."""
    seen: list[bytes] = []

    def pub(peer: RawPeer) -> None:
        peer.send(zmtp3_greeting(minor=0))
        greeting = peer.recv_exact(64)
        if greeting[10] != 3:
            raise ScenarioError(f"unexpected libzmq greeting {greeting.hex()}")
        peer.send(zmtp3_ready({b"Socket-Type": b"PUB"}))
        peer.recv_command3(b"READY")
        seen.append(peer.recv_frame3()[1])  # the subscription
        peer.send(zmtp3_frame(b"weather sunny"))
        seen.append(peer.recv_frame3()[1])  # the cancel, after the SUB got the message

    with zmq_context() as ctx:
        raw = RawServer(port, pub)
        raw.start()
        client = make_socket(ctx, zmq.SUB)
        client.setsockopt(zmq.SUBSCRIBE, b"weather")
        client.connect(endpoint(port))
        recv_expect(client, [b"weather sunny"], "SUB")
        client.setsockopt(zmq.UNSUBSCRIBE, b"weather")
        raw.finish()
    if seen != [b"\x01weather", b"\x00weather"]:
        raise ScenarioError(f"subscription frames {seen!r}")
    return ""


@scenario(
    "downgrade_zmtp20", 15623, "PULL (libzmq)", "hand-made ZMTP 2.0 PUSH",
    "peer greets 2.0 (revision 01, type PUSH); libzmq answers major 03 then its socket type "
    "and speaks 2.0 framing; client sends `hello` and [`one`, `two`]",
)  # fmt: skip
def run_downgrade_zmtp20(port: int, out_dir: Path) -> str:
    """libzmq downgrades to ZMTP 2.0 for a peer whose revision byte is 1."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PULL)
        server.bind(endpoint(port))
        peer = RawPeer.connect(port)
        try:
            # signature, revision 1, socket type PUSH (8), empty identity (final-short 0)
            peer.send(b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x01\x08" + b"\x00\x00")
            greeting = peer.recv_exact(12)
            identity = peer.recv_frame3()
            peer.send(b"\x00\x05hello" + b"\x01\x03one" + b"\x00\x03two")
            recv_expect(server, [b"hello"], "PULL")
            recv_expect(server, [b"one", b"two"], "PULL")
        finally:
            peer.close()
    return f"libzmq greeting {greeting.hex()} identity frame {identity!r}"


@scenario(
    "downgrade_zmtp10", 15624, "PULL (libzmq)", "hand-made ZMTP 1.0 PUSH",
    "peer sends an anonymous identity (01 00) and no signature; libzmq's 10-byte signature "
    "doubles as its 1.0 identity header; client sends `hello` and [`one`, `two`]",
)  # fmt: skip
def run_downgrade_zmtp10(port: int, out_dir: Path) -> str:
    """libzmq detects an unversioned (ZMTP 1.0) peer from its first byte."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PULL)
        server.bind(endpoint(port))
        peer = RawPeer.connect(port)
        try:
            # 1.0 frames: length (counts the flags octet), flags (MORE=1), body
            peer.send(b"\x01\x00")
            signature = peer.recv_exact(10)
            peer.send(b"\x06\x00hello" + b"\x04\x01one" + b"\x04\x00two")
            recv_expect(server, [b"hello"], "PULL")
            recv_expect(server, [b"one", b"two"], "PULL")
        finally:
            peer.close()
    return f"libzmq sent {signature.hex()}"


# ------------------------------------------------------------ topologies (zmtplab analyze)
# Several sockets, several connections: what `zmtplab analyze` reads across connections.


def connect_all(ctx: zmq.Context, kind: int, port: int, n: int, **options: int | bytes) -> list[zmq.Socket]:
    """``n`` sockets of ``kind`` connected to ``port``, each given time to finish its handshake in turn."""
    socks = []
    for _ in range(n):
        sock = make_socket(ctx, kind, **options)
        sock.connect(endpoint(port))
        socks.append(sock)
        time.sleep(0.05)  # connections come up in this order (libzmq's round robin follows it)
    return socks


def drain(sock: zmq.Socket) -> list[list[bytes]]:
    """Every message already queued on ``sock`` (waiting up to 0.3 s for the first of each)."""
    got = []
    while sock.poll(300):
        got.append(sock.recv_multipart())
    return got


@scenario("push_3pull", 15640, "PUSH", "3 x PULL", "PUSH sends `task 0`..`task 29`: round robin, 10 each")
def run_push_3pull(port: int, out_dir: Path) -> str:
    """A ventilator and three workers, all connected before the first task: an even round robin."""
    with zmq_context() as ctx:
        push = make_socket(ctx, zmq.PUSH)
        push.bind(endpoint(port))
        workers = connect_all(ctx, zmq.PULL, port, 3)
        time.sleep(0.2)
        for i in range(30):
            push.send(b"task %d" % i)
        counts = [len(drain(w)) for w in workers]
        if counts != [10, 10, 10]:
            raise ScenarioError(f"expected 10 tasks each, got {counts}")
    return "10/10/10"


@scenario(
    "push_late_pull", 15641, "PUSH", "3 x PULL, the third late",
    "PUSH sends 20 tasks to two workers, then a third connects and 12 more go round robin: 14/14/4",
)  # fmt: skip
def run_push_late_pull(port: int, out_dir: Path) -> str:
    """Round-robin skew from a late connection: the first two workers had all the early tasks."""
    with zmq_context() as ctx:
        push = make_socket(ctx, zmq.PUSH)
        push.bind(endpoint(port))
        workers = connect_all(ctx, zmq.PULL, port, 2)
        time.sleep(0.2)
        for i in range(20):
            push.send(b"task %d" % i)
        workers += connect_all(ctx, zmq.PULL, port, 1)
        time.sleep(0.2)
        for i in range(20, 32):
            push.send(b"task %d" % i)
        counts = [len(drain(w)) for w in workers]
        if sum(counts) != 32 or counts[2] != 4:
            raise ScenarioError(f"expected 32 tasks, 4 to the late worker; got {counts}")
    return "/".join(map(str, counts))


@scenario(
    "pub_late_sub", 15642, "PUB", "2 x SUB `weather.`, the second late",
    "PUB sends 10 `weather.*` to the first SUB; the second subscribes, then 5 more reach both (slow joiner)",
)  # fmt: skip
def run_pub_late_sub(port: int, out_dir: Path) -> str:
    """The slow joiner: a SUB that subscribes after the publisher started misses what went before."""
    with zmq_context() as ctx:
        pub = make_socket(ctx, zmq.PUB)
        pub.bind(endpoint(port))
        early = connect_all(ctx, zmq.SUB, port, 1, SUBSCRIBE=b"weather.")[0]
        time.sleep(0.2)
        for i in range(10):
            pub.send_multipart([b"weather.%d" % i, b"%d C" % (10 + i)])
        pub.send_multipart([b"sport.0", b"not for them"])
        late = connect_all(ctx, zmq.SUB, port, 1, SUBSCRIBE=b"weather.")[0]
        time.sleep(0.2)
        for i in range(10, 15):
            pub.send_multipart([b"weather.%d" % i, b"%d C" % (10 + i)])
        got = (len(drain(early)), len(drain(late)))
        if got != (15, 5):
            raise ScenarioError(f"expected 15 and 5 messages, got {got}")
    return "15/5"


@scenario(
    "broker", 15643, "ROUTER :15643 / DEALER :15644 (a proxy)", "3 x REQ -> frontend, 2 x REP -> backend",
    "each REQ asks `request c-i`; the broker adds the client's identity towards the REP and strips it back",
    ports=2,
)  # fmt: skip
def run_broker(port: int, out_dir: Path) -> str:
    """The zguide's extended request-reply: REQ clients, a ROUTER/DEALER proxy, REP workers."""
    with zmq_context() as ctx:
        frontend = make_socket(ctx, zmq.ROUTER)
        frontend.bind(endpoint(port))
        backend = make_socket(ctx, zmq.DEALER)
        backend.bind(endpoint(port + 1))
        control = ctx.socket(zmq.PAIR)
        control.bind("inproc://broker-control")
        proxy = threading.Thread(target=_proxy, args=(ctx, frontend, backend), daemon=True)
        proxy.start()
        workers = connect_all(ctx, zmq.REP, port + 1, 2)
        clients = [connect_all(ctx, zmq.REQ, port, 1, ROUTING_ID=b"c-%d" % i)[0] for i in range(3)]
        time.sleep(0.2)
        for round_ in range(2):
            for i, client in enumerate(clients):
                client.send(b"request c-%d.%d" % (i, round_))
                worker = next((w for w in workers if w.poll(1000)), None)
                if worker is None:
                    raise ScenarioError(f"no worker got request c-{i}.{round_}")
                request = worker.recv()
                worker.send(request.replace(b"request", b"reply"))
                recv_expect(client, [b"reply c-%d.%d" % (i, round_)], f"REQ {i}")
        control.send(b"TERMINATE")
        proxy.join(timeout=2)
        control.close()
    return "6 round trips"


@scenario(
    "ping_ttl_long", 15645, "ROUTER", "DEALER, heartbeat 100 ms, TTL 70 s",
    "`hi`, then PINGs whose TTL is 700 deciseconds (over the 65 s that libzmq 4.3 mishandles, issue #4226)",
)  # fmt: skip
def run_ping_ttl_long(port: int, out_dir: Path) -> str:
    """libzmq itself announces a long heartbeat TTL in its PINGs."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.DEALER, ROUTING_ID=b"hb", HEARTBEAT_IVL=100, HEARTBEAT_TTL=70_000)
        client.connect(endpoint(port))
        client.send(b"hi")
        recv_expect(server, [b"hb", b"hi"], "ROUTER")
        time.sleep(0.35)
    return ""


@scenario(
    "curve_wrong_key", 15646, "ROUTER, CURVE server (curve.keys.json's server keys)",
    "DEALER, CURVE client told the wrong server key (the client's own public key)",
    "the client's HELLO is sealed for the wrong key: the server cannot open it and drops the connection",
)  # fmt: skip
def run_curve_wrong_key(port: int, out_dir: Path) -> str:
    """The most common CURVE failure: the client has another server public key; it looks like a dead server."""
    keys = json.loads((Path(__file__).resolve().parent / "curve.keys.json").read_text())
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER, CURVE_SERVER=1, CURVE_SECRETKEY=keys["server"]["secret"].encode())
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.DEALER, CURVE_SERVERKEY=keys["client"]["public"].encode(),
                             CURVE_PUBLICKEY=keys["client"]["public"].encode(),
                             CURVE_SECRETKEY=keys["client"]["secret"].encode(), RECONNECT_IVL=NO_RECONNECT_MS)
        monitor = Monitor(client)
        client.connect(endpoint(port))
        client.send(b"hello?")
        if server.poll(500):
            raise ScenarioError("the server accepted a client with the wrong server key")
        return describe_failed_handshake(monitor)


@scenario(
    "identity_collision", 15647, "ROUTER", "2 x DEALER, both with identity `dup`",
    "the second DEALER announces the identity the first holds; libzmq's ROUTER refuses it; `to dup` goes to the first",
)  # fmt: skip
def run_identity_collision(port: int, out_dir: Path) -> str:
    """Two peers of one ROUTER with the same Identity: without ROUTER_HANDOVER the second is refused."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        first, second = connect_all(ctx, zmq.DEALER, port, 2, ROUTING_ID=b"dup")
        time.sleep(0.2)
        first.send(b"from first")
        recv_expect(server, [b"dup", b"from first"], "ROUTER")
        server.send_multipart([b"dup", b"to dup"])
        recv_expect(first, [b"to dup"], "first DEALER")
        if second.poll(200):
            raise ScenarioError("the second DEALER got a message for `dup`")
    return ""


@scenario(
    "push_slow_pull", 15648, "PUSH, SNDHWM 4", "PULL, RCVHWM 4, RCVBUF 4 KiB, reads late",
    "PUSH sends 2 KiB tasks to a PULL that does not read: its TCP window closes and PUSH blocks; then it reads",
)  # fmt: skip
def run_push_slow_pull(port: int, out_dir: Path) -> str:
    """Back-pressure: a slow reader's TCP receive window goes to zero while the sender still has tasks."""
    with zmq_context() as ctx:
        push = make_socket(ctx, zmq.PUSH, SNDHWM=4, SNDBUF=4096, SNDTIMEO=200)
        push.bind(endpoint(port))
        pull = make_socket(ctx, zmq.PULL, RCVHWM=4, RCVBUF=4096)
        pull.connect(endpoint(port))
        time.sleep(0.2)
        sent = 0
        with suppress(zmq.Again):
            for i in range(200):
                push.send(b"%04d" % i + b"." * 2044)
                sent += 1
        if sent == 200:
            raise ScenarioError("PUSH never blocked: no back-pressure")
        time.sleep(0.3)
        got = len(drain(pull))
        if got != sent:
            raise ScenarioError(f"PUSH sent {sent} before blocking, PULL read {got}")
    return f"PUSH blocked after {sent} tasks"


# ZWS (45/ZWS, ZeroMQ over WebSocket): the PyPI wheel's libzmq has no ws:// transport, Debian's libzmq5 has it.
# Its side runs in Debian's python3 with python3-zmq (scripts/install-system-deps.sh); ours is zmtplab's peer.
DEBIAN_PYTHON = "/usr/bin/python3"
LIBZMQ_WS = """
import sys, zmq
kind, action, endpoint, count = sys.argv[1:5]
ctx = zmq.Context()
sock = ctx.socket(getattr(zmq, kind))
sock.linger = 1000
sock.rcvtimeo = sock.sndtimeo = 3000
if action == "bind":
    sock.bind(endpoint)
else:
    sock.connect(endpoint)
print("ready", flush=True)
for _ in range(int(count)):
    line = sys.stdin.readline().split()
    if line[0] == "send":
        sock.send_multipart([bytes.fromhex(f) for f in line[1].split(",")])
    else:
        print(",".join(f.hex() for f in sock.recv_multipart()), flush=True)
sys.stdin.readline()
sock.close()
ctx.term()
"""


class LibzmqWs:
    """One libzmq socket over ws:// in Debian's python3: `send()` and `recv()` one message at a time."""

    def __init__(self, kind: str, action: str, endpoint: str, steps: int) -> None:
        if not Path(DEBIAN_PYTHON).exists():
            raise ScenarioError(f"{DEBIAN_PYTHON} with python3-zmq (Debian's libzmq, with ws://) is needed")
        self.proc = subprocess.Popen([DEBIAN_PYTHON, "-c", LIBZMQ_WS, kind, action, endpoint, str(steps)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        if self._line() != "ready":
            raise ScenarioError(f"libzmq {kind} did not start")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def send(self, frames: list[bytes]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("send " + ",".join(f.hex() for f in frames) + "\n")

    def recv(self) -> list[bytes]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("recv\n")
        line = self._line()
        if not line:
            raise ScenarioError(f"libzmq received nothing (exit {self.proc.poll()})")
        return [bytes.fromhex(f) for f in line.split(",")]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("close\n")
        self.proc.stdin.close()
        self.proc.wait(10)


def ws_endpoint(port: int) -> str:
    return f"ws://{HOST}:{port}/zmq"


@scenario(
    "zws_dealer_router", 15650, "ROUTER (libzmq 4.3.4, Debian)", "DEALER, identity `client-1` (zmtplab peer)",
    "ws://: ZWS2.0/NULL; DEALER sends [``, `request`] (masked); ROUTER replies [``, `reply`]",
)  # fmt: skip
def run_zws_dealer_router(port: int, out_dir: Path) -> str:
    """45/ZWS with a mechanism: our DEALER offers libzmq's ZWS2.0/NULL,ZWS2.0 and libzmq's ROUTER picks NULL."""
    import asyncio

    from zmtplab.peers.tcp import TcpPeer

    router = LibzmqWs("ROUTER", "bind", ws_endpoint(port), 2)

    async def dealer() -> None:
        async with TcpPeer("DEALER", identity=b"client-1") as peer:
            peer.connect(ws_endpoint(port))
            await peer.send([b"", b"request"])
            got = await asyncio.to_thread(router.recv)
            if got != [b"client-1", b"", b"request"]:
                raise ScenarioError(f"ROUTER received {got}")
            router.send([b"client-1", b"", b"reply"])
            if await peer.recv(timeout=3) != [b"", b"reply"]:
                raise ScenarioError("DEALER got another reply")

    asyncio.run(dealer())
    router.close()
    return ""


@scenario(
    "zws_routing_ids", 15651, "PULL accepting only ZWS2.0, as a browser offers (zmtplab peer)",
    "PUSH (libzmq 4.3.4, Debian)",
    "ws://: libzmq offers ZWS2.0/NULL,ZWS2.0, gets ZWS2.0: routing ids first, then `hello` and [`one`, `two`] (masked)",
)  # fmt: skip
def run_zws_routing_ids(port: int, out_dir: Path) -> str:
    """45/ZWS without a mechanism: each side's first message is its routing id (ZMTP/2-like)."""
    import asyncio

    from zmtplab.peers.tcp import TcpPeer

    async def pull() -> None:
        async with TcpPeer("PULL", zws_protocols=["ZWS2.0"]) as peer:
            await peer.bind(ws_endpoint(port))
            push = await asyncio.to_thread(LibzmqWs, "PUSH", "connect", ws_endpoint(port), 2)
            push.send([b"hello"])
            push.send([b"one", b"two"])
            for expected in ([b"hello"], [b"one", b"two"]):
                if await peer.recv(timeout=3) != expected:
                    raise ScenarioError("PULL got another message")
            await asyncio.to_thread(push.close)

    asyncio.run(pull())
    return ""


def _proxy(ctx: zmq.Context, frontend: zmq.Socket, backend: zmq.Socket) -> None:
    control = ctx.socket(zmq.PAIR)
    control.connect("inproc://broker-control")
    with suppress(zmq.ZMQError):
        zmq.proxy_steerable(frontend, backend, None, control)
    control.close()


# ------------------------------------------------------------------------ driver


def record(sc: Scenario, out_dir: Path) -> tuple[int | None, str]:
    """Capture one scenario into ``out_dir/<name>.pcapng``; return (packets, note).

    The capture is written under a temporary name and only renamed when the
    scenario succeeded, so a failed run never leaves a half-right capture behind.
    """
    final = out_dir / f"{sc.name}.pcapng"
    # A hidden temporary name keeps a half-written capture from looking like a result.
    part = out_dir / f".{sc.name}.pcapng.part"
    part.unlink(missing_ok=True)
    try:
        with Dumpcap(sc.port, part, ports=sc.ports) as cap:
            try:
                note = sc.run(sc.port, out_dir)
            finally:
                time.sleep(SETTLE)  # FIN/ACK of the teardown
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    os.chmod(part, 0o644)  # dumpcap creates 0600 files
    part.replace(final)
    return cap.packets, note


def count_packets(path: Path) -> int | None:
    """Return the number of packets in a capture file (via tshark), or None."""
    tshark = shutil.which("tshark")
    if tshark is None or not path.exists():
        return None
    result = subprocess.run(
        [tshark, "-r", str(path), "-T", "fields", "-e", "frame.number"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    return len(result.stdout.split()) if result.returncode == 0 else None


def markdown_table(scenarios: list[Scenario], out_dir: Path) -> str:
    """Return the README table (file, peers, summary, packets, port) for ``scenarios``."""
    rows = [
        "| file | server (bind) | client (connect) | what happens | packets | port |",
        "|---|---|---|---|---|---|",
    ]
    for sc in scenarios:
        count = count_packets(out_dir / f"{sc.name}.pcapng")
        packets = "missing" if count is None else str(count)
        rows.append(f"| {sc.name}.pcapng | {sc.server} | {sc.client} | {sc.summary} | {packets} | {sc.port} |")
    return "\n".join(rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent,
        help="directory for the .pcapng files (default: the captures/ directory)",
    )  # fmt: skip
    parser.add_argument("--only", nargs="+", metavar="NAME", help="record only these scenarios")
    parser.add_argument("--list", action="store_true", help="list scenarios and exit")
    parser.add_argument(
        "--table", action="store_true",
        help="print the README's markdown table for the captures already in --out and exit",
    )  # fmt: skip
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Record the selected scenarios, printing one line each; return the exit status."""
    args = parse_args(argv)
    if args.list:
        for sc in SCENARIOS.values():
            print(f"{sc.name:22} {sc.port}  {sc.server} <- {sc.client}: {sc.summary}")
        return 0
    names = args.only or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    if args.table:
        print(markdown_table([SCENARIOS[n] for n in names], args.out))
        return 0
    try:
        Dumpcap.executable()
    except CaptureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in names:
        sc = SCENARIOS[name]
        try:
            packets, note = record(sc, args.out)
        except CaptureError as exc:
            # Without a working dumpcap no other scenario can succeed either.
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:
            failed += 1
            print(f"FAIL {sc.name:22} port {sc.port}: {type(exc).__name__}: {exc}", flush=True)
            continue
        count = "?" if packets is None else str(packets)
        path = args.out / f"{sc.name}.pcapng"
        extra = f"  ({note})" if note else ""
        print(f"ok   {sc.name:22} port {sc.port} {count:>4} packets  {path}{extra}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
