"""A topology session flooded with messages, in Chromium (issue 19.4: 1,000 msg/s with no frame over 50 ms): what
the page does per frame stays bounded by the frame, not by the messages. While another client floods the
load-balancing preset (PUSH -> 3 PULL) with messages, the page keeps at most 48 dot elements (reused, not one
per message), leaves the expert list alone (nothing in it changed), draws the flooded sequence tail at most 20
times a second; and once the flood stops it shows every message: who got what, the count, the last row.
(The frame times themselves are measured by benchmarks/topology_browser.py.)"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from websockets.sync.client import connect

from testkit import LiveServer

RATE = 150  # messages a second (under the server's websocket limit of 200 commands a second)
SECONDS = 2.0

# Installed before the flood: dot elements made, expert list rewrites, and each drawing of the sequence's rows.
WATCH_JS = """() => {
  const w = window.__busy = { dots: new Set(), expert: 0, draws: [] };
  const watch = (sel, fn, opts) => new MutationObserver(fn).observe(document.querySelector(sel), opts);
  watch('#topology', (records) => {
    for (const r of records) for (const n of r.addedNodes) if (n.classList?.contains('topo-dot')) w.dots.add(n);
  }, { subtree: true, childList: true });
  watch('#expert', () => { w.expert++; }, { subtree: true, childList: true, characterData: true });
  watch('#sequence .seq-rows', () => { w.draws.push(performance.now()); }, { childList: true });
}"""
GOT_JS = """() => Object.fromEntries([...document.querySelectorAll('#topology .topo-got-row')]
  .map((r) => [r.dataset.node, Number(r.dataset.count || 0)]))"""


def create(base: str, body: dict[str, Any]) -> str:
    req = urllib.request.Request(f"{base}/api/sessions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as res:
        return str(json.loads(res.read())["id"])


def flood(ws_url: str, count: int) -> float:
    """Sends `count` messages from vent at RATE a second, after setting the speed to 1000; returns the seconds."""
    with connect(ws_url, max_size=None) as ws:
        ws.send(json.dumps({"type": "speed", "value": 1000}))
        start = time.monotonic()
        for i in range(count):
            ws.send(json.dumps({"type": "send", "from": "vent", "frames": [f"job {i}"]}))
            delay = start + (i + 1) / RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        return time.monotonic() - start


def test_a_flooded_topology_costs_the_page_per_frame_not_per_message(page: Any, live_server: LiveServer) -> None:
    sid = create(live_server.base, {"preset": "load-balancing", "mode": "simulated", "autoplay": True})
    page.goto(f"{live_server.base}/index.html?session={sid}")
    page.wait_for_selector("#topology:not([hidden]) .topo-node")
    page.wait_for_function(f"() => Object.values(({GOT_JS})()).reduce((a, b) => a + b, 0) === 6")
    page.evaluate(WATCH_JS)
    t0 = page.evaluate("performance.now()")
    count = int(RATE * SECONDS)
    seconds = flood(f"{live_server.ws_base}/ws/sessions/{sid}?batch=1&log=0", count)
    t1 = page.evaluate("performance.now()")
    # Every message shown once the flood is over: who got what (round robin: a third each), the count, the tail.
    page.wait_for_function(f"(n) => Object.values(({GOT_JS})()).reduce((a, b) => a + b, 0) === n", arg=6 + count)
    got = page.evaluate(GOT_JS)
    assert got == {"vent": 0, "w1": 2 + count // 3, "w2": 2 + count // 3, "w3": 2 + count // 3}, got
    last = f"job {count - 1}"
    page.wait_for_function("(text) => [...document.querySelectorAll('#sequence .seq-row')]"
                           ".some((r) => r.textContent.includes(text))", arg=last)
    busy = page.evaluate("() => ({ dots: __busy.dots.size, expert: __busy.expert, draws: __busy.draws })")
    # Dots: the page's 48 elements, reused (one per message made 300 and removed as many).
    assert 0 < busy["dots"] <= 48, busy["dots"]
    # The expert list had nothing new: not rewritten (it was, every frame).
    assert busy["expert"] == 0, busy["expert"]
    # The sequence's rows: a flooded tail at most 20 times a second (every frame before), still drawn.
    draws = [t for t in busy["draws"] if t0 <= t <= t1]
    span = (t1 - t0) / 1000
    assert draws, "the sequence followed the flood"
    assert len(draws) <= 22 * span + 3, f"{len(draws)} draws in {span:.1f} s (sent for {seconds:.1f} s)"
