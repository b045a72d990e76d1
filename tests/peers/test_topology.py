"""Topologies on the simulation: the model's checks, and every preset's socket decisions against libzmq's rules
(who got which message, drops at the HWM, blocking, filtering, routing by identity, the envelope's strip)."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

from zmtplab.peers.decisions import TEMPLATES
from zmtplab.peers.simulation import Simulation
from zmtplab.peers.sockets import DECISIONS
from zmtplab.peers.topology import PADDING, PRESETS, Topology, TopologyError, two_peer


def run(topology: Topology | dict[str, Any], until: float = 8.0) -> list[dict[str, Any]]:
    topo = topology if isinstance(topology, Topology) else Topology.from_dict(topology)
    sim = Simulation(decisions=True, window=32)
    sim.add_topology(topo)
    sim.run(until_t=until)
    return sim.events


def inbox(events: list[dict[str, Any]]) -> dict[str, list[bytes]]:
    """What each node's application read, first frame of each message (ROUTER: the frame after the identity)."""
    out: dict[str, list[bytes]] = {}
    for e in events:
        if e["kind"] == "peer" and e["what"] == "recv":
            frames = [bytes.fromhex(f) for f in e["frames"]]
            out.setdefault(e["peer"], []).append(frames[-1])
    return out


def decisions(events: list[dict[str, Any]], **keys: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == "socket" and all(e.get(k) == v for k, v in keys.items())]


# ---------------------------------------------------------------- the model


@pytest.mark.parametrize(("body", "words"), [
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "b", "type": "PUB"}], "links": [{"connect": "a", "bind": "b"}]},
     ["link 0 (a -> b)", "PUSH cannot talk to a PUB"]),
    ({"nodes": [{"name": "a", "type": "PUSH"}], "links": [{"connect": "a", "bind": "a"}]}, ["itself"]),
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "b", "type": "PULL"}],
      "links": [{"connect": "a", "bind": "c"}]}, ["no node named 'c'"]),
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "b", "type": "PULL"}],
      "links": [{"connect": "a", "bind": "b"}, {"connect": "b", "bind": "a"}]}, ["link 1", "duplicates link 0"]),
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "a", "type": "PULL"}], "links": []}, ["two nodes", "'a'"]),
    ({"nodes": [{"name": f"n{i}", "type": "PAIR"} for i in range(25)], "links": []}, ["at most 24 nodes"]),
    ({"nodes": [{"name": f"n{i}", "type": "DEALER"} for i in range(12)],
      "links": [{"connect": f"n{i}", "bind": f"n{j}"} for i in range(12) for j in range(i)][:33]},
     ["at most 32 links"]),
    ({"nodes": [{"name": "a b", "type": "PUSH"}], "links": []}, ["node name"]),
    ({"nodes": [{"name": "a", "type": "PUSH", "colour": "red"}], "links": []}, ["node 0", "unknown key 'colour'"]),
    ({"nodes": [{"name": "a", "type": "PUSH", "subscribe": ["x"]}], "links": []}, ["node 'a'", "only SUB and XSUB"]),
    ({"nodes": [{"name": "a", "type": "PUSH", "recv": {"every": -1}}], "links": []}, ["node 'a'", "recv every"]),
    ({"nodes": [{"name": "a", "type": "REQ"}, {"name": "b", "type": "DEALER"}], "links": [],
      "proxies": [{"frontend": "a", "backend": "b"}]}, ["proxy 0", "REQ cannot be one side"]),
    ({"nodes": [{"name": "a", "type": "PULL"}], "links": [], "script": [{"from": "a", "frames": ["x"]}]},
     ["script send 0", "cannot send"]),
])
def test_bad_topologies_name_the_culprit(body, words):
    with pytest.raises(TopologyError) as info:
        Topology.from_dict(body)
    for word in words:
        assert word in str(info.value)


def test_round_trip_and_two_peer():
    for p in PRESETS.values():
        d = p.to_dict()
        assert Topology.from_dict({**d["topology"], "script": d["script"]}) == p.topology
    topo = two_peer({"type": "PUSH", "subscribe": ""}, {"type": "PUB"})  # the two-peer body may be a refused pair
    assert [n.name for n in topo.nodes] == ["server", "client"] and topo.links[0].to_dict() == {
        "connect": "client", "bind": "server"}
    # A SUB subscribes to what it is given: nothing (as a libzmq SUB that never subscribed), or the empty prefix.
    sub = Topology.from_dict({"nodes": [{"name": "s", "type": "SUB"}, {"name": "t", "type": "SUB", "subscribe": []},
                                        {"name": "u", "type": "SUB", "subscribe": [""]}], "links": []})
    assert [n.subscribe for n in sub.nodes] == [(), (), ("",)]
    assert two_peer({"type": "PUB"}, {"type": "SUB", "subscribe": None}).nodes[1].subscribe == ()
    assert two_peer({"type": "PUB"}, {"type": "SUB", "subscribe": ""}).nodes[1].subscribe == ("",)


def test_every_decision_has_words():
    assert {f"{w}/{r}" for w, r in DECISIONS} <= set(TEMPLATES)


# ---------------------------------------------------------------- the presets, against libzmq's rules


def test_load_balancing_is_round_robin():
    events = run(PRESETS["load-balancing"].topology)
    assert inbox(events) == {"w1": [b"task 1", b"task 4"], "w2": [b"task 2", b"task 5"], "w3": [b"task 3", b"task 6"]}
    routes = decisions(events, node="vent", what="route")
    assert [e["peer"] for e in routes] == ["w1", "w2", "w3"] * 2
    assert routes[1]["text"] == "PUSH chose the pipe to w2 (round robin: next in turn)"
    assert routes[1]["rule"] == "round-robin" and routes[1]["msg"] == 2 and routes[1]["hwm"] == 1000
    assert routes[1]["depth"] == 1  # the message waits in the pipe to w2 (until its connection writes it)
    # The message's id follows it: the route, the wire message on that pipe's connection, the worker's read.
    wire = [e for e in events if e["kind"] == "message" and e.get("msg") == 2]
    assert len(wire) == 1 and wire[0]["conn"] == routes[1]["conn"]
    recv = [e for e in events if e["kind"] == "peer" and e["what"] == "recv" and e.get("msg") == 2]
    assert [e["peer"] for e in recv] == ["w2"]


def test_router_routes_by_identity_and_drops_the_unknown():
    events = run(PRESETS["router-dealers"].topology)
    got = inbox(events)
    assert got["d2"] == [b"for d2 only"] and got["d1"] == [b"for d1 only"] and "d3" not in got
    assert got["router"] == [b"hello from d1", b"hello from d2", b"hello from d3"]
    routed = decisions(events, node="router", what="route")
    assert [(e["peer"], e["rule"]) for e in routed] == [("d2", "identity-routing"), ("d1", "identity-routing")]
    [drop] = decisions(events, node="router", what="drop")
    assert drop["rule"] == "router-mandatory-off"
    assert drop["text"] == "ROUTER dropped: no peer with identity 'c9' (ROUTER_MANDATORY off)"
    envelopes = decisions(events, node="router", what="envelope")
    assert [e["args"]["identity"] for e in envelopes] == ["'d1'", "'d2'", "'d3'"]


def test_pub_filters_by_prefix_per_pipe():
    events = run(PRESETS["pub-sub-topics"].topology)
    assert inbox(events) == {"sub-1": [b"weather.paris 12C", b"weather.oslo -3C"], "sub-2": [b"sport.07 2-1"],
                             "sub-3": [b"weather.paris 12C", b"sport.07 2-1", b"weather.oslo -3C", b"news.flash"]}
    filtered = decisions(events, node="pub", what="filter")
    assert ("sub-1", "'sport.07 2-1'") in [(e["peer"], e["args"]["msg"]) for e in filtered]
    texts = [e["text"] for e in filtered]
    assert "PUB filtered out 'sport.07 2-1' for sub-1 (subscribed to 'weather.')" in texts


def test_extended_request_reply_keeps_the_envelope():
    events = run(PRESETS["extended-reqrep"].topology)
    got = inbox(events)
    for c in ("c1", "c2", "c3"):
        assert got[c] == [f"request from {c}".encode()]  # each reply reached the client that asked
    assert sorted(got["w1"] + got["w2"]) == [b"request from c1", b"request from c2", b"request from c3"]
    strips = decisions(events, what="strip", rule="envelope")
    assert strips and all(e["args"]["frames"] == 2 for e in strips)  # the client's identity and the delimiter
    assert strips[0]["text"] == "REP stripped a 2-frame envelope from the request of brk-back"
    # The request keeps its id across the proxy; the reply has its own, naming the request.
    request = decisions(events, node="brk-back", what="route")[0]["msg"]
    assert decisions(events, node="c1", what="route")[0]["msg"] == request
    replies = [e for e in events if e["kind"] == "peer" and e["what"] == "recv" and e["peer"] == "c1"]
    assert replies[0]["reply_to"] == request and replies[0]["msg"] != request


def test_slow_joiner_misses_the_first_updates():
    events = run(PRESETS["slow-joiner"].topology)
    got = inbox(events)
    assert got["sub-early"] == [f"update {i}".encode() for i in range(1, 9)]
    assert got["sub-late"] == [f"update {i}".encode() for i in range(5, 9)]
    [missed] = decisions(events, node="pub", what="filter", rule="slow-joiner")
    assert missed["peer"] == "sub-late" and missed["args"]["msg"] == "'update 4'"


def test_push_blocks_at_the_hwm_and_never_drops():
    events = run(PRESETS["push-backpressure"].topology, until=9.0)
    assert inbox(events)["worker"] == [f"task {i} {PADDING}".encode() for i in range(1, 17)]
    [block] = decisions(events, node="vent", what="block")
    assert block["rule"] == "sndhwm" and block["msg"] == 6  # (4 KB tasks: the 32-octet window is slow to drain)
    assert block["text"] == "send blocked: every pipe full (PUSH waits at SNDHWM 2, it never drops)"
    assert [e["msg"] for e in decisions(events, node="vent", what="unblock")] == list(range(6, 17))
    assert not decisions(events, what="drop")
    assert decisions(events, node="worker", what="block", rule="rcvhwm")[0]["depth"] == 2
    reads = [e["t"] for e in events if e["kind"] == "peer" and e["what"] == "recv"]
    assert all(b - a >= 0.5 - 1e-9 for a, b in itertools.pairwise(reads))  # one read every 0.5 s


def test_pub_drops_for_the_slow_subscriber_only():
    events = run(PRESETS["pub-drops"].topology)
    got = inbox(events)
    assert got["sub-fast"] == [f"update {i} {PADDING}".encode() for i in range(1, 25)]
    drops = decisions(events, node="pub", what="drop")
    assert drops and {e["peer"] for e in drops} == {"sub-slow"} and all(e["depth"] == 2 for e in drops)
    assert drops[0]["text"] == "PUB dropped for sub-slow: its pipe is at SNDHWM 2"
    dropped = {e["msg"] for e in drops}  # (the PUB's message ids: 1, 2, ... in the order sent)
    assert got["sub-slow"] == [m for i, m in enumerate(got["sub-fast"], 1) if i not in dropped]


def test_queued_before_the_connection_is_up():
    events = run({"nodes": [{"name": "w", "type": "PUSH"}, {"name": "sink", "type": "PULL"}],
                  "links": [{"connect": "w", "bind": "sink", "at": 0.2}],
                  "script": [{"from": "w", "frames": ["early"], "at": 0.0}]})
    [queued] = decisions(events, node="w", what="queue")
    assert queued["text"] == "PUSH queued 'early' in the pipe to sink: message queued before the connection is up"
    assert inbox(events) == {"sink": [b"early"]}


def test_rewind_replays_a_topology_exactly():
    sim = Simulation(decisions=True, window=32)
    sim.add_topology(PRESETS["extended-reqrep"].topology)
    sim.run(until_t=1.0)
    before = [dict(e) for e in sim.events]
    sim.rewind(to_step=sim.steps // 2)
    sim.run(until_t=1.0)
    assert sim.events == before


def test_twelve_nodes_sixteen_links():
    """A 12-node, 16-link topology: 4 PUSH fan out to 8 PULL, each PUSH to four of them, each PULL fed by two."""
    nodes = [*({"name": f"p{i}", "type": "PUSH"} for i in range(4)), *({"name": f"q{i}", "type": "PULL"}
                                                                        for i in range(8))]
    links = [{"connect": f"q{j}", "bind": f"p{i}"}
             for i in range(4) for j in (2 * i, (2 * i + 1) % 8, (2 * i + 3) % 8, (2 * i + 5) % 8)]
    script = [{"from": f"p{i % 4}", "frames": [f"m{i}"], "at": 0.05 + 0.001 * i} for i in range(256)]
    topo = Topology.from_dict({"nodes": nodes, "links": links, "script": script})
    assert len(topo.nodes) == 12 and len(topo.links) == 16
    started = time.process_time()
    events = run(topo, until=2.0)
    assert time.process_time() - started < 10
    got = inbox(events)
    assert sum(len(v) for v in got.values()) == 256
    for i in range(4):  # each PUSH spread its messages evenly over its four pipes
        counts = [e["peer"] for e in decisions(events, node=f"p{i}", what="route")]
        assert sorted(counts.count(p) for p in set(counts)) == [16, 16, 16, 16]


def test_decisions_off_leave_the_log_as_it_was():
    sim = Simulation()
    sim.add_peer("server", "PUSH")
    sim.add_peer("client", "PULL")
    sim.connect("client", "server")
    sim.send("server", [b"x"])
    sim.run()
    assert not [e for e in sim.events if e["kind"] == "socket" or "msg" in e]
