"""axe-core (from npm, `make test` installs it) on every page and state: no critical or serious violation.

States: the playground empty, with a session running and an element open, and its Paste hex tab decoded;
the capture viewer empty, with a capture open (Elements and Overview) and its Live tab; the lessons list,
a lesson step, presenting; the corpus page; a topology session (a preset from the menu, a message picked);
the playground in zh-CN and in the projector view; the capture viewer's illustrated export with a range
typed in. A new violation of those two impacts fails the test with axe's own description of it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit import VIEWPORT

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
FAILING = ("critical", "serious")


@pytest.fixture
def a11y_page(browser: Any) -> Iterator[Any]:
    """A page whose CSP lets the test inject axe (the app's own CSP allows only its own scripts)."""
    assert AXE.exists(), f"{AXE} is missing: `make test` installs it (npm ci)"
    context = browser.new_context(viewport=VIEWPORT, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        yield page
    finally:
        context.close()


def audit(page: Any) -> list[str]:
    """axe's critical and serious violations on the page as it stands, one line each."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [f"{v['impact']} {v['id']}: {v['help']} ({len(v['nodes'])}x, e.g. {v['nodes'][0]['target']}: "
            f"{v['nodes'][0]['failureSummary'][:200]})"
            for v in result["violations"] if v["impact"] in FAILING]


def playground_empty(page: Any, base: str, sample: Callable) -> None:
    page.goto(f"{base}/index.html")
    page.wait_for_selector("button:text-is('Start session')")


def playground_session(page: Any, base: str, sample: Callable) -> None:
    page.goto(f"{base}/index.html")
    page.click("button:text-is('Start session')")
    page.click("#player button:text-is('▶ Play')")
    page.wait_for_selector("#sequence .seq-row:has-text('READY')")
    page.locator("#sequence .seq-row").first.click()
    page.wait_for_selector("#octets .oct-box")


def playground_paste(page: Any, base: str, sample: Callable) -> None:
    page.goto(f"{base}/index.html")
    page.click("#tab-paste")
    page.click("#pane-paste button:text-is('Example')")
    page.click("#pane-paste button:text-is('Decode')")
    page.wait_for_selector("#pane-paste .seq-row, #sequence .seq-row")


def capture_empty(page: Any, base: str, sample: Callable) -> None:
    page.goto(f"{base}/capture.html")
    page.wait_for_selector("#capture-file", state="attached")


def capture_open(page: Any, base: str, sample: Callable) -> None:
    page.goto(f"{base}/capture.html")
    page.set_input_files("#capture-file", str(sample("dealer_router.pcapng")))
    page.wait_for_selector("#sequence .seq-row:not(.loading)", timeout=30_000)
    page.locator("#sequence .seq-row").nth(2).click()
    page.wait_for_selector("#octets .oct-box")


def capture_overview(page: Any, base: str, sample: Callable) -> None:
    capture_open(page, base, sample)
    page.get_by_role("tab", name="Overview").click()
    page.wait_for_selector("#overview svg.topology")


def capture_live(page: Any, base: str, sample: Callable) -> None:
    page.goto(f"{base}/capture.html")
    page.get_by_role("tab", name="Live").click()
    page.wait_for_selector("#live-interface option", state="attached")


def lessons_list(page: Any, base: str, sample: Callable) -> None:
    page.goto(f"{base}/lessons.html")
    page.wait_for_selector("text=The greeting")


def lesson_step(page: Any, base: str, sample: Callable) -> None:
    page.goto(f"{base}/lessons.html?lesson=greeting&step=3")
    page.wait_for_selector("#octets .oct-box")


def lesson_presenting(page: Any, base: str, sample: Callable) -> None:
    lesson_step(page, base, sample)
    page.click("#present-button")
    page.wait_for_selector("#join-code:not(:empty)")


def corpus(page: Any, base: str, sample: Callable) -> None:
    page.goto(f"{base}/corpus.html")
    page.wait_for_selector("#start-run")


def topology_session(page: Any, base: str, sample: Callable) -> None:
    """The load-balancing preset from the menu, played: the diagram, its queues and N lifelines."""
    page.goto(f"{base}/index.html")
    page.wait_for_selector("#preset-menu option[value='load-balancing']", state="attached")
    page.select_option("#preset-menu", "load-balancing")
    page.click("#start-preset")
    page.wait_for_selector("#topology:not([hidden]) .topo-node")
    page.wait_for_selector("#topology .topo-msg")
    page.locator("#topology .topo-msg").first.click()
    page.wait_for_selector("#sequence .seq-row.on-path")


def playground_chinese(page: Any, base: str, sample: Callable) -> None:
    """The playground in zh-CN with a session and an element open."""
    page.goto(f"{base}/index.html?lang=zh-CN")
    page.wait_for_function("() => document.documentElement.lang === 'zh-CN'")
    page.click("button:text-is('开始会话')")
    page.click("#player button:text-is('▶ 播放')")
    page.wait_for_selector("#sequence .seq-row:has-text('READY')")
    page.locator("#sequence .seq-row:has-text('READY')").first.click()
    page.wait_for_selector("#octets .oct-box")


def playground_projector(page: Any, base: str, sample: Callable) -> None:
    """The projector view (?projector=1) of a session (the view hides the session form: made by the API)."""
    body = {"mode": "simulated", "server": {"type": "ROUTER"}, "client": {"type": "DEALER", "identity": "client-1"}}
    session_id = page.request.post(f"{base}/api/sessions", data=body).json()["id"]
    page.goto(f"{base}/index.html?session={session_id}&projector=1")
    page.wait_for_selector("html.projector", state="attached")
    page.wait_for_function("() => document.querySelectorAll('#sequence .seq-row').length >= 4")
    page.locator("#sequence .seq-row").nth(3).click()
    page.wait_for_selector("#octets .oct-box")


def capture_export(page: Any, base: str, sample: Callable) -> None:
    """The capture viewer's illustrated export: a range of elements typed in, the link focused."""
    capture_open(page, base, sample)
    page.wait_for_selector(".illustrated-export:not([hidden])")
    page.locator(".illustrated-index").first.fill("2")
    page.locator(".illustrated-index").nth(1).fill("5")
    page.locator(".illustrated-export a").focus()


STATES = [playground_empty, playground_session, playground_paste, capture_empty, capture_open, capture_overview,
          capture_live, lessons_list, lesson_step, lesson_presenting, corpus, topology_session, playground_chinese,
          playground_projector, capture_export]


@pytest.mark.parametrize("state", STATES, ids=[s.__name__ for s in STATES])
def test_no_serious_violation(a11y_page: Any, live_server: Any, sample: Callable, state: Callable) -> None:
    state(a11y_page, live_server.base, sample)
    assert audit(a11y_page) == []
