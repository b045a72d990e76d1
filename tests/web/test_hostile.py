"""Hostile clients on loopback (issue 17): each test reproduces one probe and checks the bound that answers it.

Every loop is bounded in count and in time; every server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.websockets import WebSocketDisconnect
from webkit import REPO, TestClient, make_settings, upload

from testkit import LiveServer
from zmtplab.web import create_app
from zmtplab.web.classes.registry import ClassLimits, ClassRegistry, Peer

pytestmark = pytest.mark.timeout(90)

CAPTURE = REPO / "captures" / "req_rep.pcapng"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A real uvicorn server as `zmtplab serve` runs it, with short body deadlines and few uploads per address."""
    settings = make_settings(tmp_path_factory.mktemp("hostile"), body_idle_timeout=1.0, max_captures_per_client=3,
                             max_request_head=16 * 1024, max_request_headers=100, request_head_timeout=1.0,
                             dissect_executor="thread")
    with LiveServer(create_app(settings), name="hostile-server") as srv:
        yield srv


def exchange(port: int, data: bytes, *, timeout: float = 10.0) -> bytes:
    """Sends `data` on a new connection and reads until the server closes it (or `timeout`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        # (The server may answer and close before taking it all: the answer is still there to read.)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(data)
        return read_all(s, timeout)


def read_all(s: socket.socket, timeout: float) -> bytes:
    return read_until_closed(s, timeout)[0]


def read_until_closed(s: socket.socket, timeout: float) -> tuple[bytes, bool]:
    """What the server sent, and whether it closed the connection (end of stream or a reset) before `timeout`."""
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            return out, True
        if not chunk:
            return out, True
        out += chunk
    return out, False


def closed_answer(s: socket.socket) -> bytes:
    """What the server sent before it closed the connection itself; the test fails if it kept it open (60 s: a
    bound for a loaded machine, far beyond the server's 1 s deadlines, which the answers name)."""
    out, closed = read_until_closed(s, 60)
    assert closed, f"the server kept the connection open; it sent {out[:200]!r}"
    return out


def status_of(response: bytes) -> int:
    assert response.startswith(b"HTTP/1.1 "), response[:200]
    return int(response[9:12])


def healthy(server: LiveServer) -> bool:
    return httpx.get(f"{server.base}/api/health", timeout=10).status_code == 200


# ---------------------------------------------------------------- 3. request heads


def test_huge_header_is_431(server: LiveServer) -> None:
    for size in (1 << 20, 10 << 20):
        head = b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * size + b"\r\n\r\n"
        response = exchange(server.port, head)
        assert status_of(response) == 431, response[:200]
        assert b"larger than 16384 octets" in response
    assert healthy(server)


def test_too_many_headers_is_431(server: LiveServer) -> None:
    fields = b"".join(b"X-H%d: v\r\n" % n for n in range(2000))
    response = exchange(server.port, b"GET /api/health HTTP/1.1\r\nHost: x\r\n" + fields + b"\r\n")
    assert status_of(response) == 431 and b"more than 100 header fields" in response
    # A hundred fields are fine.
    fields = b"".join(b"X-H%d: v\r\n" % n for n in range(98))
    response = exchange(server.port, b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + fields + b"\r\n")
    assert status_of(response) == 200


def test_unfinished_heads_are_cut_off(server: LiveServer) -> None:
    # Heads that never end: each is refused once past the limit, not kept in memory.
    sockets = []
    try:
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sockets.append(s)
            s.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for _ in range(64):  # up to 4 MiB, never the end of the head
                    s.sendall(b"b" * 65536)
        for s in sockets:
            response = read_all(s, 10)
            assert status_of(response) == 431, response[:200]
    finally:
        for s in sockets:
            s.close()
    assert healthy(server)


def test_slow_heads_and_silent_connections_are_ended(server: LiveServer) -> None:
    sockets = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(20)]
    try:
        for n, s in enumerate(sockets):
            if n % 2:  # half of them start a head and stall; the others send nothing at all
                s.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
        answers = [closed_answer(s) for s in sockets]  # the server ends them: the client does not give up
    finally:
        for s in sockets:
            s.close()
    for n, answer in enumerate(answers):
        if n % 2:
            assert status_of(answer) == 408 and b"did not arrive within 1 s" in answer, answer[:200]
        else:
            assert answer == b""  # closed without a word
    assert healthy(server)


# ---------------------------------------------------------------- 4. request bodies


def stalled_upload(port: int, declared: int = 100_000) -> socket.socket:
    """An upload that declares `declared` octets and sends the first few hundred only."""
    body = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.pcapng\"\r\n"
            b"Content-Type: application/octet-stream\r\n\r\n" + CAPTURE.read_bytes()[:200])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /api/captures HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
              b"Content-Length: %d\r\n\r\n" % declared + body)
    return s


def test_stalled_bodies_time_out_and_free_their_upload_slots(server: LiveServer) -> None:
    sockets = [stalled_upload(server.port) for _ in range(20)]
    try:
        statuses = [status_of(closed_answer(s)) for s in sockets]
        # The first three take the address's slots and are ended at the 1 s deadline; the others find no slot.
        assert statuses.count(408) == 3 and statuses.count(429) == 17, statuses
    finally:
        for s in sockets:
            s.close()
    # The address may upload again: the stalled uploads held its three slots only while they ran.
    with httpx.Client(base_url=server.base, timeout=30) as c:
        r = upload(c, CAPTURE)
        assert r.status_code == 201, r.text
        assert c.delete(f"/api/captures/{r.json()['id']}").status_code == 204
    # A stalled JSON body too.
    body = b'{"hex": "04 29"'
    response = exchange(server.port, b"POST /api/decode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: 1000\r\n\r\n" + body)
    assert status_of(response) == 408


def test_a_slow_body_that_keeps_moving_is_not_cut(tmp_path: Path) -> None:
    # A server of its own with a 3 s idle deadline: 8 pieces 0.5 s apart take 4 s, longer than the deadline (only
    # a pause that reaches it ends a body), and each pause leaves 2.5 s for a loaded machine's scheduling (with
    # the 1 s deadline of the other tests a descheduled sender was cut: 408).
    settings = make_settings(tmp_path, body_idle_timeout=3.0, dissect_executor="thread")
    data = CAPTURE.read_bytes()
    body = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.pcapng\"\r\n\r\n" + data
            + b"\r\n--b--\r\n")
    with LiveServer(create_app(settings), name="slow-body-server") as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"POST /api/captures HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  b"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: %d\r\n\r\n" % len(body))
        step = len(body) // 8 + 1
        for n in range(0, len(body), step):
            s.sendall(body[n:n + step])
            time.sleep(0.5)
        response = read_all(s, 10)
        assert status_of(response) == 201, response[:300]
        capture_id = json.loads(response.split(b"\r\n\r\n", 1)[1])["id"]
        assert httpx.delete(f"{server.base}/api/captures/{capture_id}").status_code == 204


# ---------------------------------------------------------------- 6. small wrong answers


def test_declared_size_over_the_limit_is_413_before_the_disk_check(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path, dissect_executor="thread"))) as c:
        r = c.post("/api/captures", content=b"--b\r\n",
                   headers={"content-type": "multipart/form-data; boundary=b", "content-length": "999999999999"})
        assert r.status_code == 413, r.text
        assert "limit" in r.json()["detail"]


def test_a_wrong_method_is_405_with_allow(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path, dissect_executor="thread"))) as c:
        for method, path, allow in [("PUT", "/api/health", "GET"), ("GET", "/api/classes", "POST"),
                                    ("DELETE", "/api/decode", "POST"), ("PATCH", "/api/captures", "POST"),
                                    ("POST", "/api/captures/" + "a" * 32 + "/events", "GET")]:
            r = c.request(method, path)
            assert r.status_code == 405, (method, path, r.status_code, r.text)
            assert allow in r.headers["allow"].split(", "), r.headers
            assert method in r.json()["detail"]
        r = c.get("/api/no-such-thing")
        assert r.status_code == 404 and "allow" not in r.headers


# ---------------------------------------------------------------- 1. class slots


def test_one_address_cannot_take_every_class(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread"))
    with TestClient(app, client=("192.0.2.10", 40000)) as script:
        statuses = [script.post("/api/classes").status_code for _ in range(250)]
        assert statuses.count(201) == 4 and statuses.count(429) == 246, statuses[:10]
        assert "at most 4" in script.post("/api/classes").json()["detail"]
        # Another teacher starts a class as usual, and so does one elsewhere in the same IPv6 /64... once it is its
        # network's turn: the /64 counts as one address.
        assert TestClient(app, client=("192.0.2.11", 40000)).post("/api/classes").status_code == 201
        v6 = [TestClient(app, client=(f"2001:db8::{n:x}", 40000)).post("/api/classes").status_code
              for n in range(1, 7)]
        assert v6 == [201] * 4 + [429] * 2


def test_the_last_classes_are_kept_for_new_teachers(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread"),
                     class_limits=ClassLimits(max_classes=10, reserve=3, max_classes_per_address=4))
    with TestClient(app) as c:
        def create(address: str) -> int:
            return TestClient(app, client=(address, 40000)).post("/api/classes").status_code

        assert [create("192.0.2.1") for _ in range(4)] == [201] * 4
        assert [create("192.0.2.2") for _ in range(4)] == [201, 201, 201, 503]  # 7 held: the rest is reserved
        assert [create(f"192.0.2.{n}") for n in range(3, 7)] == [201, 201, 201, 503]  # full at 10
        r = TestClient(app, client=("192.0.2.2", 40000)).post("/api/classes")
        assert r.status_code == 503 and "at most 10 classes" in r.json()["detail"]
        c.app.state.classrooms.limits.max_classes = 20
        r = TestClient(app, client=("192.0.2.2", 40000)).post("/api/classes")
        assert r.status_code == 201


def test_a_class_without_its_teacher_ends_quickly() -> None:
    now = [1000.0]
    registry = ClassRegistry(ClassLimits(teacher_grace=120.0), clock=lambda: now[0])
    never = registry.create("192.0.2.1")  # nobody ever comes
    left = registry.create("192.0.2.1")  # the teacher comes and goes; students stay
    back = registry.create("192.0.2.1")  # the teacher reloads the page
    for room in (left, back):
        room.teacher = Peer("teacher", 8)
        room.students.add(Peer("student", 8))
    now[0] += 100
    left.teacher = None
    registry.teacher_left(left)
    back.teacher = None
    registry.teacher_left(back)
    now[0] += 21
    assert registry.get(never.code) is None  # 121 s without a teacher
    assert registry.get(left.code) is left and registry.get(back.code) is back
    back.teacher = Peer("teacher", 8)
    now[0] += 100
    assert registry.get(left.code) is None
    assert registry.get(back.code) is back
    assert [json.loads(t) for t in left.students.pop().outbox.take_nowait()] == [
        {"type": "ended", "reason": "the teacher did not come back"}]
    # The address's places are free again.
    assert len([registry.create("192.0.2.1") for _ in range(3)]) == 3


# ---------------------------------------------------------------- 6. class sockets: message rate


def test_a_flooding_class_socket_is_closed(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread"))
    with TestClient(app) as c:
        code = c.post("/api/classes").json()["code"]
        with c.websocket_connect(f"/ws/classes/{code}?role=student") as ws:
            assert ws.receive_json()["type"] == "hello"
            sent = 0
            with pytest.raises(WebSocketDisconnect) as closed:
                for _ in range(10_000):
                    ws.send_text('{"type": "status", "following": true}')
                    sent += 1
                for _ in range(10_000):
                    ws.receive_json()
            assert closed.value.code == 1008
        # Others are not affected.
        with c.websocket_connect(f"/ws/classes/{code}?role=student") as ws:
            assert ws.receive_json()["type"] == "hello"
            ws.send_text('{"type": "ping"}')
            assert ws.receive_json() == {"type": "pong"}


def test_a_class_socket_over_the_rate_is_told(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread"),
                     class_limits=ClassLimits(rate=5, burst=5, abuse_limit=1000))
    with TestClient(app) as c:
        code = c.post("/api/classes").json()["code"]
        with c.websocket_connect(f"/ws/classes/{code}?role=student") as ws:
            assert ws.receive_json()["type"] == "hello"
            for _ in range(8):
                ws.send_text('{"type": "ping"}')
            replies = [ws.receive_json() for _ in range(8)]
            assert replies.count({"type": "pong"}) == 5
            assert next(r["detail"] for r in replies if r["type"] == "error").startswith("rate limit: at most 5")


# ---------------------------------------------------------------- 6. a PLAIN password in the exports


def test_an_export_with_a_plain_password_says_so(tmp_path: Path) -> None:
    plain = {"mode": "simulated", "server": {"type": "REP", "mechanism": "PLAIN"},
             "client": {"type": "REQ", "mechanism": "PLAIN", "username": "admin", "password": "hunter2"}}
    with TestClient(create_app(make_settings(tmp_path, dissect_executor="thread"))) as c:
        session_id = c.post("/api/sessions", json=plain).json()["id"]
        with c.websocket_connect(f"/ws/sessions/{session_id}") as ws:
            for _ in range(500):
                message = ws.receive_json()
                if message["type"] == "event" and message["event"].get("name") == "READY":
                    break
        r = c.get(f"/api/sessions/{session_id}/export.json")
        assert r.headers["x-zmtplab-credentials"] == "PLAIN"
        assert next(iter(r.json())) == "credentials" and "password in clear" in r.json()["credentials"]
        exported = r.json()
        assert exported["config"]["client"]["password"] == "***"
        hello = next(e for e in exported["events"] if e.get("name") == "HELLO")
        assert any(f.get("value") == "hunter2" for f in hello["fields"])  # the wire, as it was
        r = c.get(f"/api/sessions/{session_id}/export.pcapng")
        assert r.headers["x-zmtplab-credentials"] == "PLAIN" and b"hunter2" in r.content
        # A NULL session's exports have no such notice.
        null = c.post("/api/sessions", json={"mode": "simulated", "server": {"type": "PUSH"},
                                             "client": {"type": "PULL"}}).json()["id"]
        r = c.get(f"/api/sessions/{null}/export.json")
        assert "x-zmtplab-credentials" not in r.headers and "credentials" not in r.json()
