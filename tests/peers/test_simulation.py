"""Simulated sessions: determinism, stepping, rewinding, socket semantics over links, and every fault."""

from __future__ import annotations

import json

import pytest

from zmtplab.peers.faults import FAULTS
from zmtplab.peers.simulation import Simulation


def wire(events: list[dict], kind: str | None = None, direction: str | None = None) -> list[dict]:
    out = [e for e in events if "dir" in e and e.get("kind") not in ("link", "peer")]
    if kind:
        out = [e for e in out if e["kind"] == kind]
    if direction:
        out = [e for e in out if e["dir"] == direction]
    return out


def peer(events: list[dict], what: str, name: str | None = None) -> list[dict]:
    return [e for e in events if e.get("kind") == "peer" and e["what"] == what
            and (name is None or e["peer"] == name)]


def scripted(seed: int = 0, **server_options) -> Simulation:
    sim = Simulation(seed=seed)
    sim.add_peer("server", "ROUTER", **server_options)
    sim.add_peer("alice", "DEALER", identity=b"alice")
    sim.add_peer("anon", "DEALER")
    sim.connect("alice", "server")
    sim.connect("anon", "server")
    sim.send("alice", [b"", b"hi from alice"])
    sim.send("anon", [b"", b"hi from anon"])
    sim.run(until_t=0.01)
    return sim


def test_same_seed_and_script_give_the_same_events_byte_for_byte() -> None:
    a, b = scripted(seed=5), scripted(seed=5)
    assert json.dumps(a.events) == json.dumps(b.events)
    assert json.dumps(a.state()) == json.dumps(b.state())
    c = scripted(seed=6)  # the generated ROUTER identity comes from the seed
    assert json.dumps(a.events) != json.dumps(c.events)


def test_rewind_replays_to_the_same_events() -> None:
    sim = scripted(seed=1)
    sim.send("server", [peer(sim.events, "recv", "server")[0]["frames"][0] and b"alice", b"", b"reply"])
    first = sim.run()
    log = json.dumps(sim.events)
    sim.rewind()
    assert sim.t == 0 and sim.steps == 0
    assert all(e["kind"] in ("peer", "link") for e in sim.events)  # setup only: peers added, links opened
    sim.run()
    assert json.dumps(sim.events) == log
    assert first and sim.actions()[-1].op == "send"
    # Rewind to a step in the middle, then go on: the same future.
    sim.rewind(to_step=10)
    assert sim.steps == 10
    sim.run()
    assert json.dumps(sim.events) == log


def test_router_identities_routing_and_dealer_envelopes() -> None:
    sim = scripted()
    got = {tuple(bytes.fromhex(f) for f in e["frames"]) for e in peer(sim.events, "recv", "server")}
    named = next(m for m in got if m[-1] == b"hi from alice")
    anon = next(m for m in got if m[-1] == b"hi from anon")
    assert named[0] == b"alice" and anon[0][:1] == b"\x00" and len(anon[0]) == 5
    sim.send("server", [anon[0], b"", b"back to anon"])
    sim.run()
    assert [bytes.fromhex(f) for f in peer(sim.events, "recv", "anon")[0]["frames"]] == [b"", b"back to anon"]


def test_greeting_arrives_in_three_steps_as_libzmq_writes_it() -> None:
    sim = Simulation()
    sim.add_peer("s", "PULL")
    sim.add_peer("c", "PUSH")
    conn = sim.connect("c", "s")
    steps = [sim.step() for _ in range(6)]
    c2s = [e for step in steps for e in step if e.get("what") == "bytes" and e["dir"] == "c2s"]
    assert [e["length"] for e in c2s] == [10, 1, 53]
    greeting_steps = [i for i, step in enumerate(steps) for e in step if e["kind"] == "greeting"]
    assert len(greeting_steps) == 2  # each direction's greeting is reported with its last piece
    for step in steps:
        assert step and step[0]["kind"] == "link" and step[0]["conn"] == conn
    sim.send("c", [b"one", b"two"])
    sim.run()
    frames = wire(sim.events, "frame", "c2s")
    assert [bytes.fromhex(f["body"]) for f in frames] == [b"one", b"two"]
    assert wire(sim.events, "message", "c2s")[0]["frames"] == [b"one".hex(), b"two".hex()]
    # Every byte of both directions was delivered and explained.
    state = sim.state()
    assert state["pending"] == 0 and state["idle"]
    assert all({"conn", "dir", "offset", "length", "kind", "fields", "t", "seq"} <= set(e) for e in wire(sim.events))
    seqs = [e["seq"] for e in sim.events]
    assert seqs == list(range(1, len(seqs) + 1))


def test_run_until_a_time_and_step_counts() -> None:
    sim = Simulation(latency=0.01)
    sim.add_peer("s", "PULL")
    sim.add_peer("c", "PUSH")
    sim.connect("c", "s")
    sim.run(until_t=0.015)
    assert sim.t == pytest.approx(0.015)
    assert not wire(sim.events, "greeting")
    sim.run(max_steps=2)
    assert sim.steps == 4


def test_req_rep_pub_sub_and_push_pull_semantics() -> None:
    sim = Simulation()
    sim.add_peer("rep", "REP")
    sim.add_peer("req", "REQ")
    sim.connect("req", "rep")
    sim.send("req", [b"Hello"])
    with pytest.raises(ValueError, match="EFSM"):
        sim.send("req", [b"too early"])
    sim.run()
    assert peer(sim.events, "recv", "rep")[0]["frames"] == [b"Hello".hex()]
    assert wire(sim.events, "message", "c2s")[0]["frames"] == ["", b"Hello".hex()]
    sim.send("rep", [b"World"])
    sim.run()
    assert peer(sim.events, "recv", "req")[0]["frames"] == [b"World".hex()]

    sim = Simulation()
    sim.add_peer("pub", "PUB")
    sim.add_peer("sub1", "SUB")
    sim.add_peer("sub2", "SUB", version="3.0")
    sim.connect("sub1", "pub")
    sim.connect("sub2", "pub")
    sim.subscribe("sub1", "weather")
    sim.subscribe("sub2", "")
    sim.run()
    commands = [c["name"] for c in wire(sim.events, "command", "c2s")]
    assert "SUBSCRIBE" in commands  # 3.1: a command
    assert any(m["frames"] == ["01"] for m in wire(sim.events, "message", "c2s"))  # 3.0: a prefixed message
    sim.send("pub", [b"weather", b"sunny"])
    sim.send("pub", [b"sports"])
    sim.run()
    assert [e["frames"] for e in peer(sim.events, "recv", "sub1")] == [[b"weather".hex(), b"sunny".hex()]]
    assert len(peer(sim.events, "recv", "sub2")) == 2
    sim.unsubscribe("sub1", "weather")
    sim.run()
    assert "CANCEL" in [c["name"] for c in wire(sim.events, "command", "c2s")]


def test_blocked_send_waits_for_a_peer() -> None:
    sim = Simulation()
    sim.add_peer("push", "PUSH")
    sim.add_peer("pull", "PULL")
    sim.send("push", [b"waiting"])  # no connection yet: the application blocks
    assert peer(sim.events, "send-blocked")
    sim.connect("pull", "push")
    sim.run()
    assert peer(sim.events, "recv", "pull")[0]["frames"] == [b"waiting".hex()]


def test_curve_sessions_are_deterministic_too() -> None:
    def session() -> str:
        sim = Simulation(seed=9)
        sim.add_peer("s", "REP", mechanism="CURVE", curve_server=True)
        sim.add_peer("c", "REQ", mechanism="CURVE")
        sim.connect("c", "s")
        sim.send("c", [b"secret"])
        sim.run()
        sim.send("s", [b"answer"])
        sim.run()
        assert peer(sim.events, "recv", "c")[0]["frames"] == [b"answer".hex()]
        assert [c["name"] for c in wire(sim.events, "command", "c2s")][:2] == ["HELLO", "INITIATE"]
        return json.dumps(sim.events)

    assert session() == session()


# ---------------------------------------------------------------- faults


def ready_push_pull(**options) -> Simulation:
    sim = Simulation(seed=2)
    sim.add_peer("server", "PULL", **options.get("server", {}))
    sim.add_peer("client", "PUSH", **options.get("client", {}))
    sim.connect("client", "server")
    sim.run(until_t=0.1)
    return sim


def test_every_fault_is_listed() -> None:
    assert set(FAULTS) == {"split", "delay", "close", "corrupt", "garbage", "wrong_mechanism",
                           "invalid_socket_pair", "zmtp_version", "bad_password", "stop_answering"}
    assert all(f.description and f.params for f in FAULTS.values())
    sim = ready_push_pull()
    with pytest.raises(ValueError, match="unknown fault"):
        sim.inject("meteor")


def test_split_delay_and_corrupt() -> None:
    sim = Simulation()
    sim.add_peer("s", "PULL")
    sim.add_peer("c", "PUSH")
    sim.connect("c", "s")
    sim.inject("split", conn="1", dir="c2s", at=[3, 7, 20])
    sim.run()
    pieces = [e["length"] for e in sim.events if e.get("what") == "bytes" and e["dir"] == "c2s"][:5]
    assert pieces == [3, 4, 3, 1, 9]
    assert wire(sim.events, "greeting", "c2s")[0]["length"] == 64

    sim.inject("delay", conn="1", dir="c2s", seconds=0.5)
    sim.send("c", [b"late"])
    sim.run()
    assert peer(sim.events, "recv", "s")[0]["t"] >= 0.5

    offset = sim.inject("corrupt", conn="1", dir="c2s", xor=0x04)  # the next frame's flags get COMMAND
    sim.send("c", [b"broken"])
    sim.run(until_t=sim.t + 0.05)
    closed = peer(sim.events, "closed", "s")
    assert offset == 98
    assert closed and closed[0]["error"] and "command name claims 98 octets" in closed[0]["reason"]


def test_close_then_reconnect() -> None:
    sim = ready_push_pull()
    sim.inject("close", conn="1", side="server")
    sim.run(until_t=1.0)
    assert peer(sim.events, "reconnect", "client")
    assert len(peer(sim.events, "handshake", "server")) == 2
    sim.send("client", [b"after"])
    sim.run(until_t=2.0)
    assert peer(sim.events, "recv", "server")[-1]["frames"] == [b"after".hex()]


def test_garbage_closes_the_connection() -> None:
    sim = ready_push_pull()
    sim.inject("garbage", conn="1", dir="c2s")
    sim.run(until_t=sim.t + 0.05)
    reason = peer(sim.events, "closed", "server")[0]["reason"]
    assert "exceeds" in reason


def test_wrong_mechanism_and_invalid_pair_and_old_versions() -> None:
    sim = ready_push_pull()
    new = sim.inject("wrong_mechanism")
    sim.run(until_t=sim.t + 0.05)
    assert any("mechanism mismatch" in e["reason"] for e in peer(sim.events, "closed", "server"))
    assert any(e["kind"] == "expert" and "mechanism mismatch" in e["text"] for e in wire(sim.events)
               if e["conn"] == new[0])

    sim = ready_push_pull()
    sim.inject("invalid_socket_pair", socket_type="PUB")
    sim.run(until_t=sim.t + 0.05)
    assert any("invalid socket type" in e["reason"] for e in peer(sim.events, "closed"))
    assert any("invalid socket pair" in e.get("text", "") for e in wire(sim.events, "expert"))

    for version, length in (("2.0", 14), ("1.0", 2)):
        sim = ready_push_pull()
        sim.inject("zmtp_version", peer="client", version=version)
        sim.send("client", [b"old school"])
        sim.run(until_t=sim.t + 0.05)
        greetings = [g for g in wire(sim.events, "greeting", "c2s") if g["conn"] == "2"]
        assert greetings[0]["version"] == version and greetings[0]["length"] == length
        assert peer(sim.events, "recv", "server")[-1]["frames"] == [b"old school".hex()]


def test_bad_password() -> None:
    sim = ready_push_pull(server={"mechanism": "PLAIN", "plain_server": True},
                          client={"mechanism": "PLAIN", "username": "admin", "password": "secret"})
    assert peer(sim.events, "handshake", "server")[0]["user_id"] == "admin"
    sim.inject("bad_password")
    sim.run(until_t=sim.t + 0.05)
    errors = [c for c in wire(sim.events, "command", "s2c") if c["name"] == "ERROR"]
    assert errors and errors[0]["conn"] == "2"
    assert "refused" in peer(sim.events, "closed", "client")[-1]["reason"]


def test_stop_answering_ends_in_a_heartbeat_timeout() -> None:
    sim = ready_push_pull(server={"heartbeat_ivl": 0.5, "heartbeat_timeout": 1.0})
    sim.run(until_t=1.2)
    assert len(peer(sim.events, "pong", "server")) == 2
    sim.inject("stop_answering", peer="client")
    sim.run(until_t=3.0)
    closed = peer(sim.events, "closed", "server")
    assert closed and "heartbeat timeout" in closed[0]["reason"]
    assert 2.0 <= closed[0]["t"] <= 2.6
    assert len(peer(sim.events, "handshake", "server")) == 2  # the client reconnected


def test_handshake_timeout_on_a_silent_peer() -> None:
    sim = Simulation()
    sim.add_peer("s", "PULL", handshake_ivl=2.0)
    sim.add_peer("c", "PUSH", reconnect_ivl=0)
    sim.connect("c", "s")
    sim.inject("stop_answering", peer="c")  # mute from the first byte
    sim.run(until_t=5)
    closed = peer(sim.events, "closed", "s")
    assert closed and "handshake timed out" in closed[0]["reason"] and closed[0]["t"] == pytest.approx(2.0)


def test_open_links_and_idle_agree_with_the_links_through_reconnections() -> None:
    # `_open_links` (the tuple the per-step loops use) must always be the links not closed yet, in order, and
    # `idle()` must give the same answer as ranking the scheduled items.
    sim = ready_push_pull(server={"heartbeat_ivl": 0.5, "heartbeat_timeout": 1.0})

    def check() -> None:
        assert sim.wire.open_links == tuple(link for link in sim.links.values() if not link.closed)
        assert sim.idle() == (sim._next_item() is None)

    sim.inject("close", conn="1", side="server")
    while sim.t < 3.0 and sim.step():
        check()
    sim.inject("stop_answering", peer="client")
    while sim.t < 6.0 and sim.step():
        check()
    assert len(sim.links) >= 3 and any(link.closed for link in sim.links.values())
    sim.rewind(5)
    check()


# ---- what the lesson player runs on: application PINGs, writes as they arrive, bytes a closed side never reads


def test_an_application_ping_crosses_the_wire_and_replays() -> None:
    sim = Simulation(seed=2)
    sim.add_peer("server", "ROUTER")
    sim.add_peer("client", "DEALER", identity=b"c")
    conn = sim.connect("client", "server")
    sim.run()
    sim.ping(conn, "client", 30, b"ctx1")
    sim.run()
    ping = [e for e in wire(sim.events, "command", "c2s") if e["name"] == "PING"]
    assert [(p["ttl"], p["context"]) for p in ping] == [(30, b"ctx1".hex())]
    pong = [e for e in wire(sim.events, "command", "s2c") if e["name"] == "PONG"]
    assert [p["context"] for p in pong] == [b"ctx1".hex()]
    log = json.dumps(sim.events)
    sim.rewind()
    sim.run()
    assert json.dumps(sim.events) == log  # the PING is part of the script
    with pytest.raises(ValueError, match="side is"):
        sim.ping(conn, "nobody")


def test_on_write_tells_each_write_as_it_arrives() -> None:
    sim = Simulation(seed=0)
    seen: list[tuple[str, str, int, int, float]] = []
    sim.on_write = lambda conn, d, offset, length: seen.append((conn, d, offset, length, sim.t))
    sim.add_peer("server", "PUSH")
    sim.add_peer("client", "PULL")
    sim.connect("client", "server")
    assert not seen and sim.in_flight()  # written, not arrived
    sim.run()
    assert not sim.in_flight()
    # libzmq's greeting in three writes each way (10, 1, 53 octets), then READY; all arrive 1 ms after writing.
    c2s = [(offset, length) for _, d, offset, length, _ in seen if d == "c2s"]
    assert c2s[:3] == [(0, 10), (10, 1), (11, 53)]
    assert sum(length for _, length in c2s) == sum(e["length"] for e in wire(sim.events, direction="c2s")
                                                   if e["kind"] != "message")
    assert seen[0][4] == pytest.approx(0.001)


@pytest.mark.parametrize("unread_on_wire", [False, True])
def test_bytes_towards_a_closed_side_reach_the_wire_only_when_asked(unread_on_wire: bool) -> None:
    # PUSH to PUSH: each side refuses the other's READY with ERROR and closes. Both READYs cross at once, so
    # each ERROR is written towards a side that has closed by the time it arrives.
    sim = Simulation(seed=0, unread_on_wire=unread_on_wire)
    sim.add_peer("server", "PUSH")
    sim.add_peer("client", "PUSH", reconnect_ivl=0)
    sim.connect("client", "server")
    sim.run()
    errors = {e["dir"] for e in wire(sim.events, "command") if e["name"] == "ERROR"}
    assert errors == ({"c2s", "s2c"} if unread_on_wire else set())
    assert sim.links["1"].closed
    half_closed = [e for e in sim.events if e.get("what") == "half-closed"]
    assert sum(e.get("unread", 0) for e in half_closed) > 0  # unread by the peer either way


def test_a_reaction_sends_when_its_message_is_read_and_rewinds_alike() -> None:
    """`react`: a pool of REPs answers a request whichever reads it, `delay` after the read; the second `ping`
    gets the second answer; a reaction to a message never read never sends."""
    sim = Simulation(seed=0)
    for name in ("w1", "w2"):
        sim.add_peer(name, "REP")
    sim.add_peer("front", "DEALER")
    sim.connect("front", "w1")
    sim.connect("front", "w2")
    sim.react(["w1", "w2"], [b"ping"], 1, 0.5, [b"pong 1"])
    sim.react(["w1", "w2"], [b"ping"], 2, 0.5, [b"pong 2"])
    sim.react(["w1", "w2"], [b"never"], 1, 0.0, [b"lost"])
    sim.schedule(1.0, "send", peer_name="front", frames=[b"", b"ping"])
    sim.schedule(1.0, "send", peer_name="front", frames=[b"", b"ping"])
    events = sim.run(until_t=5.0)
    reads = [(e["peer"], [bytes.fromhex(f) for f in e["frames"]], e["t"]) for e in peer(events, "recv")]
    assert sorted(r[0] for r in reads if r[1] == [b"ping"]) == ["w1", "w2"]  # dealt, one each
    answers = [r for r in reads if r[0] == "front"]
    assert sorted(r[1][1] for r in answers) == [b"pong 1", b"pong 2"]
    first_read = min(r[2] for r in reads if r[1] == [b"ping"])
    assert min(r[2] for r in answers) >= first_read + 0.5
    assert not peer(events, "error")
    log = json.dumps(sim.events)
    sim.rewind()
    sim.run(until_t=5.0)
    assert json.dumps(sim.events) == log
