"""`POST /api/decode`: one direction's bytes, given as hex, to annotated events."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, HTTPException, Response, status

from ...decode import decode_to_dicts
from ...engine.notation import parse_hex
from ...i18n import localize_events
from ..core.jsontext import json_bytes
from ..core.models import ErrorResponse
from ..deps import LangDep, SettingsDep
from .models import DecodeRequest, DecodeResponse

router = APIRouter(prefix="/api", tags=["decode"])


@router.post("/decode", response_model=DecodeResponse, summary="Decode one direction's bytes",
             responses={413: {"model": ErrorResponse}, 422: {"model": ErrorResponse}})
async def decode(body: DecodeRequest, settings: SettingsDep, lang: LangDep) -> Response:
    """Decodes bytes like `zmtplab decode`: from a greeting, as a ZMTP 1.0 stream, else as ZMTP 3.x frames.

    Every event gets `conn` "0" and `dir` "c2s" and carries its fields.
    """
    limit = settings.decode_max_bytes
    if len(body.hex) > 8 * limit + 64:  # hex digits plus generous separators
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"at most {limit} octets may be decoded at once")
    try:
        data = parse_hex(body.hex)
    except ValueError as exc:
        raise HTTPException(422, f"not hex: {exc}") from exc
    if len(data) > limit:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"at most {limit} octets may be decoded at once")
    events = await asyncio.to_thread(decode_to_dicts, data, with_fields=True, max_body=settings.decode_max_body,
                                     version=body.version)
    # The contract's dicts as they are (a model would add the keys other sources use, as nulls).
    body_out = {"events": localize_events(events, lang)}
    return Response(json_bytes(body_out),
                    media_type="application/json")
