"""The diagnosis: what is wrong in a capture, across its connections.

Each finding has a `rule` id, a `severity` (`note`, `warn`, `error`, as expert events), the `conns`
it is about, the `events` it cites (conn, dir, offset, kind, packets, ts), a plain-language `text`
and a `ref` (the spec section or issue behind it). Two trackers follow the messages as the capture
streams by (`facts.MessageHandler`s): `Publications` for late subscribers, `SenderCounts` for
round-robin skew. The rules themselves are functions of the collected facts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..capture.dissect import ConnectionInfo
from ..engine.curve import hello_problem, open_welcome, z85_encode
from .facts import OTHER, Address, ConnFacts, EventRef
from .topology import conn_key, endpoint

PING_TTL_LIMIT = 656  # deciseconds: libzmq 4.3.x mishandles a PING TTL of 65.6 s and more (issue #4226)
MAX_TOPICS = 10_000  # distinct first frames counted per publishing connection
STALL_SECONDS = 0.1  # a zero window held this long is back-pressure; a shorter one is ordinary flow control


def finding(rule: str, severity: str, conns: Iterable[str], text: str, events: Iterable[EventRef] = (),
            ref: str = "") -> dict[str, Any]:
    return {"rule": rule, "severity": severity, "conns": sorted(set(conns), key=conn_key), "text": text,
            "events": [e.to_dict() for e in events], "ref": ref}


class Publications:
    """What each PUB/XPUB endpoint published on each connection (counted by first frame), and the
    subscriptions that reached it after it had published matching messages on other connections."""

    def __init__(self) -> None:
        self.sent: dict[Address, dict[str, Counter[bytes]]] = {}
        self.late: list[tuple[ConnFacts, EventRef, bytes, int, str]] = []  # facts, where, topic, missed, other

    def __call__(self, facts: ConnFacts, d: str, messages: list[tuple[int, list[bytes]]], ts: Sequence[float],
                 packets: Sequence[list[int]]) -> None:
        ends = facts.ends(d)
        if facts.sender(d) not in ("PUB", "XPUB") or ends is None:
            return
        counter = self.sent.setdefault(ends[0], {}).setdefault(facts.conn, Counter())
        for _k, frames in messages:
            topic = frames[0][:64]
            if topic in counter or len(counter) < MAX_TOPICS:
                counter[topic] += 1

    def subscribed(self, facts: ConnFacts, where: EventRef, what: str, topic: bytes) -> None:
        """A `facts.SubscriptionHandler`: how many matching messages the publisher had sent to the others."""
        ends = facts.ends(where.dir)
        if what != "subscribe" or ends is None:
            return
        prefix = topic[:64]
        missed, other = 0, ""
        for conn, counter in self.sent.get(ends[1], {}).items():
            if conn == facts.conn:
                continue
            n = sum(c for first, c in counter.items() if first.startswith(prefix))
            if n > missed:
                missed, other = n, conn
        if missed:
            self.late.append((facts, where, topic, missed, other))


class SenderCounts:
    """How many messages each endpoint had sent (on any connection) before each connection's first message."""

    def __init__(self) -> None:
        self.sent: dict[Address, int] = {}
        self.before: dict[tuple[str, str], int] = {}

    def __call__(self, facts: ConnFacts, d: str, messages: list[tuple[int, list[bytes]]], ts: Sequence[float],
                 packets: Sequence[list[int]]) -> None:
        ends = facts.ends(d)
        if ends is None:
            return
        n = self.sent.get(ends[0], 0)
        self.before.setdefault((facts.conn, d), n)
        self.sent[ends[0]] = n + len(messages)


# --------------------------------------------------------------------------- rules


class Context:
    """What the rules read: the facts, the TCP connections, the trackers, CURVE secrets (never kept beyond it)."""

    def __init__(self, facts: dict[str, ConnFacts], infos: dict[str, ConnectionInfo], publications: Publications,
                 senders: SenderCounts, curve_secrets: list[bytes]) -> None:
        self.facts = facts
        self.infos = infos
        self.publications = publications
        self.senders = senders
        self.curve_secrets = curve_secrets
        self.curve: dict[str, dict[str, Any]] = {}  # conn -> what the CURVE doctor found

    def zmtp(self) -> Iterable[tuple[ConnFacts, ConnectionInfo]]:
        for conn, info in self.infos.items():
            if info.zmtp and conn in self.facts:
                yield self.facts[conn], info


def late_subscriber(ctx: Context) -> list[dict[str, Any]]:
    out = []
    for facts, where, topic, missed, other in ctx.publications.late:
        shown = topic.decode("utf-8", "replace") if topic.isascii() else topic.hex()
        out.append(finding(
            "late-subscriber", "warn", [facts.conn, other],
            f"the SUB on connection {facts.conn} subscribed to {shown!r} after the publisher had already sent "
            f"{missed} matching message(s) on connection {other}: it never sees them (the slow joiner; "
            "PUB drops what no subscriber has asked for yet)", [where],
            "23/ZMTP The Publish-Subscribe Pattern; zguide ch. 1 'slow joiner'"))
    return out


def ping_ttl(ctx: Context) -> list[dict[str, Any]]:
    out = []
    for facts, _info in ctx.zmtp():
        by_dir: dict[str, list[Any]] = {}
        for cmd in facts.commands:
            if cmd.name == "PING" and (cmd.details.get("ttl") or 0) >= PING_TTL_LIMIT:
                by_dir.setdefault(cmd.ref.dir, []).append(cmd)
        for d, pings in by_dir.items():
            ttl = pings[0].details["ttl"]
            sender = facts.sender(d) or "peer"
            out.append(finding(
                "ping-ttl-over-65s", "warn", [facts.conn],
                f"{len(pings)} PING(s) from the {sender} ({d}) announce a TTL of {ttl / 10:g} s ({ttl} deciseconds); "
                "libzmq 4.3.x mishandles a TTL of 65.6 s or more (its timer overflows), so the peer may time the "
                "connection out far too early or never", [pings[0].ref], "37/ZMTP PING; libzmq issue #4226"))
    return out


def identity_collision(ctx: Context) -> list[dict[str, Any]]:
    by_router: dict[tuple[str, int], list[tuple[ConnFacts, ConnectionInfo]]] = {}
    for facts, info in ctx.zmtp():
        if facts.socket_types.get("s2c") == "ROUTER" and facts.identities.get("c2s"):
            by_router.setdefault(info.server, []).append((facts, info))
    out = []
    for server, peers in by_router.items():
        peers.sort(key=lambda p: p[1].first_ts)
        for i, (first, first_info) in enumerate(peers):
            for second, second_info in peers[i + 1:]:
                same = first.identities["c2s"] == second.identities["c2s"]
                if same and second_info.first_ts <= first_info.last_ts:
                    ident = first.identities["c2s"]
                    out.append(finding(
                        "identity-collision", "error", [first.conn, second.conn],
                        f"two peers of the ROUTER at {endpoint(server)} announce the same Identity {ident!r} "
                        f"(connections {first.conn} and {second.conn}, both open): the ROUTER routes to one of "
                        "them only (libzmq refuses the second unless ROUTER_HANDOVER is set)",
                        [f.metadata["c2s"] for f in (first, second) if "c2s" in f.metadata],
                        "23/ZMTP The Identity Property"))
    return out


def round_robin_skew(ctx: Context) -> list[dict[str, Any]]:
    by_sender: dict[tuple[str, int], list[ConnFacts]] = {}
    for facts, info in ctx.zmtp():
        if facts.socket_types.get("s2c") in ("PUSH", "DEALER"):
            by_sender.setdefault(info.server, []).append(facts)
    out = []
    for server, peers in by_sender.items():
        if len(peers) < 2:
            continue
        counts = {f.conn: f.messages["s2c"] for f in peers}
        total = sum(counts.values())
        low, high = min(counts.values()), max(counts.values())
        if total < 2 * len(peers) or high - low <= max(2, 0.25 * total / len(peers)):
            continue
        kind = peers[0].socket_types["s2c"]
        why = []
        for f in sorted(peers, key=lambda f: counts[f.conn]):
            before = ctx.senders.before.get((f.conn, "s2c"), 0)
            if counts[f.conn] < high and before > 0 and before >= high - counts[f.conn]:
                why.append(f"connection {f.conn} got its first message only after {before} had gone to the "
                           "others: it connected late")
        if not why:
            why.append("no late connection explains it: a full pipe (the peer's receive high-water mark, or a "
                       "slow reader: see the TCP notes) makes round robin skip a peer")
        shares = ", ".join(f"{c}: {n}" for c, n in sorted(counts.items(), key=lambda x: conn_key(x[0])))
        out.append(finding(
            "round-robin-skew", "warn", counts,
            f"the {kind} at {endpoint(server)} sent its {total} messages unevenly ({shares}); " + "; ".join(why),
            [], "23/ZMTP The Pipeline Pattern (round robin); zguide ch. 1 'load balancing'"))
    return out


def handshake_incomplete(ctx: Context) -> list[dict[str, Any]]:
    out = []
    for facts, info in ctx.zmtp():
        if facts.handshake_done() is not None:
            continue
        errors = [c for c in facts.commands if c.name == "ERROR"]
        noted = [e for e in facts.experts if e[0] == "handshake"]
        if (not errors and not noted) or any(e[1] == "error" and e[0] in ("mechanism", "socket-type")
                                             for e in facts.experts):
            continue  # (a mismatch is its own finding: it says why)
        if errors:
            reason = errors[0].details.get("reason", "")
            d = errors[0].ref.dir
            who = facts.sender(d) or ("client" if d == "c2s" else "server")
            text = f"the handshake never completed: the {who} ({d}) refused it with ERROR {reason!r}"
            where = [errors[0].ref]
        else:
            text = f"the handshake never completed: the connection ended ({info.closed or 'end of capture'}) before " \
                   "both sides were ready"
            where = [noted[0][3]]
        hellos = [c for c in facts.commands if c.name == "HELLO"]
        if facts.mechanism == "CURVE" and hellos and not any(c.name == "WELCOME" for c in facts.commands):
            if facts.conn in ctx.curve:
                text += "; the server never answered the client's HELLO (see the CURVE check)"
            else:
                text += ("; the server never answered the client's HELLO, which is what a client with the wrong "
                         "server public key looks like: give the server's secret key to check it (the Overview's "
                         "CURVE check, or zmtplab analyze --curve-secret)")
        out.append(finding("handshake-incomplete", "warn", [facts.conn], text, where,
                           "23/ZMTP Authentication and Confidentiality"))
    return out


def from_dissector(rule: str, expert_rule: str, must_contain: str, ref: str) -> Callable[[Context], list]:
    """A rule that lifts one of the dissector's own expert findings to the capture's diagnosis."""

    def rule_fn(ctx: Context) -> list[dict[str, Any]]:
        out = []
        for facts, _info in ctx.zmtp():
            for name, severity, text, where in facts.experts:
                if name == expert_rule and must_contain in text:
                    out.append(finding(rule, severity, [facts.conn], text, [where], ref))
                    break
        return out

    return rule_fn


def heartbeat_timeout(ctx: Context) -> list[dict[str, Any]]:
    out = []
    for facts, info in ctx.zmtp():
        if info.closed not in ("fin", "rst"):
            continue
        end = info.last_ts
        pings = [c for c in facts.commands if c.name == "PING"]
        for d in ("c2s", "s2c"):
            mine = [p for p in pings if p.ref.dir == d]
            if not mine:
                continue
            last = mine[-1]
            ttl = (last.details.get("ttl") or 0) / 10
            quiet = end - facts.last_event.get(d, last.ref.ts)
            answered = facts.last_event.get(OTHER[d], 0) >= last.ref.ts
            who = facts.sender(d) or d
            if ttl and quiet >= 0.9 * ttl:
                text = (f"the {who}'s PING announced a TTL of {ttl:g} s; nothing more came from it, and the connection "
                        f"closed {quiet:.2f} s after its last traffic: the peer timed it out (heartbeat TTL)")
            elif not answered and end - last.ref.ts >= 0.1:
                text = (f"the {who}'s last PING got no answer (no PONG, no traffic) and the connection closed "
                        f"{end - last.ref.ts:.2f} s later: a heartbeat timeout")
            else:
                continue
            out.append(finding("heartbeat-timeout", "warn", [facts.conn], text, [last.ref],
                               "37/ZMTP Connection Heartbeating"))
    return out


def back_pressure(ctx: Context) -> list[dict[str, Any]]:
    out = []
    for facts, info in ctx.zmtp():
        for d in ("c2s", "s2c"):  # d: the direction of the reader's zero-window segments
            stalls = [(where, (end if end is not None else info.last_ts) - where.ts)
                      for where, end in facts.stalls if where.dir == d]
            stalls = [(where, held) for where, held in stalls if held >= STALL_SECONDS]
            sender = OTHER[d]
            if not stalls or not facts.messages[sender]:
                continue
            reader = facts.sender(d) or ("client" if d == "c2s" else "server")
            writer = facts.sender(sender) or ("client" if sender == "c2s" else "server")
            where, held = max(stalls, key=lambda s: s[1])
            out.append(finding(
                "back-pressure", "warn", [facts.conn],
                f"the {reader} ({d}) stopped reading: its TCP window stayed at zero for {held:.2f} s (from packet "
                f"#{where.packets[0] if where.packets else '?'}) while the {writer} had messages for it "
                f"({facts.messages[sender]} sent in all). ZeroMQ then queues them up to the sender's SNDHWM and "
                "blocks (PUSH, DEALER, REQ) or drops (PUB, ROUTER) beyond it",
                [where], "23/ZMTP; zguide ch. 2 'High-Water Marks'"))
    return out


def curve_handshakes(ctx: Context) -> list[dict[str, Any]]:
    """Each CURVE connection's first HELLO and WELCOME as they crossed the wire (public: keys and boxes, no
    secret), what `check_curve` needs; the analysis keeps them so that a server key given later can be checked."""
    out = []
    for facts, _info in ctx.zmtp():
        if facts.mechanism != "CURVE":
            continue
        found = {}
        for name in ("HELLO", "WELCOME"):
            cmd = next((c for c in facts.commands if c.name == name and "hex" in c.details), None)
            if cmd is not None:
                found[name.lower()] = {"hex": cmd.details["hex"], "event": cmd.ref.to_dict()}
        if "hello" in found:
            out.append({"conn": facts.conn, **found})
    return out


def check_curve(handshakes: list[dict[str, Any]], secrets: list[bytes]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The CURVE doctor: with the server's long-term secret key(s), does each HELLO open? If it does not, the
    client holds another server public key (a `curve-wrong-server-key` finding); if it does, WELCOME is opened
    too and the server's short-term key shown. Returns (per connection what it found, the findings); the keys
    are used here and kept nowhere."""
    curve: dict[str, Any] = {}
    out = []
    for hs in handshakes:
        body = _command_body(hs["hello"]["hex"])
        opened = next((s for s in secrets if hello_problem(body, s) is None), None)
        if opened is None:
            curve[hs["conn"]] = {"hello": "does not open", "why": hello_problem(body, secrets[0]) or ""}
            out.append({
                "rule": "curve-wrong-server-key", "severity": "error", "conns": [hs["conn"]],
                "text": "the client's HELLO does not open with the server secret key given: the client holds another "
                        "server public key (the server drops such a HELLO without a word, so it looks like a dead "
                        "server)",
                "events": [hs["hello"]["event"]], "ref": "26/CurveZMQ HELLO; 25/ZMTP-CURVE"})
            continue
        found: dict[str, Any] = {"hello": "opens"}
        if "welcome" in hs:
            short = open_welcome(_command_body(hs["welcome"]["hex"]), opened, body[80:112])
            found["welcome"] = "opens" if short else "does not open"
            if short:
                found["server_short_key"] = z85_encode(short).decode()
        curve[hs["conn"]] = found
    return curve, out


def curve_doctor(ctx: Context) -> list[dict[str, Any]]:
    """`check_curve` with the keys given to the analysis (`ctx.curve` gets what it found)."""
    if not ctx.curve_secrets:
        return []
    ctx.curve, found = check_curve(curve_handshakes(ctx), ctx.curve_secrets)
    return found


def _command_body(hex_text: str) -> bytes:
    raw = bytes.fromhex(hex_text)
    return raw[9:] if raw[0] & 2 else raw[2:]


RULES: tuple[Callable[[Context], list[dict[str, Any]]], ...] = (
    curve_doctor,  # first: handshake-incomplete reads what it found
    late_subscriber,
    ping_ttl,
    identity_collision,
    round_robin_skew,
    handshake_incomplete,
    from_dissector("mechanism-mismatch", "mechanism", "mechanism mismatch",
                   "23/ZMTP Authentication and Confidentiality"),
    from_dissector("invalid-socket-pair", "socket-type", "invalid socket pair", "23/ZMTP The Socket-Type Property"),
    heartbeat_timeout,
    back_pressure,
)

SEVERITY_ORDER = {"error": 0, "warn": 1, "note": 2}


def diagnose(ctx: Context) -> list[dict[str, Any]]:
    """Every rule's findings, the most severe first."""
    out = [f for rule in RULES for f in rule(ctx)]
    out.sort(key=lambda f: (SEVERITY_ORDER[f["severity"]], conn_key(f["conns"][0]) if f["conns"] else (0, "")))
    return out
