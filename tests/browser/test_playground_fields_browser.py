"""Fields on demand in the playground (issue 22, goal 3), in real Chromium against a real server: the page's session
socket streams events without `fields`; opening an element fetches its fields (GET /api/sessions/{id}/events/{seq})
and the octet table and details tree show them; a byte clicked in the hex dump of an element not opened yet
selects the field under it once its fields are in."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytestmark = pytest.mark.browser

BODY = "fields on demand"


def test_opening_an_element_fetches_its_fields(page, live_server):
    events: list[dict[str, Any]] = []
    fetched: list[str] = []

    def frames(ws: Any) -> None:
        def got(payload: Any) -> None:
            data = json.loads(payload)
            events.extend(m["event"] for m in (data if isinstance(data, list) else [data]) if m["type"] == "event")
        ws.on("framereceived", got)

    page.on("websocket", frames)
    page.on("request", lambda r: fetched.append(r.url) if re.search(r"/api/sessions/[^/]+/events/\d+", r.url)
            else None)
    page.goto(f"{live_server.base}/index.html")
    page.check("input[name='autoplay']")
    page.click("button:text-is('Start session')")
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('READY Socket-Type=PULL'))")
    page.fill("textarea[aria-label='Frame 1']", BODY)
    page.click("button:text-is('Send message')")
    row = page.locator("#sequence .seq-row", has=page.locator(".seq-label", has_text=f"size={len(BODY)}")).first
    row.wait_for()
    assert events and not any("fields" in e for e in events), "the page's socket sends events with their fields"
    assert not fetched  # nothing opened yet, nothing fetched

    row.click()
    # (until its fields are in, the table shows the element's octets unnamed)
    page.wait_for_selector("#octets .oct-name:text-is('flags')")
    names = page.eval_on_selector_all("#octets .oct-name", "els => [...new Set(els.map(e => e.textContent))]")
    assert names[:3] == ["flags", "size", "body"]
    assert BODY in page.text_content("#octets")
    page.wait_for_selector("#tree .tree-field")
    tree = page.eval_on_selector_all("#tree .tree-field .tf-name", "els => els.map(e => e.textContent)")
    assert tree[0].startswith("flags") and tree[-1].startswith("body") and len(tree) == 3
    frame = next(e for e in events if e["kind"] == "frame" and bytes.fromhex(e["body"]) == BODY.encode())
    assert fetched[-1].split("?")[0].endswith(f"/events/{frame['seq']}")

    # A byte of the hex dump's first line (a greeting's first octet, never opened): its field gets selected.
    before = len(fetched)
    page.click("#hex [data-line='0'] .hex-bytes .b[data-k='0']")
    page.wait_for_selector("#tree .tree-field.selected")
    assert page.text_content("#tree .tree-field.selected .tf-name").startswith("signature")
    assert len(fetched) == before + 1
