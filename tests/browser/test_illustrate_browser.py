"""The illustrated page in Chromium, opened from disk with no server and scripts off: a field link lands on
its row, and printed to PDF on A4 and Letter every element sits whole on one page."""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zmtplab.cli import main

pytestmark = pytest.mark.browser

# Printable area in CSS pixels (96 per inch) inside the page's 14 mm x 12 mm margins.
PAPER = {"A4": (210, 297), "Letter": (215.9, 279.4)}
MARGIN_MM = (14, 12)


def px(mm: float) -> float:
    return mm / 25.4 * 96


ELEMENTS = 16  # the shared dealer_router capture's greetings, READYs, frames (and no expert notes)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory, sample: Any) -> Path:
    out = tmp_path_factory.mktemp("illustrated") / "dealer_router.html"
    assert main(["illustrate", str(sample("dealer_router.pcapng")), "-o", str(out)]) == 0
    return out


def test_read_from_disk_with_no_script(browser: Any, page_file: Path, artifacts: Any) -> None:
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 720})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_file.as_uri())
    assert page.locator("h1").inner_text() == "dealer_router.pcapng: ZMTP, illustrated"
    assert page.locator("article.element").count() == ELEMENTS
    # Follow a field's link in element 3's octet table: the page scrolls to that field's row.
    page.locator('table.octets a[href="#e3.size"]').click()
    assert page.url.endswith("#e3.size")
    row = page.locator('[id="e3.size"]')
    box = row.bounding_box()
    assert box is not None and 0 <= box["y"] < 720
    assert "Body size in one octet" in row.inner_text()
    assert "short-size = OCTET" in row.inner_text()
    # A link from the table of contents to an element.
    page.locator(f'nav.toc a[href="#e{ELEMENTS}"]').click()
    assert -1 <= page.locator(f"#e{ELEMENTS}").bounding_box()["y"] < 100
    page.screenshot(path=str(artifacts("illustrate") / "page.png"))
    assert requests == [page_file.as_uri()], "nothing but the file itself is loaded"
    context.close()


@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_printed_every_element_on_one_page(browser: Any, page_file: Path, paper: str, artifacts: Any) -> None:
    from pypdf import PdfReader

    width_mm, height_mm = PAPER[paper]
    content_w = px(width_mm - 2 * MARGIN_MM[1])
    content_h = px(height_mm - 2 * MARGIN_MM[0])
    page = browser.new_page(viewport={"width": int(content_w), "height": int(content_h)})
    page.goto(page_file.as_uri())
    page.emulate_media(media="print")
    heights = page.eval_on_selector_all("article.element", "els => els.map(e => e.getBoundingClientRect().height)")
    assert len(heights) == ELEMENTS and max(heights) < content_h, (paper, max(heights), content_h)
    assert page.eval_on_selector("article.element", "e => getComputedStyle(e).breakInside") == "avoid"
    # Each element's first line names its offset; its last line is the end of its fields table.
    marks = page.eval_on_selector_all("article.element", """els => els.map(e => {
        const lines = e.innerText.split('\\n').map(l => l.trim()).filter(Boolean);
        return [e.querySelector('.meta').innerText.match(/offset \\d+ of the \\w+ stream/)[0],
                lines[lines.length - 1].slice(0, 24)];
    })""")
    pdf = page.pdf(format=paper, print_background=True)
    page.close()
    reader = PdfReader(io.BytesIO(pdf))
    # (NFKC: the PDF's text has the font's ligatures, "ﬀ" for "ff")
    texts = [re.sub(r"\s+", " ", unicodedata.normalize("NFKC", p.extract_text())) for p in reader.pages]
    assert 3 <= len(texts) <= 12, len(texts)
    starts = []
    for first, _ in marks:
        pages = [i for i, t in enumerate(texts) if first in t]
        assert len(pages) == 1, (first, pages)
        starts.append((pages[0], texts[pages[0]].index(first)))
    for n, ((_, last), (where, at)) in enumerate(zip(marks, starts, strict=True)):
        following = [a for p, a in starts[n + 1:] if p == where]
        body = texts[where][at:following[0] if following else None]
        assert re.sub(r"\s+", " ", last) in body, f"element {n + 1} runs past page {where + 1} ({paper})"
    (artifacts("illustrate") / f"page-{paper}.pdf").write_bytes(pdf)


def downloaded(page: Any, click: Callable[[], None]) -> str:
    """The text of the file a click downloads."""
    with page.expect_download() as download:
        click()
    return Path(download.value.path()).read_text(encoding="utf-8")


def test_export_from_each_page(page: Any, live_server: Any, sample: Any) -> None:
    base = live_server.base
    # The playground: a running session.
    page.goto(f"{base}/index.html")
    page.click("button:text-is('Start session')")
    page.click("#player button:text-is('▶ Play')")
    page.wait_for_function("() => document.querySelectorAll('#sequence .seq-row').length >= 4")  # both READYs
    html = downloaded(page, lambda: page.click("#export-html"))
    assert "ZMTP, illustrated" in html and len(re.findall(r'<article class="element', html)) >= 4
    # The capture viewer: rows 3 to 4 of the open connection, numbered as the sequence numbers them (from 1).
    page.goto(f"{base}/capture.html")
    page.set_input_files("#capture-file", str(sample("dealer_router.pcapng")))
    page.wait_for_selector("#sequence .seq-row:not(.loading)", timeout=30_000)
    assert page.input_value(".illustrated-export input >> nth=0") == "1"
    rows = page.eval_on_selector_all("#sequence .seq-row", "rs => rs.slice(2, 4).map((r) => r.textContent)")
    assert all("READY" in r for r in rows), rows
    page.fill(".illustrated-export input >> nth=0", "3")
    page.fill(".illustrated-export input >> nth=1", "4")
    html = downloaded(page, lambda: page.click(".illustrated-export a"))
    assert re.findall(r'<article class="element[^"]*" id="(e\d+)"', html) == ["e1", "e2"]
    assert html.count("READY command") >= 2 and "Greeting" not in re.sub(r"<nav.*?</nav>", "", html, flags=re.S)
    # A lesson.
    page.goto(f"{base}/lessons.html?lesson=greeting&step=1")
    page.wait_for_selector(".lesson-title:not(:empty)")
    html = downloaded(page, lambda: page.click(".lesson-head a.button"))
    assert "Shown in steps " in html and "Step 1: " in html and 'id="e1.signature"' in html
