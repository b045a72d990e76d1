"""Hostile clients on loopback (issue 31): the bytes and the work one client can make the server hold or do are
bounded, each test reproducing one finding of the hostile run and checking the budget that answers it.

Every loop is bounded in count and in time, every server listens on 127.0.0.1 only, and every flood is sized so
that the code before these budgets fails the test without taking the machine down.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.websockets import WebSocketDisconnect
from webkit import SHARED, TestClient, dissected, make_settings, progress, ready, receive_until, upload
from websockets.sync.client import connect

from testkit import LiveServer, free_port
from zmtplab.capture.dissect import dissect_capture
from zmtplab.capture.pcapwriter import PcapngWriter
from zmtplab.engine.commands import ready_body
from zmtplab.engine.framing import encode_frame
from zmtplab.engine.greeting import encode_greeting
from zmtplab.eventstore import IngestJob, ingest_capture
from zmtplab.web import create_app
from zmtplab.web.classes.registry import ClassLimits
from zmtplab.web.session_socket import SESSION_OUTBOX

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


def test_a_big_delivery_keeps_its_whole_octets_for_the_export_and_a_cut_log(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread"))
    letters = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"  # (nothing JSON escapes)
    body = bytes(letters[i % 61] for i in range(MIB - 4096))
    with TestClient(app) as c:
        session_id = c.post("/api/sessions", json=fan_out(2)).json()["id"]
        with c.websocket_connect(f"/ws/sessions/{session_id}?batch=1&log=1&fields=0") as ws:
            ws.send_json({"type": "speed", "value": 1000})
            subscribed(ws, 2)
            ws.send_json({"type": "send", "from": "pub", "frames": [body.decode()]})
            big: list[dict[str, Any]] = []

            def both_delivered(m: Any) -> bool:
                big.extend(x["entry"] for x in (m if isinstance(m, list) else [m])
                           if x["type"] == "log" and x["entry"]["what"] == "bytes" and x["entry"]["length"] > MIB // 2)
                return len(big) == 2

            receive_until(ws, both_delivered)
        # The log shows the first 64 KiB of a delivery's octets (the frame's 9-octet header, then its body), as it
        # cuts an event's body.
        head = b"\x02" + len(body).to_bytes(8, "big")
        assert all(e["truncated"] and e["hex"] == (head + body)[:65536].hex() for e in big)
        # The export holds every octet that crossed each connection: read back, both messages whole.
        capture = c.get(f"/api/sessions/{session_id}/export.pcapng").content
        read_back = [bytes.fromhex(e["frames"][0]) for e in dissect_capture(io.BytesIO(capture))
                     if e["kind"] == "message" and e["length"] > MIB // 2]
        assert read_back == [body, body]


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
    sub = SESSION_OUTBOX(1000, max_bytes=MIB)
    for _ in range(3):
        sub.put_text("z" * (400 * 1024))  # three messages, far under the count, over a MiB together
    assert sub.overflowed and sub.ended and sub.close_code == 1013 and not sub.items and sub.queued_bytes == 0


# ---------------------------------------------------------------- 2 and 3. a tap's flood

HANDSHAKE = encode_greeting() + encode_frame(ready_body({"Socket-Type": b"PUSH"}), command=True)


def rss() -> int:
    """This process's resident memory in octets (the test's server runs in a thread of it)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


@contextlib.contextmanager
def sink_server() -> Iterator[int]:
    """A TCP endpoint on loopback that reads and forgets whatever it is sent; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def drain(conn: socket.socket) -> None:
        with conn:
            while not done.is_set() and conn.recv(1 << 20):
                pass

    def accept() -> None:
        with contextlib.suppress(OSError):
            while not done.is_set():
                conn, _ = listener.accept()
                threading.Thread(target=drain, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        done.set()
        listener.close()


class Flood:
    """A thread that writes `head`, then `chunk` over and over, to a port until stopped (or `total` octets)."""

    def __init__(self, port: int, head: bytes, chunk: bytes, total: int = 1 << 62) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.head, self.chunk, self.total = head, chunk, total
        self.sent = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendall(self.head)
            while not self.stop.is_set() and self.sent < self.total:
                self.sock.sendall(self.chunk)
                self.sent += len(self.chunk)

    def end(self) -> None:
        self.stop.set()
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(30)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = make_settings(tmp_path_factory.mktemp("budgets"), dissect_executor="thread")
    with LiveServer(create_app(settings), name="budget-server") as srv:
        yield srv


def tap_to(server: LiveServer, port: int) -> tuple[str, int]:
    """A tap source forwarding to `port`: its id and the port it listens on."""
    r = httpx.post(f"{server.base}/api/live", json={"source": "tap", "target": f"127.0.0.1:{port}"}, timeout=30)
    assert r.status_code == 201, r.text
    source = r.json()
    listen = httpx.get(f"{server.base}/api/live/{source['id']}", timeout=30).json()["source"]["listen"]
    return source["id"], int(listen.rsplit(":", 1)[1])


def test_a_2_63_octet_frame_through_a_tap_is_reported_and_never_buffered(server: LiveServer) -> None:
    with sink_server() as target:
        source, port = tap_to(server, target)
        before = rss()
        header = b"\x02" + (1 << 63).to_bytes(8, "big")
        flood = Flood(port, HANDSHAKE + header, b"x" * (1 << 20), total=256 << 20)
        try:
            flood.thread.join(120)
            assert flood.sent == 256 << 20  # all of it went through the tap to the target
            grew = rss() - before
            # The events the source kept (a viewer that comes late gets them): the frame reported at its header
            # (not after 2^63 octets), and nothing of it held. Read while the connection is still open: its close,
            # inside that frame, is reported too, when the tap gets to it.
            with connect(f"{server.ws_base}/ws/live/{source}", open_timeout=30) as ws:
                kept = []
                while not kept or kept[-1]["type"] != "status":  # (the first status follows the history)
                    kept.append(json.loads(ws.recv(timeout=30)))
        finally:
            flood.end()
        assert httpx.delete(f"{server.base}/api/live/{source}", timeout=30).status_code == 204
    events = [m["event"] for m in kept if m["type"] == "event"]
    assert [e["kind"] for e in events] == ["greeting", "command", "expert"]
    assert events[2]["rule"] == "budget" and f"frame of {1 << 63} octets" in events[2]["text"]
    assert grew < 64 << 20, f"the server grew by {grew >> 20} MiB while 256 MiB of one frame went through"


def test_a_tap_flooded_with_empty_frames_leaves_the_server_answering(server: LiveServer) -> None:
    with sink_server() as target:
        source, port = tap_to(server, target)
        flood = Flood(port, HANDSHAKE, b"\x00\x00" * (1 << 15))  # endless empty frames: two events every 2 octets
        try:
            with httpx.Client(base_url=server.base, timeout=10) as c:
                # Health and the source's status answer, each in its turn (before: 3-23 s each), until the source has
                # passed its rate of events: those beyond it are counted, not made (nor sent).
                for n in range(5000):
                    assert c.get("/api/health").status_code == 200
                    status = c.get(f"/api/live/{source}").json()
                    if n >= 20 and status["dropped"]:
                        break
                assert status["dropped"] > 0 and status["events"] > 0
                assert flood.thread.is_alive() and not flood.stop.is_set()  # (all of it while the flood went on)
        finally:
            flood.end()
        httpx.delete(f"{server.base}/api/live/{source}", timeout=30)


# ---------------------------------------------------------------- 4. upload bodies

CAPTURE_DIR = Path(__file__).resolve().parents[2] / "captures"
CAPTURE = CAPTURE_DIR / "req_rep.pcapng"
FORM_HEAD = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.pcapng\"\r\n"
             b"Content-Type: application/octet-stream\r\n\r\n")


def endless_upload(port: int, first: bytes, more: bytes, most: int = 256 << 20) -> tuple[bytes, int]:
    """POSTs a multipart body that starts with `first` and goes on with `more` again and again (chunked: no
    length), until the server answers and closes, or `most` octets went; returns the answer and how many octets
    of the body had been sent when it came."""
    sent = 0
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(b"POST /api/captures HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        s.setblocking(False)
        piece = first
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            while sent < most and not answer:
                data = b"%x\r\n" % len(piece) + piece + b"\r\n"
                view = memoryview(data)
                while view and not answer:
                    try:
                        view = view[s.send(view):]
                    except BlockingIOError:
                        _, writable, _ = select.select([s], [s], [], 30)
                        if not writable:
                            break
                    with contextlib.suppress(BlockingIOError):
                        answer += s.recv(65536)
                sent += len(piece)
                piece = more
        s.setblocking(True)
        with contextlib.suppress(OSError):
            while chunk := s.recv(65536):
                answer += chunk
    return answer, sent


def test_an_endless_epilogue_after_the_form_is_not_read(server: LiveServer) -> None:
    # A whole form, then data after its closing boundary for ever (before: 17 GB read, then 201).
    form = FORM_HEAD + CAPTURE.read_bytes() + b"\r\n--b--\r\n"
    answer, sent = endless_upload(server.port, form, b"e" * (1 << 20))
    assert answer.startswith(b"HTTP/1.1 201 "), answer[:200]
    assert b"connection: close" in answer.lower()
    assert sent < 64 << 20, f"{sent >> 20} MiB were sent before the answer"
    capture_id = json.loads(answer.split(b"\r\n\r\n", 1)[1])["id"]
    assert httpx.delete(f"{server.base}/api/captures/{capture_id}", timeout=30).status_code == 204


@pytest.mark.parametrize("first, more", [
    (b"\r\n" * 32768, b"\r\n" * (1 << 19)),  # blank lines before the first part, for ever (before: 35 GB read)
    (b"--b\r\n\r\n\r\n", b"--b\r\n\r\n\r\n" * 4096),  # empty parts for ever (before: parsed on the loop, unbounded)
], ids=["preamble", "empty-parts"])
def test_what_is_not_the_file_is_bounded(server: LiveServer, first: bytes, more: bytes) -> None:
    answer, sent = endless_upload(server.port, first, more)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"are not the file" in answer
    assert sent < 64 << 20, f"{sent >> 20} MiB were sent before the answer"
    assert httpx.get(f"{server.base}/api/health", timeout=10).status_code == 200


def test_an_aborted_upload_is_a_line_in_the_log_not_a_traceback(server: LiveServer, caplog: pytest.LogCaptureFixture,
                                                                 request: pytest.FixtureRequest) -> None:
    caplog.set_level(logging.INFO, logger="zmtplab")
    uvicorn_errors = logging.getLogger("uvicorn.error")  # (uvicorn's loggers do not propagate to the root)
    uvicorn_errors.addHandler(caplog.handler)
    request.addfinalizer(lambda: uvicorn_errors.removeHandler(caplog.handler))
    body = FORM_HEAD + CAPTURE.read_bytes()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(b"POST /api/captures HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                  b"Content-Length: %d\r\n\r\n" % (len(body) + 1000) + body)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # gone at once (a reset)
    for _ in range(300):  # (until the server has noticed, and said so one way or another)
        if any("went away" in r.getMessage() or r.levelno >= logging.ERROR for r in caplog.records):
            break
        httpx.get(f"{server.base}/api/health", timeout=10)
    assert [r.getMessage() for r in caplog.records if "went away" in r.getMessage()]
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


# ---------------------------------------------------------------- 5. compressed captures, the dissection queue

def bomb(path: Path, megabytes: int) -> Path:
    """A gzip-compressed capture of one ZMTP connection carrying `megabytes` MiB of zero-filled 64 KiB frames
    (a few hundred KiB compressed); returns `path`."""
    with gzip.open(path, "wb", compresslevel=9) as f:
        writer = PcapngWriter(f)
        conn = writer.add_connection(("10.0.0.1", 40000), ("10.0.0.2", 5555))
        conn.handshake(1.0)
        conn.send("c2s", HANDSHAKE, 1.1)
        frame = encode_frame(bytes(64 * 1024))
        for n in range(megabytes * 16):
            conn.send("c2s", frame, 1.2 + n * 1e-4)
        writer.flush()
    return path


def test_a_compressed_capture_is_read_only_as_far_as_its_budget(tmp_path: Path) -> None:
    path = bomb(tmp_path / "bomb.pcapng.gz", 64)
    assert path.stat().st_size < 2 << 20
    with TestClient(create_app(make_settings(tmp_path / "data", dissect_executor="thread",
                                             max_expand_ratio=2.0))) as c:
        _, summary = dissected(c, path, "bomb.pcapng.gz")
    # Read up to 16 MiB (the floor every compressed capture may expand into), not its 64 MiB: stopped there, and
    # what was read is kept.
    assert summary["state"] == "error" and "expands past the 16777216 octets" in summary["error"], summary["error"]
    frames = summary["connections"][0]["messages"]["c2s"]
    assert 0 < frames < 16 * 16 + 1


def test_a_dissection_stops_at_the_disk_floor_keeping_what_it_read(tmp_path: Path) -> None:
    store = tmp_path / "events.sqlite"
    result = ingest_capture(IngestJob(CAPTURE, store, tmp_path / "progress.json", tmp_path / "cancel",
                                      store_max_body=1 << 20, max_events=1000, progress_interval=0.0,
                                      min_free_disk=1 << 62))  # (no disk has that much: the floor is reached at once)
    assert result.state == "error" and result.partial
    assert result.error is not None and "disk is nearly full" in result.error and store.exists()


def test_one_address_uploads_delay_another_by_one_turn_at_most(tmp_path: Path) -> None:
    big = SHARED / "bulk.pcapng"  # 420,000 elements: several seconds of dissection
    app = create_app(make_settings(tmp_path / "data", dissect_executor="thread", dissect_workers=1))
    with TestClient(app, client=("192.0.2.1", 40000)) as busy:
        queued = [upload(busy, big).json()["id"] for _ in range(3)]  # one address's queue: three big captures
        with TestClient(app, client=("192.0.2.2", 40000)) as other:
            small = upload(other, CAPTURE).json()["id"]
            assert progress(other, small)[-1]["state"] == "done"
            # The small capture went in the first free turn, not after the other address's three.
            states = [busy.get(f"/api/captures/{i}").json()["state"] for i in queued]
        assert sum(state in ("done", "error") for state in states) <= 1, states
        for capture_id in queued:  # (their dissections stop)
            assert busy.delete(f"/api/captures/{capture_id}").status_code == 204


# ---------------------------------------------------------------- 7. fairness by address

def test_five_addresses_cannot_evict_another_addresses_capture(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread", max_captures=10, max_captures_per_client=3))
    with TestClient(app, client=("192.0.2.100", 40000)) as victim:
        mine = upload(victim, CAPTURE).json()["id"]
        progress(victim, mine)
        for n in range(5):  # five addresses at their limit: 16 captures for a store of 10
            with TestClient(app, client=(f"198.51.100.{n + 1}", 40000)) as other:
                for _ in range(3):
                    r = upload(other, CAPTURE)
                    assert r.status_code == 201, r.text
                    progress(other, r.json()["id"])
        assert victim.get(f"/api/captures/{mine}").status_code == 200
        assert len(app.state.captures.records) == 10


def from_address(host: str, port: int) -> socket.socket:
    """A connection to the server from loopback address `host` (127.0.0.2, ...: another client)."""
    s = socket.socket()
    s.bind((host, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


def test_one_address_cannot_hold_every_connection(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, dissect_executor="thread", max_idle_connections_per_client=16,
                             max_connections_per_client=24, request_head_timeout=60.0)
    with LiveServer(create_app(settings), name="connections-server") as srv:
        held: list[socket.socket] = []
        try:
            refused = 0
            for _ in range(200):  # idle connections from one address (before: all kept, 30 s each)
                s = from_address("127.0.0.2", srv.port)
                held.append(s)
                if refused or len(held) > 16:
                    answer = s.recv(4096)  # (answered at once, or the test's timeout says it was not)
                    assert answer.startswith(b"HTTP/1.1 503 ") and b"send no request" in answer, answer[:200]
                    refused += 1
            assert refused == 200 - 16
            # Another address is served as usual, and so is this one's next request on a connection it holds.
            assert httpx.get(f"{srv.base}/api/health", timeout=10).status_code == 200
            s = held[0]
            s.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(4096).startswith(b"HTTP/1.1 200 ")
        finally:
            for s in held:
                s.close()


def test_a_few_addresses_cannot_take_every_session(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread", max_sessions_per_client=8))
    body = {"mode": "simulated", "server": {"type": "PUSH"}, "client": {"type": "PULL"}, "autoplay": False}
    with TestClient(app) as c:
        def start(address: str) -> int:
            return TestClient(app, client=(address, 40000)).post("/api/sessions", json=body).status_code

        taken = [start(f"192.0.2.{n}") for n in range(1, 5) for _ in range(8)]  # four addresses, 8 each
        assert taken.count(201) == 25, taken  # (24, and the fourth address's first: the last 8 wait for others)
        r = TestClient(app, client=("192.0.2.4", 40000)).post("/api/sessions", json=body)
        assert r.status_code == 429 and "kept for addresses that run none" in r.json()["detail"]
        # Newcomers still get one each; an IPv6 /64 is one newcomer, however many addresses it uses.
        assert [start(f"198.51.100.{n}") for n in range(1, 6)] == [201] * 5
        assert [start(f"2001:db8::{n:x}") for n in range(1, 4)] == [201, 429, 429]
        assert len(c.app.state.sessions.sessions) == 31


def test_join_codes_cannot_be_guessed_at_speed(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread"),
                     class_limits=ClassLimits(guess_rate=0.01, guess_burst=60))  # (no refill meanwhile)
    with TestClient(app) as c:
        code = c.post("/api/classes").json()["code"]
        guesser = TestClient(app, client=("192.0.2.66", 40000))
        answers = [guesser.get(f"/api/classes/{n:06d}").status_code for n in range(100)]
        assert answers[:60] == [404] * 60 and set(answers[60:]) == {429}, answers
        # Throttled, it learns nothing, not even with the right code (over the socket neither); others are served.
        r = guesser.get(f"/api/classes/{code}")
        assert r.status_code == 429 and "too many join codes" in r.json()["detail"]
        with pytest.raises(WebSocketDisconnect) as closed, guesser.websocket_connect(
                f"/ws/classes/{code}?role=student") as ws:
            ws.receive_json()
            ws.receive_json()
        assert closed.value.code == 4429
        student = TestClient(app, client=("192.0.2.67", 40000))
        assert student.get("/api/classes/ZZZZZZ").status_code == 404
        assert student.get(f"/api/classes/{code}").status_code == 200


# ---------------------------------------------------------------- 8. smaller ones

def test_a_store_closed_under_its_readers_is_never_a_500(tmp_path: Path) -> None:
    # What a reader meets when a DELETE, an eviction or the whole dissection replacing the preview closes the
    # store it took (before: sqlite3's "Cannot operate on a closed database", a 500, about one round in five).
    with TestClient(create_app(make_settings(tmp_path, dissect_executor="thread"))) as c:
        capture_id, _ = dissected(c, CAPTURE)
        c.app.state.captures.get(capture_id).store.close()  # (the capture is still there: its store went)
        for path in ("/events/1", "/events?limit=5&offset=3", "/events?limit=5&q=hello", "/events?fields=1"):
            r = c.get(f"/api/captures/{capture_id}{path}")
            assert r.status_code == 503 and r.headers["retry-after"] == "1", (path, r.status_code, r.text)
            assert "ask again" in r.json()["detail"]
        record = c.app.state.captures.records.pop(capture_id)  # (and now the capture too, as a DELETE does)
        r = c.get(f"/api/captures/{capture_id}/events/1")
        assert r.status_code == 404
        c.app.state.captures.records[capture_id] = record


def test_a_huge_delay_fault_still_exports(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path, dissect_executor="thread"))) as c:
        session_id = c.post("/api/sessions", json={"mode": "simulated", "server": {"type": "PUSH"},
                                                   "client": {"type": "PULL"}}).json()["id"]
        with c.websocket_connect(f"/ws/sessions/{session_id}?log=0") as ws:
            ws.send_json({"type": "speed", "value": 1000})
            ready(ws)
            ws.send_json({"type": "pause"})
            ws.send_json({"type": "fault", "fault": "delay", "args": {"dir": "s2c", "seconds": 1e300}})
            ws.send_json({"type": "send", "from": "server", "frames": ["late"]})
            for _ in range(12):  # until the message is through, 1e300 virtual seconds on
                ws.send_json({"type": "step"})
            ws.send_json({"type": "recv", "node": "nobody"})  # (an error that ends what to read)
            receive_until(ws, lambda m: any(x["type"] == "error" and "no node named" in x["detail"]
                                            for x in (m if isinstance(m, list) else [m])))
        events = c.get(f"/api/sessions/{session_id}/export.json").json()["events"]
        assert events[-1]["t"] >= 1e300
        r = c.get(f"/api/sessions/{session_id}/export.pcapng")  # (before: 500, a time past what pcapng holds)
        assert r.status_code == 200 and r.content[:4] == b"\x0a\x0d\x0d\x0a"


def test_a_tshark_failure_says_nothing_of_the_server(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path, dissect_executor="thread"))) as c:
        capture_id, _ = dissected(c, CAPTURE)
        path = c.app.state.captures.get(capture_id).capture_path
        original = path.read_bytes()
        for damaged in (b"\x0a\x0d\x0d\x0a" + b"\xff" * 200, original[:300], b"not a capture at all"):
            path.write_bytes(damaged)  # (the stored file damaged under the server: tshark fails on it)
            c.app.state.packets.cache.clear()
            for number in (1, 3):  # (one inside what is left, one past it: tshark fails on one or the other)
                r = c.get(f"/api/captures/{capture_id}/packets/{number}")
                assert r.status_code in (404, 502), r.text
                assert str(tmp_path) not in r.text and "pid" not in r.text and "Crash" not in r.text, r.text


# ---------------------------------------------------------------- 6. memory after sessions

def rss_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def test_memory_goes_back_after_sessions_end(tmp_path: Path) -> None:
    # `zmtplab serve` itself (a process of its own, on glibc's allocator as it runs), not a thread of this one.
    port = free_port()
    env = {**os.environ, "ZMTPLAB_DATA_DIR": str(tmp_path)}
    env.pop("PYTHONMALLOC", None)
    server = subprocess.Popen([sys.executable, "-m", "zmtplab.cli", "serve", "--host", "127.0.0.1", "--port",
                               str(port), "--log-level", "warning"], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):  # (until it answers)
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                    break
            assert server.poll() is None, "the server exited"
            time.sleep(0.1)
        idle = rss_of(server.pid)
        for _ in range(2):  # rounds of sessions that each hold tens of MB while they run
            ids = [httpx.post(f"{base}/api/sessions", json=fan_out(23), timeout=30).json()["id"] for _ in range(3)]
            for session_id in ids:
                with connect(f"ws://127.0.0.1:{port}/ws/sessions/{session_id}?batch=1&log=0&fields=0",
                             max_size=None) as ws:
                    ws.send(json.dumps({"type": "speed", "value": 1000}))
                    seen = 0
                    while seen < 23:
                        seen += ws.recv(timeout=60).count('"name":"SUBSCRIBE"')
                    ws.send(json.dumps({"type": "send", "from": "pub", "frames": ["m" * (MIB - 256)]}))
                    messages = 0
                    while messages < 23:
                        messages += ws.recv(timeout=60).count('"kind":"message"')
            busy = rss_of(server.pid)
            for session_id in ids:
                assert httpx.delete(f"{base}/api/sessions/{session_id}", timeout=30).status_code == 204
        assert busy > idle + (50 << 20), "the sessions did not hold what the test meant them to"
        for _ in range(100):  # (until the server has given it back: a moment after the last session ended)
            if rss_of(server.pid) < idle + (40 << 20):
                break
            httpx.get(f"{base}/api/health", timeout=10)
            time.sleep(0.1)
        assert rss_of(server.pid) < idle + (40 << 20), (idle >> 20, busy >> 20, rss_of(server.pid) >> 20)
    finally:
        server.terminate()
        server.wait(30)
