"""External nodes of real topology sessions (issue 34.1): a program outside the lab is a node. The session listens
on an endpoint of its own, its `topology` message says where, and a real pyzmq socket that connects there is
that node: its greeting, READY and messages are the session's events, the lab's sockets route to it and say so,
and a hostile peer is cut off with an error event, never the session."""

from __future__ import annotations

from typing import Any

import pytest
import zmq
from webkit import events_of, open_client, receive_until

pytestmark = pytest.mark.timeout(60)

ROUTER_TOPOLOGY = {"mode": "tcp", "nodes": [{"name": "router", "type": "ROUTER", "echo": True},
                                            {"name": "w1", "type": "DEALER"},
                                            {"name": "you", "type": "DEALER", "external": True}],
                   "links": [{"connect": "w1", "bind": "router"}, {"connect": "you", "bind": "router"}]}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("external")) as c:
        yield c


def create(client, body: dict[str, Any]) -> str:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def external_node(message: dict[str, Any], name: str) -> dict[str, Any]:
    assert message["type"] == "topology"
    return next(n for n in message["topology"]["nodes"] if n["name"] == name)


def address(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
    return host.strip("[]"), int(port)


def test_a_pyzmq_dealer_on_an_external_node_gets_routed_replies(client):
    """A real libzmq DEALER connects to the endpoint the topology message names: its READY is an event of the
    session, the ROUTER's echo routes each reply back to it by its identity (a decision it shows), and the DEALER
    receives them."""
    session_id = create(client, ROUTER_TOPOLOGY)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        you = external_node(ws.receive_json(), "you")
        assert you["external"] is True and you["endpoint"].startswith("tcp://127.0.0.1:")
        ctx = zmq.Context()
        dealer = ctx.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.setsockopt(zmq.ROUTING_ID, b"student-7")
        dealer.setsockopt(zmq.RCVTIMEO, 10_000)
        try:
            dealer.connect(you["endpoint"])
            dealer.send(b"hello lab")
            assert dealer.recv() == b"hello lab"  # the ROUTER's application echoed it, routed by identity
            seen = receive_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "socket"
                                 and m["event"]["node"] == "router" and m["event"]["what"] == "route")
        finally:
            dealer.close()
            ctx.term()
        topologies = [m for m in seen if m["type"] == "topology"]
        conns = topologies[-1]["topology"]["conns"]
        ext = next(c for c in conns if c["client"] == "you")
        assert ext["server"] == "router" and ext["link"] == 1
        events = events_of(seen)
        mine = [e for e in events if e.get("conn") == ext["conn"]]
        ready = next(e for e in mine if e["kind"] == "command" and e["name"] == "READY" and e["dir"] == "c2s")
        assert ready["properties"] == {"Socket-Type": "DEALER", "Identity": "student-7"}
        assert any(e["kind"] == "message" and e["dir"] == "c2s" and e["frames"] == [b"hello lab".hex()]
                   for e in mine)
        route = [e for e in events if e["kind"] == "socket" and e["node"] == "router" and e["what"] == "route"][-1]
        assert route["rule"] == "identity-routing" and route["peer"] == "you" and route["conn"] == ext["conn"]
        read = next(e for e in events if e["kind"] == "peer" and e["peer"] == "router")
        assert read["frames"] == [b"student-7".hex(), b"hello lab".hex()] and "msg" in read
