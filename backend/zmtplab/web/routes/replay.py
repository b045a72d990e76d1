"""The replay route: a stored capture replayed as a topology, with changes (`web/replays.py`)."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Response, status

from ...replay import ReplayError
from ..captures import CaptureNotFound, CaptureNotReady
from ..deps import CaptureStoreDep, LangDep
from ..jsontext import json_bytes
from ..models import ErrorResponse
from ..replays import ReplayBusy, ReplayRequest, ReplayTooLarge, replay_capture

router = APIRouter(prefix="/api/captures", tags=["replay"])

CaptureId = Annotated[str, Path(description="the id `POST /api/captures` returned", max_length=64)]


@router.post("/{capture_id}/replay", summary="The capture replayed as a topology, with one thing changed",
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
    try:
        record = store.ready(capture_id)[0]
    except CaptureNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no capture with id {capture_id!r}") from None
    except CaptureNotReady as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    try:
        result = await asyncio.to_thread(replay_capture, record.capture_path, body.set, lang)
    except ReplayBusy as exc:
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(exc)) from None
    except ReplayTooLarge as exc:
        raise HTTPException(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, str(exc)) from None
    except ReplayError as exc:
        raise HTTPException(422, str(exc)) from None
    return Response(json_bytes(result), media_type="application/json")
