"""Issue 16 on the API: sessions that wait at t = 0 (`autoplay: false`), faults that take the page's `peer`, the
marks-only log (`?log=0&marks=1`), the greeting strategy's bytes, a SUB's topic, and exports that stay as they were
for sessions that use none of it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from webkit import events_of, is_event, open_client, ready, receive_until

pytestmark = pytest.mark.timeout(60)

DEALER_ROUTER = {"server": {"type": "ROUTER"}, "client": {"type": "DEALER"}}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("options"), session_grace=0.5, reap_interval=0.1,
                     sim_step_interval=0.005) as c:
        yield c


def create(client, body: dict[str, Any]) -> str:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def is_log(what: str, **keys: Any):
    def check(m: dict[str, Any]) -> bool:
        return m["type"] == "log" and m["entry"].get("what") == what and all(m["entry"].get(k) == v
                                                                             for k, v in keys.items())
    return check


def test_a_session_without_autoplay_waits_at_t0(client):
    session_id = create(client, {"mode": "simulated", "autoplay": False, **DEALER_ROUTER})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        state = receive_until(ws, lambda m: m["type"] == "state")[-1]
        assert (state["playing"], state["position"], state["total"], state["mode"]) == (False, 0, 0, "simulated")
        time.sleep(0.3)  # 60 intervals of this server's playback: nothing moves by itself
        ws.send_json({"type": "speed", "value": 0.25})
        state = receive_until(ws, lambda m: m["type"] == "state")[-1]
        assert (state["speed"], state["position"], state["playing"]) == (0.25, 0, False)
        ws.send_json({"type": "step"})
        seen = receive_until(ws, lambda m: m["type"] == "state")
        assert [e["kind"] for e in events_of(seen)] == ["greeting"] and seen[-1]["position"] == 1
    # Without the option, a session plays at once, as it always did (the load benchmark and old clients).
    session_id = create(client, {"mode": "simulated", **DEALER_ROUTER})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ready(ws)
    # ... and its export is what it was before these options existed.
    config = client.get(f"/api/sessions/{session_id}/export.json").json()["config"]
    assert set(config) == {"mode", "server", "client"}
    assert set(config["server"]) == {"type", "version", "mechanism", "identity", "username", "password", "libzmq"}


def test_faults_take_the_peer_whose_output_they_affect(client):
    session_id = create(client, {"mode": "simulated", **DEALER_ROUTER})
    with client.websocket_connect(f"/ws/sessions/{session_id}?log=0&marks=1") as ws:
        ready(ws)
        ws.send_json({"type": "fault", "fault": "corrupt_byte", "args": {"peer": "client"}})
        armed = receive_until(ws, is_log("fault", fault="corrupt-armed"))[-1]["entry"]
        assert armed["dir"] == "c2s"
        ws.send_json({"type": "fault", "fault": "split_writes", "args": {"peer": "server"}})
        assert receive_until(ws, is_log("fault", fault="split"))[-1]["entry"]["dir"] == "s2c"
        ws.send_json({"type": "fault", "fault": "delay", "args": {"peer": "server", "seconds": 0.5}})
        assert receive_until(ws, is_log("fault", fault="delay"))[-1]["entry"]["dir"] == "s2c"
        ws.send_json({"type": "fault", "fault": "kill", "args": {"peer": "server"}})
        assert "real session" in receive_until(ws, lambda m: m["type"] == "error")[-1]["detail"]
        ws.send_json({"type": "fault", "fault": "close", "args": {"peer": "client"}})
        seen = receive_until(ws, is_log("closed", conn="0"))
        entries = [m["entry"] for m in seen if m["type"] == "log"]
        # The marks only: who closed first and why, then the close; no per-delivery byte entries.
        assert all(e["kind"] == "link" and e["what"] in ("open", "half-closed", "closed", "fault") for e in entries)
        first = next(e for e in entries if e["what"] == "half-closed")
        assert (first["side"], first["reason"]) == ("client", "connection closed (fault)")
        assert not [m for m in seen if m["type"] == "error"]
        receive_until(ws, is_log("open", conn="1"))


def test_the_greeting_strategy_changes_the_padding_and_the_writes(client):
    session_id = create(client, {"mode": "simulated", "autoplay": False, "server": {"type": "PUSH", "identity": "abc"},
                                 "client": {"type": "PULL", "identity": "abc", "greeting": "full"}})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ws.send_json({"type": "play"})  # (paused until this socket is there: it sees every write)
        seen = ready(ws)
        greetings = {e["dir"]: e for e in events_of(seen) if e["kind"] == "greeting"}
        padding = {d: next(f for f in g["fields"] if f["name"] == "padding")["value"] for d, g in greetings.items()}
        assert padding == {"c2s": "0000000000000000", "s2c": "0000000000000004"}  # zeros; identity length + 1
        writes = {d: [m["entry"]["length"] for m in seen if m["type"] == "log" and m["entry"].get("what") == "bytes"
                      and m["entry"]["dir"] == d and m["entry"]["offset"] < 64] for d in ("c2s", "s2c")}
        assert writes["c2s"] == [64]  # the full greeting: one write
        assert writes["s2c"][0] == 10 and sum(writes["s2c"]) == 64  # libzmq's: the signature first
    exported = client.get(f"/api/sessions/{session_id}/export.json").json()["config"]
    assert exported["client"]["greeting"] == "full" and "greeting" not in exported["server"]
    assert exported["autoplay"] is False and "subscribe" not in exported["server"]


def test_a_sub_subscribes_to_its_topic(client):
    session_id = create(client, {"mode": "simulated", "server": {"type": "PUB"},
                                 "client": {"type": "SUB", "subscribe": "weather"}})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        sub = receive_until(ws, is_event("command", name="SUBSCRIBE"))[-1]["event"]
        assert bytes.fromhex(sub["topic"]) == b"weather"


def played_out(client, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A simulated session's events once it is played to its end (stepped until nothing more happens)."""
    session_id = create(client, {**body, "mode": "simulated", "autoplay": False})
    events: list[dict[str, Any]] = []
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        for _ in range(200):
            ws.send_json({"type": "step"})
            seen = receive_until(ws, lambda m: m["type"] in ("state", "error"))
            events += [m["event"] for m in seen if m["type"] == "event"]
            if seen[-1]["type"] == "error":
                return events
    raise AssertionError("the session never stopped")


def test_a_sub_subscribes_to_nothing_when_told_none(client):
    """`subscribe: null` is no subscription: the SUB sends no SUBSCRIBE and receives nothing, as a libzmq SUB that
    never subscribed; "" (the default) is the empty prefix, every message."""
    body = {"server": {"type": "PUB"}, "client": {"type": "SUB", "subscribe": None}}
    assert not [e for e in played_out(client, body) if e.get("name") == "SUBSCRIBE"]
    body["client"]["subscribe"] = ""
    subscribed = [e for e in played_out(client, body) if e.get("name") == "SUBSCRIBE"]
    assert [bytes.fromhex(e["topic"]) for e in subscribed] == [b""]


def test_tcp_faults_take_the_peer_and_are_marked(client):
    session_id = create(client, {"mode": "tcp", "server": {"type": "PUSH"},
                                 "client": {"type": "PULL", "greeting": "full"}})
    with client.websocket_connect(f"/ws/sessions/{session_id}?log=0&marks=1") as ws:
        seen = ready(ws)
        greeting = next(e for e in events_of(seen) if e["kind"] == "greeting" and e["dir"] == "c2s")
        assert next(f for f in greeting["fields"] if f["name"] == "padding")["value"] == "0" * 16
        ws.send_json({"type": "fault", "fault": "corrupt_byte", "args": {"peer": "server", "offset": 0}})
        ws.send_json({"type": "send", "from": "server", "frames": ["zap"]})
        struck = receive_until(ws, is_log("fault", fault="corrupt"))[-1]["entry"]
        assert struck["dir"] == "s2c" and struck["offset"] >= 64
        ws.send_json({"type": "fault", "fault": "kill", "args": {"peer": "server"}})
        receive_until(ws, is_log("fault", fault="kill", peer="server"))
        closed = receive_until(ws, is_log("closed", conn="0"))
        first = next(m["entry"] for m in closed if m["type"] == "log" and m["entry"]["what"] == "half-closed")
        assert first["side"] in ("server", "client") and "closed the connection" in first["reason"]


def test_a_watching_socket_takes_no_command(client):
    """A student following a presented session (`?watch=1`) sees its stream and drives nothing (issue 32.10)."""
    session_id = create(client, {"mode": "simulated", "server": {"type": "PUSH"}, "client": {"type": "PULL"},
                                 "autoplay": False})
    with client.websocket_connect(f"/ws/sessions/{session_id}?watch=1") as ws:
        ws.send_json({"type": "step"})
        refused = receive_until(ws, lambda m: m["type"] == "error")[-1]
        assert "watches the session" in refused["detail"]
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:  # (the state did not move)
        assert receive_until(ws, lambda m: m["type"] == "state")[-1]["position"] == 0
