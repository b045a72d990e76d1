"""Typed protocol errors raised by a strict peer (the dissector never raises them), and `Reports`: how a reader
says a problem, raising it or noting it."""

from __future__ import annotations

from collections import deque

from .events import Expert, WireEvent


class ProtocolError(Exception):
    """A ZMTP rule was broken; names the stream offset and the ABNF rule or spec clause."""

    def __init__(self, message: str, *, offset: int | None = None, rule: str | None = None) -> None:
        self.offset = offset
        self.rule = rule
        where = f" at offset {offset}" if offset is not None else ""
        which = f" (rule {rule})" if rule else ""
        super().__init__(f"{message}{where}{which}")
        self.message = message


class RemoteProtocolError(ProtocolError):
    """The other peer sent bytes that break the protocol."""


class LocalProtocolError(ProtocolError):
    """Our side was asked to do something the protocol forbids (a bug in the caller)."""


class Reports:
    """The elements a reader of one direction has read and not yet handed over (`events`), and how it says a
    problem: a strict reader (a peer) raises `RemoteProtocolError` at the first one, a lenient one (the dissector)
    notes each as an `Expert` event and goes on."""

    __slots__ = ("events", "strict")

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict
        self.events: deque[WireEvent] = deque()

    def problem(self, offset: int, length: int, severity: str, text: str, rule: str) -> None:
        """A broken rule: raised when strict, noted otherwise."""
        if self.strict:
            raise RemoteProtocolError(text, offset=offset, rule=rule)
        self.expert(offset, length, severity, text, rule)

    def expert(self, offset: int, length: int, severity: str, text: str, rule: str) -> None:
        """A note, warning or error that never stops reading."""
        self.events.append(Expert(offset, length, severity=severity, text=text, rule=rule))
