"""The models every part of the API shares: the error answer, health, and events (the event contract of
docs/architecture.md: the models name the required keys and let the kind-specific ones through, `extra="allow"`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...engine.fields import Field as EventField  # (an element's annotated field: the engine's own)

Direction = Literal["c2s", "s2c"]
Kind = Literal["greeting", "command", "frame", "message", "expert", "gap"]


class ErrorResponse(BaseModel):
    """Every error answer: a human-readable `detail` (a list of problems for validation errors)."""

    detail: str | list[Any]


class HealthResponse(BaseModel):
    status: Literal["ok"] = "ok"


# ---------------------------------------------------------------------------- events


class Event(BaseModel):
    """One protocol element (the event contract); kind-specific keys pass through."""

    model_config = ConfigDict(extra="allow")

    conn: str
    dir: Direction
    kind: Kind
    offset: int
    length: int
    fields: list[EventField] | None = None
    index: int | None = Field(None, description="position within its connection (captures)")
    packets: list[int] | None = Field(None, description="capture frames that carried the element (captures)")
    ts: float | None = Field(None, description="capture time in seconds (captures)")
    t: float | None = Field(None, description="session time in seconds (sessions)")
    seq: int | None = Field(None, description="position within the session (sessions)")
