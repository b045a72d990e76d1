"""Live sources: the interfaces, validation, a tap proxy and a live capture on `lo` carrying real libzmq traffic
to the websocket as it arrives, history for late viewers, limits, lifetime, and cleanup (ports freed, tshark gone).
Also the Live tab of the capture viewer in real Chromium."""

from __future__ import annotations

import json
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq
from webkit import REPO, make_settings, open_client

from testkit import chromium
from zmtplab.engine.events import cut_bodies
from zmtplab.web import create_app
from zmtplab.web.core.wsprotocol import CommandFrameProtocol
from zmtplab.web.live.sources import Viewer

pytestmark = pytest.mark.timeout(90)

ARTIFACTS = REPO / "test-artifacts" / "live"
CONTRACT_KEYS = ("conn", "dir", "kind", "offset", "length", "fields", "ts", "seq")


# ---------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    with open_client(tmp_path_factory.mktemp("live"), live_grace=5.0) as c:
        yield c


@pytest.fixture
def zctx() -> Iterator[zmq.Context]:
    ctx = zmq.Context()
    try:
        yield ctx
    finally:
        ctx.destroy(linger=0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Listener:
    """Reads a TestClient websocket in a thread, so the test can wait for messages with a timeout."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.closed = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                self.messages.put(json.loads(self.ws.receive_text()))
        except Exception:  # closed (WebSocketDisconnect) or the client went away
            self.messages.put(None)

    def until(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 15.0) -> dict[str, Any]:
        """The first message (from now on) satisfying `predicate`; fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"not seen within {timeout}s; last messages: {self.seen[-6:]}")
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if message is None:
                self.closed = True
                raise AssertionError(f"the websocket closed first; last messages: {self.seen[-6:]}")
            self.seen.append(message)
            if predicate(message):
                return message

    def wait_closed(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.closed:
            message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            if message is None:
                self.closed = True
            else:
                self.seen.append(message)

    def events(self) -> list[dict[str, Any]]:
        return [m["event"] for m in self.seen if m["type"] == "event"]


def event(kind: str, **keys: Any) -> Callable[[dict[str, Any]], bool]:
    def check(m: dict[str, Any]) -> bool:
        return m["type"] == "event" and m["event"]["kind"] == kind and all(m["event"].get(k) == v
                                                                          for k, v in keys.items())
    return check


def status(state: str) -> Callable[[dict[str, Any]], bool]:
    return lambda m: m["type"] == "status" and m["state"] == state


def capture_children() -> dict[int, str]:
    """tshark and dumpcap processes descending from this process (tshark runs a dumpcap of its own; zombies
    count: they are leftovers too)."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        pid = int(entry.name)
        names[pid] = stat[stat.index("(") + 1: stat.rindex(")")]
        parents[pid] = int(stat[stat.rindex(")") + 2:].split()[1])
    mine, changed = {os.getpid()}, True
    while changed:
        changed = False
        for pid, ppid in parents.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                changed = True
    return {pid: names[pid] for pid in mine if names.get(pid) in ("tshark", "dumpcap")}


def still_running(pids: dict[int, str]) -> dict[int, str]:
    """Which of these processes still exist (under any parent: an orphaned dumpcap counts)."""
    return {pid: name for pid, name in pids.items() if Path(f"/proc/{pid}").exists()}


def assert_zmq_conversation(listener: Listener, frames: list[bytes]) -> None:
    """Greetings and READYs both ways, the frames and the message, each an event-contract object."""
    message = listener.until(event("message", dir="c2s"))["event"]
    assert message["frames"] == [f.hex() for f in frames]
    events = listener.events()
    conn = message["conn"]
    mine = [e for e in events if e["conn"] == conn]
    greetings = {e["dir"]: e for e in mine if e["kind"] == "greeting"}
    assert set(greetings) == {"c2s", "s2c"}
    assert greetings["c2s"]["version"] == "3.1" and greetings["c2s"]["mechanism"] == "NULL"
    readies = {e["dir"]: e for e in mine if e["kind"] == "command" and e["name"] == "READY"}
    assert readies["c2s"]["properties"]["Socket-Type"] == "PUSH"
    assert readies["s2c"]["properties"]["Socket-Type"] == "PULL"
    bodies = [e["body"] for e in mine if e["kind"] == "frame" and e["dir"] == "c2s"]
    assert bodies == [f.hex() for f in frames]
    for e in mine:
        for key in CONTRACT_KEYS:
            assert key in e, (key, e)
        assert isinstance(e["fields"], list)
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    first_frame = next(e for e in mine if e["kind"] == "frame")
    assert first_frame["fields"][-1]["name"] == "body" and first_frame["more"] is (len(frames) > 1)


# ---------------------------------------------------------------------------- routes and validation


def test_interfaces_are_the_machines(client):
    r = client.get("/api/live/interfaces")
    assert r.status_code == 200
    names = r.json()["interfaces"]
    assert "lo" in names and "any" in names
    assert names == ["any", *sorted(name for _, name in socket.if_nameindex())]


@pytest.mark.parametrize("interface", ["nope0", "lo; rm -rf /", "-w/tmp/x", "", "lo " ])
def test_unknown_interface_is_refused(client, interface):
    r = client.post("/api/live", json={"source": "capture", "interface": interface, "port": 5555})
    assert r.status_code == 422, r.text
    if interface:
        assert "interface" in json.dumps(r.json()["detail"])


@pytest.mark.parametrize("port", [0, -1, 65536, "5555", 5555.5, True, None, "5555 or 1=1"])
def test_bad_capture_port_is_refused(client, port):
    r = client.post("/api/live", json={"source": "capture", "interface": "lo", "port": port})
    assert r.status_code == 422, r.text


@pytest.mark.parametrize("body", [
    {"source": "tap", "target": "127.0.0.1:0"},
    {"source": "tap", "target": "127.0.0.1:65536"},
    {"source": "tap", "target": "127.0.0.1:http"},
    {"source": "tap", "target": "bad host:5555"},
    {"source": "tap", "target": "*:5555"},
    {"source": "tap", "target": "0.0.0.0:5555"},
    {"source": "tap", "target": "10.1.2.3:5555"},  # not an allowed target host by default
    {"source": "tap", "target": "127.0.0.1:5555", "listen_port": 70000},
    {"source": "tap", "target": "127.0.0.1:5555", "listen_port": "6000"},
    {"source": "tap", "target": "127.0.0.1:5555", "listen_port": 5555},  # would forward to itself
    {"source": "tap", "target": "127.0.0.1:5555", "listen": "0.0.0.0:6000"},
    {"source": "pcap", "target": "127.0.0.1:5555"},
])
def test_bad_tap_is_refused(client, body):
    r = client.post("/api/live", json=body)
    assert r.status_code == 422, r.text


def test_unknown_source_is_404(client):
    assert client.get("/api/live/nope").status_code == 404
    assert client.delete("/api/live/nope").status_code == 404
    with client.websocket_connect("/ws/live/nope") as ws:
        assert ws.receive_json()["type"] == "error"


def test_listen_port_taken_is_409(client):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = client.post("/api/live", json={"source": "tap", "target": "127.0.0.1:5555",
                                           "listen_port": s.getsockname()[1]})
    assert r.status_code == 409, r.text


# ---------------------------------------------------------------------------- the tap


def test_tap_streams_libzmq_traffic_and_frees_its_port(client, zctx):
    pull = zctx.socket(zmq.PULL)
    pull.setsockopt(zmq.LINGER, 0)
    target_port = pull.bind_to_random_port("tcp://127.0.0.1")
    r = client.post("/api/live", json={"source": "tap", "target": f"127.0.0.1:{target_port}"})
    assert r.status_code == 201, r.text
    created = r.json()
    source_id, listen = created["id"], created["listen"]
    assert created["state"] == "capturing" and listen.startswith("127.0.0.1:")
    listen_port = int(listen.rsplit(":", 1)[1])

    with client.websocket_connect(f"/ws/live/{source_id}") as ws:
        listener = Listener(ws)
        first = listener.until(lambda m: m["type"] == "status")
        assert first["state"] == "capturing" and first["source"] == {
            "kind": "tap", "target": f"127.0.0.1:{target_port}", "listen": listen}

        push = zctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.connect(f"tcp://{listen}")
        frames = [b"hello through the tap", b"\x00\xff<b>not html</b>"]
        push.send_multipart(frames)
        assert pull.poll(10_000), "the message did not come through the tap"
        assert pull.recv_multipart() == frames

        assert_zmq_conversation(listener, frames)
        connection = next(m for m in listener.seen if m["type"] == "connection")
        assert connection["server"] == f"127.0.0.1:{target_port}" and connection["client"].startswith("127.0.0.1:")

        # A second message streams as it arrives.
        push.send_multipart([b"again"])
        assert pull.poll(10_000)
        pull.recv_multipart()
        listener.until(event("message", frames=[b"again".hex()]))

        # A late websocket gets the history first.
        with client.websocket_connect(f"/ws/live/{source_id}") as late_ws:
            late = Listener(late_ws)
            late.until(event("message", frames=[b"again".hex()]))
            assert [e["seq"] for e in late.events()] == [e["seq"] for e in listener.events()]
            assert any(m["type"] == "connection" for m in late.seen)

        push.close()
        pull.close()
        assert client.get(f"/api/live/{source_id}").json()["events"] == len(listener.events())

        # Stopping: a final status, the socket closes, the port is free again.
        assert client.delete(f"/api/live/{source_id}").status_code == 204
        final = listener.until(lambda m: m["type"] == "status" and m["state"] in ("stopped", "error"))
        assert final["state"] == "stopped", final
        listener.wait_closed()

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as every server does (TIME_WAIT)
        s.bind(("127.0.0.1", listen_port))
        s.listen()
    again = client.post("/api/live", json={"source": "tap", "target": f"127.0.0.1:{target_port}",
                                           "listen_port": listen_port})
    assert again.status_code == 201, again.text
    assert again.json()["listen"] == listen
    assert client.delete(f"/api/live/{again.json()['id']}").status_code == 204


def test_tap_to_an_unreachable_target_reports_it(client, zctx):
    target = free_port()  # nobody listens there
    r = client.post("/api/live", json={"source": "tap", "target": f"localhost:{target}"})
    assert r.status_code == 201, r.text
    with socket.create_connection(("127.0.0.1", int(r.json()["listen"].rsplit(":", 1)[1]))) as s, \
            client.websocket_connect(f"/ws/live/{r.json()['id']}") as ws:
        listener = Listener(ws)
        expert = listener.until(event("expert"))["event"]
        assert expert["severity"] == "error" and "unreachable" in expert["text"]
        s.settimeout(5)
        assert s.recv(10) == b""  # the tap closed the client's connection
    client.delete(f"/api/live/{r.json()['id']}")


def test_tap_cannot_forward_to_another_tap(client):
    target = free_port()
    first = client.post("/api/live", json={"source": "tap", "target": f"127.0.0.1:{target}"})
    assert first.status_code == 201
    port = first.json()["listen"].rsplit(":", 1)[1]
    second = client.post("/api/live", json={"source": "tap", "target": f"127.0.0.1:{port}"})
    assert second.status_code == 422 and "tap" in second.json()["detail"]
    client.delete(f"/api/live/{first.json()['id']}")


# ---------------------------------------------------------------------------- a live capture on lo


def test_live_capture_on_lo_streams_events_and_ends_tshark(client, zctx):
    port = free_port()
    before = capture_children()
    r = client.post("/api/live", json={"source": "capture", "interface": "lo", "port": port})
    assert r.status_code == 201, (
        f"live capture on lo could not start ({r.status_code}): {r.text} -- the tests run as root (or with "
        "CAP_NET_RAW for dumpcap); without capture permission this feature cannot work")
    source_id = r.json()["id"]
    # Capturing once dumpcap says so (the answer says "starting" when that took longer than it waits, as on a busy
    # machine), with dumpcap and tshark running.
    deadline = time.monotonic() + 60
    while (state := client.get(f"/api/live/{source_id}").json())["state"] != "capturing":
        assert state["state"] == "starting" and time.monotonic() < deadline, state
        time.sleep(0.1)
    running = {pid: name for pid, name in capture_children().items() if pid not in before}
    # (seen once at load 19: capturing, yet neither found; the source's state then says whether tshark had ended)
    assert {"dumpcap", "tshark"} <= set(running.values()), (running, client.get(f"/api/live/{source_id}").json())

    with client.websocket_connect(f"/ws/live/{source_id}") as ws:
        listener = Listener(ws)
        first = listener.until(lambda m: m["type"] == "status")
        assert first["state"] == "capturing" and first["source"] == {"kind": "capture", "interface": "lo",
                                                                       "port": port}
        pull = zctx.socket(zmq.PULL)
        pull.setsockopt(zmq.LINGER, 0)
        pull.bind(f"tcp://127.0.0.1:{port}")
        push = zctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.connect(f"tcp://127.0.0.1:{port}")
        frames = [b"captured on lo", b"\x01\x02\x03"]
        push.send_multipart(frames)
        assert pull.poll(10_000) and pull.recv_multipart() == frames
        assert_zmq_conversation(listener, frames)
        message = next(e for e in listener.events() if e["kind"] == "message")
        assert message["packets"] and all(isinstance(n, int) for n in message["packets"])
        connection = next(m for m in listener.seen if m["type"] == "connection")
        assert connection["server"] == f"127.0.0.1:{port}"
        counted = listener.until(lambda m: m["type"] == "status" and (m["packets"] or 0) > 0)
        assert counted["state"] == "capturing"
        running.update({pid: name for pid, name in capture_children().items() if pid not in before})
        assert sorted(running.values()) == ["dumpcap", "dumpcap", "tshark"], running  # ours, tshark, tshark's own
        push.close()
        pull.close()

        assert client.delete(f"/api/live/{source_id}").status_code == 204
        listener.until(status("stopped"))
        listener.wait_closed()

    assert not still_running(running), f"tshark/dumpcap still running after stop: {still_running(running)}"


def test_app_shutdown_stops_captures_and_taps(tmp_path):
    port = free_port()
    before = capture_children()
    with open_client(tmp_path) as c:
        cap = c.post("/api/live", json={"source": "capture", "interface": "lo", "port": port})
        assert cap.status_code == 201, cap.text
        tap = c.post("/api/live", json={"source": "tap", "target": f"127.0.0.1:{port}"})
        assert tap.status_code == 201, tap.text
        listen_port = int(tap.json()["listen"].rsplit(":", 1)[1])
        running = {pid: name for pid, name in capture_children().items() if pid not in before}
        assert "dumpcap" in running.values()
    assert not still_running(running), f"tshark outlived the app: {still_running(running)}"
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", listen_port))


# ---------------------------------------------------------------------------- limits and lifetime


def test_too_many_sources_is_429(tmp_path):
    with open_client(tmp_path, max_live_sources=2) as c:
        body = {"source": "tap", "target": f"127.0.0.1:{free_port()}"}
        ids = [c.post("/api/live", json=body).json()["id"] for _ in range(2)]
        r = c.post("/api/live", json=body)
        assert r.status_code == 429 and "2" in r.json()["detail"]
        assert c.delete(f"/api/live/{ids[0]}").status_code == 204
        assert c.post("/api/live", json=body).status_code == 201


def test_abandoned_and_old_sources_stop(tmp_path):
    # (A grace long enough for the second source's websocket to attach on a busy machine.)
    with open_client(tmp_path, live_grace=1.0, reap_interval=0.1) as c:
        body = {"source": "tap", "target": f"127.0.0.1:{free_port()}"}
        abandoned = c.post("/api/live", json=body).json()
        watched = c.post("/api/live", json=body).json()
        with c.websocket_connect(f"/ws/live/{watched['id']}") as ws:
            listener = Listener(ws)
            listener.until(status("capturing"))
            # Nobody watched the first one: stopped (or already forgotten); the watched one runs on.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                r = c.get(f"/api/live/{abandoned['id']}")
                if r.status_code == 404 or r.json()["state"] == "stopped":
                    break
                time.sleep(0.1)
            assert r.status_code == 404 or r.json()["state"] == "stopped", r.text
            assert c.get(f"/api/live/{watched['id']}").json()["state"] == "capturing"
        port = int(abandoned["listen"].rsplit(":", 1)[1])
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))

    with open_client(tmp_path, live_max_lifetime=0.5, reap_interval=0.1) as c:
        old = c.post("/api/live", json={"source": "tap", "target": f"127.0.0.1:{free_port()}"}).json()
        with c.websocket_connect(f"/ws/live/{old['id']}") as ws:
            listener = Listener(ws)
            final = listener.until(status("stopped"), timeout=10)
            assert "lifetime" in final["detail"]
            listener.wait_closed()


def test_a_slow_viewer_loses_the_oldest_events_and_is_told():
    viewer = Viewer(["h1", "h2"], ["c"], limit=16)
    for i in range(20):
        viewer.put_text(f"e{i}")
    assert viewer.dropped == 4 and viewer.due
    assert viewer.take_nowait() == ["c", "h1", "h2", *(f"e{i}" for i in range(4, 20))]
    assert viewer.take_nowait() == []
    # Big events: the queue is bounded in bytes too (the newest always stays).
    small = Viewer([], [], limit=100, max_bytes=10)
    for text in ("aaaaa", "bbbbb", "ccccc", "x" * 50):
        small.put_text(text)
    assert small.dropped == 3 and small.take_nowait() == ["x" * 50]


def test_the_capture_thread_hands_over_through_a_bounded_inbox(tmp_path):
    import asyncio

    from zmtplab.web.live.sources import LiveSource

    async def run() -> tuple[LiveSource, Viewer]:
        settings = make_settings(tmp_path, live_queue=16, live_max_events=10)
        source = LiveSource("capture", settings, asyncio.get_running_loop(), {"kind": "capture"})
        viewer = source.subscribe()

        def worker() -> None:
            source.on_connection("0", ("127.0.0.1", 4000), ("127.0.0.1", 5555))
            for i in range(40):
                source.sink({"conn": "0", "dir": "c2s", "kind": "frame", "offset": i, "length": 1,
                             "body": "ab" * 100, "hex": "01" + "ab" * 100})

        thread = threading.Thread(target=worker)
        thread.start()
        await asyncio.to_thread(thread.join)
        await asyncio.sleep(0.05)
        return source, viewer

    source, viewer = asyncio.run(run())
    # The loop was busy joining: the inbox kept the newest 16 of 40, and says so.
    assert source.events == 16 and source.dropped == 24
    assert len(source.history) == 10  # the history keeps the newest 10
    status = source.status(viewer)
    assert status["dropped"] == 24 and "24 events dropped" in status["detail"]
    messages = [json.loads(t) for t in viewer.take_nowait()]
    assert messages[0] == {"type": "connection", "conn": "0", "client": "127.0.0.1:4000", "server": "127.0.0.1:5555"}
    assert [m["event"]["offset"] for m in messages[1:]] == list(range(24, 40))


def test_live_bodies_are_cut():
    ev = {"kind": "frame", "body": "ab" * 10, "hex": "0114" + "ab" * 10}
    cut_bodies(ev, 4)
    assert ev == {"kind": "frame", "body": "ab" * 4, "hex": "0114" + "ab" * 4, "truncated": True}
    msg = {"kind": "message", "frames": ["cd" * 10, "ef"]}
    cut_bodies(msg, 4)
    assert msg == {"kind": "message", "frames": ["cd" * 4, "ef"], "truncated": True}


# ---------------------------------------------------------------------------- the Live tab in Chromium


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import uvicorn

    app = create_app(make_settings(tmp_path_factory.mktemp("live-browser")))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on",
                                           ws=CommandFrameProtocol))
    thread = threading.Thread(target=server.run, name="live-browser-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


@pytest.mark.browser
def test_live_tab_shows_tap_traffic_as_it_arrives(live_server, zctx):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pull = zctx.socket(zmq.PULL)
    pull.setsockopt(zmq.LINGER, 0)
    target_port = pull.bind_to_random_port("tcp://127.0.0.1")
    errors: list[str] = []
    with chromium() as browser:
        page = browser.new_context(viewport={"width": 1500, "height": 950}).new_page()
        page.set_default_timeout(30_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.goto(f"{live_server}/capture.html")
        page.click("#tab-live")
        # Only the machine's interfaces are offered, lo selected (the list comes from the server, all at once).
        page.wait_for_selector("#live-interface option", state="attached")
        options = page.eval_on_selector_all("#live-interface option", "els => els.map(e => e.value)")
        assert options == ["any", *sorted(name for _, name in socket.if_nameindex())]
        assert page.input_value("#live-interface") == "lo"
        page.screenshot(path=str(ARTIFACTS / "01-live-tab.png"))

        page.check("#live-kind-tap")
        page.fill("#live-target", f"127.0.0.1:{target_port}")
        page.click("#live-start")
        page.wait_for_selector("#live-listen:has-text('tcp://127.0.0.1:')")
        page.wait_for_selector("#live-state:has-text('capturing')")
        listen = page.text_content("#live-listen").split("tcp://", 1)[1].strip()
        assert "live=" in page.url

        push = zctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.connect(f"tcp://{listen}")
        push.send_multipart([b"hello live viewer", b"<img src=x onerror=alert(1)>"])
        assert pull.poll(10_000) and len(pull.recv_multipart()) == 2

        page.wait_for_selector(".seq-row.kind-message")
        page.wait_for_selector("table.connections tbody tr")
        row = page.text_content("table.connections tbody tr")
        assert f"127.0.0.1:{target_port}" in row and "PUSH" in row and "PULL" in row
        page.click(".seq-row.kind-message")
        page.wait_for_selector("#tree :text('hello live viewer')")
        assert page.locator("img[src=x]").count() == 0
        hex_text = page.text_content("#hex")
        assert "hello live viewer"[:10] in hex_text.replace("\n", "")

        # Traffic keeps streaming in while the page is open.
        push.send_multipart([b"second message"])
        assert pull.poll(10_000)
        pull.recv_multipart()
        page.locator(".seq-row.kind-message").nth(1).wait_for()
        page.wait_for_selector("#live-state:has-text('events')")
        page.screenshot(path=str(ARTIFACTS / "02-live-tap-message.png"))
        # A live source is no capture file: no delete button, no Overview (the analysis of a dissected file).
        assert page.locator("#delete-capture").is_hidden() and page.locator("#view-tabs").is_hidden()

        push.close()
        page.click("#live-stop")
        page.wait_for_selector("#live-state:has-text('stopped')")
        assert page.locator(".seq-row.kind-message").count() >= 2  # the elements stay to study
        page.screenshot(path=str(ARTIFACTS / "03-live-stopped.png"))

        # Back to the file tab: the upload form again.
        page.click("#tab-file")
        assert page.is_visible("#upload-section") and not page.is_visible("#live-section")
    assert not errors, errors
