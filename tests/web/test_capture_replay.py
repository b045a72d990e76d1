"""`POST /api/captures/{id}/replay`: a stored capture replayed as a topology, with changes, and its topology
started as a normal topology session (what *Open in playground* does)."""

from __future__ import annotations

from pathlib import Path

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
