"""Issue 32 on the lessons page in real Chromium: a teacher's lecture (the header's links keep the class, the
questions keep their answers to themselves, answers collected in presenter mode)."""

from __future__ import annotations

import pytest
from test_lessons_browser import at_step, browser, open_page  # noqa: F401 (browser: the module's Chromium)

pytestmark = pytest.mark.browser


def present(page, base: str, lesson: str = "greeting", step: int = 1, total: int = 9) -> str:
    """The teacher opens a lesson at a step and presents it; returns the join code once the class is live."""
    page.goto(f"{base}/lessons.html?lesson={lesson}&step={step}")
    at_step(page, step, total)
    page.click("#present-button")
    page.wait_for_selector(".conn-state:text-is('live')")
    return page.text_content("#join-code").strip()


def test_the_header_links_do_not_take_the_teacher_out_of_the_class(browser, live_server):  # noqa: F811
    """Presenting, the other pages open in a new tab (and say so) and the page's own link shows the lesson list
    here: the class, its code and its students stay; students never see the teacher away."""
    errors: list[str] = []
    t_ctx, teacher = open_page(browser, errors)
    s_ctx, student = open_page(browser, errors)
    try:
        code = present(teacher, live_server.base)
        student.goto(f"{live_server.base}/lessons.html?join={code}")
        teacher.wait_for_selector("#student-count:text-is('1 student · 1 following')")
        # The class's other page takes the class along (the playground: issue 32.10); the others open in a new tab.
        playground = teacher.locator("header.topbar nav a", has_text="Playground")
        assert playground.get_attribute("href") == f"index.html?present={code}"
        assert playground.get_attribute("target") is None
        viewer = teacher.locator("header.topbar nav a", has_text="Capture viewer")
        assert viewer.get_attribute("target") == "_blank"
        assert "new tab" in (viewer.get_attribute("title") or "")
        with t_ctx.expect_page() as opened:
            viewer.click()
        opened.value.wait_for_load_state()
        assert opened.value.url.endswith("/capture.html")
        opened.value.close()
        teacher.locator("header.topbar nav a", has_text="Lessons").click()
        teacher.wait_for_selector("#lesson-list:not([hidden])")
        assert teacher.text_content("#join-code").strip() == code
        assert teacher.locator(".conn-state").text_content() == "live"
        assert student.locator(".class-bar").text_content().count("The teacher is away.") == 0
        teacher.wait_for_selector("#student-count:text-is('1 student · 1 following')")
        # Out of the class, the links are plain links again.
        teacher.click(".class-bar button:text-is('End class')")
        teacher.wait_for_selector("#present-button")
        assert playground.get_attribute("href") == "index.html" and viewer.get_attribute("target") is None
    finally:
        t_ctx.close()
        s_ctx.close()
    assert not errors, errors


def test_the_class_watches_the_teachers_playground_session(browser, live_server):  # noqa: F811
    """Issue 32.10: presenting, the teacher goes to the playground (the class comes along) and starts a topology;
    the students' page opens the playground and watches that session (their socket takes no command), step by step
    as the teacher steps it, with the teacher's selection; a link opens the session as it was at a step."""
    import re

    errors: list[str] = []
    t_ctx, teacher = open_page(browser, errors)
    s_ctx, student = open_page(browser, errors)
    try:
        code = present(teacher, live_server.base)
        student.goto(f"{live_server.base}/lessons.html?join={code}")
        at_step(student, 1, 9)
        teacher.locator("header.topbar nav a", has_text="Playground").click()
        teacher.wait_for_url(re.compile(rf"index\.html\?present={code}"))
        teacher.wait_for_selector(f"#join-code:text-is('{code}')")
        teacher.wait_for_selector(".conn-state:text-is('live')")
        teacher.wait_for_selector("#preset-menu option[value='load-balancing']", state="attached")
        teacher.select_option("#preset-menu", "load-balancing")
        teacher.get_by_role("checkbox", name="play at once", exact=True).uncheck()
        teacher.click("#start-preset")
        teacher.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='w3']")
        session = re.search(r"session=([0-9a-f]+)", teacher.url).group(1)

        student.wait_for_url(re.compile(rf"index\.html\?join={code}"))
        student.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='w3']")
        assert student.locator("#player button:text-is('Step »')").is_disabled(), "a student drives nothing"
        for n in (1, 2, 3):
            teacher.click("#player button:text-is('Step »')")
            student.wait_for_selector(f"#player .play-status:has-text('element {n} of')")
        teacher.locator("#sequence .seq-row").nth(1).click()
        student.wait_for_function("() => { const r = document.querySelector('#sequence .seq-row.selected');"
                                  " return r && r.dataset.index === '1'; }")
        assert session in (student.text_content("#status") or "")[:0] + student.evaluate(
            "() => document.getElementById('session-id').textContent")

        link = teacher.get_attribute("#link-at", "href")
        assert link.endswith(f"?session={session}&at=3")
        later = t_ctx.new_page()
        later.goto(f"{live_server.base}{link}")
        later.wait_for_selector("#player .play-status:has-text('as it was at element 3')")
        later.wait_for_function("() => document.querySelectorAll('#sequence .seq-row').length === 3")
        later.close()
    finally:
        t_ctx.close()
        s_ctx.close()
    assert not errors, errors


def test_a_question_does_not_show_its_answer_until_it_is_given(browser, live_server):  # noqa: F811
    """"Which byte says this frame is LONG?": the page neither selects nor lights the flags octet; the student
    clicks it in the octet table, checks, and then it is the one shown (in the explanation and the selection
    line, which counts octets by offset)."""
    errors: list[str] = []
    ctx, page = open_page(browser, errors)
    try:
        page.goto(f"{live_server.base}/lessons.html?lesson=framing&step=2")
        at_step(page, 2, 6)
        page.wait_for_selector(".explain-name")
        assert page.text_content(".explain-name") == "size"
        assert page.locator(".chip").all_text_contents() == ["size (8 octets)"]
        assert page.locator("#octets .oct-box.selected[data-field='0']").count() == 0
        page.click("#octets .oct-box[data-field='0']")
        page.wait_for_selector(".explain-name:text-is('flags')")
        assert "(offset 0)" in page.text_content(".lesson-panel")
        page.click("button:text-is('Check my answer')")
        page.wait_for_selector(".answer-result.right")
        assert page.text_content(".explain-name") == "flags"
        # A presentation clicker's PageDown and PageUp move through the steps (issue 32.8).
        page.keyboard.press("PageDown")
        at_step(page, 3, 6)
        page.keyboard.press("PageUp")
        at_step(page, 2, 6)
    finally:
        ctx.close()
    assert not errors, errors


def test_the_selection_line_names_the_field_in_the_pages_language(browser, live_server):  # noqa: F811
    """Under a question, the field chosen is named as the octet table names it, in the page's language: a message's
    "frame 2" is 第 2 帧 in Chinese, as the table and the tree say (it stayed "frame 2")."""
    errors: list[str] = []
    ctx, page = open_page(browser, errors)
    try:
        page.goto(f"{live_server.base}/lessons.html?lang=zh-CN&lesson=broker&step=3")
        page.wait_for_selector(".step-counter:text-is('第 3 步\uff0c共 6 步')")
        page.click("#octets .oct-box[data-field='0']")
        page.wait_for_selector(".explain-name:text-is('第 1 帧')")
        page.wait_for_function("t => document.querySelector('.lesson-panel').textContent.includes(t)",
                               arg="已选择\uff1a第 1 帧\uff08偏移量 ")
        assert "frame 1" not in page.text_content(".lesson-panel")
    finally:
        ctx.close()
    assert not errors, errors


def test_twenty_students_answer_and_the_teacher_reveals_the_tally(browser, live_server, artifacts):  # noqa: F811
    """Presenting "What is the largest body a short frame can carry?": one student answers on the page, nineteen
    over the class socket; the teacher's page says how many answered, live, and what they answered only once the
    teacher reveals it, to the teacher and to the class."""
    import contextlib
    import json

    from websockets.sync.client import connect

    errors: list[str] = []
    t_ctx, teacher = open_page(browser, errors)
    s_ctx, student = open_page(browser, errors)
    others = []
    sockets = contextlib.ExitStack()
    try:
        code = present(teacher, live_server.base, "framing", 3, 6)
        student.goto(f"{live_server.base}/lessons.html?join={code}")
        at_step(student, 3, 6)
        base = f"{live_server.ws_base}/ws/classes/{code}?role=student"
        for _ in range(19):
            ws = sockets.enter_context(connect(base))
            assert json.loads(ws.recv(timeout=10))["type"] == "hello"
            others.append(ws)
        teacher.wait_for_selector("#student-count:text-is('20 students · 20 following')")

        student.click("button.choice:text-is('255')")
        student.wait_for_selector(".answer-result.right")
        picks = ["255"] * 11 + ["256"] * 5 + ["127"] * 3
        for i, (ws, pick) in enumerate(zip(others, picks, strict=True)):
            ws.send(json.dumps({"type": "answer", "lesson": "framing", "step": 3, "seat": f"socket-seat-{i:03d}",
                                "answer": {"choice": pick}}))
        teacher.wait_for_selector(".class-answers .answers-count:text-is('20 of 20 students answered')")
        assert teacher.locator(".tally-row").count() == 0, "the answers stay hidden until revealed"
        assert student.locator(".class-answers .tally-row").count() == 0
        teacher.screenshot(path=str(artifacts / "answers-hidden.png"))
        teacher.click(".class-answers button:text-is('Reveal the answers')")
        teacher.wait_for_selector(".tally-row")
        rows = teacher.eval_on_selector_all(".tally-row", "rs => rs.map((r) => [r.querySelector('.tally-label')"
                                            ".textContent, r.querySelector('.tally-count').textContent])")
        assert rows == [["255", "12 ✔"], ["256", "5"], ["127", "3"]]
        teacher.screenshot(path=str(artifacts / "answers-revealed.png"))
        student.wait_for_selector(".class-answers .tally-row.right .tally-label:text-is('255')")
    finally:
        sockets.close()
        t_ctx.close()
        s_ctx.close()
    assert not errors, errors
