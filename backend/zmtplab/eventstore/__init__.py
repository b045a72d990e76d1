"""The capture event store: a dissected capture's events on disk, written once by a worker (`ingest_capture` given an
`IngestJob`, `StoreWriter`), then paged, filtered, searched and explained (`EventStore`, `public`).

It depends on the engine, the capture dissection and the analysis, and on nothing of the web app, which
serves it (`web.captures.store`, `web.captures.routes`); `layout.py` describes the file, `writer.py` writes it and
`store.py` reads it.
"""

from __future__ import annotations

from .store import EventStore, SearchCancelled, SearchLimits, StoreClosed, public
from .writer import (
    AnalysisJob,
    AnalysisResult,
    IngestJob,
    IngestResult,
    StoreWriter,
    TimeLimit,
    analyze_file,
    ingest_capture,
    store_analysis,
    time_limit_message,
)

__all__ = ["AnalysisJob", "AnalysisResult", "EventStore", "IngestJob", "IngestResult", "SearchCancelled",
           "SearchLimits", "StoreClosed", "StoreWriter", "TimeLimit", "analyze_file", "ingest_capture", "public",
           "store_analysis", "time_limit_message"]
