"""Sessions: peers, simulated or real, whose every element streams to subscribers (the web app's websockets).

A `Session` (its events, subscribers and exports) is driven by a runtime, a deterministic simulation
(`simulated.SimulatedRuntime`) or real peers over loopback TCP through dissecting taps (`tcp.TcpRuntime`), each
running the session's topology (`SessionSetup`: a two-peer body is the topology of nodes server and client). The
`SessionManager` creates and ends them, within `SessionLimits`; `commands` are what a session takes, one class each.
The web app drives sessions with asyncio; `driver.SessionDriver` drives a simulated one synchronously, without an
event loop (`zmtplab session run`, the lesson player).

The layer sits below `web` (which keeps the routes, the socket handler and the outbox, an `Output`) and imports
engine, capture and peers. Its modules import one way: `limits`, `setup` <- `session` <- `commands`,
`simulated`, `tcp` <- `manager`, `driver`.
"""

from __future__ import annotations

from .limits import SessionLimits
from .manager import SessionManager, runtime_factory
from .session import (
    CLIENT_IP,
    SERVER_IP,
    SIM_CLIENT_PORT,
    SIM_SERVER_PORT,
    ConnEndpoints,
    EventLog,
    EventNotFound,
    NodeFull,
    Output,
    OutputFactory,
    Runtime,
    Session,
    SessionConfigError,
    SessionError,
    SessionNotFound,
    SessionNotice,
    Subscriber,
    TooManySessions,
    WireChunk,
    dumps,
    is_mark,
)
from .setup import SessionSetup

__all__ = [
    "CLIENT_IP", "SERVER_IP", "SIM_CLIENT_PORT", "SIM_SERVER_PORT", "ConnEndpoints", "EventLog", "EventNotFound",
    "NodeFull", "Output", "OutputFactory", "Runtime", "Session", "SessionConfigError", "SessionError", "SessionLimits",
    "SessionManager", "SessionNotFound", "SessionNotice", "SessionSetup", "Subscriber", "TooManySessions", "WireChunk",
    "dumps", "is_mark", "runtime_factory",
]
