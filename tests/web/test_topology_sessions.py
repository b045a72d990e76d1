"""Topology sessions over HTTP and the websocket (simulated): the presets route, the topology body and its 422s,
`send` from a node, the topology message, socket decisions and peer reads as events (step, step back), and the
exports: JSON with the topology and every event, pcapng with one TCP connection per link and an address per node
that `zmtplab dissect` and tshark read back to the same wire events."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path
from typing import Any

import pytest
from webkit import events_of, open_client, receive_until

from zmtplab.capture.dissect import dissect_capture

pytestmark = pytest.mark.timeout(60)

SOURCE_KEYS = ("t", "seq", "ts", "packets", "index", "msg", "reply_to")
PIPELINE = {"nodes": [{"name": "vent", "type": "PUSH"}, {"name": "w1", "type": "PULL"}, {"name": "w2", "type": "PULL"}],
            "links": [{"connect": "w1", "bind": "vent"}, {"connect": "w2", "bind": "vent"}]}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("topologies"), sim_step_interval=0.001) as c:
        yield c


def create(client, body: dict[str, Any]) -> str:
    r = client.post("/api/sessions", json={"mode": "simulated", **body})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def is_recv(peer: str):
    return lambda m: m["type"] == "event" and m["event"]["kind"] == "peer" and m["event"].get("peer") == peer


def test_presets_route(client):
    presets = client.get("/api/sessions/presets").json()["presets"]
    assert [p["id"] for p in presets] == ["load-balancing", "router-dealers", "pub-sub-topics", "extended-reqrep",
                                          "slow-joiner", "push-backpressure", "pub-drops"]
    broker = presets[3]
    assert broker["topology"]["proxies"] == [{"frontend": "brk-front", "backend": "brk-back"}]
    assert {n["type"] for n in broker["topology"]["nodes"]} == {"REQ", "ROUTER", "DEALER", "REP"}
    assert all(p["title"] and p["description"] and p["script"] for p in presets)
    # What the route lists is what a session accepts.
    for p in presets:
        create(client, {"nodes": p["topology"]["nodes"], "links": p["topology"]["links"],
                       "proxies": p["topology"].get("proxies"), "script": p["script"]})


@pytest.mark.parametrize(("body", "words"), [
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "b", "type": "SUB"}], "links": [{"connect": "a", "bind": "b"}]},
     ["link 0 (a -> b)", "PUSH cannot talk to a SUB"]),
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "b", "type": "PULL"}],
      "links": [{"connect": "a", "bind": "x"}]}, ["no node named 'x'"]),
    ({"nodes": [{"name": "a", "type": "PUSH"}], "links": [{"connect": "a", "bind": "a"}]}, ["itself"]),
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "b", "type": "PULL"}],
      "links": [{"connect": "a", "bind": "b"}, {"connect": "a", "bind": "b"}]}, ["duplicates link 0"]),
    ({"preset": "no-such-preset"}, ["no preset 'no-such-preset'", "load-balancing"]),
    ({"preset": "load-balancing", "server": {"type": "PUSH"}}, ["either"]),
    ({"nodes": [{"name": "a", "type": "PUSH", "libzmq": True}, {"name": "b", "type": "PULL"}],
      "links": [{"connect": "b", "bind": "a"}]}, ["node 'a'", "mode 'tcp'"]),
])
def test_bad_topologies_are_422_naming_the_culprit(client, body, words):
    r = client.post("/api/sessions", json={"mode": "simulated", **body})
    assert r.status_code == 422, r.text
    detail = str(r.json()["detail"])
    for word in words:
        assert word in detail


def test_a_topology_session_streams_decisions_and_reads(client):
    session_id = create(client, PIPELINE)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        first = ws.receive_json()
        assert first["type"] == "topology"
        topo = first["topology"]
        assert [n["name"] for n in topo["nodes"]] == ["vent", "w1", "w2"] and topo["mode"] == "simulated"
        # (Both links opened when the session started.)
        assert topo["conns"] == [{"conn": "0", "link": 0, "client": "w1", "server": "vent"},
                                 {"conn": "1", "link": 1, "client": "w2", "server": "vent"}]
        for text in ("one", "two", "three"):
            ws.send_json({"type": "send", "from": "vent", "frames": [text]})
        seen = receive_until(ws, is_recv("w1"))
        seen += receive_until(ws, is_recv("w2"))
        seen += receive_until(ws, is_recv("w1"))
        ws.send_json({"type": "send", "from": "nobody", "frames": ["x"]})
        error = receive_until(ws, lambda m: m["type"] == "error")[-1]
        assert "nobody" in error["detail"]
    events = events_of(seen)
    routes = [e for e in events if e["kind"] == "socket" and e["what"] == "route"]
    assert [(e["peer"], e["conn"], e["msg"]) for e in routes] == [("w1", "0", 1), ("w2", "1", 2), ("w1", "0", 3)]
    assert routes[0]["text"] == "PUSH chose the pipe to w1 (round robin: next in turn)"
    reads = [(e["peer"], bytes.fromhex(e["frames"][0]), e["msg"]) for e in events if e["kind"] == "peer"]
    assert reads == [("w1", b"one", 1), ("w2", b"two", 2), ("w1", b"three", 3)]
    wire = [e for e in events if e["kind"] == "message"]
    assert [(e["conn"], e["msg"]) for e in wire] == [("0", 1), ("1", 2), ("0", 3)]
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_a_preset_plays_its_script_and_steps_back(client):
    session_id = create(client, {"preset": "router-dealers", "autoplay": False})
    with client.websocket_connect(f"/ws/sessions/{session_id}?batch=0") as ws:
        assert ws.receive_json()["type"] == "topology"
        for _ in range(400):  # step until the ROUTER's drop
            ws.send_json({"type": "step"})
            seen = receive_until(ws, lambda m: m["type"] in ("state", "error"))
            if any(m["type"] == "event" and m["event"].get("what") == "drop" for m in seen):
                break
        drop = next(m["event"] for m in seen if m["type"] == "event" and m["event"].get("what") == "drop")
        assert drop["text"] == "ROUTER dropped: no peer with identity 'c9' (ROUTER_MANDATORY off)"
        position = seen[-1]["position"]
        assert drop["seq"] == position - 1
        ws.send_json({"type": "step_back"})
        back = receive_until(ws, lambda m: m["type"] == "state")[-1]
        assert back["position"] < position
        ws.send_json({"type": "step"})  # deterministic: the same decision again
        again = receive_until(ws, lambda m: m["type"] == "state")
        redo = [m["event"] for m in again if m["type"] == "event"]
        assert redo[-1] == drop
    exported = client.get(f"/api/sessions/{session_id}/export.json").json()
    assert exported["config"]["preset"] == "router-dealers"
    assert exported["config"]["topology"]["nodes"][0]["name"] == "router"
    assert [e["seq"] for e in exported["events"]] == list(range(len(exported["events"])))
    assert exported["events"][-1] == drop


def test_exports_read_back_per_link_in_dissect_and_tshark(client, tmp_path: Path):
    session_id = create(client, {"preset": "extended-reqrep"})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ws.send_json({"type": "speed", "value": 1000})
        receive_until(ws, is_recv("c3"))
    exported = client.get(f"/api/sessions/{session_id}/export.json").json()
    events = exported["events"]
    kinds = {e["kind"] for e in events}
    assert {"socket", "peer", "message", "greeting", "command", "frame"} <= kinds
    assert len(exported["config"]["topology"]["conns"]) == 5
    pcap = client.get(f"/api/sessions/{session_id}/export.pcapng").content
    path = tmp_path / "broker.pcapng"
    path.write_bytes(pcap)

    def strip(e: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in e.items() if k not in SOURCE_KEYS}

    def order(e: dict[str, Any]) -> tuple:
        return int(e["conn"]), e["dir"], e["offset"], e["kind"]

    wire = sorted((strip(e) for e in events if e["kind"] not in ("socket", "peer")), key=order)
    read_back = sorted((strip(e) for e in dissect_capture(io.BytesIO(pcap))), key=order)
    assert read_back == wire
    cli = subprocess.run([str(Path(__file__).parents[2] / ".venv/bin/zmtplab"), "dissect", str(path), "--jsonl",
                          "--kind", "message"], capture_output=True, text=True, timeout=60, check=True)
    assert cli.stdout.count("\n") == sum(1 for e in wire if e["kind"] == "message")
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "tcp.stream", "-e", "ip.src", "-e",
                          "ip.dst", "-e", "tcp.len", "-e", "tcp.analysis.flags"],
                         capture_output=True, text=True, timeout=60, check=True)
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert not any(r[4] for r in rows), "tshark found TCP problems"
    streams: dict[str, set[str]] = {}
    for r in rows:
        streams.setdefault(r[0], set()).update((r[1], r[2]))
    assert len(streams) == 5  # one TCP connection per link
    nodes = [n["name"] for n in exported["config"]["topology"]["nodes"]]
    address = {name: f"127.0.0.{i + 1}" for i, name in enumerate(nodes)}
    pairs = {frozenset((address[c["client"]], address[c["server"]])) for c in exported["config"]["topology"]["conns"]}
    assert {frozenset(s) for s in streams.values()} == pairs  # each node its own address
    payload = sum(int(r[3]) for r in rows)
    assert payload == sum(max(e["offset"] + e["length"] for e in wire if e["conn"] == c and e["dir"] == d)
                          for c in {e["conn"] for e in wire} for d in ("c2s", "s2c"))


def test_two_peer_sessions_are_unchanged(client):
    session_id = create(client, {"server": {"type": "PUSH"}, "client": {"type": "PULL"}})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        assert ws.receive_json()["type"] == "event"  # no topology message unless asked
        ws.send_json({"type": "send", "from": "server", "frames": ["x"]})
        seen = receive_until(ws, lambda m: m["type"] == "log" and m["entry"].get("what") == "recv")
    assert not [e for e in events_of(seen) if e["kind"] in ("socket", "peer") or "msg" in e]
    with client.websocket_connect(f"/ws/sessions/{session_id}?topology=1") as ws:
        topo = ws.receive_json()
        assert topo["type"] == "topology"
        assert topo["topology"]["links"] == [{"connect": "client", "bind": "server"}]


def test_a_late_connection_sends_the_topology_again(client):
    session_id = create(client, {"preset": "slow-joiner", "autoplay": False})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        first = ws.receive_json()
        assert [c["client"] for c in first["topology"]["conns"]] == ["sub-early"]
        ws.send_json({"type": "speed", "value": 1000})
        ws.send_json({"type": "play"})
        seen = receive_until(ws, lambda m: m["type"] == "topology")
        assert [c["client"] for c in seen[-1]["topology"]["conns"]] == ["sub-early", "sub-late"]
        seen = receive_until(ws, lambda m: m["type"] == "event" and m["event"].get("rule") == "slow-joiner")
        assert seen[-1]["event"]["text"] == ("PUB did not send 'update 4' to sub-late: no subscription from it yet "
                                             "(the slow joiner)")


def test_a_fault_names_a_node(client):
    session_id = create(client, PIPELINE)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ws.send_json({"type": "fault", "fault": "close", "args": {"peer": "w2"}})
        seen = receive_until(ws, lambda m: m["type"] == "log" and m["entry"].get("what") == "half-closed")
        assert seen[-1]["entry"]["conn"] == "1" and seen[-1]["entry"]["side"] == "client"
        ws.send_json({"type": "fault", "fault": "close", "args": {"peer": "nobody"}})
        assert "nobody" in receive_until(ws, lambda m: m["type"] == "error")[-1]["detail"]
