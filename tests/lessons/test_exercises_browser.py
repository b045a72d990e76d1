"""Exercises (issue 32.11) in real Chromium: a typed answer on the lessons page (in English and Chinese), and a
topology exercise built in the playground from the lessons page's link, checked there and from a saved file."""
# ruff: noqa: RUF001  (the Chinese texts use full-width punctuation, as Chinese does)

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_lessons_browser import at_step, browser, open_page  # noqa: F401 (browser: the module's Chromium)

pytestmark = pytest.mark.browser

IN_ORDER_LINKS = [{"connect": "w1", "bind": "vent"}, {"connect": "w2", "bind": "vent"}]
NODES = [{"name": "vent", "type": "PUSH"}, {"name": "w1", "type": "PULL"}, {"name": "w2", "type": "PULL"}]


def test_a_typed_answer_checked_by_the_server(browser, live_server):  # noqa: F811
    errors: list[str] = []
    context, page = open_page(browser, errors)
    try:
        page.goto(f"{live_server.base}/lessons.html?lesson=null-handshake&step=7")
        at_step(page, 7, 7)
        box = page.locator(".exercise")
        assert box.locator("h3").text_content() == "Exercise"
        assert "PUB" in (box.locator(".exercise-task").text_content() or "")
        assert page.locator(".question").is_hidden()  # (an exercise, not a question)
        box.locator(".exercise-check").click()
        page.wait_for_selector(".exercise .answer-result.wrong .verdict:text-is('✘ Type an answer first.')")
        box.locator("input.exercise-answer").fill("28")
        box.locator("input.exercise-answer").press("Enter")
        page.wait_for_selector(".exercise .answer-result.wrong .verdict:has-text('Start from the PUSH')")
        box.locator("input.exercise-answer").fill("27 octets")
        box.locator(".exercise-check").click()
        page.wait_for_selector(".exercise .answer-result.right .verdict:text-is('✔ Correct.')")
        assert "one letter shorter" in (box.locator(".answer-result").text_content() or "")

        page.goto(f"{live_server.base}/lessons.html?lesson=null-handshake&step=7&lang=zh-CN")
        page.wait_for_selector(".step-counter:text-is('第 7 步，共 7 步')")
        assert box.locator("h3").text_content() == "练习"
        assert box.locator("input.exercise-answer").get_attribute("placeholder") == "你的答案"
        box.locator("input.exercise-answer").fill("28")
        box.locator(".exercise-check").click()
        page.wait_for_selector(".exercise .answer-result.wrong .verdict:has-text('从 PUSH 的 28 个字节出发')")
        box.locator("input.exercise-answer").fill("27")
        box.locator(".exercise-check").click()
        page.wait_for_selector(".exercise .answer-result.right .verdict:text-is('✔ 正确。')")
        assert not errors, errors
    finally:
        context.close()


def test_a_topology_built_in_the_playground_and_checked(browser, live_server, tmp_path: Path):  # noqa: F811
    errors: list[str] = []
    context, page = open_page(browser, errors)
    try:
        page.goto(f"{live_server.base}/lessons.html?lesson=load-balancing&step=6")
        at_step(page, 6, 6)
        box = page.locator(".exercise")
        assert box.locator(".exercise-nodes").text_content() == "The nodes it needs: vent (PUSH), w1 (PULL), w2 (PULL)"
        link = box.locator("a.exercise-open")
        assert link.get_attribute("href") == "index.html?exercise=load-balancing&step=6"
        assert link.get_attribute("target") == "_blank"
        # A topology saved from the playground, with the links the other way round: both workers are named wrong.
        saved = tmp_path / "topology.json"
        saved.write_text(json.dumps({"mode": "simulated", "nodes": NODES, "links": IN_ORDER_LINKS[::-1]}))
        box.locator("input[type=file]").set_input_files(str(saved))
        page.wait_for_selector(".exercise .answer-result.wrong")
        problems = box.locator(".exercise-problems li").all_text_contents()
        assert problems == ["w1 read task 2, task 4, task 6; the task wants task 1, task 3, task 5.",
                            "w2 read task 1, task 3, task 5; the task wants task 2, task 4, task 6."]
        assert "came up" in (box.locator(".verdict").text_content() or "")  # the author's hint

        # The playground from the link: the task above the editor, its three nodes waiting for links.
        with context.expect_page() as opened:
            link.click()
        play = opened.value
        play.set_default_timeout(30_000)
        play.on("pageerror", lambda exc: errors.append(str(exc)))
        play.wait_for_selector("#exercise-slot .exercise")
        assert play.locator("#topology-setup").get_attribute("open") is not None
        # The two-peer form folds: the task and its check are in view without scrolling.
        assert play.locator("#session-setup").get_attribute("open") is None
        check = play.locator("#exercise-slot .exercise-check").bounding_box()
        assert check is not None and check["y"] + check["height"] <= play.viewport_size["height"], check
        assert play.locator(".topo-node-row").count() == 3
        assert "back to the lesson" in (play.locator("#exercise-slot a").text_content() or "")
        play.click("#exercise-slot .exercise-check")
        play.wait_for_selector("#exercise-slot .answer-result.wrong")
        assert play.locator("#exercise-slot .exercise-problems li").all_text_contents()[0] == (
            "w1 read nothing; the task wants task 1, task 3, task 5.")
        play.click("#add-link")  # (w1 connects to vent, then w2: the first node binds)
        play.click("#add-link")
        play.click("#exercise-slot .exercise-check")
        play.wait_for_selector("#exercise-slot .answer-result.right .verdict:text-is('✔ Correct.')")
        # Started, the topology runs the check's messages, and the task stays in view.
        play.click("#start-topology")
        play.wait_for_function("() => /task 6/.test(document.querySelector('#sequence').textContent)")
        assert play.locator("#exercise-slot .exercise").is_visible()
        assert "exercise=load-balancing" in play.url and "step=6" in play.url
        assert not errors, errors
    finally:
        context.close()
