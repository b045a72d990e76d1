"""The models of `POST /api/decode`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..core.models import Event


class DecodeRequest(BaseModel):
    """Bytes of one direction as hex (spaces, colons, commas and 0x prefixes allowed)."""

    hex: str = Field(..., examples=["ff00000000000000017f 03 01 4e554c4c"])
    version: Literal["auto", "1.0", "2.0", "3"] = Field(
        "auto", description="auto: 23/ZMTP's detection; 1.0, 2.0 or 3 force that reading (like `zmtplab decode`)")


class DecodeResponse(BaseModel):
    events: list[Event]
