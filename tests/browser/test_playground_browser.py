"""Issue 5, the playground in real Chromium against a real server: a PUSH/PULL session stepped with the keyboard,
the greeting's octet table, a long frame sent from the composer, field highlighting across views, a hostile
payload rendered as text, and paste mode. Screenshots go to test-artifacts/playground/."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=alert(1)>"
# 23/ZMTP's worked example: the DEALER client's READY with Socket-Type "DEALER" and an empty Identity.
WORKED_READY = ("04 29 05 52 45 41 44 59 0b 53 6f 63 6b 65 74 2d 54 79 70 65 00 00 00 06 44 45 41 4c 45 52 "
                "08 49 64 65 6e 74 69 74 79 00 00 00 00")

# What the page shows, read back from the DOM (the views draw from the events' fields alone).
OCTETS_JS = """() => {
  const boxes = {}; const offsets = {}; const names = {};
  const add = (map, key, value) => { (map[key] = map[key] || []).push(value); };
  for (const td of document.querySelectorAll('#octets .oct-box')) {
    const t = td.querySelector('.oct-text'); const b = td.querySelector('.oct-bytes');
    add(boxes, td.dataset.field, { text: t ? t.textContent : '', bytes: b ? b.textContent : '',
                                   selected: td.classList.contains('selected') });
  }
  for (const td of document.querySelectorAll('#octets .oct-offset')) add(offsets, td.dataset.field, td.textContent);
  for (const td of document.querySelectorAll('#octets .oct-name')) names[td.dataset.field] ??= td.textContent;
  const title = document.querySelector('#octets .octets-title');
  return { title: title ? title.textContent : null,
           fields: Object.keys(names).map((f) => ({ field: Number(f), name: names[f], boxes: boxes[f] || [],
                                                    offsets: offsets[f] || [] })) };
}"""

HEX_SELECTED_JS = """() => {
  // Stream offsets of the bytes the hex dump highlights as the selected field, per direction.
  const out = [];
  for (const line of document.querySelectorAll('#hex .hex-line')) {
    const off = parseInt(line.querySelector('.hex-off').textContent, 16);
    const dir = line.classList.contains('s2c') ? 's2c' : 'c2s';
    for (const b of line.querySelectorAll('.hex-bytes .b.sel-field')) out.push([dir, off + Number(b.dataset.k)]);
  }
  return out;
}"""

TREE_FIELD_JS = """() => {
  const row = document.querySelector('#tree .tree-field.selected');
  const leaves = {};
  for (const leaf of document.querySelectorAll('#tree .tree-leaf')) {
    const name = leaf.querySelector('.tf-name').textContent.replace(/:\\s*$/, '');
    if (!(name in leaves)) leaves[name] = leaf.querySelector('.tf-value').textContent;
  }
  return { selected: row ? { field: Number(row.dataset.field), name: row.querySelector('.tf-name').textContent,
                             where: row.querySelector('.tf-where').textContent } : null,
           leaves };
}"""


def octet_fields(page: Any) -> dict[str, Any]:
    return page.evaluate(OCTETS_JS)


def by_name(table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in table["fields"]}


def position(page: Any) -> tuple[int, int]:
    text = page.text_content(".play-status") or ""
    m = re.search(r"element (\d+) of (\d+)", text)
    assert m, f"no position in the player status {text!r}"
    return int(m.group(1)), int(m.group(2))


def wait_position(page: Any, n: int) -> None:
    page.wait_for_function("(n) => { const m = /element (\\d+) of/.exec(document.querySelector('.play-status')"
                           ".textContent); return m && Number(m[1]) === n; }", arg=n)


def rows(page: Any) -> list[str]:
    return page.eval_on_selector_all("#sequence .seq-row:not(.loading) .seq-label",
                                     "els => els.map(e => e.textContent)")


def select_row(page: Any, label_part: str) -> None:
    """Clicks the sequence row whose label holds `label_part` and waits until the details show it."""
    row = page.locator("#sequence .seq-row", has=page.locator(".seq-label", has_text=label_part)).first
    row.click()
    page.wait_for_selector("#sequence .seq-row.selected")
    wait_for_fields(page)


def wait_for_fields(page: Any) -> None:
    """Until the octet table shows the selected element's fields: a session's element comes without them, and
    until they are fetched the table shows its octets unnamed."""
    page.wait_for_function("() => { const names = [...document.querySelectorAll('#octets .oct-name')];"
                           " return names.length && !names.some((n) => n.textContent.startsWith('octets')); }")


def blur(page: Any) -> None:
    """Moves the focus off any control, so the page's own shortcuts get the keys."""
    page.evaluate("() => document.activeElement && document.activeElement.blur && document.activeElement.blur()")


def highlighted_matches_field(page: Any) -> tuple[list, list]:
    """The hex dump's highlighted bytes and the bytes of the field the details tree says is selected."""
    tree = page.evaluate(TREE_FIELD_JS)
    assert tree["selected"], "no field is selected in the details tree"
    m = re.search(r"offset (\d+), (\d+) octets?", tree["selected"]["where"])
    assert m, tree
    start = int(tree["leaves"]["Stream offset"]) + int(m.group(1))
    length = int(m.group(2))
    direction = "s2c" if "s2c" in tree["leaves"]["Direction"] else "c2s"
    want = [[direction, o] for o in range(start, start + length)]
    return page.evaluate(HEX_SELECTED_JS), want


def test_playground_session_end_to_end(page, live_server, artifacts):
    shots = artifacts("playground")
    page.goto(f"{live_server.base}/index.html")
    server = page.locator("fieldset.peer-server label.field", has=page.locator(".field-label:text-is('Socket')"))
    client = page.locator("fieldset.peer-client label.field", has=page.locator(".field-label:text-is('Socket')"))
    server.locator("select").select_option("PUSH")
    client.locator("select").select_option("PULL")
    page.check("input[name='autoplay']")  # (new sessions wait at t = 0 unless told to play)
    page.click("button:text-is('Start session')")
    page.wait_for_selector("#sequence .seq-row:not(.loading)")

    # Keyboard: space pauses; ← / p step back to the start; → / n step forward. (The play button says what
    # space will do, playing or not, also once the handshake has played to its end, which on a busy machine
    # it may have before the key is pressed: the status line then says "At the end", not "paused".)
    page.wait_for_selector("#player button:text-is('❚❚ Pause')")
    blur(page)
    page.keyboard.press(" ")
    page.wait_for_selector("#player button:text-is('▶ Play')")
    for _ in range(12):
        pos, _total = position(page)
        if pos == 0:
            break
        page.keyboard.press("ArrowLeft" if pos % 2 else "p")
        wait_position(page, pos - 1)
    assert position(page)[0] == 0
    page.wait_for_selector(".play-status:has-text('paused · element 0 of')")
    page.wait_for_selector("#sequence .seq-empty:not([hidden])")
    page.keyboard.press("ArrowRight")  # step to the first greeting
    wait_position(page, 1)
    page.wait_for_selector("#sequence .seq-row[data-index='0']:not(.loading)")
    assert rows(page) == ["Greeting 3.1 NULL"]

    # The greeting's octet table: the 10-octet signature as 23/ZMTP draws it, the version, NULL.
    select_row(page, "Greeting")
    table = octet_fields(page)
    assert table["title"].startswith("Greeting (")
    f = by_name(table)
    # (all ten octets are the signature, as the ABNF says: %xFF padding %x7F)
    assert f["signature: %xFF"]["offsets"] == ["0"] and f["signature: %xFF"]["boxes"][0]["text"] == "%xFF"
    assert f["signature: padding"]["offsets"] == ["1 - 8"]
    assert f["signature: %x7F"]["offsets"] == ["9"] and f["signature: %x7F"]["boxes"][0]["text"] == "%x7F"
    assert f["version-major"]["boxes"][0]["text"] == "%x03" and f["version-major"]["offsets"] == ["10"]
    assert f["version-minor"]["boxes"][0]["text"] == "%x01" and f["version-minor"]["offsets"] == ["11"]
    assert f["mechanism"]["boxes"][0]["text"] == '"NULL"' and f["mechanism"]["offsets"] == ["12 - 31"]
    page.locator("#octets").screenshot(path=str(shots / "octets-greeting.png"))
    page.screenshot(path=str(shots / "session-greeting.png"))

    # A field clicked in the octet table is the field the hex dump highlights.
    page.click("#octets .oct-box[data-field='1']")  # padding, octets 1-8
    page.wait_for_selector("#hex .b.sel-field")
    got, want = highlighted_matches_field(page)
    assert got == want and len(want) == 8
    assert page.text_content("#tree .tree-field.selected .tf-name").startswith("padding")
    assert page.eval_on_selector_all("#octets .oct-box.selected", "els => els.length") >= 1

    # n steps on, p steps back; then space plays the rest of the handshake.
    page.keyboard.press("n")
    wait_position(page, 2)
    page.keyboard.press("p")
    wait_position(page, 1)
    page.keyboard.press(" ")
    page.wait_for_selector("#player button:text-is('❚❚ Pause')")  # (playing, also once at the end)
    page.wait_for_selector("#sequence .seq-row[data-index='3']:not(.loading)")
    labels = rows(page)
    assert "READY Socket-Type=PUSH" in labels and "READY Socket-Type=PULL" in labels
    # ↑ / ↓ move the selection.
    page.click("#sequence .seq-row[data-index='0']")
    blur(page)
    page.keyboard.press("ArrowDown")
    page.wait_for_selector("#sequence .seq-row.selected[data-index='1']")

    # The composer: a 300-octet first frame and a short second one.
    page.fill("textarea[aria-label='Frame 1']", "A" * 300)
    page.click("button:text-is('+ Frame')")
    page.fill("textarea[aria-label='Frame 2']", "second")
    infos = page.eval_on_selector_all(".composer-frame .frame-info", "els => els.map(e => e.textContent)")
    assert infos[0].startswith("300 octets · LONG (8-octet size) · MORE") and infos[1].endswith("· last")
    page.click("button:text-is('Send message')")
    row_long = "#sequence .seq-row:has(.seq-label:text('LONG size=300'))"
    page.wait_for_selector(row_long)
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('Message [2 frames]'))")
    select_row(page, "LONG size=300")
    f = by_name(octet_fields(page))
    assert "MORE|LONG" in f["flags"]["boxes"][0]["bytes"]
    assert f["size"]["offsets"] == ["1 - 8"] and f["size"]["boxes"][0]["text"] == "300"
    assert f["size"]["boxes"][0]["bytes"].split() == ["00", "00", "00", "00", "00", "00", "01", "2c"]
    assert f["body"]["offsets"][0].startswith("9 - ")
    page.click("#octets .oct-box[data-field='1']")  # the 8-octet size
    page.wait_for_selector("#hex .b.sel-field")
    got, want = highlighted_matches_field(page)
    assert got == want and len(want) == 8 and want[0][0] == "s2c"
    page.locator("#hex").screenshot(path=str(shots / "hex-long-size.png"))
    page.screenshot(path=str(shots / "session-long-frame.png"))
    page.locator("#tree").screenshot(path=str(shots / "tree-long-frame.png"))

    # And the other way round: a byte clicked in the hex dump selects its field in the tree and the table.
    first_body = want[-1][1] + 1
    line = page.locator("#hex .hex-line.s2c", has=page.locator(".b.sel-field")).first
    line_off = int(line.locator(".hex-off").text_content(), 16)
    line.locator(f".hex-bytes .b[data-k='{first_body - line_off}']").click()
    page.wait_for_selector("#tree .tree-field.selected .tf-name:text-is('body: ')")
    got, want = highlighted_matches_field(page)
    visible = [g for g in got if g in want]
    assert visible and visible == got, "the hex dump highlights bytes outside the body field"

    # The hostile payload is data: its characters are shown, nothing is parsed as HTML, no dialog opens.
    page.click(".composer-frame:nth-child(2) button[title='Remove this frame']")
    page.fill("textarea[aria-label='Frame 1']", HOSTILE)
    page.click("button:text-is('Send message')")
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('size=28'))")
    select_row(page, "size=28")
    page.wait_for_timeout(300)  # time for an onerror handler to fire, were there an <img>
    assert page.evaluate("() => document.querySelectorAll('img, script:not([type=module]), iframe').length") == 0
    body = by_name(octet_fields(page))["body"]
    assert "".join(b["text"] for b in body["boxes"]).replace('""', "").startswith('"<img src=x onerror=')
    assert HOSTILE in page.text_content("#tree")
    assert "<img src=x onerror=alert" in page.text_content("#sequence")
    ascii_of_element = page.eval_on_selector_all(
        "#hex .hex-ascii .b.sel-el, #hex .hex-ascii .b.sel-field", "els => els.map(e => e.textContent).join('')")
    assert ascii_of_element == ".." + HOSTILE  # flags and size octets, then the payload's characters
    assert page.problems.dialogs == []
    page.screenshot(path=str(shots / "session-hostile-payload.png"))
    page.locator("#sequence").screenshot(path=str(shots / "sequence.png"))
    page.locator("#octets").screenshot(path=str(shots / "octets-hostile-frame.png"))
    page.locator("#tree").screenshot(path=str(shots / "tree-hostile-frame.png"))

    # Large text still lays the workbench out.
    page.click("#large-toggle")
    page.wait_for_selector("html.large")
    page.screenshot(path=str(shots / "session-large-text.png"))
    page.click("#large-toggle")


def test_paste_mode_decodes_the_worked_example(page, live_server, artifacts):
    shots = artifacts("playground")
    page.goto(f"{live_server.base}/index.html")
    page.click("#tab-paste")
    page.fill("textarea.paste-text", WORKED_READY)
    page.wait_for_selector(".paste-reading:text('Plain hex: 43 octets c2s')")
    page.click("#pane-paste button:text-is('Decode')")
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('READY'))")
    assert "READY Socket-Type=DEALER Identity=\"\"" in rows(page)
    # The READY is what gets shown (not the note that there was no greeting).
    page.wait_for_selector("#octets .octets-title:text-matches('^READY')")
    table = octet_fields(page)
    seen = [(f["name"], f["offsets"], [b["text"] for b in f["boxes"]]) for f in table["fields"]]
    assert ("flags", ["0"], ["%x04"]) in seen
    assert ("size", ["1"], ["41"]) in seen
    assert ("command-name", ["3 - 7"], ['"READY"']) in seen
    assert ("property-name", ["9 - 19"], ['"Socket-Type"']) in seen
    assert ("property-value", ["24 - 29"], ['"DEALER"']) in seen
    assert ("property-name", ["31 - 38"], ['"Identity"']) in seen
    assert ("value-size", ["39 - 42"], ["0"]) in seen
    page.screenshot(path=str(shots / "paste-worked-example.png"))
    page.locator("#octets").screenshot(path=str(shots / "paste-octets.png"))

    # The example Follow TCP Stream dump: both directions, the lifelines named after the READYs.
    page.click("#pane-paste button:text-is('Example')")
    page.wait_for_selector(".paste-reading:text('Follow TCP Stream hex dump')")
    page.click("#pane-paste button:text-is('Decode')")
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('My Message'))")
    assert rows(page)[:4] == ["Greeting 3.1 NULL", "Greeting 3.1 NULL", "READY Socket-Type=PULL",
                              "READY Socket-Type=PUSH"]
    assert "PULL" in page.text_content(".lifeline-head.c2s-side")
    assert "PUSH" in page.text_content(".lifeline-head.s2c-side")
    page.locator("#hex").screenshot(path=str(shots / "paste-hex.png"))
