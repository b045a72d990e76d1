"""Presenter mode over real websockets: a teacher and 50 students on a real uvicorn server, the limits, and
the teacher's token, which goes in the socket's first message and never in a URL (nor an access log)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from testkit import free_port
from zmtplab.web.classes.registry import ClassLimits, ClassRegistry

STUDENTS = 50


def new_class(server) -> dict[str, Any]:
    res = httpx.post(f"{server.base}/api/classes", timeout=10)
    assert res.status_code == 201
    return res.json()


async def recv(ws: ClientConnection, kind: str | None = None, timeout: float = 10) -> dict[str, Any]:
    """The next message (of `kind`, skipping others)."""
    async with asyncio.timeout(timeout):
        while True:
            msg = json.loads(await ws.recv())
            if kind is None or msg["type"] == kind:
                return msg


async def closed_code(ws: ClientConnection, timeout: float = 10) -> int | None:
    async with asyncio.timeout(timeout):
        try:
            while True:
                await ws.recv()
        except ConnectionClosed as exc:
            return exc.rcvd.code if exc.rcvd else None


async def wait_counts(teacher: ClientConnection, count: int, following: int) -> dict[str, Any]:
    while True:
        msg = await recv(teacher, "students")
        if msg["count"] == count and msg["following"] == following:
            return msg


async def teacher_connect(base: str, token: str) -> ClientConnection:
    """A teacher's socket: `?role=teacher`, then the token as the first message."""
    ws = await connect(f"{base}?role=teacher")
    await ws.send(json.dumps({"type": "auth", "token": token}))
    return ws


def state(step: int, element: int, field: int | None, highlights: list[int]) -> dict[str, Any]:
    return {"type": "state", "lesson": "greeting", "step": step, "selection": {"element": element, "field": field},
            "highlights": highlights}


def test_fifty_students_follow_a_teacher(live_server):
    made = new_class(live_server)
    code, token = made["code"], made["teacher_token"]
    base = f"{live_server.ws_base}/ws/classes/{code}"

    async def scenario() -> None:
        async with await teacher_connect(base, token) as teacher:
            hello = await recv(teacher, "hello")
            assert hello["role"] == "teacher" and hello["count"] == 0 and hello["state"] is None

            students = [await connect(f"{base.lower()}?role=student") for _ in range(STUDENTS)]
            try:
                hellos = await asyncio.gather(*(recv(s, "hello") for s in students))
                assert all(h["role"] == "student" and h["teacher"] is True and h["state"] is None for h in hellos)
                await wait_counts(teacher, STUDENTS, STUDENTS)

                # The teacher walks three steps; every student sees every state, in order.
                sent = [state(1, 0, 0, [0, 1, 2]), state(2, 0, 2, [0, 2]), state(3, 0, 1, [1])]
                for s in sent:
                    await teacher.send(json.dumps(s))

                async def three(ws: ClientConnection) -> list[dict[str, Any]]:
                    return [await recv(ws, "state") for _ in range(3)]

                got = await asyncio.gather(*(three(s) for s in students))
                for states in got:
                    assert [m["seq"] for m in states] == [1, 2, 3]
                    assert [{k: v for k, v in m.items() if k != "seq"} for m in states] == sent

                # The class is full: one more is refused; after one leaves, a latecomer gets the current state at once.
                async with connect(f"{base}?role=student") as extra:
                    refused = await recv(extra)
                    assert refused["type"] == "error" and "full" in refused["detail"]
                    assert await closed_code(extra) == 4429
                await students.pop().close()
                await wait_counts(teacher, STUDENTS - 1, STUDENTS - 1)
                late = await connect(f"{base}?role=student")
                students.append(late)
                late_hello = await recv(late, "hello")
                assert late_hello["state"]["seq"] == 3 and late_hello["state"]["step"] == 3
                await wait_counts(teacher, STUDENTS, STUDENTS)

                # Ten students wander off; the teacher sees it; two come back.
                for s in students[:10]:
                    await s.send(json.dumps({"type": "status", "following": False}))
                await wait_counts(teacher, STUDENTS, STUDENTS - 10)
                for s in students[:2]:
                    await s.send(json.dumps({"type": "status", "following": True}))
                await wait_counts(teacher, STUDENTS, STUDENTS - 8)

                # Students cannot drive the class.
                await students[5].send(json.dumps(state(9, 0, 0, [])))
                err = await recv(students[5], "error")
                assert "unknown message type 'state' for a student" in err["detail"]

                # The teacher drops out and comes back (a page reload): students are told both times.
                await teacher.close()
                assert (await recv(students[7], "teacher"))["present"] is False
                async with await teacher_connect(base, token) as again:
                    back = await recv(again, "hello")
                    assert back["count"] == STUDENTS and back["state"]["seq"] == 3
                    assert (await recv(students[7], "teacher"))["present"] is True
                    await again.send(json.dumps(state(4, 1, None, [])))
                    latest = await asyncio.gather(*(recv(s, "state") for s in students))
                    assert {m["seq"] for m in latest} == {4}

                    # The teacher ends the class: everyone is told and disconnected.
                    await again.send(json.dumps({"type": "end"}))
                    ended = await asyncio.gather(*(recv(s, "ended") for s in students))
                    assert all(m["reason"] == "the teacher ended the class" for m in ended)
                    codes = await asyncio.gather(*(closed_code(s) for s in students))
                    assert set(codes) == {1000}
            finally:
                await asyncio.gather(*(s.close() for s in students), return_exceptions=True)
        res = httpx.get(f"{live_server.base}/api/classes/{code}", timeout=10)
        assert res.status_code == 404  # the class is gone

    asyncio.run(scenario())


def test_refusals_and_limits(live_server):
    made = new_class(live_server)
    code, token = made["code"], made["teacher_token"]
    base = f"{live_server.ws_base}/ws/classes/{code}"

    async def scenario() -> None:
        async with connect(f"{live_server.ws_base}/ws/classes/NOPE22?role=student") as ws:
            assert (await recv(ws))["type"] == "error"
            assert await closed_code(ws) == 4404
        async with connect(f"{base}?role=admin") as ws:
            assert await closed_code(ws) == 4400
        async with await teacher_connect(base, token) as teacher:
            await recv(teacher, "hello")
            bad = [
                {"type": "state", "lesson": "../x", "step": 1},
                {"type": "state", "lesson": "greeting", "step": 0},
                {"type": "state", "lesson": "greeting", "step": 1, "extra": 1},
                {"type": "state", "lesson": "greeting", "step": 1, "highlights": list(range(65))},
                {"type": "dance"},
            ]
            for msg in bad:
                await teacher.send(json.dumps(msg))
                assert (await recv(teacher, "error"))["detail"]
            await teacher.send("not json")
            assert (await recv(teacher, "error"))["detail"] == "messages are JSON objects"
            await teacher.send(json.dumps({"type": "ping"}))
            assert (await recv(teacher, "pong")) == {"type": "pong"}
            # A second teacher connection with the token takes over; the first is closed with 4409.
            async with await teacher_connect(base, token) as second:
                await recv(second, "hello")
                assert await closed_code(teacher) == 4409
            async with connect(f"{base}?role=student") as student:
                await recv(student, "hello")
                await student.send("x" * 5000)  # over this server's 4096-octet limit
                assert await closed_code(student) == 1009

    asyncio.run(scenario())


def test_a_slow_student_keeps_the_latest_state():
    """A student whose queue overflows loses stale messages, never the current state."""
    from zmtplab.web.classes.registry import Peer

    registry = ClassRegistry(ClassLimits(queue=4))
    room = registry.create()
    slow = Peer("student", 4)
    room.students.add(slow)
    for seq in range(1, 20):
        room.seq = seq
        room.state = {"lesson": "greeting", "step": 1, "selection": {"element": 0, "field": None},
                      "highlights": [], "seq": seq}
        room.broadcast(room.latest())
    queued = [json.loads(text) for text in slow.outbox.take_nowait()]
    assert len(queued) <= 5
    assert queued[-1]["seq"] == 19


def test_counts_follow_students_as_they_come_wander_and_go():
    """The teacher's counts are kept as students join, wander, follow again and leave (no pass over the class)."""
    from zmtplab.web.classes.registry import Peer

    room = ClassRegistry(ClassLimits()).create()
    peers = [Peer("student", 8) for _ in range(5)]
    for peer in peers:
        room.join(peer)
    assert room.set_following(peers[0], False) and room.set_following(peers[1], False)
    assert not room.set_following(peers[1], False)  # no change: the teacher is not told again
    assert room.counts() == {"type": "students", "count": 5, "following": 3}
    room.leave(peers[0])
    room.leave(peers[0])  # (a socket closing twice)
    room.leave(peers[2])
    assert room.counts() == {"type": "students", "count": 3, "following": 2}
    assert room.set_following(peers[1], True)
    assert room.counts() == {"type": "students", "count": 3, "following": 3}
    assert room.public()["following"] == 3 and room.peak == 5


def test_classes_expire():
    now = [1000.0]
    registry = ClassRegistry(ClassLimits(ttl=3600, idle=600, max_classes=2, reserve=0, teacher_grace=1e9),
                             clock=lambda: now[0])
    a = registry.create()
    b = registry.create()
    with pytest.raises(Exception, match="at most 2 classes"):
        registry.create()
    now[0] += 601  # nobody ever connected to either: idle
    assert registry.get(a.code) is None and registry.get(b.code) is None
    c = registry.create()
    from zmtplab.web.classes.registry import Peer

    c.students.add(Peer("student", 8))
    now[0] += 3000
    assert registry.get(c.code) is c  # someone is there: not idle, and within the ttl
    registry.touch(c, teacher=True)
    now[0] += 3599
    assert registry.get(c.code) is c
    now[0] += 2
    assert registry.get(c.code) is None  # an hour without the teacher doing anything
    ended = [json.loads(text) for text in c.students.pop().outbox.take_nowait()]
    assert ended == [{"type": "ended", "reason": "the class expired"}]


def test_one_address_may_keep_only_a_few_teacher_sockets_waiting_to_authenticate(live_server):
    """Each unauthenticated teacher socket is dropped at the auth deadline; meanwhile one address may hold at
    most `max_pending_auth` of them (4429 beyond that), and a closed one frees its place."""
    made = new_class(live_server)
    base = f"{live_server.ws_base}/ws/classes/{made['code']}"
    registry = live_server.app.state.classrooms
    most = registry.limits.max_pending_auth

    async def scenario() -> None:
        waiting = [await connect(f"{base}?role=teacher") for _ in range(most)]
        try:
            async with asyncio.timeout(10):
                while sum(registry.pending_auth.values()) < most:
                    await asyncio.sleep(0.01)
            async with connect(f"{base}?role=teacher") as extra:
                err = await recv(extra, "error")
                assert f"at most {most} teacher connections" in err["detail"]
                assert await closed_code(extra) == 4429
            await waiting.pop().close()  # a place frees up (once the server sees the close): the teacher gets in
            async with asyncio.timeout(10):
                while sum(registry.pending_auth.values()) >= most:
                    await asyncio.sleep(0.01)
            async with await teacher_connect(base, made["teacher_token"]) as teacher:
                assert (await recv(teacher, "hello"))["role"] == "teacher"
        finally:
            for ws in waiting:
                await ws.close()
        async with asyncio.timeout(10):
            while registry.pending_auth:
                await asyncio.sleep(0.01)

    asyncio.run(scenario())


def test_the_token_is_the_first_message(live_server):
    """Right token: the teacher drives; wrong, malformed, late or oversized first messages are refused and closed;
    a `?token=` in the URL grants nothing, even with the right token."""
    made = new_class(live_server)
    code, token = made["code"], made["teacher_token"]
    base = f"{live_server.ws_base}/ws/classes/{code}"

    def info() -> dict[str, Any]:
        return httpx.get(f"{live_server.base}/api/classes/{code}", timeout=10).json()

    async def refused(ws: ClientConnection) -> tuple[str, int | None]:
        err = await recv(ws)
        assert err["type"] == "error", err
        return err["detail"], await closed_code(ws)

    async def scenario() -> None:
        # A student sends nothing special and follows what the authenticated teacher shows.
        async with connect(f"{base}?role=student") as student:
            assert (await recv(student, "hello"))["teacher"] is False
            async with await teacher_connect(base, token) as teacher:
                hello = await recv(teacher, "hello")
                assert hello["role"] == "teacher" and hello["count"] == 1
                assert (await recv(student, "teacher"))["present"] is True
                await teacher.send(json.dumps(state(2, 0, 1, [1])))
                got = await recv(student, "state")
                assert got["step"] == 2 and got["selection"] == {"element": 0, "field": 1}
                assert info()["teacher"] is True and info()["step"] == 2

            # A wrong token: a clear error, close code 4403, and the class is not driven.
            # (Another first character, whatever the token's is: a token that starts with "x" made this flaky.)
            async with await teacher_connect(base, ("y" if token.startswith("x") else "x") + token[1:]) as ws:
                assert await refused(ws) == ("wrong teacher token", 4403)
            async with await teacher_connect(base, "y" * 300) as ws:  # longer than any token, under the size limit
                assert await refused(ws) == ("wrong teacher token", 4403)

            # The token in the URL is refused outright, with the right token too: no hello, no presenter rights.
            for query in (f"?role=teacher&token={token}", f"?token={token}&role=teacher",
                          f"?role=student&token={token}"):
                async with connect(base + query) as ws:
                    detail, closed = await refused(ws)
                    assert "never in the URL" in detail and closed == 4400
            assert info()["teacher"] is False

            # Malformed first messages: the expected shape is named, the input (maybe a token) is not echoed.
            malformed = ["not json", json.dumps([token]),
                         json.dumps({"type": "state", "lesson": "greeting", "step": 1}),
                         json.dumps({"type": "auth"}), json.dumps({"type": "auth", "token": 12}),
                         json.dumps({"type": "auth", "token": ""}),
                         json.dumps({"type": "auth", "token": token, "role": "admin"})]
            for first in malformed:
                async with connect(f"{base}?role=teacher") as ws:
                    await ws.send(first)
                    detail, closed = await refused(ws)
                    assert closed == 4400 and '{"type": "auth", "token": "..."}' in detail, first
                    assert token not in detail
            # An oversized first message (binary, too) closes with 1009 before it is parsed.
            for first in (json.dumps({"type": "auth", "token": "z" * 5000}), b"\x00" * 5000):
                async with connect(f"{base}?role=teacher") as ws:
                    await ws.send(first)
                    assert await refused(ws) == ("message too large", 1009)

            # A teacher socket that never sends its first message is closed at the deadline (1 s on this server),
            # and meanwhile it is no teacher.
            started = time.monotonic()
            async with connect(f"{base}?role=teacher") as ws:
                await asyncio.sleep(0.3)
                assert info()["teacher"] is False
                detail, closed = await refused(ws)
                assert closed == 4408 and "within 1 s" in detail
            assert time.monotonic() - started >= 0.9  # (not before its deadline; how late is the machine's load)

            # Through all of it the student stayed and saw no teacher come: only the first one leave, then the next
            # one come, whom it follows.
            assert (await recv(student, "teacher"))["present"] is False
            async with await teacher_connect(base, token) as teacher:
                await recv(teacher, "hello")
                assert (await recv(student, "teacher"))["present"] is True
                await teacher.send(json.dumps(state(3, 0, 0, [])))
                assert (await recv(student, "state"))["step"] == 3

    asyncio.run(scenario())


def test_the_access_log_never_holds_the_token(tmp_path):
    """`zmtplab serve` with uvicorn's access log on: a class created, taught, followed and ended leaves request
    lines for every route it used, and the token in none of them."""
    port = free_port()
    log_path = tmp_path / "serve.log"
    env = {**os.environ, "ZMTPLAB_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "zmtplab.cli", "serve", "--port", str(port),
                                 "--log-level", "info"], stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log_path.read_text()
            try:
                if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "zmtplab serve did not start"
            time.sleep(0.1)
        res = httpx.post(f"{base}/api/classes", timeout=10)
        assert res.status_code == 201 and res.headers["cache-control"] == "no-store"
        code, token = res.json()["code"], res.json()["teacher_token"]
        assert res.json()["max_students"] == 1000  # a lecture hall (ZMTPLAB_CLASS_MAX_STUDENTS)
        # The server restarted itself (same pid) on glibc's allocator, whose trim gives a crowd's memory back.
        environ = (Path("/proc") / str(proc.pid) / "environ").read_bytes().split(b"\0")
        assert b"PYTHONMALLOC=malloc" in environ
        ws_base = f"ws://127.0.0.1:{port}/ws/classes/{code}"

        async def scenario() -> None:
            async with connect(f"{ws_base}?role=student") as student, await teacher_connect(ws_base, token) as teacher:
                await recv(student, "hello")
                await recv(teacher, "hello")
                await teacher.send(json.dumps(state(1, 0, 0, [0])))
                assert (await recv(student, "state"))["seq"] == 1
                await teacher.send(json.dumps({"type": "end"}))
                await recv(student, "ended")

        asyncio.run(scenario())
        assert httpx.get(f"{base}/api/classes/{code}", timeout=10).status_code == 404
    finally:
        proc.terminate()
        proc.wait(15)
    text = log_path.read_text()
    # uvicorn logged the request lines (so the check below looks at a real access log) ...
    assert '"POST /api/classes HTTP/1.1" 201' in text, text
    assert f'"WebSocket /ws/classes/{code}?role=teacher" [accepted]' in text, text
    assert f'"WebSocket /ws/classes/{code}?role=student" [accepted]' in text, text
    # ... and the token appears nowhere in them.
    assert token not in text


async def answers_until(teacher: ClientConnection, answered: int) -> dict[str, Any]:
    while True:
        msg = await recv(teacher, "answers")
        if msg["answered"] == answered:
            return msg


def test_twenty_students_answer_and_the_teacher_sees_the_tally(live_server):
    """Issue 32.9: twenty students answer the framing lesson's questions over the class socket (in English and
    Chinese); each is checked as the lessons API checks it and counted once per seat (the last answer counts); the
    teacher gets the tally live; a reveal shows it to the class."""
    made = new_class(live_server)
    code, token = made["code"], made["teacher_token"]
    base = f"{live_server.ws_base}/ws/classes/{code}"

    def answer(seat: int, step: int, given: dict[str, Any], lang: str = "en") -> str:
        return json.dumps({"type": "answer", "lesson": "framing", "step": step, "seat": f"seat-{seat:04d}",
                           "lang": lang, "answer": given})

    async def scenario() -> None:
        async with await teacher_connect(base, token) as teacher:
            await recv(teacher, "hello")
            students = [await connect(f"{base}?role=student") for _ in range(20)]
            try:
                await asyncio.gather(*(recv(s, "hello") for s in students))
                await wait_counts(teacher, 20, 20)
                await teacher.send(json.dumps({"type": "state", "lesson": "framing", "step": 3}))
                first = await recv(teacher, "answers")
                assert (first["lesson"], first["step"], first["answered"], first["tally"]) == ("framing", 3, 0, [])
                # "What is the largest body a short frame can carry?" (choices 127, 255, 256, 65535 in order)
                picks = ["255"] * 12 + ["256"] * 5 + ["127"] * 3
                for i, (ws, pick) in enumerate(zip(students, picks, strict=True)):
                    lang = "zh-CN" if i % 2 else "en"  # (the choices are numbers: the same words in Chinese)
                    await ws.send(answer(i, 3, {"choice": pick}, lang))
                tally = await answers_until(teacher, 20)
                assert tally["students"] == 20 and tally["revealed"] is False
                got = {(t["answer"]["choice"], t["count"], t["correct"]) for t in tally["tally"]}
                choices = json.loads(httpx.get(f"{live_server.base}/api/lessons/framing", timeout=10).text)[
                    "steps"][2]["question"]["choices"]
                assert got == {(choices.index("255"), 12, True), (choices.index("256"), 5, False),
                               (choices.index("127"), 3, False)}
                # A student answers again: the last answer counts, once.
                await students[19].send(answer(19, 3, {"choice": "255"}))
                tally = await recv(teacher, "answers")
                assert tally["answered"] == 20 and tally["tally"][0] == {"answer": {"choice": choices.index("255")},
                                                                         "count": 13, "correct": True}
                # Nothing reached the students before the reveal; then every student gets the tally.
                await teacher.send(json.dumps({"type": "reveal", "lesson": "framing", "step": 3}))
                shown = await asyncio.gather(*(recv(s, "answers") for s in students))
                assert all(m["revealed"] and m["answered"] == 20 for m in shown)

                # A click question: "Which byte says this frame is LONG?" (the flags field, index 0 of the element).
                scene = httpx.get(f"{live_server.base}/api/lessons/framing/steps/2", timeout=10).json()
                element = scene["element"]
                flags = next(i for i, f in enumerate(scene["events"][element]["fields"]) if f["name"] == "flags")
                size = next(i for i, f in enumerate(scene["events"][element]["fields"]) if f["name"] == "size")
                for i, ws in enumerate(students[:4]):
                    await ws.send(answer(100 + i, 2, {"index": element, "field": flags if i else size}))
                clicks = await answers_until(teacher, 4)
                assert {(t["answer"]["field"], t["count"], t["correct"]) for t in clicks["tally"]} == {
                    ("flags", 3, True), ("size", 1, False)}
                # A malformed answer, or one to a step without a question, is refused with a reason.
                await students[0].send(answer(1, 1, {"choice": "x"}))
                assert "asks no question" in (await recv(students[0], "error"))["detail"]
                await students[0].send(json.dumps({"type": "answer", "lesson": "framing", "step": 3}))
                assert "bad answer" in (await recv(students[0], "error"))["detail"]
            finally:
                await asyncio.gather(*(s.close() for s in students), return_exceptions=True)

    asyncio.run(scenario())


def test_classes_survive_a_restart_of_the_server(tmp_path):
    """Issue 32.13: a class, what its teacher shows and its answers are saved when the app stops and back at the
    next start (same data directory): the teacher's token still works, students join with the same code."""
    from fastapi.testclient import TestClient

    from zmtplab.web import Settings, create_app

    def app():
        return create_app(Settings(data_dir=tmp_path, frontend_dir=Path(__file__).resolve().parents[2] / "frontend"))

    with TestClient(app()) as client:
        made = client.post("/api/classes").json()
        code, token = made["code"], made["teacher_token"]
        with client.websocket_connect(f"/ws/classes/{code}?role=teacher") as teacher:
            teacher.send_json({"type": "auth", "token": token})
            assert teacher.receive_json()["type"] == "hello"
            teacher.send_json({"type": "state", "lesson": "framing", "step": 3})
            assert teacher.receive_json()["type"] == "answers"
            with client.websocket_connect(f"/ws/classes/{code}?role=student") as student:
                assert student.receive_json()["type"] == "hello"
                student.send_json({"type": "answer", "lesson": "framing", "step": 3, "seat": "seat-0001",
                                   "answer": {"choice": "255"}})
                while (msg := teacher.receive_json())["type"] != "answers":
                    pass
                assert msg["answered"] == 1
    saved = tmp_path / "classes.json"
    assert saved.stat().st_mode & 0o077 == 0, "the file holds teacher tokens: the server's user only"

    with TestClient(app()) as client:
        info = client.get(f"/api/classes/{code}").json()
        assert (info["lesson"], info["step"], info["teacher"]) == ("framing", 3, False)
        with client.websocket_connect(f"/ws/classes/{code}?role=teacher") as teacher:
            teacher.send_json({"type": "auth", "token": token})
            hello = teacher.receive_json()
            assert hello["type"] == "hello" and hello["state"]["step"] == 3
            assert teacher.receive_json() == {"type": "answers", "lesson": "framing", "step": 3, "answered": 1,
                                              "students": 0, "revealed": False,
                                              "tally": [{"answer": {"choice": 1}, "count": 1, "correct": True}]}
        with client.websocket_connect(f"/ws/classes/{code}?role=student") as student:
            assert student.receive_json()["state"]["step"] == 3
    # A damaged file starts the server without classes (and says so in its log), never fails it.
    saved.write_text("{not json", encoding="utf-8")
    with TestClient(app()) as client:
        assert client.get(f"/api/classes/{code}").status_code == 404


def test_a_teacher_presents_a_playground_session(live_server):
    """Issue 32.10: a playground state names its session (and no lesson); a lesson's state still needs its lesson."""
    made = new_class(live_server)
    base = f"{live_server.ws_base}/ws/classes/{made['code']}"

    async def scenario() -> None:
        async with await teacher_connect(base, made["teacher_token"]) as teacher:
            await recv(teacher, "hello")
            async with connect(f"{base}?role=student") as student:
                await recv(student, "hello")
                shown = {"type": "state", "page": "playground", "session": "0123abcd", "selection": {"element": 3}}
                await teacher.send(json.dumps(shown))
                got = await recv(student, "state")
                assert (got["page"], got["session"], got["selection"]["element"]) == ("playground", "0123abcd", 3)
                assert "lesson" not in got
                await teacher.send(json.dumps({"type": "state", "page": "lessons", "session": "x"}))
                assert "names its `lesson` and `step`" in (await recv(teacher, "error"))["detail"]
                await teacher.send(json.dumps({"type": "state", "page": "playground"}))
                assert "names its `session`" in (await recv(teacher, "error"))["detail"]

    asyncio.run(scenario())
