"""The capture viewer's Overview tab in Chromium: the topology of a broker capture, a flow drawn across the
broker, and a finding whose cited event opens in the Elements view."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser


def open_capture(page: Any, live_server: Any, path: Any) -> None:
    page.goto(f"{live_server.base}/capture.html")
    page.set_input_files("#capture-file", str(path))
    page.wait_for_selector(f"#capture-title:text-is('{path.name}')", timeout=30_000)
    page.wait_for_selector("#sequence .seq-row:not(.loading)")


def test_broker_topology_and_a_flow_through_it(page, live_server, artifacts, sample):
    out = artifacts("capture-overview")
    open_capture(page, live_server, sample("broker.pcapng"))
    assert page.locator("#overview").is_hidden()
    page.click("#view-overview")
    page.wait_for_selector("#overview svg.topology")
    assert page.locator("#workbench").is_hidden() and page.locator("#connections").is_hidden()
    assert "view=overview" in page.url
    nodes = page.locator("#overview g.node")
    assert nodes.count() == 6
    broker = page.locator("#overview g.node.broker")
    assert broker.count() == 1
    assert broker.locator(".node-types").text_content() == "ROUTER / DEALER (broker)"
    assert broker.locator(".node-label").text_content() == "127.0.0.1:15643+15644"
    assert page.locator("#overview g.edge").count() == 5
    assert page.locator("#overview .overview-findings").inner_text().count("No findings") == 1
    flows = page.locator("#overview .flow-row")
    assert flows.count() == 12
    assert "request c-0.0" in flows.first.inner_text() and "added [c-0]" in flows.first.inner_text()
    flows.first.click()
    lit = page.locator("#overview g.edge.on")
    assert lit.count() == 2
    labels = lit.locator(".edge-label").all_text_contents()
    assert sorted(label.split(".")[0] for label in labels) == ["1", "2"]  # the path's order on the graph
    assert any("REQ → ROUTER" in label for label in labels) and any("REP → DEALER" in label for label in labels)
    page.screenshot(path=str(out / "broker-1500.png"))
    page.set_viewport_size({"width": 1280, "height": 720})
    page.screenshot(path=str(out / "broker-1280.png"))
    # The overview is part of the link: a reload comes back to it.
    page.reload()
    page.wait_for_selector("#overview svg.topology")
    assert page.locator("#view-overview").get_attribute("aria-selected") == "true"


def test_a_finding_opens_the_event_it_cites(page, live_server, artifacts, sample):
    out = artifacts("capture-overview")
    open_capture(page, live_server, sample("pub_late_sub.pcapng"))
    page.click("#view-overview")
    finding = page.locator("#overview .finding")
    finding.first.wait_for()
    assert finding.count() == 1
    text = finding.inner_text()
    assert "late-subscriber" in text and "10 matching message(s) on connection 0" in text
    assert page.locator("#overview g.edge.sev-warn").count() == 2
    page.screenshot(path=str(out / "late-subscriber.png"))
    finding.locator(".event-link").first.click()
    page.wait_for_selector("#workbench:not([hidden])")
    assert page.locator("#view-elements").get_attribute("aria-selected") == "true"
    page.wait_for_selector("#sequence .seq-row.selected")
    assert "SUBSCRIBE" in page.locator("#sequence .seq-row.selected").inner_text()
    assert "conn=1" in page.url


def test_curve_check_with_the_server_key(page, live_server, artifacts, sample):
    """The CURVE doctor from the page: the key typed once, the wrong-key finding shown, the field cleared."""
    import json

    secret = json.loads(sample("curve.keys.json").read_text())["server"]["secret"]
    open_capture(page, live_server, sample("curve_wrong_key.pcapng"))
    page.click("#view-overview")
    form = page.locator("#overview .curve-form")
    form.wait_for()
    assert "CURVE check (1 connection)" in form.inner_text()
    field = form.locator("input[type='password']")
    field.fill(secret)
    form.locator("button").click()
    page.wait_for_selector("#overview .curve-result p")
    assert "Connection 0: HELLO does not open" in page.locator("#overview .curve-result").inner_text()
    assert field.input_value() == ""
    rules = page.locator("#overview .finding .finding-rule").all_text_contents()
    assert rules[0] == "curve-wrong-server-key" and "handshake-incomplete" in rules
    page.screenshot(path=str(artifacts("capture-overview") / "curve-check.png"))


def test_recorded_incidents_in_the_overview(page, live_server, artifacts, sample):
    """A server restart: its refused reconnects under the graph and as a finding; a broker whose REQ clients ask
    the same thing at once: every request and reply path certain, none ambiguous; a PUSH whose worker left:
    the skew and its reason, in English and in Chinese."""
    out = artifacts("capture-overview")
    incidents = sample("broker.pcapng").parent / "incidents"
    try:
        open_capture(page, live_server, incidents / "server_restart.pcapng")
        page.click("#view-overview")
        page.wait_for_selector("#overview svg.topology")
        refused = page.locator("#overview .overview-refused")
        assert refused.count() == 1
        assert "3 refused connect(s) to 127.0.0.1:15708 (SYN answered by RST)" in refused.inner_text()
        finding = page.locator("#overview .finding")
        assert finding.count() == 1 and "refused-connects" in finding.inner_text()
        assert "the server was down and came back" in finding.inner_text()
        page.screenshot(path=str(out / "server-restart.png"))
        open_capture(page, live_server, incidents / "broker_anonymous.pcapng")
        page.click("#view-overview")
        page.wait_for_selector("#overview .flow-row")
        flows = page.locator("#overview .flow-row")
        assert flows.count() == 24
        assert page.locator("#overview .flow-row .sev-badge").count() == 0  # nothing ambiguous
        assert page.locator("#overview g.node.broker .node-label").text_content() == "127.0.0.1:15700+15701"
        page.screenshot(path=str(out / "broker-anonymous.png"))
        # A worker that left: round robin's shares explained by its close, in the page's other language too.
        open_capture(page, live_server, incidents / "push_worker_leaves.pcapng")
        page.click("#view-overview")
        finding = page.locator("#overview .finding")
        finding.first.wait_for()
        assert finding.count() == 1 and "round-robin-skew" in finding.inner_text()
        assert "(0: 25, 1: 25, 2: 10); connection 2 closed while 30 more were sent" in finding.inner_text()
        page.select_option("#lang-switch", "zh-CN")
        page.wait_for_selector("#overview .finding:has-text('轮询把它们分给了其他连接')")
        assert "连接 2 关闭之后又发送了 30 条消息" in page.locator("#overview .finding").inner_text()
        page.screenshot(path=str(out / "push-worker-leaves-zh-CN.png"))
        page.select_option("#lang-switch", "en")
    finally:  # (the browser tests share one server and its per-address capture limit)
        for capture in page.request.get(f"{live_server.base}/api/corpus/captures").json()["captures"]:
            if capture["name"] in ("server_restart.pcapng", "broker_anonymous.pcapng", "push_worker_leaves.pcapng"):
                page.request.delete(f"{live_server.base}/api/captures/{capture['id']}")
