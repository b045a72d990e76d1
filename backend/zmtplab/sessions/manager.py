"""`SessionManager`: every session of a server, created with the runtime its mode asks for (`runtime_factory`:
`simulated.SimulatedRuntime` or `tcp.TcpRuntime`), ended when idle or abandoned; the web app's lifespan owns one."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable

from .limits import SessionLimits
from .session import Runtime, Session, SessionConfigError, SessionError, SessionNotFound, TooManySessions
from .setup import SessionSetup
from .simulated import SimulatedRuntime
from .tcp import TcpRuntime

log = logging.getLogger(__name__)


class SessionManager:
    """Every session of this server; owned by the app's lifespan."""

    def __init__(self, limits: SessionLimits, on_end: Callable[[], None] | None = None) -> None:
        self.limits = limits
        self.on_end = on_end  # called after a session ended (the web app gives the memory back to the system)
        self.sessions: dict[str, Session] = {}

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        sessions, self.sessions = list(self.sessions.values()), {}
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)

    def count_for(self, client: str) -> int:
        """Sessions this client address runs."""
        return sum(1 for s in self.sessions.values() if s.client == client and not s.ended)

    async def create(self, setup: SessionSetup, client: str = "") -> Session:
        """A new, started session; `SessionConfigError` for a configuration that cannot run,
        `TooManySessions` when the server or this client already runs as many as it may."""
        s = self.limits
        reserved = len(self.sessions) >= s.max_sessions - s.session_reserve and self.count_for(client)
        if len(self.sessions) >= s.max_sessions or self.count_for(client) >= s.max_sessions_per_client or reserved:
            await self.reap()
            if len(self.sessions) >= s.max_sessions:
                raise TooManySessions(f"the server runs at most {s.max_sessions} sessions at once; try again later")
            if self.count_for(client) >= s.max_sessions_per_client:
                raise TooManySessions(f"this address already runs {s.max_sessions_per_client} sessions (the limit); "
                                      "close one (its page) and try again")
        if len(self.sessions) >= s.max_sessions - s.session_reserve and self.count_for(client):
            # (So a few addresses cannot take every session from a class: the last ones wait for newcomers.)
            raise TooManySessions(f"the server is nearly full: its last {s.session_reserve} sessions are kept for "
                                  "addresses that run none; close one of yours and try again")
        session = Session(uuid.uuid4().hex, setup, self.limits, runtime_factory(setup), client)
        try:
            await session.start()
        except (SessionConfigError, SessionError, ValueError) as exc:
            await session.close()
            raise SessionConfigError(str(exc)) from exc
        except BaseException:
            await session.close()
            raise
        # Its grace and idle time count from now, when it is ready: a real session's peers may take longer to start
        # than the grace period on a busy machine, and it must not be reaped before its page could connect.
        session.last_active = session.last_detached = time.monotonic()
        self.sessions[session.id] = session
        return session

    def get(self, session_id: str) -> Session:
        """The session with this id; `SessionNotFound` (a KeyError) otherwise."""
        try:
            return self.sessions[session_id]
        except KeyError:
            raise SessionNotFound(session_id) from None

    async def end(self, session_id: str) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            await session.close()
            if self.on_end is not None:
                self.on_end()

    async def reap(self) -> None:
        """Ends sessions idle for too long and sessions whose last websocket left more than the grace period ago."""
        now = time.monotonic()
        s = self.limits
        for session in list(self.sessions.values()):
            abandoned = not session.subscribers and now - session.last_detached > s.session_grace
            idle = now - session.last_active > s.session_idle_timeout
            if abandoned or idle or session.ended:
                log.info("ending session %s (%s)", session.id, "idle" if idle else "abandoned")
                await self.end(session.id)


def runtime_factory(setup: SessionSetup) -> Callable[[Session], Runtime]:
    """What makes the runtime of a session of this setup (`SessionConfigError` when its mode cannot run it)."""
    if setup.mode == "tcp":
        TcpRuntime.check(setup)
        return TcpRuntime
    SimulatedRuntime.check(setup)
    return SimulatedRuntime
