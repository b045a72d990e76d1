"""Live routes: the interfaces, starting and stopping a live capture or a tap proxy, and its event stream
(served by `web.live.socket`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response, WebSocket, status

from ..core.models import ErrorResponse
from ..deps import LiveSourcesDep
from .models import LiveCaptureCreate, LiveCreate, LiveCreated, LiveInterfaces, LiveStatus
from .socket import serve as live_socket_serve

router = APIRouter(tags=["live"])

SourceId = Annotated[str, Path(max_length=64)]
NOT_FOUND = {404: {"model": ErrorResponse, "description": "no live source has this id"}}


@router.get("/api/live/interfaces", response_model=LiveInterfaces, summary="Interfaces a live capture may use")
async def interfaces(sources: LiveSourcesDep) -> LiveInterfaces:
    """The network interfaces of the server (and `any`), the only names `POST /api/live` accepts."""
    return LiveInterfaces(interfaces=sources.interfaces())


@router.post("/api/live", status_code=status.HTTP_201_CREATED, response_model=LiveCreated,
             summary="Start a live capture or a tap proxy",
             responses={409: {"model": ErrorResponse, "description": "the tap's listen port is taken"},
                        422: {"model": ErrorResponse},
                        429: {"model": ErrorResponse, "description": "too many live sources"},
                        503: {"model": ErrorResponse, "description": "tshark could not capture here"}})
async def create_live(body: LiveCreate, sources: LiveSourcesDep) -> LiveCreated:
    """`{"source": "capture", "interface": "lo", "port": 5555}` captures `tcp port 5555` on `lo` (answers once
    dumpcap captures); `{"source": "tap", "target": "127.0.0.1:5555", "listen_port": 0}` starts a proxy:
    point clients at the returned `listen` address. Then open the websocket `/ws/live/{id}`."""
    if isinstance(body, LiveCaptureCreate):
        source = await sources.create_capture(body.interface, body.port)
    else:
        source = await sources.create_tap(body.target, body.listen_port)
    return LiveCreated(id=source.id, state=source.state, listen=source.listen)


@router.get("/api/live/{source_id}", response_model=LiveStatus, summary="A live source's state",
            responses=NOT_FOUND)
async def live_status(source_id: SourceId, sources: LiveSourcesDep) -> LiveStatus:
    return LiveStatus.model_validate(sources.get(source_id).status())


@router.delete("/api/live/{source_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Stop a live source",
               responses=NOT_FOUND)
async def delete_live(source_id: SourceId, sources: LiveSourcesDep) -> Response:
    """Stops capturing (tshark ends) or closes the proxy (its port is free again)."""
    sources.get(source_id)
    await sources.end(source_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.websocket("/ws/live/{source_id}")
async def live_socket(websocket: WebSocket, source_id: str, sources: LiveSourcesDep, batch: bool = False) -> None:
    """Server -> browser: `connection` (a TCP connection's endpoints), the recent `event`s, then each new one
    as it arrives, and `status` (state, packets, events, dropped). Closes (1000) when the source has stopped.
    With `?batch=1` a websocket message may hold a JSON array of such messages, in order (what the page uses).
    Nothing is expected from the browser. `web.live.socket` serves it."""
    await live_socket_serve(websocket, sources, source_id, batch=batch)
