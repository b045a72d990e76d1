"""Server-sent events: a progress stream (`JobStore.progress`) as a `text/event-stream` response."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi.responses import StreamingResponse


async def event_stream(messages: AsyncIterator[dict[str, Any]], render: Callable[[dict[str, Any]], bytes]
                       ) -> StreamingResponse:
    """`data: <render(message)>` for each message. The first is awaited before the response starts, so an
    unknown id raises its store's not-found error here, for the route to answer 404."""
    first = await anext(messages)

    async def events() -> AsyncIterator[bytes]:
        yield b"data: " + render(first) + b"\n\n"
        async for message in messages:
            yield b"data: " + render(message) + b"\n\n"

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
