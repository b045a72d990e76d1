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
    """At most `limit` things at once per client address (event loop only: no locking needed)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.busy: dict[str, int] = {}

    def take(self, client: str) -> bool:
        """Takes a slot; False when the client already holds `limit` of them."""
        n = self.busy.get(client, 0)
        if n >= self.limit:
            return False
        self.busy[client] = n + 1
        return True

    def release(self, client: str) -> None:
        """Gives back a slot `take` gave."""
        n = self.busy.get(client, 0) - 1
        if n > 0:
            self.busy[client] = n
        else:
            self.busy.pop(client, None)


async def run_until_disconnect(request: Request, work: Callable[[threading.Event], T],
                               poll: float = 0.1) -> tuple[T | None, bool]:
    """Runs `work(cancel)` in a worker thread while watching the client: when it disconnects, `cancel`
    is set (the work is expected to stop soon after). Returns (the work's result, False), or
    (None, True) when the client went away; the work has ended either way."""
    cancel = threading.Event()
    task = asyncio.ensure_future(asyncio.to_thread(work, cancel))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll)
            if done:
                return task.result(), False
            if await request.is_disconnected():
                cancel.set()
                await asyncio.wait({task})
                if not task.cancelled():
                    task.exception()  # (retrieved: a cancelled search ends with SearchCancelled on purpose)
                return None, True
    except asyncio.CancelledError:
        cancel.set()  # the server is stopping, or the request task was cancelled
        raise
