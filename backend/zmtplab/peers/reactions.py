"""Sends that follow reads: a reply sent in reaction to its request (`Simulation.react`).

A reaction belongs to a group of peers (one peer, or a pool of workers that answer alike) and waits for the
group's applications to have read a given message a given number of times; the peer whose read that was sends.
"""

from __future__ import annotations

Frames = tuple[bytes, ...]
Group = tuple[str, ...]


class Reactions:
    """The reactions waiting, per group and per (message, how many times the group read it)."""

    def __init__(self) -> None:
        self._waiting: dict[Group, dict[tuple[Frames, int], list[tuple[float, Frames]]]] = {}
        self._groups: dict[str, list[Group]] = {}
        self._counts: dict[tuple[Group, Frames], int] = {}
        # Whether a reaction was ever added: until then no read is counted (no group has one), so `read` need not run.
        self.active = False

    def add(self, group: Group, read: Frames, occurrence: int, delay: float, frames: Frames) -> None:
        """`frames` are sent `delay` s after the group's `occurrence`th read of `read`."""
        for name in group:
            if group not in self._groups.setdefault(name, []):
                self._groups[name].append(group)
        self._waiting.setdefault(group, {}).setdefault((read, occurrence), []).append((delay, frames))
        self.active = True

    def read(self, peer: str, msg: Frames) -> list[tuple[float, Frames]]:
        """`peer`'s application read `msg`: the (delay, frames) it sends in reaction (each given once)."""
        out: list[tuple[float, Frames]] = []
        for group in self._groups.get(peer, ()):
            key = (group, msg)
            n = self._counts[key] = self._counts.get(key, 0) + 1
            out += self._waiting[group].pop((msg, n), ())
        return out
