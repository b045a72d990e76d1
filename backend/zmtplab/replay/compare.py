"""The replay against the capture (`fidelity`), a changed replay against the unchanged one (`diff`), and `replay`,
the whole answer the CLI prints and the web app serves.

Fidelity: per connection and direction, the messages the capture shows and those the replay put on the same
link, in order; each mismatch says where the two part and why where it can tell (what the capture lost, CURVE's
boxes, a send the replay's socket refused). The diff: per socket how many messages its application read before
and after the change, which it no longer gets (dropped, or delivered elsewhere) and which it gets now, and which
findings appear or go (by rule and the sockets they are about).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..engine.fields import text_or_hex
from .model import ReplayModel
from .run import SEND_ONLY, Change, Outcome, apply_changes, simulate


def shown_message(frames: tuple[bytes, ...]) -> str | list[str]:
    """A message as the JSON shows it: its frame as text where it is printable UTF-8, else hex (the event
    contract's rule), a list when it has several frames."""
    shown = [text_or_hex(f) for f in frames]
    return shown[0] if len(shown) == 1 else shown


def fidelity(model: ReplayModel, outcome: Outcome) -> dict[str, Any]:
    """Per connection and direction: the captured and the replayed messages compared (see the module)."""
    rows = []
    by_pair: dict[tuple[str, str], list[str]] = {}
    for conn, pair in model.conn_ends.items():
        by_pair.setdefault(pair, []).append(conn)
    for (client, server), conns in by_pair.items():
        for d in ("c2s", "s2c"):
            captured = [m for conn in conns for m in model.captured.get((conn, d), [])]
            replayed = outcome.wire.get((client, server, d), [])
            if not captured and not replayed:
                continue
            sender, receiver = (client, server) if d == "c2s" else (server, client)
            row: dict[str, Any] = {"conns": conns, "dir": d, "from": sender, "to": receiver,
                                   "captured": len(captured), "replayed": len(replayed),
                                   "same": captured == replayed}
            if not row["same"]:
                at = next((i for i, (a, b) in enumerate(zip(captured, replayed, strict=False)) if a != b),
                          min(len(captured), len(replayed)))
                row["first_difference"] = at
                if at < len(captured):
                    row["captured_message"] = shown_message(captured[at])
                if at < len(replayed):
                    row["replayed_message"] = shown_message(replayed[at])
                row["why"] = _why(model, outcome, conns, d, sender, len(captured), len(replayed))
            rows.append(row)
    same = sum(1 for r in rows if r["same"])
    captured_rules = sorted({f["rule"] for f in model.findings})
    replayed_rules = sorted({f["rule"] for f in outcome.findings})
    speeds = {name: s.recv_every for name, s in model.sockets.items() if not s.proxied and s.type not in SEND_ONLY}
    return {"same": same == len(rows), "directions": len(rows), "same_directions": same, "connections": rows,
            "findings": {"captured": captured_rules, "replayed": replayed_rules}, "read_speed": speeds}


def _why(model: ReplayModel, outcome: Outcome, conns: list[str], d: str, sender: str, captured: int,
         replayed: int) -> list[str]:
    out = []
    lost = sum(model.gaps.get((conn, d), 0) for conn in conns)
    if lost:
        out.append(f"the capture lacks {lost} octets of this direction (packets the capture lost): the messages "
                   "in them are missing from the capture, not from what the applications exchanged")
    if any(conn in model.encrypted for conn in conns):
        out.append("CURVE: the capture shows MESSAGE boxes, the replay (NULL) the messages in the clear")
    refused = [e for e in outcome.errors if e["socket"] == sender]
    if refused:
        out.append(f"{sender}'s socket refused {len(refused)} of its sends in the replay ({refused[0]['reason']})")
    if not out:
        if replayed < captured:
            out.append(f"the replay's socket rules sent {captured - replayed} fewer messages this way than libzmq did "
                       "(another peer got them, or they waited)")
        elif replayed > captured:
            out.append(f"the replay's socket rules sent {replayed - captured} more messages this way than libzmq did")
        else:
            out.append("the same number of messages in another order or spread: the replay's socket rules "
                       "chose differently from libzmq's timing")
    return out


def sources(model: ReplayModel, name: str) -> list[str]:
    """The application sockets whose sends can reach `name`: its peers, and through a proxy the proxy's peers."""
    partner = {**dict(model.proxies), **{b: f for f, b in model.proxies}}
    out: list[str] = []
    seen = {name}
    todo = [name]
    while todo:
        here = todo.pop()
        for lk in model.links:
            if here not in (lk.client, lk.server):
                continue
            peer = lk.server if lk.client == here else lk.client
            if peer in seen:
                continue
            seen.add(peer)
            if peer in partner and partner[peer] not in seen:
                seen.add(partner[peer])
                todo.append(partner[peer])
            elif peer not in partner and peer not in out:
                out.append(peer)
    return out


def diff(changed_model: ReplayModel, before: Outcome, after: Outcome, changes: list[Change]) -> dict[str, Any]:
    """What the changes did (see the module)."""
    nodes = []
    summary = []
    lost_all: Counter[tuple[bytes, ...]] = Counter()
    gained_all: dict[str, Counter[tuple[bytes, ...]]] = {}
    for name in before.delivered:
        a, b = Counter(before.delivered[name]), Counter(after.delivered.get(name, []))
        lost_all.update(a - b)
        gained_all[name] = b - a
    for name in before.delivered:
        old, new = before.delivered[name], after.delivered.get(name, [])
        a, b = Counter(old), Counter(new)
        lost, gained = a - b, b - a
        of = sum(after.sends.get(s, 0) for s in sources(changed_model, name))
        row: dict[str, Any] = {"name": name, "before": len(old), "after": len(new), "of": of}
        if lost:
            elsewhere = {other: sum((lost & g).values()) for other, g in gained_all.items() if other != name}
            elsewhere = {k: v for k, v in elsewhere.items() if v}
            row["lost"] = [shown_message(m) for m in lost.elements()]
            if elsewhere:
                row["elsewhere"] = elsewhere
        if gained:
            row["gained"] = [shown_message(m) for m in gained.elements()]
        nodes.append(row)
        if len(old) != len(new) or lost:
            summary.append(f"{name} receives {len(new)} of {of} messages instead of {len(old)}")
    dropped = sum((lost_all - sum(gained_all.values(), Counter())).values())
    keys_before = {_finding_key(f, e): f for f, e in zip(before.findings, before.finding_ends, strict=True)}
    keys_after = {_finding_key(f, e): f for f, e in zip(after.findings, after.finding_ends, strict=True)}
    appear = [keys_after[k] for k in keys_after if k not in keys_before]
    gone = [keys_before[k] for k in keys_before if k not in keys_after]
    refused: dict[str, list[str]] = {}
    for e in after.errors:
        refused.setdefault(e["socket"], []).append(e["reason"])
    for name, reasons in refused.items():
        summary.append(f"{name}'s application could not make {len(reasons)} of its captured sends ({reasons[0]}): the "
                       "replay sends what the capture shows at its times, it does not know the application's logic")
    for f in appear:
        summary.append(f"finding appears: {f['rule']}")
    for f in gone:
        summary.append(f"finding goes: {f['rule']}")
    if not summary:
        summary.append("nothing changes: every socket reads the same messages and the findings are the same")
    return {"changes": [str(c) for c in changes], "nodes": nodes, "dropped": dropped,
            "findings": {"appear": appear, "go": gone}, "summary": summary}


def _finding_key(f: dict[str, Any], ends: list[tuple[str, str]]) -> tuple[str, frozenset[tuple[str, str]]]:
    return f["rule"], frozenset(ends)


def replay(model: ReplayModel, changes: list[Change] | None = None) -> dict[str, Any]:
    """The replay of `model` checked against its capture and, with `changes`, the changed replay and its diff:
    what `zmtplab replay --json` prints."""
    base = simulate(model)
    out: dict[str, Any] = {"nodes": model.nodes(),
                           "links": [{"connect": lk.client, "bind": lk.server, "at": round(model.time.back(lk.at), 6),
                                      "conns": lk.conns} for lk in model.links],
                           "proxies": [{"frontend": f, "backend": b} for f, b in model.proxies],
                           "sends": len(model.sends), "notes": model.notes, "fidelity": fidelity(model, base)}
    shown = base
    if changes:
        changed_model = apply_changes(model, changes)
        shown = simulate(changed_model)
        out["diff"] = diff(changed_model, base, shown, changes)
    out["delivered"] = {name: [shown_message(m) for m in msgs] for name, msgs in shown.delivered.items()}
    out["findings"] = shown.findings
    if shown.errors:
        out["errors"] = shown.errors
    return out
