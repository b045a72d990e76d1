"""Illustrated pages from the web app: a session's and a stored capture's connection, downloaded as one
self-contained HTML file under a policy that lets nothing in it run."""

from __future__ import annotations

import re
from pathlib import Path

from webkit import TestClient, dissected, is_event, ready, receive_until

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def element_ids(html: str) -> list[str]:
    return re.findall(r'<article class="element[^"]*" id="(e\d+)"', html)


def test_a_session_as_an_illustrated_page(client: TestClient) -> None:
    body = {"mode": "simulated", "server": {"type": "REP"}, "client": {"type": "REQ"}}
    session_id = client.post("/api/sessions", json=body).json()["id"]
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ready(ws)
        ws.send_json({"type": "send", "from": "client", "frames": ["<b>hi</b>"]})
        receive_until(ws, is_event("frame", dir="c2s", size=9))
    r = client.get(f"/api/sessions/{session_id}/export.html")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["content-disposition"] == f'attachment; filename="zmtplab-session-{session_id[:8]}.html"'
    assert "default-src 'none'" in r.headers["content-security-policy"] and "script-src" not in r.headers[
        "content-security-policy"]
    html = r.text
    assert "<script" not in html and "&lt;b&gt;hi&lt;/b&gt;" in html and "<b>hi</b>" not in html
    assert "client (REQ)" in html and "READY command" in html
    assert element_ids(html)[:4] == ["e1", "e2", "e3", "e4"]
    assert 'id="e3.command-name"' in html
    assert "client.send_multipart([b&#x27;&lt;b&gt;hi&lt;/b&gt;&#x27;])" in html  # the reproducing script, escaped
    assert client.get("/api/sessions/nope/export.html").status_code == 404


def test_a_capture_connection_and_a_range(client: TestClient) -> None:
    capture_id, summary = dissected(client, CAPTURES / "broker.pcapng", "broker.pcapng")
    conn = summary["connections"][1]["conn"]
    r = client.get(f"/api/captures/{capture_id}/illustrated", params={"conn": conn, "from": 2, "to": 5})
    assert r.status_code == 200, r.text
    assert r.headers["content-disposition"] == f'attachment; filename="broker-conn{conn}.html"'
    html = r.text
    assert element_ids(html) == ["e1", "e2", "e3", "e4"]
    assert f"broker.pcapng, connection {conn}" in html
    assert summary["connections"][1]["client"] in html  # the endpoints name the lifelines
    whole = client.get(f"/api/captures/{capture_id}/illustrated", params={"conn": conn}).text
    events = client.get(f"/api/captures/{capture_id}/events", params={"conn": conn, "limit": 1000}).json()
    drawn = [e for e in events["events"] if e["kind"] in ("greeting", "command", "frame", "expert", "gap")]
    assert len(element_ids(whole)) == len(drawn)
    assert client.get(f"/api/captures/{capture_id}/illustrated", params={"conn": "99"}).status_code == 404
    assert client.get(f"/api/captures/{capture_id}/illustrated", params={"conn": conn, "from": 10**6}).status_code \
        == 422
    assert client.get("/api/captures/nope/illustrated", params={"conn": "0"}).status_code == 404


def test_a_lesson_as_an_illustrated_page(client: TestClient) -> None:
    r = client.get("/api/lessons/broker/illustrated")
    assert r.status_code == 200
    assert r.headers["content-disposition"] == 'attachment; filename="broker-lesson.html"'
    html = r.text
    # Each connection of the broker topology, named by its nodes, with the step that shows it last.
    assert "Connection 1: c1 and front" in html and "As step " in html
    ids = re.findall(r'<section id="([^"]+)"', html)
    assert len(ids) == len(set(ids)) > 3
    greeting = client.get("/api/lessons/greeting/illustrated").text
    sections = re.findall(r'<section id="(c[^"]+)"', greeting)
    assert sections[:2] == ["c0", "c0-2"]  # one connection shown by several steps: one anchor each
    assert client.get("/api/lessons/nope/illustrated").status_code == 404


def test_pages_in_the_language_asked_for(client: TestClient) -> None:
    zh = client.get("/api/lessons/greeting/illustrated", params={"lang": "zh-CN"}).text
    assert '<html lang="zh-CN">' in zh and "第 3 步所示" in zh and "课程 greeting" in zh
    assert "As step" not in zh
    accept = client.get("/api/lessons/greeting/illustrated", headers={"Accept-Language": "zh-CN,zh;q=0.9"}).text
    assert "第 3 步所示" in accept
