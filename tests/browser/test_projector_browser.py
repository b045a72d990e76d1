"""Projector sizes (issue 23.4): at 1280x720 and 1024x768 with large text, and in the projector view, no pane
of the playground, the capture viewer or a lesson clips, runs past its edge or overlaps another; the projector
view hides what only the teacher needs and gives the octet table and the sequence the room."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from layoutkit import LAYOUT_JS

pytestmark = pytest.mark.browser

SIZES = [(1280, 720), (1024, 768)]
SIZES_JS = """() => {
  const octets = document.querySelector('#octets').getBoundingClientRect();
  return {octets: octets.width * octets.height, row: document.querySelector('#sequence .seq-row').offsetHeight,
          seqWidth: document.querySelector('#sequence').getBoundingClientRect().width};
}"""


def open_session(page: Any, base: str, projector: bool) -> None:
    body = {"mode": "simulated", "server": {"type": "ROUTER"}, "client": {"type": "DEALER", "identity": "client-1"}}
    session_id = page.request.post(f"{base}/api/sessions", data=body).json()["id"]
    page.goto(f"{base}/index.html?session={session_id}" + ("&projector=1" if projector else ""))
    page.wait_for_function("() => document.querySelectorAll('#sequence .seq-row').length >= 4", timeout=20_000)
    page.locator("#sequence .seq-row").nth(3).click()
    page.wait_for_selector("#octets .oct-box")


def open_capture(page: Any, base: str, projector: bool, sample: Callable) -> None:
    page.goto(f"{base}/capture.html" + ("?projector=1" if projector else ""))
    page.set_input_files("#capture-file", str(sample("dealer_router.pcapng")))
    page.wait_for_selector("#sequence .seq-row:not(.loading)", timeout=30_000)
    page.locator("#sequence .seq-row").nth(3).click()
    page.wait_for_selector("#octets .oct-box")


def open_lesson(page: Any, base: str, projector: bool) -> None:
    page.goto(f"{base}/lessons.html?lesson=greeting&step=3" + ("&projector=1" if projector else ""))
    page.wait_for_selector("#octets .oct-box")


@pytest.mark.parametrize("projector", [False, True], ids=["large", "projector"])
@pytest.mark.parametrize(("width", "height"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_no_pane_clips_or_overlaps(browser: Any, live_server: Any, sample: Callable, artifacts: Any,
                                   width: int, height: int, projector: bool) -> None:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.add_init_script("localStorage.setItem('zmtplab.large', '1')")
    shots = artifacts("projector")
    view = "projector" if projector else "large"
    try:
        for name, show in (("playground", lambda: open_session(page, live_server.base, projector)),
                           ("capture", lambda: open_capture(page, live_server.base, projector, sample)),
                           ("lesson", lambda: open_lesson(page, live_server.base, projector))):
            show()
            page.wait_for_timeout(300)  # (the views settle on their size)
            assert page.evaluate("() => document.documentElement.classList.contains('large')")
            assert page.evaluate("() => document.documentElement.classList.contains('projector')") == projector
            page.screenshot(path=str(shots / f"{name}-{width}x{height}-{view}.png"))
            assert page.evaluate(LAYOUT_JS) == [], f"{name} at {width}x{height} ({view})"
    finally:
        context.close()


def test_the_projector_view_hides_the_teachers_controls_and_enlarges_the_octets(browser: Any, live_server: Any) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    base = live_server.base
    try:
        open_session(page, base, projector=False)
        normal = page.evaluate(SIZES_JS)
        assert page.locator("#composer").is_visible() and page.locator("#session-setup").is_visible()
        page.click("#projector-toggle")
        assert page.get_attribute("#projector-toggle", "aria-pressed") == "true"
        page.wait_for_timeout(300)
        for hidden in ("#composer", "#faults", "#session-setup", ".shortcuts", "#expert"):
            assert not page.locator(hidden).is_visible(), hidden
        assert page.locator("#player button:text-is('Step »')").is_visible()  # the teacher still steps
        bigger = page.evaluate(SIZES_JS)
        # The octet table's pane twice the area; the sequence's rows a third taller, and as wide or wider.
        assert bigger["octets"] > 1.5 * normal["octets"], (normal, bigger)
        assert bigger["row"] >= 1.3 * normal["row"] and bigger["seqWidth"] >= normal["seqWidth"], (normal, bigger)
        assert page.evaluate("() => document.documentElement.classList.contains('large')")
        # Remembered: the next page opens in the projector view; the button turns it off again.
        page.goto(f"{base}/lessons.html?lesson=greeting&step=2")
        page.wait_for_selector("#octets .oct-box")
        assert page.evaluate("() => document.documentElement.classList.contains('projector')")
        page.click("#projector-toggle")
        assert not page.evaluate("() => document.documentElement.classList.contains('projector')")
    finally:
        context.close()
