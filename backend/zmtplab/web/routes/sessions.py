"""Session routes: create, export, and the websocket that streams events and takes commands (served by
`web.session_socket`)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Annotated, Literal

import orjson
from fastapi import APIRouter, Path, Request, Response, WebSocket, status

from ...i18n import localize_event, translate
from ...peers.faults import SESSION_FAULTS
from ...peers.topology import PRESETS
from ...sessions import Session
from .. import authoring, illustrated
from ..core.limits import client_address
from ..core.models import ErrorResponse
from ..deps import LangDep, SessionManagerDep, SettingsDep
from ..models import (
    SessionCreate,
    SessionCreated,
    SessionFaultInfo,
    SessionFaults,
    SessionPreset,
    SessionPresets,
)
from ..session_socket import serve as session_socket_serve
from ..zws_bridge import serve as zws_bridge_serve

router = APIRouter(tags=["sessions"])

SessionId = Annotated[str, Path(max_length=64)]
ExternalView = Literal["all", "summary"]  # (`?external=`: a class's connections in full, or only counted)
NOT_FOUND = {404: {"model": ErrorResponse, "description": "no session has this id"}}


@router.post("/api/sessions", status_code=status.HTTP_201_CREATED, response_model=SessionCreated,
             summary="Start a session", responses={422: {"model": ErrorResponse},
                                                    429: {"model": ErrorResponse, "description": "too many sessions"}})
async def create_session(body: SessionCreate, manager: SessionManagerDep, request: Request) -> SessionCreated:
    """Starts two peers, `server` (binds) and `client` (connects): simulated on a virtual clock, or real ones
    over loopback TCP (`mode: "tcp"`, where `libzmq: true` makes a side a real libzmq socket). Each side may
    choose how our peer writes its greeting (`greeting`: `libzmq` or `full`) and a SUB its topic (`subscribe`);
    `autoplay: false` makes the session wait at t = 0 for `play` or `step` (the page's default).

    Or a topology: `nodes` (each a named socket with its options), `links` (`{"connect", "bind"}`: one TCP
    connection each), optional `proxies` and `script`; or `{"preset": ID}` (`GET /api/sessions/presets`).
    A topology that cannot run is answered 422 naming the node or link at fault.

    Then open the websocket `/ws/sessions/{id}`.
    """
    # (origin: the app as the page reached it, where an external node's ZWS URL points)
    setup = dataclasses.replace(body.setup(), origin=str(request.base_url).rstrip("/"))
    session = await manager.create(setup, client_address(request))
    return SessionCreated(id=session.id)


@router.get("/api/sessions/faults", response_model=SessionFaults, summary="The faults sessions take")
async def session_faults() -> SessionFaults:
    """Every fault a session's `{"type": "fault", "fault", "args"}` command may name, with the session modes
    that can inject it (the page's fault menu offers these)."""
    return SessionFaults(faults=[SessionFaultInfo(fault=f.name, modes=f.modes()) for f in SESSION_FAULTS.values()])


@router.get("/api/sessions/presets", response_model=SessionPresets, summary="The ready topologies")
async def session_presets(lang: LangDep) -> SessionPresets:
    """Every preset `{"preset": ID}` creates: its id, title, description (in the language asked for: `?lang=`,
    Accept-Language), topology and script."""
    presets = [p.to_dict() for p in PRESETS.values()]
    return SessionPresets(presets=[SessionPreset(**{**p, "title": translate(p["title"], lang),
                                                    "description": translate(p["description"], lang)})
                                   for p in presets])


CREDENTIALS = ("this export holds the PLAIN username and password in clear, as they crossed the wire (in the "
               "client's HELLO command: its fields and its bytes); the configuration shows them as ***. Share it as "
               "you would share the password")


def _credentials(session: Session) -> dict[str, str]:
    """The export's `X-ZMTPLab-Credentials` header when the session's HELLO carries a PLAIN password.

    A protocol tool shows the wire as it was, so HELLO events (and a capture's bytes) keep the password; what
    the export says is that it does."""
    return {"X-ZMTPLab-Credentials": "PLAIN"} if "PLAIN" in session.setup.mechanisms() else {}


@router.get("/api/sessions/{session_id}/export.pcapng", summary="The session as a capture", responses={
    200: {"content": {"application/vnd.tcpdump.pcap": {}}, "description": "a pcapng file"}, **NOT_FOUND})
async def export_pcapng(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """Synthetic Ethernet/IPv4/TCP packets carrying exactly the session's bytes, with its timing (a PLAIN
    session's password among them: the response then carries `X-ZMTPLab-Credentials: PLAIN`)."""
    session = manager.get(session_id)
    data = await asyncio.to_thread(session.export_pcapng)
    return Response(data, media_type="application/vnd.tcpdump.pcap", headers={
        "Content-Disposition": f'attachment; filename="zmtplab-session-{session.id[:8]}.pcapng"',
        **_credentials(session)})


@router.get("/api/sessions/{session_id}/export.json", summary="The session's events", responses=NOT_FOUND)
async def export_json(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """The configuration (passwords hidden) and every event, as JSON. The HELLO events of a PLAIN session show
    the password as it went on the wire; such an export starts with a `credentials` key that says so."""
    session = manager.get(session_id)
    body = await asyncio.to_thread(lambda: session.export_json().encode())
    headers = _credentials(session)
    if headers:  # (the export is one JSON object: the notice goes first, where a reader sees it)
        body = b'{"credentials":' + json.dumps(CREDENTIALS).encode() + b"," + body[1:]
    return Response(body, media_type="application/json", headers={
        "Content-Disposition": f'attachment; filename="zmtplab-session-{session.id[:8]}.json"', **headers})


@router.get("/api/sessions/{session_id}/events/{seq}", summary="One event with its fields", responses={
    404: {"model": ErrorResponse, "description": "no session has this id, or it has no event `seq`"}})
async def session_event(session_id: SessionId, seq: Annotated[int, Path(ge=0)], manager: SessionManagerDep,
                        lang: LangDep) -> Response:
    """Event `seq` (its place in the session, the `seq` it came with) with its `fields`: what a page that
    opened the socket with `?fields=0` asks for when an element is opened (in the language asked for)."""
    session = manager.get(session_id)
    event = session.event(seq)
    return Response(orjson.dumps(localize_event(event, lang)), media_type="application/json")


@router.get("/api/sessions/{session_id}/export.keylog", summary="The session's CURVE key log", responses={
    200: {"content": {"text/plain": {}}, "description": "one CURVE_SESSION_KEY line per CURVE connection"},
    **NOT_FOUND})
async def export_keylog(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """The session keys of its CURVE connections, as our peers made them (libzmq keeps its own): one line
    `CURVE_SESSION_KEY <client short-term public key> <session key>` each, the idea of TLS's SSLKEYLOGFILE.
    `zmtplab dissect --curve-keylog` reads the session's exported capture with it. Anyone who holds it reads
    those connections: share it as you would a password. Empty for a session without CURVE."""
    session = manager.get(session_id)
    return Response(session.runtime.keylog(), media_type="text/plain", headers={
        "Content-Disposition": f'attachment; filename="zmtplab-session-{session.id[:8]}.keylog"',
        "X-ZMTPLab-Credentials": "CURVE-KEYLOG"})


@router.get("/api/sessions/{session_id}/export.html", summary="The session as an illustrated page", responses={
    200: {"content": {"text/html": {}}, "description": "one self-contained HTML file"}, **NOT_FOUND})
async def export_html(session_id: SessionId, manager: SessionManagerDep, lang: LangDep) -> Response:
    """Every element of the session explained: its octet table, hex, and each field with its explanation and
    ABNF rule, an anchor per element and field, and the pyzmq script that reproduces the first connection. One
    file that needs no server and runs no script (`zmtplab illustrate` writes the same from `export.json`); in
    the language asked for (`?lang=`, Accept-Language)."""
    session = manager.get(session_id)
    text = await asyncio.to_thread(lambda: illustrated.page(illustrated.session_document(session, lang), lang=lang))
    return illustrated.response(text, f"zmtplab-session-{session.id[:8]}.html")


@router.get("/api/sessions/{session_id}/export.py", summary="The session's pyzmq script", responses={
    200: {"content": {"text/x-python": {}}, "description": "a Python script"}, **NOT_FOUND})
async def export_script(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """The script of the session's illustrated page, as a file: a topology session's builds the whole topology with
    libzmq (its proxy steps too) and has each application send and read what it did; a two-peer session's
    reproduces its first connection (what `zmtplab illustrate` writes beside its page)."""
    session = manager.get(session_id)
    code = await asyncio.to_thread(lambda: illustrated.script_of(illustrated.session_document(session)))
    return illustrated.script_response(code, f"zmtplab-session-{session.id[:8]}.py")


@router.get("/api/sessions/{session_id}/lesson.yaml", summary="The session as a lesson step", responses={
    200: {"content": {"application/yaml": {}}, "description": "a lesson file of one step"}, **NOT_FOUND,
    422: {"model": ErrorResponse, "description": "the session cannot be a lesson step"}})
async def export_lesson(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """The session as a lesson of one step, to put in your lessons directory (`ZMTPLAB_LESSONS_DIR`) and narrate: a
    topology session's step is its topology and what its applications sent, in order; a two-peer session's its
    peers and their messages. The file loads as a lesson (it is checked before it is sent)."""
    session = manager.get(session_id)
    lesson_id = f"session-{session.id[:8]}"
    text = await asyncio.to_thread(lambda: authoring.lesson_yaml(json.loads(session.export_json()),
                                                                 lesson_id=lesson_id))
    return Response(text, media_type="application/yaml; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="{lesson_id}.yaml"', "X-Content-Type-Options": "nosniff"})


@router.delete("/api/sessions/{session_id}", status_code=status.HTTP_204_NO_CONTENT, summary="End a session",
               responses=NOT_FOUND)
async def delete_session(session_id: SessionId, manager: SessionManagerDep) -> Response:
    """Ends the session now and frees its peers and ports."""
    manager.get(session_id)
    await manager.end(session_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.websocket("/ws/sessions/{session_id}")
async def session_socket(websocket: WebSocket, session_id: str, manager: SessionManagerDep,
                         settings: SettingsDep, batch: bool = False, log: bool = True,
                         marks: bool = False, topology: bool | None = None, fields: bool = True,
                         watch: bool = False, external: ExternalView = "all") -> None:
    """Server -> browser: the events so far, then `event`, `state`, `error`, `reset` (and, for simulated
    sessions, `log`) messages. With `?batch=1` several messages may come in one websocket message, as a
    JSON array of them in order (far fewer websocket messages when a session is busy; what the page
    uses); `?log=0` leaves the `log` messages out, and `?log=0&marks=1` keeps only those that mark the
    sequence: connections opened and closed (`half-closed` says who closed and why), faults.
    A topology session (and a two-peer one asked with `?topology=1`) first sends `{"type": "topology"}`
    (nodes, links, proxies, script, the connections so far as `conns`), and again when a connection opens.
    `?fields=0` sends events without their `fields` (the page's way: it asks for an element's fields when it
    is opened, `GET /api/sessions/{id}/events/{seq}`); by default they come with them.
    Browser -> server: `send`, `play`, `pause`, `step`, `step_back`, `speed`, `reset`, `fault`.
    A bad command is answered with an `error` message; the session goes on. `?watch=1` (a student following a
    presented session) takes no command: each is refused. `?external=summary` (a student's page following a
    session whose class is the network) leaves a class's connections out (an external node taking more than one:
    their events and marks), its topology message counting them instead (`connected`); the teacher's socket
    keeps `all`.

    Commands are rate-limited per socket (a token bucket: `ws_rate` a second, bursts of `ws_burst`);
    one over the limit is dropped and answered with `{"type": "error", "detail": "rate limit: ..."}`.
    A socket whose commands keep being refused (more than `ws_abuse_limit` within `ws_abuse_window`
    seconds: rate, size, not JSON, invalid) is closed with code 1008 (policy violation). `web.session_socket`
    serves it."""
    await session_socket_serve(websocket, manager, settings, session_id, batch=batch, log=log, marks=marks,
                               topology=topology, fields=fields, watch=watch, summary=external == "summary")


@router.websocket("/zws-{key}")
async def zws_socket(websocket: WebSocket, key: str, manager: SessionManagerDep) -> None:
    """An external node's ZWS endpoint (45/ZWS 2.0), `/zws-{session_id}-{node}` (one path segment: libzmq 4.3's
    ws:// client asks for the last segment of its endpoint's path only): a browser (subprotocol `ZWS2.0`) or libzmq
    over ws:// (`ZWS2.0/NULL,ZWS2.0`) joins the real topology session as one connection of external node `node`,
    dissected like a TCP one. The topology message gives each external node's URL (`zws`). `web.zws_bridge`
    serves it."""
    session_id, _, node = key.partition("-")  # (a session id is hex: the node's name is all after its first -)
    await zws_bridge_serve(websocket, manager, session_id, node)
