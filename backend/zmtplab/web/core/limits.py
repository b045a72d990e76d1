"""Small building blocks of the server's limits: who a client is, token buckets, abuse windows, which
stored things to evict, and slots of work shared fairly between addresses.

Every limit itself is a setting (see `settings.Settings`); this module only holds the
mechanics shared by the routes that enforce them.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import itertools
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TypeVar

from starlette.requests import HTTPConnection

T = TypeVar("T")
FAIR_SHARES = 6  # an address holding no more than 1/6 of what a store may keep is never evicted for another's


def evictions(oldest_first: Iterable[T], *, count: int, total: int, max_count: int, max_bytes: int,
              size: Callable[[T], int], owner: Callable[[T], str] | None = None,
              holdings: dict[str, tuple[int, int]] | None = None) -> list[T]:
    """Which of the deletable things in `oldest_first` to delete, in order, so that what is stored (`count`
    things, `total` octets, the undeletable ones included) fits within `max_count` and `max_bytes`.

    Without `owner`, the oldest go first. With it (and `holdings`: each owner's count and octets stored), they go
    from the owner that holds the most of what is over (things or octets), its oldest first, as long as that
    owner holds more than its fair share (1/`FAIR_SHARES` of the limit); only when nobody does, the oldest
    of all. So a few addresses that fill a store evict their own things, not another address's."""
    items = list(oldest_first)
    held = {k: list(v) for k, v in (holdings or {}).items()}
    out = []
    while items and (count > max_count or total > max_bytes):
        pick = items[0]
        if owner is not None:
            by_bytes = total > max_bytes
            axis, share = (1, max_bytes / FAIR_SHARES) if by_bytes else (0, max_count / FAIR_SHARES)
            heavy = max({owner(i) for i in items}, key=lambda o: held.get(o, [0, 0])[axis])
            if held.get(heavy, [0, 0])[axis] > share:
                pick = next(i for i in items if owner(i) == heavy)
        items.remove(pick)
        out.append(pick)
        count -= 1
        total -= size(pick)
        if owner is not None and owner(pick) in held:
            held[owner(pick)][0] -= 1
            held[owner(pick)][1] -= size(pick)
    return out


def client_address(conn: HTTPConnection) -> str:
    """Who a request or websocket comes from, as every per-client limit counts: its address, an IPv6 address by
    its /64 (`address_key`).

    Behind a reverse proxy run uvicorn with `--proxy-headers --forwarded-allow-ips=...`
    so that this is the browser's address, not the proxy's.
    """
    client = conn.client
    return address_key(client.host) if client is not None and client.host else "unknown"


def address_key(address: str) -> str:
    """What per-address limits count by: the address itself, or an IPv6 address's /64 (one subscriber's
    network hands out any number of addresses within it)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class TokenBucket:
    """`rate` tokens a second, at most `burst` saved up; `take()` says whether one was there."""

    def __init__(self, rate: float, burst: int, *, clock=time.monotonic) -> None:
        self.rate = float(rate)
        self.burst = float(burst)
        self.tokens = float(burst)
        self._clock = clock
        self._last = clock()

    def ready(self, n: float = 1.0) -> bool:
        """Whether `take(n)` would succeed now (nothing is taken)."""
        self._refill()
        return self.tokens >= n

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.burst, self.tokens + (now - self._last) * self.rate)
        self._last = now

    def take(self, n: float = 1.0) -> bool:
        self._refill()
        if self.tokens >= n:
            self.tokens -= n
            return True
        return False


class FairSlots:
    """`size` slots of work (a pool's processes) taken in turn by key (a client address): when one frees, the
    waiting key that holds the fewest goes next, and among those the one whose last turn is the oldest (a key
    that never had one first), then whoever waited longest. One address's queue of uploads then delays
    another's by one task's turn at most, however long its queue."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.used: Counter[str] = Counter()
        self._waiting: list[tuple[int, str, asyncio.Future[None]]] = []
        self._order = itertools.count(1)
        self._turns: dict[str, int] = {}  # key -> the order of its last turn

    @property
    def busy(self) -> int:
        return sum(self.used.values())

    @contextlib.asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        """Holds one slot for `key` while the block runs (waiting for it first)."""
        if self.busy >= self.size or self._waiting:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            entry = (next(self._order), key, future)
            self._waiting.append(entry)
            self._grant()
            try:
                await future
            except BaseException:
                if entry in self._waiting:
                    self._waiting.remove(entry)
                elif future.done() and not future.cancelled():  # granted meanwhile: give it back
                    self._release(key)
                raise
        else:
            self.used[key] += 1
            self._turns[key] = next(self._order)
        try:
            yield
        finally:
            self._release(key)

    def _release(self, key: str) -> None:
        self.used[key] -= 1
        if self.used[key] <= 0:
            del self.used[key]
        if len(self._turns) > 4096:  # (forget the turns of addresses that hold and wait for nothing)
            keep = set(self.used) | {e[1] for e in self._waiting}
            self._turns = {k: v for k, v in self._turns.items() if k in keep}
        self._grant()

    def _grant(self) -> None:
        while self._waiting and self.busy < self.size:
            entry = min(self._waiting, key=lambda e: (self.used[e[1]], self._turns.get(e[1], 0), e[0]))
            self._waiting.remove(entry)
            _, key, future = entry
            if future.done():  # (cancelled while waiting)
                continue
            self.used[key] += 1
            self._turns[key] = next(self._order)
            future.set_result(None)


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
