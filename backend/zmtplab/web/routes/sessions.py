"""Session routes: create, export, and the websocket that streams events and takes commands."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Response, WebSocket, WebSocketDisconnect, status
from pydantic import TypeAdapter, ValidationError

from ..deps import SessionManagerDep, SettingsDep
from ..models import ErrorResponse, SessionCreate, SessionCreated, WsCommand
from ..sessions import Session, SessionConfigError, SessionError, SessionManager, dumps

router = APIRouter(tags=["sessions"])

SessionId = Annotated[str, Path(max_length=64)]
NOT_FOUND = {404: {"model": ErrorResponse, "description": "no session has this id"}}
COMMANDS: TypeAdapter[Any] = TypeAdapter(WsCommand)


def _session(manager: SessionManager, session_id: str) -> Session:
    try:
        return manager.get(session_id)
    except KeyError:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no session with id {session_id!r}") from None


@router.post("/api/sessions", status_code=status.HTTP_201_CREATED, response_model=SessionCreated,
             summary="Start a session", responses={422: {"model": ErrorResponse},
                                                    429: {"model": ErrorResponse, "description": "too many sessions"}})
async def create_session(body: SessionCreate, manager: SessionManagerDep) -> SessionCreated:
    """Starts two peers, `server` (binds) and `client` (connects): simulated on a virtual clock, or real ones
    over loopback TCP (`mode: "tcp"`, where `libzmq: true` makes a side a real libzmq socket).

    Then open the websocket `/ws/sessions/{id}`.
    """
    try:
        session = await manager.create(body)
    except SessionConfigError as exc:
        raise HTTPException(422, str(exc)) from None
    except OverflowError as exc:
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(exc)) from None
    return SessionCreated(id=session.id)


@router.get("/api/sessions/{session_id}/export.pcapng", summary="The session as a capture", responses={
    200: {"content": {"application/vnd.tcpdump.pcap": {}}, "description": "a pcapng file"}, **NOT_FOUND})
async def export_pcapng(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """Synthetic Ethernet/IPv4/TCP packets carrying exactly the session's bytes, with its timing."""
    session = _session(manager, session_id)
    data = await asyncio.to_thread(session.export_pcapng)
    return Response(data, media_type="application/vnd.tcpdump.pcap", headers={
        "Content-Disposition": f'attachment; filename="zmtplab-session-{session.id[:8]}.pcapng"'})


@router.get("/api/sessions/{session_id}/export.json", summary="The session's events", responses=NOT_FOUND)
async def export_json(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """The configuration (passwords hidden) and every event, as JSON."""
    session = _session(manager, session_id)
    body = await asyncio.to_thread(lambda: json.dumps(session.export_json(), separators=(",", ":")).encode())
    return Response(body, media_type="application/json", headers={
        "Content-Disposition": f'attachment; filename="zmtplab-session-{session.id[:8]}.json"'})


@router.delete("/api/sessions/{session_id}", status_code=status.HTTP_204_NO_CONTENT, summary="End a session",
               responses=NOT_FOUND)
async def delete_session(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """Ends the session now and frees its peers and ports."""
    _session(manager, session_id)
    await manager.end(session_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def _error(detail: str) -> str:
    return dumps({"type": "error", "detail": detail})


def _validation_text(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("send", "play", "pause", "step",
                                                                            "step_back", "speed", "reset",
                                                                            "fault"))
        problems.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "bad command: " + "; ".join(problems)


@router.websocket("/ws/sessions/{session_id}")
async def session_socket(websocket: WebSocket, session_id: str, manager: SessionManagerDep,
                         settings: SettingsDep) -> None:
    """Server -> browser: the events so far, then `event`, `state`, `error`, `reset` messages.
    Browser -> server: `send`, `play`, `pause`, `step`, `step_back`, `speed`, `reset`, `fault`.
    A bad command is answered with an `error` message; the session goes on."""
    await websocket.accept()
    try:
        session = manager.get(session_id)
    except KeyError:
        await websocket.send_text(_error(f"no session with id {session_id!r}"))
        await websocket.close(code=4404)
        return
    sub = session.subscribe()

    async def pump() -> None:
        while True:
            message = await sub.queue.get()
            if message is None:
                if sub.overflowed:
                    with contextlib.suppress(Exception):
                        await websocket.send_text(_error("this socket fell too far behind; reconnect"))
                await websocket.close(code=1013 if sub.overflowed else 1000)
                return
            await websocket.send_text(dumps(message))

    sender = asyncio.create_task(pump())
    try:
        while True:
            receiver = asyncio.ensure_future(websocket.receive())
            done, _ = await asyncio.wait({receiver, sender}, return_when=asyncio.FIRST_COMPLETED)
            if sender in done:
                receiver.cancel()
                return
            message = receiver.result()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                sub.put({"type": "error", "detail": "commands are JSON text messages"})
                continue
            if len(text) > settings.ws_max_message:
                sub.put({"type": "error", "detail": f"commands are at most {settings.ws_max_message} bytes"})
                continue
            try:
                raw = json.loads(text)
            except ValueError:
                sub.put({"type": "error", "detail": "not JSON"})
                continue
            try:
                command = COMMANDS.validate_python(raw)
            except ValidationError as exc:
                sub.put({"type": "error", "detail": _validation_text(exc)})
                continue
            try:
                await session.command(command)
            except SessionError as exc:
                sub.put({"type": "error", "detail": str(exc)})
            except Exception as exc:  # a bug in a runtime must not take the socket down
                sub.put({"type": "error", "detail": f"the command failed: {type(exc).__name__}: {exc}"})
    except WebSocketDisconnect:
        pass
    finally:
        session.unsubscribe(sub)
        sender.cancel()
        with contextlib.suppress(BaseException):
            await sender
