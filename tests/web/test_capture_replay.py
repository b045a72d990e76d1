"""`POST /api/captures/{id}/replay`: a stored capture replayed as a topology, with changes, and its topology
started as a normal topology session (what *Open in playground* does)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from webkit import dissected, receive_until

from zmtplab.peers.topology import Topology

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def test_replay_with_a_change_and_its_topology_as_a_session(client):
    capture_id, _ = dissected(client, CAPTURES / "pub_late_sub.pcapng")
    got = client.post(f"/api/captures/{capture_id}/replay", json={"set": ["sub2.connect_at=0"]})
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["fidelity"]["same"]
    assert "sub2 receives 15 of 15 messages instead of 5" in body["diff"]["summary"]
    assert body["playground"] == []
    topo = Topology.from_dict(body["topology"])  # what POST /api/sessions checks
    assert [lk.at for lk in topo.links] == [0.0, 0.0]  # the change is in the topology the playground starts
    assert len(topo.script) == 15 and {s.sender for s in topo.script} == {"pub"}
    created = client.post("/api/sessions", json={"mode": "simulated", **body["topology"], "autoplay": True})
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    try:
        received: dict[str, int] = {}

        def counted(m) -> bool:
            ev = m.get("event") or {}
            if m["type"] == "event" and ev.get("kind") == "peer" and ev.get("what") == "recv":
                received[ev["peer"]] = received.get(ev["peer"], 0) + 1
            return sum(received.values()) == 30

        with client.websocket_connect(f"/ws/sessions/{session}?batch=0") as ws:
            ws.send_json({"type": "speed", "value": 1000})
            receive_until(ws, counted, limit=20000)
        assert received == {"sub1": 15, "sub2": 15}  # the late SUB, connected first, gets everything
    finally:
        client.delete(f"/api/sessions/{session}")


def test_replay_in_chinese_and_bad_changes(client):
    capture_id, _ = dissected(client, CAPTURES / "push_late_pull.pcapng")
    zh = client.post(f"/api/captures/{capture_id}/replay?lang=zh-CN", json={"set": ["pull3.connect_at=0"]}).json()
    assert "pull3 收到 32 条消息中的" in " ".join(zh["diff"]["summary"])
    bad = client.post(f"/api/captures/{capture_id}/replay", json={"set": ["pull9.sndhwm=1"]})
    assert bad.status_code == 422 and "no socket named 'pull9'" in bad.json()["detail"]
    bad_zh = client.post(f"/api/captures/{capture_id}/replay?lang=zh-CN", json={"set": ["pull1.colour=red"]})
    assert bad_zh.status_code == 422 and "未知选项" in bad_zh.json()["detail"]
    too_many = client.post(f"/api/captures/{capture_id}/replay", json={"set": ["pull1.sndhwm=1"] * 17})
    assert too_many.status_code == 422
    assert client.post("/api/captures/0123456789abcdef0123456789abcdef/replay", json={}).status_code == 404


def test_a_capture_without_zeromq_is_422(client):
    capture_id, _ = dissected(client, CAPTURES / "incidents" / "reconnect_storm.pcapng")
    got = client.post(f"/api/captures/{capture_id}/replay", json={})
    assert got.status_code == 422 and "no ZeroMQ connection" in got.json()["detail"]


def test_curve_without_keys_is_replayed_as_null_and_the_answer_says_so(client):
    capture_id, _ = dissected(client, CAPTURES / "incidents" / "curve_messages.pcapng")
    body = client.post(f"/api/captures/{capture_id}/replay?lang=zh-CN", json={}).json()
    assert [n["type"] for n in body["nodes"]] == ["REP", "REQ"]
    assert body["notes"][0]["what"] == "curve" and "按 NULL 重放" in body["notes"][0]["text"]
    assert body["fidelity"]["same"] and body["playground"] == []


CURVE_TOPOLOGY = {
    "mode": "simulated", "autoplay": True,
    "nodes": [{"name": "client", "type": "DEALER", "mechanism": "CURVE", "identity": "c1"},
              {"name": "server", "type": "ROUTER", "mechanism": "CURVE"}],
    "links": [{"connect": "client", "bind": "server", "at": 0}],
    "script": [{"from": "client", "frames": ["hello 1"], "at": 0.1},
               {"from": "server", "frames": ["c1", "world 1"], "at": 0.2},
               {"from": "client", "frames": ["hello 2"], "at": 0.3},
               {"from": "client", "frames": ["hello 3"], "at": 0.31}]}


def test_curve_with_the_key_log_replays_the_real_types_and_messages(client, tmp_path):
    """A CURVE session's own capture and key log (what `zmtplab peer --keylog` writes of a real one): without the
    log the replay infers DEALER/ROUTER and stand-ins; with it, the types, the identity and the messages."""
    session = client.post("/api/sessions", json=CURVE_TOPOLOGY).json()["id"]
    received = []

    def done(m) -> bool:
        ev = m.get("event") or {}
        if m["type"] == "event" and ev.get("kind") == "peer" and ev.get("what") == "recv":
            received.append(ev["peer"])
        return len(received) == 4

    with client.websocket_connect(f"/ws/sessions/{session}?batch=0") as ws:
        ws.send_json({"type": "speed", "value": 1000})
        receive_until(ws, done, limit=20000)
    capture, keylog = tmp_path / "curve.pcapng", tmp_path / "curve.keylog"
    capture.write_bytes(client.get(f"/api/sessions/{session}/export.pcapng").content)
    keylog.write_text(client.get(f"/api/sessions/{session}/export.keylog").text)
    client.delete(f"/api/sessions/{session}")

    def replayed(*args: str) -> dict:
        out = subprocess.run([sys.executable, "-m", "zmtplab.cli", "replay", str(capture), "--json", *args],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    blind = replayed()
    assert [n["what"] for n in blind["notes"]][:2] == ["curve", "curve-types"]
    assert blind["delivered"]["dealer"] == ["m1 ...."]  # a stand-in of "world 1"'s seven octets
    opened = replayed("--curve-keylog", str(keylog))
    assert [(n["name"], n["type"], n.get("identity")) for n in opened["nodes"]] == [("dealer", "DEALER", "c1"),
                                                                                  ("router", "ROUTER", None)]
    assert [n["what"] for n in opened["notes"]] == ["curve-keylog"]
    assert opened["delivered"] == {"dealer": ["world 1"],
                                   "router": [["c1", "hello 1"], ["c1", "hello 2"], ["c1", "hello 3"]]}
    assert opened["fidelity"]["same"]
    bad = tmp_path / "bad.keylog"
    bad.write_text("CURVE_SESSION_KEY 00\n")
    refused = subprocess.run([sys.executable, "-m", "zmtplab.cli", "replay", str(capture), "--curve-keylog", str(bad)],
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "--curve-keylog" in refused.stderr


def run_session(client, topology: dict, *, until) -> list[dict]:
    """Starts `topology` as a simulated session at full speed and gives its events until `until(events)`."""
    session = client.post("/api/sessions", json={"mode": "simulated", **topology, "autoplay": True})
    assert session.status_code == 201, session.text
    sid = session.json()["id"]
    events: list[dict] = []

    def seen(m) -> bool:
        if m["type"] == "event":
            events.append(m["event"])
        return until(events)

    try:
        with client.websocket_connect(f"/ws/sessions/{sid}?batch=0") as ws:
            ws.send_json({"type": "speed", "value": 1000})
            receive_until(ws, seen, limit=50000)
    finally:
        client.delete(f"/api/sessions/{sid}")
    return events


def reads(events: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for ev in events:
        if ev.get("kind") == "peer" and ev.get("what") == "recv":
            out[ev["peer"]] = out.get(ev["peer"], 0) + 1
    return out


@pytest.mark.parametrize("name", ["incidents/push_worker_leaves.pcapng", "incidents/xpub_xsub_proxy.pcapng",
                                  "sub_zmtp30.pcapng"])
def test_the_session_of_a_replay_closes_and_subscribes_when_the_capture_did(client, name):
    """Issue 35: the replay's topology carries the clients' closes and the later subscriptions (and cancels), so
    the session reads what `zmtplab replay` reads, socket by socket."""
    capture_id, _ = dissected(client, CAPTURES / name)
    body = client.post(f"/api/captures/{capture_id}/replay", json={}).json()
    assert body["topology_notes"] == []
    assert body["topology"].get("subscriptions") or any("close_at" in lk for lk in body["topology"]["links"])
    expected = {k: len(v) for k, v in body["delivered"].items() if v}
    events = run_session(client, body["topology"], until=lambda evs: sum(reads(evs).values()) >= sum(expected.values()))
    assert reads(events) == expected


def test_the_session_of_a_replay_sends_the_captured_heartbeats(client):
    capture_id, _ = dissected(client, CAPTURES / "heartbeat_ttl.pcapng")
    body = client.post(f"/api/captures/{capture_id}/replay", json={}).json()
    dealer = next(n for n in body["topology"]["nodes"] if n["name"] == "dealer")
    assert (dealer["heartbeat_ivl"], dealer["heartbeat_ttl"]) == (0.1, 2.0)

    def pinged(evs) -> bool:
        return any(e.get("kind") == "command" and e.get("name") == "PONG" for e in evs)

    events = run_session(client, body["topology"], until=pinged)
    ping = next(e for e in events if e.get("kind") == "command" and e.get("name") == "PING")
    assert ping["dir"] == "c2s" and ping["ttl"] == 20  # 2 s in deciseconds, as the capture's PINGs say


def test_the_session_of_a_changed_replay_answers_each_request_when_it_comes(client):
    """Issue 35: the replies are reactions in the playground too (`script`'s `after`): with the second worker
    connected late, the first answers every request, and each client gets its replies through the broker."""
    capture_id, _ = dissected(client, CAPTURES / "broker.pcapng")
    body = client.post(f"/api/captures/{capture_id}/replay", json={"set": ["rep2.connect_at=5"]}).json()
    replies = [s for s in body["topology"]["script"] if "after" in s]
    assert len(replies) == 9  # six replies, and each REQ's second request after its first reply
    assert all(s["after"]["by"] == ["rep1", "rep2"] for s in replies if s["from"].startswith("rep"))
    expected = {"rep1": 6, "req1": 2, "req2": 2, "req3": 2}
    assert {k: len(v) for k, v in body["delivered"].items() if v} == expected
    events = run_session(client, body["topology"], until=lambda evs: sum(reads(evs).values()) >= 12)
    assert reads(events) == expected
    assert not [e for e in events if e.get("kind") == "peer" and e.get("what") == "error"]
