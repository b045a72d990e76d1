"""The playground's External nodes box (issue 34.1) in Chromium: a real topology session with an external node
shows where its program joins (the tcp:// endpoint, the app's ws:// URL) with a pyzmq script and a `zmtplab peer`
command to copy, in English and Chinese; and the command shown, run, joins the session."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import httpx
import pytest
from test_zws_browser import ZWS_PAGE

from testkit import LiveServer

pytestmark = pytest.mark.browser

TOPOLOGY = {"mode": "tcp", "nodes": [{"name": "router", "type": "ROUTER", "echo": True},
                                     {"name": "you", "type": "DEALER", "external": True}],
            "links": [{"connect": "you", "bind": "router"}]}


def test_the_page_shows_an_external_nodes_endpoint_and_what_to_run(page: Any, live_server: LiveServer,
                                                                   artifacts: Any) -> None:
    session_id = httpx.post(f"{live_server.base}/api/sessions", json=TOPOLOGY).json()["id"]
    page.goto(f"{live_server.base}/index.html?session={session_id}")
    box = page.wait_for_selector("#external-box:not([hidden]) .external-node[data-node='you']")
    endpoint = box.query_selector(".external-endpoint .external-value").inner_text()
    assert endpoint.startswith("tcp://127.0.0.1:")
    assert box.query_selector(".external-zws .external-value").inner_text() == (
        f"{live_server.ws_base}/zws-{session_id}-you")
    command = box.query_selector(".external-peer .external-code").inner_text()
    assert command == f"zmtplab peer DEALER {endpoint} --connect --send hello --recv 1"
    assert f'sock.connect("{endpoint}")' in box.query_selector(".external-pyzmq .external-code").inner_text()
    assert "router" in box.query_selector(".external-head").inner_text()
    box.screenshot(path=str(artifacts("external-nodes") / "external-box.png"))
    # What the page says to run joins the session: the ROUTER echoes the DEALER's hello back to it.
    words = command.split()[2:]
    run = subprocess.run([sys.executable, "-m", "zmtplab.cli", "peer", *words, "--timeout", "20"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    page.wait_for_selector("#sequence :text('READY')")
    page.goto(f"{live_server.base}/index.html?session={session_id}&lang=zh-CN")
    page.wait_for_selector("#external-box:not([hidden]) .external-node[data-node='you']")
    assert page.inner_text("#external-box summary") == "外部节点"
    assert page.inner_text("#external-box .external-copy >> nth=0") == "复制"


def test_a_browser_is_a_pull_on_an_external_node_over_zws(page: Any, live_server: LiveServer) -> None:
    """A page's `new WebSocket(zws, ['ZWS2.0'])` is the external PULL: the app accepts ZWS2.0, the lab's PUSH
    gives it its routing id and the script's two messages (each a flag octet, then the body), and the session
    dissects the connection as ZWS."""
    body = {"mode": "tcp", "nodes": [{"name": "push", "type": "PUSH"},
                                     {"name": "you", "type": "PULL", "external": True}],
            "links": [{"connect": "you", "bind": "push"}],
            "script": [{"from": "push", "frames": ["one"], "at": 0.1}, {"from": "push", "frames": ["two"], "at": 0.2}]}
    session_id = httpx.post(f"{live_server.base}/api/sessions", json=body).json()["id"]
    page.goto(f"{live_server.base}/index.html?session={session_id}")
    zws = page.wait_for_selector("#external-box:not([hidden]) .external-zws .external-value").inner_text()
    result = page.evaluate(ZWS_PAGE, [zws, [], 3])  # (the app's own page: its CSP lets it reach the app)
    assert result == {"protocol": "ZWS2.0", "got": [[0], [0, *b"one"], [0, *b"two"]]}
    events = httpx.get(f"{live_server.base}/api/sessions/{session_id}/export.json").json()["events"]
    zws_events = [e for e in events if e.get("transport") == "zws"]
    assert {e["protocol"] for e in zws_events if e["kind"] == "greeting" and "protocol" in e} == {"ZWS2.0"}
    assert [e["frames"] for e in events if e["kind"] == "message"] == [[b"one".hex()], [b"two".hex()]]


def test_the_topology_editor_makes_a_node_external(page: Any, live_server: LiveServer, artifacts: Any) -> None:
    """In a real session's custom topology, a node's *external* box makes it a program of the user's (its echo
    and libzmq boxes cleared): started, the page shows its endpoint, and the editor's topology says external."""
    page.goto(f"{live_server.base}/index.html")
    page.wait_for_selector("#preset-menu option", state="attached")
    page.locator(".topo-editor summary").click()
    page.select_option(".topology-setup select:has(option[value='tcp'])", "tcp")
    for kind in ("ROUTER", "DEALER"):
        page.select_option(".topo-editor > .ctl-row:has(#add-node) select", kind)
        page.click("#add-node")
    page.click("#add-link")
    page.select_option(".topo-link-row[data-link='0'] select >> nth=0", "dealer-1")
    page.select_option(".topo-link-row[data-link='0'] select >> nth=1", "router-1")
    page.check(".topo-node-row[data-node='router-1'] input[data-option='echo']")
    page.check(".topo-node-row[data-node='dealer-1'] input[data-option='external']")
    row = page.locator(".topo-node-row[data-node='dealer-1']")
    row.screenshot(path=str(artifacts("external-nodes") / "editor.png"))
    page.click("#start-topology")
    box = page.wait_for_selector("#external-box:not([hidden]) .external-node[data-node='dealer-1']")
    assert box.query_selector(".external-endpoint .external-value").inner_text().startswith("tcp://127.0.0.1:")
