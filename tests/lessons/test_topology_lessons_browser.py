"""Topology lessons in real Chromium, presented to a class (issue 19.5): the teacher walks the broker lesson and the
student follows each step, each selected socket decision and each highlighted field; the page lists the step's socket
decisions and names the nodes of each write. Screenshots go to test-artifacts/lessons/."""

from __future__ import annotations

import re

import pytest
from test_lessons_browser import at_step, browser, open_page, same_view, shown  # noqa: F401 (browser: the fixture)

pytestmark = pytest.mark.browser


def selected_row(page) -> str:
    return page.evaluate("() => { const r = document.querySelector('#sequence .seq-row.selected');"
                         " return r ? r.getAttribute('title') : null; }")


def decisions(page) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('.decision-box:not([hidden]) .decision')]"
                         ".map((b) => b.textContent)")


def wait_for_decisions(page, *starts: str) -> None:
    """Until the page's decisions begin as `starts` say, one each: a step's counter is drawn before them."""
    page.wait_for_function("(starts) => { const d = [...document.querySelectorAll('.decision-box:not([hidden])"
                           " .decision')]; return d.length >= starts.length"
                           " && starts.every((s, i) => d[i].textContent.startsWith(s)); }", arg=list(starts))


def test_a_class_follows_the_broker_lesson(browser, live_server, artifacts):  # noqa: F811 (the fixture)
    errors: list[str] = []
    base = live_server.base
    t_ctx, teacher = open_page(browser, errors)
    s_ctx, student = open_page(browser, errors)
    try:
        teacher.goto(f"{base}/lessons.html?lesson=broker&step=1")
        at_step(teacher, 1, 6)
        teacher.click("#present-button")
        code = teacher.text_content("#join-code").strip()
        teacher.wait_for_selector(".conn-state:text-is('live')")
        student.goto(f"{base}/lessons.html?join={code}")
        at_step(student, 1, 6)
        student.wait_for_selector("#follow-state:text-is('Following the teacher')")
        same_view(teacher, student)
        # The request on the wire: c1's two frames, both highlighted; the source names the six nodes.
        assert shown(student)["lit"] == ["empty delimiter", "frame 2"]
        assert "Simulated topology · c1 REQ · c2 REQ · front ROUTER · back DEALER · s1 REP · s2 REP" in (
            student.text_content(".step-source"))
        assert "c1 → front" in student.text_content(".wire-list")

        # Step 2 points at a socket decision: the frontend's identity frame. Teacher and student select it.
        teacher.click("button:text-is('Next ▶')")
        at_step(student, 2, 6)
        same_view(teacher, student)
        want = "front: ROUTER added the identity frame 'c1' of c1 (fair queue)"
        for page in (teacher, student):
            page.wait_for_function("(want) => { const r = document.querySelector('#sequence .seq-row.selected');"
                                   " return r && r.getAttribute('title') === want; }", arg=want)
            assert decisions(page) == [f"{want} (identity-routing)"]
            # The octets pane says what a decision is (no octets), not a title with holes or "Loading fields".
            page.wait_for_selector("#octets .octets-title:text-is('Socket decision (front)')")
            assert want in page.text_content("#octets") and "Loading" not in page.text_content("#octets")
            tree = page.text_content("#tree")  # the details list the decision's keys, and no wire position
            assert "identity-routing" in tree
            assert "Loading" not in tree and "undefined" not in tree and "NaN" not in tree
        # The diagram shows the six nodes, the proxy between the broker's two, and one lifeline per node.
        assert teacher.locator("#topology").is_visible()
        for name in ("c1", "c2", "front", "back", "s1", "s2"):
            assert teacher.locator("#topology svg text", has_text=name).count() >= 1, name
        assert teacher.locator("#sequence .lane-head").count() == 6
        teacher.screenshot(path=str(artifacts / "topology-01-teacher-envelope.png"))

        # Step 3: what the broker's DEALER sends on; the teacher focuses the identity frame's chip.
        teacher.click("button:text-is('Next ▶')")
        at_step(student, 3, 6)
        same_view(teacher, student)
        # (it asks which frame the broker added: that one is neither lit nor selected)
        assert shown(student)["lit"] == ["empty delimiter (from the REQ)", "frame 3"]
        teacher.click(".chip >> nth=1")
        student.wait_for_selector(".explain-name:text-is('frame 3')")
        same_view(teacher, student)
        assert student.locator("#octets").inner_text().count("c1") >= 1
        student.screenshot(path=str(artifacts / "topology-02-student-dealer-frames.png"))

        # Step 5: the reply; the teacher clicks the step's decision (the frontend routes by identity c1).
        for n in (4, 5):
            teacher.click("button:text-is('Next ▶')")
            at_step(student, n, 6)
        same_view(teacher, student)
        wait_for_decisions(teacher, "s1: REP put", "front: ROUTER routed")
        envelope, route = decisions(teacher)
        assert envelope.startswith("s1: REP put the 2-frame envelope back and sent the reply to back")
        assert route.startswith("front: ROUTER routed to identity 'c1' (c1) and took the identity frame off")
        teacher.click(".decision >> nth=1")
        for page in (teacher, student):
            page.wait_for_function("() => { const r = document.querySelector('#sequence .seq-row.selected');"
                                   " return r && r.getAttribute('title').startsWith('front: ROUTER routed'); }")
        same_view(teacher, student)
        student.wait_for_selector(".decision.selected")
        student.screenshot(path=str(artifacts / "topology-03-student-route.png"))
        teacher.screenshot(path=str(artifacts / "topology-03-teacher-route.png"))

        # The student answers the step's question on their own screen.
        student.click("button.choice:text-is('c1, \"\" and World')")
        student.wait_for_selector(".answer-result.wrong")
        student.click("button.choice:text-is('World')")
        student.wait_for_selector(".answer-result.right")

        # The high-water-mark lesson: its decisions, a block and a stop-reading, and the wire between two nodes.
        teacher.click("button:text-is('☰ All lessons')")
        teacher.click("#lesson-list button[data-lesson='high-water-marks']")
        at_step(teacher, 1, 5)
        at_step(student, 1, 5)
        # (On a loaded machine a read between the step's counter and its decisions found none.)
        wait_for_decisions(student, "vent: send blocked", "worker: PULL stops reading")
        got = decisions(student)
        assert got[0].startswith("vent: send blocked: every pipe full (PUSH waits at SNDHWM 2, it never drops)")
        assert got[1].startswith("worker: PULL stops reading from vent: 2 messages are waiting (RCVHWM 2)")
        assert re.search(r"vent → worker\s*8 octets", student.text_content(".wire-list"))
        student.screenshot(path=str(artifacts / "topology-04-student-hwm.png"))
    finally:
        t_ctx.close()
        s_ctx.close()
    assert not errors, errors
