"""Presenter mode routes: `POST /api/classes`, `GET /api/classes/{code}` and the websocket `/ws/classes/{code}`
(served by `web.classes.socket`, which says its close codes; `web.classes.registry` says the messages)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, Response, WebSocket, status
from fastapi import Path as PathParam

from ..core.limits import client_address
from ..core.models import ErrorResponse
from ..deps import ClassRegistryDep, LessonLibraryDep
from .models import ClassCreated, ClassInfo
from .registry import ClassFull, TooManyClasses, TooManyGuesses
from .socket import serve as class_socket_serve

router = APIRouter(tags=["classes"])

Code = Annotated[str, PathParam(description="the class's join code", max_length=16)]



@router.post("/api/classes", status_code=status.HTTP_201_CREATED, response_model=ClassCreated,
             summary="Start a class (presenter mode)",
             responses={429: {"model": ErrorResponse, "description": "this address has too many classes"},
                        503: {"model": ErrorResponse, "description": "the server holds too many classes"}})
def create_class(request: Request, response: Response, registry: ClassRegistryDep) -> ClassCreated:
    """A new class: its join code and the teacher's token (keep it: it is shown only once)."""
    response.headers["Cache-Control"] = "no-store"  # the body holds a secret: no cache may keep it
    try:
        room = registry.create(client_address(request))
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
def get_class(code: Code, request: Request, registry: ClassRegistryDep) -> ClassInfo:
    """Who is there and what the teacher shows. An address (an IPv6 /64) that tries many codes naming no class
    is answered 429 for a while, whatever the code (join codes are not to be guessed)."""
    try:
        room = registry.find(code, client_address(request))
    except TooManyGuesses as exc:
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(exc)) from None
    if room is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no class with this code (it may have ended)")
    return ClassInfo(**room.public())


@router.websocket("/ws/classes/{code}")
async def class_socket(ws: WebSocket, code: str, registry: ClassRegistryDep, library: LessonLibraryDep,
                       role: Annotated[str, Query(max_length=16)] = "student") -> None:
    """A teacher's or a student's connection to a class (`web.classes.socket` serves it; `web.classes.registry` says the
    messages). A teacher's first message is `{"type": "auth", "token": "..."}`; a student sends nothing special."""
    await class_socket_serve(ws, registry, code, role, library.class_answer)
