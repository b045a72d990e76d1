"""The per-partition work of the pipeline, in plain Python (no Spark needed to run or test it).

Both stages read packet batches sorted by (cap, flow, frame): every group of one `flow` (a hash of
the connection's address pair, both directions together) is a run of consecutive rows, and the
packets of a group come in capture order. A group is fed, packet by packet, to the same
`TcpReassembler` and `CaptureDissector` that `zmtplab dissect` uses, and finished when the next
group starts, so a partition streams: only one group's reassembly state is held at a time.

A group may hold several TCP connections (a port pair reused, or a hash collision); each is
named by the frame that opened it (`first_frame`), which the driver turns into the capture-wide
id `zmtplab dissect` gives ("0", "1", ... in order of first appearance).

* `connections_partition`: reassembly only, over packets without payload bytes (placeholders of
  the same length: connection identity never depends on the bytes). One row per connection.
* `dissect_partition`: reassembly and dissection; the ZMTP events as `schemas.STAGE_SCHEMA` batches.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from ..capture.dissect import CaptureDissector, SourcedRun
from ..capture.pcapfile import TcpPacket
from ..capture.tcpstream import StreamClosed, StreamData, StreamGap, StreamOpened, TcpReassembler
from .feed import FeedRecorder
from .rows import EventBatcher
from .schemas import CONNECTION_SCHEMA, PACKET_SCHEMA

_IN_COLUMNS = tuple(PACKET_SCHEMA.names)  # (`_groups` unpacks a row in this order)


@contextlib.contextmanager
def fewer_collections(threshold: int = 100_000) -> Iterator[None]:
    """The cyclic GC's youngest generation collected every `threshold` allocations (not 700) while a
    task runs: a task makes millions of short-lived objects that reference counting frees (packets,
    lists, batches: no cycles), and each collection walked the survivors for nothing (2,563
    collections, 1.0 s of the worker's 16 s on a 131 MB capture)."""
    old = gc.get_threshold()
    gc.set_threshold(max(threshold, old[0]), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def lazy_gc(func):
    """A partition function run with a lazier cyclic GC throughout, as Spark drives it (the stages allocate
    many short-lived objects)."""

    def run(batches):
        old = gc.get_threshold()
        gc.set_threshold(20000, 20, 20)
        try:
            yield from func(batches)
        finally:
            gc.set_threshold(*old)

    return run


def flow_key(src: str, sport: int, dst: str, dport: int) -> int:
    """A stable 63-bit hash of a connection's address pair, the same for both directions."""
    import zlib

    a, b = (src, sport), (dst, dport)
    if b < a:
        a, b = b, a
    text = f"{a[0]}|{a[1]}|{b[0]}|{b[1]}".encode()
    return (zlib.crc32(text) << 31) ^ (zlib.adler32(text) & 0x7FFFFFFF)


class PayloadReader:
    """Reads payload bytes back from the capture files by offset (`paths[cap]`)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self.fds: dict[int, int] = {}

    def read(self, cap: int, offset: int, length: int) -> bytes:
        fd = self.fds.get(cap)
        if fd is None:
            if len(self.fds) >= 64:
                self.close()
            fd = self.fds[cap] = os.open(self.paths[cap], os.O_RDONLY)
        data = os.pread(fd, length, offset)
        if len(data) != length:
            raise RuntimeError(f"{self.paths[cap]}: the file changed while it was read "
                               f"({len(data)} of {length} bytes at {offset})")
        return data

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def _groups(batches: Iterable[pa.RecordBatch], payloads: PayloadReader | None = None
            ) -> Iterator[tuple[tuple[int, int], list[TcpPacket]]]:
    """(key, packets) for each run of packets; a key repeats when a group spans batches.

    Payloads shipped by offset are read from the capture with `payloads`; without a reader,
    placeholders of the payload's length stand in (connection identity never depends on bytes).
    """
    zeros = memoryview(bytes(1 << 16))
    for batch in batches:
        if batch.num_rows == 0:
            continue
        cols = [batch.column(name).to_pylist() for name in _IN_COLUMNS]
        run: list[TcpPacket] = []
        key = (-1, -1)  # (no group yet: `run` is empty)
        for cap, flow, frame, ts, src, dst, sport, dport, seq, ack, flags, plen, missing, poff, payload, window in zip(
                *cols, strict=True):
            if payload is None:
                if poff is not None and payloads is not None:
                    payload = payloads.read(cap, poff, plen)
                else:
                    if plen > len(zeros):
                        zeros = memoryview(bytes(plen))
                    payload = zeros[:plen]
            k = (cap, flow)
            if k != key:
                if run:
                    yield key, run
                run = []
                key = k
            run.append(TcpPacket(frame, ts, src, dst, sport, dport, seq, ack, flags, payload, missing, window))
        if run:
            yield key, run


class _Order:
    """Checks that packets of a group come in frame order (the sort the job asks Spark for)."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last = 0

    def check(self, frame: int) -> None:
        if frame <= self.last:
            raise RuntimeError(f"packets out of order within a connection group (frame {frame} after {self.last})")
        self.last = frame


# --------------------------------------------------------------------------- connections


class _ConnStats:
    __slots__ = ("bytes", "close", "first", "gaps", "last_frame", "last_ts", "opened", "packets")

    def __init__(self, opened: StreamOpened) -> None:
        self.opened = opened
        self.first = opened.packet
        self.bytes = {"c2s": 0, "s2c": 0}
        self.gaps = {"c2s": 0, "s2c": 0}
        self.last_ts = opened.ts
        self.last_frame = opened.packet
        self.close: StreamClosed | None = None
        self.packets = 0


def connections_partition(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One row (CONNECTION_SCHEMA) per TCP connection of the partition's groups."""
    rows: list[tuple] = []
    current: tuple[int, int] | None = None
    reasm: TcpReassembler | None = None
    conns: dict[str, _ConnStats] = {}
    order = _Order()

    def finish_group() -> None:
        assert reasm is not None and current is not None
        _account(reasm.finish(), conns)
        for st in conns.values():
            o, c = st.opened, st.close
            rows.append((current[0], current[1], st.first, max(st.last_frame, c.packet if c else 0),
                         o.client[0], o.client[1], o.server[0], o.server[1], o.syn_seen, o.ts,
                         max(st.last_ts, c.ts if c else st.last_ts), c.reason if c else None,
                         st.bytes["c2s"], st.bytes["s2c"], st.gaps["c2s"], st.gaps["s2c"], st.packets))

    with fewer_collections():
        for key, packets in _groups(batches):
            if key != current:
                if reasm is not None:
                    finish_group()
                current, reasm, conns, order = key, TcpReassembler(), {}, _Order()
            assert reasm is not None
            feed, conn_of = reasm.feed, reasm.conn_of
            for pkt in packets:
                order.check(pkt.number)
                _account(feed(pkt), conns)
                cid = conn_of(pkt)  # the connection the packet went to
                if cid is not None and (st := conns.get(cid)) is not None:
                    st.packets += 1
            if len(rows) >= 4096:
                yield _conn_batch(rows)
                rows = []
        if reasm is not None:
            finish_group()
        if rows:
            yield _conn_batch(rows)


def _account(events: list, conns: dict[str, _ConnStats]) -> None:
    for ev in events:
        if isinstance(ev, StreamData):
            st = conns[ev.conn]
            st.bytes[ev.dir] += len(ev.data)
            st.last_ts = ev.ts
            st.last_frame = max(st.last_frame, ev.packet)
        elif isinstance(ev, StreamOpened):
            conns[ev.conn] = _ConnStats(ev)
        elif isinstance(ev, StreamGap):
            conns[ev.conn].gaps[ev.dir] += ev.length
        elif isinstance(ev, StreamClosed):
            conns[ev.conn].close = ev


def _conn_batch(rows: list[tuple]) -> pa.RecordBatch:
    columns = list(zip(*rows, strict=True))
    return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, CONNECTION_SCHEMA, strict=True)],
                                      schema=CONNECTION_SCHEMA)


# --------------------------------------------------------------------------- dissection


def dissect_partition(batches: Iterable[pa.RecordBatch], *, paths: list[str] | None = None,
                      with_fields: bool = True, max_body: int | None = None,
                      max_rows: int = 4096, recorder: FeedRecorder | None = None) -> Iterator[pa.RecordBatch]:
    """The ZMTP events (schemas.STAGE_SCHEMA) of every connection in the partition's groups.

    `paths[cap]` is the capture file to read payloads from when the rows carry offsets. `recorder`, when given,
    also gets what the dissector produced, for the capture's analysis (`pipeline.feed`)."""
    out = EventBatcher(max_rows=max_rows, with_fields=with_fields, max_body=max_body)
    current: tuple[int, int] | None = None
    reasm: TcpReassembler | None = None
    dissector: CaptureDissector | None = None
    first_frames: dict[str, int] = {}
    seqs: dict[str, int] = {}
    order = _Order()

    def emit(stream_events: list, emit_frame: int | None) -> None:
        assert current is not None and dissector is not None
        cap = current[0]
        events, keys = out.events, out.keys
        for sev in stream_events:
            if isinstance(sev, StreamOpened):
                first_frames[sev.conn] = sev.packet
                seqs[sev.conn] = 0
            produced = dissector.feed_runs(sev)
            if recorder is not None and produced:
                recorder.add(produced, emit_frame, first_frames)
            for event in produced:  # EventBatcher.add, inlined: this runs once per event
                if type(event) is SourcedRun:
                    local = event.conn
                    n = seqs[local]
                    seqs[local] = n + len(event.run)
                    out.add_run(cap, first_frames[local], n, emit_frame, event)
                    continue
                local = event["conn"]
                n = seqs[local]
                seqs[local] = n + 1
                events.append(event)
                keys.append((cap, first_frames[local], n, emit_frame))
                out.approx_bytes += 6 * event["length"] + 256

    def finish_group() -> None:
        assert reasm is not None and dissector is not None
        emit(reasm.finish(), None)
        if recorder is not None:
            recorder.end_group(dissector.infos, first_frames)

    payloads = PayloadReader(paths) if paths is not None else None
    try:
        with fewer_collections():
            for key, packets in _groups(batches, payloads):
                if key != current:
                    if reasm is not None:
                        finish_group()
                    current = key
                    reasm = TcpReassembler()
                    dissector = CaptureDissector(with_fields=with_fields, max_body=max_body, runs=True)
                    first_frames, seqs, order = {}, {}, _Order()
                    if recorder is not None:
                        recorder.start_group(key[0])
                assert reasm is not None
                feed = reasm.feed
                for pkt in packets:
                    order.check(pkt.number)
                    stream_events = feed(pkt)
                    if stream_events:
                        emit(stream_events, pkt.number)
                        if out.full:
                            yield from out.flush()
            if reasm is not None:
                finish_group()
            if len(out):
                yield from out.flush()
    finally:
        if payloads is not None:
            payloads.close()


def packets_batch(cap: int, located: list[tuple[TcpPacket, int | None]], *, inline: bool = False) -> pa.RecordBatch:
    """Located TcpPackets as one record batch of PACKET_SCHEMA: each payload by its file offset
    (`poff`) when it has one, else (or with `inline`) the bytes themselves."""
    n = len(located)
    packets = [p for p, _o in located]
    flows = []
    cache: dict[tuple, int] = {}
    for p in packets:
        k = (p.src, p.sport, p.dst, p.dport)
        f = cache.get(k)
        if f is None:
            f = cache[k] = flow_key(*k)
        flows.append(f)
    if inline:
        offsets: list[int | None] = [None] * n
        payloads: list[bytes | None] = [p.payload if p.payload else None for p in packets]
    else:
        offsets = [o for _p, o in located]
        payloads = [p.payload if o is None and p.payload else None for p, o in located]
    arrays: list[Any] = [
        pa.array([cap] * n, pa.int32()),
        pa.array(flows, pa.int64()),
        pa.array([p.number for p in packets], pa.int64()),
        pa.array([p.ts for p in packets], pa.float64()),
        pa.array([p.src for p in packets], pa.string()),
        pa.array([p.dst for p in packets], pa.string()),
        pa.array([p.sport for p in packets], pa.int32()),
        pa.array([p.dport for p in packets], pa.int32()),
        pa.array([p.seq for p in packets], pa.int64()),
        pa.array([p.ack for p in packets], pa.int64()),
        pa.array([p.flags for p in packets], pa.int32()),
        pa.array([len(p.payload) for p in packets], pa.int32()),
        pa.array([p.missing for p in packets], pa.int64()),
        pa.array(offsets, pa.int64()),
        pa.array(payloads, pa.binary()),
        pa.array([p.window for p in packets], pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=PACKET_SCHEMA)
