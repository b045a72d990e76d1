"""Issue 16.8 in real Chromium: a capture written out of order, with a duplicate and a lost segment,
shows the TCP-level facts (retransmission, out-of-order, lost segment, zero window) as expert notes
tied to their frames, and the late segment's bytes are not reported missing (issue 15.1).
Screenshots go to test-artifacts/capture-tcp-notes/."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from zmtplab.capture.dissect import dissect_capture

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]


def _variants():
    spec = importlib.util.spec_from_file_location("captures_variants", REPO / "captures" / "variants.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def damaged_large(sample, path: Path) -> dict[str, int]:
    """large.pcapng (a 1 MiB frame; the receiver advertises a zero window in frame 19) with frame 22
    written after the ACK that covers it, frame 25 written twice and frame 28 lost. Returns the frame
    numbers of the variant where each note belongs (frame 29 is the other direction's ACK)."""
    v = _variants()
    frames = v.read_original(sample("large.pcapng"))
    order = [*range(21), 22, 21, 23, 24, 24, *range(25, 27), *range(28, len(frames))]
    path.write_bytes(v.write(frames, [v.Placed(i) for i in order]))
    return {"zero-window": order.index(18) + 1, "out-of-order": order.index(21) + 1,
            "retransmission": order.index(24) + 2, "lost-segment": order.index(29) + 1}


def test_tcp_trouble_is_explained_in_the_expert_panel(page, live_server, artifacts, sample, tmp_path):
    shots = artifacts("capture-tcp-notes")
    path = tmp_path / "large_damaged.pcapng"
    where = damaged_large(sample, path)
    # What the server will show, from the same dissection: one note per fact, on its frame.
    tcp = {e["rule"]: e for e in dissect_capture(str(path), with_fields=False) if e["kind"] == "expert"
           and e.get("rule", "").startswith("tcp.analysis.")}
    assert {rule: e["packets"] for rule, e in tcp.items()} == {
        "tcp.analysis.zero_window": [where["zero-window"]], "tcp.analysis.out_of_order": [where["out-of-order"]],
        "tcp.analysis.retransmission": [where["retransmission"]], "tcp.analysis.lost_segment": [where["lost-segment"]]}

    page.goto(f"{live_server.base}/capture.html")
    page.set_input_files("#capture-file", str(path))
    page.wait_for_selector(f"#capture-title:text-is('{path.name}')", timeout=30_000)
    items = page.locator("#expert .expert-item")
    items.first.wait_for(timeout=30_000)
    texts = [items.nth(i).text_content() for i in range(items.count())]
    classes = {t: items.nth(i).get_attribute("class") for i, t in enumerate(texts)}

    def one(prefix: str) -> str:
        found = [t for t in texts if prefix in t]
        assert len(found) == 1, (prefix, texts)
        return found[0]

    assert "sev-warn" in classes[one("TCP zero window")]
    assert "sev-warn" in classes[one("TCP out-of-order segment: 53760 bytes at offset 183900")]
    assert "sev-note" in classes[one("TCP retransmission: 42496 bytes at offset 293468")]
    assert "sev-warn" in classes[one("TCP previous segment not captured: 42496 bytes at offset 391772")]
    # Only the lost segment's bytes are missing: the late one (out of order) was reassembled.
    assert not [t for t in texts if "183900" in t and "TCP" not in t]
    page.screenshot(path=str(shots / "01-expert-panel.png"))

    # Clicking a note jumps to it; its explanation says what happened.
    items.nth(texts.index(one("TCP out-of-order"))).click()
    page.wait_for_selector("#octets .octets-title:text-matches('^Expert')")
    assert "TCP out-of-order segment" in page.text_content("#explain")
    page.screenshot(path=str(shots / "02-out-of-order-selected.png"))
