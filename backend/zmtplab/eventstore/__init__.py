"""The capture event store: a dissected capture's events on disk, written once by a worker (`ingest_capture`,
`StoreWriter`), then paged, filtered, searched and explained (`EventStore`, `public`).

It depends on the engine, the capture dissection and the analysis, and on nothing of the web app, which
serves it (`web.captures`, `web.routes.captures`); see `store.py` for the file's layout.
"""

from __future__ import annotations

from .store import (
    EventStore,
    SearchCancelled,
    SearchLimits,
    StoreWriter,
    TimeLimit,
    ingest_capture,
    public,
)

__all__ = ["EventStore", "SearchCancelled", "SearchLimits", "StoreWriter", "TimeLimit", "ingest_capture", "public"]
