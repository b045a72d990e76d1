"""Child processes that end with their parent, however the parent ends (SIGKILL included).

Linux's `prctl(PR_SET_PDEATHSIG)` asks the kernel to signal a process when the thread that
started it exits: nothing to clean up at the next start, no pidfile, and it works when the parent
dies without running any code. It is set in the child (between fork and exec for a program, at
start-up for a worker process), which then checks that the parent is still the one it knew: a
parent that died before the call would otherwise never be noticed. Elsewhere it does nothing.

The signal is tied to the *thread* that started the child: start children from a thread that lives
as long as they should (an event loop's thread, the live capture's own thread).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int, sig: int = signal.SIGKILL) -> None:
    """In a child of process `parent`: receive `sig` when the parent's starting thread exits; exit now if the
    parent is already gone."""
    _set_parent_death_signal(_prctl(), sig, parent)


def die_with_this_process(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` for `subprocess` and asyncio's `create_subprocess_exec`: the program gets `sig` when
    this process (the thread starting it) ends."""
    parent = os.getpid()
    prctl = _prctl()  # looked up here: between fork and exec the child should not load anything

    def preexec() -> None:
        _set_parent_death_signal(prctl, sig, parent)

    return preexec


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(None, use_errno=True).prctl


def _set_parent_death_signal(prctl: Callable[..., int] | None, sig: int, parent: int) -> None:
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)
