"""The websocket pump: what sends a socket's queued messages, batched or one by one, then closes it.

`BatchClock` is the one timer the batching sockets of an event loop share.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref

from starlette.websockets import WebSocket

from .sessions import Subscriber, dumps

BATCH_MOST = 512  # messages in one websocket message (with ?batch=1)
BATCH_WINDOW = 0.025  # a batching socket that sent less than this ago waits for the next tick to send again


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
    return dumps({"type": "error", "detail": detail})


async def pump(websocket: WebSocket, sub: Subscriber, batch: bool) -> None:
    """Sends what `sub` queues until it ends, then closes the socket (1013 when it fell behind, else 1000).

    With `batch`, a burst goes as one websocket message holding a JSON array of messages, the due state
    after the events it counts."""
    most = BATCH_MOST if batch else 1
    clock = batch_clock()
    loop = asyncio.get_running_loop()
    sent_at = loop.time() - BATCH_WINDOW
    while True:
        texts = await sub.take(most)
        if texts is None:
            if sub.overflowed:
                with contextlib.suppress(Exception):
                    await websocket.send_text(error_text("this socket fell too far behind; reconnect"))
            await websocket.close(code=1013 if sub.overflowed else 1000)
            return
        if batch:
            if len(texts) < most and loop.time() - sent_at < BATCH_WINDOW:
                # Sent a moment ago: let the rest of a burst gather, one websocket message for all of it.
                # (After a quiet window, send at once: a page sees its first element without delay, and
                # a busy server, whose turns of the event loop outlast the window, sends one turn after
                # the events instead of waiting for the next tick's turn.)
                await clock.tick()
                texts += sub.take_nowait(most - len(texts))
            state = sub.take_state()  # (after the events it counts)
            if state is not None:
                texts.append(state)
        elif not texts:  # only the state is due
            state = sub.take_state()
            texts = [state] if state is not None else []
        if texts:
            await websocket.send_text(texts[0] if len(texts) == 1 else "[" + ",".join(texts) + "]")
            sent_at = loop.time()
