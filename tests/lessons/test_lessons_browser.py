"""The lessons page in real Chromium: a teacher presents, a student follows across three steps, wanders off,
and re-syncs with "Follow the teacher"; the teacher's token goes in its socket's first message, never in a URL.
Screenshots go to test-artifacts/lessons/."""

from __future__ import annotations

import json
import re

import pytest

from testkit import VIEWPORT, chromium, poll

pytestmark = pytest.mark.browser



@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def open_page(browser, errors: list[str], urls: list[str] | None = None, sent: list[tuple[str, str]] | None = None):
    """A page in a context of its own; `urls` collects every URL it requests (websockets too), `sent` every
    (websocket URL, text frame) it sends."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(30_000)  # (a cap on waits for a state, as tests/browser's pages have)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    if urls is not None:
        page.on("request", lambda req: urls.append(req.url))

        def socket(ws) -> None:
            urls.append(ws.url)
            if sent is not None:
                ws.on("framesent", lambda payload: sent.append((ws.url, payload if isinstance(payload, str) else "")))

        page.on("websocket", socket)
    return context, page


def at_step(page, n: int, total: int) -> None:
    page.wait_for_selector(f".step-counter:text-is('Step {n} of {total}')")


def shown(page) -> dict:
    """What a page shows: step, selected sequence row, selected field, lit highlight chips."""
    return page.evaluate("""() => {
        const text = (sel) => { const el = document.querySelector(sel); return el ? el.textContent.trim() : null; };
        return {
          step: text('.step-counter'),
          row: text('.seq-row.selected .seq-num'),
          field: text('.explain-name'),
          lit: [...document.querySelectorAll('.chip.lit')].map((c) => c.textContent.trim()),
          octetsLit: document.querySelectorAll('#octets .oct-box.lesson-hl').length,
          hexLit: document.querySelectorAll('#hex .b.lesson-hl').length,
        };
    }""")


def same_view(teacher, student, timeout: float = 30) -> None:
    """Waits until the student shows what the teacher shows, both read again each time: the teacher's page draws
    a step's highlights in frames after its counter too (a loaded machine once caught it with none lit yet)."""
    want, got = poll(lambda: (shown(teacher), shown(student)), lambda v: v[0] == v[1], timeout,
                     pause=lambda: student.wait_for_timeout(50))
    assert got == want


# Scrolls the hex dump to `top` px; once the next frame has drawn it, how far the dump can scroll.
SCROLL_HEX = """(top) => new Promise((done) => {
  const v = document.querySelector('#hex .hex-viewport');
  v.scrollTop = top;
  requestAnimationFrame(() => requestAnimationFrame(() => done(v.scrollHeight - v.clientHeight)));
})"""


def test_a_student_follows_wanders_and_resyncs(browser, live_server, artifacts):
    errors: list[str] = []
    base = live_server.base
    urls: list[str] = []  # every URL either page requested or showed
    sent: list[tuple[str, str]] = []  # the teacher's websocket frames
    t_ctx, teacher = open_page(browser, errors, urls, sent)
    s_ctx, student = open_page(browser, errors, urls)
    try:
        # The teacher opens a lesson by deep link and presents it.
        teacher.goto(f"{base}/lessons.html?lesson=greeting&step=1")
        at_step(teacher, 1, 9)
        teacher.click("#present-button")
        code = teacher.text_content("#join-code").strip()
        assert re.fullmatch(r"[A-HJ-NP-Z2-9]{6}", code)
        assert f"present={code}" in teacher.url
        token = teacher.evaluate(f"() => sessionStorage.getItem('zmtplab.class.{code}')")
        assert token and len(token) >= 24
        teacher.wait_for_selector(".conn-state:text-is('live')")
        # The token went as the first frame of the teacher's socket, whose URL does not hold it.
        first = json.loads(sent[0][1])
        assert first == {"type": "auth", "token": token} and sent[0][0].endswith(f"/ws/classes/{code}?role=teacher")
        urls.append(teacher.url)

        # The student joins with the code and lands where the teacher is.
        student.goto(f"{base}/lessons.html?join={code}")
        at_step(student, 1, 9)
        student.wait_for_selector("#follow-state:text-is('Following the teacher')")
        teacher.wait_for_selector("#student-count:text-is('1 student · 1 following')")
        same_view(teacher, student)
        assert shown(student)["octetsLit"] >= 8  # all eight greeting fields are lit in the octet table
        teacher.screenshot(path=str(artifacts / "01-teacher-step1.png"))
        student.screenshot(path=str(artifacts / "01-student-step1.png"))

        # A field the teacher focuses is mirrored: "%x7F" of step 1.
        teacher.click(".chip >> nth=2")
        teacher.wait_for_selector(".explain-name:text-is('signature-end')")
        student.wait_for_selector(".explain-name:text-is('signature-end')")
        same_view(teacher, student)
        student.screenshot(path=str(artifacts / "02-student-step1-field.png"))

        # Three steps, each mirrored: step, element, field and highlights. (Step 2 asks which octet tells 1.0
        # apart: it lights %xFF only, and selects it.)
        teacher.click("button:text-is('Next ▶')")
        at_step(student, 2, 9)
        same_view(teacher, student)
        assert shown(student)["field"] == "signature" and shown(student)["lit"] == ["%xFF"]

        teacher.click("button:text-is('Next ▶')")
        at_step(student, 3, 9)
        same_view(teacher, student)
        teacher.click("button:text-is('Next ▶')")
        at_step(student, 4, 9)
        same_view(teacher, student)
        assert shown(student)["row"] == "1" and shown(student)["hexLit"] == 16  # 8 padding octets, hex and text
        teacher.screenshot(path=str(artifacts / "03-teacher-step4.png"))
        student.screenshot(path=str(artifacts / "03-student-step4.png"))

        # The student wanders: another element, then a step of their own.
        student.click(".seq-row[data-index='1']")
        student.wait_for_selector("#follow-state:text-is('Exploring on your own')")
        teacher.wait_for_selector("#student-count:text-is('1 student · 0 following')")
        student.click("button:text-is('Next ▶')")
        at_step(student, 5, 9)
        for _ in range(3):  # meanwhile the teacher goes on to step 7
            teacher.click("button:text-is('Next ▶')")
        at_step(teacher, 7, 9)
        student.wait_for_timeout(400)
        assert shown(student)["step"] == "Step 5 of 9"  # not pulled back while wandering
        student.screenshot(path=str(artifacts / "04-student-wandering.png"))
        teacher.screenshot(path=str(artifacts / "04-teacher-step7.png"))

        # "Follow the teacher" re-syncs at once.
        student.click("#follow-button")
        at_step(student, 7, 9)
        student.wait_for_selector("#follow-state:text-is('Following the teacher')")
        teacher.wait_for_selector("#student-count:text-is('1 student · 1 following')")
        same_view(teacher, student)
        teacher.click("button:text-is('Next ▶')")  # and follows again from there
        at_step(student, 8, 9)
        same_view(teacher, student)
        student.screenshot(path=str(artifacts / "05-student-resynced.png"))
        teacher.screenshot(path=str(artifacts / "05-teacher-step8.png"))

        # The teacher reloads the page: the class resumes with the same code, and the student stays in it.
        teacher.reload()
        teacher.wait_for_selector(f"#join-code:text-is('{code}')")
        teacher.wait_for_selector(".conn-state:text-is('live')")
        teacher.wait_for_selector("#student-count:text-is('1 student · 1 following')")
        at_step(teacher, 8, 9)
        urls.append(teacher.url)
        # The resumed socket sent the token (from sessionStorage) as its first frame again.
        resumed = [text for url, text in sent if url == sent[0][0]]
        assert sum(1 for text in resumed if json.loads(text)["type"] == "auth") == 2
        teacher.click("button:text-is('Next ▶')")
        at_step(student, 9, 9)
        same_view(teacher, student)

        # The teacher ends the class; the student is told and keeps the page.
        teacher.click("button:text-is('End class')")
        student.wait_for_selector(".class-bar.idle .error:text-is('The class has ended.')")
        teacher.wait_for_selector("#present-button")
        assert "join=" not in student.url and "present=" not in teacher.url
        student.screenshot(path=str(artifacts / "06-student-class-ended.png"))

        # A question answered by clicking a byte, on the student's own screen.
        student.goto(f"{base}/lessons.html?lesson=framing&step=2")
        at_step(student, 2, 6)
        line = student.locator("#hex .hex-line.s2c", has=student.locator(".hex-off:text-is('00000068')"))
        # The dump draws the lines in view: once it has its bytes, go down it 40 px at a time (each drawn in the next
        # frame) until the frame's line is there, to the dump's end at most, however long that takes to draw.
        student.wait_for_selector("#hex .hex-line")
        top, end = 0, 0
        while not line.count() and top <= end:
            end = student.evaluate(SCROLL_HEX, top)
            top += 40
        line.locator(".hex-bytes .b[data-k='1']").click()  # the frame at s2c offset 104: a size octet first
        student.click("button:text-is('Check my answer')")
        student.wait_for_selector(".answer-result.wrong")
        line.locator(".hex-bytes .b[data-k='0']").click()  # then its flags octet
        student.click("button:text-is('Check my answer')")
        student.wait_for_selector(".answer-result.right")
        student.screenshot(path=str(artifacts / "07-student-answered.png"))
        urls.append(student.url)
    finally:
        t_ctx.close()
        s_ctx.close()
    assert not errors, errors
    assert any("/ws/classes/" in url for url in urls)
    leaked = [url for url in urls if token in url]
    assert not leaked, leaked
