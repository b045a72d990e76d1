"""Faults with real components (no mocks): each shows a clear state in what the page receives and frees
its resources.

- a real peer killed in the middle of a long message: the session's websocket gets the expert
  "connection closed in the middle of a message", an `error` and a `state` with `closed`, and the
  ports are free again;
- websockets closed mid-stream (abruptly, under a real uvicorn): the session ends after the grace
  period and frees its peers and ports;
- a full disk during an upload: 507 with a clear `detail`, no partial file, the server goes on;
  a full disk during a dissection: the capture ends `error` with the reason, nothing left behind;
- the target of a tap proxy goes away (its socket closes; its process is killed): an expert
  "target ... unreachable", a closed state, and the tap's listening socket is freed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from webkit import SHARED, make_settings, open_client, progress, ready, receive_all, receive_until, upload

from zmtplab.capture.tap import TapProxy
from zmtplab.web import create_app
from zmtplab.web.core.wsprotocol import CommandFrameProtocol

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]
BIG = 12 * 1024 * 1024  # larger than what the kernel buffers between a paused tap and its sender


def port_is_free(port: int) -> bool:
    """True when a server could listen on the port again."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
        return True


def wait_for(check: Any, timeout: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what or check}"
        time.sleep(0.05)


# ---------------------------------------------------------------- a real peer killed mid-message


@pytest.mark.parametrize("libzmq", [True, False], ids=["libzmq-server", "our-server"])
def test_peer_killed_in_the_middle_of_a_message(tmp_path: Path, libzmq: bool) -> None:
    with open_client(tmp_path, session_max_body=BIG, ws_max_message=2 * BIG, session_max_sent_bytes=2 * BIG) as c:
        body = {"mode": "tcp", "server": {"type": "PUSH", "libzmq": libzmq}, "client": {"type": "PULL"}}
        session_id = c.post("/api/sessions", json=body).json()["id"]
        runtime = c.app.state.sessions.get(session_id).runtime
        server_port, tap_port = runtime.server_port, runtime.tap_port
        with c.websocket_connect(f"/ws/sessions/{session_id}") as ws:
            ready(ws)
            # Hold the wire, start a long message, let one piece of it through, then kill its sender.
            ws.send_json({"type": "pause"})
            ws.send_json({"type": "send", "from": "server", "frames": ["m" * BIG]})
            receive_until(ws, lambda m: m["type"] == "state" and not m["playing"])
            time.sleep(0.3)  # the sender fills the socket buffers; the tap holds what it read
            ws.send_json({"type": "step"})
            ws.send_json({"type": "fault", "fault": "kill", "args": {"peer": "server"}})
            ws.send_json({"type": "play"})
            seen = receive_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "expert"
                                 and "middle of a message" in m["event"]["text"])
            expert = seen[-1]["event"]
            assert expert["dir"] == "s2c" and expert["severity"] == "error"
            assert not any(m["type"] == "event" and m["event"]["kind"] == "message" for m in seen)
            # The client reconnects; with the server gone the tap says so and stops listening.
            receive_all(ws, lambda m: m["type"] == "state" and m["closed"],
                        lambda m: m["type"] == "error" and "could not reach the server" in m["detail"])
            wait_for(lambda: port_is_free(server_port), what="the killed server's port")
            ws.send_json({"type": "send", "from": "server", "frames": ["more"]})
            assert "was killed" in receive_until(ws, lambda m: m["type"] == "error")[-1]["detail"]
        assert c.delete(f"/api/sessions/{session_id}").status_code == 204
        wait_for(lambda: port_is_free(tap_port), what="the tap's port")


# ---------------------------------------------------------------- websockets closed mid-stream


GRACE = 0.5  # (seconds an abandoned session waits for its page)


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """The app under a real uvicorn (in a thread), with a short grace period for abandoned sessions."""
    app = create_app(make_settings(tmp_path, session_grace=GRACE, reap_interval=0.1))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on",
                                           ws=CommandFrameProtocol))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, 20, "uvicorn")
    yield f"127.0.0.1:{port}", app
    server.should_exit = True
    thread.join(10)


def test_websockets_closed_mid_stream(live_server: tuple[str, Any]) -> None:
    import websockets

    base, app = live_server
    manager = app.state.sessions
    sessions = {}
    for mode, body in (("simulated", {"server": {"type": "PUSH"}, "client": {"type": "PULL"}}),
                       ("tcp", {"server": {"type": "PUSH", "libzmq": True}, "client": {"type": "PULL"}})):
        r = httpx.post(f"http://{base}/api/sessions", json={"mode": mode, **body})
        assert r.status_code == 201
        sessions[mode] = r.json()["id"]
    tcp = manager.get(sessions["tcp"]).runtime
    ports = (tcp.server_port, tcp.tap_port)
    player = manager.get(sessions["simulated"]).runtime._player

    dropped: dict[str, float] = {}

    async def drop_mid_stream(session_id: str, batch: bool) -> None:
        url = f"ws://{base}/ws/sessions/{session_id}" + ("?batch=1" if batch else "")
        ws = await websockets.connect(url, max_size=None)
        await ws.send(json.dumps({"type": "speed", "value": 1000}))
        for n in range(200):
            await ws.send(json.dumps({"type": "send", "from": "server", "frames": [f"message {n}", "x" * 2000]}))
        got = 0
        while got < 20:  # the stream is flowing...
            message = json.loads(await asyncio.wait_for(ws.recv(), 10))
            got += len(message) if isinstance(message, list) else 1
        ws.transport.abort()  # ...and the browser goes away without a closing handshake
        dropped[session_id] = time.monotonic()

    async def both() -> None:
        await asyncio.gather(drop_mid_stream(sessions["simulated"], False), drop_mid_stream(sessions["tcp"], True))

    asyncio.run(both())
    # The sessions wait the grace period for their page to come back (at least that long after the drop: a
    # loaded machine only makes it longer)...
    ended: dict[str, float] = {}

    def all_ended() -> bool:
        for session_id in set(sessions.values()) - set(manager.sessions) - set(ended):
            ended[session_id] = time.monotonic()
        return len(ended) == len(sessions)

    wait_for(all_ended, 30, "the sessions to end")
    assert all(ended[s] - dropped[s] >= GRACE for s in sessions.values()), (dropped, ended)
    # ...then they end and free their peers and ports.
    assert tcp.closed() and tcp.tap is not None and not tcp.tap.is_serving()
    wait_for(lambda: player.done(), 5, "the simulation's player")
    wait_for(lambda: all(port_is_free(p) for p in ports), 10, "the session's ports")
    assert httpx.get(f"http://{base}/api/health").status_code == 200


# ---------------------------------------------------------------- a full disk


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (the tests run as root, as `make test` and CI do)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _multipart(chunks: Iterator[bytes], boundary: str = "zmtplabboundary") -> Iterator[bytes]:
    yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.pcapng\"\r\n"
           "Content-Type: application/octet-stream\r\n\r\n").encode()
    yield from chunks
    yield f"\r\n--{boundary}--\r\n".encode()


def test_full_disk_during_upload(tiny_disk: Path) -> None:
    fake = (REPO / "captures" / "req_rep.pcapng").read_bytes() + bytes(3 * 1024 * 1024)  # larger than the disk
    with open_client(tiny_disk, min_free_disk=0, dissect_executor="thread") as c:
        # Declared too large for the free space: refused before a byte is written.
        r = upload(c, fake, "big.pcapng")
        assert r.status_code == 507 and "no room" in r.json()["detail"]
        # Streamed without a length: the disk fills up in the middle of the upload.
        chunks = (fake[i:i + 65536] for i in range(0, len(fake), 65536))
        r = c.post("/api/captures", content=_multipart(chunks),
                   headers={"content-type": "multipart/form-data; boundary=zmtplabboundary"})
        assert "content-length" not in {k.lower() for k in r.request.headers}
        assert r.status_code == 507, r.text
        assert "disk has no room" in r.json()["detail"] and "not stored" in r.json()["detail"]
        assert list((tiny_disk / "captures").iterdir()) == []  # no partial file
        # The server goes on, and a capture that fits is stored and dissected.
        assert c.get("/api/health").status_code == 200
        r = upload(c, REPO / "captures" / "req_rep.pcapng")
        assert r.status_code == 201
        assert progress(c, r.json()["id"])[-1]["state"] == "done"


def test_full_disk_during_dissection(tiny_disk: Path) -> None:
    large = SHARED / "large.pcapng"
    with open_client(tiny_disk, min_free_disk=0, dissect_executor="thread") as c:
        c.get("/api/health")
        # Leave room for the upload but not for its event store.
        ballast = tiny_disk / "ballast"
        free = os.statvfs(tiny_disk).f_bavail * os.statvfs(tiny_disk).f_frsize
        ballast.write_bytes(bytes(max(0, free - large.stat().st_size - 96 * 1024)))
        r = upload(c, large)
        assert r.status_code == 201, r.text
        capture_id = r.json()["id"]
        final = progress(c, capture_id)[-1]
        assert final["state"] == "error" and "full" in final["detail"], final
        directory = tiny_disk / "captures" / capture_id
        assert sorted(p.name for p in directory.iterdir()) == ["capture", "meta.json"]  # no half-built store
        ballast.unlink()
        assert c.get("/api/health").status_code == 200


# ---------------------------------------------------------------- the target of a tap goes away


def test_session_tap_target_socket_closes(tmp_path: Path) -> None:
    with open_client(tmp_path) as c:
        body = {"mode": "tcp", "server": {"type": "PULL", "libzmq": True}, "client": {"type": "PUSH"}}
        session_id = c.post("/api/sessions", json=body).json()["id"]
        runtime = c.app.state.sessions.get(session_id).runtime
        with c.websocket_connect(f"/ws/sessions/{session_id}") as ws:
            ready(ws)
            # The target's libzmq socket closes by itself (as when its program ends).
            runtime.server.socket.close(linger=0)
            seen = receive_all(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "expert"
                               and "unreachable" in m["event"]["text"],
                               lambda m: m["type"] == "state" and m["closed"])
            expert = next(m["event"] for m in seen if m["type"] == "event" and m["event"]["kind"] == "expert")
            assert f"127.0.0.1:{runtime.server_port} unreachable" in expert["text"]
            assert expert["severity"] == "error"
            wait_for(lambda: port_is_free(runtime.tap_port), what="the tap's port")
            # The session answers, and says what to do.
            ws.send_json({"type": "reset"})
            receive_until(ws, lambda m: m["type"] == "reset")
            ready(ws)


TARGET = """
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PULL)
port = s.bind_to_random_port("tcp://127.0.0.1")
print(port, flush=True)
while True:
    s.recv_multipart()
"""


def test_tap_proxy_target_process_killed() -> None:
    import zmq

    target = subprocess.Popen([sys.executable, "-c", TARGET], stdout=subprocess.PIPE, text=True)
    events: list[dict[str, Any]] = []
    try:
        target_port = int(target.stdout.readline())  # type: ignore[union-attr]

        async def run() -> int:
            proxy = TapProxy(("127.0.0.1", 0), ("127.0.0.1", target_port), events.append, connect_timeout=2)
            await proxy.start()
            assert proxy.port is not None
            ctx = zmq.Context()
            push = ctx.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 0)
            push.connect(f"tcp://127.0.0.1:{proxy.port}")
            push.send_multipart([b"before"])
            for _ in range(200):
                await asyncio.sleep(0.02)
                if any(e["kind"] == "message" for e in events):
                    break
            target.send_signal(signal.SIGKILL)  # the target's process dies
            target.wait(10)
            for _ in range(250):  # libzmq reconnects through the tap; the target is gone
                await asyncio.sleep(0.02)
                if any(e["kind"] == "expert" and "unreachable" in e["text"] for e in events):
                    break
            push.close()
            ctx.term()
            await proxy.close()
            return proxy.port

        port = asyncio.run(run())
    finally:
        if target.poll() is None:
            target.kill()
        target.wait(10)
    assert any(e["kind"] == "message" for e in events)
    unreachable = [e for e in events if e["kind"] == "expert" and "unreachable" in e["text"]]
    assert unreachable and unreachable[0]["severity"] == "error" and str(target_port) in unreachable[0]["text"]
    assert port_is_free(port)
    with contextlib.suppress(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        raise AssertionError("the tap still accepts connections")


# ---------------------------------------------------------------- the session faults: one table


# In the order the test gives them: wrong_mechanism last, since its peer keeps the other mechanism and no handshake
# completes after it (a `close` after it, refused between two connections, waited for a READY that never came).
SIMULATED_FAULT_MARKS = {"corrupt_byte": ("corrupt", "corrupt-armed"), "split_writes": ("split",), "delay": ("delay",),
                         "stop_pong": ("stop_answering",), "close": ("close",),
                         "wrong_mechanism": ("wrong_mechanism",)}


def test_the_page_and_both_runtimes_read_one_fault_table(tmp_path: Path) -> None:
    with open_client(tmp_path, sim_step_interval=0.005) as client:
        table = client.get("/api/sessions/faults").json()["faults"]
        modes = {f["fault"]: f["modes"] for f in table}
        assert modes == {"corrupt_byte": ["simulated", "tcp"], "split_writes": ["simulated", "tcp"],
                         "delay": ["simulated", "tcp"], "close": ["simulated", "tcp"], "kill": ["tcp"],
                         "wrong_mechanism": ["simulated"], "stop_pong": ["simulated"]}
        for mode, config in (("simulated", {"server": {"type": "PUSH"}, "client": {"type": "PULL"}}),
                             ("tcp", {"server": {"type": "PAIR"}, "client": {"type": "PAIR"}})):
            res = client.post("/api/sessions", json={"mode": mode, **config})
            assert res.status_code == 201, res.text
            with client.websocket_connect(f"/ws/sessions/{res.json()['id']}") as ws:
                ready(ws)
                for name, takes in modes.items():
                    if mode in takes:
                        continue
                    ws.send_json({"type": "fault", "fault": name, "args": {"peer": "server"}})
                    detail = receive_until(ws, lambda m: m["type"] == "error")[-1]["detail"]
                    assert f"the fault {name!r} needs a" in detail, detail
                if mode != "simulated":
                    continue
                # Every fault the table gives a simulated session takes effect: the log marks each. (A corrupt byte
                # or a wrong mechanism ends the connection, and its peer connects again a moment later: a `close`
                # meant for a connection that is not back yet is refused as it should be, and sent again once the
                # next handshake is done.)
                for name in (n for n in SIMULATED_FAULT_MARKS if "simulated" in modes[n]):
                    for _ in range(5):
                        ws.send_json({"type": "fault", "fault": name, "args": {"peer": "client"}})
                        mark = receive_until(ws, lambda m: m["type"] in ("error", "log")
                                             and (m["type"] == "error" or m["entry"].get("what") == "fault"))[-1]
                        if mark["type"] != "error" or "no open connection" not in mark["detail"]:
                            break
                        ready(ws)
                    assert mark["type"] == "log", mark
                    assert mark["entry"]["fault"] in SIMULATED_FAULT_MARKS[name], (name, mark)
