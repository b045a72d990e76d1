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
        playground = teacher.locator("header.topbar nav a", has_text="Playground")
        assert playground.get_attribute("target") == "_blank"
        assert "new tab" in (playground.get_attribute("title") or "")
        with t_ctx.expect_page() as opened:
            playground.click()
        opened.value.wait_for_load_state()
        assert opened.value.url.endswith("/index.html")
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
        assert playground.get_attribute("target") is None
    finally:
        t_ctx.close()
        s_ctx.close()
    assert not errors, errors
