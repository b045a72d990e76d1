"""Projector sizes (issue 23.4): at 1280x720 and 1024x768 with large text, and in the projector view, no pane
of the playground, the capture viewer or a lesson clips, runs past its edge or overlaps another; the projector
view hides what only the teacher needs and gives the octet table and the sequence the room."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from layoutkit import LAYOUT_JS
from test_playground_browser import wait_for_fields

from testkit import settle

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
    page.wait_for_function("() => document.querySelectorAll('#sequence .seq-row').length >= 4")
    page.locator("#sequence .seq-row").nth(3).click()
    wait_for_fields(page)


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
            settle(page)
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
        settle(page)
        for hidden in ("#composer", "#faults", "#session-form", "#topology-form", ".shortcuts", "#expert"):
            assert not page.locator(hidden).is_visible(), hidden
        assert page.locator("#player button:text-is('Step »')").is_visible()  # the teacher still steps
        # (folded beside the player: a new demo, a message or a fault is a click away, issue 32.7)
        for folded in ("#session-setup > summary", "#topology-setup > summary"):
            assert page.locator(folded).is_visible(), folded
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


TOPOLOGY_LESSONS = ["load-balancing", "broker", "slow-joiner", "high-water-marks"]

# What a class sees of a topology lesson on a projector (issue 32.7): the diagram's words in screen pixels (the
# SVG is scaled to its pane), every node and every word of it inside the diagram's pane and its box, the legend
# whole, the narration's and the sequence's room.
TOPOLOGY_VIEW_JS = """() => {
  const box = (el) => el.getBoundingClientRect();
  const svg = document.querySelector('#topology svg');
  const vb = svg.viewBox.baseVal;
  const s = box(svg);
  const scale = Math.min(s.width / vb.width, s.height / vb.height);
  const px = (sel) => Math.min(...[...document.querySelectorAll('#topology ' + sel)].map((t) =>
    parseFloat(getComputedStyle(t).fontSize) * scale));
  const pane = box(document.querySelector('#topology .topo-diagram'));
  const slot = box(document.querySelector('#topology'));
  const out = [];
  for (const g of document.querySelectorAll('#topology .topo-node')) {
    const r = box(g.querySelector('rect'));
    if (r.left < pane.left - 1 || r.right > pane.right + 1 || r.top < pane.top - 1 || r.bottom > pane.bottom + 1)
      out.push(`node ${g.dataset.node} cut off by its pane`);
    for (const t of g.querySelectorAll('text.node-types, text.node-label, text.topo-stats')) {
      const b = box(t);
      if (b.width && (b.left < r.left - 1 || b.right > r.right + 1))
        out.push(`"${t.textContent}" runs past ${g.dataset.node}'s box`);
    }
  }
  const legend = box(document.querySelector('#topology .topo-legend'));
  if (legend.bottom > slot.bottom + 1) out.push('the legend is cut off');
  const side = box(document.querySelector('.lesson-side'));
  const narr = box(document.querySelector('.narration'));
  const lineHeight = parseFloat(getComputedStyle(document.querySelector('.narration')).lineHeight) || 20;
  // (the lines in view, or all of them when the narration is shorter)
  const narrationLines = Math.min((Math.min(side.bottom, narr.bottom) - Math.max(side.top, narr.top)) / lineHeight,
                                  5, narr.height / lineHeight - 0.2);
  const narrationWanted = Math.min(5, narr.height / lineHeight - 0.2);
  const vp = document.querySelector('#sequence .seq-viewport');
  const row = document.querySelector('#sequence .seq-row');
  return { problems: out, names: px('text.node-types'), labels: px('text.node-label'),
           narrationLines, narrationWanted, sequenceRows: row ? vp.clientHeight / row.offsetHeight : 0 };
}"""


@pytest.mark.parametrize(("width", "height"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_every_topology_lesson_on_a_projector(browser: Any, live_server: Any, artifacts: Any, width: int,
                                              height: int) -> None:
    """Every step of every topology lesson, presenting, in the projector view: the diagram gets a row of its own and
    its words are read from the back of the room (names 14 px and more, labels 10 px and more: they were ~8 px),
    no node is cut off and no word runs past its box, the legend is whole, the narration shows five lines (all of a
    shorter one) and the sequence three rows, and no pane clips or overlaps (screenshots:
    test-artifacts/projector/topology/)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    shots = artifacts("projector/topology")
    try:
        page.goto(f"{live_server.base}/lessons.html?projector=1")
        page.click("#present-button")
        page.wait_for_selector("#join-code")
        for lesson in TOPOLOGY_LESSONS:
            steps = len(page.request.get(f"{live_server.base}/api/lessons/{lesson}").json()["steps"])
            for step in range(1, steps + 1):
                page.evaluate("([l, s]) => { const u = new URL(location.href); u.searchParams.set('lesson', l);"
                              " u.searchParams.set('step', s); history.replaceState(null, '', u); }", [lesson, step])
                page.reload()
                page.wait_for_selector(f".step-counter:text-is('Step {step} of {steps}')")
                page.wait_for_selector("#topology:not([hidden]) .topo-node")
                settle(page)
                page.screenshot(path=str(shots / f"{lesson}-{step}-{width}x{height}.png"))
                where = f"{lesson} step {step} at {width}x{height}"
                view = page.evaluate(TOPOLOGY_VIEW_JS)
                assert view["problems"] == [], where
                assert view["names"] >= 14 and view["labels"] >= 10, (where, view)
                assert view["narrationLines"] >= view["narrationWanted"] - 0.01, (where, view)
                assert view["sequenceRows"] >= 2.9, (where, view)
                assert page.evaluate(LAYOUT_JS) == [], where
                assert page.locator("#join-code").is_visible(), "the class keeps its code in view"
    finally:
        context.close()
