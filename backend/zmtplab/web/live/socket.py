"""The live websocket: one viewer of a live capture or tap proxy, from accept to close.

`serve(websocket, sources, source_id)` is what `/ws/live/{id}` runs (`web.live.routes` only routes). The
viewer's queue is the source's (`web.live.sources.Viewer`); the websocket pump (`web.wspump`) sends it,
a message each, and closes the socket (1000) when the source has stopped. Nothing is read from the
browser; an unknown source closes with 4404.
"""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import WebSocket, WebSocketDisconnect

from ..core.jsontext import json_text
from ..wspump import pump
from .sources import LiveNotFound, LiveSources


async def serve(websocket: WebSocket, sources: LiveSources, source_id: str, batch: bool = False) -> None:
    """One viewer of source `source_id` (see the module docstring); with `batch`, a websocket message may hold a
    JSON array of messages, in order (a busy source's events go a batch at a time)."""
    await websocket.accept()
    try:
        source = sources.get(source_id)
    except LiveNotFound as exc:
        await websocket.send_text(json_text({"type": "error", "detail": str(exc)}))
        await websocket.close(code=4404)
        return
    viewer = source.subscribe()
    sender = asyncio.create_task(pump(websocket, viewer, "array" if batch else "burst"))
    try:
        while True:
            receiver = asyncio.ensure_future(websocket.receive())
            done, _ = await asyncio.wait({receiver, sender}, return_when=asyncio.FIRST_COMPLETED)
            if sender in done:
                receiver.cancel()
                with contextlib.suppress(BaseException):
                    await receiver
                return
            if receiver.result()["type"] == "websocket.disconnect":
                return
            # Anything the browser sends is ignored (stop with DELETE /api/live/{id}).
    except WebSocketDisconnect:
        pass
    finally:
        source.unsubscribe(viewer)
        sender.cancel()
        with contextlib.suppress(BaseException):
            await sender
