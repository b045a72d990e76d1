"""Keyboard only: a whole playground session and a capture, driven with Tab, Enter, Space and the arrows, never
the mouse; every control reached shows where the focus is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.browser

# The focused element as the test sees it: what it is, and whether the focus is drawn (an outline or a ring).
FOCUSED_JS = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const st = getComputedStyle(e);
  const ring = (st.outlineStyle !== 'none' && parseFloat(st.outlineWidth) > 0) || st.boxShadow !== 'none';
  return {tag: e.tagName.toLowerCase(), text: (e.innerText || e.value || e.getAttribute('aria-label') || '').trim()
    .slice(0, 80), cls: String(e.className || ''), id: e.id, ring};
}"""


def tab_to(page: Any, wanted: Callable[[dict[str, Any]], bool], *, limit: int = 120, back: bool = False) -> dict:
    """Presses Tab (Shift+Tab with `back`) until the focused element is `wanted`; each stop must show its focus."""
    seen = []
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        focused = page.evaluate(FOCUSED_JS)
        if focused is None:
            continue
        assert focused["ring"], f"no visible focus on {focused}"
        seen.append(focused)
        if wanted(focused):
            return focused
    raise AssertionError(f"not reached by Tab; the focus went through {[(f['tag'], f['text'][:20]) for f in seen]}")


def text_is(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda f: f["text"] == text


def has_class(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda f: name in f["cls"].split()


def test_a_session_by_keyboard(page: Any, live_server: Any) -> None:
    page.goto(f"{live_server.base}/index.html")
    tab_to(page, text_is("Start session"))
    page.keyboard.press("Enter")
    tab_to(page, text_is("▶ Play"))
    page.keyboard.press("Enter")
    page.wait_for_selector("#sequence .seq-row:has-text('READY')")
    # The sequence: focus it, walk its elements with the arrows.
    tab_to(page, has_class("seq-viewport"))
    page.keyboard.press("Home")
    for _ in range(2):
        page.keyboard.press("ArrowDown")
    page.wait_for_selector("#sequence .seq-row.selected")
    selected = page.locator("#sequence .seq-row.selected").inner_text()
    assert "READY" in selected or "greeting" in selected.lower()
    # The details tree: a field row takes Enter, and the octet table marks that field.
    tab_to(page, has_class("tree-field"))
    page.keyboard.press("Tab")  # the element's second field
    page.keyboard.press("Enter")
    page.wait_for_selector("#octets .oct-box.selected[data-field='1']")
    # The composer: type a frame and send it.
    tab_to(page, lambda f: f["tag"] == "textarea")  # the composer's first frame
    page.keyboard.press("Control+A")
    page.keyboard.type("by keyboard")
    tab_to(page, text_is("Send message"))
    page.keyboard.press("Enter")
    page.wait_for_function("() => [...document.querySelectorAll('#sequence .seq-label')].some("
                           "(e) => e.textContent.includes('by keyboard'))")


def test_a_capture_by_keyboard(page: Any, live_server: Any, sample: Callable) -> None:
    # Playwright turns Chromium's file-chooser interception on when a listener is added, without waiting for
    # it: added by `expect_file_chooser` just before the Enter, it was sometimes not on yet, and the chooser the
    # page opened (the Enter reached the drop zone, which clicked its input) went by unseen. On from the start:
    page.on("filechooser", lambda _chooser: None)
    page.goto(f"{live_server.base}/capture.html")
    tab_to(page, has_class("drop-zone"))
    with page.expect_file_chooser() as chooser:
        page.keyboard.press("Enter")
    chooser.value.set_files(str(sample("dealer_router.pcapng")))
    page.wait_for_selector("#sequence .seq-row:not(.loading)", timeout=30_000)
    tab_to(page, has_class("seq-viewport"))
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    page.wait_for_selector("#sequence .seq-row.selected")
    # The packets that carried it: a button per packet opens its lower layers.
    packet = tab_to(page, lambda f: f["tag"] == "button" and f["text"].startswith("#"))
    page.keyboard.press("Enter")
    assert packet["text"][1:].isdigit()
    page.locator("#packets details.tree-node > summary:text-is('Transmission Control Protocol')").wait_for(
        timeout=30_000)
