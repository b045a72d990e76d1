"""Typed protocol errors raised by a strict peer (the dissector never raises them)."""

from __future__ import annotations


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
