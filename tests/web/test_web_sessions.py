"""Sessions: creation, the websocket (events, commands, errors), export as pcapng and JSON, lifetime."""

from __future__ import annotations

import io
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.websockets import WebSocketDisconnect
from webkit import events_of, is_event, open_client, ready, receive_until

from zmtplab.capture.dissect import dissect_capture

pytestmark = pytest.mark.timeout(30)

PUSH_PULL = {"server": {"type": "PUSH"}, "client": {"type": "PULL"}}
WIRE_KEYS = ("conn", "dir", "kind", "offset", "length")
SOURCE_KEYS = ("t", "seq", "ts", "packets", "index")


def is_error(m: dict[str, Any]) -> bool:
    return m["type"] == "error"


def without_source_keys(ev: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ev.items() if k not in SOURCE_KEYS}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("sessions"), session_grace=0.5, reap_interval=0.1,
                     sim_step_interval=0.005) as c:
        yield c


def create(client, mode: str, config: dict[str, Any] = PUSH_PULL) -> str:
    r = client.post("/api/sessions", json={"mode": mode, **config})
    assert r.status_code == 201, r.text
    return r.json()["id"]


# ---------------------------------------------------------------- creation


@pytest.mark.parametrize("body", [
    {"mode": "simulated", "server": {"type": "NOPE"}, "client": {"type": "PULL"}},
    {"mode": "carrier-pigeon", **PUSH_PULL},
    {"mode": "tcp", "server": {"type": "PUSH", "version": "4.0"}, "client": {"type": "PULL"}},
    {"mode": "tcp", "server": {"type": "PUSH", "mechanism": "KERBEROS"}, "client": {"type": "PULL"}},
    {"mode": "tcp", "server": {"type": "PUSH", "identity": "x" * 256}, "client": {"type": "PULL"}},
    {"mode": "tcp", "server": {"type": "PUSH", "surprise": 1}, "client": {"type": "PULL"}},
    {"mode": "tcp", "server": {"type": "PUSH"}},
    {"mode": "tcp", "server": {"type": "PUSH", "libzmq": True, "version": "3.0"}, "client": {"type": "PULL"}},
    {"mode": "tcp", "server": {"type": "PUSH", "version": "2.0", "mechanism": "PLAIN"}, "client": {"type": "PULL"}},
    {"mode": "simulated", "server": {"type": "PUSH", "libzmq": True}, "client": {"type": "PULL"}},
    {"mode": "simulated", "server": {"type": "PUSH"}, "client": {"type": "PULL", "version": "1.0",
                                                                "mechanism": "CURVE"}},
])
def test_bad_configurations_are_422(client, body):
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"]


def test_unknown_session(client):
    assert client.get("/api/sessions/nope/export.json").status_code == 404
    assert client.get("/api/sessions/nope/export.pcapng").status_code == 404
    with client.websocket_connect("/ws/sessions/nope") as ws:
        message = ws.receive_json()
        assert message["type"] == "error" and "nope" in message["detail"]


# ---------------------------------------------------------------- real peers over loopback TCP


@pytest.mark.parametrize("libzmq", [None, "server", "client"])
def test_tcp_session(client, libzmq, tmp_path: Path):
    config = json.loads(json.dumps(PUSH_PULL))
    if libzmq:
        config[libzmq]["libzmq"] = True
    session_id = create(client, "tcp", config)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        seen = ready(ws)
        greetings = [e for e in events_of(seen) if e["kind"] == "greeting"]
        assert {g["dir"] for g in greetings} == {"c2s", "s2c"}
        assert all(g["version"] == "3.1" and g["fields"] and "t" in g and "seq" in g for g in greetings)
        ws.send_json({"type": "send", "from": "server", "frames": ["a" * 300, "second"]})
        seen = receive_until(ws, is_event("message"))
        frames = [e for e in events_of(seen) if e["kind"] == "frame"]
        assert frames[0]["long"] is True and frames[0]["size"] == 300 and frames[0]["more"] is True
        assert frames[1]["long"] is False and bytes.fromhex(frames[1]["body"]) == b"second"
        ws.send_json({"type": "send", "from": "client", "frames": ["x"]})  # PULL cannot send
        assert receive_until(ws, is_error)[-1]["detail"].startswith("could not send")
        ws.send_json({"type": "step_back"})
        assert "step back" in receive_until(ws, is_error)[-1]["detail"]
        ws.send_json({"type": "play"})
        state = receive_until(ws, lambda m: m["type"] == "state")[-1]
        assert state["closed"] is False and state["total"] >= 7
    exported = client.get(f"/api/sessions/{session_id}/export.json").json()
    events = exported["events"]
    assert [e["seq"] for e in events] == list(range(len(events)))
    pcap = client.get(f"/api/sessions/{session_id}/export.pcapng")
    assert pcap.status_code == 200
    assert pcap.headers["content-type"] == "application/vnd.tcpdump.pcap"
    read_back = list(dissect_capture(io.BytesIO(pcap.content)))
    assert [without_source_keys(e) for e in read_back] == [without_source_keys(e) for e in events]


def test_tcp_session_commands_and_faults(client):
    session_id = create(client, "tcp", {"server": {"type": "PAIR"}, "client": {"type": "PAIR"}})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ready(ws)
        ws.send_json({"type": "pause"})
        ws.send_json({"type": "send", "from": "client", "frames": ["held"]})
        state = receive_until(ws, lambda m: m["type"] == "state" and not m["playing"])[-1]
        assert state["playing"] is False
        ws.send_json({"type": "step"})  # lets the held bytes through
        receive_until(ws, is_event("message", dir="c2s"))
        ws.send_json({"type": "play"})
        ws.send_json({"type": "fault", "fault": "corrupt_byte", "args": {"dir": "s2c", "offset": 2}})
        ws.send_json({"type": "send", "from": "server", "frames": ["hello"]})
        message = receive_until(ws, is_event("message", dir="s2c"))[-1]["event"]
        assert bytes.fromhex(message["frames"][0]) == bytes([ord("h") ^ 0xFF]) + b"ello"  # flipped on the wire
        ws.send_json({"type": "fault", "fault": "teleport"})
        assert "unknown fault" in receive_until(ws, is_error)[-1]["detail"]
        ws.send_json({"type": "fault", "fault": "close"})
        receive_until(ws, lambda m: m["type"] == "event" and m["event"]["conn"] == "1")  # the client reconnects


# ---------------------------------------------------------------- malformed commands


MALFORMED = [
    "not json",
    "[1, 2]",
    "{}",
    '{"type": "dance"}',
    '{"type": "send", "from": "server"}',
    '{"type": "send", "from": "both", "frames": ["x"]}',
    '{"type": "send", "from": "server", "frames": "x"}',
    '{"type": "send", "from": "server", "frames": [1, 2]}',
    '{"type": "send", "from": "server", "frames": ["zz"], "hex": true}',
    '{"type": "speed", "value": -1}',
    '{"type": "speed", "value": "fast"}',
    '{"type": "fault", "fault": 7}',
    '{"type": "play", "extra": true}',
]


@pytest.mark.parametrize("mode", ["simulated", "tcp"])
def test_malformed_commands_get_errors_and_the_session_survives(client, mode):
    session_id = create(client, mode)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ready(ws)
        for text in MALFORMED:
            ws.send_text(text)
            error = receive_until(ws, is_error)[-1]
            assert isinstance(error["detail"], str) and error["detail"], text
            if text == "not json":
                assert error["detail"] == "not JSON"
            elif text in ("[1, 2]", "{}", '{"type": "play", "extra": true}'):
                assert error["detail"].startswith("bad command: "), error
        ws.send_bytes(b"\x00\x01")
        receive_until(ws, is_error)
        ws.send_text(json.dumps({"type": "send", "from": "server", "frames": ["x" * (2 << 20)]}))
        assert "at most" in receive_until(ws, is_error)[-1]["detail"]
        # Still alive: a proper command works.
        ws.send_json({"type": "send", "from": "server", "frames": ["still here"]})
        message = receive_until(ws, is_event("message"))[-1]["event"]
        assert bytes.fromhex(message["frames"][0]) == b"still here"


@pytest.mark.parametrize("mode", ["simulated", "tcp"])
def test_second_socket_gets_the_events_so_far(client, mode):
    session_id = create(client, mode)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ready(ws)
        ws.send_json({"type": "send", "from": "server", "frames": ["one"]})
        first = events_of(receive_until(ws, is_event("message")))
        with client.websocket_connect(f"/ws/sessions/{session_id}") as ws2:
            replay = [m for m in receive_until(ws2, lambda m: m["type"] == "state") if m["type"] != "log"]
            assert [m["event"]["seq"] for m in replay[:-1]] == list(range(len(replay) - 1))
            assert replay[-2]["event"]["kind"] == "message"
    assert first


def test_session_ends_after_its_last_socket_leaves(client):
    session_id = create(client, "tcp")
    manager = client.app.state.sessions
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ready(ws)
        time.sleep(0.8)  # longer than the grace period, but a socket is open
        assert session_id in manager.sessions
    deadline = time.monotonic() + 5
    while session_id in manager.sessions and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_id not in manager.sessions
    assert client.get(f"/api/sessions/{session_id}/export.json").status_code == 404


def test_session_never_joined_ends_too(client):
    session_id = create(client, "tcp")
    deadline = time.monotonic() + 5
    while session_id in client.app.state.sessions.sessions and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_id not in client.app.state.sessions.sessions


def test_idle_sessions_end(tmp_path: Path):
    # (an idle timeout long enough for a loaded machine to create the session and open its socket first: with
    # 0.3 s the session once ended before its socket was accepted)
    idle = 2.0
    with open_client(tmp_path, session_idle_timeout=idle, session_grace=60, reap_interval=0.1) as c:
        created = time.monotonic()
        session_id = create(c, "tcp")
        with c.websocket_connect(f"/ws/sessions/{session_id}") as ws:
            ready(ws)
            # Nothing is done: the server ends the session and closes its socket although a page watches it.
            with pytest.raises(WebSocketDisconnect):
                while True:
                    ws.receive_json()
        assert time.monotonic() - created >= idle  # (not before it was idle that long)
        assert session_id not in c.app.state.sessions.sessions


def test_too_many_sessions(tmp_path: Path):
    with open_client(tmp_path, max_sessions=1, session_grace=60) as c:
        create(c, "tcp")
        r = c.post("/api/sessions", json={"mode": "tcp", **PUSH_PULL})
        assert r.status_code == 429


@pytest.mark.parametrize("mode", ["simulated", "tcp"])
def test_export_reads_in_tshark(client, tmp_path: Path, mode):
    session_id = create(client, mode, {"server": {"type": "REP"}, "client": {"type": "REQ"}})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ready(ws)
        ws.send_json({"type": "send", "from": "client", "frames": ["Hello"]})
        receive_until(ws, is_event("message", dir="c2s"))
        ws.send_json({"type": "send", "from": "server", "frames": ["World"]})
        receive_until(ws, is_event("message", dir="s2c"))
    path = tmp_path / "session.pcapng"
    path.write_bytes(client.get(f"/api/sessions/{session_id}/export.pcapng").content)
    exported = client.get(f"/api/sessions/{session_id}/export.json").json()["events"]
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "tcp.stream", "-e", "tcp.len",
                          "-e", "tcp.analysis.flags"], capture_output=True, text=True, timeout=60, check=True)
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert rows and all(r[0] == "0" for r in rows)
    assert not any(r[2] for r in rows), "tshark found TCP problems"
    payload = sum(int(r[1]) for r in rows)
    wire = {d: max(e["offset"] + e["length"] for e in exported if e["dir"] == d) for d in ("c2s", "s2c")}
    assert payload == wire["c2s"] + wire["s2c"]


# ---------------------------------------------------------------- simulated sessions


def test_simulated_session(client):
    session_id = create(client, "simulated")
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        seen = ready(ws)
        events = events_of(seen)
        assert [e["kind"] for e in events[:2]] == ["greeting", "greeting"]
        assert {e["dir"] for e in events[:2]} == {"c2s", "s2c"}
        assert all(e["conn"] == "0" and e["fields"] and isinstance(e["t"], float) for e in events)
        assert [e["seq"] for e in events] == list(range(len(events)))
        ws.send_json({"type": "send", "from": "server", "frames": ["a" * 300, "second"]})
        seen = receive_until(ws, is_event("message"))
        frames = [e for e in events_of(seen) if e["kind"] == "frame"]
        assert frames[0]["long"] is True and frames[0]["size"] == 300 and frames[0]["more"] is True
        assert frames[0]["fields"][1] == {**frames[0]["fields"][1], "name": "size", "length": 8, "value": 300}
        assert frames[1]["long"] is False and bytes.fromhex(frames[1]["body"]) == b"second"
        received = receive_until(ws, lambda m: m["type"] == "log" and m["entry"].get("what") == "recv")
        assert [bytes.fromhex(f) for f in received[-1]["entry"]["frames"]] == [b"a" * 300, b"second"]
        # The bytes of this send in the log (a socket gets the log from when it connects: the handshake may have
        # gone by before, as on a busy machine, while its events come again).
        logs = [m["entry"] for m in seen + received if m["type"] == "log"]
        assert any(entry["kind"] == "link" and entry["what"] == "bytes" for entry in logs)
    session_events = client.get(f"/api/sessions/{session_id}/export.json").json()["events"]
    pcap = client.get(f"/api/sessions/{session_id}/export.pcapng").content
    read_back = list(dissect_capture(io.BytesIO(pcap)))
    assert [without_source_keys(e) for e in read_back] == [without_source_keys(e) for e in session_events]


def test_simulated_stepping(client):
    session_id = create(client, "simulated", {"server": {"type": "REP"}, "client": {"type": "REQ"}})
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ready(ws)
        ws.send_json({"type": "pause"})
        receive_until(ws, lambda m: m["type"] == "state" and not m["playing"])
        ws.send_json({"type": "send", "from": "client", "frames": ["Hello"]})
        state = receive_until(ws, lambda m: m["type"] == "state")[-1]
        start = state["position"]
        ws.send_json({"type": "step"})
        seen = receive_until(ws, lambda m: m["type"] == "state")
        stepped = events_of(seen)
        assert stepped and stepped[0]["seq"] == start and stepped[0]["kind"] == "frame"
        after = seen[-1]
        assert after["position"] == start + len(stepped) and after["playing"] is False
        ws.send_json({"type": "step_back"})
        back = receive_until(ws, lambda m: m["type"] == "state")[-1]
        assert back["position"] == start and back["total"] == after["position"]
        ws.send_json({"type": "step"})  # deterministic: the same element again
        again = events_of(receive_until(ws, lambda m: m["type"] == "state"))
        assert [without_source_keys(e) for e in again] == [without_source_keys(e) for e in stepped]
        for _ in range(start + 10):
            ws.send_json({"type": "step_back"})
            last = receive_until(ws, lambda m: m["type"] in ("state", "error"))[-1]
            if last["type"] == "error":
                assert "start" in last["detail"]
                break
        else:
            raise AssertionError("never reached the start")
        ws.send_json({"type": "speed", "value": 50})
        ws.send_json({"type": "play"})
        seen = receive_until(ws, is_event("message", dir="c2s"))
        assert bytes.fromhex(events_of(seen)[-1]["frames"][-1]) == b"Hello"  # the send was replayed
        ws.send_json({"type": "reset"})
        seen = receive_until(ws, lambda m: m["type"] == "reset")
        seen = receive_until(ws, is_event("greeting"))
        assert events_of(seen)[0]["seq"] == 0


def test_simulated_faults(client):
    session_id = create(client, "simulated")
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ready(ws)
        ws.send_json({"type": "fault", "fault": "wrong_mechanism", "args": {"peer": "client"}})
        seen = receive_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "expert"
                             and "mechanism" in m["event"]["text"])
        assert events_of(seen)[-1]["conn"] == "1" and events_of(seen)[-1]["severity"] == "error"
        ws.send_json({"type": "fault", "fault": "teleport"})
        assert "unknown fault" in receive_until(ws, is_error)[-1]["detail"]
        ws.send_json({"type": "fault", "fault": "delay", "args": {"warp": 9}})
        assert "no argument" in receive_until(ws, is_error)[-1]["detail"]
        ws.send_json({"type": "fault", "fault": "close", "args": {"conn": "77"}})
        assert receive_until(ws, is_error)[-1]["detail"]


@pytest.mark.parametrize(("mechanism", "commands"), [
    ("PLAIN", {"HELLO", "WELCOME", "INITIATE", "READY"}),
    ("CURVE", {"HELLO", "WELCOME", "INITIATE", "READY"}),
])
def test_simulated_security_mechanisms(client, mechanism, commands):
    config = {"server": {"type": "DEALER", "mechanism": mechanism},
              "client": {"type": "ROUTER", "mechanism": mechanism, "username": "u", "password": "p"}}
    session_id = create(client, "simulated", config)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        seen = receive_until(ws, is_event("command", name="READY", dir="s2c"))
        names = {e["name"] for e in events_of(seen) if e["kind"] == "command"}
        assert commands <= names, names
