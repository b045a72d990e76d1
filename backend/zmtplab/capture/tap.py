"""A tap proxy: forwards TCP connections to a real endpoint and dissects both directions as they pass.

Needs no capture privileges: the bytes are the proxy's own. Every accepted connection
gets a connection id ("0", "1", ...); `c2s` is what the connecting client sent.

The proxy forwards on the event loop and dissects in a worker thread of its own: each direction hands
its bytes over a read at a time and reads on once they are dissected, so a peer that sends faster than
they can be dissected is slowed down, never the loop (nor the server's other clients), and nothing waits
in between. With `max_held`, each direction's dissector holds at most that many octets of an element not
yet complete (`engine.StreamDecoder`): a frame that declares 2^63 octets is reported and skipped as it
streams; with `cpu_share`, the dissection takes at most that share of a core (it rests in between, the
GIL free for the loop). `sink` is called from the worker thread (and, for an unreachable target, from the
loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..engine.dissector import ConnectionDissector
from ..engine.notation import parse_endpoint as parse_any_endpoint

log = logging.getLogger(__name__)
EventSink = Callable[[dict[str, Any]], None]
ConnectionSink = Callable[[str, tuple[str, int], tuple[str, int]], None]
READ_SIZE = 65536
DISSECT_SLICE = 2048  # octets dissected at once: the thread's turns (and rests) stay short


def parse_endpoint(text: str, *, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """(host, port) from `tcp://host:port`, `host:port` or `port`; raises ValueError when malformed."""
    try:
        parsed = parse_any_endpoint(text, bind=True, default_host=default_host)
    except ValueError:
        parsed = None
    if parsed is None or parsed.scheme not in ("", "tcp") or not parsed.port:
        raise ValueError(f"not a TCP endpoint: {text!r} (want host:port)")
    return parsed.host, parsed.port


class TapProxy:
    """Listens on `listen`, forwards each connection to `target`, and reports ZMTP events to `sink`
    (and each accepted connection's id, client and target address to `on_connection`)."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int], sink: EventSink,
                 *, with_fields: bool = True, connect_timeout: float = 5.0,
                 on_connection: ConnectionSink | None = None, max_held: int | None = None,
                 cpu_share: float | None = None) -> None:
        self.listen = listen
        self.target = target
        self.sink = sink
        self.on_connection = on_connection
        self.with_fields = with_fields
        self.connect_timeout = connect_timeout
        self.max_held = max_held
        self.cpu_share = cpu_share  # the most of a core its dissection may take (None: all it wants)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zmtplab-tap")
        self._ids = itertools.count()
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self.port: int | None = None

    async def start(self) -> None:
        """Starts listening (the bound port is in `self.port`)."""
        self._server = await asyncio.start_server(self._accept, *self.listen)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Stops listening and closes every forwarded connection."""
        if self._server is not None:
            self._server.close()
        # Connections first: from Python 3.12 on, wait_closed() waits for them to end.
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            await self._server.wait_closed()
        await asyncio.to_thread(self._worker.shutdown, wait=True)  # (the connections' last reports)

    async def serve_forever(self) -> None:
        """Runs until cancelled."""
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._forward(reader, writer)
        except asyncio.CancelledError:
            # close() cancels us; ending normally keeps asyncio's stream callback from logging
            # the cancelled handler as an error.
            writer.close()
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = str(next(self._ids))
        dissector = ConnectionDissector(max_held=self.max_held)
        client = writer.get_extra_info("peername")
        if self.on_connection is not None:
            peer: tuple[str, int] = ("", 0)
            if isinstance(client, tuple) and len(client) >= 2:
                peer = (client[0], client[1])
            self.on_connection(conn, peer, self.target)
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*self.target),
                                                          self.connect_timeout)
        except (TimeoutError, OSError) as exc:
            log.warning("tap %s: cannot reach %s:%s: %s", conn, *self.target, exc)
            self._report(conn, "c2s", [], note=f"target {self.target[0]}:{self.target[1]} unreachable: {exc}")
            writer.close()
            return
        log.info("tap %s: %s -> %s:%s", conn, client, *self.target)
        try:
            await asyncio.gather(
                self._pump(conn, "c2s", reader, up_writer, dissector),
                self._pump(conn, "s2c", up_reader, writer, dissector),
            )
        finally:
            # In the worker, after what it was given (a read cancelled meanwhile may still be dissected there).
            self._worker.submit(lambda: self._report(conn, None, dissector.close()))
            for w in (writer, up_writer):
                w.close()

    async def _pump(self, conn: str, direction: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    dissector: ConnectionDissector) -> None:
        loop = asyncio.get_running_loop()

        share = self.cpu_share

        def dissect(data: bytes) -> None:
            for start in range(0, len(data), DISSECT_SLICE):  # (one read: one write, one resync candidate)
                began = time.thread_time()
                piece = data[start:start + DISSECT_SLICE]
                self._report(conn, direction, dissector.receive_data(direction, piece, boundary=not start))
                if share is not None:
                    # Beyond its share of a core the dissection rests (the GIL free for the loop's other work): a
                    # flood of tiny frames through one tap slows that tap, not the server.
                    spent = time.thread_time() - began
                    if spent > 0.0005:
                        time.sleep(spent * (1 - share) / share)

        try:
            while data := await reader.read(READ_SIZE):
                writer.write(data)
                await loop.run_in_executor(self._worker, dissect, data)
                await writer.drain()
        except (ConnectionError, OSError) as exc:
            log.info("tap %s %s: %s", conn, direction, exc)
        finally:
            # Half-close so the other side sees the end of this direction, as TCP would.
            with contextlib.suppress(OSError, RuntimeError):
                if writer.can_write_eof():
                    writer.write_eof()

    def _report(self, conn: str, direction: str | None, events: list, *, note: str | None = None) -> None:
        now = time.time()
        if note is not None:
            self.sink({"conn": conn, "dir": direction or "c2s", "offset": 0, "length": 0, "kind": "expert",
                       "severity": "error", "text": note, "ts": now, **({"fields": []} if self.with_fields else {})})
        for d, event in events:
            item = event.to_dict(with_fields=self.with_fields)
            item["conn"] = conn
            item["dir"] = d
            item["ts"] = now
            self.sink(item)
