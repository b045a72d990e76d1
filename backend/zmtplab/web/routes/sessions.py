"""Session routes: create, export, and the websocket that streams events and takes commands."""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Request, Response, WebSocket, WebSocketDisconnect, status
from pydantic import TypeAdapter, ValidationError

from ...peers.faults import SESSION_FAULTS
from ..deps import SessionManagerDep, SettingsDep
from ..limits import AbuseWindow, TokenBucket, client_address
from ..models import ErrorResponse, SessionCreate, SessionCreated, SessionFaultInfo, SessionFaults, WsCommand
from ..sessions import Session, SessionConfigError, SessionError, SessionManager, dumps

router = APIRouter(tags=["sessions"])

SessionId = Annotated[str, Path(max_length=64)]
NOT_FOUND = {404: {"model": ErrorResponse, "description": "no session has this id"}}
COMMANDS: TypeAdapter[Any] = TypeAdapter(WsCommand)
BATCH_MOST = 512  # messages in one websocket message (with ?batch=1)
BATCH_WINDOW = 0.025  # a batching socket that sent less than this ago waits for the next tick to send again


class BatchClock:
    """Ticks every `period` seconds while some socket waits for one: a batching socket that sent less than
    a period ago sends again at the next tick.

    One timer for all of them instead of one per socket and batch, and the sockets' sends come
    together rather than between other work (a busy server keeps more of each in its caches); a
    message waits for the next tick, `period` at most."""

    def __init__(self, loop: asyncio.AbstractEventLoop, period: float) -> None:
        self.loop = loop
        self.period = period
        self.waiters: list[asyncio.Future[None]] = []
        self.timer: asyncio.TimerHandle | None = None

    async def tick(self) -> None:
        """Returns at the next tick."""
        waiter = self.loop.create_future()
        self.waiters.append(waiter)
        if self.timer is None:
            self.timer = self.loop.call_at(self._next(), self._fire)
        await waiter

    def _next(self) -> float:
        # Ticks fall on multiples of the period, so sockets that start waiting at different times still
        # send together.
        now = self.loop.time()
        return (now // self.period + 1) * self.period

    def _fire(self) -> None:
        self.timer = None
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


_CLOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BatchClock] = weakref.WeakKeyDictionary()


def batch_clock() -> BatchClock:
    """The running loop's `BatchClock`."""
    loop = asyncio.get_running_loop()
    clock = _CLOCKS.get(loop)
    if clock is None:
        clock = _CLOCKS[loop] = BatchClock(loop, BATCH_WINDOW)
    return clock


def _session(manager: SessionManager, session_id: str) -> Session:
    try:
        return manager.get(session_id)
    except KeyError:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no session with id {session_id!r}") from None


@router.post("/api/sessions", status_code=status.HTTP_201_CREATED, response_model=SessionCreated,
             summary="Start a session", responses={422: {"model": ErrorResponse},
                                                    429: {"model": ErrorResponse, "description": "too many sessions"}})
async def create_session(body: SessionCreate, manager: SessionManagerDep, request: Request) -> SessionCreated:
    """Starts two peers, `server` (binds) and `client` (connects): simulated on a virtual clock, or real ones
    over loopback TCP (`mode: "tcp"`, where `libzmq: true` makes a side a real libzmq socket). Each side may
    choose how our peer writes its greeting (`greeting`: `libzmq` or `full`) and a SUB its topic (`subscribe`);
    `autoplay: false` makes the session wait at t = 0 for `play` or `step` (the page's default).

    Then open the websocket `/ws/sessions/{id}`.
    """
    try:
        session = await manager.create(body, client_address(request))
    except SessionConfigError as exc:
        raise HTTPException(422, str(exc)) from None
    except OverflowError as exc:
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(exc)) from None
    return SessionCreated(id=session.id)


@router.get("/api/sessions/faults", response_model=SessionFaults, summary="The faults sessions take")
async def session_faults() -> SessionFaults:
    """Every fault a session's `{"type": "fault", "fault", "args"}` command may name, with the session modes
    that can inject it (the page's fault menu offers these)."""
    return SessionFaults(faults=[SessionFaultInfo(fault=f.name, modes=f.modes()) for f in SESSION_FAULTS.values()])


CREDENTIALS = ("this export holds the PLAIN username and password in clear, as they crossed the wire (in the "
               "client's HELLO command: its fields and its bytes); the configuration shows them as ***. Share it as "
               "you would share the password")


def _credentials(session: Session) -> dict[str, str]:
    """The export's `X-ZMTPLab-Credentials` header when the session's HELLO carries a PLAIN password.

    A protocol tool shows the wire as it was, so HELLO events (and a capture's bytes) keep the password; what
    the export says is that it does."""
    config = session.config
    return {"X-ZMTPLab-Credentials": "PLAIN"} if "PLAIN" in (config.server.mechanism, config.client.mechanism) else {}


@router.get("/api/sessions/{session_id}/export.pcapng", summary="The session as a capture", responses={
    200: {"content": {"application/vnd.tcpdump.pcap": {}}, "description": "a pcapng file"}, **NOT_FOUND})
async def export_pcapng(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """Synthetic Ethernet/IPv4/TCP packets carrying exactly the session's bytes, with its timing (a PLAIN
    session's password among them: the response then carries `X-ZMTPLab-Credentials: PLAIN`)."""
    session = _session(manager, session_id)
    data = await asyncio.to_thread(session.export_pcapng)
    return Response(data, media_type="application/vnd.tcpdump.pcap", headers={
        "Content-Disposition": f'attachment; filename="zmtplab-session-{session.id[:8]}.pcapng"',
        **_credentials(session)})


@router.get("/api/sessions/{session_id}/export.json", summary="The session's events", responses=NOT_FOUND)
async def export_json(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """The configuration (passwords hidden) and every event, as JSON. The HELLO events of a PLAIN session show
    the password as it went on the wire; such an export starts with a `credentials` key that says so."""
    session = _session(manager, session_id)
    body = await asyncio.to_thread(lambda: session.export_json().encode())
    headers = _credentials(session)
    if headers:  # (the export is one JSON object: the notice goes first, where a reader sees it)
        body = b'{"credentials":' + json.dumps(CREDENTIALS).encode() + b"," + body[1:]
    return Response(body, media_type="application/json", headers={
        "Content-Disposition": f'attachment; filename="zmtplab-session-{session.id[:8]}.json"', **headers})


@router.get("/api/sessions/{session_id}/export.keylog", summary="The session's CURVE key log", responses={
    200: {"content": {"text/plain": {}}, "description": "one CURVE_SESSION_KEY line per CURVE connection"},
    **NOT_FOUND})
async def export_keylog(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """The session keys of its CURVE connections, as our peers made them (libzmq keeps its own): one line
    `CURVE_SESSION_KEY <client short-term public key> <session key>` each, the idea of TLS's SSLKEYLOGFILE.
    `zmtplab dissect --curve-keylog` reads the session's exported capture with it. Anyone who holds it reads
    those connections: share it as you would a password. Empty for a session without CURVE."""
    session = _session(manager, session_id)
    return Response(session.runtime.keylog(), media_type="text/plain", headers={
        "Content-Disposition": f'attachment; filename="zmtplab-session-{session.id[:8]}.keylog"',
        "X-ZMTPLab-Credentials": "CURVE-KEYLOG"})


@router.delete("/api/sessions/{session_id}", status_code=status.HTTP_204_NO_CONTENT, summary="End a session",
               responses=NOT_FOUND)
async def delete_session(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """Ends the session now and frees its peers and ports."""
    _session(manager, session_id)
    await manager.end(session_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def _error(detail: str) -> str:
    return dumps({"type": "error", "detail": detail})


def _not_json(exc: ValidationError) -> bool:
    return any(err.get("type") == "json_invalid" for err in exc.errors())


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
                         settings: SettingsDep, batch: bool = False, log: bool = True,
                         marks: bool = False) -> None:
    """Server -> browser: the events so far, then `event`, `state`, `error`, `reset` (and, for simulated
    sessions, `log`) messages. With `?batch=1` several messages may come in one websocket message, as a
    JSON array of them in order (far fewer websocket messages when a session is busy; what the page
    uses); `?log=0` leaves the `log` messages out, and `?log=0&marks=1` keeps only those that mark the
    sequence: connections opened and closed (`half-closed` says who closed and why), faults.
    Browser -> server: `send`, `play`, `pause`, `step`, `step_back`, `speed`, `reset`, `fault`.
    A bad command is answered with an `error` message; the session goes on.

    Commands are rate-limited per socket (a token bucket: `ws_rate` a second, bursts of `ws_burst`);
    one over the limit is dropped and answered with `{"type": "error", "detail": "rate limit: ..."}`.
    A socket whose commands keep being refused (more than `ws_abuse_limit` within `ws_abuse_window`
    seconds: rate, size, not JSON, invalid) is closed with code 1008 (policy violation)."""
    await websocket.accept()
    try:
        session = manager.get(session_id)
    except KeyError:
        await websocket.send_text(_error(f"no session with id {session_id!r}"))
        await websocket.close(code=4404)
        return
    sub = session.subscribe(logs=log, marks=marks)
    most = BATCH_MOST if batch else 1
    clock = batch_clock()

    async def pump() -> None:
        loop = asyncio.get_running_loop()
        sent_at = loop.time() - BATCH_WINDOW
        while True:
            texts = await sub.take(most)
            if texts is None:
                if sub.overflowed:
                    with contextlib.suppress(Exception):
                        await websocket.send_text(_error("this socket fell too far behind; reconnect"))
                await websocket.close(code=1013 if sub.overflowed else 1000)
                return
            if batch:
                if len(texts) < most and loop.time() - sent_at < BATCH_WINDOW:
                    # Sent a moment ago: let the rest of a burst gather, one websocket message for all of it.
                    # (After a quiet window, send at once: a page sees its first element without delay, and
                    # a busy server, whose turns of the event loop outlast the window, sends one turn after
                    # the events instead of waiting for the next tick's turn.)
                    await clock.tick()
                    texts += sub.take_nowait(most - len(texts))
                state = sub.take_state()  # (after the events it counts)
                if state is not None:
                    texts.append(state)
            elif not texts:  # only the state is due
                state = sub.take_state()
                texts = [state] if state is not None else []
            if texts:
                await websocket.send_text(texts[0] if len(texts) == 1 else "[" + ",".join(texts) + "]")
                sent_at = loop.time()

    sender = asyncio.create_task(pump())
    bucket = TokenBucket(settings.ws_rate, settings.ws_burst)
    abuse = AbuseWindow(settings.ws_abuse_limit, settings.ws_abuse_window)

    async def refuse(detail: str | None) -> bool:
        """Answers a refused command (when `detail`); closes the socket (1008) and returns True on abuse."""
        if detail is not None:
            sub.put({"type": "error", "detail": detail})
        if not abuse.add():
            return False
        sender.cancel()
        with contextlib.suppress(BaseException):
            await sender
        reason = f"too many refused commands (over {settings.ws_abuse_limit} in {settings.ws_abuse_window:g} s)"
        with contextlib.suppress(Exception):
            await websocket.send_text(_error(f"closing this socket: {reason}"))
            await websocket.close(code=1008, reason=reason)
        return True

    async def read_commands() -> None:
        """Carries out the browser's commands until it leaves (or is refused for good)."""
        last_rate_error = -1.0
        while True:
            # When the pump closes the socket (the session ended), the server enqueues the disconnect.
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect" or sender.done():
                return
            if not bucket.take():
                now = asyncio.get_running_loop().time()
                detail = None
                if now - last_rate_error >= 1.0:  # one answer a second: refusals must not amplify a flood
                    last_rate_error = now
                    detail = (f"rate limit: at most {settings.ws_rate:g} commands a second (bursts of "
                              f"{settings.ws_burst}); commands over it are dropped")
                if await refuse(detail):
                    return
                continue
            text = message.get("text")
            if text is None:
                if await refuse("commands are JSON text messages"):
                    return
                continue
            if len(text) > settings.ws_max_message:
                if await refuse(f"commands are at most {settings.ws_max_message} bytes"):
                    return
                continue
            try:
                command = COMMANDS.validate_json(text)  # (parsing and validating in one pass: half the time)
            except ValidationError as exc:
                if await refuse("not JSON" if _not_json(exc) else _validation_text(exc)):
                    return
                continue
            try:
                await session.command(command)
            except SessionError as exc:
                sub.put({"type": "error", "detail": str(exc)})
            except Exception as exc:  # a bug in a runtime must not take the socket down
                sub.put({"type": "error", "detail": f"the command failed: {type(exc).__name__}: {exc}"})

    # The commands are read in a task of their own: this handler runs some twenty coroutines deep (the
    # middleware), and every wake-up of the task that waits for the next command goes through all of
    # them; a busy socket wakes once per command.
    reader = asyncio.create_task(read_commands())
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
