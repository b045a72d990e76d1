"""Playground sessions: a `Session` (its events, subscribers and exports) driven by a runtime, a deterministic
simulation (`simulated.SimulatedRuntime`) or real peers over loopback TCP through a dissecting tap
(`tcp.TcpRuntime`), and the `SessionManager` that creates and ends them.

The modules import one way: `session` <- `simulated`, `tcp` <- `manager`.
"""

from __future__ import annotations

from .manager import SessionManager
from .session import (
    CLIENT_IP,
    SERVER_IP,
    SIM_CLIENT_PORT,
    SIM_SERVER_PORT,
    ConnEndpoints,
    EventLog,
    Runtime,
    Session,
    SessionConfigError,
    SessionError,
    SessionNotice,
    Subscriber,
    TooManySessions,
    WireChunk,
    dumps,
    is_mark,
)

__all__ = [
    "CLIENT_IP", "SERVER_IP", "SIM_CLIENT_PORT", "SIM_SERVER_PORT", "ConnEndpoints", "EventLog", "Runtime", "Session",
    "SessionConfigError", "SessionError", "SessionManager", "SessionNotice", "Subscriber", "TooManySessions",
    "WireChunk", "dumps", "is_mark",
]
