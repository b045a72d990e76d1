#!/usr/bin/env python3
"""What every recording shares: dumpcap on the loopback, pyzmq helpers, a hand-made ZMTP peer, the scenario table.

`record.py` (the sample captures, and the command line) and `incidents.py` (recorded incidents with their facts)
register their scenarios here with `@scenario`; `record(sc, out_dir)` captures one of them. Nothing here runs a
scenario by itself.
"""

from __future__ import annotations

import os
import re
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

from zmtplab.capture.errors import CaptureFormatError
from zmtplab.capture.pcapfile import read_tcp_packets
from zmtplab.capture.tcpstream import StreamClosed, StreamControl, StreamOpened, TcpReassembler

HOST = "127.0.0.1"
#: Every blocking zmq call gives up after this long, so a broken scenario cannot hang.
TIMEOUT_MS = 3000
#: How long to wait for dumpcap to report its output file (= capturing) before giving up.
DUMPCAP_START_TIMEOUT = 10.0
#: Time after a scenario for the last ACK of each teardown to reach the capture.
SETTLE = 0.3
#: How long to wait after a scenario for dumpcap to have written the end of every connection (both FINs, or a
#: RST): it reads the kernel's buffer in its own time, on a busy machine later than any fixed pause, and what it
#: has not read when it is stopped is lost.
TEARDOWN_TIMEOUT = 30.0
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

    #: The dumpcap of the scenario being recorded (``record()`` sets it), for a scenario that acts on the capture
    #: itself: ``capture_loss`` freezes it to make the kernel drop packets.
    active: Dumpcap | None = None

    def __init__(self, port: int, out: Path, interface: str = "lo", ports: int = 1,
                 extra: tuple[str, ...] = ()) -> None:
        """Remember what to capture (``ports`` consecutive ports from ``port``); nothing starts before ``__enter__``.

        ``extra`` are more dumpcap options (``("-B", "1")``: a 1 MiB kernel buffer)."""
        self.port = port
        self.ports = ports
        self.out = out
        self.interface = interface
        self.extra = extra
        self.stderr_lines: list[str] = []
        self.packets: int | None = None
        self.dropped: int | None = None  # what the kernel dropped, as dumpcap reports it when it stops
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
            elif line.startswith("Packets received/dropped"):
                # "Packets received/dropped on interface 'Loopback: lo': 1234/56 (pcap:56/dumpcap:0/...)"
                found = re.search(r"(\d+)/(\d+) \(", line)
                if found:
                    self.dropped = int(found.group(2))

    def __enter__(self) -> Dumpcap:
        """Start dumpcap and block until it captures; raise CaptureError otherwise."""
        cmd = [
            self.executable(),
            "-i", self.interface,
            "-f", f"tcp portrange {self.port}-{self.port + self.ports - 1}" if self.ports > 1
            else f"tcp port {self.port}",
            "-w", str(self.out),
            *self.extra,
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

    def wait_for_ends(self, timeout: float = TEARDOWN_TIMEOUT) -> bool:
        """Wait until the file dumpcap writes holds the end of every connection in it; False when ``timeout``
        passed first (a connection left open, or its end dropped) or dumpcap exited."""
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while not connections_ended(self.out):
            if time.monotonic() > deadline or self._proc.poll() is not None:
                return False
            time.sleep(0.1)
        return True

    def pause(self) -> None:
        """Stop dumpcap (SIGSTOP) until ``resume``: the kernel buffers what it captures meanwhile, and drops what
        its buffer cannot hold."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused dumpcap go on (SIGCONT)."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGCONT)

    def freeze(self, seconds: float) -> None:
        """Pause dumpcap for ``seconds``."""
        self.pause()
        try:
            time.sleep(seconds)
        finally:
            self.resume()

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


def connections_ended(path: Path) -> bool:
    """Whether the capture at ``path``, as far as it is written, holds a connection and the end of each one: a
    FIN from each side or a RST (bytes the kernel dropped before them do not matter here)."""
    reassembler = TcpReassembler()
    opened: set[str] = set()
    ended: set[str] = set()
    fins: set[tuple[str, str]] = set()
    try:
        for pkt in read_tcp_packets(path):
            for event in reassembler.feed(pkt):
                if isinstance(event, StreamOpened):
                    opened.add(event.conn)
                elif isinstance(event, StreamClosed) or (isinstance(event, StreamControl) and event.what == "rst"):
                    ended.add(event.conn)
                elif isinstance(event, StreamControl) and event.what == "fin":
                    fins.add((event.conn, event.dir))
    except (OSError, CaptureFormatError):
        pass  # (being written: no header yet, or a block cut short; what came before it counts)
    ended.update(conn for conn, _ in fins if (conn, "c2s") in fins and (conn, "s2c") in fins)
    return bool(opened) and opened <= ended


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
    progress line (for example the monitor event libzmq reported). Files it writes to
    ``out_dir`` as ``.<name>.<suffix>.part`` (an incident's facts) become ``<name>.<suffix>``
    once the capture is done, as the capture itself does.
    """

    name: str
    port: int
    server: str
    client: str
    summary: str
    run: Callable[[int, Path], str]
    ports: int = 1  # a topology uses the ports port .. port + ports - 1 (a broker binds two)
    folder: str = ""  # where under captures/ it is kept: "" (the samples) or "incidents"
    dumpcap: tuple[str, ...] = ()  # more dumpcap options


SCENARIOS: dict[str, Scenario] = {}


def scenario(
    name: str, port: int, server: str, client: str, summary: str, ports: int = 1, folder: str = "",
    dumpcap: tuple[str, ...] = (),
) -> Callable[[Callable[[int, Path], str]], Callable[[int, Path], str]]:
    """Register the decorated function as the scenario ``name`` on ``port`` (and the ``ports - 1`` after it)."""

    def register(func: Callable[[int, Path], str]) -> Callable[[int, Path], str]:
        taken = {q for sc in SCENARIOS.values() if sc.name != name for q in range(sc.port, sc.port + sc.ports)}
        known = SCENARIOS.get(name)  # (the same function again: the module was loaded twice, as tests may do)
        clash = known is not None and known.run.__qualname__ != func.__qualname__
        if clash or taken & set(range(port, port + ports)):
            raise ValueError(f"duplicate scenario name or port: {name} {port}")
        SCENARIOS[name] = Scenario(name, port, server, client, summary, func, ports, folder, dumpcap)
        return func

    return register


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


# ------------------------------------------------------------------------ driver


def record(sc: Scenario, out_dir: Path) -> tuple[int | None, str]:
    """Capture one scenario into ``out_dir/<name>.pcapng``; return (packets, note).

    The capture is written under a temporary name and only renamed when the
    scenario succeeded, so a failed run never leaves a half-right capture behind.
    """
    # Hidden temporary names keep a half-written capture (or facts file) from looking like a result.
    parts = f".{sc.name}.*.part"
    for stale in out_dir.glob(parts):
        stale.unlink()
    part = out_dir / f".{sc.name}.pcapng.part"
    try:
        with Dumpcap(sc.port, part, ports=sc.ports, extra=sc.dumpcap) as cap:
            Dumpcap.active = cap
            try:
                note = sc.run(sc.port, out_dir)
            finally:
                Dumpcap.active = None
            time.sleep(SETTLE)
            if not cap.wait_for_ends():
                print(f"{sc.name}: after {TEARDOWN_TIMEOUT:.0f} s the capture still lacks the end of a connection "
                      "(left open, or dropped by the kernel)", file=sys.stderr)
    except BaseException:
        for written in out_dir.glob(parts):
            written.unlink()
        raise
    os.chmod(part, 0o644)  # dumpcap creates 0600 files
    for written in out_dir.glob(parts):
        written.replace(out_dir / written.name[1:].removesuffix(".part"))
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


