"""The session websocket's `recv` command (issue 19 follow-up): a topology node whose application reads by hand
(`recv: "manual"`) reads one message per command, as a `peer recv` event, in simulated and in real mode (our
node and libzmq's); with nothing waiting, or for a node that reads by itself, the browser gets an error."""

from __future__ import annotations

import time
from typing import Any

import pytest
from webkit import events_of, open_client, receive_until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("recv-command")) as c:
        yield c


def topology(mode: str, libzmq: bool) -> dict[str, Any]:
    return {"mode": mode,
            "nodes": [{"name": "vent", "type": "PUSH"},
                      {"name": "sink", "type": "PULL", "recv": "manual", "libzmq": libzmq},
                      {"name": "auto", "type": "PULL"}],
            "links": [{"connect": "sink", "bind": "vent"}]}


def is_wire(text: str):
    return lambda m: (m["type"] == "event" and m["event"]["kind"] == "message"
                      and m["event"]["frames"] == [text.encode().hex()])


def is_recv(m: dict[str, Any]) -> bool:
    return m["type"] == "event" and m["event"]["kind"] == "peer" and m["event"]["what"] == "recv"


def is_error(m: dict[str, Any]) -> bool:
    return m["type"] == "error"


def read_one(ws: Any, node: str) -> dict[str, Any]:
    """The event of a manual node's read, once it has a message waiting: in real mode a message climbs from the
    wire (where the tap saw it) into the socket's queue a moment later, a while on a busy machine."""
    deadline = time.monotonic() + 30
    while True:
        ws.send_json({"type": "recv", "node": node})
        answer = receive_until(ws, lambda m: is_recv(m) or is_error(m))[-1]
        if is_recv(answer):
            return answer["event"]
        assert answer["detail"] == f"{node} has no message waiting" and time.monotonic() < deadline, answer
        time.sleep(0.05)


@pytest.mark.parametrize(("mode", "libzmq"), [("simulated", False), ("tcp", False), ("tcp", True)])
def test_recv_reads_one_message_of_a_manual_node(client, mode: str, libzmq: bool) -> None:
    r = client.post("/api/sessions", json=topology(mode, libzmq))
    assert r.status_code == 201, r.text
    with client.websocket_connect(f"/ws/sessions/{r.json()['id']}") as ws:
        assert ws.receive_json()["type"] == "topology"
        for _ in range(2):  # (both ends' READY: the link is up)
            receive_until(ws, lambda m: m["type"] == "event" and m["event"].get("name") == "READY")
        for text in ("first", "second"):
            ws.send_json({"type": "send", "from": "vent", "frames": [text]})
        seen = receive_until(ws, is_wire("second"))
        assert not [m for m in seen if is_recv(m)], "a manual node reads nothing by itself"
        reads = [read_one(ws, "sink") for _ in range(2)]
        assert [(e["peer"], bytes.fromhex(e["frames"][0])) for e in reads] == [("sink", b"first"), ("sink", b"second")]
        assert [e["msg"] for e in reads] == [1, 2]  # (the ids of vent's sends: the message's path)
        ws.send_json({"type": "recv", "node": "sink"})
        assert receive_until(ws, is_error)[-1]["detail"] == "sink has no message waiting"
        ws.send_json({"type": "recv", "node": "auto"})
        assert "auto reads by itself" in receive_until(ws, is_error)[-1]["detail"]
        ws.send_json({"type": "recv", "node": "nobody"})
        assert "no node named 'nobody'" in receive_until(ws, is_error)[-1]["detail"]
        ws.send_json({"type": "recv", "node": "bad name!"})
        assert "node" in receive_until(ws, is_error)[-1]["detail"]
    assert events_of(seen)


def test_recv_in_a_two_peer_session_is_refused(client) -> None:
    r = client.post("/api/sessions", json={"mode": "simulated", "server": {"type": "PULL"},
                                           "client": {"type": "PUSH"}})
    assert r.status_code == 201, r.text
    with client.websocket_connect(f"/ws/sessions/{r.json()['id']}") as ws:
        ws.send_json({"type": "recv", "node": "server"})
        assert "recv is for a topology's nodes" in receive_until(ws, is_error)[-1]["detail"]
