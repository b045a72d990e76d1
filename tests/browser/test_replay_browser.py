"""Open in playground (issue 35) in Chromium: a capture's Overview opens the playground on the capture replayed as
a topology session; one change re-runs it and the difference shows beside the diagram, in English and Chinese."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser


def open_overview(page: Any, live_server: Any, path: Any) -> None:
    page.goto(f"{live_server.base}/capture.html")
    page.set_input_files("#capture-file", str(path))
    page.wait_for_selector(f"#capture-title:text-is('{path.name}')", timeout=30_000)
    page.wait_for_selector("#sequence .seq-row:not(.loading)")
    page.click("#view-overview")
    page.wait_for_selector("#overview svg.topology")


def test_open_a_late_joiner_in_the_playground_and_connect_it_first(page, live_server, artifacts, sample):
    out = artifacts("replay")
    open_overview(page, live_server, sample("pub_late_sub.pcapng"))
    link = page.locator("#open-playground")
    link.wait_for()
    assert link.inner_text() == "Open in playground"
    page.screenshot(path=str(out / "overview-open-in-playground.png"))
    link.click()
    page.wait_for_url("**/index.html?replay=*")
    page.wait_for_selector("#replay-box .replay-fidelity", timeout=30_000)
    fidelity = page.locator("#replay-box .replay-fidelity").inner_text()
    assert fidelity == "Fidelity: 2 of 2 directions replay as captured."
    # The replay is a normal topology session: its diagram, its nodes, its controls.
    page.wait_for_selector("#topology svg text:text-is('sub2')", timeout=30_000)
    for name in ("pub", "sub1", "sub2"):
        assert page.locator("#topology svg text", has_text=name).count() >= 1, name
    assert "session=" in page.url and "replay=" in page.url
    lesson = page.locator("#replay-box .replay-lesson")
    assert "/lesson.yaml" in (lesson.get_attribute("href") or "")
    first_session = page.url.split("session=")[1].split("&")[0]
    # Change one thing: the late SUB connects at the start.
    page.select_option("#replay-box .replay-node", "sub2")
    page.select_option("#replay-box .replay-option", "connect_at")
    page.fill("#replay-box .replay-value", "0")
    page.click("#replay-box .replay-add")
    assert page.locator("#replay-box .replay-changes").inner_text().startswith("sub2.connect_at=0")
    page.click("#replay-box .replay-rerun")
    summary = page.locator("#replay-box .replay-summary")
    summary.wait_for(timeout=30_000)
    assert summary.inner_text().splitlines() == ["sub2 receives 15 of 15 messages instead of 5",
                                                 "finding goes: late-subscriber"]
    rows = page.locator("#replay-box .replay-counts tr")
    assert rows.nth(1).inner_text().split() == ["sub2", "5", "15"]
    page.wait_for_function(f"() => !location.search.includes('session={first_session}')")  # a new session
    page.click("#player button:text-is('▶ Play')")  # (it plays as any topology session does)
    page.wait_for_selector("#player button:text-is('❚❚ Pause')")
    page.screenshot(path=str(out / "playground-replay-diff.png"))
    # The same in Chinese: the server's sentences come again in the page's language.
    page.select_option("#lang-switch", "zh-CN")
    page.wait_for_function("() => document.querySelector('#replay-box .replay-summary')?.textContent.includes('收到')",
                           timeout=30_000)
    assert page.locator("#replay-box summary").inner_text() == "抓包回放"
    assert "sub2 收到 15 条消息中的 15 条，而不是 5 条" in page.locator("#replay-box .replay-summary").inner_text()  # noqa: RUF001
    page.screenshot(path=str(out / "playground-replay-diff-zh.png"))


def test_a_late_worker_behind_the_broker_and_a_curve_capture_in_both_languages(page, live_server, artifacts, sample):
    """Issue 35's second round: with a worker connected late, the replies follow their requests through the broker
    (the other worker answers all six); a CURVE capture opens as NULL and says so, in English and Chinese."""
    out = artifacts("replay")
    open_overview(page, live_server, sample("broker.pcapng"))
    page.click("#open-playground")
    page.wait_for_selector("#replay-box .replay-fidelity", timeout=30_000)
    assert page.locator("#replay-box .replay-fidelity").inner_text() == ("Fidelity: 10 of 10 directions replay as "
                                                                         "captured.")
    page.wait_for_selector("#topology svg text:text-is('rep2')", timeout=30_000)
    page.select_option("#replay-box .replay-node", "rep2")
    page.select_option("#replay-box .replay-option", "connect_at")
    page.fill("#replay-box .replay-value", "5")
    page.click("#replay-box .replay-add")
    page.click("#replay-box .replay-rerun")
    summary = page.locator("#replay-box .replay-summary")
    summary.wait_for(timeout=30_000)
    assert "rep1 receives 6 of 6 messages instead of 3" in summary.inner_text().splitlines()
    page.click("#player button:text-is('▶ Play')")
    page.wait_for_selector("#player button:text-is('❚❚ Pause')")
    # The session answers as the replay said: the last client's second reply comes back through the broker.
    page.wait_for_selector(".topo-got-row[data-node='req3']:has-text('reply c-2.1')", timeout=60_000)
    for i in range(3):
        got = page.locator(f".topo-got-row[data-node='req{i + 1}']").inner_text()
        assert f"reply c-{i}.0" in got and f"reply c-{i}.1" in got
    page.screenshot(path=str(out / "playground-replay-broker-late-worker.png"))
    page.select_option("#lang-switch", "zh-CN")
    page.wait_for_function("() => document.querySelector('#replay-box .replay-summary')?.textContent.includes('收到')",
                           timeout=30_000)
    assert "rep1 收到 6 条消息中的 6 条，而不是 3 条" in summary.inner_text()  # noqa: RUF001
    page.screenshot(path=str(out / "playground-replay-broker-late-worker-zh.png"))
    page.select_option("#lang-switch", "en")

    open_overview(page, live_server, sample("curve.pcapng"))
    page.click("#open-playground")
    page.wait_for_selector("#replay-box .replay-notes", timeout=30_000)
    notes = page.locator("#replay-box .replay-notes").inner_text()
    assert "CURVE connections without their session keys are replayed as NULL" in notes
    assert "REQ and REP" in notes
    page.wait_for_selector("#topology svg text:text-is('req')", timeout=30_000)
    page.screenshot(path=str(out / "playground-replay-curve.png"))
    page.select_option("#lang-switch", "zh-CN")
    page.wait_for_function("() => document.querySelector('#replay-box .replay-notes')?.textContent.includes('按 NULL')",
                           timeout=30_000)
    page.screenshot(path=str(out / "playground-replay-curve-zh.png"))
