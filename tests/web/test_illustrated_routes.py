"""Illustrated pages from the web app: a session's and a stored capture's connection, downloaded as one
self-contained HTML file under a policy that lets nothing in it run."""

from __future__ import annotations

import re
import subprocess
import sys
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
    # Each connection of the broker topology, named by its nodes (counted from 0, as sessions count them), captioned
    # with the steps that point at it, not all with the last step's title (issue 32.12).
    assert "Connection 0: c1 and front" in html and "Shown in steps 1, 2, 5." in html
    assert "A client without an identity" not in re.sub(r'<section id="(lesson|answers)".*?</section>', "", html,
                                                          flags=re.S).split("<main>")[1].split('id="reproduce"')[0]
    ids = re.findall(r'<section id="([^"]+)"', html)
    assert len(ids) == len(set(ids)) > 3
    greeting = client.get("/api/lessons/greeting/illustrated").text
    sections = re.findall(r'<section id="(c[^"]+)"', greeting)
    assert sections[:2] == ["c0", "c0-2"]  # one connection shown by several steps: one anchor each
    assert client.get("/api/lessons/nope/illustrated").status_code == 404


def test_pages_in_the_language_asked_for(client: TestClient) -> None:
    zh = client.get("/api/lessons/greeting/illustrated", params={"lang": "zh-CN"}).text
    assert '<html lang="zh-CN">' in zh and "在步骤 1, 2, 3 中出现。" in zh and "课程 greeting" in zh
    assert "Shown in steps" not in zh and "答案" in zh and "逐字节解读" in zh
    accept = client.get("/api/lessons/greeting/illustrated", headers={"Accept-Language": "zh-CN,zh;q=0.9"}).text
    assert "在步骤 1, 2, 3 中出现。" in accept


def test_a_lesson_handout_carries_the_lesson(client: TestClient, tmp_path: Path) -> None:
    """Issue 32.12: the broker lesson's handout has its narration, the topology's diagram, each step's socket
    decisions, its questions and an answer key; its script, also served as a .py, builds the whole topology with
    libzmq, the broker a zmq.proxy, and every application's read happens when libzmq runs it."""
    html = client.get("/api/lessons/broker/illustrated").text
    lesson = html.split('<section id="lesson"')[1].split("</section>")[0]
    assert "Step 1: A request leaves the client" in lesson and "extended request-reply" in lesson
    assert '<figure class="topology">' in lesson and lesson.count('<g class="node">') == 6
    assert lesson.count('class="bind"') == 4 and "marker-start" in lesson  # (request-reply: both ways)
    assert "ROUTER added the identity frame &#x27;c1&#x27; of c1" in lesson
    assert "Click the frame that the broker added to c1" in lesson
    key = html.split('<section id="answers"')[1].split("</section>")[0]
    assert "<strong>frame 1</strong>" in key and "<strong>World</strong>" in key and "<strong>s1</strong>" in key
    script = client.get("/api/lessons/broker/script.py")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/x-python")
    assert 'filename="broker.py"' in script.headers["content-disposition"]
    assert "zmq.proxy_steerable(" in script.text and script.text in html.replace("&#x27;", "'").replace(
        "&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    path = tmp_path / "broker.py"
    path.write_text(script.text, encoding="utf-8")
    run = subprocess.run([sys.executable, str(path), "--timeout", "5"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["s1 received [b'Hello']", "c1 received [b'World']", "s2 received [b'Hi']"]


def test_a_lesson_handouts_contents_and_key_in_chinese(client: TestClient) -> None:
    """The contents list the lesson first, beside the connections (it was listed inside connection 0's elements),
    and in Chinese the answer key says a message's frame as the pages do, the element's line is punctuated in
    Chinese."""
    zh = client.get("/api/lessons/broker/illustrated", params={"lang": "zh-CN"}).text
    toc = zh.split('<nav class="toc"')[1].split("</nav>")[0]
    top = [a for a in re.findall(r'^<li><a href="#([a-z0-9]+)">', toc, re.M) if not re.fullmatch(r"e\d+", a)]
    assert top == ["lesson", "c0", "c1", "c2", "c3", "answers", "reproduce"], top
    key = zh.split('<section id="answers"')[1].split("</section>")[0]
    assert "<strong>第 1 帧</strong>" in key and "frame 1" not in key
    assert "字节流偏移量 107\uff0c4 个字节\uff1bt = 0.006 秒" in zh and "; t =" not in zh


def test_a_topology_session_exports_the_script_that_builds_it(client: TestClient, tmp_path: Path) -> None:
    """The extended request-reply preset, played: its export.py (the script of its illustrated page) builds the
    topology, the broker and the echoing workers, and each client gets its reply from libzmq."""
    session_id = client.post("/api/sessions", json={"preset": "extended-reqrep"}).json()["id"]
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        done = 0
        while done < 3:
            m = ws.receive_json()
            done += m["type"] == "event" and m["event"]["kind"] == "peer" and m["event"]["peer"].startswith("c")
    script = client.get(f"/api/sessions/{session_id}/export.py")
    assert script.status_code == 200 and "threading.Thread(target=echo" in script.text
    path = tmp_path / "session.py"
    path.write_text(script.text, encoding="utf-8")
    run = subprocess.run([sys.executable, str(path), "--timeout", "5"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert sorted(run.stdout.splitlines()) == [f"c{i} received [b'request from c{i}']" for i in (1, 2, 3)]
