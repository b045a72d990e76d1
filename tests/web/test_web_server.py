"""The app under a real uvicorn server, configured as `zmtplab serve` configures it: health, a streamed upload,
the 413 path, a websocket session."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn
from webkit import capture_files, make_settings

from zmtplab.web import create_app
from zmtplab.web.server import uvicorn_config

pytestmark = pytest.mark.timeout(60)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    settings = make_settings(tmp_path_factory.mktemp("server"), max_upload_bytes=100_000, host="127.0.0.1", port=port)
    config = uvicorn_config(create_app(settings), settings, log_level="warning")  # as `zmtplab serve` runs it
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    yield f"127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


def test_health_and_upload(server):
    base = f"http://{server}"
    r = httpx.get(f"{base}/api/health")
    assert r.status_code == 200 and r.headers["referrer-policy"] == "no-referrer"
    path = next(p for p in capture_files() if p.stem == "req_rep")
    with path.open("rb") as f:
        r = httpx.post(f"{base}/api/captures", files={"file": (path.name, f)})
    assert r.status_code == 201
    capture_id = r.json()["id"]
    with httpx.stream("GET", f"{base}/api/captures/{capture_id}/progress", timeout=30) as stream:
        states = [json.loads(line[6:])["state"] for line in stream.iter_lines() if line.startswith("data: ")]
    assert states[-1] == "done"
    summary = httpx.get(f"{base}/api/captures/{capture_id}").json()
    assert summary["connections"][0]["socket_types"] == {"c2s": "REQ", "s2c": "REP"}


def test_oversize_upload_is_refused_early(server):
    big = b"\x0a\x0d\x0d\x0a" + bytes(2_000_000)
    r = httpx.post(f"http://{server}/api/captures", files={"file": ("big.pcapng", big)}, timeout=30)
    assert r.status_code == 413 and "100000" in r.json()["detail"]


def test_websocket_session(server):
    import websockets

    async def run() -> list[dict]:
        r = httpx.post(f"http://{server}/api/sessions",
                       json={"mode": "simulated", "server": {"type": "PAIR"}, "client": {"type": "PAIR"}})
        assert r.status_code == 201
        seen = []
        async with websockets.connect(f"ws://{server}/ws/sessions/{r.json()['id']}") as ws:
            await ws.send("{broken")
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                seen.append(message)
                if message["type"] == "event" and message["event"].get("name") == "READY":
                    break
        return seen

    seen = asyncio.run(run())
    assert any(m["type"] == "error" for m in seen)
    assert [m["event"]["kind"] for m in seen if m["type"] == "event"][:2] == ["greeting", "greeting"]


def test_static_frontend(server):
    index = Path(__file__).resolve().parents[2] / "frontend" / "index.html"
    assert index.exists()
    r = httpx.get(f"http://{server}/")
    assert r.status_code == 200 and "default-src 'self'" in r.headers["content-security-policy"]
