"""Who sent which message when: the capture's application messages in capture order, for replaying it.

`Script` is a `facts.MessageHandler` that keeps the first `limit` messages of the capture (every connection,
both directions) with their time, sender and receiver endpoints and frames (each cut to `max_body` octets,
`truncated` when one was); it is asked for (`Analyzer(script=N)`, `zmtplab analyze --script N`) because
taking every message apart costs what counting them does not. With the connections' socket types,
identities, subscriptions and connect and close times it is what a replay of the capture as a topology needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .facts import ConnFacts
from .topology import endpoint

MAX_BODY = 256


class Script:
    """The first `limit` messages of a capture (a `facts.MessageHandler`); `entries` in capture order."""

    def __init__(self, limit: int, max_body: int = MAX_BODY) -> None:
        self.limit = limit
        self.max_body = max_body
        self.entries: list[dict[str, Any]] = []

    def wants(self, facts: ConnFacts, d: str) -> bool:
        return len(self.entries) < self.limit

    def __call__(self, facts: ConnFacts, d: str, messages: list[tuple[int, list[bytes]]], ts: Sequence[float],
                 packets: Sequence[list[int]]) -> None:
        ends = facts.ends(d)
        for k, frames in messages:
            if len(self.entries) >= self.limit:
                return
            entry: dict[str, Any] = {"conn": facts.conn, "dir": d, "ts": ts[k], "packets": list(packets[k]),
                                     "frames": [f[:self.max_body].hex() for f in frames]}
            if ends is not None:
                entry["from"], entry["to"] = endpoint(ends[0]), endpoint(ends[1])
            if any(len(f) > self.max_body for f in frames):
                entry["truncated"] = True
            self.entries.append(entry)
