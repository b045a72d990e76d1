"""The websocket pump and its outbox: how every socket of the app (a session's, a live viewer's, a class's)
queues what it sends, what gives when a browser does not keep up, and the one loop that sends it.

An `Outbox` holds one socket's messages, each already JSON text, in order. Past its `limit` (a count, and with
`max_bytes` the octets of the texts queued) its overflow policy decides, named here once for the three kinds
of socket:

- `"close"` (a session): the socket is given up: what is queued is cleared, and it closes with 1013 after an
  error saying so. A session's page must see every event or reconnect and get them all again.
- `"drop-oldest"` (a live viewer): the oldest queued message goes (also beyond `max_bytes`), counted in
  `dropped`, and the due message (the viewer's `status`, which reports the count) is due again.
- `"latest"` (a class): what is queued is stale: it is cleared and refilled with the current state and
  the new message.

A due message (a session's `state`, a live viewer's `status`) is made when it is sent, after what is queued,
once for any number of `mark_due` calls. `pump` sends an outbox until it ends, then closes the socket.
`BatchClock` is the one timer the batching sockets of an event loop share.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from typing import Literal

import orjson
from starlette.websockets import WebSocket, WebSocketState

from ..sessions.session import BACKLOG_BYTES as SESSION_BACKLOG_BYTES

Overflow = Literal["close", "drop-oldest", "latest"]
Mode = Literal["one", "array", "burst"]

BATCH_MOST = 512  # messages in one websocket message (with ?batch=1)
BATCH_WINDOW = 0.025  # a batching socket that sent less than this ago waits for the next tick to send again
BACKLOG_STEP = 1024  # most backlog messages taken at once (a backlog is read as the socket sends it)
BACKLOG_BYTES = SESSION_BACKLOG_BYTES  # octets of backlog messages after which a take stops reading it
SLICE = 0.005  # seconds a sending pump works before it lets the event loop's other work run

Backlog = Iterable[str] | Callable[[int], list[str]]
"""What a socket was given on connect: texts, or a function that gives up to n more of them (at least one while
there are more; none at the end), read as the socket sends them, so a long history is never copied whole into a
queue."""

class BatchClock:
    """Ticks every `period` seconds while some socket waits for one: a batching socket that sent less than
    a period ago sends again at the next tick.

    One timer for all of them instead of one per socket and batch, and the sockets' sends come
    together rather than between other work (a busy server keeps more of each in its caches); a
    message waits for the next tick, `period` at most."""

    def __init__(self, loop: asyncio.AbstractEventLoop, period: float) -> None:
        self.loop = loop
        self.period = period
        self.waiters: list[asyncio.Future[None]] = []
        self.timer: asyncio.TimerHandle | None = None

    async def tick(self) -> None:
        """Returns at the next tick."""
        waiter = self.loop.create_future()
        self.waiters.append(waiter)
        if self.timer is None:
            self.timer = self.loop.call_at(self._next(), self._fire)
        await waiter

    def _next(self) -> float:
        # Ticks fall on multiples of the period, so sockets that start waiting at different times still
        # send together.
        now = self.loop.time()
        return (now // self.period + 1) * self.period

    def _fire(self) -> None:
        self.timer = None
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


_CLOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BatchClock] = weakref.WeakKeyDictionary()


def batch_clock() -> BatchClock:
    """The running loop's `BatchClock`."""
    loop = asyncio.get_running_loop()
    clock = _CLOCKS.get(loop)
    if clock is None:
        clock = _CLOCKS[loop] = BatchClock(loop, BATCH_WINDOW)
    return clock


def error_text(detail: str) -> str:
    """An `{"type": "error", "detail"}` message."""
    return orjson.dumps({"type": "error", "detail": detail}).decode()


FELL_BEHIND = error_text("this socket fell too far behind; reconnect")


class Outbox:
    """One websocket's outgoing messages, each JSON text (see the module docstring for the overflow policies).

    `control` messages (a live source's connection records) go first and are never dropped, then the
    `backlog` the socket was given on connect (outside the limit, read as it is sent), then what was queued.
    `end(code)`: no more messages, the socket closes with `code` once the queue is sent; with `linger`,
    messages put after `end` are still sent, and a due message is sent last (a live source's final `status`)."""

    def __init__(self, limit: int, overflow: Overflow, *, max_bytes: int | None = None,
                 due: Callable[[], str] | None = None, linger: bool = False,
                 control: Iterable[str] = (), backlog: Backlog = ()) -> None:
        self.items: deque[str] = deque()
        self.control: deque[str] = deque(control)
        self.more: Callable[[int], list[str]] | None = _backlog_reader(backlog)
        self.limit = limit
        self.overflow = overflow
        self.max_bytes = max_bytes
        self.queued_bytes = 0  # of `items`, counted when `max_bytes` is set
        self.make_due = due
        self.linger = linger
        self.due = False
        self.dropped = 0
        self.overflowed = False  # the "close" policy gave the socket up
        self.ended = False
        self.close_code = 1000
        self._ready = asyncio.Event()
        if self.control or self.more is not None:
            self._ready.set()

    def put_text(self, text: str, latest: str | None = None) -> None:
        """Queues `text`; `latest` is the current state, what the "latest" policy keeps when it overflows."""
        if self.ended and not self.linger:
            return
        items = self.items
        if self.max_bytes is not None:
            self.queued_bytes += len(text)
            if self.queued_bytes > self.max_bytes or len(items) >= self.limit:
                self._overflow(text, latest)
                return
        elif len(items) >= self.limit:
            self._overflow(text, latest)
            return
        items.append(text)
        self._ready.set()

    def _overflow(self, text: str, latest: str | None) -> None:
        """`text` does not fit (its octets are counted in `queued_bytes` already, with `max_bytes`)."""
        items = self.items
        policy = self.overflow
        if policy == "drop-oldest":
            items.append(text)
            while len(items) > self.limit or (self.max_bytes is not None and self.queued_bytes > self.max_bytes
                                               and len(items) > 1):
                gone = items.popleft()
                if self.max_bytes is not None:
                    self.queued_bytes -= len(gone)
                self.dropped += 1
                self.due = True
        elif policy == "latest":
            items.clear()
            if latest is not None:
                items.append(latest)
            items.append(text)
            if self.max_bytes is not None:
                self.queued_bytes = sum(map(len, items))
        else:  # "close": a browser that does not read its socket loses it rather than the server's memory
            self.overflowed = True
            items.clear()
            self.queued_bytes = 0
            self.more = None
            self.end(1013)
            return
        self._ready.set()

    def put_control(self, text: str) -> None:
        """Queues `text` before everything else; it is never dropped."""
        self.control.append(text)
        self._ready.set()

    def mark_due(self) -> None:
        """The due message is due: sent after what is queued, made when it is sent."""
        if self.make_due is None or (self.ended and not self.linger):
            return
        self.due = True
        self._ready.set()

    def end(self, code: int = 1000) -> None:
        """No more messages: the socket closes with `code` once what is queued has been sent."""
        if self.ended:
            return
        self.ended = True
        self.close_code = code
        if self.linger and self.make_due is not None:
            self.due = True
        self._ready.set()

    def take_due(self) -> str | None:
        """The due message, made now, when one is due and nothing is queued before it."""
        if not self.due or self.items or self.make_due is None:
            return None
        self.due = False
        return self.make_due()

    async def take(self, most: int) -> list[str] | None:
        """Waits for messages (or a due one) and returns those queued (at most `most`; none when only the due
        message is); None once ended and sent."""
        while not self.items and not self.control and self.more is None:
            if self.due and (self.linger or not self.ended):
                return []
            if self.ended:
                return None
            self._ready.clear()
            await self._ready.wait()
        return self.take_nowait(most)

    def take_nowait(self, most: int = sys.maxsize) -> list[str]:
        """What is queued now (at most `most`), without waiting."""
        items = self.items
        if self.control or self.more is not None:
            out = [*self.control]
            self.control.clear()
            taken = 0
            while self.more is not None and len(out) < most and taken < BACKLOG_BYTES:
                got = self.more(min(most - len(out), BACKLOG_STEP))
                if not got:
                    self.more = None
                out.extend(got)
                taken += sum(map(len, got))
            if self.more is None and len(out) < most:
                out.extend(self.take_nowait(most - len(out)))
            elif self.more is not None:
                self._ready.set()  # (more of the backlog to send)
            return out
        if len(items) <= most:
            out = list(items)
            items.clear()
            self.queued_bytes = 0
            return out
        out = [items.popleft() for _ in range(most)]
        if self.max_bytes is not None:
            self.queued_bytes -= sum(len(t) for t in out)
        return out


def _backlog_reader(backlog: Backlog) -> Callable[[int], list[str]] | None:
    """`backlog` as a function giving up to n more texts (None when there are none at all)."""
    if callable(backlog):
        return backlog
    texts = deque(backlog)
    if not texts:
        return None

    def more(n: int) -> list[str]:
        return [texts.popleft() for _ in range(min(n, len(texts)))]

    return more


async def pump(websocket: WebSocket, outbox: Outbox, mode: Mode = "one") -> None:
    """Sends what `outbox` queues until it ends, then closes the socket with its close code (after an error
    saying so when it fell behind).

    `mode`: `"one"` message a websocket message; `"array"`, a burst as one websocket message holding a JSON
    array of messages (the due one after those it counts); `"burst"`, all that is queued taken at once, then
    sent a websocket message each."""
    most = BATCH_MOST if mode == "array" else 1 if mode == "one" else sys.maxsize
    batch = mode == "array"
    clock = batch_clock()
    loop = asyncio.get_running_loop()
    sent_at = loop.time() - BATCH_WINDOW
    worked = loop.time()  # when this pump last let the loop's other work run
    while True:
        texts = await outbox.take(most)
        if texts is None:
            if outbox.overflowed:
                with contextlib.suppress(Exception):
                    await websocket.send_text(FELL_BEHIND)
            if websocket.client_state == WebSocketState.CONNECTED:
                with contextlib.suppress(Exception):
                    await websocket.close(code=outbox.close_code)
            return
        if batch:
            if len(texts) < most and loop.time() - sent_at < BATCH_WINDOW:
                # Sent a moment ago: let the rest of a burst gather, one websocket message for all of it.
                # (After a quiet window, send at once: a page sees its first element without delay, and
                # a busy server, whose turns of the event loop outlast the window, sends one turn after
                # the events instead of waiting for the next tick's turn.)
                await clock.tick()
                texts += outbox.take_nowait(most - len(texts))
            due = outbox.take_due()  # (after the messages it counts)
            if due is not None:
                texts.append(due)
            if texts:
                await websocket.send_text(texts[0] if len(texts) == 1 else "[" + ",".join(texts) + "]")
                # What comes within the window goes at the next tick: wait for it here, where the messages
                # queued meanwhile wake nobody (waiting for them, a busy socket woke for the first, then
                # again at the tick). At the tick, whatever is queued goes at once; a quiet socket then
                # waits for its next message, which goes at once.
                await clock.tick()
                sent_at = loop.time() - BATCH_WINDOW
            continue
        if not texts:  # only the due message is
            due = outbox.take_due()
            texts = [due] if due is not None else []
        for text in texts:
            await websocket.send_text(text)
            if loop.time() - worked > SLICE:
                # A send that does not block never returns to the loop (nor does `take` while messages wait): a
                # burst of thousands of messages to a fast reader would hold everyone else's requests until it
                # is over.
                await asyncio.sleep(0)
                worked = loop.time()
