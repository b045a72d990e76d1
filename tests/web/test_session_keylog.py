"""Issue 20.4: a session's CURVE key log. Our peers know their session keys, so a session shows each box's
contents right after it (simulated and real TCP alike) and exports the key log (`export.keylog`), one line a
connection, which opens the session's own exported capture."""

from __future__ import annotations

import pytest
from webkit import events_of, is_event, open_client, receive_until

from zmtplab.engine.curve import parse_keylog

pytestmark = pytest.mark.timeout(60)

CURVE = {"server": {"type": "ROUTER", "mechanism": "CURVE"}, "client": {"type": "DEALER", "mechanism": "CURVE"}}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("keylog"), session_grace=0.5, reap_interval=0.1,
                     sim_step_interval=0.005) as c:
        yield c


@pytest.mark.parametrize("mode", ["simulated", "tcp"])
def test_boxes_open_and_the_key_log_is_exported(client, mode):
    r = client.post("/api/sessions", json={"mode": mode, **CURVE})
    assert r.status_code == 201, r.text
    session_id = r.json()["id"]
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        receive_until(ws, is_event("command", name="READY", decrypted=True))
        ws.send_json({"type": "send", "from": "client", "frames": ["", "top secret"]})
        seen = receive_until(ws, is_event("message", decrypted=True))
    [message] = [e for e in events_of(seen) if e["kind"] == "message" and e.get("decrypted")]
    assert message["frames"] == ["", b"top secret".hex()] and message["dir"] == "c2s"
    boxes = [e for e in events_of(seen) if e["kind"] == "command" and e["name"] == "MESSAGE"]
    # One box a frame: the message lies over the last two boxes, from inside the first (after its nonce) to the
    # end of the second.
    first, last = boxes[-2:]
    assert first["offset"] < message["offset"] < first["offset"] + first["length"]
    assert message["offset"] + message["length"] == last["offset"] + last["length"]
    keylog = client.get(f"/api/sessions/{session_id}/export.keylog")
    assert keylog.status_code == 200 and keylog.headers["X-ZMTPLab-Credentials"] == "CURVE-KEYLOG"
    keys = parse_keylog(keylog.text)
    assert len(keys) == 1 and keylog.text.startswith("CURVE_SESSION_KEY ")
    # The key opens the session's own bytes: its exported capture's client HELLO names the same client key.
    export = client.get(f"/api/sessions/{session_id}/export.json").json()
    hello = next(e for e in export["events"] if e.get("kind") == "command" and e.get("name") == "HELLO")
    client_short = bytes.fromhex(next(f["value"] for f in hello["fields"] if f["name"] == "client-short-key"))
    assert client_short in keys
    client.delete(f"/api/sessions/{session_id}")


def test_a_session_without_curve_has_an_empty_key_log(client):
    r = client.post("/api/sessions", json={"mode": "simulated", "server": {"type": "PUSH"},
                                           "client": {"type": "PULL"}})
    session_id = r.json()["id"]
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        receive_until(ws, is_event("command", name="READY"))
    assert client.get(f"/api/sessions/{session_id}/export.keylog").text == ""


def test_the_exported_capture_opens_with_the_exported_key_log(client, tmp_path):
    import json
    import subprocess
    import sys

    session_id = client.post("/api/sessions", json={"mode": "simulated", **CURVE}).json()["id"]
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        receive_until(ws, is_event("command", name="READY", decrypted=True))
        ws.send_json({"type": "send", "from": "client", "frames": ["", "over the wire"]})
        receive_until(ws, is_event("message", decrypted=True))
    capture = tmp_path / "session.pcapng"
    capture.write_bytes(client.get(f"/api/sessions/{session_id}/export.pcapng").content)
    keylog = tmp_path / "session.keylog"
    keylog.write_text(client.get(f"/api/sessions/{session_id}/export.keylog").text)
    run = [sys.executable, "-m", "zmtplab.cli", "dissect", "--jsonl", str(capture)]
    plain = [json.loads(line) for line in subprocess.run(run, capture_output=True, text=True, check=True)
             .stdout.splitlines()]
    opened = [json.loads(line) for line in subprocess.run([*run, "--curve-keylog", str(keylog)], capture_output=True,
                                                           text=True, check=True).stdout.splitlines()]
    assert not any(e.get("decrypted") for e in plain)
    decrypted = [e for e in opened if e.get("decrypted")]
    assert [e["frames"] for e in decrypted if e["kind"] == "message"] == [["", b"over the wire".hex()]]
    props = {e["name"]: e["properties"]["Socket-Type"] for e in decrypted if e["kind"] == "command"}
    assert props == {"INITIATE": "DEALER", "READY": "ROUTER"}
    # Everything else is what the plain dissection shows, in the same order.
    assert [e for e in opened if not e.get("decrypted")] == plain
    bad = tmp_path / "bad.keylog"
    bad.write_text("CURVE_SESSION_KEY 00\n")
    refused = subprocess.run([*run, "--curve-keylog", str(bad)], capture_output=True, text=True)
    assert refused.returncode == 2 and "--curve-keylog" in refused.stderr
