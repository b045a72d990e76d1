"""The session websocket: one browser's connection to a playground session, from accept to close.

`serve(websocket, manager, settings, session_id, ...)` is what `/ws/sessions/{id}` runs (`web.routes.sessions`
only routes). Server -> browser: the events so far, then `event`, `state`, `error`, `reset` (and `log`)
messages, sent by the websocket pump (`web.wspump`); browser -> server: the commands of
`sessions.commands.Command`, carried out by the session (`zmtplab.sessions`). docs/architecture.md lists the
messages.

Commands are rate-limited per socket (a token bucket: `ws_rate` a second, bursts of `ws_burst`); one over
the limit is dropped and answered with `{"type": "error", "detail": "rate limit: ..."}`. A socket whose
commands keep being refused (more than `ws_abuse_limit` within `ws_abuse_window` seconds: rate, size, not
JSON, invalid) is closed with 1008 (policy violation); an unknown session closes with 4404.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import Any

from fastapi import WebSocket, WebSocketDisconnect
from pydantic import TypeAdapter, ValidationError

from ..sessions import Session, SessionError, SessionManager, SessionNotFound, SessionNotice, Subscriber
from ..sessions.commands import COMMAND_TYPES, Command
from .core.limits import AbuseWindow, TokenBucket
from .core.settings import Settings
from .wspump import Outbox, error_text, pump

COMMANDS: TypeAdapter[Any] = TypeAdapter(Command)
SESSION_OUTBOX = functools.partial(Outbox, overflow="close")  # a session's socket is given up when it falls behind


def _not_json(exc: ValidationError) -> bool:
    return any(err.get("type") == "json_invalid" for err in exc.errors())


def _validation_text(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in COMMAND_TYPES)
        problems.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "bad command: " + "; ".join(problems)


async def serve(websocket: WebSocket, manager: SessionManager, settings: Settings, session_id: str,
                batch: bool = False, log: bool = True, marks: bool = False, topology: bool | None = None,
                fields: bool = True, watch: bool = False, summary: bool = False) -> None:
    """One browser's connection to session `session_id` (see the module docstring): `batch`, `log`, `marks`,
    `topology` (the topology message; by default only in topology sessions), `fields` (events with their
    fields), `watch` (a student following a presented session: it takes no command) and `summary` (a class's
    connections only summarised, `?external=summary`) are the socket's query options."""
    await websocket.accept()
    try:
        session = manager.get(session_id)
    except SessionNotFound as exc:
        await websocket.send_text(error_text(str(exc)))
        await websocket.close(code=4404)
        return
    sub = session.subscribe(SESSION_OUTBOX, logs=log, marks=marks, topology=topology, fields=fields,
                            summary=summary)
    sender = asyncio.create_task(pump(websocket, sub.out, "array" if batch else "one"))
    # The commands are read in a task of their own: this handler runs some twenty coroutines deep (the
    # middleware), and every wake-up of the task that waits for the next command goes through all of
    # them; a busy socket wakes once per command.
    reader = asyncio.create_task(CommandReader(websocket, session, sub, sender, settings, watch=watch).run())
    try:
        await reader
    except WebSocketDisconnect:
        pass
    finally:
        session.unsubscribe(sub)
        for task in (reader, sender):
            if not task.done():
                task.cancel()
            with contextlib.suppress(BaseException):
                await task


class CommandReader:
    """Reads one socket's commands and carries them out, refusing (and answering) the ones it must."""

    def __init__(self, websocket: WebSocket, session: Session, sub: Subscriber, sender: asyncio.Task[None],
                 settings: Settings, watch: bool = False) -> None:
        self.watch = watch  # (a watching socket's commands are refused: the class sees the session, the teacher drives)
        self.websocket = websocket
        self.session = session
        self.sub = sub
        self.sender = sender
        self.settings = settings
        self.bucket = TokenBucket(settings.ws_rate, settings.ws_burst)
        self.abuse = AbuseWindow(settings.ws_abuse_limit, settings.ws_abuse_window)

    async def refuse(self, detail: str | None) -> bool:
        """Answers a refused command (when `detail`); closes the socket (1008) and returns True on abuse."""
        if detail is not None:
            self.sub.put({"type": "error", "detail": detail})
        if not self.abuse.add():
            return False
        self.sender.cancel()
        with contextlib.suppress(BaseException):
            await self.sender
        settings = self.settings
        reason = f"too many refused commands (over {settings.ws_abuse_limit} in {settings.ws_abuse_window:g} s)"
        with contextlib.suppress(Exception):
            await self.websocket.send_text(error_text(f"closing this socket: {reason}"))
            await self.websocket.close(code=1008, reason=reason)
        return True

    async def run(self) -> None:
        """Carries out the browser's commands until it leaves (or is refused for good)."""
        websocket, settings, sub, sender = self.websocket, self.settings, self.sub, self.sender
        last_rate_error = -1.0
        while True:
            # When the pump closes the socket (the session ended), the server enqueues the disconnect.
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect" or sender.done():
                return
            if not self.bucket.take():
                now = asyncio.get_running_loop().time()
                detail = None
                if now - last_rate_error >= 1.0:  # one answer a second: refusals must not amplify a flood
                    last_rate_error = now
                    detail = (f"rate limit: at most {settings.ws_rate:g} commands a second (bursts of "
                              f"{settings.ws_burst}); commands over it are dropped")
                if await self.refuse(detail):
                    return
                continue
            text = message.get("text")
            if text is None:
                if await self.refuse("commands are JSON text messages"):
                    return
                continue
            if len(text) > settings.ws_max_message:
                if await self.refuse(f"commands are at most {settings.ws_max_message} bytes"):
                    return
                continue
            if self.watch:
                if await self.refuse("this socket watches the session (?watch=1): it takes no command"):
                    return
                continue
            try:
                command = COMMANDS.validate_json(text)  # (parsing and validating in one pass: half the time)
            except ValidationError as exc:
                if await self.refuse("not JSON" if _not_json(exc) else _validation_text(exc)):
                    return
                continue
            try:
                await self.session.command(command)
            except SessionNotice as exc:  # (nothing to do: a note, not a refusal)
                sub.put({"type": "error", "detail": str(exc), "severity": "info"})
            except SessionError as exc:
                sub.put({"type": "error", "detail": str(exc)})
            except Exception as exc:  # a bug in a runtime must not take the socket down
                sub.put({"type": "error", "detail": f"the command failed: {type(exc).__name__}: {exc}"})
