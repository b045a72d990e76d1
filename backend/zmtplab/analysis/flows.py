"""Following one application message across connections: a broker or proxy hop.

A hop is a message arriving at a node on one connection and the same frames leaving that node on
another connection soon after (within `window` seconds), with an envelope the node may have added
or removed in front (a ROUTER/DEALER proxy prepends the client's identity towards the workers and
strips it on the way back). "The same node" is what a capture can tell: the same IP address. It
is not a hop when:

* the two messages were sent by the same endpoint (a PUB or a round robin sending copies);
* the message that leaves answers one that came in on its own connection (an echo: a reply, not
  a forward).

When messages on several connections could be the one forwarded, the latest is taken and the hop
is marked ambiguous. Memory is bounded: messages older than the window, and all but the latest
`MAX_RECENT`, are forgotten.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from ..engine.fields import text_or_hex

Address = tuple[str, int]

MAX_FLOWS = 10_000
MAX_RECENT = 50_000  # messages kept for matching, whatever the window: memory stays bounded


class _Side:
    """One direction of one connection: what every message sent on it shares."""

    __slots__ = ("conn", "dir", "receiver", "sender")

    def __init__(self, conn: str, d: str, sender: Address, receiver: Address) -> None:
        self.conn, self.dir, self.sender, self.receiver = conn, d, sender, receiver


_Msg = tuple[float, list[bytes], list[int], _Side]  # ts, frame bodies, packets, side: a tuple, made per message


def envelope_change(before: list[bytes], after: list[bytes]) -> tuple[str, list[bytes]] | None:
    """("same"|"added"|"removed", the envelope frames) when `after` is `before` with frames added or removed in
    front; None when they are not the same message."""
    if before == after:
        return "same", []
    if len(after) > len(before) and after[len(after) - len(before):] == before:
        return "added", after[:len(after) - len(before)]
    if len(before) > len(after) and before[len(before) - len(after):] == after:
        return "removed", before[:len(before) - len(after)]
    return None


class FlowMatcher:
    """Follows messages as they stream by (`__call__` is a `facts.MessageHandler`) and links the hops."""

    def __init__(self, *, window: float = 1.0, max_recent: int = MAX_RECENT) -> None:
        self.window = window
        self.max_recent = max_recent
        self._sides: dict[tuple[str, str], _Side] = {}
        # last frame -> the latest message with it still within the window (one side), or side -> message
        self._recent: dict[bytes, _Msg | dict[_Side, _Msg]] = {}
        self._order: deque[_Msg] = deque()
        self._prev: dict[int, tuple[_Msg, bool]] = {}  # id(message) -> (the message it forwards, ambiguous)
        self._linked: dict[int, _Msg] = {}  # every message that is part of a hop, by id
        self._has_next: set[int] = set()

    @property
    def remembered(self) -> int:
        """How many messages are held for matching (bounded by the window and `max_recent`)."""
        return len(self._order)

    def __call__(self, facts: Any, d: str, messages: list[tuple[int, list[bytes]]], ts: Sequence[float],
                 packets: Sequence[list[int]]) -> None:
        side = self._sides.get((facts.conn, d))
        if side is None:
            ends = facts.ends(d)
            if ends is None:
                return
            side = self._sides[(facts.conn, d)] = _Side(facts.conn, d, *ends)
        recent, order, window, limit = self._recent, self._order, self.window, self.max_recent
        for k, frames in messages:
            if not frames:
                continue
            now = ts[k]
            if order and (now - order[0][0] > window or len(order) >= limit):
                self._forget(now, limit * 3 // 4)
            msg = (now, frames, packets[k], side)
            key = frames[-1]
            have = recent.get(key)
            if have is None or (type(have) is tuple and have[3] is side):
                recent[key] = msg  # the common case: no other side sent the same recently
            else:
                self._collide(key, have, msg)
            order.append(msg)

    def _forget(self, now: float, keep: int) -> None:
        """Forgets the messages older than the window, and the oldest beyond `keep` once the limit is reached
        (in one go, so that a busy capture does not pay for it every message)."""
        recent, order = self._recent, self._order
        over = max(0, len(order) - keep) if len(order) >= self.max_recent else 0
        while order and (over > 0 or now - order[0][0] > self.window):
            over -= 1
            old = order.popleft()
            key = old[1][-1]
            have = recent.get(key)
            if have is old:
                del recent[key]
            elif type(have) is dict and have.get(old[3]) is old:
                del have[old[3]]
                if not have:
                    del recent[key]

    def _collide(self, key: bytes, have: _Msg | dict[_Side, _Msg], msg: _Msg) -> None:
        bucket = have if isinstance(have, dict) else {have[3]: have}
        side = msg[3]
        back = self._sides.get((side.conn, "s2c" if side.dir == "c2s" else "c2s"))
        if back is None or back not in bucket:  # (else an answer on its own connection, not a forward)
            found = [cand for cand_side, cand in bucket.items()
                     if cand_side.conn != side.conn and cand_side.receiver[0] == side.sender[0]
                     and cand_side.sender != side.sender and envelope_change(cand[1], msg[1]) is not None]
            if found:
                prev = max(found, key=lambda c: c[0])
                self._prev[id(msg)] = (prev, len(found) > 1)
                self._linked[id(msg)] = msg
                self._linked[id(prev)] = prev
                self._has_next.add(id(prev))
        bucket[side] = msg
        self._recent[key] = bucket

    def flows(self) -> tuple[list[dict[str, Any]], int]:
        """The paths, one per message that ends one (at most `MAX_FLOWS` of them), and how many there are."""
        ends = [m for k, m in self._linked.items() if k in self._prev and k not in self._has_next]
        ends.sort(key=lambda m: m[0])
        out = []
        for last in ends[:MAX_FLOWS]:
            path, ambiguous = [last], False
            while id(path[-1]) in self._prev:
                prev, unsure = self._prev[id(path[-1])]
                ambiguous = ambiguous or unsure
                path.append(prev)
            path.reverse()
            out.append(_flow(path, ambiguous))
        return out, len(ends)


def _flow(path: list[_Msg], ambiguous: bool) -> dict[str, Any]:
    hops = [{"conn": side.conn, "dir": side.dir, "ts": ts, "packets": list(packets), "from": _endpoint(side.sender),
             "to": _endpoint(side.receiver), "frames": len(frames)} for ts, frames, packets, side in path]
    steps = []
    for before, after in pairwise(path):
        change, envelope = envelope_change(before[1], after[1]) or ("same", [])
        steps.append({"node": before[3].receiver[0], "latency": after[0] - before[0], "envelope": change,
                      "frames": [_show(f) for f in envelope]})
    return {"hops": hops, "steps": steps, "message": _show(path[0][1][-1]), "ambiguous": ambiguous,
            "latency": path[-1][0] - path[0][0]}


def _show(data: bytes, limit: int = 64) -> str:
    return text_or_hex(data[:limit]) + ("…" if len(data) > limit else "")


def _endpoint(addr: Address) -> str:
    ip, port = addr
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
