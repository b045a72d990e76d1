"""`SessionLimits`: what one session, and the sessions of one server, may hold and do (issue 31's budgets).

The web app makes them from its settings (`web.settings.Settings`, whose `ZMTPLAB_*` variables set them, with these
defaults); the CLI and the lesson player use the defaults. The names are the settings' own.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class SessionLimits:
    """The budgets of sessions (see the module docstring)."""

    max_sessions: int = 32  # sessions at once
    max_sessions_per_client: int = 8  # sessions one client address may run at once
    session_reserve: int = 8  # the last sessions only an address running none may start
    session_max_connections: int = 8  # connections through a real session's taps at once
    session_max_messages: int = 50_000  # messages and faults one session carries (until `reset`)
    session_max_sent_bytes: int = 64 * 1024 * 1024  # octets of messages, counted once per delivery
    session_max_wire_bytes: int = 16 * 1024 * 1024  # wire bytes kept for the pcapng export
    session_idle_timeout: float = 30 * 60.0  # seconds without a command before a session ends
    session_grace: float = 30.0  # seconds a session outlives its last subscriber
    session_max_events: int = 50_000  # events one session keeps (and streams)
    session_max_event_bytes: int = 128 * 1024 * 1024  # octets of JSON text its events take together
    session_event_max_body: int = 64 * 1024  # octets of its body an event keeps (longer ones are cut)
    session_max_queue_bytes: int = 16 * 1024 * 1024  # octets queued for one subscriber before it is given up
    session_max_frames: int = 1024  # frames in one `send`
    session_max_body: int = 1 << 20  # octets of one frame of a `send`
    sim_step_interval: float = 0.3  # seconds between elements of a playing simulated session at speed 1
    session_external_host: str = "127.0.0.1"  # where a session listens for its external nodes' programs
    session_external_advertise: str = ""  # the host their endpoints name ("": the listening host, or the request's)
    session_external_max_held: int = 4 * 1024 * 1024  # octets of an element an external connection may hold
    session_external_cpu_share: float = 0.5  # the share of a core one external connection's dissection may take
    session_external_handshake_timeout: float = 10.0  # seconds an external connection has to finish its handshake
    live_tap_targets: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")  # hosts the lab may connect out to

    @classmethod
    def of(cls, settings: Any) -> SessionLimits:
        """The limits an object with attributes of these names (the web app's settings) sets."""
        values = {f.name: getattr(settings, f.name) for f in fields(cls)}
        values["live_tap_targets"] = tuple(values["live_tap_targets"])
        return cls(**values)


DEFAULTS = SessionLimits()
