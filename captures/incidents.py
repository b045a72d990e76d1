"""Recorded incidents: what people report about ZeroMQ, played by real libzmq (pyzmq), each with its facts.

Each incident is a scenario of ``recording.py`` kept under ``captures/incidents/``: ``NAME.pcapng`` and
``NAME.facts.json``, recorded with ``python captures/record.py NAME``. The facts file is written from the
applications' side, never from our analysis: what each application sent and received (with its wall-clock
time, the clock dumpcap stamps packets with), which monitor events its socket reported, the options it set,
and the facts an engineer would state from those, each a dict with ``fact`` naming its kind:

- ``connection``: a connection the applications made (endpoints, socket types, identities, mechanism, how many);
- ``messages``: how many messages each side of a connection sent (CURVE: each frame is one MESSAGE box);
- ``subscriptions``: the subscriptions and cancels a subscriber sent, in order;
- ``requests`` / ``served``: how many requests a client sent through a broker and how many replies came back
  to it (REQ takes a reply only from where it asked), how many requests each worker served;
- ``flows``: how many messages were forwarded from one connection to another;
- ``closed``: which side closed a connection first (the application that closed its socket or stopped
  answering), FIN or RST;
- ``node``: endpoints that are one socket of one application (a dual-stack listener);
- ``refused``: connects the application saw refused (its monitor's CONNECT_RETRIED), to which endpoint;
- ``finding``: what went wrong, in the terms of the rule that should say it, with the numbers the
  applications know (a HEARTBEAT_TIMEOUT they set, a pause they made);
- ``curve-check``: what the server's secret key says of the client's HELLO;
- ``healthy``: nothing went wrong.

``tests/analysis/test_incidents.py`` checks ``zmtplab analyze --json`` against every fact.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

from recording import (
    HOST,
    NO_RECONNECT_MS,
    TIMEOUT_MS,
    Dumpcap,
    ScenarioError,
    deny_all,
    event_name,
    make_socket,
    plain_users,
    scenario,
    send_routed,
    zap_handler,
    zmtp3_greeting,
    zmtp3_ready,
)

FACTS_VERSION = 1
#: The client ports the incidents connect from (``tcp://SRC;DST``): an application knows its own endpoint, so
#: the facts can name the connection it made. Each incident takes its own block of 200 ports.
SOURCE_PORTS = 16000


def ep(port: int, host: str = HOST) -> str:
    """``ip:port`` as the analysis writes endpoints (IPv6 in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def tcp(port: int, host: str = HOST, source: int | None = None) -> str:
    """A tcp endpoint, connecting from ``source`` (a port on the same host) when given."""
    dest = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if source is None:
        return f"tcp://{dest}"
    src = f"[{host}]:{source}" if ":" in host else f"{host}:{source}"
    return f"tcp://{src};{dest}"


def text(frame: bytes, limit: int = 64) -> str:
    """A frame as the facts file keeps it: text when it is printable ASCII, else ``0x`` and hex; a frame longer than
    ``limit`` octets by its start and its size."""
    if len(frame) > limit:
        return f"{text(frame[:16])}... ({len(frame)} octets)"
    if frame.isascii() and all(32 <= b < 127 for b in frame):
        return frame.decode()
    return "0x" + frame.hex()


class App:
    """One application's socket: every send and receive with its wall-clock time, its options, and the monitor
    events it reported (read by a thread of its own from the socket's monitor pipe)."""

    def __init__(self, log: Log, ctx: zmq.Context, name: str, kind: str, **options: int | bytes) -> None:
        self.log = log
        self.name = name
        self.kind = kind
        self.options = {k: (text(v) if isinstance(v, bytes) else v) for k, v in options.items()}
        self.sock = make_socket(ctx, getattr(zmq, kind), **options)
        self.binds: list[str] = []
        self.connects: list[str] = []
        self.local: str | None = None
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.actions: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self._pipe = self.sock.get_monitor_socket()
        self._watching = threading.Thread(target=self._watch, name=f"monitor-{name}", daemon=True)
        self._watching.start()
        self.closed_at: float | None = None
        log.apps[name] = self

    def _watch(self) -> None:
        pipe = self._pipe
        while True:
            try:
                if not pipe.poll(100):
                    continue
                msg = recv_monitor_message(pipe)
            except zmq.ZMQError:
                return
            event = int(msg["event"])
            if event == zmq.EVENT_MONITOR_STOPPED:
                return
            self.events.append({"t": time.time(), "event": event_name(event), "value": int(msg["value"]),
                                "endpoint": msg["endpoint"].decode(errors="replace")})

    def bind(self, endpoint: str) -> App:
        self.sock.bind(endpoint)
        self.binds.append(endpoint)
        return self

    def connect(self, endpoint: str) -> App:
        self.sock.connect(endpoint)
        self.connects.append(endpoint)
        if ";" in endpoint:
            self.local = endpoint.removeprefix("tcp://").split(";")[0]
        return self

    def set(self, option: str, value: int | bytes) -> None:
        """Sets a socket option now (ZMQ_SUBSCRIBE, ...), kept as an action with its time."""
        self.sock.setsockopt(getattr(zmq, option), value)
        self.actions.append({"t": time.time(), "set": option, "value": text(value) if isinstance(value, bytes)
                             else value})

    def send(self, *frames: bytes, flags: int = 0) -> bool:
        """Sends one message; False (kept as an error) when libzmq refused it (EAGAIN, EHOSTUNREACH...)."""
        try:
            self.sock.send_multipart(list(frames), flags=flags)
        except zmq.ZMQError as exc:
            self.errors.append({"t": time.time(), "send": [text(f) for f in frames], "errno": zmq.strerror(exc.errno)
                                if exc.errno else str(exc), "name": _errno_name(exc.errno)})
            return False
        self.sent.append({"t": time.time(), "frames": [text(f) for f in frames]})
        return True

    def recv(self, timeout: float = TIMEOUT_MS / 1000) -> list[bytes] | None:
        """The next message, or None after ``timeout`` seconds."""
        if not self.sock.poll(int(timeout * 1000)):
            return None
        frames = self.sock.recv_multipart()
        self.received.append({"t": time.time(), "frames": [text(f) for f in frames]})
        return frames

    def expect(self, what: str, timeout: float = TIMEOUT_MS / 1000) -> list[bytes]:
        """The next message; ScenarioError when none comes."""
        frames = self.recv(timeout)
        if frames is None:
            raise ScenarioError(f"{self.name}: no {what} within {timeout} s")
        return frames

    def wait_event(self, *names: str, timeout: float = 3.0, after: int = 0) -> dict[str, Any]:
        """The first monitor event (from the ``after``-th on) named one of ``names``, waiting for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((e for e in self.events[after:] if e["event"] in names), None)
            if found is not None:
                return found
            time.sleep(0.005)
        raise ScenarioError(f"{self.name}: no {'/'.join(names)} within {timeout} s (saw "
                            f"{[e['event'] for e in self.events]})")

    def count(self, name: str) -> int:
        """How many monitor events of this name the socket reported."""
        return sum(1 for e in self.events if e["event"] == name)

    def close(self) -> None:
        """Closes the socket (linger 0), after the monitor reported what it had."""
        if self.closed_at is not None:
            return
        time.sleep(0.02)  # (the monitor's last events, e.g. DISCONNECTED, are on their way)
        with contextlib.suppress(zmq.ZMQError):
            self.sock.disable_monitor()
        self._watching.join(timeout=2)
        self._pipe.close(linger=0)
        self.sock.close(linger=0)
        self.closed_at = time.time()

    def record(self) -> dict[str, Any]:
        """This application as the facts file keeps it."""
        out: dict[str, Any] = {"socket": self.kind, "options": self.options}
        if self.binds:
            out["bind"] = self.binds
        if self.connects:
            out["connect"] = self.connects
        if self.local:
            out["local"] = self.local
        for key in ("actions", "sent", "received", "errors", "events"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.closed_at is not None:
            out["closed"] = self.closed_at
        return out


def _errno_name(errno: int | None) -> str:
    for name in ("EAGAIN", "EHOSTUNREACH", "EFSM", "ETERM"):
        if errno == getattr(zmq, name, None):
            return name
    return str(errno)


class Log:
    """One incident's applications and the facts stated from what they did; written as ``NAME.facts.json``."""

    def __init__(self, name: str, summary: str) -> None:
        self.name = name
        self.summary = summary
        self.apps: dict[str, App] = {}
        self.extra: dict[str, Any] = {}  # what no socket saw: a child process, the capture itself
        self.facts: list[dict[str, Any]] = []
        self.started = time.time()

    def app(self, ctx: zmq.Context, name: str, kind: str, **options: int | bytes) -> App:
        return App(self, ctx, name, kind, **options)

    def fact(self, kind: str, **what: Any) -> None:
        """One fact, as an engineer would state it from the applications' records."""
        self.facts.append({"fact": kind, **what})

    def talked(self, client: str | None, server: str, types: tuple[str, str], c2s: int, s2c: int, *,
               identities: dict[str, str] | None = None, **count: Any) -> None:
        """Two facts at once: the applications connected `client` to `server` with these socket types (the handshake
        done), and sent `c2s` and `s2c` messages on it (`count`: more about the numbers, `at_most` or `why`)."""
        self.fact("connection", client=client, server=server, client_type=types[0], server_type=types[1],
                  handshake=True, **({"identities": identities} if identities else {}))
        self.fact("messages", client=client, server=server, c2s=c2s, s2c=s2c, **count)

    def close(self) -> None:
        for app in self.apps.values():
            app.close()

    def write(self, out_dir: Path) -> None:
        """Writes the facts file (as a part file: `recording.record` renames it with the capture)."""
        doc = {
            "incident": self.name,
            "summary": self.summary,
            "facts_version": FACTS_VERSION,
            "recorded_with": {"libzmq": zmq.zmq_version(), "pyzmq": zmq.pyzmq_version()},
            "started": self.started,
            "apps": {name: app.record() for name, app in self.apps.items()},
            **({"other": self.extra} if self.extra else {}),
            "facts": self.facts,
        }
        (out_dir / f".{self.name}.facts.json.part").write_text(json.dumps(doc, indent=1) + "\n")


Incident = Callable[[int, Log, zmq.Context], str]


def incident(name: str, port: int, server: str, client: str, summary: str, *, ports: int = 1,
             dumpcap: tuple[str, ...] = ()) -> Callable[[Incident], Incident]:
    """Registers ``run(port, log, ctx)`` as a scenario under captures/incidents/: it plays the incident with the
    log's applications and states the facts; the facts file is written when it returns."""

    def register(run: Incident) -> Incident:
        def scenario_run(port: int, out_dir: Path) -> str:
            log = Log(name, summary)
            ctx = zmq.Context()
            try:
                note = run(port, log, ctx)
            finally:
                log.close()
                ctx.destroy(linger=0)
            log.write(out_dir)
            return note

        scenario_run.__qualname__ = f"incident.{run.__qualname__}"
        scenario(name, port, server, client, summary, ports=ports, folder="incidents", dumpcap=dumpcap)(scenario_run)
        return run

    return register


def replies_by_client(clients: Iterable[App]) -> dict[str, tuple[int, int]]:
    """(requests sent, replies received) of each client, by its local endpoint."""
    return {c.local or c.name: (len(c.sent), len(c.received)) for c in clients}


def src(port: int, k: int) -> int:
    """The ``k``-th client port of the incident on ``port`` (each incident has 200 of its own)."""
    return SOURCE_PORTS + (port - 15700) * 200 + k


class Proxy(threading.Thread):
    """libzmq's own proxy (zmq_proxy_steerable) between two sockets, in a thread, until ``stop()``."""

    def __init__(self, ctx: zmq.Context, frontend: App, backend: App, name: str) -> None:
        super().__init__(name=f"proxy-{name}", daemon=True)
        self.ctx, self.frontend, self.backend = ctx, frontend, backend
        self.control_endpoint = f"inproc://control-{name}"
        self.control = ctx.socket(zmq.PAIR)
        self.control.bind(self.control_endpoint)

    def run(self) -> None:
        control = self.ctx.socket(zmq.PAIR)
        control.connect(self.control_endpoint)
        try:
            zmq.proxy_steerable(self.frontend.sock, self.backend.sock, None, control)
        except zmq.ZMQError:
            pass
        finally:
            control.close(linger=0)

    def stop(self) -> None:
        self.control.send(b"TERMINATE")
        self.join(timeout=3)
        self.control.close(linger=0)


def run_threads(*targets: Callable[[], None]) -> None:
    """Runs each target in a thread of its own, all at once; raises the first error any of them had."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(targets))

    def wrap(target: Callable[[], None]) -> Callable[[], None]:
        def go() -> None:
            start.wait()
            try:
                target()
            except BaseException as exc:
                errors.append(exc)
        return go

    threads = [threading.Thread(target=wrap(t), daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    if errors:
        raise errors[0]


# ------------------------------------------------------------------------------ flows


@incident(
    "broker_anonymous", 15700, "ROUTER :15700 / DEALER :15701 (zmq_proxy)", "3 x REQ (no identity), 2 x REP",
    "three REQs ask `ping` 4 times each, all at once, through the proxy; two REPs answer `pong`: each reply must "
    "go back to the client that asked (the ROUTER's generated routing id says which)", ports=2,
)  # fmt: skip
def broker_anonymous(port: int, log: Log, ctx: zmq.Context) -> str:
    front = log.app(ctx, "broker-frontend", "ROUTER").bind(tcp(port))
    back = log.app(ctx, "broker-backend", "DEALER").bind(tcp(port + 1))
    proxy = Proxy(ctx, front, back, "broker")
    proxy.start()
    workers = [log.app(ctx, f"worker-{i}", "REP").connect(tcp(port + 1, source=src(port, 10 + i))) for i in range(2)]
    clients = [log.app(ctx, f"client-{i}", "REQ").connect(tcp(port, source=src(port, i))) for i in range(3)]
    for app in (*workers, *clients):
        app.wait_event("HANDSHAKE_SUCCEEDED")
    done = threading.Event()

    def client(app: App) -> Callable[[], None]:
        def go() -> None:
            for _ in range(4):
                app.send(b"ping")
                if app.expect("reply") != [b"pong"]:
                    raise ScenarioError(f"{app.name}: unexpected reply")
        return go

    def worker(app: App) -> Callable[[], None]:
        def go() -> None:
            while not done.is_set():
                if app.recv(0.05) is not None:
                    app.send(b"pong")
        return go

    def clients_then_done() -> None:
        try:
            run_threads(*(client(c) for c in clients))
        finally:
            done.set()

    run_threads(clients_then_done, *(worker(w) for w in workers))
    for app in (*clients, *workers):  # the applications leave first, then the proxy
        app.close()
    proxy.stop()
    for c in clients:
        log.talked(c.local, ep(port), ("REQ", "ROUTER"), len(c.sent), len(c.received))
        log.fact("requests", client=c.local, broker=[ep(port), ep(port + 1)], count=len(c.sent),
                 replies=len(c.received))
    for w in workers:
        log.talked(w.local, ep(port + 1), ("REP", "DEALER"), len(w.sent), len(w.received))
        log.fact("served", worker=w.local, broker=ep(port + 1), count=len(w.received))
    total = sum(len(c.sent) + len(c.received) for c in clients)
    log.fact("flows", count=total, ambiguous=0)
    log.fact("node", endpoints=[ep(port), ep(port + 1)], why="one application's proxy binds both")
    log.fact("findings", rules=[])
    return f"{total} messages through the proxy; workers served {[len(w.received) for w in workers]}"


@incident(
    "broker_router_router", 15721, "ROUTER :15721 / ROUTER :15722 (a load-balancing broker)",
    "2 x REQ clients (no identity), 2 x REQ workers (no identity)",
    "the zguide's load-balancing broker: workers say `READY`, the broker routes each client's `hello` to a ready "
    "worker with the client's routing id in the envelope and routes the `world` back by it; clients and workers "
    "each go at their own pace", ports=2,
)  # fmt: skip
def broker_router_router(port: int, log: Log, ctx: zmq.Context) -> str:
    import random

    front = log.app(ctx, "broker-frontend", "ROUTER").bind(tcp(port))
    back = log.app(ctx, "broker-backend", "ROUTER").bind(tcp(port + 1))
    workers = [log.app(ctx, f"worker-{i}", "REQ").connect(tcp(port + 1, source=src(port, 10 + i))) for i in range(2)]
    clients = [log.app(ctx, f"client-{i}", "REQ").connect(tcp(port, source=src(port, i))) for i in range(2)]
    for app in (*workers, *clients):
        app.wait_event("HANDSHAKE_SUCCEEDED")
    pace = random.Random(15721)  # (the same pauses at every recording)
    pauses = {app.name: [pace.uniform(0.0, 0.004) for _ in range(8)] for app in (*clients, *workers)}
    done = threading.Event()

    def broker() -> None:  # the zguide's lbbroker loop: clients are served only while a worker is ready
        ready: list[bytes] = []
        poller = zmq.Poller()
        poller.register(back.sock, zmq.POLLIN)
        poller.register(front.sock, zmq.POLLIN)
        while not done.is_set():
            events = dict(poller.poll(20))
            if back.sock in events:
                worker_id, _empty, client_id, *rest = back.expect("worker")
                ready.append(worker_id)
                if client_id != b"READY":
                    front.send(client_id, b"", rest[-1])
            if front.sock in events and ready:
                client_id, _empty, request = front.expect("request")
                back.send(ready.pop(0), b"", client_id, b"", request)

    def client(app: App) -> Callable[[], None]:
        def go() -> None:
            for pause in pauses[app.name][:3]:
                time.sleep(pause)
                app.send(b"hello")
                if app.expect("reply") != [b"world"]:
                    raise ScenarioError(f"{app.name}: wrong reply")
        return go

    def worker(app: App) -> Callable[[], None]:
        def go() -> None:
            app.send(b"READY")
            for pause in pauses[app.name]:
                work = app.recv(0.05)
                while work is None and not done.is_set():
                    work = app.recv(0.05)
                if work is None:
                    return
                time.sleep(pause)
                app.send(work[0], b"", b"world")
        return go

    def clients_then_done() -> None:
        try:
            run_threads(*(client(c) for c in clients))
        finally:
            done.set()

    run_threads(broker, clients_then_done, *(worker(w) for w in workers))
    for app in (*clients, *workers):
        app.close()
    for c in clients:
        log.talked(c.local, ep(port), ("REQ", "ROUTER"), len(c.sent), len(c.received))
        log.fact("requests", client=c.local, broker=[ep(port), ep(port + 1)], count=len(c.sent),
                 replies=len(c.received))
    for w in workers:
        served = len(w.received)
        log.talked(w.local, ep(port + 1), ("REQ", "ROUTER"), len(w.sent), served)
        log.fact("served", worker=w.local, broker=ep(port + 1), count=served)
    total = sum(len(c.sent) + len(c.received) for c in clients)
    log.fact("flows", count=total, ambiguous=0)
    log.fact("node", endpoints=[ep(port), ep(port + 1)], why="one application's broker binds both")
    log.fact("findings", rules=[])
    return f"workers served {[len(w.received) for w in workers]}"


# ------------------------------------------------------------------------ heartbeats and closes


def frozen_dealer(endpoint: str) -> None:
    """The child process of ``heartbeat_frozen``: a DEALER that says hello, gets its welcome, and then waits for
    stdin to close (while its parent freezes it with SIGSTOP). What it did goes to stdout as one JSON line."""
    ctx = zmq.Context()
    sock = make_socket(ctx, zmq.DEALER, RECONNECT_IVL=60_000)
    sock.connect(endpoint)
    sent_at = time.time()
    sock.send(b"hello")
    reply = sock.recv_multipart()
    got_at = time.time()
    print(json.dumps({"sent": [{"t": sent_at, "frames": ["hello"]}],
                      "received": [{"t": got_at, "frames": [text(f) for f in reply]}]}), flush=True)
    sys.stdin.read()  # until the parent closes it
    sock.close(linger=0)
    ctx.term()


@incident(
    "heartbeat_frozen", 15702, "ROUTER, HEARTBEAT_IVL 200 ms, HEARTBEAT_TIMEOUT 1 s", "DEALER in a process frozen "
    "with SIGSTOP", "after `hello`/`welcome` the DEALER's process is stopped: the ROUTER's PINGs go unanswered and "
    "it closes the connection (FIN) about 1 s later; woken up, the DEALER answers the PINGs too late",
)  # fmt: skip
def heartbeat_frozen(port: int, log: Log, ctx: zmq.Context) -> str:
    server = log.app(ctx, "server", "ROUTER", HEARTBEAT_IVL=200, HEARTBEAT_TIMEOUT=1000).bind(tcp(port))
    local = src(port, 0)
    child = subprocess.Popen([sys.executable, __file__, "frozen-dealer", tcp(port, source=local)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        routing_id, _hello = server.expect("hello")
        server.send(routing_id, b"welcome")
        assert child.stdout is not None
        record = json.loads(child.stdout.readline())
        os.kill(child.pid, signal.SIGSTOP)
        frozen = time.time()
        gone = server.wait_event("DISCONNECTED", timeout=4)
        time.sleep(0.1)
        os.kill(child.pid, signal.SIGCONT)  # its libzmq answers the PINGs it missed: too late
        woken = time.time()
        time.sleep(0.2)
    finally:
        with contextlib.suppress(OSError):
            os.kill(child.pid, signal.SIGCONT)
        child.communicate(timeout=5)
    log.extra["client"] = {"socket": "DEALER", "local": ep(local), "connect": [tcp(port, source=local)],
                           "options": {"RECONNECT_IVL": 60000}, **record, "stopped": frozen, "continued": woken}
    log.talked(ep(local), ep(port), ("DEALER", "ROUTER"), 1, 1)
    log.fact("closed", client=ep(local), server=ep(port), first="server", how="fin",
             why="the server's monitor saw DISCONNECTED while the client's process was stopped")
    log.fact("finding", rule="heartbeat-timeout", client=ep(local), server=ep(port),
             details={"gave_up": "server", "timeout": 1.0, "after": round(gone["t"] - frozen, 3)},
             tolerance={"timeout": 0.3, "after": 0.3},
             why="HEARTBEAT_TIMEOUT 1000 ms on the server; its DISCONNECTED came that long after the client froze")
    log.fact("findings", rules=["heartbeat-timeout"])
    return f"server gave up {gone['t'] - frozen:.2f} s after the client froze"


# ------------------------------------------------------------------------------ subscriptions


@incident(
    "xpub_xsub_proxy", 15703, "XSUB :15703 / XPUB :15704 (a proxy)", "PUB upstream, 2 x SUB downstream", "SUBs "
    "subscribe `weather` and `news` at the XPUB; the proxy passes the subscriptions upstream through its XSUB "
    "(0x01/0x00 messages on ZMTP 3.1) and the publications down; one SUB cancels `news`", ports=2,
)  # fmt: skip
def xpub_xsub_proxy(port: int, log: Log, ctx: zmq.Context) -> str:
    xsub = log.app(ctx, "proxy-xsub", "XSUB").bind(tcp(port))
    xpub = log.app(ctx, "proxy-xpub", "XPUB").bind(tcp(port + 1))
    pub = log.app(ctx, "publisher", "PUB").connect(tcp(port, source=src(port, 0)))
    subs = [log.app(ctx, f"subscriber-{i}", "SUB").connect(tcp(port + 1, source=src(port, 10 + i))) for i in range(2)]
    for app in (pub, *subs):
        app.wait_event("HANDSHAKE_SUCCEEDED")
    stop = threading.Event()

    def proxy() -> None:  # the proxy's loop, so that what it passed on is on record
        poller = zmq.Poller()
        poller.register(xsub.sock, zmq.POLLIN)
        poller.register(xpub.sock, zmq.POLLIN)
        while not stop.is_set():
            ready = dict(poller.poll(20))
            if xpub.sock in ready:
                xsub.send(*xpub.expect("subscription"))
            if xsub.sock in ready:
                xpub.send(*xsub.expect("publication"))

    runner = threading.Thread(target=proxy, daemon=True)
    runner.start()
    try:
        subs[0].set("SUBSCRIBE", b"weather")
        subs[1].set("SUBSCRIBE", b"weather")
        subs[1].set("SUBSCRIBE", b"news")
        time.sleep(0.3)  # (a PUB drops what no subscriber asked for yet: no event says the subscriptions arrived)
        for topic in (b"weather", b"news", b"sport"):
            pub.send(topic, b"1")
        for sub, n in ((subs[0], 1), (subs[1], 2)):
            for _ in range(n):
                sub.expect("publication")
        subs[1].set("UNSUBSCRIBE", b"news")
        time.sleep(0.3)
        for topic in (b"weather", b"news"):
            pub.send(topic, b"2")
        subs[0].expect("publication")
        subs[1].expect("publication")
        time.sleep(0.1)
    finally:
        stop.set()
        runner.join(timeout=2)
    for app in (pub, *subs):
        app.close()
    upstream = [["subscribe" if f["frames"][0].startswith("0x01") else "cancel", bytes.fromhex(
        f["frames"][0][4:]).decode()] for f in xsub.sent]
    log.talked(pub.local, ep(port), ("PUB", "XSUB"), len(xsub.received), 0)
    log.fact("subscriptions", client=pub.local, server=ep(port), dir="s2c", topics=upstream,
             why="what the proxy passed on through its XSUB (it sends them as 0x01/0x00 messages)")
    for sub in subs:
        mine = [["subscribe" if a["set"] == "SUBSCRIBE" else "cancel", a["value"]] for a in sub.actions]
        log.talked(sub.local, ep(port + 1), ("SUB", "XPUB"), 0, len(sub.received))
        log.fact("subscriptions", client=sub.local, server=ep(port + 1), dir="c2s", topics=mine)
    delivered = sum(len(s.received) for s in subs)
    log.fact("flows", count=delivered, ambiguous=0, why="each publication that reached a SUB came from the one PUB")
    log.fact("node", endpoints=[ep(port), ep(port + 1)], why="one application's proxy binds both")
    log.fact("findings", rules=[])
    return f"upstream subscriptions {upstream}"


@incident(
    "never_subscribed", 15718, "PUB", "2 x SUB, one subscribed to everything, one to nothing",
    "PUB publishes 10 messages; the SUB that never called SUBSCRIBE gets none of them",
)  # fmt: skip
def never_subscribed(port: int, log: Log, ctx: zmq.Context) -> str:
    pub = log.app(ctx, "publisher", "PUB").bind(tcp(port))
    keen = log.app(ctx, "subscriber-all", "SUB").connect(tcp(port, source=src(port, 0)))
    keen.set("SUBSCRIBE", b"")
    idle = log.app(ctx, "subscriber-none", "SUB").connect(tcp(port, source=src(port, 1)))
    for app in (keen, idle):
        app.wait_event("HANDSHAKE_SUCCEEDED")
    time.sleep(0.3)
    for i in range(10):
        pub.send(b"update %d" % i)
    for _ in range(10):
        keen.expect("update")
    if idle.recv(0.3) is not None:
        raise ScenarioError("the SUB without a subscription got a message")
    idle.close()
    keen.close()
    for sub, topics in ((keen, [["subscribe", ""]]), (idle, [])):
        log.talked(sub.local, ep(port), ("SUB", "PUB"), 0, len(sub.received))
        log.fact("subscriptions", client=sub.local, server=ep(port), dir="c2s", topics=topics)
    log.fact("finding", rule="never-subscribed", client=idle.local, server=ep(port),
             details={"published": len(pub.sent)}, why="the SUB application never set ZMQ_SUBSCRIBE")
    log.fact("findings", rules=["never-subscribed"])
    return ""


# ------------------------------------------------------------------------------ back-pressure


@incident(
    "large_multipart", 15705, "PULL, RCVBUF 64 KiB, reading all the time", "PUSH",
    "PUSH sends one message of two 1 MiB frames and a short one; the PULL's small receive buffer fills and "
    "empties again and again (brief zero windows), but it never stops reading",
    dumpcap=("-B", "64"),  # (dumpcap's default 2 MiB buffer drops some of the 1 MiB bursts)
)  # fmt: skip
def large_multipart(port: int, log: Log, ctx: zmq.Context) -> str:
    pull = log.app(ctx, "reader", "PULL", RCVBUF=65536).bind(tcp(port))
    push = log.app(ctx, "writer", "PUSH").connect(tcp(port, source=src(port, 0)))
    push.wait_event("HANDSHAKE_SUCCEEDED")
    first = bytes(range(256)) * 4096
    second = bytes(reversed(range(256))) * 4096
    push.send(first, second, b"end")
    got = pull.sock.recv_multipart()  # (recorded by size only: 2 MiB of frames have no place in the facts)
    pull.received.append({"t": time.time(), "frames": [f"{len(f)} octets" for f in got]})
    if got != [first, second, b"end"]:
        raise ScenarioError("PULL got another message")
    push.sent[-1]["frames"] = [f"{len(f)} octets" for f in (first, second, b"end")]
    push.close()
    log.talked(push.local, ep(port), ("PUSH", "PULL"), 1, 0)
    log.fact("finding-absent", rule="back-pressure", why="the PULL application was reading the whole time")
    log.fact("findings", rules=[])
    return ""


@incident(
    "slow_producer", 15724, "PULL, RCVBUF 8 KiB, reading all the time",
    "a hand-made ZMTP 3.1 PUSH that writes a 256 KiB frame in two halves, 0.3 s apart",
    "the first half fills the PULL's small buffer for a moment (a zero window, reopened at once); then the writer "
    "itself pauses: the reader was never the one holding things up",
    dumpcap=("-B", "64"),
)  # fmt: skip
def slow_producer(port: int, log: Log, ctx: zmq.Context) -> str:
    pull = log.app(ctx, "reader", "PULL", RCVBUF=8192).bind(tcp(port))
    peer = socket.socket()
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    peer.bind((HOST, src(port, 0)))
    peer.connect((HOST, port))
    peer.settimeout(3)
    peer.sendall(zmtp3_greeting(minor=1))
    greeting = b""
    while len(greeting) < 64:
        greeting += peer.recv(64 - len(greeting))
    peer.sendall(zmtp3_ready({b"Socket-Type": b"PUSH"}))
    body = bytes(range(256)) * 1024
    frame = b"\x02" + len(body).to_bytes(8, "big") + body
    half = len(frame) // 2
    writes = [{"t": time.time(), "octets": half}]
    peer.sendall(frame[:half])
    time.sleep(0.3)  # the writer's own pause (a slow producer), not the reader's
    writes.append({"t": time.time(), "octets": len(frame) - half})
    peer.sendall(frame[half:])
    got = pull.sock.recv()
    pull.received.append({"t": time.time(), "frames": [text(got)]})
    if got != body:
        raise ScenarioError("PULL got another frame")
    peer.close()
    log.extra["writer"] = {"what": "a hand-made ZMTP 3.1 PUSH", "local": ep(src(port, 0)), "writes": writes}
    log.talked(ep(src(port, 0)), ep(port), ("PUSH", "PULL"), 1, 0)
    log.fact("finding-absent", rule="back-pressure", why="the PULL application was reading the whole time; the "
             "pause was the writer's")
    log.fact("findings", rules=[])
    return ""


@incident(
    "slow_reader", 15706, "PULL, RCVHWM 4, RCVBUF 4 KiB, stops reading for 0.5 s", "PUSH, SNDHWM 4",
    "PUSH sends 2 KiB tasks until it blocks (EAGAIN); the PULL reads nothing for 0.5 s after that, then all",
)  # fmt: skip
def slow_reader(port: int, log: Log, ctx: zmq.Context) -> str:
    pull = log.app(ctx, "reader", "PULL", RCVHWM=4, RCVBUF=4096).bind(tcp(port))
    push = log.app(ctx, "writer", "PUSH", SNDHWM=4, SNDBUF=4096).connect(tcp(port, source=src(port, 0)))
    push.wait_event("HANDSHAKE_SUCCEEDED")
    i = 0
    while push.send(b"%04d" % i + b"." * 2044, flags=zmq.DONTWAIT):
        i += 1
        if i > 1000:
            raise ScenarioError("PUSH never blocked")
        time.sleep(0.002)
    blocked = push.errors[-1]["t"]
    pause = 0.5
    time.sleep(pause)
    reading = time.time()
    while len(pull.received) < len(push.sent):
        pull.expect("task")
    push.close()
    log.extra["reader"] = {"paused_until": reading}
    log.talked(push.local, ep(port), ("PUSH", "PULL"), len(push.sent), 0)
    log.fact("finding", rule="back-pressure", client=push.local, server=ep(port),
             details={"reader": "server", "held": round(reading - blocked, 3)}, tolerance={"held": 0.25},
             why="the PULL application read nothing from before the PUSH blocked until it started reading")
    log.fact("findings", rules=["back-pressure"])
    return f"PUSH blocked after {len(push.sent)} tasks; reading resumed {reading - blocked:.2f} s later"


@incident(
    "conflate", 15717, "PUSH", "PULL, CONFLATE", "PUSH sends 20 ticks; the PULL keeps only the last one",
)  # fmt: skip
def conflate(port: int, log: Log, ctx: zmq.Context) -> str:
    push = log.app(ctx, "ticker", "PUSH").bind(tcp(port))
    pull = log.app(ctx, "display", "PULL", CONFLATE=1).connect(tcp(port, source=src(port, 0)))
    pull.wait_event("HANDSHAKE_SUCCEEDED")
    for i in range(20):
        push.send(b"tick %d" % i)
    time.sleep(0.2)
    if pull.expect("tick") != [b"tick 19"] or pull.recv(0.1) is not None:
        raise ScenarioError("CONFLATE kept something else than the last tick")
    pull.close()
    log.talked(pull.local, ep(port), ("PULL", "PUSH"), 0, len(push.sent),
               why="CONFLATE drops on the reader's side: every tick crossed the wire")
    log.fact("findings", rules=[])
    return ""


# ------------------------------------------------------------------------------ load balancing


@incident(
    "push_worker_leaves", 15725, "PUSH (a ventilator)", "3 PULL workers; the third leaves after its first tasks",
    "PUSH sends 30 tasks (10 to each worker); worker 3 closes its socket; PUSH sends 30 more (15 to each of the "
    "two left)",
)  # fmt: skip
def push_worker_leaves(port: int, log: Log, ctx: zmq.Context) -> str:
    push = log.app(ctx, "ventilator", "PUSH").bind(tcp(port))
    workers = [log.app(ctx, f"worker-{i + 1}", "PULL").connect(tcp(port, source=src(port, i))) for i in range(3)]
    deadline = time.monotonic() + 3
    while push.count("HANDSHAKE_SUCCEEDED") < 3:  # (all three are the PUSH's peers before the first task)
        if time.monotonic() > deadline:
            raise ScenarioError(f"the PUSH saw {push.count('HANDSHAKE_SUCCEEDED')} handshakes, not 3")
        time.sleep(0.005)
    for i in range(30):
        push.send(b"task %d" % i)
    for w in workers:
        for _ in range(10):
            w.expect("task")
    leaver = workers[2]
    leaver.close()
    push.wait_event("DISCONNECTED")
    for i in range(30, 60):
        push.send(b"task %d" % i)
    for w in workers[:2]:
        for _ in range(15):
            w.expect("task")
    for w in workers:
        log.talked(w.local, ep(port), ("PULL", "PUSH"), 0, len(w.received))
    log.fact("closed", client=leaver.local, server=ep(port), first="client", how="fin",
             why="worker 3 closed its socket; the ventilator kept running")
    log.fact("finding", rule="round-robin-skew", server=ep(port), details={"total": 60, "why": ["closed"]},
             why="the workers got 25, 25 and 10 tasks: round robin shared the 30 sent after worker 3 left between "
             "the two still connected; no pipe was full")
    log.fact("findings", rules=["round-robin-skew"])
    return ""


# ------------------------------------------------------------------------------ CURVE


def keypair_beginning_with(prefix: str) -> tuple[bytes, bytes]:
    """A CURVE key pair whose Z85 secret key begins with ``prefix`` (one in 85 does, for one character)."""
    while True:
        public, secret = zmq.curve_keypair()
        if secret.decode().startswith(prefix):
            return public, secret


@incident(
    "curve_messages", 15707, "REP, CURVE server (its secret key begins with `-`)", "REQ, CURVE client",
    "three `Hello` -> `World` round trips, every frame a MESSAGE box",
)  # fmt: skip
def curve_messages(port: int, log: Log, ctx: zmq.Context) -> str:
    server_public, server_secret = keypair_beginning_with("-")
    other_public, other_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    rep = log.app(ctx, "server", "REP", CURVE_SERVER=1, CURVE_SECRETKEY=server_secret).bind(tcp(port))
    req = log.app(ctx, "client", "REQ", CURVE_SERVERKEY=server_public, CURVE_PUBLICKEY=client_public,
                  CURVE_SECRETKEY=client_secret).connect(tcp(port, source=src(port, 0)))
    for _ in range(3):
        req.send(b"Hello")
        rep.expect("request")
        rep.send(b"World")
        req.expect("reply")
    req.close()
    for app in (rep, req):  # (secret keys stay out of the record of options: they are below, as test keys)
        app.options = {k: v for k, v in app.options.items() if "SECRET" not in k}
    log.extra["keys"] = {"note": "throwaway CURVE keys (Z85) of this recording",
                         "server": {"public": server_public.decode(), "secret": server_secret.decode()},
                         "other_server": {"public": other_public.decode(), "secret": other_secret.decode()}}
    # REQ puts an empty delimiter before each request and REP before each reply: two MESSAGE boxes per message.
    boxes = {"c2s": 2 * len(req.sent), "s2c": 2 * len(rep.sent)}
    # (READY and INITIATE, which name the socket types, travel in boxes: the wire does not show them)
    log.fact("connection", client=req.local, server=ep(port), handshake=True, mechanism="CURVE")
    log.fact("messages", client=req.local, server=ep(port), encrypted=True, **boxes)
    log.fact("curve-check", secret=server_secret.decode(), hello="opens", welcome="opens", rules=[])
    log.fact("curve-check", secret=other_secret.decode(), hello="does not open", rules=["curve-not-this-server"],
             why="the server answered the HELLO with WELCOME and messages flowed: the client had this server's "
                 "public key, so a secret key that does not open HELLO belongs to another server")
    log.fact("findings", rules=[])
    return f"server secret key begins {server_secret[:1].decode()!r}"


@incident(
    "curve_wrong_server_key", 15723, "ROUTER, CURVE server", "DEALER, CURVE client given another server's key",
    "the client seals its HELLO for the wrong server key; the server cannot open it and drops the connection",
)  # fmt: skip
def curve_wrong_server_key(port: int, log: Log, ctx: zmq.Context) -> str:
    server_public, server_secret = zmq.curve_keypair()
    other_public, _other_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    server = log.app(ctx, "server", "ROUTER", CURVE_SERVER=1, CURVE_SECRETKEY=server_secret).bind(tcp(port))
    client = log.app(ctx, "client", "DEALER", CURVE_SERVERKEY=other_public, CURVE_PUBLICKEY=client_public,
                     CURVE_SECRETKEY=client_secret, RECONNECT_IVL=NO_RECONNECT_MS
                     ).connect(tcp(port, source=src(port, 0)))
    client.send(b"hello?")
    client.wait_event("DISCONNECTED", timeout=4)
    if server.recv(0.2) is not None:
        raise ScenarioError("the server accepted a client with the wrong server key")
    client.close()
    for app in (server, client):
        app.options = {k: v for k, v in app.options.items() if "SECRET" not in k}
    log.extra["keys"] = {"note": "throwaway CURVE keys (Z85) of this recording",
                         "server": {"public": server_public.decode(), "secret": server_secret.decode()},
                         "client_was_told": other_public.decode()}
    log.fact("connection", client=client.local, server=ep(port), handshake=False, mechanism="CURVE")
    log.fact("curve-check", secret=server_secret.decode(), hello="does not open", rules=["curve-wrong-server-key"],
             why="the client was given another server's public key; the server never answered its HELLO")
    log.fact("findings", rules=["handshake-incomplete"])
    return ""


# ------------------------------------------------------------------------------ connections that never became ZMTP


@incident(
    "server_restart", 15708, "ROUTER, closed and bound again 0.3 s later", "DEALER, RECONNECT_IVL 50 ms",
    "`one` -> `ack`; the server goes away and its port refuses the DEALER's reconnects until it is back; then "
    "`two` -> `ack`",
)  # fmt: skip
def server_restart(port: int, log: Log, ctx: zmq.Context) -> str:
    first = log.app(ctx, "server", "ROUTER").bind(tcp(port))
    client = log.app(ctx, "client", "DEALER", RECONNECT_IVL=50).connect(tcp(port, source=src(port, 0)))
    client.send(b"one")
    routing_id, _ = first.expect("one")
    first.send(routing_id, b"ack")
    client.expect("ack")
    first.close()
    client.wait_event("DISCONNECTED")
    time.sleep(0.3)
    second = log.app(ctx, "server-again", "ROUTER").bind(tcp(port))
    second.wait_event("ACCEPTED", timeout=3)
    client.send(b"two")
    routing_id, _ = second.expect("two")
    second.send(routing_id, b"ack")
    client.expect("ack")
    client.close()
    # Each attempt is a CONNECT_DELAYED (the TCP connect under way); those that got no CONNECTED were refused.
    refused = client.count("CONNECT_DELAYED") - client.count("CONNECTED")
    retried = [e["t"] for e in client.events if e["event"] == "CONNECT_RETRIED"]
    log.fact("connection", client=client.local, server=ep(port), client_type="DEALER", server_type="ROUTER",
             handshake=True, count=2)
    log.fact("messages", client=client.local, server=ep(port), c2s=2, s2c=2)
    log.fact("closed", client=client.local, server=ep(port), which=0, first="server", how="fin",
             why="the server application closed its socket")
    log.fact("refused", server=ep(port), count=refused, between=[retried[0], retried[-1]],
             why="the DEALER's monitor: a CONNECT_DELAYED for each attempt, two of them CONNECTED")
    log.fact("finding", rule="refused-connects", server=ep(port), details={"count": refused})
    log.fact("findings", rules=["refused-connects"])
    return f"{refused} refused reconnects"


@incident(
    "reconnect_storm", 15709, "nothing (no process listens)", "DEALER, RECONNECT_IVL 20 ms",
    "the DEALER connects to a port nobody listens on: every attempt is refused (SYN, RST) for 0.4 s",
)  # fmt: skip
def reconnect_storm(port: int, log: Log, ctx: zmq.Context) -> str:
    client = log.app(ctx, "client", "DEALER", RECONNECT_IVL=20).connect(tcp(port, source=src(port, 0)))
    client.send(b"anyone?")  # queued for ever
    time.sleep(0.4)
    client.close()
    refused = client.count("CONNECT_DELAYED") - client.count("CONNECTED")
    log.fact("connection", server=ep(port), count=0, why="no attempt got through")
    log.fact("refused", server=ep(port), count=refused, tolerance=1,
             why="the DEALER's monitor: a CONNECT_DELAYED for each attempt, none CONNECTED (one more may have been "
                 "on its way when the application closed)")
    log.fact("finding", rule="refused-connects", server=ep(port), details={"count": refused},
             tolerance={"count": 1})
    log.fact("findings", rules=["refused-connects"])
    return f"{refused} refused attempts"


def zmtp20_greeting(socket_type: int) -> bytes:
    """What a ZMTP 2.0 peer sends first: signature, revision 01, its socket type, an empty identity frame."""
    return b"\xff" + b"\x00" * 8 + b"\x7f" + bytes([1, socket_type]) + b"\x00\x00"


@incident(
    "version_mismatch", 15710, "ROUTER, PLAIN server (ZAP: it insists on ZMTP 3.x)",
    "a ZMTP 2.0 DEALER that reconnects every 100 ms (as an old netmq or libzmq 3.x does)",
    "each time the 2.0 client greets, libzmq answers with its signature and closes: the client reconnects and "
    "the same happens again (libzmq issue #4106)",
)  # fmt: skip
def version_mismatch(port: int, log: Log, ctx: zmq.Context) -> str:
    with zap_handler(ctx, plain_users({b"admin": b"secret"})):
        server = log.app(ctx, "server", "ROUTER", PLAIN_SERVER=1).bind(tcp(port))
        attempts = []
        for k in range(5):
            peer = socket.socket()
            peer.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            peer.bind((HOST, src(port, k)))
            peer.settimeout(2)
            peer.connect((HOST, port))
            peer.sendall(zmtp20_greeting(5))  # DEALER
            got, ended = b"", "fin"
            try:
                while chunk := peer.recv(100):
                    got += chunk
            except ConnectionResetError:
                ended = "rst"  # (libzmq closes with the client's bytes unread: the kernel resets)
            attempts.append({"t": time.time(), "local": ep(src(port, k)), "sent": "0x" + zmtp20_greeting(5).hex(),
                             "received": "0x" + got.hex(), "closed_by": "server", "how": ended})
            peer.close()
            time.sleep(0.1)
        server.close()
    log.extra["client"] = {"what": "a hand-made ZMTP 2.0 DEALER", "attempts": attempts}
    for a in attempts:
        log.fact("connection", client=a["local"], server=ep(port), handshake=False)
        log.fact("closed", client=a["local"], server=ep(port), first="server", how=a["how"],
                 why="the client only ever read until the server closed")
    log.fact("finding", rule="version-mismatch", server=ep(port), details={"attempts": len(attempts),
             "versions": ["2.0", "3.x"]})
    log.fact("findings", rules=["version-mismatch"])
    return f"{len(attempts)} attempts; server events {sorted({e['event'] for e in server.events})}"


@incident(
    "dual_stack", 15711, "ROUTER bound on tcp://*:15711 with IPV6 (IPv4 and IPv6)",
    "a DEALER over 127.0.0.1 and a DEALER over ::1", "both say hello, the one ROUTER answers both",
)  # fmt: skip
def dual_stack(port: int, log: Log, ctx: zmq.Context) -> str:
    server = log.app(ctx, "server", "ROUTER", IPV6=1).bind(f"tcp://*:{port}")
    v4 = log.app(ctx, "client-v4", "DEALER").connect(tcp(port, source=src(port, 0)))
    v6 = log.app(ctx, "client-v6", "DEALER", IPV6=1).connect(tcp(port, host="::1", source=src(port, 1)))
    for c in (v4, v6):
        c.send(b"hello from " + c.name.encode())
        routing_id, _ = server.expect("hello")
        server.send(routing_id, b"hi")
        c.expect("hi")
    for c in (v4, v6):
        c.close()
    v6.local = ep(src(port, 1), "::1")
    log.fact("connection", client=v4.local, server=ep(port), client_type="DEALER", server_type="ROUTER",
             handshake=True)
    log.fact("connection", client=v6.local, server=ep(port, "::1"), client_type="DEALER", server_type="ROUTER",
             handshake=True)
    log.fact("node", endpoints=[ep(port), ep(port, "::1")], why="one application's one socket listens on both")
    log.fact("findings", rules=[])
    return ""


# ------------------------------------------------------------------------------ handshakes refused


@incident(
    "plain_zap_denied", 15712, "REP, PLAIN server + ZAP handler", "REQ, PLAIN `admin` / `wrong`",
    "the ZAP handler says 400: the server sends ERROR and both close",
)  # fmt: skip
def plain_zap_denied(port: int, log: Log, ctx: zmq.Context) -> str:
    with zap_handler(ctx, plain_users({b"admin": b"secret"})):
        log.app(ctx, "server", "REP", PLAIN_SERVER=1).bind(tcp(port))
        client = log.app(ctx, "client", "REQ", PLAIN_USERNAME=b"admin", PLAIN_PASSWORD=b"wrong",
                         RECONNECT_IVL=NO_RECONNECT_MS).connect(tcp(port, source=src(port, 0)))
        client.send(b"Hello")  # queued; never delivered
        failed = client.wait_event("HANDSHAKE_FAILED_AUTH")
        client.wait_event("DISCONNECTED")
        client.close()
    # (refused after HELLO: neither INITIATE nor READY, which name the socket types, was sent)
    log.fact("connection", client=client.local, server=ep(port), handshake=False, mechanism="PLAIN")
    log.fact("messages", client=client.local, server=ep(port), c2s=0, s2c=0)
    log.fact("finding", rule="handshake-incomplete", client=client.local, server=ep(port),
             details={"refused_by": "server", "reason": str(failed["value"])},
             why="the client's monitor: HANDSHAKE_FAILED_AUTH with the ZAP status code")
    log.fact("findings", rules=["handshake-incomplete"])
    return f"client: HANDSHAKE_FAILED_AUTH {failed['value']}"


@incident(
    "curve_zap_denied", 15713, "REP, CURVE server + ZAP handler refusing all", "REQ, CURVE client",
    "HELLO, WELCOME, INITIATE; the ZAP handler says 400: the server sends ERROR and both close",
)  # fmt: skip
def curve_zap_denied(port: int, log: Log, ctx: zmq.Context) -> str:
    server_public, server_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    with zap_handler(ctx, deny_all):
        server = log.app(ctx, "server", "REP", CURVE_SERVER=1, CURVE_SECRETKEY=server_secret).bind(tcp(port))
        client = log.app(ctx, "client", "REQ", CURVE_SERVERKEY=server_public, CURVE_PUBLICKEY=client_public,
                         CURVE_SECRETKEY=client_secret, RECONNECT_IVL=NO_RECONNECT_MS
                         ).connect(tcp(port, source=src(port, 0)))
        client.send(b"Hello")
        failed = client.wait_event("HANDSHAKE_FAILED_AUTH")
        client.wait_event("DISCONNECTED")
        client.close()
    for app in (server, client):
        app.options = {k: v for k, v in app.options.items() if "SECRET" not in k}
    log.fact("connection", client=client.local, server=ep(port), handshake=False, mechanism="CURVE")
    log.fact("finding", rule="handshake-incomplete", client=client.local, server=ep(port),
             details={"refused_by": "server", "reason": str(failed["value"])},
             why="the client's monitor: HANDSHAKE_FAILED_AUTH with the ZAP status code")
    log.fact("findings", rules=["handshake-incomplete"])
    return f"client: HANDSHAKE_FAILED_AUTH {failed['value']}"


# ------------------------------------------------------------------------------ healthy, and busy


@incident(
    "many_dealers", 15714, "ROUTER", "120 DEALERs", "each DEALER says `hello i`; the ROUTER answers `hi i` to each",
)  # fmt: skip
def many_dealers(port: int, log: Log, ctx: zmq.Context) -> str:
    server = log.app(ctx, "server", "ROUTER").bind(tcp(port))
    dealers = [log.app(ctx, f"dealer-{i}", "DEALER").connect(tcp(port, source=src(port, i))) for i in range(120)]
    for i, d in enumerate(dealers):
        d.send(b"hello %d" % i)
    for _ in dealers:
        routing_id, body = server.expect("hello")
        server.send(routing_id, body.replace(b"hello", b"hi"))
    for d in dealers:
        d.expect("hi")
    for d in dealers:
        d.close()
    # (120 records of the same would drown the file: three DEALERs and the ROUTER's first three are kept in full)
    server.sent, server.received = server.sent[:3], server.received[:3]
    for d in dealers[3:]:
        del log.apps[d.name]
    log.extra["dealers"] = {"count": len(dealers), "each": "connects from its own port, sends `hello i`, gets "
                            "`hi i`", "ports": [d.local for d in dealers]}
    log.fact("connection", server=ep(port), client_type="DEALER", server_type="ROUTER", handshake=True,
             count=len(dealers))
    log.fact("messages", server=ep(port), c2s=sum(len(d.sent) for d in dealers),
             s2c=sum(len(d.received) for d in dealers))
    log.fact("flows", count=0, ambiguous=0, why="the ROUTER answers; it forwards nothing")
    log.fact("findings", rules=[])
    return ""


@incident(
    "router_mandatory", 15715, "ROUTER, ROUTER_MANDATORY", "DEALER, identity `known`",
    "the ROUTER sends to `unknown` (EHOSTUNREACH, nothing on the wire) and to `known` (delivered)",
)  # fmt: skip
def router_mandatory(port: int, log: Log, ctx: zmq.Context) -> str:
    server = log.app(ctx, "server", "ROUTER", ROUTER_MANDATORY=1).bind(tcp(port))
    client = log.app(ctx, "client", "DEALER", ROUTING_ID=b"known").connect(tcp(port, source=src(port, 0)))
    client.send(b"here")
    server.expect("here")
    if server.send(b"unknown", b"lost?"):
        raise ScenarioError("ROUTER_MANDATORY let a message to an unknown peer through")
    server.send(b"known", b"for you")
    client.expect("for you")
    client.close()
    log.talked(client.local, ep(port), ("DEALER", "ROUTER"), 1, 1, identities={"c2s": "known"})
    log.fact("findings", rules=[])
    return f"errors: {[e['name'] for e in server.errors]}"


@incident(
    "req_correlate", 15716, "REP", "REQ, REQ_RELAXED and REQ_CORRELATE",
    "REQ asks `a`, then (relaxed) `b` before the reply; REP answers `re a` (REQ drops it: not the request id it "
    "waits for), then `re b`",
)  # fmt: skip
def req_correlate(port: int, log: Log, ctx: zmq.Context) -> str:
    rep = log.app(ctx, "server", "REP").bind(tcp(port))
    req = log.app(ctx, "client", "REQ", REQ_RELAXED=1, REQ_CORRELATE=1).connect(tcp(port, source=src(port, 0)))
    req.send(b"a")
    rep.expect("a")
    req.send(b"b")
    rep.send(b"re a")
    rep.expect("b")
    rep.send(b"re b")
    if req.expect("re b") != [b"re b"]:
        raise ScenarioError("REQ_CORRELATE let the stale reply through")
    req.close()
    log.talked(req.local, ep(port), ("REQ", "REP"), 2, 2)
    log.fact("findings", rules=[])
    return ""


@incident(
    "router_identities", 15720, "ROUTER, identity `server`", "ROUTER, identity `client`, ROUTER_MANDATORY",
    "each side routes to the other by its identity, three times",
)  # fmt: skip
def router_identities(port: int, log: Log, ctx: zmq.Context) -> str:
    server = log.app(ctx, "server", "ROUTER", ROUTING_ID=b"server").bind(tcp(port))
    client = log.app(ctx, "client", "ROUTER", ROUTING_ID=b"client", ROUTER_MANDATORY=1
                     ).connect(tcp(port, source=src(port, 0)))
    client.wait_event("HANDSHAKE_SUCCEEDED")
    for i in range(3):
        send_routed(client.sock, [b"server", b"ask %d" % i])
        client.sent.append({"t": time.time(), "frames": ["server", f"ask {i}"]})
        server.expect("ask")
        server.send(b"client", b"answer %d" % i)
        client.expect("answer")
    client.close()
    log.talked(client.local, ep(port), ("ROUTER", "ROUTER"), 3, 3, identities={"c2s": "client", "s2c": "server"})
    log.fact("findings", rules=[])
    return ""


# ------------------------------------------------------------------------------ the capture itself


@incident(
    "capture_loss", 15719, "PULL", "PUSH", "PUSH sends 40 tasks of 64 KiB while dumpcap (1 MiB buffer) is "
    "stopped for 0.3 s, then 5 small ones: the kernel drops packets the capture never gets; the applications lose "
    "nothing",
    dumpcap=("-B", "1"),
)  # fmt: skip
def capture_loss(port: int, log: Log, ctx: zmq.Context) -> str:
    cap = Dumpcap.active
    assert cap is not None
    pull = log.app(ctx, "worker", "PULL").bind(tcp(port))
    push = log.app(ctx, "ventilator", "PUSH").connect(tcp(port, source=src(port, 0)))
    push.wait_event("HANDSHAKE_SUCCEEDED")
    body = b"." * 65536
    freezer = threading.Thread(target=cap.freeze, args=(0.3,))
    freezer.start()
    time.sleep(0.05)
    for i in range(40):
        push.send(b"%04d" % i + body)
    received = 0
    while received < 40:
        pull.expect("task")
        received += 1
    freezer.join()
    for i in range(5):
        push.send(b"small %d" % i)
        pull.expect("small")
    push.close()
    pull.close()
    time.sleep(0.3)
    cap.stop()
    log.extra["dumpcap"] = {"options": ["-B", "1"], "stopped_for": 0.3, "dropped": cap.dropped,
                            "captured": cap.packets}
    if not cap.dropped:
        raise ScenarioError("dumpcap dropped nothing")
    log.talked(push.local, ep(port), ("PUSH", "PULL"), len(push.sent), 0, at_most=True,
               why="every task arrived, but the capture lacks some of them")
    log.fact("finding", rule="capture-loss", client=push.local, server=ep(port),
             why=f"dumpcap reported {cap.dropped} packets dropped")
    log.fact("findings", rules=["capture-loss"])
    return f"dumpcap dropped {cap.dropped} of {cap.packets}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["frozen-dealer"]:
        frozen_dealer(sys.argv[2])
