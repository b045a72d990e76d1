"""The models of the live routes and the live websocket."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Port = Annotated[int, Field(strict=True, ge=1, le=65535)]
PortOrAny = Annotated[int, Field(strict=True, ge=0, le=65535, description="0: any free port")]
LiveState = Literal["starting", "capturing", "stopped", "error"]


class LiveInterfaces(BaseModel):
    interfaces: list[str]


class LiveCaptureCreate(BaseModel):
    """Capture `tcp port PORT` on an interface of the server (tshark; needs capture privileges)."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["capture"]
    interface: str = Field(..., min_length=1, max_length=64, examples=["lo"])
    port: Port = Field(..., examples=[5555])


class LiveTapCreate(BaseModel):
    """A forwarding proxy on the server: point clients at `listen`; it connects them to `target`."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["tap"]
    target: str = Field(..., min_length=1, max_length=300, examples=["127.0.0.1:5555"])
    listen_port: PortOrAny = 0


LiveCreate = Annotated[LiveCaptureCreate | LiveTapCreate, Field(discriminator="source")]


class LiveCreated(BaseModel):
    id: str
    state: LiveState
    listen: str | None = Field(None, description="where the tap listens (host:port); tap sources only")


class LiveStatus(BaseModel):
    """`GET /api/live/{id}`, and the websocket's `status` message."""

    type: Literal["status"] = "status"
    state: LiveState
    detail: str
    packets: int | None = Field(None, description="packets tshark captured (capture sources)")
    events: int
    connections: int
    dropped: int = Field(..., description="events lost: the server or this websocket fell behind")
    source: dict[str, Any]


class WsLiveConnection(BaseModel):
    """A new TCP connection of a live source."""

    type: Literal["connection"] = "connection"
    conn: str
    client: str
    server: str
