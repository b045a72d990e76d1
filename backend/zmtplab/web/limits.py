"""Small building blocks of the server's limits: who a client is, token buckets, abuse windows, which
stored things to evict.

Every limit itself is a setting (see `settings.Settings`); this module only holds the
mechanics shared by the routes that enforce them.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TypeVar

from starlette.requests import HTTPConnection

T = TypeVar("T")


def evictions(oldest_first: Iterable[T], *, count: int, total: int, max_count: int, max_bytes: int,
              size: Callable[[T], int]) -> list[T]:
    """Which of the deletable things in `oldest_first` to delete, oldest first, so that what is stored
    (`count` things, `total` octets, the undeletable ones included) fits within `max_count` and `max_bytes`."""
    out = []
    for item in oldest_first:
        if count <= max_count and total <= max_bytes:
            break
        out.append(item)
        count -= 1
        total -= size(item)
    return out


def client_address(conn: HTTPConnection) -> str:
    """The address a request or websocket comes from (what per-client limits count by).

    Behind a reverse proxy run uvicorn with `--proxy-headers --forwarded-allow-ips=...`
    so that this is the browser's address, not the proxy's.
    """
    client = conn.client
    return client.host if client is not None and client.host else "unknown"


class TokenBucket:
    """`rate` tokens a second, at most `burst` saved up; `take()` says whether one was there."""

    def __init__(self, rate: float, burst: int, *, clock=time.monotonic) -> None:
        self.rate = float(rate)
        self.burst = float(burst)
        self.tokens = float(burst)
        self._clock = clock
        self._last = clock()

    def take(self, n: float = 1.0) -> bool:
        now = self._clock()
        self.tokens = min(self.burst, self.tokens + (now - self._last) * self.rate)
        self._last = now
        if self.tokens >= n:
            self.tokens -= n
            return True
        return False


class AbuseWindow:
    """Counts refusals in the last `window` seconds; `add()` says when they pass `limit`."""

    def __init__(self, limit: int, window: float, *, clock=time.monotonic) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._times: deque[float] = deque(maxlen=limit + 1)

    def add(self) -> bool:
        """Records one refusal; True when more than `limit` happened within the window."""
        now = self._clock()
        self._times.append(now)
        while self._times and now - self._times[0] > self.window:
            self._times.popleft()
        return len(self._times) > self.limit
