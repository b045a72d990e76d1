"""The presenter-mode websocket: one teacher's or student's connection to a class, from accept to close.

`serve(ws, registry, code, role)` is what `/ws/classes/{code}` runs (`web.classes.routes` only routes).
A teacher connects with `?role=teacher` and sends `{"type": "auth", "token": "..."}` as its first message;
the token is never accepted in the URL. The classes themselves, and the messages, are `web.classes.registry`.

Students' answers are checked by the `check` the route passes in (the lessons API's own check) and counted by
`web.classes.registry`.

Close codes: 4400 bad role, a `token` in the URL or a malformed `auth` message, 4403 wrong teacher token,
4404 no such class, 4408 no `auth` message in time, 4409 another teacher connection took over, 4429 the
class is full (or this address has `max_pending_auth` teacher sockets waiting to authenticate, or has tried too
many join codes naming no class), 1008 too
many messages (more than `abuse_limit` over the rate within `abuse_window`), 1009 a message over the size
limit, 1000 the class ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import WebSocket
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.types import Message
from starlette.websockets import WebSocketDisconnect, WebSocketState

from ..core.jsontext import json_text
from ..core.limits import AbuseWindow, TokenBucket, client_address
from ..core.memory import release_soon
from ..wspump import pump
from .registry import ClassLimits, ClassRegistry, Classroom, Peer, TooManyGuesses, TooManyWaiting

RELEASE_AFTER = 100  # students a class must have had at once for its emptying to give memory back (`web.core.memory`)


class Selection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    element: int | None = Field(None, ge=0, le=1_000_000)
    field: int | None = Field(None, ge=0, le=100_000)


class TeacherState(BaseModel):
    """What the teacher shows: a lesson's step (`lesson`, `step` from 1), or a playground session (`page`
    "playground", `session`: its id, which the students watch); the selected element and field, the highlighted
    fields."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["state"]
    page: Literal["lessons", "playground"] = "lessons"
    lesson: str | None = Field(None, max_length=40, pattern=r"^[a-z0-9][a-z0-9-]*$")
    step: int | None = Field(None, ge=1, le=1000)
    session: str | None = Field(None, max_length=64, pattern=r"^[A-Za-z0-9]+$")
    selection: Selection = Field(default_factory=Selection)
    highlights: list[Annotated[int, Field(ge=0, le=100_000)]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _shown(self) -> TeacherState:
        if self.page == "lessons" and (self.lesson is None or self.step is None):
            raise ValueError("a lesson's state names its `lesson` and `step`")
        if self.page == "playground" and self.session is None:
            raise ValueError("a playground's state names its `session`")
        return self


LessonName = Annotated[str, Field(max_length=40, pattern=r"^[a-z0-9][a-z0-9-]*$")]


class AnswerGiven(BaseModel):
    """What a student answered: a choice (in the student's language), or a click in the step's element."""

    model_config = ConfigDict(extra="forbid")

    choice: str | None = Field(None, max_length=200)
    index: int | None = Field(None, ge=0, le=1_000_000)
    field: int | None = Field(None, ge=0, le=100_000)
    offset: int | None = Field(None, ge=0, le=1 << 62)


class StudentAnswer(BaseModel):
    """A student's answer to a step's question; `seat` is the student's own random id (its reconnects keep it)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["answer"]
    lesson: LessonName
    step: int = Field(ge=1, le=1000)
    seat: str = Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    lang: Literal["en", "zh-CN"] = "en"
    answer: AnswerGiven


class Reveal(BaseModel):
    """The teacher shows a question's answers to the class."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["reveal"]
    lesson: LessonName
    step: int = Field(ge=1, le=1000)


# Checks an answer as the lessons API does: (lesson, step, the answer given, its language) -> (what it answered, as
# `lessons.player.answer_key` says it, and whether it is right). Raises LookupError for a step without a question.
AnswerCheck = Callable[[str, int, dict[str, Any], str], tuple[dict[str, Any], bool]]


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())


class TeacherAuth(BaseModel):
    """A teacher socket's first message: the token `POST /api/classes` gave."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["auth"]
    token: str = Field(min_length=1)


async def _refuse(ws: WebSocket, code: int, detail: str) -> None:
    with contextlib.suppress(Exception):
        await ws.send_text(json_text({"type": "error", "detail": detail}))
        await ws.close(code=code, reason=detail[:120])


class Refused(Exception):
    """A connection the server turns away: the close code and what to tell the client."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def _message_text(message: Message) -> str:
    """A websocket message's text (binary messages are read as UTF-8)."""
    text = message.get("text")
    if text is None:
        text = (message.get("bytes") or b"").decode("utf-8", "replace")
    return text


def _too_large(text: str, limit: int) -> bool:
    return len(text) > limit or len(text.encode("utf-8")) > limit


AUTH_SHAPE = 'a teacher\'s first message is {"type": "auth", "token": "..."}'


async def _authenticate(ws: WebSocket, room: Classroom, limits: ClassLimits) -> bool:
    """Reads a teacher socket's first message and checks its token.

    Returns False when the client left first; raises `Refused` when the message is late, too large,
    malformed or holds the wrong token. The deadline keeps an unauthenticated socket from holding a
    connection open for free.
    """
    try:
        async with asyncio.timeout(limits.auth_timeout):
            message = await ws.receive()
    except TimeoutError:
        raise Refused(4408, f"{AUTH_SHAPE}, within {limits.auth_timeout:g} s of connecting") from None
    if message["type"] == "websocket.disconnect":
        return False
    text = _message_text(message)
    if _too_large(text, limits.max_message):
        raise Refused(1009, "message too large")
    try:
        auth = TeacherAuth.model_validate_json(text)
    except ValidationError:
        # The errors would quote the input, which may be a token: answer with the expected shape only.
        raise Refused(4400, AUTH_SHAPE) from None
    if len(auth.token) > limits.max_token or not room.check_token(auth.token):
        raise Refused(4403, "wrong teacher token")
    return True


def _handle(registry: ClassRegistry, room: Classroom, peer: Peer, data: Any,
            check: AnswerCheck | None = None) -> dict[str, Any] | None:
    """One message from a peer; returns a reply for that peer, if any."""
    kind = data.get("type") if isinstance(data, dict) else None
    if kind == "ping":
        return {"type": "pong"}
    if peer.role == "teacher":
        if kind == "state":
            try:
                state = TeacherState.model_validate(data)
            except ValidationError as exc:
                return {"type": "error", "detail": f"bad state: {_problems(exc)}"}
            if len(state.highlights) > registry.limits.max_highlights:
                return {"type": "error", "detail": f"at most {registry.limits.max_highlights} highlights"}
            before = (room.state or {}).get("lesson"), (room.state or {}).get("step")
            room.seq += 1
            # (a lesson's state as it always was: `page` only when it is the playground's)
            shown = {k: v for k, v in state.model_dump(exclude={"type"}).items()
                     if v is not None and not (k == "page" and v == "lessons")}
            room.state = {**shown, "seq": room.seq}
            registry.touch(room, teacher=True)
            latest = room.latest()
            assert latest is not None
            room.broadcast(latest)
            # Another step: its question's answers so far (none yet, most often).
            if state.lesson is None or state.step is None or before == (state.lesson, state.step):
                return None
            return room.tally((state.lesson, state.step))
        if kind == "reveal":
            try:
                reveal = Reveal.model_validate(data)
            except ValidationError as exc:
                return {"type": "error", "detail": f"bad reveal: {_problems(exc)}"}
            question = (reveal.lesson, reveal.step)
            room.revealed.add(question)
            registry.touch(room, teacher=True)
            tally = room.tally(question)
            room.broadcast(tally)
            return tally
        if kind == "end":
            registry.end(room, "the teacher ended the class")
            return None
    elif kind == "answer":
        if check is None:
            return {"type": "error", "detail": "this server does not collect answers"}
        try:
            given = StudentAnswer.model_validate(data)
            key, correct = check(given.lesson, given.step, given.answer.model_dump(exclude_none=True), given.lang)
        except ValidationError as exc:
            return {"type": "error", "detail": f"bad answer: {_problems(exc)}"}
        except LookupError as exc:
            return {"type": "error", "detail": str(exc)}
        question = (given.lesson, given.step)
        room.record_answer(question, given.seat, key, correct, registry.limits)
        registry.touch(room)
        tally = room.tally(question)
        if room.teacher is not None:
            room.teacher.put(tally)
        if question in room.revealed:
            room.broadcast(tally)
        return None
    elif kind == "status":
        following = data.get("following")
        if not isinstance(following, bool):
            return {"type": "error", "detail": "status needs `following`: true or false"}
        if room.set_following(peer, following):
            room.tell_teacher()
        return None
    return {"type": "error", "detail": f"unknown message type {kind!r} for a {peer.role}"}


async def serve(ws: WebSocket, registry: ClassRegistry, code: str, role: str, check: AnswerCheck | None = None) -> None:
    """A teacher's or a student's connection to a class, from its accept to its close (see the module docstring).

    A teacher's first message is `{"type": "auth", "token": "..."}`; a student sends nothing special. `check` checks
    the students' answers (without it they are refused).
    """
    limits = registry.limits
    await ws.accept()
    if "token" in ws.query_params:
        # A URL ends up in access logs, proxies and browser history: refuse it even with the right token, so
        # an old client learns why instead of working while it leaks.
        await _refuse(ws, 4400, "the teacher token goes in the first message "
                                '({"type": "auth", "token": "..."}), never in the URL')
        return
    try:
        room = registry.find(code, client_address(ws))
    except TooManyGuesses as exc:
        await _refuse(ws, 4429, str(exc))
        return
    if room is None:
        await _refuse(ws, 4404, "no class with this code (it may have ended)")
        return
    if role == "teacher":
        try:
            with registry.authenticating(client_address(ws)):
                if not await _authenticate(ws, room, limits):
                    return
        except TooManyWaiting as exc:
            await _refuse(ws, 4429, str(exc))
            return
        except Refused as exc:
            await _refuse(ws, exc.code, exc.detail)
            return
        if room.ended:  # it ended (or expired) while the token was on its way
            await _refuse(ws, 4404, "no class with this code (it may have ended)")
            return
        peer = Peer("teacher", limits.queue)
        old, room.teacher = room.teacher, peer
        if old is not None:
            old.put({"type": "error", "detail": "another teacher connection took over this class"})
            old.end(4409)
            old.closed = True
        registry.touch(room, teacher=True)
        counts = room.counts()
        peer.put({"type": "hello", "role": "teacher", "code": room.code, "state": room.latest(),
                  "max_students": limits.max_students, "count": counts["count"], "following": counts["following"]})
        if room.state is not None and "lesson" in room.state:  # (a teacher back: the answers to the step it shows)
            peer.put(room.tally((room.state["lesson"], room.state["step"])))
        room.broadcast({"type": "teacher", "present": True})
    elif role == "student":
        if len(room.students) >= limits.max_students:
            await _refuse(ws, 4429, f"the class is full ({limits.max_students} students)")
            return
        peer = Peer("student", limits.queue)
        room.join(peer)
        registry.touch(room)
        peer.put({"type": "hello", "role": "student", "code": room.code, "teacher": room.teacher is not None,
                  "state": room.latest()})
        if room.state is not None and (room.state.get("lesson"), room.state.get("step")) in room.revealed:
            peer.put(room.tally((room.state["lesson"], room.state["step"])))
        room.tell_teacher()
    else:
        await _refuse(ws, 4400, "role is teacher or student")
        return

    bucket = TokenBucket(limits.rate, limits.burst)
    abuse = AbuseWindow(limits.abuse_limit, limits.abuse_window)

    async def reader() -> None:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = _message_text(message)
            if _too_large(text, limits.max_message):
                with contextlib.suppress(Exception):
                    await ws.close(code=1009, reason="message too large")
                return
            if not bucket.take():
                if abuse.add():
                    reason = f"too many messages (over {limits.abuse_limit} refused in {limits.abuse_window:g} s)"
                    with contextlib.suppress(Exception):
                        await ws.send_text(json_text({"type": "error", "detail": reason}))
                        await ws.close(code=1008, reason=reason)
                    return
                peer.put({"type": "error", "detail": f"rate limit: at most {limits.rate:g} messages a second "
                                                     f"(bursts of {limits.burst}); this one was dropped"})
                continue
            try:
                data = json.loads(text)
            except ValueError:
                peer.put({"type": "error", "detail": "messages are JSON objects"})
                continue
            reply = _handle(registry, room, peer, data, check)
            if reply is not None:
                peer.put(reply)
            if room.ended:
                return

    tasks = {asyncio.create_task(reader()), asyncio.create_task(pump(ws, peer.outbox))}
    try:
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError, Exception):
                await task
    finally:
        if peer.role == "teacher":
            if room.teacher is peer:
                room.teacher = None
                registry.teacher_left(room)
                room.broadcast({"type": "teacher", "present": False})
        else:
            room.leave(peer)
            room.tell_teacher()
            if not room.students and room.peak >= RELEASE_AFTER:
                room.peak = 0
                release_soon()
        peer.closed = True
        registry.touch(room)
        if ws.client_state == WebSocketState.CONNECTED:
            with contextlib.suppress(Exception):
                await ws.close(code=1000)
