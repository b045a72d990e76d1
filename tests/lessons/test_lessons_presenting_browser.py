"""Issue 16 item 12, presenting a lesson in real Chromium: the "open a lesson" hint goes once a lesson is open, and
at 1280x720 (a projector) the Octets and Explanation panes keep room for their content, with Large text too.
Screenshots go to test-artifacts/lessons/."""

from __future__ import annotations

from typing import Any

import pytest
from test_lessons_browser import at_step, browser, open_page  # noqa: F401 (browser: the module's Chromium)

from testkit import settle

pytestmark = pytest.mark.browser

HINT = "Open a lesson: your students will see what you show."

PANES_JS = """() => {
  const box = (sel) => { const el = document.querySelector(sel); if (!el) return null;
    const r = el.getBoundingClientRect(); return { top: r.top, bottom: r.bottom, height: r.height }; };
  const body = (sel) => { const el = document.querySelector(sel + ' .panel-body') || document.querySelector(sel);
    return { height: el.getBoundingClientRect().height, client: el.clientHeight, scroll: el.scrollHeight }; };
  // Labels cut off: a field label whose text is wider than its box (and not meant to scroll).
  const cut = [...document.querySelectorAll('#octets .oct-name, .lesson-panel button, .step-counter,'
    + ' #sequence .seq-label, #sequence .lifeline-head')]
    .filter((el) => el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflow.includes('hidden'))
    .map((el) => el.textContent);
  return { octets: box('#octets'), explain: box('#explain'), tree: box('#tree'), octetsBody: body('#octets'),
           explainBody: body('#explain'), cut, viewport: innerHeight };
}"""


def panes(page: Any) -> dict[str, Any]:
    return page.evaluate(PANES_JS)


def roomy(p: dict[str, Any], octets_min: float, explain_min: float) -> None:
    """The Octets and Explanation panes are open and tall enough (not collapsed to their headers)."""
    assert p["octets"]["height"] >= octets_min, p
    assert p["explain"]["height"] >= explain_min, p
    assert p["octetsBody"]["client"] >= 0.6 * octets_min, p
    assert p["explainBody"]["client"] >= 0.5 * explain_min, p
    assert p["tree"]["height"] >= 40, p  # the details tree keeps a few lines too


def test_presenting_at_projector_sizes(browser, live_server, artifacts):  # noqa: F811 (the fixture)
    errors: list[str] = []
    ctx, page = open_page(browser, errors)
    try:
        page.set_viewport_size({"width": 1280, "height": 720})
        page.goto(f"{live_server.base}/lessons.html")
        page.wait_for_selector("#present-button")
        page.click("#present-button")
        page.wait_for_selector("#join-code")
        page.wait_for_selector(f"#status:text-is('{HINT}')")
        # The teacher opens a lesson: the hint has done its job and goes at once.
        page.locator("#lesson-list button", has_text="greeting").first.click()
        at_step(page, 1, 9)
        page.wait_for_selector("#status", state="hidden", timeout=2_000)

        page.wait_for_selector("#octets .octets-title")
        settle(page)
        p = panes(page)
        page.screenshot(path=str(artifacts / "present-1280x720.png"))
        roomy(p, octets_min=200, explain_min=110)
        assert p["cut"] == [], p["cut"]

        page.click("#large-toggle")
        page.wait_for_selector("html.large")
        settle(page)
        p = panes(page)
        page.screenshot(path=str(artifacts / "present-1280x720-large.png"))
        roomy(p, octets_min=180, explain_min=110)
        assert p["cut"] == [], p["cut"]

        page.set_viewport_size({"width": 1500, "height": 950})
        settle(page)
        p = panes(page)
        page.screenshot(path=str(artifacts / "present-1500x950-large.png"))
        roomy(p, octets_min=220, explain_min=120)
        page.click("#large-toggle")
        settle(page)
        page.screenshot(path=str(artifacts / "present-1500x950.png"))
        roomy(panes(page), octets_min=200, explain_min=110)
    finally:
        ctx.close()
    assert not errors, errors
