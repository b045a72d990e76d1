"""Issue 19 in real Chromium against a real server: each preset driven from the page's menu, and what the page
shows checked (who got which message, drop and block markers, queue depth against HWM, lifelines per node or
connection, a message's path through every hop, step back); the custom topology editor with save, load and
share by link. Screenshots go to test-artifacts/topology/."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from testkit import LiveServer, poll, settle

pytestmark = pytest.mark.browser

# What the diagram shows, read back from the DOM.
DIAGRAM_JS = """() => {
  const nodes = {};
  for (const g of document.querySelectorAll('#topology .topo-node')) {
    nodes[g.getAttribute('data-node')] = { text: g.textContent, blocked: g.classList.contains('blocked'),
      badges: g.querySelector('.topo-badges').textContent, stats: g.querySelector('.topo-stats').textContent };
  }
  const got = {};  // the last messages each node's application received (the page shows up to eight)
  const count = {};  // and how many it received in all
  for (const row of document.querySelectorAll('#topology .topo-got-row')) {
    got[row.dataset.node] = [...row.querySelectorAll('.topo-msg')].map((c) => c.textContent.replace(/"/g, ''));
    count[row.dataset.node] = Number(row.dataset.count || 0);
  }
  const pipes = {};
  for (const g of document.querySelectorAll('#topology .topo-pipe')) {
    pipes[g.getAttribute('data-pipe')] = [Number(g.getAttribute('data-depth')), Number(g.getAttribute('data-hwm'))];
  }
  const edges = [...document.querySelectorAll('#topology .topo-edge')].map((e) => ({
    from: e.getAttribute('data-from'), to: e.getAttribute('data-to'), conn: e.getAttribute('data-conn'),
    proxy: e.classList.contains('proxy'), on: e.classList.contains('on-path') }));
  const heads = [...document.querySelectorAll('#sequence .lane-head')].map((h) => h.textContent);
  return { nodes, got, count, pipes, edges, heads };
}"""

# Installed before Play: the deepest each pipe got, and the links message dots crossed (a dot element is reused for a
# later message: its data-msg is set again).
WATCH_JS = """() => {
  window.__maxDepth = {};
  window.__dotLinks = [];  // each dot's "from>to"
  const dotSeen = (n) => window.__dotLinks.push(`${n.dataset.from}>${n.dataset.to}`);
  const svgSlot = document.querySelector('#topology');
  new MutationObserver((records) => {
    for (const r of records) {
      const dot = r.target.classList && r.target.classList.contains('topo-dot');
      if (r.type === 'attributes' && r.attributeName === 'data-msg' && dot) dotSeen(r.target);
      if (r.type === 'attributes' && r.target.classList.contains('topo-pipe')) {
        const key = r.target.getAttribute('data-pipe');
        const d = Number(r.target.getAttribute('data-depth'));
        const hwm = Number(r.target.getAttribute('data-hwm'));
        const was = window.__maxDepth[key];
        if (!was || d > was[0]) window.__maxDepth[key] = [d, hwm];
      }
      for (const n of r.addedNodes || []) {
        if (n.classList && n.classList.contains('topo-pipe')) {
          const key = n.getAttribute('data-pipe');
          window.__maxDepth[key] = [Number(n.getAttribute('data-depth')), Number(n.getAttribute('data-hwm'))];
        }
        if (n.classList && n.classList.contains('topo-dot')) dotSeen(n);
      }
    }
  }).observe(svgSlot, { subtree: true, childList: true, attributes: true,
                        attributeFilter: ['data-depth', 'data-msg'] });
}"""

SPEED_16_JS = """() => { const r = document.querySelector('#player input[type=range]');
  r.value = String(r.max); r.dispatchEvent(new Event('input')); r.dispatchEvent(new Event('change')); }"""


# The sequence is virtual (only the rows in view exist): scroll it through and collect every row's text by class.
ROWS_JS = """async (cls) => {
  const vp = document.querySelector('#sequence .seq-viewport');
  const out = new Map();
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  for (let top = 0; ; top += Math.max(60, vp.clientHeight - 60)) {
    vp.scrollTop = top;
    await frame();
    for (const row of vp.querySelectorAll('.seq-row.' + cls)) out.set(Number(row.dataset.index), row.textContent);
    if (top >= vp.scrollHeight) break;
  }
  return [...out.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]);
}"""


def sequence_rows(page: Any, cls: str) -> list[str]:
    """The text of every sequence row with class `cls` (what-drop, what-recv, on-path...), in order."""
    return page.evaluate(ROWS_JS, cls)


def diagram(page: Any) -> dict[str, Any]:
    return page.evaluate(DIAGRAM_JS)


def diagram_and_rows(page: Any, cls: str, timeout: float = 30) -> tuple[dict[str, Any], list[str]]:
    """The diagram and the sequence's `cls` rows once both show as many received messages (or after `timeout`
    seconds): the two views redraw on frames of their own, so one can be a position behind the other."""
    return poll(lambda: (diagram(page), sequence_rows(page, cls)),
                lambda v: len(v[1]) == sum(len(got) for got in v[0]["got"].values()),
                timeout, pause=lambda: None)  # (reading the rows takes frames already)


def position(page: Any) -> tuple[int, int]:
    m = re.search(r"element (\d+) of (\d+)", page.text_content(".play-status") or "")
    assert m, "no position in the player"
    return int(m.group(1)), int(m.group(2))


def start_preset(page: Any, base: str, preset: str) -> None:
    """Opens the playground, picks `preset` from the menu, starts it paused, sets 16x and plays it."""
    page.goto(f"{base}/index.html")
    page.wait_for_selector(f"#preset-menu option[value='{preset}']", state="attached")
    page.select_option("#preset-menu", preset)
    page.locator(".topology-setup label.check input").uncheck()  # paused at t = 0: watch from the start
    page.click("#start-preset")
    page.wait_for_selector("#topology:not([hidden]) .topo-node")
    page.wait_for_function("() => /paused/.test(document.querySelector('.play-status').textContent)")
    page.evaluate(WATCH_JS)
    page.evaluate(SPEED_16_JS)
    page.wait_for_function("() => /16\\u00d7/.test(document.querySelector('.speed-text').textContent)")
    page.click("#player button:text-is('▶ Play')")


def wait_for(page: Any, condition_js: str, arg: Any = None, timeout: int = 30_000) -> None:
    """Waits until `condition_js(diagram)` holds, the diagram read as DIAGRAM_JS reads it."""
    page.wait_for_function(f"(arg) => ({condition_js})(({DIAGRAM_JS})(), arg)", arg=arg, timeout=timeout)


def wait_settled(page: Any) -> None:
    """Waits until the session played everything and nothing more is scheduled (the player says "At the end",
    from the server's state), then for the views to redraw (`settle`). (A position equal to the total for a while is
    no such sign: a loaded server can pause between two reads of a slow SUB, half a second apart.)"""
    page.wait_for_selector("#player .play-status:has-text('At the end')", timeout=60_000)
    settle(page)


def test_load_balancing_round_robin_paths_and_step_back(page: Any, live_server: LiveServer, artifacts: Any) -> None:
    start_preset(page, live_server.base, "load-balancing")
    wait_for(page, "(d) => ['w1','w2','w3'].every((w) => d.got[w].length === 2)")
    d = diagram(page)
    # Round robin: each worker every third task.
    assert d["got"] == {"vent": [], "w1": ["task 1", "task 4"], "w2": ["task 2", "task 5"], "w3": ["task 3", "task 6"]}
    assert "sent 6" in d["nodes"]["vent"]["stats"]
    assert [(e["from"], e["to"]) for e in d["edges"]] == [("w1", "vent"), ("w2", "vent"), ("w3", "vent")]
    assert d["heads"] == ["vent PUSH", "w1 PULL", "w2 PULL", "w3 PULL"]
    # Tasks crossed the diagram as dots, on every worker's link (one dot a task while the page keeps up; a frame
    # late enough on a loaded machine to hold a burst of events sends a link's latest task only).
    assert {"vent>w1", "vent>w2", "vent>w3"} <= set(page.evaluate("window.__dotLinks")), "a dot crossed each link"
    # The decision is in the sequence, on vent's lifeline, in plain words.
    assert any("PUSH chose the pipe to w2 (round robin" in r for r in sequence_rows(page, "what-route"))
    wait_settled(page)
    page.screenshot(path=str(artifacts("topology") / "load-balancing.png"))

    # Click w2's second task: its path lights up (vent -> w2 only) and its wire message opens in the panes.
    page.click("#topology .topo-got-row[data-node='w2'] .topo-msg:nth-child(2)")
    d = diagram(page)
    assert [e["conn"] for e in d["edges"] if e["on"]] == [next(e["conn"] for e in d["edges"] if e["from"] == "w2")]
    on_nodes = page.eval_on_selector_all("#topology .topo-node.on-path",
                                         "els => els.map(e => e.getAttribute('data-node'))")
    assert sorted(on_nodes) == ["vent", "w2"]
    rows = sequence_rows(page, "on-path")
    assert any("task 5" in r and "Message" in r for r in rows), rows
    assert any("w2 received" in r for r in rows), rows
    assert any("PUSH chose the pipe to w2" in r for r in rows), rows
    assert "Message" in (page.text_content("#octets") or "")
    assert "task 5" in (page.text_content("#hex") or "")

    # Step back: the elements after the position go, and the diagram says so (w3 loses task 6 first).
    before = position(page)[0]
    for _ in range(6):
        page.click("#player button:text-is('« Back')")
    page.wait_for_function("(n) => { const m = /element (\\d+) of/"
                           ".exec(document.querySelector('.play-status').textContent);"
                           " return m && Number(m[1]) <= n - 6; }", arg=before)
    wait_for(page, "(d) => d.got.w3.length < 2")
    d, recv_rows = diagram_and_rows(page, "what-recv")
    assert d["got"]["w3"] == ["task 3"]
    full = {"w1": ["task 1", "task 4"], "w2": ["task 2", "task 5"], "w3": ["task 3", "task 6"]}
    assert all(d["got"][w] == full[w][:len(d["got"][w])] for w in full), d["got"]
    assert len(recv_rows) == sum(len(v) for v in d["got"].values()), "the diagram and the sequence agree"


def test_router_dealers_routing_by_identity_and_a_drop(page: Any, live_server: LiveServer, artifacts: Any) -> None:
    start_preset(page, live_server.base, "router-dealers")
    wait_for(page, "(d) => /dropped/.test(d.nodes.router.badges) && d.got.d1.length && d.got.d2.length")
    wait_settled(page)
    d = diagram(page)
    assert d["got"]["d1"] == ["for d1 only"]
    assert d["got"]["d2"] == ["for d2 only"]
    assert d["got"]["d3"] == []
    # The ROUTER's application got each hello with the identity frame its socket put in front.
    assert d["got"]["router"] == [f"d{i} | hello from d{i}" for i in (1, 2, 3)]
    assert "✕ 1 dropped" in d["nodes"]["router"]["badges"]
    drops = sequence_rows(page, "what-drop")
    assert len(drops) == 1
    assert re.search(r"no peer with identity '?c9'? \(ROUTER_MANDATORY off\)", drops[0])
    page.screenshot(path=str(artifacts("topology") / "router-dealers.png"))


def test_pub_sub_topics_each_sub_gets_its_prefix(page: Any, live_server: LiveServer) -> None:
    start_preset(page, live_server.base, "pub-sub-topics")
    wait_for(page, "(d) => d.got['sub-3'].length === 4")
    wait_settled(page)
    d = diagram(page)
    assert d["got"]["sub-1"] == ["weather.paris 12C", "weather.oslo -3C"]
    assert d["got"]["sub-2"] == ["sport.07 2-1"]
    assert d["got"]["sub-3"] == ["weather.paris 12C", "sport.07 2-1", "weather.oslo -3C", "news.flash"]
    assert "filtered" in d["nodes"]["pub"]["stats"], "the PUB's per-pipe filtering is counted"
    assert any("filtered out" in r for r in sequence_rows(page, "what-filter"))


def test_extended_request_reply_through_the_broker(page: Any, live_server: LiveServer, artifacts: Any) -> None:
    start_preset(page, live_server.base, "extended-reqrep")
    wait_for(page, "(d) => ['c1','c2','c3'].every((c) => d.got[c].length === 1)")
    wait_settled(page)
    d = diagram(page)
    for c in ("c1", "c2", "c3"):
        assert d["got"][c] == [f"request from {c}"], "each client got its own request echoed"
    assert sorted(d["got"]["w1"] + d["got"]["w2"]) == [f"request from c{i}" for i in (1, 2, 3)]
    assert [e["proxy"] for e in d["edges"]].count(True) == 1
    # The layout reads left to right: clients, the broker's front and back, the workers.
    xs = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#topology .topo-node')].map((g) =>
      [g.getAttribute('data-node'), Number(/translate\\(([\\d.]+)/.exec(g.getAttribute('transform'))[1])]))""")
    assert xs["c1"] < xs["brk-front"] < xs["brk-back"] < xs["w1"]
    # c2's request: its path crosses the front link, the proxy and a worker's link.
    page.click("#topology .topo-got-row[data-node='w1'] .topo-msg, #topology .topo-got-row[data-node='w2'] .topo-msg")
    d = diagram(page)
    on = [e for e in d["edges"] if e["on"]]
    assert any(e["proxy"] for e in on), on
    assert {e["to"] for e in on if not e["proxy"]} == {"brk-front", "brk-back"}, on
    page.screenshot(path=str(artifacts("topology") / "extended-reqrep.png"))
    # Lifelines per connection: two per link, side by side.
    page.click("#topology button.lanes-conn")
    heads = diagram(page)["heads"]
    assert len(heads) == 10 and heads[0].startswith("c1 REQ #") and heads[1].startswith("brk-front ROUTER #")


def test_slow_joiner_misses_the_first_updates(page: Any, live_server: LiveServer) -> None:
    start_preset(page, live_server.base, "slow-joiner")
    wait_for(page, "(d) => d.got['sub-early'].length === 8")
    wait_settled(page)
    d = diagram(page)
    early = d["got"]["sub-early"]
    assert early[:2] == ["update 3", "update 4"] or early[-1] == "update 8"
    late = d["got"]["sub-late"]
    assert 0 < len(late) < 8, late
    assert "update 1" not in late
    assert late[-1] == "update 8"


def test_push_backpressure_blocks_and_queues_fill_to_hwm(page: Any, live_server: LiveServer, artifacts: Any) -> None:
    start_preset(page, live_server.base, "push-backpressure")
    # The PUSH's send blocks once its pipe holds SNDHWM 2 (it never drops): the marker on it, the sentence.
    wait_for(page, "(d) => /blocked/.test(d.nodes.vent.badges)")
    page.screenshot(path=str(artifacts("topology") / "push-backpressure.png"))
    wait_for(page, "(d) => d.count.worker >= 3")
    deepest = page.evaluate("window.__maxDepth")
    # The worker's inbound queue reached its RCVHWM of 2: it stopped reading (a block marker on it).
    assert deepest["worker<vent"][1] == 2 and deepest["worker<vent"][0] >= 2, deepest
    blocks = sequence_rows(page, "what-block")
    assert any("send blocked: every pipe full" in r for r in blocks), blocks
    d = diagram(page)
    assert d["pipes"]["vent>worker"][1] == 2, "the PUSH's pipe shows its SNDHWM"
    n = d["count"]["worker"]
    got = [" ".join(chip.split()[:2]) for chip in d["got"]["worker"]]  # (a chip: "task 3 ....", cut short)
    assert got == [f"task {i}" for i in range(max(1, n - 7), n + 1)], "no task dropped, in order"
    assert "dropped" not in d["nodes"]["vent"]["badges"]


def test_pub_drops_for_the_slow_sub(page: Any, live_server: LiveServer, artifacts: Any) -> None:
    start_preset(page, live_server.base, "pub-drops")
    wait_for(page, "(d) => /dropped/.test(d.nodes.pub.badges)")
    wait_settled(page)
    d = diagram(page)
    deepest = page.evaluate("window.__maxDepth")
    # The slow SUB's pipe drawn with its SNDHWM of 2, filling (a busy page draws the queues every 100 ms, so
    # the moment it held 2 may fall between two draws on a loaded machine: each drop says it).
    assert deepest["pub>sub-slow"][1] == 2 and deepest["pub>sub-slow"][0] >= 1, deepest
    dropped = int(re.search(r"✕ (\d+) dropped", d["nodes"]["pub"]["badges"]).group(1))
    assert d["count"]["sub-fast"] == 24, d["count"]
    assert d["count"]["sub-slow"] == 24 - dropped, "what the PUB dropped never reached the slow SUB"
    drops = [r for r in sequence_rows(page, "what-drop") if "PUB dropped for sub-slow" in r]
    assert len(drops) == dropped and all("its pipe is at SNDHWM 2" in r for r in drops), drops
    page.screenshot(path=str(artifacts("topology") / "pub-drops.png"))


def test_custom_topology_edit_send_save_load_and_share(page: Any, live_server: LiveServer, tmp_path: Any) -> None:
    page.goto(f"{live_server.base}/index.html")
    page.wait_for_selector("#preset-menu option", state="attached")
    editor = page.locator(".topo-editor")
    editor.locator("summary").click()
    for kind in ("DEALER", "ROUTER", "DEALER"):
        page.select_option(".topo-editor > .ctl-row:has(#add-node) select", kind)
        page.click("#add-node")
    names = page.eval_on_selector_all(".topo-node-row", "els => els.map(e => e.dataset.node)")
    assert names == ["dealer-1", "router-1", "dealer-2"]
    # Rename the ROUTER and give the DEALERs identities; link both DEALERs to it.
    page.fill(".topo-node-row[data-node='router-1'] .topo-name", "hub")
    page.press(".topo-node-row[data-node='router-1'] .topo-name", "Enter")
    page.wait_for_selector(".topo-node-row[data-node='hub']")
    for n in ("dealer-1", "dealer-2"):
        page.fill(f".topo-node-row[data-node='{n}'] .topo-ident", n.replace("dealer-", "d"))
        page.press(f".topo-node-row[data-node='{n}'] .topo-ident", "Tab")
    page.click("#add-link")
    page.click("#add-link")
    assert page.locator(".topo-link-row").count() == 2
    # Make them dealer-1 -> hub and dealer-2 -> hub.
    page.select_option(".topo-link-row[data-link='0'] select >> nth=0", "dealer-1")
    page.select_option(".topo-link-row[data-link='0'] select >> nth=1", "hub")
    page.select_option(".topo-link-row[data-link='1'] select >> nth=0", "dealer-2")
    page.select_option(".topo-link-row[data-link='1'] select >> nth=1", "hub")

    # Save: a small JSON file with the topology.
    with page.expect_download() as dl:
        page.click("#save-topology")
    saved = json.loads(Path(dl.value.path()).read_text(encoding="utf-8"))
    assert [n["name"] for n in saved["nodes"]] == ["dealer-1", "hub", "dealer-2"]
    assert saved["links"] == [{"connect": "dealer-1", "bind": "hub"}, {"connect": "dealer-2", "bind": "hub"}]
    assert saved["nodes"][0]["identity"] == "d1"

    # Share: the link carries it; opened elsewhere, the editor has it and it runs.
    page.click("#share-topology")
    url = page.input_value("#share-url")
    assert "#topology=" in url
    other = page.context.new_page()
    other.on("pageerror", lambda exc: page.problems.errors.append(str(exc)))
    other.goto(url)
    other.wait_for_selector(".topo-node-row[data-node='hub']")
    assert "3 nodes" in (other.text_content(".topo-note") or "")
    other.click("#start-topology")
    other.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='hub']")
    other.evaluate(SPEED_16_JS)  # (it plays at once: the box's "play at once" is on)
    other.wait_for_function("() => [...document.querySelectorAll('#topology .topo-edge')]"
                            ".filter((e) => e.getAttribute('data-conn')).length === 2")
    # Send from dealer-2: the ROUTER's application gets it behind dealer-2's identity.
    other.select_option("#composer select >> nth=0", "dealer-2")
    other.fill("textarea[aria-label='Frame 1']", "hi hub")
    other.click("button:text-is('Send message')")
    wait_for(other, "(d) => d.got.hub.length === 1")
    assert diagram(other)["got"]["hub"] == ["d2 | hi hub"]
    other.close()

    # Load: a file that is not a topology is refused and changes nothing; a good one replaces the editor's.
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": [{"name": "a", "type": "SOCK"}], "links": []}', encoding="utf-8")
    page.set_input_files(".topo-editor input[type=file]", str(bad))
    page.wait_for_selector(".topology-setup .error:not([hidden])")
    assert "SOCK is not a socket type" in (page.text_content(".topology-setup .error") or "")
    assert page.locator(".topo-node-row").count() == 3
    good = tmp_path / "two.json"
    good.write_text(json.dumps({"nodes": [{"name": "p", "type": "PUSH"}, {"name": "q", "type": "PULL"}],
                                "links": [{"connect": "q", "bind": "p"}]}), encoding="utf-8")
    page.set_input_files(".topo-editor input[type=file]", str(good))
    page.wait_for_selector(".topo-node-row[data-node='q']")
    assert page.eval_on_selector_all(".topo-node-row", "els => els.map(e => e.dataset.node)") == ["p", "q"]

    # A topology the server refuses (PUSH to PUSH): its 422 names the link, shown in the box.
    page.problems.expected.append("422")
    page.select_option(".topo-node-row[data-node='q'] select >> nth=0", "PUSH")
    page.click("#start-topology")
    page.wait_for_selector(".topology-setup .error:not([hidden])")
    assert re.search(r"PUSH", page.text_content(".topology-setup .error") or "")


def test_real_mode_with_a_libzmq_worker(page: Any, live_server: LiveServer) -> None:
    """The load-balancing preset edited in the page to run over real TCP with w2 a libzmq PULL (pyzmq): the page
    shows the same round robin as the simulation, w2's tasks received by libzmq itself."""
    page.goto(f"{live_server.base}/index.html")
    page.wait_for_selector("#preset-menu option[value='load-balancing']", state="attached")
    page.select_option("#preset-menu", "load-balancing")
    page.select_option(".topology-setup select[aria-label='Peers']", "tcp")
    page.locator(".topo-editor summary").click()
    page.click("#edit-preset")
    libzmq = page.locator(".topo-node-row[data-node='w2'] input[data-option='libzmq']")
    assert libzmq.is_visible(), "real TCP: each node may be libzmq"
    libzmq.check()
    page.click("#start-topology")
    page.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='w2']")
    wait_for(page, "(d) => ['w1','w2','w3'].every((w) => d.count[w] === 2)")
    d = diagram(page)
    assert d["got"] == {"vent": [], "w1": ["task 1", "task 4"], "w2": ["task 2", "task 5"], "w3": ["task 3", "task 6"]}
    assert d["nodes"]["w2"]["text"] == "w2PULL · libzmqgot 2", "the diagram says which node is libzmq"
    assert "libzmq" not in d["nodes"]["w1"]["text"]


def test_a_manual_node_reads_one_message_per_click(page: Any, live_server: LiveServer) -> None:
    """A node whose recv is 'manual' has a "read one" button (and only it): each click reads the next message
    waiting in its socket (the websocket's recv command), in order; the PUSH's messages wait until then."""

    topo = {"mode": "simulated", "nodes": [{"name": "vent", "type": "PUSH"},
                                           {"name": "sink", "type": "PULL", "recv": "manual"}],
            "links": [{"connect": "sink", "bind": "vent"}],
            "script": [{"from": "vent", "frames": [text], "at": 0.05 * i}
                       for i, text in enumerate(("first", "second"), 1)]}
    fragment = base64.urlsafe_b64encode(json.dumps(topo).encode()).decode().rstrip("=")
    page.goto(f"{live_server.base}/index.html#topology={fragment}")
    page.wait_for_selector(".topo-node-row[data-node='sink']")
    page.click("#start-topology")
    page.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='sink']")
    page.evaluate(SPEED_16_JS)
    page.wait_for_function("() => [...document.querySelectorAll('#sequence .what-message, #sequence [class*=message]')]"
                           ".some((r) => /second/.test(r.textContent))")
    assert page.locator("#topology .topo-got-row[data-node='vent'] .topo-read").count() == 0
    button = page.locator("#topology .topo-got-row[data-node='sink'] .topo-read")
    assert button.text_content() == "read one"
    assert diagram(page)["count"]["sink"] == 0, "a manual node reads nothing by itself"
    button.click()
    wait_for(page, "(d) => d.count.sink === 1")
    button.click()
    wait_for(page, "(d) => d.count.sink === 2")
    assert diagram(page)["got"]["sink"] == ["first", "second"]
