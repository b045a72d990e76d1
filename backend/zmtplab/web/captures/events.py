"""A stored capture's events as the capture routes answer them: a page (a listing, or a text search that is
cancelled when its client goes away, a few per client at once) and one event with its fields.

The JSON is made in a worker thread, so a page of a thousand events never holds the event loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from starlette.requests import Request

from ...eventstore import EventStore, SearchCancelled, SearchLimits, public
from ...i18n import localize_event, localize_events
from ..core.jsontext import json_bytes
from ..core.limits import client_address
from ..core.settings import Settings
from .searches import run_until_disconnect
from .store import CaptureStore


class SearchesBusy(RuntimeError):
    """This client already runs as many text searches as the server allows."""


@dataclass(frozen=True)
class EventQuery:
    """What `GET /api/captures/{id}/events` asks for (`limit` already within the server's limit)."""

    conn: str | None = None
    offset: int = 0
    limit: int = 200
    kinds: list[str] | None = None
    q: str | None = None
    more: bool = False  # search on where the time limit stopped the same search before
    fields: bool = False
    lang: str = "en"


def page_body(events: EventStore, query: EventQuery, settings: Settings,
              cancel: threading.Event | None = None) -> bytes:
    """The page's JSON: `events` and `total`, and for a text search `searched`, `elements` and `partial`.

    Raises `SearchCancelled` once `cancel` is set."""
    now = time.monotonic()
    soon = None if query.more else now + settings.search_first_seconds  # (`more`: the reader asked for the rest)
    limits = SearchLimits(now + settings.search_max_seconds, cancel, query.more, soon, query.offset + query.limit)
    found = events.listing(query.conn, query.offset, query.limit, kinds=query.kinds, q=query.q or None,
                           limits=limits)
    if query.fields:
        events.fields_of(found.events)
    listed = [public(ev, settings.list_max_body) for ev in found.events]
    out: dict[str, Any] = {"events": localize_events(listed, query.lang), "total": found.total}
    if found.searched is not None:
        out.update(searched=found.searched, elements=found.elements, partial=found.partial)
    return json_bytes(out)


async def event_page(store: CaptureStore, events: EventStore, query: EventQuery, request: Request) -> bytes | None:
    """The page's JSON, made in a worker thread; None when the client of a text search went away before it.

    Raises `SearchesBusy` when the client already runs `max_searches_per_client` text searches."""
    settings = store.settings
    work = partial(page_body, events, query, settings)
    if not query.q:
        return await asyncio.to_thread(work)
    client = client_address(request)
    slots = store.searches
    if not await slots.take_after_ending(client):
        raise SearchesBusy(f"this address already runs {settings.max_searches_per_client} searches (the limit); "
                           "wait for one to answer")
    gone = False

    def went() -> None:
        nonlocal gone
        gone = True
        slots.end(client)

    try:
        body, _ = await run_until_disconnect(request, work, on_disconnect=went)
    except SearchCancelled:
        return None
    finally:
        slots.release(client, ended=gone)
    return None if gone else body


async def event_body(events: EventStore, conn: str, index: int, settings: Settings, lang: str) -> bytes | None:
    """Event `index` of connection `conn` with its fields, as JSON made in a worker thread; None when the
    connection has no such event."""
    return await asyncio.to_thread(_event_json, events, conn, index, settings, lang)


def _event_json(events: EventStore, conn: str, index: int, settings: Settings, lang: str) -> bytes | None:
    try:
        ev = events.event(conn, index)
    except (KeyError, IndexError):
        return None
    return json_bytes(localize_event(public(ev, settings.event_max_body), lang))
