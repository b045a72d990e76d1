"""Who talks to whom: the capture's nodes and connections.

A node is what the capture can tell apart: an `ip:port` endpoint. Endpoints that messages are seen
to be forwarded between (a flow's hop, `flows.py`) are one process: the node is then a broker
candidate (it accepts on one port and sends on or from another).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from ..capture.dissect import ConnectionInfo
from ..engine.constants import is_valid_pair
from .facts import ConnFacts


def endpoint(addr: tuple[str, int]) -> str:
    """`ip:port`, IPv6 in brackets (as the capture summary writes endpoints)."""
    ip, port = addr
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def connection_row(info: ConnectionInfo, facts: ConnFacts | None) -> dict[str, Any]:
    """One connection of `analyze --json`."""
    facts = facts or ConnFacts(info.conn)
    client_type, server_type = facts.socket_types.get("c2s"), facts.socket_types.get("s2c")
    valid = is_valid_pair(client_type, server_type) if client_type and server_type else None
    return {
        "conn": info.conn, "client": endpoint(info.client), "server": endpoint(info.server),
        "client_type": client_type, "server_type": server_type, "valid_pair": valid,
        "zmtp": bool(info.zmtp), "versions": dict(facts.versions), "mechanism": facts.mechanism,
        "identities": dict(facts.identities), "messages": dict(facts.messages),
        "handshake": facts.handshake_done() is not None,
        "subscriptions": [{"what": what, "topic": topic.decode("utf-8", "replace") if topic.isascii() else topic.hex(),
                           "ts": where.ts} for where, what, topic in facts.subscriptions],
        "first_ts": info.first_ts, "last_ts": info.last_ts, "closed": info.closed,
    }


def nodes(connections: list[dict[str, Any]], flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nodes: endpoints, grouped where flows show messages forwarded from one to another."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

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
            a, b = find(before["to"]), find(after["from"])
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = {}
    for ep in parent:
        groups.setdefault(find(ep), []).append(ep)
    out = []
    for members in groups.values():
        members.sort(key=_sort_key)
        out.append({
            "id": "+".join(members),
            "endpoints": members,
            "listens": [ep for ep in members if ep in listens],
            "sockets": {ep: sorted(sockets.get(ep, ())) for ep in members},
            "broker": len(members) > 1,
            "connections": sorted({c for ep in members for c in conns.get(ep, [])}, key=conn_key),
        })
    out.sort(key=lambda n: _sort_key(n["endpoints"][0]))
    return out


def _sort_key(ep: str) -> tuple[str, int]:
    host, _, port = ep.rpartition(":")
    return host, int(port)


def conn_key(conn: str) -> tuple[int, str]:
    """Sorts connection ids as numbers ("2" before "10"), any other id after them."""
    return (int(conn), conn) if conn.isdigit() else (1 << 62, conn)
