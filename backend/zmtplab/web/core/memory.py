"""Giving memory back to the system once a crowd has gone (a lecture hall's 1,000 sockets, say).

CPython keeps freed objects in its own arenas and glibc keeps freed heap at the top of its arenas, so a
server's RSS stays at its peak after the connections that needed it are gone. `release_soon()` runs, a
moment later (once for any number of calls meanwhile), a full garbage collection and glibc's
`malloc_trim(0)`, which hands the free pages back; elsewhere (no glibc) only the collection runs.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import weakref
from collections.abc import Callable

RELEASE_DELAY = 2.0  # seconds: the sockets of a crowd that leaves together are gone by then


def _find_malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_malloc_trim = _find_malloc_trim()
_pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.TimerHandle] = weakref.WeakKeyDictionary()


def release() -> None:
    """Collects garbage, then returns the free heap to the system (glibc only)."""
    gc.collect()
    if _malloc_trim is not None:
        _malloc_trim(0)


def release_soon(delay: float = RELEASE_DELAY) -> None:
    """`release()` in `delay` seconds on the running loop, unless one is already due (the trim in a worker
    thread: glibc walks its heap meanwhile, tens of milliseconds after a big session, and needs no GIL)."""
    loop = asyncio.get_running_loop()
    if loop in _pending:
        return

    def run() -> None:
        _pending.pop(loop, None)
        gc.collect()
        if _malloc_trim is not None:
            loop.run_in_executor(None, _malloc_trim, 0)

    _pending[loop] = loop.call_later(delay, run)
