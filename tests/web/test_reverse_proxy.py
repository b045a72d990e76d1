"""The reverse proxy of docs/operations.md, as written there: Debian's nginx with that server block (only its
`listen` and upstream port changed, TLS left out) in front of a real server. Through it a page loads, an upload
larger than nginx's default body limit is taken and dissected, its progress streams, a session's websocket
carries events, and the per-address limits count the browser's address from `X-Forwarded-For`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.sync.client import connect

from installkit import dissected, get_json, request, upload, wait_for
from testkit import LiveServer, free_port
from zmtplab.web import Settings, create_app

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "captures"  # shared/ sits beside the repository
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def documented_server_block() -> str:
    """The nginx server block docs/operations.md gives."""
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```nginx\n(.*?)```", text, re.S)
    return block


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The documented nginx in front of a real server; the proxy's base URL."""
    assert Path(NGINX).exists(), "Debian's nginx is missing: `make test` installs it (scripts/install-system-deps.sh)"
    root = tmp_path_factory.mktemp("nginx")
    settings = Settings(data_dir=root / "data", progress_interval=0.05)
    server = LiveServer(create_app(settings), name="proxied-server").start()
    port = free_port()
    block = documented_server_block()
    assert "listen 443 ssl;" in block and "proxy_pass http://127.0.0.1:8000;" in block
    block = block.replace("listen 443 ssl;", f"listen 127.0.0.1:{port};").replace(
        "127.0.0.1:8000", f"127.0.0.1:{server.port}")
    (root / "nginx.conf").write_text(
        f"daemon off;\nuser root;\npid {root}/nginx.pid;\nerror_log {root}/error.log;\nevents {{}}\n"
        f"http {{\n  access_log {root}/access.log;\n  client_body_temp_path {root}/body;\n"
        f"  proxy_temp_path {root}/proxy;\n{block}}}\n")
    nginx = subprocess.Popen([NGINX, "-p", str(root), "-c", str(root / "nginx.conf")], stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for("nginx", lambda: _answers(base), 30, alive=nginx.poll)
        yield base
    finally:
        nginx.terminate()
        nginx.wait(30)
        server.stop()


def _answers(base: str) -> bool:
    try:
        return request(base, "GET", "/api/health", timeout=5)[0] == 200
    except OSError:
        return False


def test_a_page_loads_through_the_proxy(proxied: str) -> None:
    with urllib.request.urlopen(f"{proxied}/lessons.html", timeout=30) as response:
        assert response.status == 200 and b"main-lessons.js" in response.read()


def test_an_upload_over_nginxs_default_limit_is_taken_and_its_progress_streams(proxied: str) -> None:
    capture = SHARED / "bulk.pcapng"
    assert capture.stat().st_size > 1 << 20  # (nginx's default client_max_body_size is 1 MiB)
    capture_id = upload(proxied, capture)
    messages = []
    with urllib.request.urlopen(f"{proxied}/api/captures/{capture_id}/progress", timeout=120) as stream:
        for line in stream:
            if line.startswith(b"data: "):
                messages.append(json.loads(line[6:]))
    assert messages[-1]["state"] == "done" and len(messages) >= 2, messages
    assert dissected(proxied, capture_id)["events"] > 0


def test_a_session_websocket_carries_events_through_the_proxy(proxied: str) -> None:
    status, created = request(proxied, "POST", "/api/sessions", {"mode": "simulated", "autoplay": False,
                                                                  "server": {"type": "PULL"},
                                                                  "client": {"type": "PUSH"}})
    assert status == 201, created
    ws_url = proxied.replace("http://", "ws://") + f"/ws/sessions/{created['id']}"
    with connect(ws_url, open_timeout=30) as ws:
        ws.send(json.dumps({"type": "play"}))
        kinds: set[str] = set()
        deadline = time.monotonic() + 60
        while "greeting" not in kinds and time.monotonic() < deadline:
            message = json.loads(ws.recv(timeout=60))
            if message.get("type") == "event":
                kinds.add(message["event"]["kind"])
        assert "greeting" in kinds


def test_the_browsers_address_comes_from_x_forwarded_for(proxied: str) -> None:
    browser = "203.0.113.7"  # (as a proxy in front of nginx, or a browser, says; nginx adds its client after it)
    capture_id = _upload_as(proxied, SHARED / "push_pull.pcapng", browser)
    mine = get_json(proxied, "/api/corpus/captures")["captures"]
    assert capture_id not in {c["id"] for c in mine}  # (127.0.0.1's uploads: not that browser's)
    req = urllib.request.Request(f"{proxied}/api/corpus/captures", headers={"X-Forwarded-For": browser})
    with urllib.request.urlopen(req, timeout=30) as response:
        theirs = json.loads(response.read())["captures"]
    assert capture_id in {c["id"] for c in theirs}


def _upload_as(base: str, path: Path, address: str) -> str:
    boundary = "zmtplab-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path.name}\"\r\n\r\n"
            ).encode() + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(f"{base}/api/captures", data=body, method="POST", headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}", "X-Forwarded-For": address})
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return json.loads(response.read())["id"]
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{exc.code} {exc.read()!r}") from None
