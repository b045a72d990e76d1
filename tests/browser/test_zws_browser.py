"""Chromium's own WebSocket as a ZWS peer (45/ZWS), no library: what a browser offers and sends, against our
ws:// peer and against Debian's libzmq 4.3.4, each side dissected (docs/zws.md, "Who supports what").

A browser offers the subprotocols the page names (`new WebSocket(url, ["ZWS2.0"])`); without a mechanism
each side first sends its routing id, then messages: one binary message per frame, the flag octet first.
The page is a blank one served on 127.0.0.1 here: Chromium lets no page of another origin open a socket on
the loopback (its local network access checks), and the app's own pages allow connections to themselves only
(CSP `connect-src 'self'`).
"""

from __future__ import annotations

import asyncio
import http.server
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from zmtplab.engine import ZwsDissector
from zmtplab.peers.tcp import TcpPeer

pytestmark = pytest.mark.browser

# Opens a ZWS2.0 connection, sends its routing id (empty) and [flags, body...] messages, collects what comes
# back until `expect` messages arrived (or the socket closes).
ZWS_PAGE = """async ([url, messages, expect]) => {
  const ws = new WebSocket(url, ['ZWS2.0']);
  ws.binaryType = 'arraybuffer';
  const got = [];
  const protocol = await new Promise((resolve) => {
    ws.onopen = () => resolve(ws.protocol);
    ws.onclose = (e) => resolve('closed ' + e.code);
  });
  if (protocol.startsWith('closed')) return { protocol, got };
  const done = new Promise((resolve) => {
    ws.onmessage = (e) => { got.push(Array.from(new Uint8Array(e.data))); if (got.length >= expect) resolve(); };
    ws.onclose = () => resolve();
  });
  ws.send(new Uint8Array([0]));
  for (const m of messages) ws.send(new Uint8Array(m));
  await done;
  ws.close(1000, 'done');
  return { protocol, got };
}"""


class _Blank(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # (the standard library names it so)
        body = b"<!doctype html><title>ZWS</title><link rel=icon href=data:,>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def blank() -> Iterator[str]:
    """The address of a blank page on 127.0.0.1."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Blank)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


def test_chromium_is_a_zws2_0_peer_of_ours(page: Any, blank: str) -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    dissector, items = ZwsDissector(), []

    def wire(conn: str, direction: str, data: bytes) -> None:
        items.extend(dissector.receive_data(direction, data))

    peer = TcpPeer("PAIR", identity=b"lab", on_wire=wire)
    try:
        endpoint = asyncio.run_coroutine_threadsafe(peer.bind("ws://127.0.0.1:0/zmq"), loop).result(10)
        page.goto(blank)
        reply = asyncio.run_coroutine_threadsafe(_echo(peer), loop)
        result = page.evaluate(ZWS_PAGE, [endpoint, [[1, *b"he"], [0, *b"llo"]], 2])
        assert reply.result(5) == [b"he", b"llo"]
        asyncio.run_coroutine_threadsafe(peer.close(linger=1), loop).result(10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
    assert result["protocol"] == "ZWS2.0"
    assert result["got"] == [[0, *b"lab"], [0, *b"echo"]]  # our routing id, then the reply
    events = [(d, e.to_dict()) for d, e in items]
    request = next(e for d, e in events if d == "c2s" and e["kind"] == "greeting")
    assert request["protocols"] == ["ZWS2.0"] and request["target"] == "/zmq"
    headers = {f["name"].lower(): f["value"] for f in request["fields"]}
    assert "permessage-deflate" in headers["sec-websocket-extensions"]  # offered; we accept no extension
    assert headers["origin"] == blank.rstrip("/")
    response = next(e for d, e in events if d == "s2c" and e["kind"] == "greeting")
    assert response["protocol"] == "ZWS2.0"
    assert "Sec-WebSocket-Extensions" not in {f["name"] for f in response["fields"]}
    assert [e["frames"] for d, e in events if d == "c2s" and e["kind"] == "message"] == [[b"he".hex(), b"llo".hex()]]
    assert all(e["unmasked"] for d, e in events if d == "c2s" and e["kind"] == "frame")  # a browser masks
    assert [e["code"] for d, e in events if e["kind"] == "command" and e["name"] == "WS-CLOSE"] == [1000, 1000]
    assert not [e for d, e in events if e["kind"] == "expert" and e["severity"] != "note"]


async def _echo(peer: TcpPeer) -> list[bytes]:
    frames = await peer.recv(timeout=60)
    await peer.send([b"echo"])
    return frames


def test_chromium_is_a_zws2_0_peer_of_debian_s_libzmq(page: Any, blank: str) -> None:
    """Chromium sends `Connection: Upgrade`, which libzmq 4.3.4 accepts (Firefox's `keep-alive, Upgrade` it
    refuses: fixed in 4.3.5)."""
    python = Path("/usr/bin/python3")
    script = ("import zmq\nctx = zmq.Context()\ns = ctx.socket(zmq.PAIR)\ns.rcvtimeo = 30000\n"
              "s.bind('ws://127.0.0.1:*/zmq')\nprint(s.getsockopt(zmq.LAST_ENDPOINT).decode(), flush=True)\n"
              "print(s.recv_multipart(), flush=True)\ns.send(b'from libzmq')\nimport time; time.sleep(1)\n")
    proc = subprocess.Popen([str(python), "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        endpoint = proc.stdout.readline().strip()
        assert endpoint.startswith("ws://"), "Debian's python3-zmq is needed (scripts/install-system-deps.sh)"
        page.goto(blank)
        result = page.evaluate(ZWS_PAGE, [endpoint, [[0, *b"from chromium"]], 2])
        assert proc.stdout.readline().strip() == "[b'from chromium']"
    finally:
        proc.wait(30)
    assert result["protocol"] == "ZWS2.0"
    assert result["got"] == [[0], [0, *b"from libzmq"]]  # libzmq's (empty) routing id, then its message
