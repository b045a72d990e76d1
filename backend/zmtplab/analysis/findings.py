"""The diagnosis: what is wrong in a capture, across its connections.

Each finding has a `rule` id, a `severity` (`note`, `warn`, `error`, as expert events), the `conns`
it is about, the `events` it cites (conn, dir, offset, kind, packets, ts), a plain-language `text`,
a `ref` (the spec section or issue behind it) and `details`: the numbers it states, by name, for a
program to read. Two trackers follow the capture as it streams by: `Publications` (a `facts.MessageHandler`
over what publishers send, and a subscription handler) for late and absent subscribers, `Sends` (a count
handler) for round-robin skew. The rules themselves are functions of the collected facts and of the capture's
TCP connections (`ConnectionInfo`: who closed first, zero windows, refused connects). Judging what a socket
should have done runs the simulator's own sockets (`peers.sockets.Socket`): a PUB's subscriptions and prefix
match for what a subscriber should have got, a PUSH's or DEALER's round robin for how its messages should
have been shared.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..capture.dissect import ConnectionInfo
from ..engine.curve import hello_problem, open_welcome, z85_encode
from ..peers.sockets import LB_TYPES, PUBLISHERS, Pipe, Socket
from .facts import DIRS, OTHER, Address, ConnFacts, EventRef, Subscription
from .flows import host
from .topology import close_of, conn_key, endpoint, refused_groups, role, shown_topic

PING_TTL_LIMIT = 656  # deciseconds: libzmq 4.3.x mishandles a PING TTL of 65.6 s and more (issue #4226)
MAX_TOPICS = 10_000  # distinct first frames counted per publishing connection
STALL_SECONDS = 0.1  # a zero window held this long is back-pressure; a shorter one is ordinary flow control
UNANSWERED_SECONDS = 0.1  # a PING no traffic answered for this long, then the pinger closed: it gave up
# Sockets whose round robin is replayed (a REQ's turns would need its replies too).
LOAD_BALANCERS = LB_TYPES - {"REQ"}
MAX_BATCHES = 200_000  # runs of one connection's messages kept per round-robin sender


def finding(rule: str, severity: str, conns: Iterable[str], text: str, events: Iterable[EventRef] = (),
            ref: str = "", details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"rule": rule, "severity": severity, "conns": sorted(set(conns), key=conn_key), "text": text,
            "events": [e.to_dict() for e in events], "ref": ref, "details": details or {}}


def side(facts: ConnFacts, d: str) -> str:
    """`the PULL (server)`'s inner part: the socket type of a direction's sender and its TCP role."""
    kind = facts.sender(d)
    return f"{kind} ({role(d)})" if kind else role(d)


class Publications:
    """What each PUB/XPUB endpoint published (a `facts.MessageHandler`) and the subscriptions it got (a
    subscription handler), on the simulator's PUB: one pipe per connection with the topics its subscriber
    asked for, `Socket.matches` to tell which messages a subscription would have taken."""

    def __init__(self) -> None:
        self.models: dict[Address, Socket] = {}
        self.sent: dict[Address, dict[str, Counter[bytes]]] = {}  # publisher -> conn -> first frames sent
        self.timeline: dict[Address, tuple[list[float], list[int]]] = {}  # when, and how many sent until then
        self.ever: set[str] = set()  # connections whose subscriber subscribed at least once
        self.late: list[tuple[ConnFacts, EventRef, bytes, int, str]] = []  # facts, where, topic, missed, other

    def _pipe(self, publisher: Address, conn: str) -> tuple[Socket, Pipe]:
        model = self.models.get(publisher)
        if model is None:
            model = self.models[publisher] = Socket("PUB")
        pipe = model.pipes.get(conn)
        if pipe is None:
            pipe = model.add_pipe(conn, connect_side=False)
            model.pipe_up(pipe)
        return model, pipe

    def wants(self, facts: ConnFacts, d: str) -> bool:
        return facts.sender(d) in PUBLISHERS and facts.ends(d) is not None

    def __call__(self, facts: ConnFacts, d: str, messages: list[tuple[int, list[bytes]]], ts: Sequence[float],
                 packets: Sequence[list[int]]) -> None:
        ends = facts.ends(d)
        if facts.sender(d) not in PUBLISHERS or ends is None:
            return
        counter = self.sent.setdefault(ends[0], {}).setdefault(facts.conn, Counter())
        for _k, frames in messages:
            topic = frames[0][:64]
            if topic in counter or len(counter) < MAX_TOPICS:
                counter[topic] += 1
        times, totals = self.timeline.setdefault(ends[0], ([], []))
        times.append(ts[messages[-1][0]])
        totals.append((totals[-1] if totals else 0) + len(messages))

    def subscribed(self, facts: ConnFacts, sub: Subscription) -> None:
        """A subscription handler: the publisher's pipe follows it; a subscription that comes after the
        publisher sent matching messages to others is a late one."""
        ends = facts.ends(sub.ref.dir)
        if ends is None:
            return
        publisher = ends[1]
        model, pipe = self._pipe(publisher, facts.conn)
        model.on_subscription(pipe, sub.topic, sub.what == "subscribe")
        if sub.what != "subscribe":
            return
        self.ever.add(facts.conn)
        probe = Pipe("probe", connect_side=False)
        probe.topics = {sub.topic[:64]}
        missed, other = 0, ""
        for conn, counter in self.sent.get(publisher, {}).items():
            if conn == facts.conn:
                continue
            n = sum(c for first, c in counter.items() if model.matches(probe, first))
            if n > missed:
                missed, other = n, conn
        if missed:
            self.late.append((facts, sub.ref, sub.topic, missed, other))

    def published(self, publisher: Address, start: float, end: float, but: str) -> int:
        """How many messages `publisher` sent between `start` and `end` (on any connection; the counts of
        connection `but` left out when it has any)."""
        times, totals = self.timeline.get(publisher, ([], []))
        i, j = bisect_right(times, start), bisect_right(times, end)
        n = (totals[j - 1] if j else 0) - (totals[i - 1] if i else 0)
        mine = sum(self.sent.get(publisher, {}).get(but, Counter()).values())
        return max(0, n - mine)


class Sends:
    """What each PUSH or DEALER that binds sent, batch by batch in capture order (a count handler: messages are
    counted, never taken apart), for `round_robin_skew` to replay through the simulator's socket."""

    def __init__(self, max_batches: int = MAX_BATCHES) -> None:
        self.batches: dict[Address, list[list[Any]]] = {}  # sender -> [when, conn, how many], one per run of a conn
        self.max_batches = max_batches
        self.partial: set[Address] = set()  # senders with more batches than were kept

    def __call__(self, facts: ConnFacts, d: str, count: int, ts: float) -> None:
        if d != "s2c" or facts.sender(d) not in LOAD_BALANCERS or facts.server is None:
            return
        batches = self.batches.setdefault(facts.server, [])
        if batches and batches[-1][1] == facts.conn:
            batches[-1][2] += count  # (one connection's messages in a row: one batch, whatever its length)
        elif len(batches) < self.max_batches:
            batches.append([ts, facts.conn, count])
        else:
            self.partial.add(facts.server)


def round_robin(kind: str, batches: Sequence[Sequence[Any]], up: dict[str, float],
                down: dict[str, float]) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """How round robin shares `batches` (when, conn, how many) among the connections up at the time: the
    simulator's socket of that `kind` (`peers.sockets.Socket`, no high-water mark: the rule alone) with a pipe
    per connection from its handshake (`up`) to its close (`down`). Returns what each connection gets, how many
    messages had gone to the others before it came up, and how many were sent after it closed."""
    socket = Socket(kind, sndhwm=0)
    got = dict.fromkeys(up, 0)

    def routed(what: str, rule: str, pipe: Any, frames: Any, detail: Any) -> None:
        if pipe is not None:
            got[pipe.id] += 1
            pipe.out.clear()

    socket.observer = routed
    joined: dict[str, int] = {}  # the pipes up, with the whole turns dealt before each came up
    turns = pending = 0

    def deal() -> None:
        # While no pipe comes or goes, batches are one: round robin comes back to where it was after one message
        # to each pipe, so whole turns are counted and only the rest goes through the socket, which picks.
        nonlocal turns, pending
        if joined:
            whole, rest = divmod(pending, len(joined))
            turns += whole
            for _ in range(rest):
                socket.send((b"",))
        pending = 0  # (sent before any handshake the capture shows: nobody to count it for)

    moves = [(ts, 0, conn, 0) for conn, ts in up.items()] + [(ts, 2, conn, 0) for conn, ts in down.items()]
    moves += [(ts, 1, conn, n) for ts, conn, n in batches]
    moves.sort(key=lambda m: (m[0], m[1]))
    before: dict[str, int] = {}
    closed: dict[str, int] = {}
    sent = 0
    for _ts, what, conn, n in moves:
        if what == 1:
            sent += n
            pending += n
            continue
        deal()
        if what == 0:
            socket.pipe_up(socket.add_pipe(conn, connect_side=False))
            before[conn] = sent
            joined[conn] = turns
        elif conn in joined:
            socket.remove_pipe(socket.pipes[conn])
            got[conn] += turns - joined.pop(conn)
            closed[conn] = sent
    deal()
    for conn, at in joined.items():
        got[conn] += turns - at
    return got, before, {conn: sent - n for conn, n in closed.items()}


# --------------------------------------------------------------------------- rules


class Context:
    """What the rules read: the facts, the TCP connections, the trackers, CURVE secrets (never kept beyond it)."""

    def __init__(self, facts: dict[str, ConnFacts], infos: dict[str, ConnectionInfo], publications: Publications,
                 sends: Sends, curve_secrets: list[bytes]) -> None:
        self.facts = facts
        self.infos = infos
        self.publications = publications
        self.sends = sends
        self.curve_secrets = curve_secrets
        self.curve: dict[str, dict[str, Any]] = {}  # conn -> what the CURVE doctor found
        self.mismatched: set[str] = set()  # connections a version mismatch explains
        self.start = min((i.first_ts for i in infos.values()), default=0.0)

    def zmtp(self) -> Iterable[tuple[ConnFacts, ConnectionInfo]]:
        for conn, info in self.infos.items():
            if info.zmtp and conn in self.facts:
                yield self.facts[conn], info

    def at(self, ts: float) -> str:
        """A time as seconds into the capture (the text says the unit)."""
        return f"{ts - self.start:.3f}"


def late_subscriber(ctx: Context) -> list[dict[str, Any]]:
    out = []
    for facts, where, topic, missed, other in ctx.publications.late:
        shown = shown_topic(topic)
        out.append(finding(
            "late-subscriber", "warn", [facts.conn, other],
            f"the SUB on connection {facts.conn} subscribed to {shown!r} after the publisher had already sent "
            f"{missed} matching message(s) on connection {other}: it never sees them (the slow joiner; "
            "PUB drops what no subscriber has asked for yet)", [where],
            "23/ZMTP The Publish-Subscribe Pattern; zguide ch. 1 'slow joiner'",
            {"topic": shown, "missed": missed, "other": other}))
    return out


def never_subscribed(ctx: Context) -> list[dict[str, Any]]:
    """A SUB whose connection sent no subscription while its publisher published to others: it gets nothing."""
    out = []
    for facts, info in ctx.zmtp():
        for d in DIRS:
            ends = facts.ends(d)
            ready = facts.handshake_done()
            if facts.sender(d) != "SUB" or facts.conn in ctx.publications.ever or ends is None or ready is None:
                continue
            close = close_of(info)["ts"] or info.last_ts
            published = ctx.publications.published(ends[1], ready, close, facts.conn)
            if not published:
                continue
            out.append(finding(
                "never-subscribed", "warn", [facts.conn],
                f"the SUB on connection {facts.conn} never subscribed (no SUBSCRIBE, no %x01 message) while its "
                f"publisher at {endpoint(ends[1])} published {published} message(s) to others: a SUB receives "
                "nothing until it subscribes (ZMQ_SUBSCRIBE, an empty topic for everything)",
                [facts.metadata[d]] if d in facts.metadata else [],
                "23/ZMTP The Publish-Subscribe Pattern; zmq_setsockopt ZMQ_SUBSCRIBE",
                {"published": published, "publisher": endpoint(ends[1])}))
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
                "connection out far too early or never", [pings[0].ref], "37/ZMTP PING; libzmq issue #4226",
                {"ttl": ttl / 10, "pings": len(pings)}))
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
                        "23/ZMTP The Identity Property", {"identity": ident}))
    return out


def round_robin_skew(ctx: Context) -> list[dict[str, Any]]:
    """A PUSH or DEALER that binds and shared its messages unevenly among its peers; why, from what round robin
    (the simulator's socket, `round_robin`) gives the connections up at the time: one that came up late or closed
    early, else a peer round robin skipped (a full pipe)."""
    by_sender: dict[Address, list[tuple[ConnFacts, ConnectionInfo]]] = {}
    for facts, info in ctx.zmtp():
        if facts.sender("s2c") in LOAD_BALANCERS:
            by_sender.setdefault(info.server, []).append((facts, info))
    out = []
    for server, peers in by_sender.items():
        if len(peers) < 2:
            continue
        counts = {f.conn: f.messages["s2c"] for f, _info in peers}
        total = sum(counts.values())
        low, high = min(counts.values()), max(counts.values())
        tolerance = max(2, 0.25 * total / len(peers))
        if total < 2 * len(peers) or high - low <= tolerance:
            continue
        kind = peers[0][0].sender("s2c") or "PUSH"
        up = {f.conn: ts for f, _info in peers if (ts := f.handshake_done()) is not None}
        down = {f.conn: ts for f, info in peers if (ts := close_of(info)["ts"]) is not None and f.conn in up}
        expected, before, after = round_robin(kind, ctx.sends.batches.get(server, []), up, down)
        explained = server not in ctx.sends.partial and all(
            abs(n - expected.get(c, 0)) <= tolerance for c, n in counts.items())
        why, reasons = [], {}
        if explained:
            for c in sorted(counts, key=conn_key):
                if counts[c] >= high:
                    continue
                if before.get(c, 0) > 0:
                    reasons[c] = "late"
                    why.append(f"connection {c} got its first message only after {before[c]} had gone to the "
                               "others: it connected late")
                if after.get(c, 0) > 0:
                    reasons[c] = "closed"
                    why.append(f"connection {c} closed while {after[c]} more were sent: round robin shared those "
                               "among the others")
        if not why:
            reasons = {c: "skipped" for c, n in counts.items() if n < expected.get(c, 0) - tolerance}
            why.append(f"round robin over the connections up at the time would have given {shares(expected)}: a "
                       "full pipe (the peer's receive high-water mark, or a slow reader: see the TCP notes) makes "
                       "round robin skip a peer")
        out.append(finding(
            "round-robin-skew", "warn", counts,
            f"the {kind} at {endpoint(server)} sent its {total} messages unevenly ({shares(counts)}); "
            + "; ".join(why),
            [], "23/ZMTP The Pipeline Pattern (round robin); zguide ch. 1 'load balancing'",
            {"counts": counts, "total": total, "expected": expected, "why": sorted(set(reasons.values()))}))
    return out


def shares(counts: dict[str, int]) -> str:
    """`0: 14, 1: 14, 2: 4`: how many messages each connection got, in connection order."""
    return ", ".join(f"{c}: {n}" for c, n in sorted(counts.items(), key=lambda x: conn_key(x[0])))


def version_mismatch(ctx: Context) -> list[dict[str, Any]]:
    """A ZMTP 1.0/2.0 peer against one that speaks 3.x and will not downgrade (it has a security mechanism or
    a ZAP domain): the 3.x side closes right after the greetings, without ERROR; a peer that reconnects does
    it again, for ever (libzmq issue #4106)."""
    groups: dict[tuple[str, str, str], list[tuple[ConnFacts, ConnectionInfo, str]]] = {}
    for facts, info in ctx.zmtp():
        if facts.handshake_done() is not None:
            continue
        for d in DIRS:
            old, other = facts.versions.get(d), OTHER[d]
            if old not in ("1.0", "2.0") or facts.versions.get(other) in ("1.0", "2.0"):
                continue
            if close_of(info).get("dir") != other:
                continue  # (the 3.x side closed first, or nobody did)
            groups.setdefault((endpoint(info.server), host(info.client[0]), d), []).append((facts, info, old))
    out = []
    for (server, _client_host, d), conns in groups.items():
        for facts, _info, _old in conns:
            ctx.mismatched.add(facts.conn)
        first_facts, first_info, old = conns[0]
        last_info = conns[-1][1]
        n = len(conns)
        text = (f"the {side(first_facts, d)} greets with ZMTP {old} and the {role(OTHER[d])} closes the connection "
                "right after the greetings, without ERROR: a ZMTP 3.x peer with a security mechanism or a ZAP domain "
                "refuses 1.0 and 2.0 peers")
        if n > 1:
            text += (f"; the {role(d)} reconnected and the same happened {n} times between "
                     f"{ctx.at(first_info.first_ts)} s and {ctx.at(last_info.last_ts)} s into the capture: a reconnect "
                     "loop that never ends by itself (libzmq issue #4106)")
        out.append(finding(
            "version-mismatch", "error", [f.conn for f, _i, _o in conns], text,
            [e[3] for e in first_facts.experts if e[0] == "greeting"][:1],
            "23/ZMTP Version Negotiation; libzmq issue #4106",
            {"attempts": n, "versions": [old, "3.x"], "server": server, "closed_by": role(OTHER[d])}))
    return out


def handshake_incomplete(ctx: Context) -> list[dict[str, Any]]:
    out = []
    for facts, info in ctx.zmtp():
        if facts.handshake_done() is not None or facts.conn in ctx.mismatched:
            continue
        errors = [c for c in facts.commands if c.name == "ERROR"]
        noted = [e for e in facts.experts if e[0] == "handshake"]
        if (not errors and not noted) or any(e[1] == "error" and e[0] in ("mechanism", "socket-type")
                                             for e in facts.experts):
            continue  # (a mismatch is its own finding: it says why)
        if errors:
            reason = errors[0].details.get("reason", "")
            d = errors[0].ref.dir
            who = facts.sender(d) or role(d)
            text = f"the handshake never completed: the {who} ({d}) refused it with ERROR {reason!r}"
            where = [errors[0].ref]
            details = {"refused_by": role(d), "reason": reason}
        else:
            text = f"the handshake never completed: the connection ended ({info.closed or 'end of capture'}) before " \
                   "both sides were ready"
            where = [noted[0][3]]
            closer = close_of(info)
            details = {"ended": info.closed, "closed_by": closer["by"]}
        hellos = [c for c in facts.commands if c.name == "HELLO"]
        if facts.mechanism == "CURVE" and hellos and not any(c.name == "WELCOME" for c in facts.commands):
            if facts.conn in ctx.curve:
                text += "; the server never answered the client's HELLO (see the CURVE check)"
            else:
                text += ("; the server never answered the client's HELLO, which is what a client with the wrong "
                         "server public key looks like: give the server's secret key to check it (the Overview's "
                         "CURVE check, or zmtplab analyze --curve-secret-file)")
        out.append(finding("handshake-incomplete", "warn", [facts.conn], text, where,
                           "23/ZMTP Authentication and Confidentiality", details))
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
    """The side that gave up on a peer that stopped answering: it closed first (FIN or RST), after PINGs that
    no traffic of the peer answered before that close (what the peer sent after it is no answer), or after
    the TTL the peer's own PING announced ran out."""
    out = []
    for facts, info in ctx.zmtp():
        close = close_of(info)
        d = close.get("dir")
        if d is None or facts.handshake_done() is None:
            continue
        t_close, peer = close["ts"], OTHER[d]
        last_peer = facts.last_traffic(peer, t_close)
        if last_peer is None:
            continue
        after = t_close - last_peer
        peer_pings = [c for c in facts.commands if c.name == "PING" and c.ref.dir == peer and c.ref.ts <= t_close]
        ttl = (peer_pings[-1].details.get("ttl") or 0) / 10 if peer_pings else 0
        mine = [c for c in facts.commands if c.name == "PING" and c.ref.dir == d and last_peer < c.ref.ts <= t_close]
        who = side(facts, d)
        late = [c for c in facts.commands if c.ref.dir == peer and c.ref.ts > t_close]
        if ttl and peer_pings[-1].ref.ts == last_peer and 0.9 * ttl <= after <= ttl + 1.0:
            text = (f"the {who} gave up on its peer: the peer's last PING announced a TTL of {ttl:g} s, nothing more "
                    f"came from it, and the {who} closed the connection ({close['how'].upper()}) {after:.2f} s after "
                    "that: the peer's heartbeat TTL ran out")
            details = {"gave_up": role(d), "after": round(after, 3), "ttl": ttl, "how": close["how"]}
            where = [peer_pings[-1].ref]
        elif mine and t_close - mine[0].ref.ts >= UNANSWERED_SECONDS:
            timeout = t_close - mine[0].ref.ts
            text = (f"the {who} gave up on its peer: its {len(mine)} PING(s) from {ctx.at(mine[0].ref.ts)} s on got no "
                    f"answer (no PONG, no traffic), and it closed the connection ({close['how'].upper()}) "
                    f"{after:.2f} s after the peer's last traffic, {timeout:.2f} s after the first unanswered PING: "
                    f"a heartbeat timeout (HEARTBEAT_TIMEOUT about {timeout:.1f} s)")
            if late:
                text += (f"; what the peer sent {late[0].ref.ts - t_close:.2f} s after the close ({late[0].name}) "
                         "came too late to count")
            details = {"gave_up": role(d), "after": round(after, 3), "timeout": round(timeout, 3),
                       "pings": len(mine), "how": close["how"]}
            where = [mine[0].ref]
        else:
            continue
        out.append(finding("heartbeat-timeout", "warn", [facts.conn], text, where,
                           "37/ZMTP Connection Heartbeating", details))
    return out


def back_pressure(ctx: Context) -> list[dict[str, Any]]:
    """A reader whose TCP window stayed at zero (until its window update, or the writer's next data) while the
    writer had messages for it."""
    out = []
    for facts, info in ctx.zmtp():
        for d in DIRS:  # d: the reader's direction (the sender of the zero-window segments)
            writer = OTHER[d]
            stalls = [(s, (s.end if s.end is not None else info.last_ts) - s.start) for s in info.stalls
                      if s.dir == d]
            stalls = [(s, held) for s, held in stalls if held >= STALL_SECONDS]
            if not stalls or not facts.messages[writer]:
                continue
            stall, held = max(stalls, key=lambda s: s[1])
            until = {"window-update": "its window update", "data": "the writer's next data"}.get(
                stall.ended_by or "", "the end of the connection")
            out.append(finding(
                "back-pressure", "warn", [facts.conn],
                f"the {side(facts, d)} stopped reading: its TCP window stayed at zero for {held:.2f} s (from packet "
                f"#{stall.packet} until {until}) while the {side(facts, writer)} had messages for it "
                f"({facts.messages[writer]} sent in all). ZeroMQ then queues them up to the sender's SNDHWM and "
                "blocks (PUSH, DEALER, REQ) or drops (PUB, ROUTER) beyond it",
                [facts.zero_windows.get(stall.packet) or EventRef(facts.conn, d, 0, "expert", (stall.packet,),
                                                                  stall.start)],
                "23/ZMTP; zguide ch. 2 'High-Water Marks'",
                {"reader": role(d), "held": round(held, 3), "until": stall.ended_by or "end",
                 "stalls": len(stalls)}))
    return out


def refused_connects(ctx: Context) -> list[dict[str, Any]]:
    """Connects a server refused (SYN, RST), per endpoint: a server that was down, or a reconnect storm."""
    out = []
    zmtp = [(f, i) for f, i in ctx.zmtp()]
    for g in refused_groups(list(ctx.infos.values())):
        server = g["server"]
        to_it = [(f, i) for f, i in zmtp if endpoint(i.server) == server]
        before = [i for _f, i in to_it if close_of(i)["ts"] is not None and close_of(i)["ts"] <= g["first_ts"]]
        after = [i for _f, i in to_it if i.first_ts >= g["last_ts"]]
        span = g["last_ts"] - g["first_ts"]
        text = (f"{g['count']} connect(s) to {server} were refused (SYN answered by RST: nothing listened there) "
                f"between {ctx.at(g['first_ts'])} s and {ctx.at(g['last_ts'])} s into the capture ({span:.2f} s)")
        if before:
            last = max(before, key=lambda i: close_of(i)["ts"])
            lc = close_of(last)
            text += f"; before that, connection {last.conn} to it was closed by the {lc['by']} at {ctx.at(lc['ts'])} s"
        if after:
            text += (f"; then connection {after[0].conn} was accepted {after[0].first_ts - g['last_ts']:.2f} s after "
                     "the last refusal: the server was down and came back")
        else:
            text += "; none was accepted afterwards in the capture"
        severity = "warn" if g["count"] >= 5 or not after else "note"
        out.append(finding(
            "refused-connects", severity, g["conns"], text, [],
            "zmq_connect (RECONNECT_IVL, RECONNECT_IVL_MAX); RFC 9293 (RST in reply to a SYN)",
            {"count": g["count"], "server": server, "first_ts": g["first_ts"], "last_ts": g["last_ts"],
             "clients": g["clients"]}))
    return out


def capture_loss(ctx: Context) -> list[dict[str, Any]]:
    """Bytes of ZMTP connections the capture does not hold."""
    conns, gaps, octets = [], 0, 0
    for facts, _info in ctx.zmtp():
        if facts.gaps:
            conns.append(facts.conn)
            gaps += sum(g[0] for g in facts.gaps.values())
            octets += sum(g[1] for g in facts.gaps.values())
    if not gaps:
        return []
    return [finding(
        "capture-loss", "warn", conns,
        f"the capture lacks {octets} octets of ZMTP traffic in {gaps} gap(s) (connection(s) {', '.join(conns)}): "
        "packets the capturing tool dropped or never saw. Message counts there are lower bounds, and nothing is "
        "concluded from what is missing",
        [], "pcapng Interface Statistics (isb_ifdrop); dumpcap -B (buffer size)", {"octets": octets, "gaps": gaps})]


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
    """The CURVE doctor: with the server's long-term secret key(s), does each HELLO open? If it does, WELCOME is
    opened too and the server's short-term key shown. If it does not: where the server answered that HELLO
    with WELCOME, it could open it, so the key given is not this server's (`curve-not-this-server`); where it
    never answered, the client holds another server public key (`curve-wrong-server-key`). Returns (per
    connection what it found, the findings); the keys are used here and kept nowhere."""
    curve: dict[str, Any] = {}
    out = []
    for hs in handshakes:
        body = _command_body(hs["hello"]["hex"])
        opened = next((s for s in secrets if hello_problem(body, s) is None), None)
        if opened is None:
            curve[hs["conn"]] = {"hello": "does not open", "why": hello_problem(body, secrets[0]) or ""}
            if "welcome" in hs:
                out.append(finding(
                    "curve-not-this-server", "note", [hs["conn"]],
                    "the secret key given is not this server's: the client's HELLO does not open with it, but the "
                    "server answered that HELLO with WELCOME, so the server could open it and the client had its "
                    "public key right. Check the key of the server at this endpoint",
                    [], "26/CurveZMQ HELLO, WELCOME; 25/ZMTP-CURVE", {"welcome": True}))
                out[-1]["events"] = [hs["hello"]["event"], hs["welcome"]["event"]]
                continue
            out.append(finding(
                "curve-wrong-server-key", "error", [hs["conn"]],
                "the client's HELLO does not open with the server secret key given: the client holds another "
                "server public key (the server drops such a HELLO without a word, so it looks like a dead server)",
                [], "26/CurveZMQ HELLO; 25/ZMTP-CURVE", {"welcome": False}))
            out[-1]["events"] = [hs["hello"]["event"]]
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
    never_subscribed,
    ping_ttl,
    identity_collision,
    round_robin_skew,
    version_mismatch,  # before handshake-incomplete: the connections it explains are not said twice
    handshake_incomplete,
    from_dissector("mechanism-mismatch", "mechanism", "mechanism mismatch",
                   "23/ZMTP Authentication and Confidentiality"),
    from_dissector("invalid-socket-pair", "socket-type", "invalid socket pair", "23/ZMTP The Socket-Type Property"),
    heartbeat_timeout,
    back_pressure,
    refused_connects,
    capture_loss,
)

SEVERITY_ORDER = {"error": 0, "warn": 1, "note": 2}


def diagnose(ctx: Context) -> list[dict[str, Any]]:
    """Every rule's findings, the most severe first."""
    out = [f for rule in RULES for f in rule(ctx)]
    out.sort(key=lambda f: (SEVERITY_ORDER[f["severity"]], conn_key(f["conns"][0]) if f["conns"] else (0, "")))
    return out
