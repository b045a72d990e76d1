"""The web app in Simplified Chinese: notes, expert texts and findings on request; English byte for byte as before."""
# ruff: noqa: RUF001  (the Chinese texts use full-width punctuation, as Chinese does)

from __future__ import annotations

import json
import re

import pytest
from webkit import LOCAL, dissected, events_of, open_client, ready, receive_until

pytestmark = pytest.mark.timeout(60)

HAN = re.compile(r"[\u4e00-\u9fff]")
GREETING = "ff00000000000000017f03014e554c4c" + "00" * 48  # a NULL 3.1 greeting, libzmq padding


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("languages"), sim_step_interval=0.005) as c:
        yield c


def test_decode_in_chinese_and_unchanged_in_english(client):
    english = client.post("/api/decode", json={"hex": GREETING})
    assert client.post("/api/decode?lang=en", json={"hex": GREETING}).content == english.content
    assert client.post("/api/decode", json={"hex": GREETING}, headers={"Accept-Language": "fr, en"}).content \
        == english.content
    zh = client.post("/api/decode", json={"hex": GREETING}, headers={"Accept-Language": "zh-CN,zh;q=0.9"}).json()
    assert client.post("/api/decode?lang=zh-CN", json={"hex": GREETING}).json() == zh
    en_fields = english.json()["events"][0]["fields"]
    zh_fields = zh["events"][0]["fields"]
    assert [f["note"] for f in en_fields][:2] == [
        "First octet of the signature: %xFF.",
        "Not significant (23/ZMTP: never interpreted). libzmq puts identity length + 1 = 1 here so a 1.0 peer "
        "reads a frame header."]
    assert [f["note"] for f in zh_fields][:2] == [
        "签名的第一个字节：%xFF。",
        "无意义（23/ZMTP：接收方不会解读它）。libzmq 在这里放入身份长度 + 1 = 1，让 1.0 对等方把它读作帧头。"]
    assert all(HAN.search(f["note"]) for f in zh_fields)
    # only the notes change: names, values, rules and offsets are the wire's
    for e, z in zip(en_fields, zh_fields, strict=True):
        assert {k: v for k, v in e.items() if k != "note"} == {k: v for k, v in z.items() if k != "note"}


def test_a_capture_in_chinese(client):
    capture_id, _ = dissected(client, LOCAL / "mismatch_push_push.pcapng")
    url = f"/api/captures/{capture_id}"
    english = client.get(f"{url}/events?fields=1")
    assert client.get(f"{url}/events?fields=1&lang=en").content == english.content
    zh = client.get(f"{url}/events?fields=1&lang=zh-CN").json()
    experts_en = [e["text"] for e in english.json()["events"] if e["kind"] == "expert"]
    experts_zh = [e["text"] for e in zh["events"] if e["kind"] == "expert"]
    assert "invalid socket pair: client PUSH cannot talk to server PUSH (23/ZMTP socket-type table)" in experts_en
    assert "无效的套接字组合：客户端 PUSH 不能与服务器 PUSH 通信（23/ZMTP 套接字类型表）" in experts_zh
    assert all(HAN.search(t) for t in experts_zh)
    notes = [f["note"] for e in zh["events"] for f in e.get("fields") or []]
    assert notes and all(HAN.search(n) for n in notes)
    one = client.get(f"{url}/events/0?conn={zh['events'][0]['conn']}&lang=zh-CN").json()
    assert one["fields"][0]["note"] == "签名的第一个字节：%xFF。"
    analysis_en = client.get(f"{url}/analysis").json()
    analysis_zh = client.get(f"{url}/analysis", headers={"Accept-Language": "zh"}).json()
    assert [f["rule"] for f in analysis_zh["findings"]] == [f["rule"] for f in analysis_en["findings"]]
    assert analysis_en["findings"] and all(HAN.search(f["text"]) for f in analysis_zh["findings"])
    assert {k: v for k, v in analysis_zh.items() if k != "findings"} == \
        {k: v for k, v in analysis_en.items() if k != "findings"}


def test_the_session_socket_in_chinese(client):
    session = client.post("/api/sessions", json={"mode": "simulated", "server": {"type": "PUSH"},
                                                  "client": {"type": "PUSH"}}).json()["id"]
    with client.websocket_connect(f"/ws/sessions/{session}?lang=zh-CN") as ws:
        zh = events_of(ready(ws))
    with client.websocket_connect(f"/ws/sessions/{session}") as ws:
        en = events_of(ready(ws))
    assert [e["seq"] for e in zh] == [e["seq"] for e in en]
    greeting_zh = next(e for e in zh if e["kind"] == "greeting")
    greeting_en = next(e for e in en if e["kind"] == "greeting")
    assert greeting_en["fields"][0]["note"] == "First octet of the signature: %xFF."
    assert greeting_zh["fields"][0]["note"] == "签名的第一个字节：%xFF。"
    assert json.dumps(greeting_zh, ensure_ascii=False).count("签名") >= 2
    # why a connection closed (a `log` entry the sequence marks)
    with client.websocket_connect(f"/ws/sessions/{session}?log=0&marks=1&lang=zh-CN") as ws:
        closed = receive_until(ws, lambda m: m["type"] == "log" and "reason" in m["entry"])[-1]["entry"]
    assert closed["reason"] == "无效的套接字类型：PUSH 套接字不能与 PUSH 通信"
    with client.websocket_connect(f"/ws/sessions/{session}?log=0&marks=1") as ws:
        closed = receive_until(ws, lambda m: m["type"] == "log" and "reason" in m["entry"])[-1]["entry"]
    assert closed["reason"] == "invalid socket type: a PUSH socket cannot talk to PUSH"


def test_error_details_in_chinese(client):
    english = client.get("/api/lessons/nope")
    assert english.json() == {"detail": "no lesson 'nope'"}
    assert client.get("/api/lessons/nope", headers={"Accept-Language": "zh-CN"}).json() == {"detail": "没有课程 'nope'"}
    assert client.get("/api/captures/abc/events?lang=zh-CN").json() == {"detail": "没有 ID 为 'abc' 的抓包文件"}
    bad = client.post("/api/decode?lang=zh-CN", json={"hex": "zz"})
    assert bad.status_code == 422 and bad.json()["detail"].startswith("不是十六进制：")
    upload = client.post("/api/captures?lang=zh-CN", files={"file": ("x.pcap", b"hello world, no capture")})
    assert upload.status_code == 415
    assert upload.json() == {"detail": "不是 pcap 或 pcapng 抓包文件（文件以 68 65 6c 6c 开头）"}


def test_a_capture_cut_short_says_so_in_chinese(client):
    data = (LOCAL / "push_pull.pcapng").read_bytes()
    capture_id, summary = dissected(client, data[:-30], "cut.pcapng")
    assert summary["state"] == "done" and summary["error"] == (
        "The capture is truncated: it ends inside a block of type 0x00000005 (108-byte block) at byte 2176 "
        "(after frame 17).")
    zh = client.get(f"/api/captures/{capture_id}", headers={"Accept-Language": "zh-CN"}).json()
    assert zh["error"] == ("抓包文件被截断：它在第 2176 个字节处结束于一个类型为 0x00000005 的块（108 字节）之中"
                           "（在第 17 帧之后）。")
    assert {k: v for k, v in zh.items() if k != "error"} == {k: v for k, v in summary.items() if k != "error"}
    last = client.get(f"/api/captures/{capture_id}/progress?lang=zh-CN").text.strip().splitlines()[-1]
    assert "抓包文件被截断" in last
    assert "The capture is truncated" in client.get(f"/api/captures/{capture_id}/progress").text


def test_the_live_socket_in_chinese(client):
    """A tap source between two libzmq sockets: its websocket with ?lang=zh-CN explains the greeting in Chinese."""
    import zmq

    ctx = zmq.Context()
    try:
        pull = ctx.socket(zmq.PULL)
        pull.setsockopt(zmq.LINGER, 0)
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        created = client.post("/api/live", json={"source": "tap", "target": f"127.0.0.1:{port}"}).json()
        with client.websocket_connect(f"/ws/live/{created['id']}?lang=zh-CN") as ws:
            push = ctx.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 0)
            push.connect(f"tcp://{created['listen']}")
            push.send(b"hello")
            assert pull.poll(10_000)
            seen = receive_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "greeting")
            greeting = seen[-1]["event"]
            assert greeting["fields"][0]["note"] == "签名的第一个字节：%xFF。"
            push.close()
        client.delete(f"/api/live/{created['id']}")
    finally:
        ctx.destroy(linger=0)


def test_unknown_routes_answer_in_chinese(client):
    assert client.get("/api/nope").json() == {"detail": "no API route /api/nope"}
    assert client.get("/api/nope?lang=zh-CN").json() == {"detail": "没有 API 路由 /api/nope"}
    wrong = client.delete("/api/health", headers={"Accept-Language": "zh-CN"})
    assert wrong.status_code == 405 and wrong.json() == {"detail": "/api/health 不允许 DELETE：请使用 GET"}
