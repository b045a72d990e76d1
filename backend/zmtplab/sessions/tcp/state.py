"""`TcpState`: what the parts of a real session share: its session, limits and plan, its nodes, the clock (seconds
since the start), the tasks it runs, the topology's connections so far, and whether it closed."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from ..limits import SessionLimits
from ..session import Session
from .nodes import RealNode
from .plan import Plan


@dataclass
class TcpState:
    """See the module docstring. `playing`: the taps let bytes through (paused, they hold them)."""

    session: Session
    limits: SessionLimits
    plan: Plan
    playing: bool = True
    nodes: dict[str, RealNode] = field(default_factory=dict)
    conns: list[dict[str, Any]] = field(default_factory=list)  # every connection so far: conn, link, client, server
    tasks: set[asyncio.Task] = field(default_factory=set)
    killed: set[str] = field(default_factory=set)  # the nodes a `kill` fault killed
    closed: bool = False
    t0: float = 0.0  # the loop's time at the start

    def now(self) -> float:
        """Seconds since the session started."""
        return asyncio.get_running_loop().time() - self.t0

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
        """Runs `coro` as one of the session's tasks (cancelled when it closes)."""
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def mark(self, what: str, **data: Any) -> None:
        """A `link` log entry, as the simulation writes them: the page marks these in its sequence."""
        self.session.log({"kind": "link", "what": what, **data, "t": round(self.now(), 6)})
