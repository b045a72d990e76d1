"""The models of the capture routes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

from ..core.models import Event

CaptureState = Literal["uploaded", "dissecting", "done", "error"]


class CaptureCreated(BaseModel):
    id: str


class Progress(BaseModel):
    """One server-sent event of `GET /api/captures/{id}/progress`."""

    state: CaptureState
    percent: float
    detail: str = ""


class DirPair(BaseModel):
    c2s: Any = None
    s2c: Any = None


class ExpertCounts(BaseModel):
    note: int = 0
    warn: int = 0
    error: int = 0


class ConnectionSummary(BaseModel):
    conn: str
    client: str | None
    server: str | None
    versions: DirPair
    mechanism: str | None
    socket_types: DirPair
    identities: DirPair
    messages: DirPair
    bytes: DirPair
    expert: ExpertCounts
    first_ts: float | None
    last_ts: float | None
    events: int = 0
    zmtp: bool = Field(True, description="false: nothing of it could be read as ZMTP; its only events are the "
                                         "`unreadable` expert notes that say why")


class CaptureSummary(BaseModel):
    id: str
    name: str
    size: int
    created: float
    state: CaptureState
    error: str | None
    percent: float
    connections: list[ConnectionSummary]
    expert_total: ExpertCounts
    events: int


class CurveCheck(BaseModel):
    """The CURVE server's long-term secret key(s), each 40 Z85 characters or 64 hex digits: used for this request
    only, never stored or logged."""

    secrets: list[Annotated[str, StringConstraints(max_length=128)]] = Field(..., min_length=1, max_length=8)


class EventPage(BaseModel):
    events: list[Event]
    total: int
    searched: int | None = Field(None, description="a text search: the elements it looked at")
    elements: int | None = Field(None, description="a text search: the elements a complete search looks at")
    partial: bool | None = Field(None, description="a text search the time limit stopped: `total` counts the "
                                                   "matches in the `searched` elements; `more=1` searches on")


class PacketField(BaseModel):
    name: str
    value: str
    field: str = Field(..., description="tshark's field name, e.g. tcp.seq")


class PacketLayer(BaseModel):
    name: Literal["frame", "eth", "sll", "ip", "ipv6", "tcp"]
    fields: list[PacketField]


class PacketResponse(BaseModel):
    number: int
    layers: list[PacketLayer]
