"""Capture files to annotated ZMTP events: packets -> TCP streams -> the engine's dissector.

Every TCP connection is examined, whatever its port: a connection is ZMTP when a
direction starts with a ZMTP signature or both start like ZMTP 1.0 identity frames, or,
for connections captured mid-stream, when the dissector finds a certain chain of frames.
Each event gets `conn`, `dir`, `packets` (the frames that carried its bytes) and `ts`
(the time of the packet that completed it).

No connection that carried payload is left out: one that could not be read as ZMTP (not ZMTP,
no greeting captured and no certain chain of frames found) gets, when it ends, an `expert` warning
per direction with payload that says how many bytes were seen, why they could not be read and
where the dissector gave up (rule `unreadable`).

`dissect_capture()` yields dicts; `dissect_capture_jsonl()` yields the same events as JSON lines
text. Without fields, the latter lets the engine write runs of ordinary frames straight as JSON
(`engine.batch`): the elements that lie within one packet share that packet's `packets` and `ts`,
so they only need the batch's text joined with one suffix. With `runs=True`, `feed_runs()` hands
such runs over as `SourcedRun`s (their octets and each event's source keys) for a consumer that
lays the events out itself, as the Spark pipeline does in Arrow columns.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from ..engine.batch import FrameRun, JsonBatch
from ..engine.dissector import ConnectionDissector
from ..engine.events import Expert, WireEvent
from .errors import CaptureFormatError
from .pcapfile import read_tcp_packets
from .tcpstream import StreamClosed, StreamData, StreamGap, StreamNote, StreamOpened, TcpReassembler

# How many first bytes of a direction we look at before deciding whether it is ZMTP.
SNIFF_BYTES = 12

# StreamNote.what -> severity (Wireshark's for the same tcp.analysis flag), text and the flag.
_TCP_NOTES = {
    "retransmission": ("note", "TCP retransmission: {length} bytes at offset {offset} that were seen before",
                       "tcp.analysis.retransmission"),
    "out-of-order": ("warn", "TCP out-of-order segment: {length} bytes at offset {offset}, after later bytes",
                     "tcp.analysis.out_of_order"),
    "lost-segment": ("warn", "TCP previous segment not captured: {length} bytes at offset {offset} were not "
                             "seen before this segment", "tcp.analysis.lost_segment"),
    "zero-window": ("warn", "TCP zero window: the sender of this segment has no room to receive",
                    "tcp.analysis.zero_window"),
}


@dataclass(frozen=True, slots=True)
class TcpExpert(Expert):
    """An expert note about TCP itself (a `StreamNote`), tied to the one frame it is about."""

    packet: int = 0
    ts: float = 0.0


def tcp_expert(note: StreamNote) -> TcpExpert:
    """The expert event of a reassembler's note; its `rule` is the tcp.analysis flag Wireshark sets."""
    severity, text, rule = _TCP_NOTES[note.what]
    if note.what == "retransmission" and not note.length:
        text = "TCP retransmission of the FIN"
    return TcpExpert(note.offset, note.length, severity, text.format(length=note.length, offset=note.offset),
                     rule, packet=note.packet, ts=note.ts)


@dataclass(frozen=True, slots=True)
class SourcedRun:
    """A `FrameRun` of one connection's direction with the source keys of each of its events:
    `packets[i]` and `ts[i]` are what `feed()` would give the run's i-th event (lists may be shared
    between events: read them, don't change them)."""

    conn: str
    dir: str
    run: FrameRun
    packets: list[list[int]]
    ts: list[float]


@dataclass
class ConnectionInfo:
    """What a capture says about one TCP connection."""

    conn: str
    client: tuple[str, int]
    server: tuple[str, int]
    syn_seen: bool
    first_ts: float
    last_ts: float
    zmtp: bool | None = None  # None while undecided
    closed: str | None = None  # how it ended (tcpstream's CloseReason), once it has


@dataclass
class _PacketMap:
    """Which capture frames carried which stream offsets of one direction."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    packets: list[int] = field(default_factory=list)
    stamps: list[float] = field(default_factory=list)

    def add(self, offset: int, length: int, packet: int, ts: float) -> None:
        self.starts.append(offset)
        self.ends.append(offset + length)
        self.packets.append(packet)
        self.stamps.append(ts)

    def lookup(self, offset: int, length: int) -> tuple[list[int], float | None]:
        """Frames overlapping [offset, offset+length) and the time of the last of them."""
        ends = self.ends
        i = bisect_right(ends, offset)
        if length == 0:
            if i < len(ends):
                return [self.packets[i]], self.stamps[i]
            return ([self.packets[-1]], self.stamps[-1]) if ends else ([], None)
        j = bisect_left(self.starts, offset + length)
        if j <= i:
            return ([self.packets[i - 1]], self.stamps[i - 1]) if i else ([], None)
        packets = self.packets[i:j]
        return packets, self.stamps[j - 1]

    def forget_before(self, offset: int) -> None:
        """Drops entries that end before `offset` (bounded memory on long streams)."""
        i = bisect_right(self.ends, offset)
        if i > 1024:
            del self.starts[:i], self.ends[:i], self.packets[:i], self.stamps[:i]


@dataclass(slots=True)
class _Seen:
    """What one direction of a connection carried, for the note on a connection that could not be read."""

    start: int  # stream offset of the first byte seen
    end: int  # just past the last byte seen
    nbytes: int  # bytes seen
    first_packet: int
    first_ts: float
    missing: int = 0  # bytes the capture lacks (gaps), including a lost head
    head_missing: int = 0  # bytes lost before the first byte seen (the greeting, on a SYN-captured connection)


class _Conn:
    """One connection's dissection state."""

    def __init__(self, info: ConnectionInfo) -> None:
        self.info = info
        self.seen: dict[str, _Seen] = {}
        # Read without a greeting: captured mid-stream, or the first bytes of a SYN-captured connection were lost.
        self.mid_stream = not info.syn_seen
        self.dissector: ConnectionDissector | None = None
        self.maps = {"c2s": _PacketMap(), "s2c": _PacketMap()}
        self.sniff = {"c2s": bytearray(), "s2c": bytearray()}
        self.held: list[tuple[str, Any]] = []  # stream events held while undecided
        self.held_mid: list[tuple[str, Any]] = []  # engine events held until a mid-stream connection is confirmed
        self.confirmed_mid_stream = False


def looks_like_zmtp(first: bytes) -> str | None:
    """'sig' when bytes start with a ZMTP 2.0/3.x signature, 'v1' for a 1.0 identity frame, else None."""
    if not first:
        return None
    if first[0] == 0xFF:
        if len(first) < 10:
            return "?"
        return "sig" if (first[9] & 1 and first[9] == 0x7F) or (first[9] & 1 and len(first) >= 11
                                                                and first[10] in (1, 2, 3)) else (
            "v1" if not first[9] & 1 else None)
    if len(first) < 2:
        return "?"
    return "v1" if first[0] >= 1 and first[1] == 0 else None


class CaptureDissector:
    """Turns reassembled TCP stream events into ZMTP event dicts (the event contract of docs/architecture.md).

    `feed()` gives dicts; with `json=True`, `feed_json()` gives the same events as JSON lines
    (what `orjson.dumps` makes of each dict, one per line). Without fields, the JSON form lets the
    engine write runs of ordinary frames straight as JSON (`engine.batch`), which is much faster.
    With `runs=True`, `feed_runs()` gives dicts and `SourcedRun`s (runs of ordinary frames).
    """

    def __init__(self, *, with_fields: bool = True, max_body: int | None = None, json: bool = False,
                 runs: bool = False) -> None:
        self.with_fields = with_fields
        self.max_body = max_body
        self.json = json
        self.runs = runs and not json
        self.connections: dict[str, _Conn] = {}

    @property
    def infos(self) -> list[ConnectionInfo]:
        """Every TCP connection seen so far."""
        return [c.info for c in self.connections.values()]

    def info(self, conn: str) -> ConnectionInfo | None:
        """One connection seen so far, by id."""
        found = self.connections.get(conn)
        return found.info if found is not None else None

    def feed(self, event: Any) -> list[dict[str, Any]]:
        """Handles one stream event; returns the ZMTP events it completed."""
        return self._feed(event, self._emit)

    def feed_json(self, event: Any) -> str:
        """Handles one stream event; returns the ZMTP events it completed as JSON lines."""
        return "".join(self._feed(event, self._emit_json))

    def feed_runs(self, event: Any) -> list[dict[str, Any] | SourcedRun]:
        """Handles one stream event; returns the ZMTP events it completed, runs of ordinary frames
        as `SourcedRun`s (with `runs=True`) and every other event as a dict."""
        return self._feed(event, self._emit_runs)

    def _feed(self, event: Any, emit: Any) -> list:
        if isinstance(event, StreamData):
            conn = self.connections[event.conn]
            conn.info.last_ts = event.ts
            seen = conn.seen.get(event.dir)
            if seen is None:
                conn.seen[event.dir] = _Seen(event.offset, event.offset + len(event.data), len(event.data),
                                             event.packet, event.ts)
            else:
                seen.nbytes += len(event.data)
                seen.end = event.offset + len(event.data)
            if conn.info.zmtp is False:
                sniff = conn.sniff[event.dir]  # (no packet map: nothing of it will be output but the note)
                if len(sniff) < SNIFF_BYTES:
                    sniff += event.data[: SNIFF_BYTES - len(sniff)]
                return []
            conn.maps[event.dir].add(event.offset, len(event.data), event.packet, event.ts)
            if conn.info.zmtp is None:
                return self._undecided(conn, event, emit)
            if conn.info.zmtp:
                return emit(conn, event.dir, conn.dissector.receive_data(event.dir, event.data), event)
            return []
        if isinstance(event, StreamOpened):
            info = ConnectionInfo(event.conn, event.client, event.server, event.syn_seen, event.ts, event.ts)
            self.connections[event.conn] = _Conn(info)
            return []
        if isinstance(event, StreamGap):
            conn = self.connections[event.conn]
            seen = conn.seen.get(event.dir)
            if seen is None:
                # Nothing of this direction seen yet: its head is lost (for a SYN-captured one, its greeting).
                seen = conn.seen[event.dir] = _Seen(event.offset + event.length, event.offset + event.length, 0,
                                                    event.packet, event.ts, head_missing=event.length)
            seen.missing += event.length
            if conn.info.zmtp is False:
                return []
            conn.maps[event.dir].add(event.offset, 0, event.packet, event.ts)
            if conn.info.zmtp is None:
                conn.held.append(("gap", event))
                if conn.mid_stream:
                    return []
                if not any(conn.sniff.values()):
                    # The greeting was lost: read it as if captured mid-stream (a certain frame chain decides).
                    conn.mid_stream = True
                    return self._decide(conn, True, emit)
                return []
            if conn.info.zmtp:
                return emit(conn, event.dir, conn.dissector.gap(event.dir, event.length), None)
            return []
        if isinstance(event, StreamNote):
            conn = self.connections[event.conn]
            note = (event.dir, tcp_expert(event))
            if conn.info.zmtp is None:
                conn.held.append(("note", note))
                return []
            return emit(conn, None, [note], None) if conn.info.zmtp else []
        if isinstance(event, StreamClosed):
            conn = self.connections[event.conn]
            conn.info.last_ts = max(conn.info.last_ts, event.ts)
            conn.info.closed = event.reason
            out: list = []
            if conn.info.zmtp is None:
                out.extend(self._decide(conn, self._verdict(conn, final=True), emit))
            if conn.info.zmtp and conn.dissector is not None:
                events = conn.dissector.close()
                if not conn.mid_stream or conn.confirmed_mid_stream:
                    out.extend(emit(conn, None, events, None))
            if not conn.info.zmtp or (conn.mid_stream and not conn.confirmed_mid_stream):
                out.extend(self._unreadable(conn, event, as_json=emit == self._emit_json))
                conn.info.zmtp = False
            return out
        return []

    # ---- deciding whether a connection is ZMTP

    def _verdict(self, conn: _Conn, *, final: bool = False) -> bool | None:
        if conn.mid_stream:
            return True  # a mid-stream dissector decides by itself (see _emit)
        kinds = [looks_like_zmtp(bytes(conn.sniff[d])) for d in ("c2s", "s2c")]
        if "sig" in kinds:
            return True
        if all(k == "v1" for k in kinds):
            return True
        if kinds.count("v1") == 1 and None not in kinds and not final:
            return None  # a 1.0 peer's partner may not have spoken yet
        if None in kinds and any(conn.sniff[d] for d in ("c2s", "s2c")):
            if any(k == "v1" for k in kinds) or "?" in kinds:
                return None if not final else False
            return False
        return None if not final else ("v1" in kinds and kinds.count(None) == 0)

    def _undecided(self, conn: _Conn, event: StreamData, emit: Any) -> list:
        sniff = conn.sniff[event.dir]
        if len(sniff) < SNIFF_BYTES:
            sniff += event.data[: SNIFF_BYTES - len(sniff)]
        conn.held.append(("data", event))
        verdict = self._verdict(conn)
        if verdict is None:
            return []
        return self._decide(conn, verdict, emit)

    def _decide(self, conn: _Conn, verdict: bool, emit: Any) -> list:
        conn.info.zmtp = verdict
        held, conn.held = conn.held, []
        if not verdict:
            conn.maps = {"c2s": _PacketMap(), "s2c": _PacketMap()}
            return []
        conn.sniff = {}
        conn.dissector = ConnectionDissector(mid_stream=conn.mid_stream,
                                             json_batches=self.json and not self.with_fields,
                                             frame_runs=self.runs,
                                             max_body=self.max_body)
        out: list = []
        for what, ev in held:
            if what == "data":
                out.extend(emit(conn, ev.dir, conn.dissector.receive_data(ev.dir, ev.data), ev))
            elif what == "note":
                out.extend(emit(conn, None, [ev], None))
            else:
                out.extend(emit(conn, ev.dir, conn.dissector.gap(ev.dir, ev.length), None))
        return out

    # ---- output

    def _release(self, conn: _Conn, events: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """The events to output now: a mid-stream connection's wait until a decoded element confirms it."""
        if conn.mid_stream and not conn.confirmed_mid_stream:
            # Mid-stream: only a decoded element (not a note or a gap) shows this is ZMTP.
            if not any(e.kind in ("frame", "command", "message", "batch") for _, e in events):
                conn.held_mid.extend(events)
                return []
            conn.confirmed_mid_stream = True
            events = [*conn.held_mid, *events]
            conn.held_mid = []
        return events

    def _unreadable(self, conn: _Conn, closed: StreamClosed, *, as_json: bool) -> list:
        """One `expert` per direction with payload of a connection nothing could be read of, as dicts or
        (`as_json`) JSON lines."""
        out: list = []
        ended = "at the end of the capture" if closed.reason == "end-of-capture" else \
            f"when the connection ended ({closed.reason.upper() if closed.reason != 'reused' else 'port pair reused'})"
        for d in ("c2s", "s2c"):
            seen = conn.seen.get(d)
            if seen is None or not seen.nbytes:
                continue
            why = self._why_unreadable(conn, d, seen)
            missing = f", {seen.missing:,} missing" if seen.missing else ""
            text = (f"{seen.nbytes:,} bytes seen (offsets {seen.start:,}-{seen.end:,}{missing}) could not be read as "
                    f"ZMTP: {why}; gave up at offset {seen.end:,}, {ended}")
            note = Expert(seen.start, 0, severity="warn", text=text, rule="unreadable")
            item = note.to_dict(with_fields=self.with_fields, max_body=self.max_body)
            item.update(conn=conn.info.conn, dir=d, packets=[seen.first_packet], ts=seen.first_ts)
            out.append(orjson.dumps(item, option=orjson.OPT_APPEND_NEWLINE).decode() if as_json else item)
        return out

    @staticmethod
    def _why_unreadable(conn: _Conn, d: str, seen: _Seen) -> str:
        if conn.info.zmtp is False:
            first = bytes(conn.sniff.get(d, b""))
            if not first:
                return "the other direction's first bytes showed this connection is not ZMTP"
            text = first.decode("ascii") if first.isascii() else ""
            shown = first.hex(" ") + (f' ("{text}")' if text.isprintable() else "")
            return (f"the stream starts with {shown}, neither a ZMTP signature (%xFF, 8 octets, %x7F) nor a ZMTP 1.0 "
                    "identity frame (23/ZMTP's detection)")
        if conn.info.syn_seen:
            where = f"the first {seen.head_missing:,} bytes are missing from the capture (no greeting captured)"
        else:
            where = "the capture starts in the middle of this connection (no SYN, no greeting captured)"
        return f"{where}, and no certain chain of frames was found (one that ends exactly where the data ends)"

    def _forget(self, conn: _Conn, direction: str | None) -> None:
        if direction is not None and conn.dissector is not None:
            decoder = conn.dissector.decoders[direction]
            floor = decoder.pending_start
            conn.maps[direction].forget_before(decoder.offset if floor is None else floor)

    def _item(self, conn: _Conn, d: str, event: WireEvent) -> dict[str, Any]:
        item = event.to_dict(with_fields=self.with_fields, max_body=self.max_body)
        if type(event) is TcpExpert:  # about one frame, not the frames that carried those bytes
            packets, ts = [event.packet], event.ts
        else:
            packets, ts = conn.maps[d].lookup(event.offset, event.length)
        item["conn"] = conn.info.conn
        item["dir"] = d
        item["packets"] = packets
        item["ts"] = ts if ts is not None else conn.info.last_ts
        return item

    def _emit(self, conn: _Conn, direction: str | None, events: list[tuple[str, WireEvent]],
              chunk: StreamData | None) -> list[dict]:
        if not events:
            return []
        events = self._release(conn, events)
        if not events:
            return []
        out = []
        item = self._item
        for d, event in events:
            if isinstance(event, FrameRun):
                out.extend(item(conn, d, e) for e in event.events())
            else:
                out.append(item(conn, d, event))
        self._forget(conn, direction)
        return out

    def _emit_runs(self, conn: _Conn, direction: str | None, events: list[tuple[str, WireEvent]],
                   chunk: StreamData | None) -> list[dict | SourcedRun]:
        if not events:
            return []
        events = self._release(conn, events)
        if not events:
            return []
        out: list[dict | SourcedRun] = []
        for d, event in events:
            if type(event) is FrameRun:
                out.append(self._sourced_run(conn, d, event, chunk))
            elif isinstance(event, FrameRun):
                out.extend(self._item(conn, d, e) for e in event.events())
            else:
                out.append(self._item(conn, d, event))
        self._forget(conn, direction)
        return out

    def _sourced_run(self, conn: _Conn, d: str, run: FrameRun, chunk: StreamData | None) -> SourcedRun:
        n = len(run)
        packets: list[Any]
        stamps: list[Any]
        if (chunk is not None and chunk.dir == d and run.fresh == chunk.offset
                and run.end <= chunk.offset + len(chunk.data)):
            # Every element that starts in this packet's data ends in it too (as in `_batch_json`).
            packets = [[chunk.packet]] * n
            stamps = [chunk.ts] * n
            special = run.spans(before=chunk.offset) if run.start < chunk.offset else []
        else:
            packets, stamps = [None] * n, [None] * n
            special = run.spans()
        lookup = conn.maps[d].lookup
        for k, offset, length in special:
            found, ts = lookup(offset, length)
            packets[k] = found
            stamps[k] = ts if ts is not None else conn.info.last_ts
        return SourcedRun(conn.info.conn, d, run, packets, stamps)

    def _emit_json(self, conn: _Conn, direction: str | None, events: list[tuple[str, WireEvent]],
                   chunk: StreamData | None) -> list[str]:
        if not events:
            return []
        events = self._release(conn, events)
        if not events:
            return []
        out = []
        for d, event in events:
            if type(event) is JsonBatch:
                out.append(self._batch_json(conn, d, event, chunk))
            else:
                out.append(orjson.dumps(self._item(conn, d, event), option=orjson.OPT_APPEND_NEWLINE).decode())
        self._forget(conn, direction)
        return out

    def _suffix(self, conn: _Conn, d: str, packets: list[int], ts: float | None) -> str:
        """The source keys and the closing brace of an event's JSON line (as orjson writes them)."""
        source = {"conn": conn.info.conn, "dir": d, "packets": packets,
                  "ts": ts if ts is not None else conn.info.last_ts}
        return "," + orjson.dumps(source, option=orjson.OPT_APPEND_NEWLINE).decode()[1:]

    def _batch_json(self, conn: _Conn, d: str, batch: JsonBatch, chunk: StreamData | None) -> str:
        heads = batch.heads
        if (chunk is not None and chunk.dir == d and batch.fresh == chunk.offset
                and batch.end <= chunk.offset + len(chunk.data)):
            # Every element that starts in this packet's data ends in it too: one suffix for them all.
            common: str | None = self._suffix(conn, d, [chunk.packet], chunk.ts)
            special = batch.spans(before=chunk.offset) if batch.start < chunk.offset else []
            if not special:
                return common.join(heads) + common  # type: ignore[union-attr]
        else:
            common = None
            special = batch.spans()
        lookup = conn.maps[d].lookup
        ends = {}
        for k, offset, length in special:
            packets, ts = lookup(offset, length)
            ends[k] = self._suffix(conn, d, packets, ts)
        if common is None:
            return "".join([head + ends[k] for k, head in enumerate(heads)])
        last = max(ends) + 1
        first = "".join([heads[k] + ends.get(k, common) for k in range(last)])
        return first + common.join(heads[last:]) + common if last < len(heads) else first


@dataclass
class DissectResult:
    """Where a dissection stopped, when the capture was damaged."""

    error: str | None = None
    connections: list[ConnectionInfo] = field(default_factory=list)


def dissect_capture(source: str | bytes | BinaryIO, *, with_fields: bool = True, max_body: int | None = None,
                    result: DissectResult | None = None,
                    dissector: CaptureDissector | None = None) -> Iterator[dict[str, Any]]:
    """Yields the ZMTP events of a capture file, in capture order.

    Raises `CaptureFormatError` at once for a file that is not a capture. A capture that
    is cut short yields what could be read; the error is then put in `result.error`
    (when a `result` is given) or raised after the last event. A `dissector` given (built with
    the same `with_fields` and `max_body`) lets the caller ask it about connections as they come.
    """
    packets = read_tcp_packets(source)
    dissector = dissector or CaptureDissector(with_fields=with_fields, max_body=max_body)
    for items in _dissect_packets(packets, dissector, dissector.feed, result):
        yield from items


def dissect_capture_jsonl(source: str | bytes | BinaryIO, *, with_fields: bool = True, max_body: int | None = None,
                          result: DissectResult | None = None) -> Iterator[str]:
    """`dissect_capture()` as JSON lines: yields text pieces, each of zero or more whole lines.

    The lines are what `orjson.dumps` makes of `dissect_capture()`'s dicts, in the same order.
    """
    packets = read_tcp_packets(source)
    dissector = CaptureDissector(with_fields=with_fields, max_body=max_body, json=True)
    yield from _dissect_packets(packets, dissector, dissector.feed_json, result)


def dissect_capture_runs(source: str | bytes | BinaryIO, *, dissector: CaptureDissector | None = None,
                         result: DissectResult | None = None) -> Iterator[dict[str, Any] | SourcedRun]:
    """`dissect_capture()` without fields, runs of ordinary frames as `SourcedRun`s (for a consumer that reads
    their octets itself); `dissector`, if given, must be built with `with_fields=False, runs=True`."""
    packets = read_tcp_packets(source)
    dissector = dissector or CaptureDissector(with_fields=False, runs=True)
    for items in _dissect_packets(packets, dissector, dissector.feed_runs, result):
        yield from items


def _dissect_packets(packets: Iterable, dissector: CaptureDissector, feed: Any,
                     result: DissectResult | None) -> Iterator[Any]:
    reassembler = TcpReassembler()
    error: CaptureFormatError | None = None
    try:
        for packet in packets:
            for stream_event in reassembler.feed(packet):
                yield feed(stream_event)
    except CaptureFormatError as exc:
        # Truncated or corrupt part-way: keep everything decoded so far and say where it stopped.
        error = exc
    for stream_event in reassembler.finish():
        yield feed(stream_event)
    if result is not None:
        result.connections = dissector.infos
        result.error = str(error) if error else None
    elif error is not None:
        raise error
