"""Issue 32 in real Chromium against a real server: the playground as a teacher uses it in a lecture (a SUB
that subscribes to nothing, faults on a topology's nodes, the diagram's arrows and counts, the player's states)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_playground_teacher_browser import start, wait_mark
from test_topology_browser import SPEED_16_JS, diagram, sequence_rows, start_preset, wait_for

from testkit import LiveServer

pytestmark = pytest.mark.browser


# Both READY commands are on the wire: the handshake is done, the pipes are up.
READY_BOTH_WAYS = ("() => [...document.querySelectorAll('#sequence .seq-row')]"
                   ".filter((r) => /READY/.test(r.textContent)).length >= 2")


def add_nodes(page: Any, *kinds: str) -> None:
    page.locator(".topo-editor summary").click()
    for kind in kinds:
        page.select_option(".topo-editor > .ctl-row:has(#add-node) select", kind)
        page.click("#add-node")


def test_a_sub_left_without_a_subscription_receives_nothing_and_the_page_says_why(page: Any,
                                                                                  live_server: LiveServer) -> None:
    """The editor makes a SUB with no subscription (an empty field: as in libzmq, it receives nothing), says so
    beside it, and the PUB's decision blames the missing subscription, not the slow joiner; the box for the
    empty prefix subscribes it to every message."""
    page.goto(f"{live_server.base}/index.html")
    page.wait_for_selector("#preset-menu option", state="attached")
    add_nodes(page, "PUB", "SUB")
    page.click("#add-link")
    row = page.locator(".topo-node-row[data-node='sub-1']")
    assert row.locator(".topic-none").is_visible()
    assert "receives nothing until it subscribes" in (row.locator(".topic-none").text_content() or "")
    assert not page.locator(".topo-node-row[data-node='pub-1'] .topo-subscribe").is_visible()
    page.click("#start-topology")
    page.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='sub-1']")
    page.evaluate(SPEED_16_JS)
    page.wait_for_function(READY_BOTH_WAYS)
    page.select_option("#composer select >> nth=0", "pub-1")
    page.fill("textarea[aria-label='Frame 1']", "news")
    page.click("button:text-is('Send message')")
    page.wait_for_function("() => [...document.querySelectorAll('#sequence .seq-row')]"
                           ".some((r) => /subscribed to nothing/.test(r.textContent))")
    filtered = sequence_rows(page, "what-filter")
    assert filtered and all("slow joiner" not in r for r in filtered), filtered
    assert diagram(page)["count"]["sub-1"] == 0

    # The empty prefix, ticked: every message. (Starting a session folded the box.)
    page.click("#topology-setup > summary")
    box = row.locator("input[data-option='subscribe-every']")
    box.check()
    assert not row.locator(".topic-none").is_visible()
    page.click("#start-topology")
    page.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='sub-1']")
    page.evaluate(SPEED_16_JS)
    # (The SUBSCRIBE must reach the PUB before it sends, or the slow joiner misses the message.)
    page.wait_for_function("() => /sub-1 subscribed to ''/.test(document.querySelector('#sequence').textContent)")
    page.select_option("#composer select >> nth=0", "pub-1")
    page.fill("textarea[aria-label='Frame 1']", "news")
    page.click("button:text-is('Send message')")
    wait_for(page, "(d) => d.count['sub-1'] === 1")
    assert diagram(page)["got"]["sub-1"] == ["news"]


def test_faults_strike_a_topology_node_the_teacher_picks(page: Any, live_server: LiveServer) -> None:
    """In a topology session the fault menu's peers are its nodes and, for the node picked, its connections: a
    worker's link of the load-balancing preset closes, in the simulation, where it used to answer "node
    'server' has no such connection"."""
    start_preset(page, live_server.base, "load-balancing")
    wait_for(page, "(d) => ['w1','w2','w3'].every((w) => d.count[w] === 2)")
    page.locator("details.box", has=page.locator("summary:text-is('Inject a fault')")).locator("summary").click()
    peer = page.locator("#faults label.field", has=page.locator(".field-label:text-is('Peer')")).locator("select")
    assert peer.locator("option").evaluate_all("os => os.map(o => o.value)") == ["vent", "w1", "w2", "w3"]
    peer.select_option("w2")
    conn = page.locator("#faults label.field", has=page.locator(".field-label:text-is('Connection')")).locator("select")
    assert conn.locator("option").all_text_contents() == ["its newest open one", "#1: w2 → vent"]
    conn.select_option("1")
    page.locator("#faults select").first.select_option(label="Close the connection")
    page.click("#faults button:text-is('Inject fault')")
    assert "closes the connection" in wait_mark(page, "closes the connection")
    assert wait_mark(page, "^Connection 1 closed")
    status = page.locator("#status")
    assert not (status.is_visible() and "error" in (status.get_attribute("class") or "")), status.text_content()


EDGES_JS = """() => [...document.querySelectorAll('#topology .topo-edge:not(.proxy)')].map((e) => {
  const line = e.querySelector('line');
  return { from: e.dataset.from, to: e.dataset.to, ways: e.dataset.ways, start: line.getAttribute('marker-start'),
           end: line.getAttribute('marker-end'), ring: e.querySelectorAll('circle.topo-bind').length };
})"""


def test_arrows_go_the_way_messages_go_and_the_counts_are_honest(page: Any, live_server: LiveServer) -> None:
    """The SUBs connect to the PUB, yet the arrows point from the PUB to them (a ring marks the PUB's binding end);
    the PUB "sent 4", the four updates its application sent (eight copies crossed the wire); the broker's ends say
    what the proxy read from them rather than "got 0"; a SUB that stopped reading is not a blocked send."""
    start_preset(page, live_server.base, "pub-sub-topics")
    wait_for(page, "(d) => d.got['sub-3'].length === 4")
    edges = page.evaluate(EDGES_JS)
    assert [(e["from"], e["to"]) for e in edges] == [("sub-1", "pub"), ("sub-2", "pub"), ("sub-3", "pub")]
    assert all(e["ways"] == "back" and e["start"] == "url(#topo-arrow)" and e["end"] is None and e["ring"] == 1
               for e in edges), edges
    assert diagram(page)["nodes"]["pub"]["stats"].startswith("sent 4 ·")
    legend = page.text_content("#topology .topo-legend") or ""
    assert "the way messages go" in legend and "binds" in legend

    start_preset(page, live_server.base, "extended-reqrep")
    wait_for(page, "(d) => ['c1','c2','c3'].every((c) => d.got[c].length === 1)")
    # (the proxy's counts come with its own events, which a loaded server may send a batch later)
    wait_for(page, "(d) => ['brk-front','brk-back'].every((n) => /read 3/.test(d.nodes[n].stats))")
    edges = page.evaluate(EDGES_JS)
    assert {e["ways"] for e in edges} == {"both"}
    assert all(e["start"] and e["end"] for e in edges)
    d = diagram(page)
    for end in ("brk-front", "brk-back"):
        assert "proxy" in d["nodes"][end]["text"] and "got 0" not in d["nodes"][end]["stats"], d["nodes"][end]
        assert "read 3" in d["nodes"][end]["stats"], d["nodes"][end]
    row = page.text_content("#topology .topo-got-row[data-node='brk-front']") or ""
    assert "read by the proxy: 3" in row

    start_preset(page, live_server.base, "pub-drops")
    wait_for(page, "(d) => /not reading/.test(d.nodes['sub-slow'].badges)")
    d = diagram(page)
    assert "blocked" not in d["nodes"]["sub-slow"]["badges"] and not d["nodes"]["sub-slow"]["blocked"]


def test_the_player_says_what_it_can_do(page: Any, live_server: LiveServer) -> None:
    """Back only where it can undo something (never in real TCP, not at the start); "nothing more happens" is a
    note, not an error; a session played to its end says so rather than "playing"; a clicker's PageDown steps."""
    start(page, live_server.base, "PUSH", "PULL")
    back = page.locator("#player button:text-is('« Back')")
    page.wait_for_selector("#player .play-status:has-text('element 0 of 0')")
    assert back.is_disabled(), "nothing to step back from at t = 0"
    page.keyboard.press("PageDown")  # (a presentation clicker)
    page.wait_for_selector("#player .play-status:has-text('element 1 of')")
    assert back.is_enabled()
    page.click("#player button:text-is('▶ Play')")
    page.wait_for_selector("#player .play-status:has-text('At the end')")
    assert "primary" not in (page.get_attribute("#player button:has-text('Pause')", "class") or "")
    page.click("#player button:text-is('Step »')")
    status = page.locator("#status")
    status.wait_for(state="visible")
    assert "nothing more happens" in (status.text_content() or "")
    assert "error" not in (status.get_attribute("class") or "")

    start(page, live_server.base, "PUSH", "PULL", tcp=True, autoplay=True)
    page.wait_for_selector("#player .play-status:has-text('element 4 of')")
    assert back.is_disabled(), "a real session cannot step back"


def test_a_topology_says_which_link_the_hex_dump_follows_and_why_sends_went_nowhere(page: Any,
                                                                                    live_server: LiveServer) -> None:
    """The Follow stream pane of a topology names its connection and the nodes at its ends; a PUB that sends
    before anyone subscribed has its drop said in words under the diagram, not only counted."""
    page.goto(f"{live_server.base}/index.html")
    page.wait_for_selector("#preset-menu option", state="attached")
    add_nodes(page, "PUB", "SUB")
    page.locator(".topo-node-row[data-node='sub-1'] input[data-option='subscribe-every']").check()
    page.click("#add-link")
    page.get_by_role("checkbox", name="play at once", exact=True).uncheck()  # paused at t = 0: the PUB sends first
    page.click("#start-topology")
    page.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='sub-1']")
    page.select_option("#composer select >> nth=0", "pub-1")
    page.fill("textarea[aria-label='Frame 1']", "too early")
    page.click("button:text-is('Send message')")
    page.click("#player button:text-is('Step »')")
    note = page.locator("#topology .topo-notes li").first
    note.wait_for()
    assert "pub-1: PUB dropped 'too early': no subscriber is connected yet" in (note.text_content() or "")
    page.click("#player button:text-is('▶ Play')")
    page.wait_for_selector("#player .play-status:has-text('At the end')")
    page.locator("#sequence .seq-row", has_text="Greeting").first.click()
    page.wait_for_selector(".hex-conn:text-is('connection #0')")
    assert page.locator(".hex-panel .legend.c2s").text_content() == "sub-1 → pub-1"
    assert page.locator(".hex-panel .legend.s2c").text_content() == "pub-1 → sub-1"


PANE_JS = """() => {
  const box = (sel) => document.querySelector(sel).getBoundingClientRect();
  const slot = box('#topology');
  const parts = ['.topo-legend', '.topo-got', '.topo-got-list', '.topo-diagram svg']
    .map((sel) => [sel, box('#topology ' + sel)]);
  return { cut: parts.filter(([, b]) => b.bottom > slot.bottom + 1 || b.height === 0).map(([sel]) => sel),
           rows: [...document.querySelectorAll('#topology .topo-got-row')].length };
}"""


def test_the_topology_pane_shows_its_legend_and_who_got_what(page: Any, live_server: LiveServer,
                                                             artifacts: Any) -> None:
    """At 1500x950 the pane kept its legend and its "who got which message" rows below its bottom edge; now the
    diagram scales to the room they leave (the list scrolls within itself) and nothing of it is cut off."""
    from layoutkit import LAYOUT_JS

    start_preset(page, live_server.base, "extended-reqrep")
    wait_for(page, "(d) => ['c1','c2','c3'].every((c) => d.got[c].length === 1)")
    page.screenshot(path=str(artifacts("topology") / "pane-1500x950.png"))
    pane = page.evaluate(PANE_JS)
    assert pane["cut"] == [] and pane["rows"] == 7, pane
    assert page.evaluate(LAYOUT_JS) == []


def test_an_exported_session_loads_back_into_the_playground(page: Any, live_server: LiveServer,
                                                            tmp_path: Any) -> None:
    """A topology session's Export JSON, opened again in the playground: its elements and diagram as they were (a
    recording: the player stays off); loaded into the topology box, its topology and script come back to run."""
    start_preset(page, live_server.base, "load-balancing")
    wait_for(page, "(d) => ['w1','w2','w3'].every((w) => d.got[w].length === 2)")
    page.wait_for_selector("#player .play-status:has-text('At the end')")
    rows = page.locator("#sequence .seq-row").count()
    total = int(re.search(r"of (\d+)", page.text_content(".play-status") or "").group(1))
    with page.expect_download() as dl:
        page.click("#export-json")
    exported = tmp_path / "session.json"
    exported.write_bytes(Path(dl.value.path()).read_bytes())

    page.goto(f"{live_server.base}/index.html")
    page.wait_for_selector("#open-export", state="attached")
    page.set_input_files("#open-export", str(exported))
    page.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='w3']")
    assert f"{total} elements, as exported" in (page.text_content(".play-status") or "")
    assert page.locator("#player button:text-is('Step »')").is_disabled()
    wait_for(page, "(d) => ['w1','w2','w3'].every((w) => d.got[w].length === 2)")
    assert diagram(page)["got"]["w2"] == ["task 2", "task 5"]
    assert page.locator("#sequence .seq-row").count() == rows

    page.evaluate("() => { document.getElementById('topology-setup').open = true; }")
    page.set_input_files(".topo-editor input[type=file]", str(exported))
    page.wait_for_selector(".topo-node-row[data-node='w3']")
    page.click("#start-topology")
    page.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='w3']")
    page.evaluate(SPEED_16_JS)
    wait_for(page, "(d) => ['w1','w2','w3'].every((w) => d.got[w].length === 2)")


def test_the_glossary_is_a_click_away_in_both_languages(page: Any, live_server: LiveServer) -> None:
    page.goto(f"{live_server.base}/lessons.html?lang=zh-CN")
    page.locator("header.topbar nav a", has_text="术语表").click()
    page.wait_for_selector("#glossary-terms tr")
    assert page.locator("#glossary-terms tr").count() > 50
    page.fill("#glossary-filter", "偏移量")
    page.wait_for_function("() => document.querySelectorAll('#glossary-terms tr').length === 1")
    assert page.locator("#glossary-terms tr td").all_text_contents()[:2] == ["offset", "偏移量"]
    assert page.text_content("h1") == "术语表\uff1a英文与简体中文"
