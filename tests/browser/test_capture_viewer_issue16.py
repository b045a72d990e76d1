"""Issue 16's capture viewer items in real Chromium against a real server: search across every connection
(hits keep their connection and index), identities and every connection row shown (7); a search the
server's time limit stopped says how far it got and searches further (17.2); deleting captures from the
viewer and the list of this client's captures to reopen (9); one time convention, the other on hover (10).
Screenshots go to test-artifacts/capture-issue16/."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from testkit import LiveServer, poll
from zmtplab.capture.dissect import dissect_capture
from zmtplab.capture.pcapwriter import PcapngWriter
from zmtplab.engine.commands import ready_body
from zmtplab.engine.framing import encode_frame, encode_message
from zmtplab.engine.greeting import encode_greeting
from zmtplab.web import Settings, create_app

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
CONNECTIONS = 5
FILLER = 300  # messages per connection besides its hello: several store blocks each


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Settings]]:
    """A server of its own: three captures per client address at most (so the limit is reached quickly)."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("issue16-data"), frontend_dir=REPO / "frontend",
                        progress_interval=0.1, max_captures_per_client=3)
    with LiveServer(create_app(settings), name="issue16-server") as srv:
        yield srv, settings


def routers_and_dealers(path: Path) -> Path:
    """Five DEALERs (identities client-0..client-4) talking to a ROUTER, one connection each; DEALER k
    sends "hello from k" among FILLER other messages."""
    with path.open("wb") as f:
        writer = PcapngWriter(f)
        for k in range(CONNECTIONS):
            tcp = writer.add_connection(client=("10.0.0.1", 40000 + k), server=("10.0.0.2", 5555))
            t = 1000.0 + k
            tcp.handshake(t)
            tcp.send("s2c", encode_greeting(), t + 0.001)
            tcp.send("c2s", encode_greeting(), t + 0.002)
            tcp.send("s2c", encode_frame(ready_body({"Socket-Type": b"ROUTER", "Identity": b""}), command=True),
                     t + 0.003)
            tcp.send("c2s", encode_frame(ready_body({"Socket-Type": b"DEALER", "Identity": f"client-{k}".encode()}),
                                         command=True), t + 0.004)
            for i in range(FILLER):
                if i == FILLER // 2:
                    tcp.send("c2s", encode_message([b"", f"hello from {k}".encode()]), t + 0.01 + i * 1e-4)
                tcp.send("c2s", encode_message([b"", f"filler {i}".encode()]), t + 0.01 + i * 1e-4 + 5e-5)
            tcp.close(t + 0.5)
    return path


def capture_id(page: Any) -> str:
    ids = parse_qs(urlparse(page.url).query).get("id")
    assert ids, f"no capture id in {page.url}"
    return ids[0]


def url_params(page: Any) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def open_capture(page: Any, base: str, path: Path) -> None:
    page.goto(f"{base}/capture.html")
    page.set_input_files("#capture-file", str(path))
    page.wait_for_selector(f"#capture-title:text-is('{path.name}')", timeout=30_000)
    page.wait_for_selector("#sequence .seq-row:not(.loading)")


def delete_all(page: Any, base: str) -> None:
    """Removes this address's captures (other tests of the module left), through the API."""
    for c in page.request.get(f"{base}/api/corpus/captures").json()["captures"]:
        page.request.delete(f"{base}/api/captures/{c['id']}")


def filter_count(page: Any) -> str:
    return page.locator("#filter .filter-count").text_content()


def test_search_spans_every_connection_and_keeps_connection_and_index(page, server, artifacts, tmp_path):
    srv, _ = server
    shots = artifacts("capture-issue16")
    path = routers_and_dealers(tmp_path / "five_dealers.pcapng")
    truth = [e for e in dissect_capture(path) if e["conn"] == "2"]
    hello = [i for i, e in enumerate(truth) if e["kind"] in ("frame", "message")
             and (b"hello from 2".hex() in e.get("body", "") + "".join(e.get("frames", [])))]
    assert len(hello) == 2  # the frame and its message
    delete_all(page, srv.base)
    open_capture(page, srv.base, path)

    # Every connection has its row on screen (the panel is as tall as its rows), with its identities.
    rows = page.locator("table.connections tbody tr")
    assert rows.count() == CONNECTIONS
    body = page.locator("#connections .panel-body").bounding_box()
    for k in range(CONNECTIONS):
        box = rows.nth(k).bounding_box()
        assert box["y"] >= body["y"] - 1 and box["y"] + box["height"] <= body["y"] + body["height"] + 1, (k, box, body)
    headers = page.eval_on_selector_all("table.connections th", "els => els.map((e) => e.textContent)")
    col = headers.index("Identities c2s / s2c")
    assert rows.nth(2).locator("td").nth(col).text_content() == "client-2 / \u2013"
    assert page.locator("table.connections tbody tr.selected td").first.text_content() == "0"

    # Connection 0 is open; the search finds the text in connection 2 and says where it looked.
    page.fill("#filter input[type=search]", "hello from 2")
    page.press("#filter input[type=search]", "Enter")
    page.wait_for_function("() => /matching/.test(document.querySelector('#filter .filter-count').textContent)")
    assert filter_count(page) == f"2 matching in all {CONNECTIONS} connections"
    page.wait_for_function("(want) => JSON.stringify([...document.querySelectorAll('#sequence .seq-row .seq-num')]"
                           ".map((e) => e.textContent)) === JSON.stringify(want)", arg=[f"2:{i + 1}" for i in hello])
    page.screenshot(path=str(shots / "01-search-all-connections.png"))

    # Opening a hit opens its connection at that element; the list of hits stays.
    page.locator("#sequence .seq-row").nth(1).click()
    page.wait_for_selector("table.connections tbody tr.selected >> nth=0")
    page.wait_for_function("() => document.querySelector('table.connections tbody tr.selected td').textContent === '2'")
    page.wait_for_function("(i) => new URLSearchParams(location.search).get('el') === String(i)", arg=hello[1])
    assert url_params(page)["conn"] == "2"
    page.wait_for_selector("#tree .tree-node summary:has-text('Message')")
    assert page.locator("#sequence .seq-row").count() == 2
    assert page.locator("#sequence .seq-row.selected .seq-num").text_content() == f"2:{hello[1] + 1}"

    # "this connection only": connection 2 holds them, so 2 again, said so.
    page.check("#filter-this-conn")
    page.wait_for_function("() => /in connection 2/.test(document.querySelector('#filter .filter-count').textContent)")
    assert filter_count(page) == "2 matching in connection 2"
    page.wait_for_function("(want) => JSON.stringify([...document.querySelectorAll('#sequence .seq-row .seq-num')]"
                           ".map((e) => e.textContent)) === JSON.stringify(want)", arg=[str(i + 1) for i in hello])
    page.screenshot(path=str(shots / "02-this-connection.png"))


def test_a_time_limited_search_says_how_far_it_got_and_searches_further(page, server, artifacts, tmp_path):
    srv, settings = server
    shots = artifacts("capture-issue16")
    path = routers_and_dealers(tmp_path / "five_again.pcapng")
    elements = sum(1 for _ in dissect_capture(path))
    delete_all(page, srv.base)
    open_capture(page, srv.base, path)
    settings.search_max_seconds = 1e-6  # one block of events per request
    try:
        page.fill("#filter input[type=search]", "hello from 4")
        page.press("#filter input[type=search]", "Enter")
        page.wait_for_function("() => /searched/.test(document.querySelector('#filter .filter-count').textContent)")
        text = filter_count(page)
        assert text.startswith("0 matching so far in all 5 connections: searched ") and \
            text.endswith(f" of {elements:,} elements (the server answered with what it had found; Search further "
                          "counts the rest)"), text
        more = page.locator("#filter button:has-text('Search further')")
        assert more.is_visible()
        page.screenshot(path=str(shots / "03-partial-search.png"))
        for _ in range(60):
            before = filter_count(page)
            more.click()
            page.wait_for_function("(t) => document.querySelector('#filter .filter-count').textContent !== t "
                                   "&& !/searching/.test(document.querySelector('#filter .filter-count').textContent)",
                                   arg=before)
            if not more.is_visible():
                break
        assert filter_count(page) == "2 matching in all 5 connections"
        page.wait_for_function("() => [...document.querySelectorAll('#sequence .seq-row .seq-num')]"
                               ".map((e) => e.textContent.split(':')[0]).join() === '4,4'")
    finally:
        settings.search_max_seconds = 10.0


def test_delete_captures_and_reopen_them_from_the_list(page, server, artifacts, tmp_path, sample):
    srv, _ = server
    shots = artifacts("capture-issue16")
    delete_all(page, srv.base)
    names, ids = [], []
    for n in range(3):  # the limit of this server: three per address
        p = tmp_path / f"dealer_router_{n}.pcapng"
        p.write_bytes(sample("dealer_router.pcapng").read_bytes())
        names.append(p.name)
        open_capture(page, srv.base, p)
        ids.append(capture_id(page))

    # A fourth is refused, and the page says what to do.
    page.click("#open-another")
    page.wait_for_selector("#my-captures li >> nth=2")
    assert sorted(page.eval_on_selector_all("#my-captures .capture-open", "els => els.map((e) => e.textContent)")) \
        == names
    extra = tmp_path / "one_more.pcapng"
    extra.write_bytes(sample("dealer_router.pcapng").read_bytes())
    page.problems.expected.append("status of 429")  # (the browser logs the refused upload)
    page.set_input_files("#capture-file", str(extra))
    page.wait_for_selector("#upload .error:not([hidden])")
    assert "delete one" in page.locator("#upload .error").text_content()
    page.screenshot(path=str(shots / "04-limit-and-list.png"))

    # Delete one from the list: it goes from the server and the list; then the upload is taken.
    page.click(f"#my-captures button[aria-label='Delete {names[1]}']")
    page.wait_for_function("() => document.querySelectorAll('#my-captures li').length === 2")
    listed = [c["name"] for c in page.request.get(f"{srv.base}/api/corpus/captures").json()["captures"]]
    assert sorted(listed) == [names[0], names[2]]
    page.set_input_files("#capture-file", str(extra))
    page.wait_for_selector("#capture-title:text-is('one_more.pcapng')", timeout=30_000)

    # Delete the open capture from the viewer: back to the upload page, its id gone from the URL.
    extra_id = capture_id(page)
    page.click("#delete-capture")
    page.wait_for_selector("#upload-section:not([hidden])")
    assert "id" not in url_params(page)
    assert page.request.get(f"{srv.base}/api/captures/{extra_id}").status == 404
    assert page.locator("#status").text_content() == "Deleted one_more.pcapng from the server."

    # Reopen one from the list.
    page.wait_for_function("() => document.querySelectorAll('#my-captures li').length === 2")
    page.click(f"#my-captures .capture-open:text-is('{names[0]}')")
    page.wait_for_selector(f"#capture-title:text-is('{names[0]}')")
    assert capture_id(page) == ids[0]
    page.wait_for_selector("#sequence .seq-row:not(.loading)")


def test_times_one_convention_with_the_other_on_hover(page, server, artifacts, sample):
    srv, _ = server
    shots = artifacts("capture-issue16")
    delete_all(page, srv.base)
    open_capture(page, srv.base, sample("dealer_router.pcapng"))
    row = page.locator("#sequence .seq-row", has=page.locator(".seq-label", has_text="Socket-Type=DEALER")).first
    row.click()
    page.wait_for_selector("#tree .tree-leaf:has(.tf-name:text-is('Time: '))")
    seq_time = row.locator(".seq-time")
    leaf = page.locator("#tree .tree-leaf:has(.tf-name:text-is('Time: '))")
    relative = seq_time.text_content()
    # The details say what the sequence says (seconds since the connection's first packet) ...
    assert leaf.locator(".tf-value").text_content() == f"{relative} s"
    assert "UTC" not in leaf.text_content()
    # ... and both give the absolute UTC time on hover.
    utc = seq_time.get_attribute("title")
    assert utc and utc.endswith(" UTC") and utc.startswith("20"), utc
    assert leaf.get_attribute("title").startswith(utc)
    page.screenshot(path=str(shots / "05-times.png"))


def test_delete_captures_on_the_corpus_page(page, server, artifacts, tmp_path, sample):
    srv, _ = server
    shots = artifacts("capture-issue16")
    delete_all(page, srv.base)
    files = []
    for n in range(2):
        p = tmp_path / f"corpus_{n}.pcapng"
        p.write_bytes(sample("dealer_router.pcapng").read_bytes())
        files.append(p)
    page.goto(f"{srv.base}/corpus.html")
    page.wait_for_selector("#start-run")
    page.set_input_files("#corpus-file", [str(p) for p in files])
    page.wait_for_function("() => document.querySelectorAll('#picker li.pick-item').length === 2")
    ids = {c["name"]: c["id"] for c in page.request.get(f"{srv.base}/api/corpus/captures").json()["captures"]}
    # Each upload links to the viewer ...
    href = page.get_attribute("#picker li.pick-item:has-text('corpus_0.pcapng') a", "href")
    assert href == f"capture.html?id={ids['corpus_0.pcapng']}"
    page.screenshot(path=str(shots / "06-corpus-picker.png"))
    # ... and can be deleted: gone from the server and from the list.
    page.click("#picker button[aria-label='Delete corpus_1.pcapng']")
    page.wait_for_function("() => document.querySelectorAll('#picker li.pick-item').length === 1")
    assert page.locator("#picker .pick-note").text_content() == "corpus_1.pcapng deleted."
    assert page.request.get(f"{srv.base}/api/captures/{ids['corpus_1.pcapng']}").status == 404
    assert [c["name"] for c in page.request.get(f"{srv.base}/api/corpus/captures").json()["captures"]] == \
        ["corpus_0.pcapng"]


def test_a_new_search_ends_the_one_it_replaces(page, server, artifacts, sample):
    """On a capture where a search takes seconds, typing one search after another: each request given up
    is aborted, so the server stops its search and the next one is not refused for running too many."""
    srv, settings = server
    delete_all(page, srv.base)
    page.goto(f"{srv.base}/capture.html")
    page.set_input_files("#capture-file", str(sample("bulk.pcapng")))
    page.wait_for_selector("#capture-title:text-is('bulk.pcapng')", timeout=60_000)
    page.wait_for_function("() => !document.getElementById('dissect-notice')", timeout=120_000)
    page.wait_for_selector("#sequence .seq-row:not(.loading)")
    # Whole answers however busy the machine: no time bound ends a search early (a search that has filled its
    # page answers after search_first_seconds by default, with "so far").
    settings.search_max_seconds = settings.search_first_seconds = 60.0
    for q in ("x", "MSG", "msg 1", "topic"):  # each a few seconds of searching, given up after 0.6 s
        page.fill("#filter input[type=search]", q)
        page.press("#filter input[type=search]", "Enter")
        time.sleep(0.6)
    # Without the aborts, the third and fourth were refused (429: two searches of this client still ran).
    page.wait_for_function("() => /matching/.test(document.querySelector('#filter .filter-count').textContent)",
                           timeout=60_000)
    assert filter_count(page) == "40,000 matching in the connection"
    # Nothing left searching for a list nobody shows: a search given up stops at its next check, which on a
    # loaded machine can come after the last search has answered (seen once: one slot still held). The wait is
    # half the searches' own 60 s bound, so a search that was not stopped still fails it.
    busy = poll(lambda: dict(srv.app.state.captures.searches.busy), lambda b: not b, 30)
    assert not busy, busy
