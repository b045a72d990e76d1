"""Issue 16.11, the Paste hex tab in real Chromium: the dumps people paste, made by the real tools (`xxd`,
`hexdump -C`, and `tshark -x`, the layout of Wireshark's "Copy as Hex Dump"; see
tests/frontend/data/dumps/README.md), decode to the elements `zmtplab dissect` finds; after an invalid
input no earlier decode stays on any panel. Screenshots go to test-artifacts/paste/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

DUMPS = Path(__file__).resolve().parents[1] / "frontend" / "data" / "dumps"


def labels(page: Any) -> list[str]:
    return page.eval_on_selector_all("#sequence .seq-row .seq-label", "els => els.map((e) => e.textContent)")


def labels_of_server(page: Any, rows: list[str]) -> list[str]:
    """The rows of the server's direction (the lifeline arrows point left)."""
    return page.eval_on_selector_all("#sequence .seq-row.s2c .seq-label", "els => els.map((e) => e.textContent)")


def paste_and_decode(page: Any, text: str, reading: str) -> None:
    page.fill("textarea.paste-text", text)
    page.wait_for_selector(f".paste-reading:text('{reading}')")
    page.click("#pane-paste button:text-is('Decode')")


def decoded(page: Any, n: int) -> None:
    """Waits until the page says it decoded `n` elements and its sequence shows them."""
    page.wait_for_function("(n) => document.getElementById('status').textContent === `Decoded ${n} elements.`"
                           " && document.querySelector('#sequence .seq-count').textContent === `${n} elements`"
                           " && !document.querySelector('#sequence .seq-row.loading')", arg=n)


def test_dumps_of_xxd_hexdump_and_tshark_decode(page, live_server, artifacts, sample):
    shots = artifacts("paste")
    page.goto(f"{live_server.base}/index.html#paste")
    page.wait_for_selector("textarea.paste-text")

    # xxd of the DEALER's bytes: one direction, offsets and ASCII column left out.
    paste_and_decode(page, (DUMPS / "dealer_router.c2s.xxd").read_text(), "Xxd dump: 154 octets c2s")
    decoded(page, 11)
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('READY'))")
    xxd_rows = labels(page)
    assert xxd_rows[:2] == ["Greeting 3.1 NULL", "READY Socket-Type=DEALER Identity=client-1"], xxd_rows
    assert 'Message [2 frames] "" "request 2"' in xxd_rows
    page.screenshot(path=str(shots / "01-xxd.png"))

    # hexdump -C of the same bytes, its `*` line standing for the greeting's zero filler: the same elements.
    paste_and_decode(page, (DUMPS / "dealer_router.c2s.hexdump").read_text(), "Hexdump -C dump: 154 octets c2s")
    decoded(page, 11)
    assert labels(page) == xxd_rows

    # tshark -x, every packet with its Ethernet, IP and TCP headers: both directions, as on the wire.
    paste_and_decode(page, (DUMPS / "dealer_router.tshark-x.txt").read_text(),
                     "Packet hex dump: 154 octets c2s, 173 octets s2c")
    decoded(page, 22)
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('Socket-Type=ROUTER'))")  # (rows drawn)
    rows = labels(page)
    assert rows[:2] == ["Greeting 3.1 NULL", "Greeting 3.1 NULL"], rows
    assert rows[2].startswith("READY Socket-Type=ROUTER") and rows[3] == "READY Socket-Type=DEALER Identity=client-1"
    assert sorted(rows) == sorted(xxd_rows + labels_of_server(page, rows)), rows
    assert "DEALER" in page.text_content(".lifeline-head.c2s-side")
    assert "ROUTER" in page.text_content(".lifeline-head.s2c-side")
    page.screenshot(path=str(shots / "02-tshark-x.png"))


def test_invalid_input_clears_the_earlier_decode(page, live_server, artifacts):
    shots = artifacts("paste")
    page.goto(f"{live_server.base}/index.html#paste")
    paste_and_decode(page, (DUMPS / "dealer_router.c2s.hex").read_text(), "Plain hex: 154 octets c2s")
    decoded(page, 11)
    page.wait_for_selector("#octets .octets-title")
    page.wait_for_selector("#hex .hex-line, #hex [class*=line]")

    page.fill("textarea.paste-text", "ff 00 zz")
    page.click("#pane-paste button:text-is('Decode')")
    page.wait_for_selector("#paste .error:text('\"z\" is not a hex digit')")
    # Nothing of the earlier decode is left: no banner, no rows, no octets, no details, no bytes.
    page.wait_for_function("() => document.querySelectorAll('#sequence .seq-row').length === 0")
    assert page.is_hidden("#status")
    assert page.locator("#octets .octets-title").count() == 0
    assert page.text_content("#octets .hint") == "Select an element to see its octets."
    assert page.text_content("#tree .hint") == "Select an element."
    assert page.is_visible("#hex .hint:text('No bytes yet.')")
    page.screenshot(path=str(shots / "03-invalid-cleared.png"))

    # The server refusing what parses (an over-long input) clears it too.
    paste_and_decode(page, (DUMPS / "dealer_router.c2s.hex").read_text(), "Plain hex: 154 octets c2s")
    decoded(page, 11)
    page.problems.expected.append("status of 413")  # (the browser logs the refused request)
    page.fill("textarea.paste-text", "00" * (256 * 1024 + 1))
    page.click("#pane-paste button:text-is('Decode')")
    page.wait_for_selector("#paste .error:not([hidden])")
    page.wait_for_function("() => document.querySelectorAll('#sequence .seq-row').length === 0")
    assert page.is_hidden("#status")
