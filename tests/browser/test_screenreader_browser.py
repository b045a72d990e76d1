"""What a screen reader reads (issue 23.3), from Chromium's accessibility tree (Playwright's aria snapshots):
the octet table as one list of fields (name, value, octets) named after the element, the sequence as a
listbox whose rows say number, element, direction, size and time with the selected one marked, and the
topology diagram's nodes and links by name, with their queues; in English and in Chinese."""

# ruff: noqa: RUF001  (the Chinese texts use full-width punctuation, as Chinese does)
from __future__ import annotations

import re
from typing import Any

import pytest
from test_playground_browser import select_row

pytestmark = pytest.mark.browser

SPEED_MAX_JS = """() => { const r = document.querySelector('#player input[type=range]');
  r.value = String(r.max); r.dispatchEvent(new Event('input')); r.dispatchEvent(new Event('change')); }"""


def ax_nodes(page: Any) -> list[dict[str, str]]:
    """Chromium's accessibility tree as the DevTools protocol gives it: each node's role, name and description."""
    cdp = page.context.new_cdp_session(page)
    try:
        tree = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    value = lambda node, key: str((node.get(key) or {}).get("value", ""))  # noqa: E731
    return [{"role": value(n, "role"), "name": value(n, "name"), "description": value(n, "description")}
            for n in tree if not n.get("ignored")]


def session_with_ready(page: Any, base: str, query: str = "") -> None:
    """A NULL session played to its end, its server's READY selected."""
    page.goto(f"{base}/index.html{query}")
    page.click("#session-form button[type=submit], button:text-is('Start session'), button:text-is('开始会话')")
    page.click("#player button.primary, #player button:text-is('▶ Play')")
    page.wait_for_function("() => document.querySelectorAll('#sequence .seq-row').length >= 4")  # both READYs
    select_row(page, "READY")  # (and its fields fetched: until then the table lists the element's octets as one)


def test_octet_table_and_sequence_have_text_alternatives(page: Any, live_server: Any) -> None:
    session_with_ready(page, live_server.base)
    octets = page.locator("#octets").aria_snapshot()
    # The fields in order, each with its name, value and octets; the drawn tables are not read cell by cell.
    assert 'list "Octet table of READY (s2c, 28 octets at 64), field by field"' in octets, octets
    items = re.findall(r'- listitem: "?(.*?)"?$', octets, re.M)
    assert items == ["flags: 0x04 (COMMAND), offset 0", "size: 26, offset 1", "name-size: 5, offset 2",
                     "command-name: READY, offsets 3 - 7", "name-size: 11, offset 8",
                     "property-name: Socket-Type, offsets 9 - 19", "value-size: 4, offsets 20 - 23",
                     "property-value: PUSH, offsets 24 - 27"], octets
    assert "cell" not in octets and "table" not in octets.replace("Octet table", ""), octets

    seq = page.locator("#sequence").aria_snapshot()
    assert 'listbox "Protocol elements"' in seq, seq
    options = re.findall(r'- option "(.*?)"( \[selected\])?', seq)
    assert len(options) == 4, seq
    row = re.compile(r"^(\d)\. (Greeting 3\.1 NULL|READY Socket-Type=(PUSH|PULL)) ?, "
                     r"(client|server) .* to (client|server) .*, (64|28) octets, t \d\.\d{6} s$")
    assert all(row.match(name) for name, _ in options), options
    assert [n.split(".")[0] for n, _ in options] == ["1", "2", "3", "4"]
    assert [sel for _, sel in options] == ["", "", " [selected]", ""], "the selected row, and only it, is marked"
    assert re.match(r"3\. READY Socket-Type=PUSH ?, server PUSH .* to client PULL .*, 28 octets", options[2][0])
    # The arrows move the selection; the listbox (which keeps the focus) points at the newly selected row.
    page.focus("#sequence .seq-viewport")
    page.keyboard.press("ArrowDown")
    page.wait_for_selector("#sequence .seq-row[aria-selected='true'][data-index='3']")
    active = page.get_attribute("#sequence .seq-viewport", "aria-activedescendant")
    assert active and page.get_attribute(f"#{active}", "data-index") == "3"
    spoken = page.locator(f"#{active}").aria_snapshot()
    assert re.match(r'- option "4\. READY Socket-Type=PULL ?, client .*" \[selected\]', spoken), spoken
    assert page.get_attribute(f"#{active}", "aria-setsize") == "4"


def test_in_chinese(page: Any, live_server: Any) -> None:
    session_with_ready(page, live_server.base, "?lang=zh-CN")
    octets = page.locator("#octets").aria_snapshot()
    assert "的字节表，逐个字段列出" in octets and "command-name：READY，偏移量 3 - 7" in octets, octets
    seq = page.locator("#sequence").aria_snapshot()
    spoken = r'option "3\. READY Socket-Type=PUSH ?，从 服务器 .* 到 客户端 .*，28 字节，时间 \d\.\d{6} 秒"'
    spoken += r" \[selected\]"
    assert re.search(spoken, seq), seq


def test_topology_nodes_and_links_have_names(page: Any, live_server: Any) -> None:
    page.goto(f"{live_server.base}/index.html")
    page.wait_for_selector("#preset-menu option[value='load-balancing']", state="attached")
    page.select_option("#preset-menu", "load-balancing")
    page.click("#start-preset")
    page.wait_for_selector("#topology:not([hidden]) .topo-node")
    page.evaluate(SPEED_MAX_JS)
    if page.locator("#player button:text-is('▶ Play')").count():
        page.click("#player button:text-is('▶ Play')")
    page.wait_for_function("() => [...document.querySelectorAll('#topology .topo-node .topo-stats')]"
                           ".every((n) => /^(sent 6 · got 0|got 2)$/.test(n.textContent))")
    page.wait_for_timeout(300)  # (the figures are redrawn at most every 100 ms)
    topo = page.locator("#topology").aria_snapshot()
    assert 'group "Topology diagram (nodes: 4, links: 3)"' in topo, topo
    links = re.findall(r'img "(link from .*?)"', topo)
    assert sorted(re.sub(r"#\d+", "#N", x) for x in links) == [
        f"link from w{i} (connects) to vent (binds), connection #N" for i in (1, 2, 3)], topo
    # A node is named by the words it shows (what voice control users say to pick it) and described by whether it
    # binds or connects and by its queues: Chromium's own accessibility tree, through the DevTools protocol.
    nodes = {n["name"].split(" ")[0]: n for n in ax_nodes(page)
             if n["role"] == "button" and re.match(r"(vent|w\d) ", n["name"])}
    assert set(nodes) == {"vent", "w1", "w2", "w3"}, topo
    vent = nodes["vent"]
    assert vent["name"] == "vent PUSH sent 6 · got 0", vent
    assert vent["description"].startswith("binds; link to w"), vent
    for w in ("w1", "w2", "w3"):
        assert re.search(rf"(^|; )link to {w}: 0 of \d+ queued", vent["description"]), vent
        assert nodes[w]["name"] == f"{w} PULL got 2" and nodes[w]["description"] == "connects", nodes[w]
