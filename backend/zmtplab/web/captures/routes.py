"""Capture routes: upload, progress, summary, events, tshark's view of one packet, delete."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response, status
from fastapi.responses import StreamingResponse
from starlette.requests import ClientDisconnect

from ...analysis import check_curve
from ...engine.curve import key_from_text
from ...engine.events import WIRE_KINDS
from ...i18n import localize_analysis, localize_findings, translate
from ...replay import ReplayError
from .. import illustrated
from ..core.jsontext import json_bytes
from ..core.limits import client_address
from ..core.models import ErrorResponse, Event
from ..core.sse import event_stream
from ..deps import CaptureStoreDep, LangDep, PacketDecoderDep, SettingsDep
from .events import EventQuery, SearchesBusy, event_body, event_page
from .models import CaptureCreated, CaptureSummary, CurveCheck, EventPage, PacketResponse, Progress
from .packets import PacketDecodeError, PacketNotFound
from .replays import ReplayRequest, ReplayTooLarge, replay_capture
from .uploads import check_declared_size, receive_capture

router = APIRouter(prefix="/api/captures", tags=["captures"])
log = logging.getLogger(__name__)

CaptureId = Annotated[str, Path(description="the id `POST /api/captures` returned", max_length=64)]
NOT_FOUND = {404: {"model": ErrorResponse, "description": "no capture has this id"}}
NOT_READY = {409: {"model": ErrorResponse, "description": "the capture is still being dissected, or failed"}}

UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": {
            "type": "object", "required": ["file"],
            "properties": {"file": {"type": "string", "format": "binary", "description": "a pcap or pcapng file"}},
        }}},
    }
}


@router.post("", status_code=status.HTTP_201_CREATED, response_model=CaptureCreated, summary="Upload a capture",
             openapi_extra=UPLOAD_BODY,
             responses={413: {"model": ErrorResponse, "description": "larger than the server accepts"},
                        415: {"model": ErrorResponse, "description": "not a pcap or pcapng capture"},
                        422: {"model": ErrorResponse, "description": "not a multipart form with a `file` field"},
                        429: {"model": ErrorResponse, "description": "this client stores too many captures"},
                        507: {"model": ErrorResponse, "description": "the server's disk has no room for it"}})
async def upload_capture(request: Request, response: Response, store: CaptureStoreDep,
                         settings: SettingsDep) -> CaptureCreated:
    """Stores the multipart field `file` (streamed to disk) and starts dissecting it in the background.

    Follow `GET /api/captures/{id}/progress` until it says `done`. Whatever goes wrong, nothing of a
    refused upload stays on disk. Every octet of the body counts: what is not the file may take 64 KiB (413
    beyond), and the body is read up to the form's closing boundary only (the answer then closes the
    connection).
    """
    client = client_address(request)
    store.admit(client)
    check_declared_size(request, settings.max_upload_bytes)
    declared = request.headers.get("content-length", "")
    try:
        capture_id, result = await store.upload(
            client, int(declared) if declared.isdigit() else 0,
            lambda path: receive_capture(request, path, settings.max_upload_bytes))
    except ClientDisconnect:  # (a line in the log, not a traceback: nothing went wrong here)
        log.info("an upload from %s ended: the client went away before the end of its body", client)
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the upload ended before its body did") from None
    if not result.complete:
        response.headers["Connection"] = "close"  # (what the client sent after the form's end is not read)
    return CaptureCreated(id=capture_id)


@router.get("/{capture_id}/progress", summary="Dissection progress (server-sent events)",
            response_class=StreamingResponse, responses={
                200: {"content": {"text/event-stream": {}},
                      "description": "`data: {state, percent, detail}` messages until done or error"},
                **NOT_FOUND})
async def capture_progress(capture_id: CaptureId, store: CaptureStoreDep, lang: LangDep) -> StreamingResponse:
    """Streams `data: {"state", "percent", "detail"}` whenever the progress changes; ends on done or error
    (`detail` in the language asked for: `?lang=`, Accept-Language)."""
    return await event_stream(store.progress(capture_id),
                              lambda message: json_bytes(Progress(**_localized_progress(message, lang)).model_dump()))


@router.get("/{capture_id}", response_model=CaptureSummary, summary="A capture's connections", responses=NOT_FOUND)
async def capture_summary(capture_id: CaptureId, store: CaptureStoreDep, lang: LangDep) -> Any:
    """Its state and, once dissected, one summary per ZMTP connection: endpoints, versions, mechanism,
    socket types, identities, message and byte counts, expert counts, first and last time (`error` in the
    language asked for)."""
    summary = store.summary(capture_id)
    if isinstance(summary.get("error"), str):
        summary = {**summary, "error": translate(summary["error"], lang)}
    return summary


def _localized_progress(message: dict[str, Any], lang: str) -> dict[str, Any]:
    if not message.get("detail"):
        return message
    return {**message, "detail": translate(message["detail"], lang)}


def _kinds(kind: str | None) -> list[str] | None:
    if not kind:
        return None
    kinds = [k.strip() for k in kind.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in WIRE_KINDS]
    if unknown:
        raise HTTPException(422, f"unknown kind {unknown[0]!r}; one of {', '.join(WIRE_KINDS)}")
    return kinds or None


@router.get("/{capture_id}/events", response_model=EventPage, summary="A page of events",
            responses={**NOT_FOUND, **NOT_READY,
                       429: {"model": ErrorResponse, "description": "this client already runs as many searches as "
                                                                   "the server allows"}})
async def capture_events(
    capture_id: CaptureId,
    request: Request,
    store: CaptureStoreDep,
    settings: SettingsDep,
    lang: LangDep,
    conn: Annotated[str | None, Query(max_length=64, description="one connection (all when left out)")] = None,
    offset: Annotated[int, Query(ge=0, le=2**40)] = 0,
    limit: Annotated[int, Query(ge=1, description="at most the server's limit (1000 by default)")] = 200,
    kind: Annotated[str | None, Query(max_length=200, description="kinds, comma-separated")] = None,
    q: Annotated[str | None, Query(max_length=200, description="text: command, socket type, body (text or "
                                                                 "hex), expert text")] = None,
    more: Annotated[bool, Query(description="1 to search on where the time limit stopped the same search "
                                            "before (else its partial result is answered as it stands)")] = False,
    fields: Annotated[bool, Query(description="1 to include each event's fields")] = False,
) -> Response:
    """Events in stream order. Each has `index`, its position within its connection; `total` counts the matches.

    Without `conn` the events of every connection are listed in capture order. Bodies are cut to the
    server's list limit (then `truncated` is set); `GET .../events/{index}` gives more.

    A text search (`q`) also answers `searched` and `elements` (how many elements it looked at, of how
    many) and `partial`: true when the server's time limit stopped it, `total` then counts the matches
    found so far. It is cancelled when the client goes away, and one client may run only a few at once.
    """
    kinds = _kinds(kind)
    events_store = store.ready(capture_id)[1]
    if conn is not None and conn not in events_store.conns:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"the capture has no connection {conn!r}")
    query = EventQuery(conn=conn, offset=offset, limit=min(limit, settings.events_max_limit), kinds=kinds, q=q,
                       more=more, fields=fields, lang=lang)
    try:
        body = await event_page(store, events_store, query, request)
    except SearchesBusy as exc:
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(exc)) from None
    if body is None:
        return Response(status_code=499)  # (nobody reads it: the client went away)
    return Response(body, media_type="application/json")


@router.get("/{capture_id}/events/{index}", response_model=Event, summary="One event with its fields",
            responses={**NOT_FOUND, **NOT_READY, 422: {"model": ErrorResponse}})
async def capture_event(
    capture_id: CaptureId,
    index: Annotated[int, Path(ge=0, le=2**40)],
    store: CaptureStoreDep,
    settings: SettingsDep,
    lang: LangDep,
    conn: Annotated[str | None, Query(max_length=64, description="its connection (may be left out when the "
                                                                 "capture has only one)")] = None,
) -> Response:
    """The event at `index` of connection `conn`, with its fields."""
    events_store = store.ready(capture_id)[1]
    if conn is None:
        if len(events_store.conns) != 1:
            raise HTTPException(422, "say which connection: ?conn=")
        conn = next(iter(events_store.conns))
    if conn not in events_store.conns:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"the capture has no connection {conn!r}")
    body = await event_body(events_store, conn, index, settings, lang)
    if body is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"connection {conn!r} has no event {index}")
    return Response(body, media_type="application/json")


@router.get("/{capture_id}/analysis", summary="The capture as a whole: nodes, connections, flows, findings",
            responses={**NOT_FOUND, **NOT_READY})
async def capture_analysis(capture_id: CaptureId, store: CaptureStoreDep, lang: LangDep) -> Response:
    """What `zmtplab analyze --json` says of the capture (without a CURVE check), kept as it was dissected;
    each event a finding cites also has its `index` in its connection (for `/events/{index}?conn=`)."""
    events_store = store.ready(capture_id)[1]
    if events_store.analysis is None:
        raise HTTPException(status.HTTP_409_CONFLICT, "this capture was dissected before analyses were kept: "
                                                      "upload it again")
    return Response(json_bytes(localize_analysis(events_store.analysis, lang)), media_type="application/json")


@router.post("/{capture_id}/curve-check", summary="The CURVE doctor: check each HELLO against the server's key",
             responses={**NOT_FOUND, **NOT_READY, 422: {"model": ErrorResponse}})
async def capture_curve_check(capture_id: CaptureId, body: CurveCheck, store: CaptureStoreDep,
                              lang: LangDep) -> Response:
    """`{"curve", "findings"}`: per CURVE connection whether its HELLO opens with the key(s) given (and then its
    WELCOME, with the server's short-term key), and a `curve-wrong-server-key` finding where it does not. The
    keys serve this request only: they are not stored, logged or echoed."""
    events_store = store.ready(capture_id)[1]
    handshakes = (events_store.analysis or {}).get("curve_handshakes")
    if handshakes is None:
        raise HTTPException(status.HTTP_409_CONFLICT, "this capture was dissected before its CURVE handshakes were "
                                                      "kept: upload it again")
    try:
        secrets = [key_from_text(text) for text in body.secrets]
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    curve, findings = await asyncio.to_thread(check_curve, handshakes, secrets)
    return Response(json_bytes({"curve": curve, "findings": localize_findings(findings, lang)}),
                    media_type="application/json")


@router.get("/{capture_id}/illustrated", summary="One connection (or a range of its elements) as an illustrated page",
            responses={200: {"content": {"text/html": {}}, "description": "one self-contained HTML file"},
                       **NOT_FOUND, **NOT_READY, 422: {"model": ErrorResponse, "description": "nothing in that range"}})
async def capture_illustrated(
    capture_id: CaptureId,
    store: CaptureStoreDep,
    lang: LangDep,
    conn: Annotated[str, Query(max_length=64, description="the connection")],
    first: Annotated[int, Query(alias="from", ge=0, le=2**40, description="the first element's index")] = 0,
    last: Annotated[int | None, Query(alias="to", ge=0, le=2**40, description="the last element's index, "
                                      "inclusive (default: 2000 elements)")] = None,
) -> Response:
    """The connection's elements, each with its octet table, hex, fields, explanations and ABNF rules, an anchor
    per element and field, and the pyzmq script that reproduces the conversation: one file that needs no server
    and runs no script (what `zmtplab illustrate CAPTURE --conn N --from I --to J` writes)."""
    events_store = store.ready(capture_id)[1]
    if conn not in events_store.conns:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"the capture has no connection {conn!r}")
    summary = store.summary(capture_id)

    def work() -> str:
        doc = illustrated.capture_document(events_store, name=summary["name"], conn=conn, first=first, last=last,
                                           connections=summary["connections"], lang=lang)
        return illustrated.page(doc, lang=lang)

    try:
        text = await asyncio.to_thread(work)
    except illustrated.SourceError as exc:
        raise HTTPException(422, str(exc)) from None
    return illustrated.response(text, illustrated.filename(summary["name"], f"conn{conn}"))


@router.get("/{capture_id}/packets/{number}", response_model=PacketResponse, summary="tshark's view of one packet",
            responses={**NOT_FOUND, 502: {"model": ErrorResponse, "description": "tshark failed"}})
async def capture_packet(
    capture_id: CaptureId,
    number: Annotated[int, Path(ge=1, le=2**31 - 1, description="the frame number, as in Wireshark")],
    store: CaptureStoreDep,
    packets: PacketDecoderDep,
) -> Any:
    """The frame, link (eth/sll), IP and TCP layers of packet `number` as tshark decodes them, TCP flags,
    sequence numbers and analysis flags (retransmission, ...) included."""
    record = store.get(capture_id)
    try:
        return await packets.packet(record.id, record.capture_path, number)
    except PacketNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"the capture has no packet {number}") from None
    except PacketDecodeError as exc:
        raise HTTPException(status.HTTP_502_BAD_GATEWAY, str(exc)) from None


@router.delete("/{capture_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a capture",
               responses=NOT_FOUND)
async def delete_capture(capture_id: CaptureId, store: CaptureStoreDep, packets: PacketDecoderDep) -> Response:
    """Deletes the capture and its dissection (stopping it if it still runs)."""
    await store.delete(capture_id)
    packets.forget(capture_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{capture_id}/replay", tags=["replay"],
             summary="The capture replayed as a topology, with one thing changed",
             responses={404: {"model": ErrorResponse, "description": "no capture has this id"},
                        409: {"model": ErrorResponse, "description": "the capture is still being dissected"},
                        413: {"model": ErrorResponse, "description": "the capture is too large to replay here"},
                        422: {"model": ErrorResponse, "description": "a bad change, or nothing to replay"},
                        429: {"model": ErrorResponse, "description": "too many replays at once"}})
async def capture_replay(capture_id: CaptureId, body: ReplayRequest, store: CaptureStoreDep,
                         lang: LangDep) -> Response:
    """What `zmtplab replay --json` prints for the capture with `set`'s changes (`nodes`, `links`, `proxies`,
    `notes`, `fidelity`, `delivered`, `findings`, `diff`), and for the playground `topology` (the body
    `POST /api/sessions` takes), `topology_notes` and `playground` (why a session cannot take it; empty: it can)."""
    record = store.ready(capture_id)[0]  # (no such capture: 404; still being dissected: 409)
    try:  # (too many replays at once: 429, a `TooMany`)
        result = await asyncio.to_thread(replay_capture, record.capture_path, body.set, lang)
    except ReplayTooLarge as exc:
        raise HTTPException(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, str(exc)) from None
    except ReplayError as exc:
        raise HTTPException(422, str(exc)) from None
    return Response(json_bytes(result), media_type="application/json")
