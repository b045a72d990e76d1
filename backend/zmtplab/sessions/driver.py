"""A simulated session driven synchronously, without an event loop: `zmtplab session run` and the lesson player run
the web's sessions through it.

A session's core is the same whoever drives it: `Session` (events, subscribers, exports), its `SimulatedRuntime`
(the simulation, its steps, the commands' work) and the commands (`sessions.commands`). The web app drives it with
asyncio: the runtime's player task plays on the wall clock and the websocket brings the commands. `SessionDriver` is
the other driver, as websockets has one sans-IO core and several drivers: it sets the session up, takes a step when
asked and carries a command out at once. A simulated session's commands never wait for anything (their coroutines
finish in one go), so they run here to their end in one call: the same code, checks and errors as on the websocket.
What a subscriber gets is what the websocket would carry, in the same order: each message is handed over as it is
made, and the `state` once a step or command is over (as a socket sends it after what it had queued).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ..peers.simulation import Simulation
from .commands import Command
from .limits import DEFAULTS, SessionLimits
from .session import Session, SessionConfigError, Subscriber
from .setup import SessionSetup
from .simulated import SimulatedRuntime

T = TypeVar("T")
BACKLOG_BATCH = 256  # backlog texts read in one go when a subscriber joins late


def run_now(coroutine: Coroutine[Any, Any, T]) -> T:
    """Runs a coroutine that never waits to its end, here and now; RuntimeError (and nothing done after the wait)
    if it would wait."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a simulated session's work waited for something: only the asyncio driver can run it")


class Writer:
    """A subscriber's output (`session.Output`) that hands every message's JSON text to `write` at once: first the
    `control` messages and the backlog, then each as it is put, and the due `state` when `flush` is called."""

    def __init__(self, write: Callable[[str], None], due: Callable[[], str], control: list[str],
                 backlog: Callable[[int], list[str]] | tuple[()]) -> None:
        self.write = write
        self.due = due
        self.pending = False
        self.ended = False
        for text in control:
            write(text)
        while backlog and (texts := backlog(BACKLOG_BATCH)):
            for text in texts:
                write(text)

    def put_text(self, text: str) -> None:
        self.write(text)

    def mark_due(self) -> None:
        self.pending = True

    def end(self) -> None:
        self.ended = True

    def flush(self) -> None:
        """Writes the state if it is due."""
        if self.pending:
            self.pending = False
            self.write(self.due())


class SessionDriver:
    """One simulated session driven synchronously (see the module docstring).

    `seed`, `simulation` (options of its `Simulation` beyond a session's) and `peers` (a two-peer body's peers'
    options, when a node cannot say them all) are the runtime's (`SimulatedRuntime`); `limits` the session's."""

    def __init__(self, setup: SessionSetup, *, limits: SessionLimits = DEFAULTS, seed: int = 0,
                 simulation: dict[str, Any] | None = None, peers: dict[str, dict[str, Any]] | None = None,
                 session_id: str = "local") -> None:
        if setup.mode != "simulated":
            raise SessionConfigError("only a simulated session runs here: a real (tcp) session's nodes run in the "
                                     "server (zmtplab serve)")
        SimulatedRuntime.check(setup)
        self.session = Session(session_id, setup, limits, lambda session: SimulatedRuntime(
            session, seed=seed, simulation=simulation, peers=peers, player=False))
        self.writers: list[Writer] = []

    @property
    def runtime(self) -> SimulatedRuntime:
        """The session's runtime (a new one after a `reset`)."""
        runtime = self.session.runtime
        assert isinstance(runtime, SimulatedRuntime)
        return runtime

    @property
    def sim(self) -> Simulation:
        """The runtime's `peers.Simulation`: what a lesson does that no command does (a PING, a subscription, a link
        added, the clock run on) acts on it, then `absorb` passes what that logged to the session."""
        return self.runtime.sim

    def subscribe(self, write: Callable[[str], None], *, logs: bool = True, marks: bool = False,
                  topology: bool | None = None, fields: bool = True) -> Subscriber:
        """A subscriber whose every message (JSON text) goes to `write`, with the websocket's options (`?log=`,
        `?marks=`, `?topology=`, `?fields=`)."""

        def make_output(limit: int, *, max_bytes: int, due: Callable[[], str], control: list[str],
                        backlog: Callable[[int], list[str]] | tuple[()]) -> Writer:
            writer = Writer(write, due, control, backlog)
            self.writers.append(writer)
            return writer

        return self.session.subscribe(make_output, logs=logs, marks=marks, topology=topology, fields=fields)

    def start(self) -> None:
        """Sets the peers up (their first entries reach the subscribers). Nothing plays by itself here: the session
        moves when it is stepped, as after the websocket's `step`."""
        self.runtime.playing = False
        try:
            run_now(self.session.start())
        finally:
            self.flush()

    def step(self) -> int:
        """One element forward (as the websocket's `step`, without pausing anything); the elements it added, 0 when
        nothing more happens."""
        added = self.runtime.advance()
        self.session.push_state()
        self.flush()
        return added

    def run(self, steps: int | None = None) -> int:
        """Steps until nothing more happens, or `steps` times; the elements added."""
        added = taken = 0
        while steps is None or taken < steps:
            step = self.step()
            if not step:
                break
            added += step
            taken += 1
        return added

    def at_end(self) -> bool:
        """Nothing more is scheduled: only a send, a fault or a read moves the session on."""
        return self.runtime.at_end()

    def command(self, command: Command) -> None:
        """Carries a command out as the websocket does (`SessionError` for what it refuses). `play` and `speed` change
        nothing here: the session moves when it is stepped."""
        try:
            run_now(self.session.command(command))
        finally:
            self.runtime.playing = False  # (after a `reset` too: its new runtime would say it plays)
            self.flush()

    def deliver(self) -> bool:
        """One delivery (or timer) of the simulation, what a lesson's `deliver` counts: False when nothing is on its
        way, or nothing could move (what is in flight waits for a reader at its RCVHWM)."""
        sim = self.runtime.sim
        if not sim.in_flight():
            return False
        before = sim.steps
        sim.step()
        self.absorb()
        return sim.steps != before

    def absorb(self) -> None:
        """Passes what the simulation logged since last time to the session (after acting on `sim`)."""
        self.runtime.absorb()
        self.flush()

    def flush(self) -> None:
        for writer in self.writers:
            writer.flush()

    def close(self) -> None:
        run_now(self.session.close())
