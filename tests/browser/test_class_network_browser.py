"""Issue 34.3 in real Chromium: the class is the network. The teacher presents a real topology session whose class
is an external node; each student's page follows the teacher to the playground, joins that node from its My peer
tab as a real ZWS peer (core/zws.js over Chromium's WebSocket, bridged by the app into the session) and shows what
its own socket received: a PULL its share of the teacher's round robin, a SUB only its topic.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from websockets.sync.client import connect

from testkit import VIEWPORT

pytestmark = pytest.mark.browser


def open_page(browser: Any, errors: list[str]) -> tuple[Any, Any]:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    return context, page


def class_session(live_server: Any, teacher: str, klass: dict[str, Any], **teacher_options: Any) -> str:
    """A real topology session: the teacher's node binds, the class's external node connects to it."""
    import urllib.request

    body = {"mode": "tcp", "autoplay": True,
            "nodes": [{"name": "teacher", "type": teacher, **teacher_options},
                      {"name": "class", "external": True, **klass}],
            "links": [{"connect": "class", "bind": "teacher"}]}
    request = urllib.request.Request(f"{live_server.base}/api/sessions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())["id"]


@contextmanager
def presented(browser: Any, live_server: Any, session: str, students: int,
              errors: list[str]) -> Iterator[tuple[Any, list[Any]]]:
    """The teacher presents `session` on the playground; `students` pages join the class and follow it there:
    (the teacher's page, the students' pages)."""
    contexts = []
    t_ctx, teacher = open_page(browser, errors)
    contexts.append(t_ctx)
    try:
        teacher.goto(f"{live_server.base}/lessons.html?lesson=greeting&step=1")
        teacher.click("#present-button")
        teacher.wait_for_selector(".conn-state:text-is('live')")
        code = teacher.text_content("#join-code").strip()
        teacher.goto(f"{live_server.base}/index.html?present={code}&session={session}")
        teacher.wait_for_selector(".conn-state:text-is('live')")
        teacher.wait_for_selector("#topology:not([hidden]) .topo-node[data-node='class']")
        pages = []
        for _ in range(students):
            ctx, page = open_page(browser, errors)
            contexts.append(ctx)
            page.goto(f"{live_server.base}/lessons.html?join={code}")
            page.wait_for_url(re.compile(rf"index\.html\?join={code}"))
            page.wait_for_selector("#tab-peer:not([hidden])")
            page.click("#tab-peer")
            pages.append(page)
        yield teacher, pages
    finally:
        for ctx in contexts:
            ctx.close()


def send(live_server: Any, session: str, texts: list[str], *, peers: int = 0, wire: str | None = "") -> None:
    """The teacher's application sends, as the playground's composer does, over the session's websocket, and waits
    until the message `wire` (the last one by default; None: none, only an answer) is on the wire; first, with
    `peers`, it waits until that many students' connections have their handshake done both ways (each student's
    pipe is then in the teacher's socket)."""
    with connect(f"{live_server.ws_base}/ws/sessions/{session}?log=0&fields=0") as ws:
        greeted: dict[str, set[str]] = {}
        while sum(len(dirs) == 2 for dirs in greeted.values()) < peers:
            raw = json.loads(ws.recv(timeout=20))
            for msg in raw if isinstance(raw, list) else [raw]:
                ev = msg.get("event") or {}
                # (a routing id each way, not the HTTP upgrade's two greetings: the handshake is done)
                if msg.get("type") == "event" and ev.get("kind") == "greeting" and "identity" in ev:
                    greeted.setdefault(str(ev.get("conn")), set()).add(ev.get("dir"))
        for text in texts:
            ws.send(json.dumps({"type": "send", "from": "teacher", "frames": [text]}))
        # Until the last one is on the wire (the commands go in order): closing the socket sooner would take
        # the commands not yet carried out with it.
        if wire is None:
            ws.recv(timeout=20)
            return
        last = (wire or texts[-1]).encode().hex()
        while last not in ws.recv(timeout=20):
            pass


def received(page: Any) -> list[str]:
    return page.eval_on_selector_all(".peer-messages li", "els => els.map((e) => e.textContent)")


def test_each_students_page_receives_its_share_of_the_round_robin(browser, live_server, artifacts):
    errors: list[str] = []
    session = class_session(live_server, "PUSH", {"type": "PULL", "max_connections": 3})
    with presented(browser, live_server, session, 3, errors) as (teacher, pages):
        for page in pages:
            page.click(".peer-join[data-node='class']")
            page.wait_for_selector(".peer-state[data-state='ready']")
        # Until every page got something, every pipe is surely in the teacher's PUSH (a page's routing id is
        # dissected a moment before the lab's node reads it): then a round of six tasks, two to each.
        send(live_server, session, ["warm 0", "warm 1", "warm 2"], peers=3)
        warm = 3
        for k in range(1, 20):
            if all(page.locator(".peer-messages li").count() for page in pages):
                break
            send(live_server, session, [f"warm {3 * k + i}" for i in range(3)])
            warm += 3
        send(live_server, session, [f"task {i}" for i in range(1, 7)])
        # (by what the pages got, not by their counters: a warm-up message still on its way would move those, and
        # two messages drawn in one frame skip a value)
        for page in pages:
            page.wait_for_function("() => [...document.querySelectorAll('.peer-messages li')]"
                                   ".filter((li) => li.textContent.startsWith('task')).length >= 2")
        shares = [sorted(m for m in received(page) if m.startswith("task")) for page in pages]
        assert sorted(t for share in shares for t in share) == [f"task {i}" for i in range(1, 7)], shares
        assert all(len(share) == 2 for share in shares), shares
        # Its own bytes, drawn as the playground draws them: the routing ids, then the frames it got. (The list of
        # messages is drawn as each one comes, the sequence at the next frame: wait for that frame.)
        pages[0].wait_for_function("(n) => document.querySelectorAll('#sequence .seq-row').length >= n",
                                   arg=2 + 2 * 2)
        pages[0].screenshot(path=str(artifacts("class-network") / "pull.png"))
        # The teacher's diagram: the students of the class node, each with what it got.
        teacher.wait_for_function("(n) => [...document.querySelectorAll('.topo-student')]"
                                  ".reduce((sum, li) => sum + Number(li.dataset.count), 0) === n", arg=warm + 6)
        assert "3 connected; each got" in teacher.text_content(".topo-students-summary")
        teacher.screenshot(path=str(artifacts("class-network") / "teacher.png"))
        # A student's page follows with ?external=summary: the class only counted, no student's elements.
        pages[1].wait_for_function("() => (document.querySelector('.topo-students-summary') || {}).textContent"
                                   " === \"3 connected (each one's messages are on the teacher's screen)\"")
        assert pages[1].locator(".topo-student").count() == 0
        pages[1].click("#tab-session")
        pages[1].screenshot(path=str(artifacts("class-network") / "student-topology.png"))
    assert not errors, errors


def test_a_sub_page_receives_only_its_topic(browser, live_server, artifacts):
    errors: list[str] = []
    session = class_session(live_server, "PUB", {"type": "SUB", "max_connections": 2})
    with presented(browser, live_server, session, 2, errors) as (_, (ana, ben)):
        for page, topic in ((ana, "weather"), (ben, "sports")):
            page.fill(".peer-topic-input", topic)
            page.click(".peer-join[data-node='class']")
            page.wait_for_selector(".peer-state[data-state='ready']")
        # A PUB sends only to the subscriptions it holds: publish until both have one of theirs.
        for k in range(40):
            send(live_server, session, [f"weather {k}", f"sports {k}", f"news {k}"], peers=2 if k == 0 else 0,
                 wire=None)  # (a PUB puts nothing on the wire before the subscriptions are in)
            if ana.locator(".peer-messages li").count() and ben.locator(".peer-messages li").count():
                break
        ana.wait_for_selector(".peer-messages li")
        ben.wait_for_selector(".peer-messages li")
        send(live_server, session, ["weather last", "sports last", "news last"], wire="sports last")
        ana.wait_for_selector(".peer-messages li:text-is('weather last')")
        ben.wait_for_selector(".peer-messages li:text-is('sports last')")
        assert all(m.startswith("weather") for m in received(ana)), received(ana)
        assert all(m.startswith("sports") for m in received(ben)), received(ben)
        ana.screenshot(path=str(artifacts("class-network") / "sub.png"))
    assert not errors, errors


def test_a_req_page_asks_the_teachers_rep_and_gets_its_answer(browser, live_server):
    """The other way: a student's REQ sends (the frames typed, behind REQ's empty delimiter) and the teacher's REP,
    which echoes, answers; the page shows the reply without the delimiter, and both sides' bytes are the session's."""
    errors: list[str] = []
    session = class_session(live_server, "REP", {"type": "REQ", "max_connections": 2}, echo=True)
    with presented(browser, live_server, session, 1, errors) as (teacher, (ana,)):
        ana.fill(".peer-identity-input", "ana")
        ana.click(".peer-join[data-node='class']")
        ana.wait_for_selector(".peer-state[data-state='ready']")
        ana.fill(".peer-frames", "question 1")
        ana.click(".peer-send")
        ana.wait_for_selector(".peer-messages li:text-is('question 1')")
        assert ana.get_attribute(".peer-received", "data-count") == "1"
        # The teacher's diagram names the student by its routing id, with the reply it got.
        teacher.wait_for_selector(".topo-student[data-count='1']")
        assert "ana" in teacher.text_content(".topo-student")
    assert not errors, errors
