"""What keeps text searches over a capture safe: a limit on the searches one client runs at once, and
the cancellation of a search whose client went away.

(How long one search may take is `Settings.search_max_seconds`; the search itself stops there, see
`eventstore.SearchLimits`.)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

from starlette.requests import Request

T = TypeVar("T")


class ClientSlots:
    """At most `limit` things at once per client address (event loop only: no locking needed).

    A slot whose client went away is `ending` (its work was told to stop, and stops soon): a new request of
    that client waits for it to end rather than being refused, as a client that gives up one search for the
    next (typing on) never runs more than `limit` at once, however long a busy machine takes to stop one."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.busy: dict[str, int] = {}
        self.ending: dict[str, int] = {}
        self._freed: dict[str, asyncio.Event] = {}

    def take(self, client: str) -> bool:
        """Takes a slot; False when the client already holds `limit` of them."""
        n = self.busy.get(client, 0)
        if n >= self.limit:
            return False
        self.busy[client] = n + 1
        return True

    async def take_after_ending(self, client: str) -> bool:
        """Takes a slot, first waiting for the client's ending ones to end while it holds `limit`; False when
        the client holds `limit` slots and none of them is ending."""
        while not self.take(client):
            if not self.ending.get(client):
                return False
            freed = self._freed.setdefault(client, asyncio.Event())
            await freed.wait()
        return True

    def end(self, client: str) -> None:
        """Says that one of the client's slots is ending (its client went away)."""
        self.ending[client] = self.ending.get(client, 0) + 1

    def release(self, client: str, ended: bool = False) -> None:
        """Gives back a slot `take` gave (`ended`: one that `end` said was ending)."""
        n = self.busy.get(client, 0) - 1
        if n > 0:
            self.busy[client] = n
        else:
            self.busy.pop(client, None)
        if ended:
            left = self.ending.get(client, 0) - 1
            if left > 0:
                self.ending[client] = left
            else:
                self.ending.pop(client, None)
        if (freed := self._freed.pop(client, None)) is not None:
            freed.set()


async def run_until_disconnect(request: Request, work: Callable[[threading.Event], T], poll: float = 0.1,
                               on_disconnect: Callable[[], None] | None = None) -> tuple[T | None, bool]:
    """Runs `work(cancel)` in a worker thread while watching the client: when it disconnects, `cancel`
    is set (the work is expected to stop soon after) and `on_disconnect` called. Returns (the work's result,
    False), or (None, True) when the client went away; the work has ended either way."""
    cancel = threading.Event()
    task = asyncio.ensure_future(asyncio.to_thread(work, cancel))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll)
            if done:
                return task.result(), False
            if await request.is_disconnected():
                cancel.set()
                if on_disconnect is not None:
                    on_disconnect()
                await asyncio.wait({task})
                if not task.cancelled():
                    task.exception()  # (retrieved: a cancelled search ends with SearchCancelled on purpose)
                return None, True
    except asyncio.CancelledError:
        cancel.set()  # the server is stopping, or the request task was cancelled
        raise
