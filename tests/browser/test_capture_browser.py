"""Issue 6, the capture viewer in real Chromium against a real server: uploads through the page's file input,
a DEALER's READY and its Identity, the lower layers of its packet (tshark through pyshark), a 420,004-element
capture shown quickly and scrolled to its end, the expert panel on a socket-type mismatch, and damaged or
foreign files. Screenshots go to test-artifacts/capture/."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

pytestmark = pytest.mark.browser

FIRST_ROWS_WITHIN = 5.0  # seconds from the end of an upload to its first elements on screen

BOXES_JS = """() => {
  // (field name, box texts) pairs of the octet table, in field order.
  const names = {}; const boxes = {};
  for (const td of document.querySelectorAll('#octets .oct-name')) names[td.dataset.field] ??= td.textContent;
  for (const td of document.querySelectorAll('#octets .oct-box')) {
    const t = td.querySelector('.oct-text');
    (boxes[td.dataset.field] = boxes[td.dataset.field] || []).push(t ? t.textContent : '');
  }
  return Object.keys(names).sort((a, b) => a - b).map((f) => [names[f], (boxes[f] || []).join('')]);
}"""

LEAVES_JS = """(sel) => [...document.querySelectorAll(sel + ' .tree-leaf')].map((leaf) => [
  leaf.querySelector('.tf-name').textContent.replace(/:\\s*$/, ''), leaf.querySelector('.tf-value').textContent])"""


def upload(page: Any, path: Path) -> None:
    page.set_input_files("#capture-file", str(path))


def capture_id(page: Any) -> str:
    ids = parse_qs(urlparse(page.url).query).get("id")
    assert ids, f"no capture id in {page.url}"
    return ids[0]


def api(page: Any, path: str) -> Any:
    response = page.request.get(path if path.startswith("http") else page.url.split("/capture.html")[0] + path)
    assert response.ok, f"{path}: {response.status} {response.text()}"
    return response.json()


def opened(page: Any, name: str) -> None:
    """Waits until the capture `name` is shown with its first elements."""
    page.wait_for_selector(f"#capture-title:text-is('{name}')", timeout=30_000)
    page.wait_for_selector("#sequence .seq-row:not(.loading)")


def select_row(page: Any, label_part: str) -> None:
    row = page.locator("#sequence .seq-row", has=page.locator(".seq-label", has_text=label_part)).first
    row.click()
    page.wait_for_selector("#sequence .seq-row.selected")


def test_dealer_identity_and_lower_layers(page, live_server, artifacts, sample):
    shots = artifacts("capture")
    page.goto(f"{live_server.base}/capture.html")
    page.screenshot(path=str(shots / "01-upload.png"))
    upload(page, sample("dealer_router.pcapng"))
    opened(page, "dealer_router.pcapng")
    row = page.locator("table.connections tbody tr").first
    assert "DEALER / ROUTER" in row.text_content()
    row.click()  # open the connection
    page.wait_for_selector("table.connections tbody tr.selected")
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('Socket-Type=DEALER'))")

    # The DEALER's READY: its fields are fetched when it is opened; the Identity property is client-1.
    select_row(page, "Socket-Type=DEALER")
    page.wait_for_function("() => [...document.querySelectorAll('#octets .oct-text')]"
                           ".some((e) => e.textContent === '\"client-1\"')")
    boxes = page.evaluate(BOXES_JS)
    k = boxes.index(["property-name", '"Identity"'])
    assert boxes[k + 1][0] == "value-size" and boxes[k + 2] == ["property-value", '"client-1"'], boxes
    assert ["command-name", '"READY"'] in boxes and ["property-value", '"DEALER"'] in boxes
    assert page.text_content("#octets .octets-title").startswith("READY (c2s")

    # Its packet numbers: the details tree, the packets panel and the API agree.
    leaves = dict(page.evaluate(LEAVES_JS, "#tree"))
    index = int(page.get_attribute("#sequence .seq-row.selected", "data-index"))
    event = api(page, f"/api/captures/{capture_id(page)}/events/{index}?conn=0")
    assert event["packets"] and leaves["Packets"] == ", ".join(map(str, event["packets"]))
    buttons = page.eval_on_selector_all("#packets button.packet", "els => els.map(e => e.textContent)")
    assert buttons == [f"#{n}" for n in event["packets"]]

    # The lower layers of that packet, as tshark decodes them.
    page.click(f"#packets button.packet:text-is('#{event['packets'][0]}')")
    tcp = page.locator("#packets details.tree-node > summary:text-is('Transmission Control Protocol')")
    tcp.wait_for(timeout=30_000)
    fields = dict(page.evaluate(LEAVES_JS, "#packets details.tree-node:last-of-type"))
    client, server = (page.text_content(f"table.connections tbody tr td:nth-child({n})") for n in (2, 3))
    assert fields["Source Port"] == client.rsplit(":", 1)[1] and fields["Destination Port"] == server.rsplit(":", 1)[1]
    assert fields["TCP Segment Len"] == "51"  # the READY's 51 octets, in one segment
    assert "Sequence Number" in fields and "Flags" in fields
    layers = page.eval_on_selector_all("#packets details.tree-node > summary", "els => els.map(e => e.textContent)")
    assert layers[:4] == ["Frame", "Ethernet II", "Internet Protocol", "Transmission Control Protocol"]
    page.screenshot(path=str(shots / "02-dealer-ready-identity.png"))
    page.locator("#octets").screenshot(path=str(shots / "03-octets-ready.png"))
    page.locator("#packets").screenshot(path=str(shots / "04-lower-layers.png"))
    page.locator("#hex").screenshot(path=str(shots / "05-hex.png"))


def test_bulk_capture_shows_quickly_and_scrolls_to_its_end(page, live_server, artifacts, sample):
    shots = artifacts("capture")
    page.goto(f"{live_server.base}/capture.html")
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/api/captures"),
                              timeout=30_000) as posted:
        upload(page, sample("bulk.pcapng"))
    assert posted.value.status == 201
    uploaded = time.monotonic()
    page.wait_for_selector("#sequence .seq-row:not(.loading)", timeout=FIRST_ROWS_WITHIN * 1000)
    first_rows = time.monotonic() - uploaded
    print(f"bulk.pcapng: first elements {first_rows:.2f} s after the upload completed")
    assert first_rows < FIRST_ROWS_WITHIN
    labels = page.eval_on_selector_all("#sequence .seq-row:not(.loading) .seq-label",
                                       "els => els.map(e => e.textContent)")
    assert labels[:2] == ["Greeting 3.1 NULL", "Greeting 3.1 NULL"]
    # An element picked among the first ones stays selected when the whole capture replaces them.
    page.click("#sequence .seq-row[data-index='9']")
    page.wait_for_selector("#octets .octets-title:text-matches('^Frame')")
    page.screenshot(path=str(shots / "06-bulk-first-rows.png"))

    # Once the whole capture is dissected the list holds every element; the last one is reachable.
    cid = capture_id(page)
    deadline = time.monotonic() + 90
    while api(page, f"/api/captures/{cid}")["state"] not in ("done", "error"):
        assert time.monotonic() < deadline, "the bulk capture was not dissected in 90 s"
        page.wait_for_timeout(250)
    total = api(page, f"/api/captures/{cid}/events?conn=0&limit=1")["total"]
    assert total > 400_000  # 420,004 with today's dissector: 4 handshake elements, 220,000 frames, 200,000 messages
    page.wait_for_selector(f"#sequence .seq-count:text-is('{total:,} elements')")
    page.wait_for_selector("#sequence .seq-row.selected[data-index='9']")
    assert page.locator("#dissect-notice").count() == 0
    page.eval_on_selector("#sequence .seq-viewport", "v => { v.scrollTop = v.scrollHeight; }")
    last = page.locator(f"#sequence .seq-row[data-index='{total - 1}']:not(.loading)")
    last.wait_for()  # (the page's default wait: 30 s on a loaded machine, as soon as it is there)
    assert last.locator(".seq-num").text_content() == str(total)  # shown 1-based
    want = api(page, f"/api/captures/{cid}/events?conn=0&offset={total - 1}&limit=1")["events"][0]
    assert want["index"] == total - 1
    last.click()
    page.wait_for_function("() => { const t = document.querySelector('#octets .octets-title'); "
                           "return t && !/Loading/.test(document.querySelector('#octets').textContent); }")
    assert page.text_content("#octets .octets-title").lower().startswith(want["kind"])
    page.screenshot(path=str(shots / "07-bulk-last-element.png"))


def test_expert_panel_on_a_socket_type_mismatch(page, live_server, artifacts, sample):
    shots = artifacts("capture")
    page.goto(f"{live_server.base}/capture.html")
    upload(page, sample("mismatch_push_push.pcapng"))
    opened(page, "mismatch_push_push.pcapng")
    assert "1 error" in page.text_content("#capture-facts")
    assert "PUSH / PUSH" in page.text_content("table.connections tbody tr")
    items = page.locator("#expert .expert-item")
    items.first.wait_for()
    assert items.count() == 1
    assert "invalid socket pair" in items.first.text_content() and "sev-error" in items.first.get_attribute("class")
    assert page.text_content("#expert label.sev-error .count") == "(1)"

    # The severity filter: errors hidden, then shown again; the other filters leave them alone.
    page.uncheck("#expert label.sev-error input")
    page.wait_for_selector("#expert .expert-item", state="detached")
    assert "hidden by the severity filters" in page.text_content("#expert")
    page.screenshot(path=str(shots / "08-expert-errors-hidden.png"))
    page.check("#expert label.sev-error input")
    page.uncheck("#expert label.sev-warn input")
    page.uncheck("#expert label.sev-note input")
    items.first.wait_for()
    assert items.count() == 1

    # Clicking it jumps to the element.
    items.first.click()
    selected = page.locator("#sequence .seq-row.selected")
    selected.wait_for()
    assert "[error] invalid socket pair" in selected.locator(".seq-label").text_content()
    page.wait_for_selector("#octets .octets-title:text-matches('^Expert')")
    assert "invalid socket pair" in page.text_content("#explain")
    page.screenshot(path=str(shots / "09-expert-jump.png"))


def test_damaged_and_foreign_files_say_so(page, live_server, artifacts, sample, tmp_path):
    shots = artifacts("capture")
    data = sample("dealer_router.pcapng").read_bytes()
    truncated = tmp_path / "cut.pcapng"
    truncated.write_bytes(data[:3000])  # ends inside a block
    page.goto(f"{live_server.base}/capture.html")
    upload(page, truncated)
    opened(page, "cut.pcapng")
    banner = page.locator("#notices .banner.error")
    banner.wait_for()
    assert "truncated" in banner.text_content() and "What was read before it is shown below" in banner.text_content()
    assert page.locator("#sequence .seq-row:not(.loading)").count() > 4  # what was read is still there
    page.screenshot(path=str(shots / "10-truncated.png"))

    headless = tmp_path / "header-only.pcapng"
    headless.write_bytes(data[:30])  # cut inside the section header block: nothing to show at all
    page.goto(f"{live_server.base}/capture.html")
    upload(page, headless)
    page.wait_for_selector("#capture-title:text-is('header-only.pcapng')", timeout=30_000)
    banner.wait_for()
    assert "truncated" in banner.text_content() and "No ZMTP connection could be read" in banner.text_content()
    assert page.locator("#notices .banner").count() == 1  # not also "no ZMTP found" advice
    assert page.locator("#workbench").is_hidden()
    page.screenshot(path=str(shots / "10-truncated-header.png"))

    foreign = tmp_path / "notes.pcapng"
    foreign.write_text("These are my notes, not a capture.\n")
    page.problems.expected.append("415")  # the browser logs the refused upload
    page.goto(f"{live_server.base}/capture.html")
    upload(page, foreign)
    error = page.locator("#upload .error")
    error.wait_for()
    assert "not a pcap or pcapng capture" in error.text_content()
    assert error.get_attribute("role") == "alert"
    assert page.locator("#capture-section").is_hidden()
    page.screenshot(path=str(shots / "11-not-a-capture.png"))
