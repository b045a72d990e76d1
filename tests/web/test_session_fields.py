"""Fields on demand (issue 22, goal 3): a session's socket opened with `?fields=0` streams events without their
`fields`, and `GET /api/sessions/{id}/events/{seq}` gives one event with them, exactly as a socket that asks
for fields (the default, unchanged) shows it; the simulation makes a frame's or message's fields only then."""

from __future__ import annotations

import json
from typing import Any

import pytest
from webkit import open_client

from zmtplab.engine.events import refield
from zmtplab.peers.simulation import Simulation
from zmtplab.sessions import EventLog

pytestmark = pytest.mark.timeout(60)

LONG = "L" * 300  # an 8-octet size


def events_of(sock: Any, messages: int) -> list[dict[str, Any]]:
    """The events a (batching) session socket sends up to its `messages`th message event."""
    out: list[dict[str, Any]] = []
    while sum(e["kind"] == "message" for e in out) < messages:
        data = json.loads(sock.receive_text())
        out += [m["event"] for m in (data if isinstance(data, list) else [data]) if m["type"] == "event"]
    return out[:[i for i, e in enumerate(out) if e["kind"] == "message"][messages - 1] + 1]


@pytest.mark.parametrize(("config", "long_header"), [
    ({"server": {"type": "PUSH"}, "client": {"type": "PULL"}}, 9),
    # (the 1.0 client's frames: a length that counts the flags octet, 0xFF and 8 octets when long)
    ({"server": {"type": "PAIR", "version": "2.0"}, "client": {"type": "PAIR", "version": "1.0"}}, 10),
], ids=["zmtp31", "zmtp20-10"])
def test_a_socket_without_fields_gets_each_element_s_fields_by_its_seq(tmp_path, config, long_header):
    with open_client(tmp_path, sim_step_interval=0.005) as client:
        session_id = client.post("/api/sessions", json={"mode": "simulated", **config}).json()["id"]
        with client.websocket_connect(f"/ws/sessions/{session_id}?batch=1&log=0") as full, \
                client.websocket_connect(f"/ws/sessions/{session_id}?batch=1&log=0&fields=0") as bare:
            full.send_json({"type": "speed", "value": 1000})
            for frames in (["one"], ["a", "", LONG], ["ünïcödé ✓"]):
                full.send_json({"type": "send", "from": "client" if config["server"]["type"] == "PAIR"
                                else "server", "frames": frames})
            with_fields, without = events_of(full, 3), events_of(bare, 3)
        assert [e["seq"] for e in without] == list(range(len(with_fields)))
        assert not any("fields" in e for e in without)
        assert all(isinstance(e["fields"], list) for e in with_fields)
        messages = [e for e in with_fields if e["kind"] == "message"]
        assert [m["frames"] for m in messages][-2] == ["61", "", LONG.encode().hex()]
        for ev, bare_ev in zip(with_fields, without, strict=True):
            got = client.get(f"/api/sessions/{session_id}/events/{ev['seq']}")
            assert got.status_code == 200
            assert got.json() == ev  # fields and every other key, in the same order
            assert list(got.json()) == list(ev)
            assert {k: v for k, v in ev.items() if k != "fields"} == bare_ev
        long_message = client.get(f"/api/sessions/{session_id}/events/{messages[-2]['seq']}").json()
        assert [(f["name"], f["length"]) for f in long_message["fields"]] == [
            ("frame 1", 1), ("frame 2", 0), ("frame 3", 300)]
        assert long_message["fields"][2]["offset"] == long_message["offset"] + 3 + 2 + long_header

        missing = client.get(f"/api/sessions/{session_id}/events/100000")
        assert missing.status_code == 404 and "no event 100000" in missing.json()["detail"]
        assert client.get(f"/api/sessions/{session_id}/events/-1").status_code == 422
        assert client.get("/api/sessions/nope/events/0").status_code == 404


def test_an_element_s_fields_come_in_the_language_asked_for(tmp_path):
    with open_client(tmp_path, sim_step_interval=0.005) as client:
        session_id = client.post("/api/sessions", json={"mode": "simulated", "server": {"type": "PUSH"},
                                                        "client": {"type": "PULL"}}).json()["id"]
        with client.websocket_connect(f"/ws/sessions/{session_id}?batch=1&log=0&fields=0") as bare:
            bare.send_json({"type": "speed", "value": 1000})
            bare.send_json({"type": "send", "from": "server", "frames": ["hi"]})
            frame = next(e for e in events_of(bare, 1) if e["kind"] == "frame")
        en = client.get(f"/api/sessions/{session_id}/events/{frame['seq']}").json()
        zh = client.get(f"/api/sessions/{session_id}/events/{frame['seq']}?lang=zh-CN").json()
        assert [f["value"] for f in zh["fields"]] == [f["value"] for f in en["fields"]]
        assert en["fields"][0]["note"].startswith("Flags of this message frame")
        assert zh["fields"][0]["note"] != en["fields"][0]["note"]
        missing = client.get(f"/api/sessions/{session_id}/events/100000?lang=zh-CN")
        assert missing.status_code == 404 and missing.json()["detail"] == "会话中没有事件 100000"


def test_the_simulation_leaves_out_only_fields_it_can_make_again():
    """Without fields, a frame or message has its framing instead, and `refield` gives what `to_dict()` would;
    a greeting or command keeps its fields (they follow from more than its octets)."""
    runs = {}
    for fields in (True, False):
        sim = Simulation(seed=3, fields=fields)
        sim.add_peer("server", "ROUTER", version="3.1")
        sim.add_peer("client", "DEALER", version="3.1", identity=b"me")
        sim.connect("client", "server")
        sim.run()
        sim.send("client", [b"x" * 254, b"y" * 256, b""])
        sim.run()
        runs[fields] = [e for e in sim.events if e["kind"] in ("greeting", "command", "frame", "message")]
    with_fields, without = runs[True], runs[False]
    assert len(with_fields) == len(without)
    lazy = 0
    for full, bare in zip(with_fields, without, strict=True):
        if full["kind"] in ("frame", "message"):
            framing = bare.pop("framing")
            assert framing == "3" and "fields" not in bare
            assert refield(bare, framing) == full["fields"]
            lazy += 1
        else:
            assert bare == full
    assert lazy == 3 + 1  # the DEALER's three frames and its message


def test_event_log_reads_one_event_and_keeps_codes_through_truncation():
    log = EventLog(first_block=5)
    texts = [json.dumps({"n": i}) for i in range(3 * EventLog.BLOCK + 9)]
    for i, text in enumerate(texts):
        log.append(text, i % 3)
    for i in (0, 4, 5, 6, EventLog.BLOCK + 4, EventLog.BLOCK + 5, len(texts) - 1):
        assert log.get(i) == (texts[i], i % 3)
    with pytest.raises(IndexError):
        log.get(len(texts))
    log.truncate(EventLog.BLOCK + 7)
    assert list(log.items()) == [(t, i % 3) for i, t in enumerate(texts[:EventLog.BLOCK + 7])]
    log.clear()
    assert list(log.items()) == [] and not log.codes


def test_a_real_session_s_socket_without_fields_and_one_with_them(tmp_path):
    """A tcp session keeps its events with their fields: a `?fields=0` socket beside a default one gets them without,
    and the one event fetched has them."""
    with open_client(tmp_path) as client:
        session_id = client.post("/api/sessions", json={"mode": "tcp", "server": {"type": "PUSH"},
                                                        "client": {"type": "PULL"}}).json()["id"]
        with client.websocket_connect(f"/ws/sessions/{session_id}?batch=1&log=0") as full, \
                client.websocket_connect(f"/ws/sessions/{session_id}?batch=1&log=0&fields=0") as bare:
            full.send_json({"type": "send", "from": "server", "frames": ["over tcp"]})
            with_fields, without = events_of(full, 1), events_of(bare, 1)
        assert [e["seq"] for e in without] == [e["seq"] for e in with_fields]
        assert not any("fields" in e for e in without) and all(e["fields"] for e in with_fields)
        assert without == [{k: v for k, v in e.items() if k != "fields"} for e in with_fields]
        frame = next(e for e in with_fields if e["kind"] == "frame")
        assert client.get(f"/api/sessions/{session_id}/events/{frame['seq']}").json() == frame
