"""Issue 16, the playground as a teacher uses it, in real Chromium against a real server: sessions that wait at
t = 0, the speed chosen before the first element, a message sent while paused, every fault the menu offers,
connection boundaries and why each connection closed, UTF-8 bodies as text, the ROUTER's routing id, the greeting
strategy and a SUB's topic. Screenshots go to test-artifacts/playground-teacher/."""

from __future__ import annotations

import contextlib
import re
import time
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from test_playground_browser import by_name, octet_fields, position, rows, select_row, wait_position

from testkit import poll

pytestmark = pytest.mark.browser
SPEED_QUARTER = "0.25\u00d7"  # what the player shows: 0.25 and a multiplication sign

HELLO_WORLD = "你好\uff0c世界"  # (the comma is the fullwidth one, U+FF0C)


STARTED: list[tuple[str, str]] = []  # (server base, session id) of the sessions a test started


@pytest.fixture(autouse=True)
def end_sessions() -> Iterator[None]:
    """Ends every session a test started (one address may run a few at once; the browser tests share one)."""
    yield
    while STARTED:
        base, session_id = STARTED.pop()
        with contextlib.suppress(OSError):
            urllib.request.urlopen(urllib.request.Request(f"{base}/api/sessions/{session_id}", method="DELETE"),
                                   timeout=5).close()


def peer_field(page: Any, role: str, label: str) -> Any:
    return page.locator(f"fieldset.peer-{role} label.field", has=page.locator(f".field-label:text-is('{label}')"))


def start(page: Any, base: str, server: str, client: str, *, autoplay: bool = False, tcp: bool = False,
          setup: Any = None) -> None:
    page.goto(f"{base}/index.html")
    peer_field(page, "server", "Socket").locator("select").select_option(server)
    peer_field(page, "client", "Socket").locator("select").select_option(client)
    if tcp:
        page.check("input[name='mode'][value='tcp']")
    if autoplay and page.locator("input[name='autoplay']").count():  # (before issue 16 every session played)
        page.check("input[name='autoplay']")
    if setup is not None:
        setup(page)
    page.click("button:text-is('Start session')")
    page.wait_for_selector(".play-status:has-text('element')")
    page.wait_for_url(re.compile(r"[?&]session="))
    STARTED.append((base, parse_qs(urlparse(page.url).query)["session"][0]))


def wait_rows(page: Any, count: int) -> None:
    page.wait_for_function("(n) => { const m = /element (\\d+) of/.exec(document.querySelector('.play-status')"
                           ".textContent); return m && Number(m[1]) >= n; }", arg=count)


FIND_MARK_JS = """async ([pattern, budget]) => {
  // The newest mark whose text matches, in view or not: the sequence draws only the rows in view, so scroll
  // from its end upwards (a reconnect loop makes it long, and what a test waits for is recent), within a
  // time budget, and come back. Returns [the match or null, every mark text seen].
  const view = document.querySelector('#sequence .seq-viewport');
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const re = new RegExp(pattern);
  const seen = [];
  const look = () => {
    for (const e of [...document.querySelectorAll('#sequence .seq-mark .mark-text')].reverse()) {
      if (!seen.includes(e.textContent)) seen.push(e.textContent);
      if (re.test(e.textContent)) return e.textContent;
    }
    return null;
  };
  let found = look();
  const back = view.scrollTop;
  const until = performance.now() + budget;
  for (let top = view.scrollHeight; found === null && top > 0 && performance.now() < until;) {
    top = Math.max(0, top - Math.max(60, view.clientHeight - 60));
    view.scrollTop = top;
    await frame();
    found = look();
  }
  view.scrollTop = back;
  return [found, seen];
}"""


def wait_mark(page: Any, pattern: str, timeout: float = 60_000) -> str:
    """Waits until the sequence has a mark whose text matches the regular expression; returns that text."""
    deadline = time.monotonic() + timeout / 1000
    while True:
        # Each look may scroll up as far as the time left allows: a reconnect loop adds rows faster than a busy
        # machine's page scrolls through them, so a look of a fixed budget never reached an older mark.
        budget = max(2000, (deadline - time.monotonic()) * 1000)
        found, seen = page.evaluate(FIND_MARK_JS, [pattern, budget])
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"no mark matches {pattern!r}; the sequence has {seen}")
        page.wait_for_timeout(200)


def no_error(page: Any) -> None:
    status = page.locator("#status")
    if status.is_visible():
        assert "error" not in (status.get_attribute("class") or ""), status.text_content()


def inject(page: Any, fault: str, peer: str, seconds: float | None = None) -> None:
    page.locator("#faults select").first.select_option(label=fault)
    page.locator("#faults label.field", has=page.locator(".field-label:text-is('Peer')")).locator(
        "select").select_option(peer)
    if seconds is not None:
        page.fill("#faults input[type='number']", str(seconds))
    page.click("#faults button:text-is('Inject fault')")


def send(page: Any, side: str, *frames: str) -> None:
    page.locator("#composer label.field", has=page.locator(".field-label:text-is('Send from')")).locator(
        "select").select_option(side)
    page.fill("textarea[aria-label='Frame 1']", frames[0])
    for i, text in enumerate(frames[1:], start=2):
        if page.locator(f"textarea[aria-label='Frame {i}']").count() == 0:
            page.click("button:text-is('+ Frame')")
        page.fill(f"textarea[aria-label='Frame {i}']", text)
    page.click("button:text-is('Send message')")


def open_faults(page: Any) -> None:
    page.locator("details.box", has=page.locator("summary:text-is('Inject a fault')")).locator("summary").click()


def test_sessions_start_paused_and_the_speed_is_chosen_first(page, live_server, artifacts):
    """Item 2: a new session waits at t = 0; the speed set before the first element is the one it plays at."""
    shots = artifacts("playground-teacher")
    start(page, live_server.base, "DEALER", "ROUTER")
    page.wait_for_selector(".play-status:has-text('paused · element 0 of 0')")
    time.sleep(1.0)
    assert position(page) == (0, 0) and rows(page) == []
    page.screenshot(path=str(shots / "paused-at-t0.png"))

    page.evaluate("() => { const s = document.querySelector('#player input[type=range]'); s.value = '0';"
                  " s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change')); }")
    page.wait_for_selector(f".speed-text:text-is('{SPEED_QUARTER}')")
    page.wait_for_timeout(300)  # the server's state comes back with the speed
    assert page.text_content(".speed-text") == SPEED_QUARTER
    page.keyboard.press("ArrowRight")  # the first byte's element: one step
    wait_position(page, 1)
    page.wait_for_selector("#sequence .seq-row[data-index='0']:not(.loading)")
    assert rows(page) == ["Greeting 3.1 NULL"]
    before_play = time.monotonic()  # (the server's player keeps its schedule on this same monotonic clock)
    page.click("#player button:text-is('▶ Play')")
    page.wait_for_selector(".play-status:has-text('playing')")
    wait_rows(page, 4)
    # At 0.25x one element every 1.2 s (0.3 s at 1x): Play shows element 2 at once, element 4 no earlier than
    # 2.4 s after Play. A lower bound, which a busy machine only makes later: an upper bound on how far the
    # player got after a second failed when the page saw element 2 late (quiet run on 9841c29: element 3).
    assert time.monotonic() - before_play >= 2 * 1.2 - 0.05
    assert page.text_content(".speed-text") == SPEED_QUARTER


def test_a_message_sent_while_paused_is_queued_until_the_next_step(page, live_server, artifacts):
    """Item 3."""
    shots = artifacts("playground-teacher")
    start(page, live_server.base, "PUSH", "PULL")
    for n in range(1, 5):
        page.click("#player button:text-is('Step »')")
        wait_position(page, n)
    send(page, "server", "queued")
    note = page.locator(".composer-note")
    note.wait_for(state="visible")
    assert "Queued" in note.text_content() and "next Step" in note.text_content()
    time.sleep(0.5)
    assert position(page)[0] == 4  # nothing moved by itself
    page.screenshot(path=str(shots / "queued-while-paused.png"))
    page.click("#player button:text-is('Step »')")
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('\"queued\"'))")
    note.wait_for(state="hidden")


def test_every_fault_the_simulated_menu_offers_works_and_is_marked(page, live_server, artifacts):
    """Item 1: DEALER/ROUTER, simulated: each fault of the menu, with the form's arguments, is injected (no
    internal error) and marked in the sequence where it struck; Kill is not offered."""
    shots = artifacts("playground-teacher")
    start(page, live_server.base, "ROUTER", "DEALER", autoplay=True)
    wait_rows(page, 4)
    open_faults(page)
    offered = page.locator("#faults select").first.locator("option").all_text_contents()
    assert offered == ["Corrupt a byte", "Split writes", "Delay", "Wrong mechanism", "Stop answering PING",
                       "Close the connection"]

    inject(page, "Split writes", "client")
    assert wait_mark(page, "^Fault: client → server") == "Fault: client → server goes one octet per TCP write"
    send(page, "client", "split")
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('\"split\"'))")

    inject(page, "Delay", "server", seconds=1)
    assert re.search(r"server → client held until t = [\d.]+ s", wait_mark(page, "held until"))

    inject(page, "Corrupt a byte", "client")
    armed = wait_mark(page, "^Fault armed: .* is corrupted when written")
    offset = re.search(r"octet (\d+) of client → server", armed).group(1)
    send(page, "client", "doomed")  # its first octet is the one: flags 0x00 become 0xFF (LONG, MORE, COMMAND...)
    wait_mark(page, f"^Fault: octet {offset} of client → server corrupted$")
    page.screenshot(path=str(shots / "fault-corrupt.png"))

    inject(page, "Close the connection", "client")
    assert "Fault: the client closes the connection" in wait_mark(page, "closes the connection")
    assert "closed by the client: connection closed (fault)" in wait_mark(page, "^Connection 0 closed")
    wait_mark(page, "^Connection 1 opens")
    no_error(page)
    page.screenshot(path=str(shots / "fault-close.png"))
    page.locator("#sequence").screenshot(path=str(shots / "sequence-marks.png"))
    page.set_viewport_size({"width": 1280, "height": 720})
    page.wait_for_timeout(300)
    page.screenshot(path=str(shots / "fault-close-1280x720.png"))


def test_tcp_sessions_offer_kill_and_mark_it(page, live_server, artifacts):
    """Item 1, real TCP peers: Kill the peer is offered there and works; the simulation-only faults are not."""
    start(page, live_server.base, "PUSH", "PULL", autoplay=True, tcp=True)
    wait_rows(page, 4)
    open_faults(page)
    offered = page.locator("#faults select").first.locator("option").all_text_contents()
    assert "Kill the peer" in offered and "Wrong mechanism" not in offered
    inject(page, "Corrupt a byte", "server")
    send(page, "server", "zapped")
    assert re.search(r"octet \d+ of server → client corrupted", wait_mark(page, "corrupted"))
    no_error(page)
    inject(page, "Kill the peer", "server")
    wait_mark(page, "^Fault: the server is killed")
    wait_mark(page, "^Connection 0 closed by the")
    # (The client then reconnects to the tap, which cannot reach the dead server: the page says so.)


def test_reconnects_and_heartbeat_timeouts_mark_each_connection(page, live_server, artifacts):
    """Item 4: a wrong mechanism's reconnect loop and a heartbeat timeout, each connection's end and why."""
    shots = artifacts("playground-teacher")
    start(page, live_server.base, "ROUTER", "DEALER", autoplay=True)
    wait_rows(page, 4)
    page.evaluate("() => { const s = document.querySelector('#player input[type=range]'); s.value = '6';"
                  " s.dispatchEvent(new Event('change')); }")
    open_faults(page)
    inject(page, "Stop answering PING", "server")
    why = wait_mark(page, "^Connection 0 closed by the client")
    assert "heartbeat timeout" in why
    wait_mark(page, "^Connection 1 opens")
    page.click("#player button:text-is('❚❚ Pause')")
    page.wait_for_selector(".play-status:has-text('paused')")
    # The count is of elements: the marks' rows are not counted. (The sequence redraws on a frame of its own: it
    # may be a position behind the player when first read.)
    shown, at = poll(lambda: (int(re.match(r"([\d,]+) elements?", page.text_content("#sequence .seq-count"))
                                       .group(1).replace(",", "")), position(page)[0]),
                     lambda v: v[0] == v[1], pause=lambda: page.wait_for_timeout(50))
    assert shown == at
    page.click("#player button:text-is('▶ Play')")
    page.locator("#sequence").screenshot(path=str(shots / "heartbeat-timeout.png"))

    inject(page, "Wrong mechanism", "client")
    wait_mark(page, "^Fault: the client now announces PLAIN")
    why = wait_mark(page, "^Connection 2 closed by the (server|client): mechanism mismatch")
    assert "PLAIN" in why
    wait_mark(page, "^Connection 3 opens")
    page.locator("#sequence").screenshot(path=str(shots / "reconnect-loop.png"))
    page.screenshot(path=str(shots / "reconnect-loop-page.png"))

    # A PLAIN server refusing the password: ERROR, and the connection it ends.
    def plain(p: Any) -> None:
        for role, password in (("server", "secret"), ("client", "wrong")):
            peer_field(p, role, "Mechanism").locator("select").select_option("PLAIN")
            peer_field(p, role, "Username").locator("input").fill("teacher")
            peer_field(p, role, "Password").locator("input").fill(password)

    start(page, live_server.base, "REP", "REQ", autoplay=True, setup=plain)
    assert wait_mark(page, "^Connection 0 closed") == \
        'Connection 0 closed by the server after ERROR "Invalid username or password"'
    wait_mark(page, "^Connection 1 opens")
    page.locator("#sequence").screenshot(path=str(shots / "plain-error.png"))


def test_utf8_bodies_show_as_text(page, live_server, artifacts):
    """Item 5: the sequence row, the explanation and the details summary show the text; the hex dump has a
    UTF-8 mode."""
    shots = artifacts("playground-teacher")
    start(page, live_server.base, "PUSH", "PULL", autoplay=True)
    wait_rows(page, 4)
    send(page, "server", HELLO_WORLD)
    page.wait_for_selector(f"#sequence .seq-row:has(.seq-label:text('\"{HELLO_WORLD}\"'))")
    assert f'Message [1 frame] "{HELLO_WORLD}"' in rows(page)
    select_row(page, "Frame size=15")
    assert HELLO_WORLD in page.text_content("#explain")
    assert "\\xe4" not in page.text_content("#explain") + page.text_content("#tree")
    summary = page.locator("#tree .tree-leaf", has=page.locator(".tf-name:text-matches('^body')")).first
    assert HELLO_WORLD in summary.text_content()
    page.click("#hex button:text-is('UTF-8')")
    page.wait_for_selector("#hex .hex-utf8")
    text = page.eval_on_selector_all("#hex .hex-line.s2c .hex-ascii", "els => els.map(e => e.textContent).join('')")
    assert HELLO_WORLD in text
    # The glyphs are drawn (a CJK font is installed): wider than the five replacement boxes of a missing font.
    width = page.evaluate("(t) => { const c = document.createElement('canvas').getContext('2d');"
                          " c.font = '16px sans-serif'; return c.measureText(t).width; }", HELLO_WORLD)
    assert width > 60
    page.screenshot(path=str(shots / "utf8-body.png"))
    page.set_viewport_size({"width": 1280, "height": 720})
    page.wait_for_timeout(300)
    page.screenshot(path=str(shots / "utf8-body-1280x720.png"))
    page.locator("#hex").screenshot(path=str(shots / "utf8-hex.png"))


def test_router_composer_greeting_strategy_and_sub_topic(page, live_server, artifacts):
    """Item 6: a ROUTER's first frame is its routing id (not on the wire); the greeting choice changes the
    signature's padding and how it is written; a SUB subscribes to the form's topic."""
    shots = artifacts("playground-teacher")

    def full_client(p: Any) -> None:
        p.fill("fieldset.peer-server input[placeholder='optional']", "")
        p.fill("fieldset.peer-client input[placeholder='optional']", "abc")
        p.select_option("select[name='client-greeting']", "full")

    start(page, live_server.base, "ROUTER", "DEALER", autoplay=True, setup=full_client)
    wait_rows(page, 4)
    page.locator("#composer label.field", has=page.locator(".field-label:text-is('Send from')")).locator(
        "select").select_option("server")
    page.fill("textarea[aria-label='Frame 1']", "abc")
    page.click("button:text-is('+ Frame')")
    page.fill("textarea[aria-label='Frame 2']", "hi")
    infos = page.eval_on_selector_all(".composer-frame .frame-info", "els => els.map(e => e.textContent)")
    assert infos[0].startswith("routing id (3 octets)") and "never goes on the wire" in infos[0]
    assert infos[1].startswith("2 octets · short (1-octet size) · last")
    assert page.text_content(".composer-summary").startswith("1 frame, 4 octets on the wire")
    page.screenshot(path=str(shots / "router-composer.png"))
    page.click("button:text-is('Send message')")
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('Message [1 frame] \"hi\"'))")

    # The client chose 23/ZMTP's full greeting: zero padding; the server libzmq's: identity length + 1 = 1.
    select_row(page, "Greeting")  # the first row: the client's (c2s)
    assert by_name(octet_fields(page))["signature: padding"]["boxes"][0]["text"] == "%x00...%x00"
    page.click("#octets .oct-box[data-field='1']")  # the padding, in the hex dump: eight zeros
    page.wait_for_selector("#hex .b.sel-field")
    assert page.eval_on_selector_all("#hex .hex-line.c2s .hex-bytes .b.sel-field",
                                     "els => els.map(e => e.textContent)") == ["00"] * 8
    page.locator("#sequence .seq-row[data-index='1']").click()
    page.wait_for_selector("#octets .octets-title:text-matches('s2c')")
    page.click("#octets .oct-box[data-field='1']")
    page.wait_for_selector("#hex .hex-line.s2c .b.sel-field")
    assert page.eval_on_selector_all("#hex .hex-line.s2c .hex-bytes .b.sel-field",
                                     "els => els.map(e => e.textContent)") == ["00"] * 7 + ["01"]

    # A SUB with a topic subscribes to it.
    start(page, live_server.base, "PUB", "SUB", autoplay=True,
          setup=lambda p: p.fill("input[name='client-subscribe']", "weather"))
    page.wait_for_selector("#sequence .seq-row:has(.seq-label:text('SUBSCRIBE'))")
    assert any(r.startswith("SUBSCRIBE") and '"weather"' in r for r in rows(page))
    page.screenshot(path=str(shots / "sub-topic.png"))


def test_curve_boxes_are_shown_decrypted_under_the_box(page, live_server, artifacts):
    """Issue 20.4: our own peers know their CURVE session keys, so the playground opens every box: READY and
    INITIATE with their properties, each MESSAGE's frame, drawn over the box's octets."""
    shots = artifacts("playground-curve")

    def curve(p: Any) -> None:
        for role in ("server", "client"):
            peer_field(p, role, "Mechanism").locator("select").select_option("CURVE")

    start(page, live_server.base, "ROUTER", "DEALER", autoplay=True, setup=curve)
    send(page, "client", "", "秘密 secret")
    page.wait_for_selector("#sequence .seq-row:has-text('秘密 secret')")
    no_error(page)
    labels = page.eval_on_selector_all("#sequence .seq-row .seq-label", "els => els.map((e) => e.textContent)")
    assert any("INITIATE" in t and "Socket-Type=DEALER" in t for t in labels), labels
    assert any("READY" in t and "Socket-Type=ROUTER" in t for t in labels), labels
    page.locator("#sequence .seq-row", has=page.locator(".seq-label", has_text="秘密 secret")).last.click()
    page.wait_for_selector("#octets .oct-name:text-is('frame 2')")
    boxes = page.eval_on_selector_all("#octets .oct-box .oct-text", "els => els.map((e) => e.textContent)")
    assert any("秘密 secret" in b for b in boxes), boxes
    page.screenshot(path=str(shots / "decrypted-message.png"))
