"""A simulation's virtual clock and event log (`Timeline`), which its wire, its tracker and its peers all write to.

Every entry of the log gets the time it happened (`t`, rounded to 9 places) and a sequence number (`seq`).
"""

from __future__ import annotations

from typing import Any


class Timeline:
    """The virtual clock (`t`, seconds) and the log (`events`), each entry stamped with `t` and `seq`."""

    __slots__ = ("_t_last", "_t_round", "events", "seq", "t")

    def __init__(self) -> None:
        self.t = 0.0
        self._t_last = 0.0
        self._t_round = 0.0
        self.seq = 0
        self.events: list[dict[str, Any]] = []

    def log(self, event: dict[str, Any]) -> None:
        """Appends `event` to the log, stamped with the time and the next sequence number."""
        t = self.t
        if t != self._t_last:  # (`rounded`, inline: every entry of the log comes here)
            self._t_last = t
            self._t_round = round(t, 9)
        event["t"] = self._t_round
        self.seq += 1
        event["seq"] = self.seq
        self.events.append(event)

    def rounded(self) -> float:
        """`round(self.t, 9)`, remembered for the current time (rounding a float is slow, and every entry
        of a step has the same time)."""
        t = self.t
        if t != self._t_last:
            self._t_last = t
            self._t_round = round(t, 9)
        return self._t_round
