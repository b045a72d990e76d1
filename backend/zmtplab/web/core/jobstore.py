"""What stored captures (`web.captures.store.CaptureStore`) and corpus runs (`web.corpus.runs.CorpusRuns`) share:
jobs under server-made ids, each in a directory of its own with a `meta.json`, changes that wake their progress
streams, eviction of the oldest when too many are kept or they take too much disk, and expiry.

A store's records have `id`, `created` (epoch seconds), `client` (the address that made it), `directory`,
`disk_bytes`, `changed` (an `asyncio.Event` replaced at each change), `meta()` (what `meta.json` holds) and
`progress()` (one message of the progress stream, with its `state`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from .limits import evictions

log = logging.getLogger(__name__)

ID_RE = re.compile(r"^[0-9a-f]{32}$")


class JobRecord(Protocol):
    id: str
    created: float
    client: str
    directory: Path
    disk_bytes: int
    changed: asyncio.Event

    def meta(self) -> dict[str, Any]: ...
    def progress(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=JobRecord)


class JobStore(Generic[R]):
    """The records of one kind of job, by id (see the module docstring). A store says what it calls its jobs,
    which states end a progress stream, which records eviction and expiry may take, and how one is deleted."""

    noun = "job"  # what the log calls one, and several
    plural = "jobs"
    not_found: type[KeyError] = KeyError
    missing = "no job with id {id!r}"  # the `not_found` error's text (a catalog's `api.*` id mirrors each store's)
    final_states: tuple[str, ...] = ()

    def __init__(self, root: Path) -> None:
        self.root = root
        self.records: dict[str, R] = {}

    # ---- what each store says

    def evictable(self, keep: str | None) -> list[R]:
        """The records eviction may delete, oldest first (never `keep`)."""
        raise NotImplementedError

    def expirable(self, record: R) -> bool:
        """Whether expiry may delete this record once it is old enough."""
        return True

    def limits(self) -> tuple[int, int, float]:
        """How many records may be kept, how many octets they may take, and their lifetime in seconds."""
        raise NotImplementedError

    def owner(self, record: R) -> str | None:
        """Whose record it is, for a fair eviction (`limits.evictions`); None: the oldest are evicted first."""
        return None

    def progress_timeout(self) -> float:
        """The longest a progress stream waits before it looks again."""
        return 1.0

    async def delete(self, job_id: str) -> None:
        raise NotImplementedError

    # ---- shared

    def get(self, job_id: str) -> R:
        """The record with this id; the store's `not_found` otherwise (its text names the id)."""
        record = self.records.get(job_id) if ID_RE.match(job_id) else None
        if record is None:
            raise self.not_found(self.missing.format(id=job_id))
        return record

    def for_client(self, client: str) -> list[R]:
        """The records this client address made and the server still keeps, newest first."""
        return sorted((r for r in self.records.values() if r.client == client), key=lambda r: -r.created)

    def update(self, record: R, **changes: Any) -> None:
        """Changes a record and wakes whoever waits for its progress."""
        for key, value in changes.items():
            setattr(record, key, value)
        record.changed.set()
        record.changed = asyncio.Event()

    def write_meta(self, record: R, strict: bool = False) -> None:
        """Writes the record's `meta.json` whole or not at all (`strict`: raise OSError when it cannot)."""
        path = record.directory / "meta.json"
        tmp = path.with_name("meta.json.tmp")
        try:
            tmp.write_text(json.dumps(record.meta()))
            os.replace(tmp, path)
        except OSError:  # deleted meanwhile, or the disk is full
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            if strict:
                raise

    async def progress(self, job_id: str) -> AsyncIterator[dict[str, Any]]:
        """The progress messages of one record, each once, until it reaches a final state."""
        record = self.get(job_id)
        last: dict[str, Any] | None = None
        while True:
            changed = record.changed
            message = record.progress()
            if message != last:
                last = message
                yield message
            if message["state"] in self.final_states:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), timeout=self.progress_timeout())

    async def evict(self, keep: str | None = None) -> None:
        """Deletes evictable records while there are too many or they take too much space: the oldest, or, where
        records have owners, the oldest of whoever holds the most (`limits.evictions`)."""
        max_count, max_bytes, _ = self.limits()
        total = sum(r.disk_bytes for r in self.records.values())
        holdings: dict[str, tuple[int, int]] = {}
        for r in self.records.values():
            key = self.owner(r)
            if key is not None:
                n, octets = holdings.get(key, (0, 0))
                holdings[key] = (n + 1, octets + r.disk_bytes)
        fair = bool(holdings)
        for record in evictions(self.evictable(keep), count=len(self.records), total=total, max_count=max_count,
                                max_bytes=max_bytes, size=lambda r: r.disk_bytes,
                                owner=(lambda r: self.owner(r) or "") if fair else None, holdings=holdings):
            if record.id in self.records:  # (not deleted meanwhile)
                log.info("evicting %s %s (over %d %s or %d bytes)", self.noun, record.id, max_count, self.plural,
                         max_bytes)
                with contextlib.suppress(self.not_found):
                    await self.delete(record.id)

    async def expire(self) -> int:
        """Deletes the expirable records older than the lifetime; returns how many went."""
        limit = time.time() - self.limits()[2]
        old = [r.id for r in self.records.values() if r.created < limit and self.expirable(r)]
        for job_id in old:
            with contextlib.suppress(self.not_found):
                await self.delete(job_id)
        return len(old)
