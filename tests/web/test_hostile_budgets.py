"""Hostile clients on loopback (issue 31): the bytes and the work one client can make the server hold or do are
bounded, each test reproducing one finding of the hostile run and checking the budget that answers it.

Every loop is bounded in count and in time, every server listens on 127.0.0.1 only, and every flood is sized so
that the code before these budgets fails the test without taking the machine down.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from webkit import TestClient, make_settings, receive_until

from zmtplab.web import create_app
from zmtplab.web.sessions.session import Subscriber

pytestmark = pytest.mark.timeout(120)

MIB = 1 << 20


def fan_out(subscribers: int) -> dict[str, Any]:
    """A PUB whose every SUB takes everything."""
    return {"mode": "simulated", "autoplay": True,
            "nodes": [{"name": "pub", "type": "PUB"}] + [{"name": f"s{i}", "type": "SUB", "subscribe": [""]}
                                                         for i in range(subscribers)],
            "links": [{"connect": f"s{i}", "bind": "pub"} for i in range(subscribers)]}


def subscribed(ws: Any, count: int) -> None:
    """Reads a page-like socket (`?batch=1`) until `count` SUBSCRIBE commands went by."""
    seen = 0
    for _ in range(5000):
        text = ws.receive_text()
        seen += text.count('"name":"SUBSCRIBE"')
        if seen >= count:
            return
    raise AssertionError(f"only {seen} of {count} subscriptions seen")


# ---------------------------------------------------------------- 1. one topology's fan-out


def test_a_1_mb_send_to_23_subscribers_streams_bounded_events(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread"))
    with TestClient(app) as c:
        session_id = c.post("/api/sessions", json=fan_out(23)).json()["id"]
        with c.websocket_connect(f"/ws/sessions/{session_id}?batch=1&log=0&marks=1&fields=0") as ws:
            ws.send_json({"type": "speed", "value": 1000})
            subscribed(ws, 23)
            ws.send_json({"type": "send", "from": "pub", "frames": ["x" * (MIB - 256)]})
            received = 0
            messages: list[dict[str, Any]] = []
            for _ in range(20_000):
                text = ws.receive_text()
                received += len(text)
                batch = json.loads(text)
                for m in batch if isinstance(batch, list) else [batch]:
                    if m["type"] == "event" and m["event"]["kind"] == "message" and m["event"].get("frames"):
                        messages.append(m["event"])
                if len(messages) == 23:
                    break
        # 23 deliveries of 1 MB came as 23 events of at most 64 KiB of body each, not 241 MB of websocket text.
        assert len(messages) == 23
        assert all(m.get("truncated") and len(m["frames"][0]) == 2 * 64 * 1024 for m in messages)
        assert received < 24 * MIB, received
        session = app.state.sessions.get(session_id)
        assert session.events.bytes < 24 * MIB
        # The element opened in the page still has its fields, made from the whole bytes (the body's length).
        event = c.get(f"/api/sessions/{session_id}/events/{messages[0]['seq']}").json()
        assert event["fields"][0]["length"] == MIB - 256 and event["fields"][0]["value"].endswith("more octets)")


def test_a_send_is_counted_once_per_delivery(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread", session_max_sent_bytes=8 * MIB))
    with TestClient(app) as c:
        session_id = c.post("/api/sessions", json=fan_out(23)).json()["id"]
        with c.websocket_connect(f"/ws/sessions/{session_id}?batch=1&log=0&fields=0") as ws:
            ws.send_json({"type": "speed", "value": 1000})
            subscribed(ws, 23)
            for _ in range(2):  # 256 KiB to 23 subscribers is 5.75 MiB delivered; twice is over 8 MiB
                ws.send_json({"type": "send", "from": "pub", "frames": ["y" * (256 * 1024)]})
            ws.send_json({"type": "recv", "node": "nobody"})  # (refused whatever the budget: the end of the answers)

            def errors(m: Any) -> list[str]:
                return [x["detail"] for x in (m if isinstance(m, list) else [m]) if x["type"] == "error"]

            seen = receive_until(ws, lambda m: any("no node named" in e for e in errors(m)))
        refusals = [e for m in seen for e in errors(m)]
        assert "counted once per connection it crosses" in refusals[0]
        assert app.state.sessions.get(session_id).sent_bytes == 23 * 256 * 1024


def test_a_socket_that_falls_behind_in_octets_is_closed() -> None:
    sub = Subscriber(limit=1000, max_bytes=MIB)
    for _ in range(3):
        sub.put_text("z" * (400 * 1024))  # three messages, far under the count, over a MiB together
    assert sub.overflowed and sub.ended and sub.close_code == 1013 and not sub.items and sub.queued_bytes == 0
