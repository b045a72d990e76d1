"""Live sources for the capture viewer: a live capture on an interface (pyshark/tshark) or a tap proxy.

A `LiveSource` wraps `capture.live.LiveCapture` (which runs tshark in a worker thread) or
`capture.tap.TapProxy` (asyncio, on the app's loop) and streams their ZMTP events to any
number of websockets as they arrive:

- The worker thread (the capture's, or the tap's dissection thread) never touches the loop's
  objects: it makes each event's message (`{"type": "event", "event": {...}}`, JSON text, once),
  appends it to a bounded inbox under a lock and wakes the loop with `loop.call_soon_threadsafe`.
  The loop only moves texts along. When the loop falls behind, the oldest waiting events are
  dropped and counted; beyond `live_max_event_rate` events a second they are dropped (and counted)
  before any JSON is made: a tap carrying a flood of empty frames costs the loop a bounded share.
- Each event is kept, up to a count and a byte budget, so a websocket that connects late gets the
  recent history.
- Each websocket (`Viewer`) has a bounded queue of its own: a slow browser loses the
  oldest events (counted, and reported in its `status` messages), never the server's memory.

The `LiveSources` manager limits how many sources run at once, and stops a source when its
last websocket has been gone for the grace period, when it reaches its maximum lifetime,
when it ends by itself (tshark died), on `DELETE`, and at app shutdown, always closing
tshark and the proxy's listening socket.

Nothing the user sends reaches a command line but the interface name (checked against the
interfaces that exist) and the port (an integer; `LiveCapture` builds the BPF filter).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, Literal

from ...capture.live import LiveCapture, check_interface, check_port, list_interfaces
from ...capture.tap import TapProxy, parse_endpoint
from ...engine.events import cut_bodies
from ...engine.notation import format_address
from ..core.errors import Conflict, NotFound, TooMany, Unavailable, Unprocessable
from ..core.jsontext import json_text
from ..core.limits import TokenBucket
from ..core.settings import Settings
from ..wspump import Outbox

log = logging.getLogger(__name__)

State = Literal["starting", "capturing", "stopped", "error"]
READY_TIMEOUT = 10.0  # seconds POST /api/live waits for dumpcap to start capturing
MAX_CONNECTIONS_KEPT = 10_000  # connection records (endpoints) kept per source
DRAIN_DELAY = 0.02  # seconds between an event's intake and its move to the viewers (the events meanwhile go too)
HOST_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.\-]{0,251}[A-Za-z0-9])?$")


class LiveError(Unprocessable):
    """A live source that cannot be started as asked."""


class LiveUnavailable(Unavailable):
    """A live source that failed to start on this machine (tshark missing, no permission)."""


class LiveConflict(Conflict):
    """The listen address is taken."""


class TooManyLiveSources(TooMany):
    """The server runs as many live sources as it may."""


class LiveNotFound(NotFound, KeyError):
    """No live source has this id."""


def check_tap_target(text: str, settings: Settings) -> tuple[str, int]:
    """(host, port) of a tap target `host:port`; raises LiveError when malformed or not allowed."""
    try:
        host, port = parse_endpoint(text.strip())
    except ValueError as exc:
        raise LiveError(str(exc)) from None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
        if not HOST_RE.match(host):
            raise LiveError(f"not a host name: {host!r}") from None
    if address is not None and address.is_unspecified:
        raise LiveError(f"{host} is not an address to connect to")
    allowed = settings.live_tap_targets
    if "*" not in allowed and host.lower() not in {h.lower() for h in allowed}:
        raise LiveError(f"the tap may forward to {', '.join(allowed)} only (setting ZMTPLAB_LIVE_TAP_TARGETS)")
    return host, port


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Viewer(Outbox):
    """One websocket: the connections and history it was given, then a bounded queue of new events (an
    `Outbox` that drops the oldest), a `status` message after each burst and a last one when the source ends."""

    def __init__(self, backlog: list[str], connections: list[str], limit: int, max_bytes: int = 1 << 62,
                 status: Callable[[Viewer], str] | None = None) -> None:
        super().__init__(limit, "drop-oldest", max_bytes=max_bytes, linger=True, control=connections,
                         backlog=backlog, due=(lambda: status(self)) if status is not None else None)
        self.mark_due()  # (the first status follows the history)


class LiveSource:
    """One live capture or tap proxy and the events it produced (see the module docstring)."""

    def __init__(self, kind: Literal["capture", "tap"], settings: Settings, loop: asyncio.AbstractEventLoop,
                 description: dict[str, Any]) -> None:
        self.id = uuid.uuid4().hex
        self.kind = kind
        self.settings = settings
        self.loop = loop
        self.description = description
        self.state: State = "starting"
        self.detail = ""
        self.created = time.monotonic()
        self.ended_at: float | None = None
        self.last_detached = self.created
        self.viewers: set[Viewer] = set()
        self.history: deque[str] = deque()
        self.history_bytes = 0
        self.connections: dict[str, str] = {}  # conn -> its `connection` message
        self.events = 0
        self.dropped = 0  # events lost for everyone (the loop fell behind the capture thread)
        self.capture: LiveCapture | None = None
        self.proxy: TapProxy | None = None
        self._lock = threading.Lock()
        self._inbox: deque[str] = deque()  # event messages, JSON text
        self._seq = 0  # the next event's `seq` (given as the intake makes its message)
        self._rate = TokenBucket(settings.live_max_event_rate, max(1, int(settings.live_max_event_rate)))
        self._inbox_conns: list[tuple[str, tuple[str, int], tuple[str, int]]] = []
        self._inbox_dropped = 0
        self._scheduled = False
        self._last_counts = (0, 0, 0)
        self._stopping: asyncio.Task | None = None
        self.started = False  # the capture thread runs (before that, `tick` has nothing to follow)

    # ---- intake (any thread)

    def sink(self, event: dict[str, Any]) -> None:
        """Takes one event from the capture thread or the proxy's dissection thread (any thread)."""
        with self._lock:
            if not self._rate.take():
                self._inbox_dropped += 1
                self._wake_loop()
                return
            cut_bodies(event, self.settings.live_max_body)  # before it waits anywhere
            event["seq"] = self._seq
            self._seq += 1
            text = json_text({"type": "event", "event": event})
            if len(self._inbox) >= self.settings.live_queue:
                self._inbox.popleft()
                self._inbox_dropped += 1
            self._inbox.append(text)
            self._wake_loop()

    def on_connection(self, conn: str, client: tuple[str, int], server: tuple[str, int]) -> None:
        """Records a new TCP connection's endpoints (any thread)."""
        with self._lock:
            if len(self._inbox_conns) < MAX_CONNECTIONS_KEPT:
                self._inbox_conns.append((conn, client, server))
            self._wake_loop()

    def _wake_loop(self) -> None:
        # Called with the lock held: at most one drain is scheduled at a time.
        if self._scheduled:
            return
        self._scheduled = True
        # A moment later: a busy source's events are moved in batches, not a turn of the loop each.
        try:
            if _on_loop(self.loop):
                self.loop.call_later(DRAIN_DELAY, self.drain)
            else:
                self.loop.call_soon_threadsafe(self.loop.call_later, DRAIN_DELAY, self.drain)
        except RuntimeError:  # the loop is closed: nobody is watching any more
            self._scheduled = False

    # ---- on the loop

    def drain(self) -> None:
        """Moves what the intake collected into the history and the viewers' queues."""
        with self._lock:
            events = list(self._inbox)
            self._inbox.clear()
            conns, self._inbox_conns = self._inbox_conns, []
            dropped, self._inbox_dropped = self._inbox_dropped, 0
            self._scheduled = False
        for conn, client, server in conns:
            if conn in self.connections or len(self.connections) >= MAX_CONNECTIONS_KEPT:
                continue
            text = json_text({"type": "connection", "conn": conn, "client": _endpoint(client),
                          "server": _endpoint(server)})
            self.connections[conn] = text
            for viewer in self.viewers:
                viewer.put_control(text)
        for text in events:
            self._add(text)
        self.dropped += dropped  # (the next `tick` tells the viewers: not a status per drain of a flood)

    def _add(self, text: str) -> None:
        self.events += 1
        self.history.append(text)
        self.history_bytes += len(text)
        s = self.settings
        while self.history and (len(self.history) > s.live_max_events or self.history_bytes > s.live_max_history_bytes):
            self.history_bytes -= len(self.history.popleft())
        for viewer in self.viewers:
            viewer.put_text(text)

    def status(self, viewer: Viewer | None = None) -> dict[str, Any]:
        """The `status` message (for one viewer: its own drops count too)."""
        packets = self.capture.packets if self.capture is not None else None
        dropped = self.dropped + (viewer.dropped if viewer is not None else 0)
        out: dict[str, Any] = {"type": "status", "state": self.state, "detail": self.detail, "packets": packets,
                               "events": self.events, "connections": len(self.connections), "dropped": dropped,
                               "source": dict(self.description)}
        if dropped:
            note = f"{dropped} events dropped (the viewer fell behind)"
            out["detail"] = f"{self.detail}; {note}" if self.detail else note
        return out

    def poke(self) -> None:
        for viewer in self.viewers:
            viewer.mark_due()

    def subscribe(self) -> Viewer:
        """A new viewer: the connections and recent events so far, then every new one."""
        s = self.settings
        viewer = Viewer(list(self.history), list(self.connections.values()), s.live_queue, s.live_max_history_bytes,
                        status=lambda v: json_text(self.status(v)))
        if self.ended:
            viewer.end()
        self.viewers.add(viewer)
        return viewer

    def unsubscribe(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)
        if not self.viewers:
            self.last_detached = time.monotonic()

    @property
    def ended(self) -> bool:
        return self.state in ("stopped", "error")

    @property
    def listen(self) -> str | None:
        return self.description.get("listen")

    def tick(self) -> None:
        """Called a few times a second: a status when the counts changed; follows the capture thread
        (ready, died)."""
        if self.ended:
            return
        counts = (self.events, self.capture.packets if self.capture is not None else 0, self.dropped)
        if counts != self._last_counts:
            self._last_counts = counts
            self.poke()
        capture = self.capture
        if capture is None or not self.started:
            return
        if self.state == "starting" and capture.ready.is_set():
            self.state = "capturing"
            self.detail = ""
            self.poke()
        if not capture.running and self._stopping is None:
            # tshark ended by itself (no permission, interface gone, killed).
            self.stop_soon("error" if capture.error else "stopped", capture.error or "the capture ended")

    def stop_soon(self, state: State = "stopped", detail: str = "") -> asyncio.Task:
        """Starts stopping (once); returns the task that does it."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop(state, detail))
        return self._stopping

    async def stop(self, state: State = "stopped", detail: str = "") -> None:
        await asyncio.shield(self.stop_soon(state, detail))

    async def _stop(self, state: State, detail: str) -> None:
        try:
            if self.capture is not None:
                await asyncio.to_thread(self.capture.stop)
                if self.capture.running:
                    state, detail = "error", "tshark did not stop in time"
            if self.proxy is not None:
                await self.proxy.close()
        except Exception as exc:  # stopping must finish whatever happens
            log.exception("stopping live source %s", self.id)
            state, detail = "error", f"stopping failed: {exc}"
        finally:
            await asyncio.sleep(0)  # let the capture thread's last hand-over run
            self.drain()
            if self.state != "error":
                self.state = state
                self.detail = detail or self.detail
            self.ended_at = time.monotonic()
            for viewer in self.viewers:
                viewer.end()


def _endpoint(address: tuple[str, int]) -> str:
    return format_address(str(address[0]), address[1])


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class LiveSources:
    """Every live source of the app; owned by the app's lifespan."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.sources: dict[str, LiveSource] = {}
        self._watcher: asyncio.Task | None = None

    async def start(self) -> None:
        self._watcher = asyncio.create_task(self._watch(), name="zmtplab-live-watcher")

    async def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        sources, self.sources = list(self.sources.values()), {}
        await asyncio.gather(*(s.stop("stopped", "the server is shutting down") for s in sources),
                             return_exceptions=True)

    @staticmethod
    def interfaces() -> list[str]:
        return list_interfaces()

    def get(self, source_id: str) -> LiveSource:
        """The source with this id; `LiveNotFound` otherwise."""
        source = self.sources.get(source_id)
        if source is None:
            raise LiveNotFound(f"no live source with id {source_id!r}")
        return source

    def running(self) -> int:
        return sum(1 for s in self.sources.values() if not s.ended)

    def _check_room(self) -> None:
        if self.running() >= self.settings.max_live_sources:
            raise TooManyLiveSources(f"the server runs at most {self.settings.max_live_sources} live sources at once; "
                                "stop one first")

    async def create_capture(self, interface: str, port: int) -> LiveSource:
        """Starts capturing `tcp port PORT` on an interface; waits (a while) until dumpcap captures."""
        try:
            check_interface(interface)
            check_port(port)
        except ValueError as exc:
            raise LiveError(f"{exc}; interfaces: {', '.join(list_interfaces())}" if "interface" in str(exc)
                            else str(exc)) from None
        self._check_room()
        source = LiveSource("capture", self.settings, asyncio.get_running_loop(),
                            {"kind": "capture", "interface": interface, "port": port})
        source.capture = LiveCapture(interface, port, source.sink, with_fields=True,
                                     on_connection=source.on_connection, max_held=self.settings.live_max_held)
        self.sources[source.id] = source
        try:
            await asyncio.to_thread(source.capture.start)
            source.started = True
            deadline = time.monotonic() + READY_TIMEOUT
            while not source.capture.ready.is_set() and source.capture.running and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            source.tick()
            if not source.capture.ready.is_set() and not source.capture.running:
                error = source.capture.error or "tshark ended before capturing"
                await source.stop("error", error)
                raise LiveUnavailable(error)
        except BaseException:
            self.sources.pop(source.id, None)
            await source.stop("error", "could not start")
            raise
        if source.state == "starting":
            source.detail = "waiting for dumpcap to start capturing"
        return source

    async def create_tap(self, target: str, listen_port: int) -> LiveSource:
        """Starts a tap proxy on the tap host (`listen_port` 0: any free port) forwarding to `target`."""
        s = self.settings
        host, port = check_tap_target(target, s)
        if not isinstance(listen_port, int) or isinstance(listen_port, bool) or not 0 <= listen_port < 65536:
            raise LiveError(f"not a TCP port: {listen_port!r}")
        listen_host = s.live_tap_host
        for other in self.sources.values():
            if other.kind == "tap" and not other.ended and other.proxy is not None and other.proxy.port == port \
                    and (_loopback(host) or host == listen_host):
                raise LiveError(f"{target} is another tap of this server; a tap cannot forward to a tap")
        if listen_port and listen_port == port and (_loopback(host) or host == listen_host):
            raise LiveError("the tap cannot listen on the port it forwards to")
        self._check_room()
        source = LiveSource("tap", s, asyncio.get_running_loop(),
                            {"kind": "tap", "target": _endpoint((host, port))})
        proxy = TapProxy((listen_host, listen_port), (host, port), source.sink, with_fields=True,
                         on_connection=source.on_connection, max_held=s.live_max_held, cpu_share=s.live_cpu_share)
        try:
            await proxy.start()
        except OSError as exc:
            raise LiveConflict(f"cannot listen on {_endpoint((listen_host, listen_port))}: "
                               f"{exc.strerror or exc}") from None
        source.proxy = proxy
        assert proxy.port is not None
        if proxy.port == port and (_loopback(host) or host == listen_host):
            await proxy.close()
            raise LiveError("the tap got the port it forwards to; choose a listen port")
        source.description["listen"] = _endpoint((listen_host, proxy.port))
        source.state = "capturing"
        self.sources[source.id] = source
        return source

    async def end(self, source_id: str) -> None:
        source = self.sources.pop(source_id, None)
        if source is not None:
            await source.stop("stopped", "stopped on request")

    async def _watch(self) -> None:
        interval = min(0.25, self.settings.reap_interval)
        while True:
            await asyncio.sleep(interval)
            try:
                self.reap()
            except Exception:  # the watcher must survive anything
                log.exception("live watcher pass failed")

    def reap(self) -> None:
        """Follows captures; stops abandoned and expired sources; forgets ended ones nobody watches."""
        now = time.monotonic()
        s = self.settings
        for source in list(self.sources.values()):
            source.tick()
            if not source.ended:
                if now - source.created > s.live_max_lifetime:
                    source.stop_soon("stopped", f"stopped after its maximum lifetime of {s.live_max_lifetime:g} s")
                elif not source.viewers and now - source.last_detached > s.live_grace:
                    source.stop_soon("stopped", f"stopped: no viewer for {s.live_grace:g} s")
            elif source.ended_at is not None and not source.viewers \
                    and now - max(source.ended_at, source.last_detached) > s.live_grace:
                self.sources.pop(source.id, None)
