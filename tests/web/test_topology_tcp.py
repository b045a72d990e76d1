"""Topology sessions in real mode (`tcp`) over HTTP and the websocket: loopback TCP through one dissecting tap
per link, our nodes and libzmq's mixed. A preset plays its script, reads and our sockets' decisions are events,
message ids follow a message through a libzmq broker, `send` and faults name nodes, and the pcapng export has
one TCP connection per link with an address per node that `zmtplab dissect` reads back to the same wire events."""

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


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("real-topologies")) as c:
        yield c


def create(client, body: dict[str, Any]) -> str:
    r = client.post("/api/sessions", json={"mode": "tcp", **body})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def is_recv(peer: str, text: str | None = None):
    def check(m: dict[str, Any]) -> bool:
        if m["type"] != "event" or m["event"]["kind"] != "peer" or m["event"].get("peer") != peer:
            return False
        return text is None or bytes.fromhex(m["event"]["frames"][-1]) == text.encode()
    return check


def test_a_preset_with_a_libzmq_broker_follows_each_message(client):
    """extended-reqrep with the broker's two nodes libzmq and the rest ours: every read and wire message of a
    request and its reply carries the same ids across the libzmq hop; our REQ and REP say what they decided."""
    preset = next(p for p in client.get("/api/sessions/presets").json()["presets"] if p["id"] == "extended-reqrep")
    topo = preset["topology"]
    for node in topo["nodes"]:
        node["libzmq"] = node["name"].startswith("brk-")
    session_id = create(client, {**topo, "script": preset["script"]})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        first = ws.receive_json()
        assert first["type"] == "topology" and first["topology"]["mode"] == "tcp"
        seen = receive_until(ws, is_recv("c3"))
        ws.send_json({"type": "send", "from": "c1", "frames": ["once more"]})
        seen += receive_until(ws, is_recv("c1", "once more"))
        ws.send_json({"type": "send", "from": "nobody", "frames": ["x"]})
        assert "nobody" in receive_until(ws, lambda m: m["type"] == "error")[-1]["detail"]
    topologies = [m["topology"] for m in [first, *seen] if m["type"] == "topology"]
    assert topologies[-1]["conns"] == [{"conn": str(i), "link": i, "client": c, "server": s} for i, (c, s) in
                                       enumerate([("c1", "brk-front"), ("c2", "brk-front"), ("c3", "brk-front"),
                                                  ("w1", "brk-back"), ("w2", "brk-back")])]
    events = events_of(seen)
    reads = {(e["peer"], bytes.fromhex(e["frames"][0]).decode()): (e["msg"], e.get("reply_to"))
             for e in events if e["kind"] == "peer"}
    request, _ = reads[("w1", "request from c1")]
    reply, answered = reads[("c1", "request from c1")]
    assert answered == request and reply != request
    assert reads[("w2", "request from c2")][0] == reads[("c2", "request from c2")][1]  # DEALER round robin
    assert ("w2", "once more") in reads  # (the DEALER's fourth request: w1, w2, w1, then w2)
    # The request crossed c1's link and w1's link with one id, the reply came back the same way with another.
    wire = [(e["conn"], e["dir"], e.get("msg"), e.get("reply_to")) for e in events if e["kind"] == "message"]
    assert ("0", "c2s", request, None) in wire and ("3", "s2c", request, None) in wire
    assert ("3", "c2s", reply, request) in wire and ("0", "s2c", reply, request) in wire
    decided = [(e["node"], e["what"], e["rule"]) for e in events if e["kind"] == "socket"]
    assert ("c1", "route", "round-robin") in decided and ("w1", "strip", "envelope") in decided
    assert ("w1", "route", "envelope") in decided and ("c1", "strip", "delimiter") in decided
    assert not [d for d in decided if d[0].startswith("brk-")]  # libzmq keeps its decisions to itself
    strip = next(e for e in events if e["kind"] == "socket" and e["node"] == "w1" and e["what"] == "strip")
    assert strip["text"] == "REP stripped a 2-frame envelope from the request of brk-back"
    assert (strip["conn"], strip["peer"], strip["msg"]) == ("3", "brk-back", request)


def test_killing_a_node_moves_the_round_robin_and_exports_read_back(client, tmp_path: Path):
    """load-balancing with a libzmq PUSH: kill worker w1, and the next tasks go to w2 and w3 only; the export
    is one TCP connection per link, each node at its own address, read back to the same wire events."""
    nodes = [{"name": "vent", "type": "PUSH", "libzmq": True},
             *({"name": f"w{i}", "type": "PULL", "libzmq": i == 3} for i in (1, 2, 3))]
    links = [{"connect": f"w{i}", "bind": "vent"} for i in (1, 2, 3)]
    session_id = create(client, {"nodes": nodes, "links": links})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        # Every link up, each pipe in vent's socket (a send before could go round w1 and w2 only).
        receive_until(ws, lambda m: m["type"] == "state" and m["up"])
        for i in (1, 2, 3):
            ws.send_json({"type": "send", "from": "vent", "frames": [f"before {i}"]})
        seen = receive_until(ws, is_recv("w3", "before 3"))
        ws.send_json({"type": "fault", "fault": "kill", "args": {"peer": "w1"}})
        # The link closed, vent's end too: libzmq closes its end as it drops the connection, and vent's socket takes
        # the pipe out of its round robin when it processes its commands (the runtime has it do so on the
        # disconnection and before each send).
        seen += receive_until(ws, lambda m: m["type"] == "log" and m["entry"].get("what") == "closed")
        assert seen[-1]["entry"]["conn"] == "0"
        for i in (1, 2, 3, 4):
            ws.send_json({"type": "send", "from": "vent", "frames": [f"after {i}"]})
        while _reads(seen, "after") < 4:
            seen += receive_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "peer")
        ws.send_json({"type": "send", "from": "w1", "frames": ["x"]})
        assert "node w1 was killed" in receive_until(ws, lambda m: m["type"] == "error")[-1]["detail"]
    reads = [(e["peer"], bytes.fromhex(e["frames"][0]).decode()) for e in events_of(seen) if e["kind"] == "peer"]
    assert reads[:3] == [("w1", "before 1"), ("w2", "before 2"), ("w3", "before 3")]
    after = sorted(reads[3:])
    assert after == [("w2", "after 1"), ("w2", "after 3"), ("w3", "after 2"), ("w3", "after 4")] or \
        after == [("w2", "after 2"), ("w2", "after 4"), ("w3", "after 1"), ("w3", "after 3")]
    exported = client.get(f"/api/sessions/{session_id}/export.json").json()
    events = exported["events"]
    pcap = client.get(f"/api/sessions/{session_id}/export.pcapng").content
    path = tmp_path / "real.pcapng"
    path.write_bytes(pcap)

    def strip(e: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in e.items() if k not in SOURCE_KEYS}

    def order(e: dict[str, Any]) -> tuple:
        return int(e["conn"]), e["dir"], e["offset"], e["kind"], e.get("severity", "")

    wire = sorted((strip(e) for e in events if e["kind"] not in ("socket", "peer")), key=order)
    assert wire == sorted((strip(e) for e in dissect_capture(io.BytesIO(pcap))), key=order)
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "tcp.stream", "-e", "ip.src", "-e",
                          "ip.dst"], capture_output=True, text=True, timeout=60, check=True)
    streams: dict[str, set[str]] = {}
    for row in out.stdout.splitlines():
        stream, src, dst = row.split("\t")
        streams.setdefault(stream, set()).update((src, dst))
    assert sorted(map(sorted, streams.values())) == [["127.0.0.1", f"127.0.0.{i}"] for i in (2, 3, 4)]


def _reads(messages: list[dict[str, Any]], prefix: str) -> int:
    return sum(1 for e in events_of(messages) if e["kind"] == "peer"
               and bytes.fromhex(e["frames"][0]).decode().startswith(prefix))


def test_the_largest_topology_and_curve_across_ours_and_libzmq(client):
    """24 nodes and 32 links (the limits), every link through its own tap; and a CURVE PUSH (libzmq) with one
    worker ours and one libzmq's: round robin across both, our worker's boxes opened (we know its keys)."""
    nodes = [*({"name": f"v{i}", "type": "PUSH", "libzmq": i % 2 == 0} for i in range(16)),
             {"name": "w0", "type": "PULL", "libzmq": True}, {"name": "w1", "type": "PULL"},
             *({"name": f"x{i}", "type": "PAIR"} for i in range(6))]
    links = [{"connect": f"w{j}", "bind": f"v{i}"} for i in range(16) for j in range(2)]
    script = [{"from": f"v{i}", "frames": [f"m{i}-{k}"], "at": 0.01 * (2 * i + k)} for i in range(16) for k in range(2)]
    session_id = create(client, {"nodes": nodes, "links": links, "script": script})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        seen = []
        while _reads(seen, "m") < 32:
            seen += receive_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "peer")
    conns = [m["topology"]["conns"] for m in seen if m["type"] == "topology"][-1]
    assert len(conns) == 32 and len({c["conn"] for c in conns}) == 32
    reads = [(e["peer"], bytes.fromhex(e["frames"][0]).decode()) for e in events_of(seen) if e["kind"] == "peer"]
    assert sorted(reads) == sorted((f"w{k}", f"m{i}-{k}") for i in range(16) for k in range(2))  # each PUSH: w0, w1

    curve = [{"name": "vent", "type": "PUSH", "mechanism": "CURVE", "libzmq": True},
             {"name": "w1", "type": "PULL", "mechanism": "CURVE"},
             {"name": "w2", "type": "PULL", "mechanism": "CURVE", "libzmq": True}]
    session_id = create(client, {"nodes": curve, "links": [{"connect": "w1", "bind": "vent"},
                                                          {"connect": "w2", "bind": "vent"}],
                                 "script": [{"from": "vent", "frames": [f"t{i}"], "at": 0.02 * i} for i in range(4)]})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        seen = []
        while _reads(seen, "t") < 4:
            seen += receive_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "peer")
    events = events_of(seen)
    reads = sorted((e["peer"], bytes.fromhex(e["frames"][0]).decode()) for e in events if e["kind"] == "peer")
    assert reads == [("w1", "t0"), ("w1", "t2"), ("w2", "t1"), ("w2", "t3")]
    opened = [(e["conn"], bytes.fromhex(e["frames"][0]).decode()) for e in events
              if e["kind"] == "message" and e.get("decrypted")]
    assert opened == [("0", "t0"), ("0", "t2")]  # (vent and w2 are libzmq's: their keys stay theirs)


def test_a_fault_strikes_the_one_connection_named(client):
    """A node with two links, real TCP: `close` with `conn` closes that connection only (without it, all of the
    node's: the page's fault menu names one)."""
    nodes = [{"name": "vent", "type": "PUSH"}, {"name": "w1", "type": "PULL"}, {"name": "w2", "type": "PULL"}]
    session_id = create(client, {"nodes": nodes, "links": [{"connect": w, "bind": "vent"} for w in ("w1", "w2")]})
    with client.websocket_connect(f"/ws/sessions/{session_id}?marks=1") as ws:
        receive_until(ws, lambda m: m["type"] == "topology" and len(m["topology"]["conns"]) == 2)
        ws.send_json({"type": "fault", "fault": "close", "args": {"peer": "vent", "conn": "1"}})
        seen = receive_until(ws, lambda m: m["type"] == "log" and m["entry"].get("what") == "closed")
    assert seen[-1]["entry"]["conn"] == "1"
    assert not [m for m in seen if m["type"] == "error"]
