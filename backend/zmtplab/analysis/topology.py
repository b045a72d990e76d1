"""Who talks to whom: the capture's nodes, its connections, and the connects that never got one.

A node is what the capture can tell apart: an `ip:port` endpoint. Endpoints a relay forwards between (a
flow's hop, `flows.py`) are one process: the node is then a broker candidate (it accepts on one port and
sends on or from another). One socket listening on IPv4 and IPv6 (a dual-stack bind) is one node where the
capture shows it: the loopback's two addresses with the same port and socket type.

A connection row is the model later tools build on (replaying a capture as a topology among them): its
endpoints, socket types, identities, versions, mechanism, subscriptions, messages per direction, and when
it was connected, handshaken and closed, by whom and how. A connect the server refused (SYN answered by
RST) is no connection: they are counted per endpoint in `refused`.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from ..capture.dissect import ConnectionInfo
from ..engine.constants import is_valid_pair
from ..engine.notation import format_address
from .facts import DIRS, ConnFacts
from .flows import host


def endpoint(addr: tuple[str, int]) -> str:
    """`ip:port`, IPv6 in brackets (as the capture summary writes endpoints)."""
    return format_address(*addr)


def role(d: str) -> str:
    """The TCP role of a direction's sender."""
    return "client" if d == "c2s" else "server"


def shown_topic(topic: bytes) -> str:
    return topic.decode("utf-8", "replace") if topic.isascii() else topic.hex()


def close_of(info: ConnectionInfo) -> dict[str, Any]:
    """Who closed the connection first (FIN or RST), when, and what each side did."""
    moves = [(ts, d, "fin") for d, ts in info.fin.items()] + [(ts, d, "rst") for d, ts in info.rst.items()]
    out: dict[str, Any] = {"by": None, "how": None, "ts": None, "fin": dict(info.fin), "rst": dict(info.rst)}
    if moves:
        ts, d, how = min(moves)
        out.update(by=role(d), how=how, ts=ts, dir=d)
    return out


def refused(info: ConnectionInfo) -> bool:
    """A connect the server refused: its SYN answered by a RST, no SYN/ACK."""
    return info.syn_seen and not info.syn_ack and "s2c" in info.rst and not info.zmtp


def connection_row(info: ConnectionInfo, facts: ConnFacts | None) -> dict[str, Any]:
    """One connection of `analyze --json`."""
    facts = facts or ConnFacts(info.conn)
    client_type, server_type = facts.socket_types.get("c2s"), facts.socket_types.get("s2c")
    valid = is_valid_pair(client_type, server_type) if client_type and server_type else None
    return {
        "conn": info.conn, "client": endpoint(info.client), "server": endpoint(info.server),
        "client_type": client_type, "server_type": server_type, "valid_pair": valid,
        "zmtp": bool(info.zmtp), "versions": dict(facts.versions), "mechanism": facts.mechanism,
        "identities": dict(facts.identities), "messages": dict(facts.messages), "encrypted": dict(facts.encrypted),
        "handshake": facts.handshake_done() is not None,
        "subscriptions": [{"what": s.what, "topic": shown_topic(s.topic), "ts": s.ref.ts, "dir": s.ref.dir,
                           "form": s.form} for s in facts.subscriptions],
        "first_ts": info.first_ts, "last_ts": info.last_ts, "closed": info.closed,
        "connected": info.syn_ack if info.syn_seen else None, "handshake_ts": facts.handshake_done(),
        "close": close_of(info),
    }


def refused_groups(infos: list[ConnectionInfo]) -> list[dict[str, Any]]:
    """The refused connects, per endpoint that refused them: how many, between when, from where."""
    groups: dict[str, dict[str, Any]] = {}
    for info in infos:
        if not refused(info):
            continue
        server = endpoint(info.server)
        g = groups.setdefault(server, {"server": server, "count": 0, "first_ts": info.first_ts, "last_ts": 0.0,
                                       "clients": [], "conns": []})
        g["count"] += 1
        g["first_ts"] = min(g["first_ts"], info.first_ts)
        g["last_ts"] = max(g["last_ts"], info.last_ts)
        client = endpoint(info.client)
        if client not in g["clients"]:
            g["clients"].append(client)
        g["conns"].append(info.conn)
    return sorted(groups.values(), key=lambda g: g["first_ts"])


def nodes(connections: list[dict[str, Any]], flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nodes: endpoints, grouped where flows show messages forwarded from one to another and where one
    socket listens on the loopback's IPv4 and IPv6 addresses."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        a, b = find(a), find(b)
        if a != b:
            parent[max(a, b)] = min(a, b)

    sockets: dict[str, set[str]] = {}
    conns: dict[str, list[str]] = {}
    listens: set[str] = set()
    for c in connections:
        for side, kind in (("client", "client_type"), ("server", "server_type")):
            find(c[side])
            conns.setdefault(c[side], []).append(c["conn"])
            if c[kind]:
                sockets.setdefault(c[side], set()).add(c[kind])
        listens.add(c["server"])
    for flow in flows:
        if flow["ambiguous"]:
            continue
        for before, after in pairwise(flow["hops"]):
            union(before["to"], after["from"])
    dual: dict[tuple[str, int], list[str]] = {}  # (host, port) of listening endpoints: IPv4 and IPv6 of one host
    for ep in listens:
        ip, _, port = ep.rpartition(":")
        key = host(ip.strip("[]"))
        if key == "loopback":
            dual.setdefault((key, int(port)), []).append(ep)
    for same in dual.values():
        if len(same) > 1 and len({frozenset(sockets.get(ep, ())) for ep in same}) == 1:
            for ep in same[1:]:
                union(same[0], ep)
    groups: dict[str, list[str]] = {}
    for ep in parent:
        groups.setdefault(find(ep), []).append(ep)
    out = []
    for members in groups.values():
        members.sort(key=_sort_key)
        ports = {_sort_key(ep)[1] for ep in members}
        out.append({
            "id": "+".join(members),
            "endpoints": members,
            "listens": [ep for ep in members if ep in listens],
            "sockets": {ep: sorted(sockets.get(ep, ())) for ep in members},
            "broker": len(ports) > 1,
            "dual_stack": len(members) > 1 and len(ports) == 1,
            "connections": sorted({c for ep in members for c in conns.get(ep, [])}, key=conn_key),
        })
    out.sort(key=lambda n: _sort_key(n["endpoints"][0]))
    return out


def _sort_key(ep: str) -> tuple[str, int]:
    host_part, _, port = ep.rpartition(":")
    return host_part, int(port)


def conn_key(conn: str) -> tuple[int, str]:
    """Sorts connection ids as numbers ("2" before "10"), any other id after them."""
    return (int(conn), conn) if conn.isdigit() else (1 << 62, conn)


__all__ = ["DIRS", "close_of", "conn_key", "connection_row", "endpoint", "nodes", "refused", "refused_groups",
           "role", "shown_topic"]
