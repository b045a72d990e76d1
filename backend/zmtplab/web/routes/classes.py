"""Presenter mode routes: `POST /api/classes`, `GET /api/classes/{code}` and the websocket `/ws/classes/{code}`
(served by `web.class_socket`, which says its close codes; `web.classrooms` says the messages)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response, WebSocket, status
from fastapi import Path as PathParam
from pydantic import BaseModel, Field
from starlette.requests import HTTPConnection

from ...lessons.player import answer_key, check_answer
from ...lessons.translations import english_submission
from ..class_socket import AnswerCheck
from ..class_socket import serve as class_socket_serve
from ..classrooms import ClassFull, ClassLimits, ClassRegistry, TooManyClasses, TooManyGuesses
from ..limits import client_address
from ..models import ErrorResponse
from .lessons import LessonLibrary, get_library

router = APIRouter(tags=["classes"])

Code = Annotated[str, PathParam(description="the class's join code", max_length=16)]


def get_registry(conn: HTTPConnection) -> ClassRegistry:
    """The app's classes (created on first use; tests may set `app.state.classrooms`)."""
    state = conn.app.state
    registry = getattr(state, "classrooms", None)
    if registry is None:
        registry = state.classrooms = ClassRegistry(ClassLimits(max_students=state.settings.class_max_students))
    return registry


# ---------------------------------------------------------------- models


class ClassCreated(BaseModel):
    code: str = Field(description="6 characters for students to type (case-insensitive)")
    teacher_token: str = Field(description="proves the teacher: the first message on `/ws/classes/{code}?role=teacher` "
                                           "is `{\"type\": \"auth\", \"token\": ...}` (never put it in a URL)")
    join_url: str
    max_students: int


class ClassInfo(BaseModel):
    code: str
    students: int
    following: int
    teacher: bool = Field(description="whether the teacher is connected")
    lesson: str | None = None
    step: int | None = None


# ---------------------------------------------------------------- REST


@router.post("/api/classes", status_code=status.HTTP_201_CREATED, response_model=ClassCreated,
             summary="Start a class (presenter mode)",
             responses={429: {"model": ErrorResponse, "description": "this address has too many classes"},
                        503: {"model": ErrorResponse, "description": "the server holds too many classes"}})
def create_class(conn: HTTPConnection, response: Response) -> ClassCreated:
    """A new class: its join code and the teacher's token (keep it: it is shown only once)."""
    response.headers["Cache-Control"] = "no-store"  # the body holds a secret: no cache may keep it
    registry = get_registry(conn)
    try:
        room = registry.create(client_address(conn))
    except TooManyClasses as exc:
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(exc)) from None
    except ClassFull as exc:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc)) from None
    return ClassCreated(code=room.code, teacher_token=room.token, join_url=f"/lessons.html?join={room.code}",
                        max_students=registry.limits.max_students)


@router.get("/api/classes/{code}", response_model=ClassInfo, summary="A class's state",
            responses={404: {"model": ErrorResponse, "description": "no class has this code"},
                       429: {"model": ErrorResponse, "description": "too many codes naming no class from this "
                                                                    "address"}})
def get_class(code: Code, conn: HTTPConnection) -> ClassInfo:
    """Who is there and what the teacher shows. An address (an IPv6 /64) that tries many codes naming no class
    is answered 429 for a while, whatever the code (join codes are not to be guessed)."""
    try:
        room = get_registry(conn).find(code, client_address(conn))
    except TooManyGuesses as exc:
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(exc)) from None
    if room is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no class with this code (it may have ended)")
    return ClassInfo(**room.public())


def answer_check(library: LessonLibrary) -> AnswerCheck:
    """Checks a student's answer as `POST /api/lessons/{id}/steps/{n}/answer` does, and says what it answered."""
    def check(lesson_id: str, number: int, given: dict[str, Any], lang: str) -> tuple[dict[str, Any], bool]:
        try:
            scene = library.scene(lesson_id, number)
            english = library.lesson(lesson_id).steps[number - 1]
            step = library.lesson(lesson_id, lang).steps[number - 1]
        except HTTPException as exc:
            raise LookupError(str(exc.detail)) from None
        submission = english_submission(given, english, step)
        result = check_answer(scene, submission)  # (LookupError: the step asks no question)
        key = answer_key(scene, submission)
        if key is None:
            raise LookupError("the answer names nothing of this step's question")
        return key, bool(result["correct"])

    return check


@router.websocket("/ws/classes/{code}")
async def class_socket(ws: WebSocket, code: str, role: Annotated[str, Query(max_length=16)] = "student") -> None:
    """A teacher's or a student's connection to a class (`web.class_socket` serves it; `web.classrooms` says the
    messages). A teacher's first message is `{"type": "auth", "token": "..."}`; a student sends nothing special."""
    await class_socket_serve(ws, get_registry(ws), code, role, answer_check(get_library(ws)))
