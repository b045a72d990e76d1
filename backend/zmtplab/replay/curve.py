"""CURVE connections the replay cannot open: what the boxes still say, and the sockets that behave the same.

Without the session keys (a key log), a CURVE connection's READY, its socket types and its messages are inside
boxes. What is left in the clear: who connected to whom and when, and each MESSAGE box's direction, time, packet
and size (one box a frame; the frame's MORE flag is inside it). `infer` makes of that:

* the messages: boxes of one direction, one a frame, an empty frame (a REQ's or REP's delimiter) going with the
  box after it in the same packet; each frame a stand-in text of its captured size (`m3 ......`);
* the socket types, from how the two sides take turns (per server socket, over all its connections):
  strict turns starting with the client, the client's first frame empty -> REQ and REP; strict turns without
  it -> DEALER and ROUTER; only the client sends -> PUSH and PULL; the server sends and the client sent only
  before the server's first message (its subscriptions, in boxes) -> SUB (subscribed to everything) and PUB;
  anything else (or nothing sent) -> DEALER and ROUTER, which send either way at any time;
* the notes saying so: the replay is NULL, the payloads are stand-ins of the captured sizes, and which types
  were inferred (or are stand-ins for types the behaviour does not tell).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..analysis.facts import ConnFacts


@dataclass(frozen=True)
class Guess:
    """The socket types inferred for a server socket's connections, and why."""

    client: str
    server: str
    why: str


REQ_REP = Guess("REQ", "REP", "the client and the server take strict turns and each request begins with an empty "
                "frame: REQ and REP")
TURNS = Guess("DEALER", "ROUTER", "the client and the server take strict turns without a REQ's delimiter: DEALER "
              "and ROUTER stand in")
PUSH_PULL = Guess("PUSH", "PULL", "only the client sends: PUSH and PULL")
PUB_SUB = Guess("SUB", "PUB", "the server sends and the client only before it (its subscriptions): SUB, subscribed "
                "to everything, and PUB")
SILENT = Guess("DEALER", "ROUTER", "no message crossed: DEALER and ROUTER stand in (nothing tells the types)")
EITHER = Guess("DEALER", "ROUTER", "both sides send at any time: DEALER and ROUTER stand in (the behaviour does not "
               "tell the types)")


def messages(facts: ConnFacts) -> list[tuple[str, float, tuple[int, ...]]]:
    """A connection's boxes as messages: (direction, time, the sizes of its frames) (see the module)."""
    out: list[tuple[str, float, tuple[int, ...]]] = []
    pending: tuple[str, float, int, tuple[int, ...]] | None = None  # empty frames waiting for the next box
    for box in facts.boxes:
        if pending is not None and (pending[0] != box.dir or pending[2] != box.packet):
            out.append((pending[0], pending[1], pending[3]))
            pending = None
        sizes = (*pending[3], box.size) if pending is not None else (box.size,)
        ts = pending[1] if pending is not None else box.ts
        if box.size == 0:
            pending = (box.dir, ts, box.packet, sizes)
        else:
            out.append((box.dir, ts, sizes))
            pending = None
    if pending is not None:
        out.append((pending[0], pending[1], pending[3]))
    return out


def guess(conns: list[list[tuple[str, float, tuple[int, ...]]]]) -> Guess:
    """The socket types that behave as a server socket's connections did (see the module)."""
    flat = [m for msgs in conns for m in msgs]
    if not flat:
        return SILENT
    if all(d == "c2s" for d, _, _ in flat):
        return PUSH_PULL
    turns = True
    for msgs in conns:
        dirs = [d for d, _, _ in msgs]
        if any(d != ("c2s" if i % 2 == 0 else "s2c") for i, d in enumerate(dirs)):
            turns = False
    if turns:
        requests = [sizes for d, _, sizes in flat if d == "c2s"]
        return REQ_REP if all(len(s) > 1 and s[0] == 0 for s in requests) else TURNS
    served = True
    for msgs in conns:
        first = next((ts for d, ts, _ in msgs if d == "s2c"), None)
        if first is not None and any(d == "c2s" and ts > first for d, ts, _ in msgs):
            served = False
    return PUB_SUB if served else EITHER


def stand_in(k: int, size: int) -> str:
    """The hex of a frame of `size` octets standing in for the `k`th message's: `m{k} ` then dots."""
    label = f"m{k} " if size > 1 else ""
    return (label + "." * size)[:size].encode("ascii").hex()


def infer(analysis: dict[str, Any], facts: dict[str, ConnFacts]) -> list[tuple[str, str]]:
    """Fills in, in `analysis` (changed in place), the socket types and the script of its CURVE connections whose
    socket types are unknown (see the module); returns (server endpoint, what was inferred and why) per server."""
    rows = [c for c in analysis["connections"] if c.get("mechanism") == "CURVE" and c["zmtp"]
            and not (c["client_type"] and c["server_type"]) and c["conn"] in facts]
    by_server: dict[str, list[dict[str, Any]]] = {}
    for c in rows:
        by_server.setdefault(c["server"], []).append(c)
    script = analysis.setdefault("script", [])
    said = []
    for server, conns in by_server.items():
        msgs = {c["conn"]: messages(facts[c["conn"]]) for c in conns}
        g = guess(list(msgs.values()))
        for c in conns:
            c["client_type"], c["server_type"], c["inferred"] = g.client, g.server, True
            counters = {"c2s": 0, "s2c": 0}
            for d, ts, sizes in msgs[c["conn"]]:
                counters[d] += 1
                if g is PUB_SUB and d == "c2s":
                    continue  # (a SUB's subscriptions: the stand-in subscribes to everything)
                script.append({"conn": c["conn"], "dir": d, "ts": ts, "frames": [stand_in(counters[d], n)
                                                                                 for n in sizes]})
        for node in analysis["nodes"]:
            for ep, types in node["sockets"].items():
                if ep == server and not types:
                    types.append(g.server)
                elif not types and any(ep == c["client"] for c in conns):
                    types.append(g.client)
        said.append((server, g.why))
    script.sort(key=lambda e: e["ts"])
    return said
