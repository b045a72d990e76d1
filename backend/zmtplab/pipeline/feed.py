"""The analysis feed: what the dissect tasks hand the per-capture analysis, so each capture is dissected once.

The analysis (`zmtplab.analysis.Analyzer`) follows messages across the connections of a capture, in
capture order, while the events pass spreads a capture's connections over many tasks. So a dissect task
keeps every item its `CaptureDissector.feed_runs()` gave (event dicts without their fields, and
`SourcedRun`s) with the connection's capture-wide id and a key that puts it back in capture order, and each
connection group's `ConnectionInfo`s (`FeedRecorder`, written to one staged file a task). One analysis task
per capture then merges its groups' items back into capture order (`capture_feed`): the very items, in the
very order, that `analysis.analyze_capture` would get from dissecting the file again.

The order key of an item is (the frame whose arrival produced it, 0, n) or, for what the end of the capture
produced, (END, the frame that opened its connection, n), n counting the task's items: a packet belongs to
one group, and the end of a capture closes the connections still open in the order they opened.

A file holds pickled chunks, each a list of (key, item) of one group (a run as a tuple of its parts:
pickling builtins stays in C, where a dataclass's state goes through Python), then a pickled index
{cap: ([(offset, length) of each chunk, by group], [ConnectionInfo...])} and the index's offset (8 octets,
big-endian). The files are the job's own, in its staging directory, read back by its own tasks.
"""

from __future__ import annotations

import dataclasses
import heapq
import pickle
import uuid
from collections.abc import Iterator
from typing import Any

from pyarrow import fs as pafs

from ..capture.dissect import ConnectionInfo, SourcedRun
from ..engine.batch import FrameRun

END = 1 << 62  # the order key's frame for what the end of the capture produced
CHUNK_BYTES = 256 << 10  # a group's items are written (and merged back) in chunks of about this size

Key = tuple[int, int, int]


class FeedRecorder:
    """Keeps a dissect task's analysis items and connections, written to `staging` as one file (see the
    module docstring). `ids` maps (cap, first frame) to the connection's capture-wide id."""

    def __init__(self, staging: str, ids: dict[tuple[int, int], str]) -> None:
        self.ids = ids
        self.filesystem, base = pafs.FileSystem.from_uri(staging)
        self.path = f"{base.rstrip('/')}/feed-{uuid.uuid4().hex}.bin"
        self.out: Any = None
        self.offset = 0
        self.index: dict[int, tuple[list[list[tuple[int, int]]], list[ConnectionInfo]]] = {}
        self.items = 0
        self.n = 0
        self.cap = -1
        self.pending: list[tuple[Key, Any]] = []
        self.pending_bytes = 0
        self.chunks: list[tuple[int, int]] = []

    def start_group(self, cap: int) -> None:
        self.cap = cap
        self.chunks = []

    def add(self, produced: list, emit_frame: int | None, first_frames: dict[str, int]) -> None:
        """Items one stream event produced (`emit_frame`: the packet that brought it, None at the end of the
        capture); `first_frames` maps the group's connection ids to the frames that opened them."""
        cap, ids, pending = self.cap, self.ids, self.pending
        for item in produced:
            local = item.conn if type(item) is SourcedRun else item["conn"]
            first = first_frames[local]
            conn = ids[(cap, first)]
            if type(item) is SourcedRun:
                run = item.run
                item = (conn, item.dir, run.start, run.data, run.fresh, run.framing, run.count, run.starts,
                        item.packets, item.ts)
                self.pending_bytes += len(run.data) + 16 * run.count
            else:
                item = {k: v for k, v in item.items() if k != "fields"}
                item["conn"] = conn
                self.pending_bytes += 256
            key = (emit_frame, 0, self.n) if emit_frame is not None else (END, first, self.n)
            self.n += 1
            pending.append((key, item))
        if self.pending_bytes >= CHUNK_BYTES:
            self._flush()

    def end_group(self, infos: list[ConnectionInfo], first_frames: dict[str, int]) -> None:
        """The group is over: its connections as the dissector saw them (ids made capture-wide)."""
        self._flush()
        chunks, known = self.index.setdefault(self.cap, ([], []))
        if self.chunks:
            chunks.append(self.chunks)
        known += [dataclasses.replace(i, conn=self.ids[(self.cap, first_frames[i.conn])]) for i in infos]

    def _flush(self) -> None:
        if not self.pending:
            return
        data = pickle.dumps(self.pending, protocol=pickle.HIGHEST_PROTOCOL)
        self._write(data)
        self.chunks.append((self.offset - len(data), len(data)))
        self.items += len(self.pending)
        self.pending, self.pending_bytes = [], 0

    def _write(self, data: bytes) -> None:
        if self.out is None:
            self.out = self.filesystem.open_output_stream(self.path)
        self.out.write(data)
        self.offset += len(data)

    def close(self) -> list[dict[str, Any]]:
        """Writes the index; one row a capture (schemas.FILE_SCHEMA: kind "feed", its `cap`), none when the
        task saw no connection."""
        if not self.index:
            return []
        where = self.offset
        self._write(pickle.dumps(self.index, protocol=pickle.HIGHEST_PROTOCOL))
        self._write(where.to_bytes(8, "big"))
        self.out.close()
        return [{"kind": "feed", "path": self.path, "rows": self.items, "bytes": self.offset, "cap": cap}
                for cap in self.index]


def capture_feed(cap: int, paths: list[str]) -> tuple[Iterator[Any], list[ConnectionInfo]]:
    """The analysis items of capture `cap` in capture order, from the feed files of the tasks that saw its
    connections, and its connections in the order `dissect` numbers them."""
    groups: list[Iterator[tuple[Key, Any]]] = []
    infos: list[ConnectionInfo] = []
    for path in paths:
        filesystem, name = pafs.FileSystem.from_uri(path)
        source = filesystem.open_input_file(name)
        size = source.size()
        where = int.from_bytes(source.read_at(8, size - 8), "big")
        chunks, known = pickle.loads(source.read_at(size - 8 - where, where)).get(cap, ([], []))
        infos += known
        groups += [_chunks(source, spans) for spans in chunks]
    infos.sort(key=lambda i: int(i.conn))
    merged = heapq.merge(*groups, key=lambda pair: pair[0])
    return (_item(item) for _key, item in merged), infos


def _item(record: Any) -> Any:
    """An item as `CaptureDissector.feed_runs()` gave it, from its record."""
    if type(record) is not tuple:
        return record
    conn, direction, start, data, fresh, framing, count, starts, packets, ts = record
    return SourcedRun(conn, direction, FrameRun(start, data, fresh, framing, count, starts), packets, ts)


def _chunks(source: Any, spans: list[tuple[int, int]]) -> Iterator[tuple[Key, Any]]:
    for offset, length in spans:
        yield from pickle.loads(source.read_at(length, offset))
