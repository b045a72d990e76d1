"""The one node spec (peers.node.Node): every shape of a node is one, checked once, with one set of limits."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from webkit import TestClient

from zmtplab.peers.node import MAX_PROXIES, MAX_SCRIPT, Node, socket_options
from zmtplab.peers.topology import Topology
from zmtplab.web.models import PeerConfig, SessionCreate


def test_a_two_peer_side_is_a_node():
    side = PeerConfig(type="SUB", mechanism="PLAIN", username="u", password="p", subscribe="weather.")
    node = side.node("client")
    assert isinstance(node, Node)
    assert (node.name, node.type, node.subscribe, node.mechanism) == ("client", "SUB", ("weather.",), "PLAIN")
    assert socket_options(node, server=False) == {"version": "3.1", "mechanism": "PLAIN", "identity": b"",
                                                  "strategy": "partial", "username": "u", "password": "p"}
    assert PeerConfig(type="SUB", subscribe=None).node("s").subscribe == ()


def test_a_node_round_trips_and_refuses_what_cannot_run():
    node = Node.model_validate({"name": "w", "type": "PULL", "recv": {"every": 0.5}, "rcvbuf": 1024})
    assert node.recv_every == 0.5 and Node.model_validate(node.to_dict()) == node
    with pytest.raises(ValidationError, match=r"ZMTP 1\.0 has no security mechanisms"):
        Node(name="a", type="PAIR", version="1.0", mechanism="CURVE")
    with pytest.raises(ValidationError, match="sndhwm is a whole number"):
        Node(name="a", type="PAIR", sndhwm=True)


def test_the_web_body_and_the_topology_share_the_limits():
    """The body took 64 proxies and 1,024 sends where a topology runs 12 and 256: the model says so now."""
    nodes = [{"name": "a", "type": "ROUTER"}, {"name": "b", "type": "DEALER"}]
    proxies = [{"frontend": "a", "backend": "b"}] * (MAX_PROXIES + 1)
    with pytest.raises(ValidationError) as info:
        SessionCreate.model_validate({"nodes": nodes, "links": [], "proxies": proxies})
    [problem] = info.value.errors()
    assert problem["type"] == "too_long" and problem["loc"] == ("proxies",)
    script = [{"from": "b", "frames": ["x"]}] * (MAX_SCRIPT + 1)
    with pytest.raises(ValidationError, match=f"at most {MAX_SCRIPT} items"):
        SessionCreate.model_validate({"nodes": nodes, "links": [], "script": script})
    ok = SessionCreate.model_validate({"nodes": nodes, "links": [{"connect": "b", "bind": "a"}]})
    assert ok.topology == Topology.from_dict({"nodes": nodes, "links": [{"connect": "b", "bind": "a"}]})


def test_a_nodes_problems_are_the_models_in_the_language_asked_for(client: TestClient):
    """A node's own problems come from its model, located at the node's field, in Chinese as asked."""
    body = {"mode": "simulated", "nodes": [{"name": "a", "type": "PUSH", "colour": "red"}], "links": []}
    r = client.post("/api/sessions", json=body, headers={"Accept-Language": "zh-CN"})
    assert r.status_code == 422, r.text
    [problem] = r.json()["detail"]
    assert problem["loc"] == ["body", "nodes", 0, "colour"] and problem["msg"] == "不允许此项"


@pytest.mark.parametrize("mode", ["simulated", "tcp"])
def test_a_two_peer_side_no_node_may_be_is_refused_by_its_side(client: TestClient, mode: str):
    """PLAIN on ZMTP 2.0 is no node (the spec refuses it): a two-peer body answers 422 naming the side, not 500."""
    body = {"mode": mode, "server": {"type": "REP", "version": "2.0", "mechanism": "PLAIN"},
            "client": {"type": "REQ"}}
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"] == "server: ZMTP 2.0 has no security mechanisms; only NULL"
