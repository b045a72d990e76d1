"""Capture files to annotated ZMTP events: packets -> TCP streams -> the engine's dissector.

Every TCP connection is examined, whatever its port: a connection is ZMTP when a
direction starts with a ZMTP signature or both start like ZMTP 1.0 identity frames, or,
for connections captured mid-stream, when the dissector finds a certain chain of frames.
A connection whose client opens with an HTTP upgrade to WebSocket offering a ZWS subprotocol
is ZMTP over WebSocket (45/ZWS), read by the engine's `ZwsDissector` into the same events.
Each event gets `conn`, `dir`, `packets` (the frames that carried its bytes) and `ts`
(the time of the packet that completed it).

No connection that carried payload is left out: one that could not be read as ZMTP (not ZMTP,
no greeting captured and no certain chain of frames found) gets, when it ends, an `expert` warning
per direction with payload that says how many bytes were seen, why they could not be read and
where the dissector gave up (rule `unreadable`).

`dissect_capture()` yields dicts; `dissect_capture_jsonl()` yields the same events as JSON lines
text. The latter has runs of ordinary frames written straight as JSON, fields and all
(`jsonlines.py`): the elements that lie within one packet share that packet's `packets` and `ts`,
so they only need the run's text joined with one suffix. With `runs=True`, `feed_runs()` hands
such runs over as `SourcedRun`s (their octets and each event's source keys) for a consumer that
lays the events out itself, as the Spark pipeline does in Arrow columns. All three go through one
loop (`_emit`) and differ only in their `_Output`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from ..engine.batch import FrameRun, RunScanner, frame_run
from ..engine.dissector import ConnectionDissector, Item
from ..engine.events import Command, Expert, Frame, Message, WireEvent
from ..engine.zws import MAX_HEAD, sniff_upgrade, starts_like_request
from ..engine.zws_dissector import ZwsDissector
from .errors import CaptureFormatError
from .jsonlines import JsonRun, join_run, json_runs, source_suffix
from .pcapfile import read_tcp_packets
from .tcpstream import StreamClosed, StreamControl, StreamData, StreamGap, StreamNote, StreamOpened, TcpReassembler

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


@dataclass(slots=True)
class Stall:
    """A TCP zero window: the sender of direction `dir` (the reader) had no room from `start` (frame `packet`)
    until `end`, when it advertised room again or the other side's data moved ('window-update' or 'data'
    as `ended_by`); `end` None: still closed when the connection or the capture ended."""

    dir: str
    start: float
    packet: int
    end: float | None = None
    ended_by: str | None = None


@dataclass
class ConnectionInfo:
    """What a capture says about one TCP connection: its ends, how it went (each side's first FIN or RST, the
    server's SYN/ACK, its zero windows) and whether it was ZMTP."""

    conn: str
    client: tuple[str, int]
    server: tuple[str, int]
    syn_seen: bool
    first_ts: float
    last_ts: float
    zmtp: bool | None = None  # None while undecided
    closed: str | None = None  # how it ended (tcpstream's CloseReason), once it has
    syn_ack: bool = False  # the server accepted (a SYN/ACK was seen)
    fin: dict[str, float] = field(default_factory=dict)  # direction -> when its sender's first FIN was seen
    rst: dict[str, float] = field(default_factory=dict)  # direction -> when its sender reset the connection
    stalls: list[Stall] = field(default_factory=list)  # zero windows, in capture order

    def control(self, event: StreamControl) -> None:
        """Takes what a side did to the connection itself (a reassembler's `StreamControl`)."""
        if event.what == "fin":
            self.fin.setdefault(event.dir, event.ts)
        elif event.what == "rst":
            self.rst.setdefault(event.dir, event.ts)
        elif event.what == "syn-ack":
            self.syn_ack = True
        elif event.what == "window-open":
            self.stall_over(event.dir, event.ts, "window-update")

    def stall_over(self, reader: str, ts: float, why: str) -> None:
        """The zero window of `reader`'s direction, if one is open, ends at `ts`."""
        for stall in reversed(self.stalls):
            if stall.dir == reader:
                if stall.end is None:
                    stall.end, stall.ended_by = ts, why
                return


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
        self.dissector: ConnectionDissector | ZwsDissector | None = None
        self.zws = False  # the client's first bytes are an HTTP upgrade to ZWS
        self.maps = {"c2s": _PacketMap(), "s2c": _PacketMap()}
        self.sniff = {"c2s": bytearray(), "s2c": bytearray()}
        self.held: list[tuple[str, Any]] = []  # stream events held while undecided
        self.held_mid: list[tuple[str, Any]] = []  # engine events held until a mid-stream connection is confirmed
        self.confirmed_mid_stream = False
        self.decryptor: Any = None  # a CurveDecryptor, with a key log, from the connection's HELLO on
        self.stalled: set[str] = set()  # the directions whose zero window is open (the readers)


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
    (what `orjson.dumps` makes of each dict, one per line). The JSON form has runs of ordinary
    frames written straight as JSON, with or without fields (`jsonlines.py`), which is much faster.
    With `runs=True`, `feed_runs()` gives dicts and `SourcedRun`s (runs of ordinary frames).
    """

    def __init__(self, *, with_fields: bool = True, max_body: int | None = None, json: bool = False,
                 runs: bool = False, curve_keys: Mapping[bytes, bytes] | None = None,
                 max_held: int | None = None) -> None:
        """`max_held`: the budget of each connection's dissector (`engine.StreamDecoder`), for live traffic."""
        self.with_fields = with_fields
        self.max_body = max_body
        self.max_held = max_held
        # A CURVE key log (engine.curve.parse_keylog): each box of a connection it has the key of is followed by
        # what it holds (engine.curve.CurveDecryptor).
        self.curve_keys = curve_keys
        self.json = json
        self.runs = runs and not json
        self.connections: dict[str, _Conn] = {}
        # The decoders' run scanner: JSON text (with the fields, when asked) for JSON, octets for `runs`.
        self._scanner: RunScanner | None = None
        if max_body is None or max_body >= 0:
            if json:
                self._scanner = json_runs(max_body, with_fields)
            elif self.runs:
                self._scanner = frame_run
        self._as_dicts = _Output(None, self._run_dicts)
        self._as_json = _Output(_json_line, self._run_json)
        self._as_runs = _Output(None, self._run_sourced)

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
        return self._feed(event, self._as_dicts)

    def feed_json(self, event: Any) -> str:
        """Handles one stream event; returns the ZMTP events it completed as JSON lines."""
        return "".join(self._feed(event, self._as_json))

    def feed_runs(self, event: Any) -> list[dict[str, Any] | SourcedRun]:
        """Handles one stream event; returns the ZMTP events it completed, runs of ordinary frames
        as `SourcedRun`s (with `runs=True`) and every other event as a dict."""
        return self._feed(event, self._as_runs)

    def _feed(self, event: Any, output: _Output) -> list:
        if isinstance(event, StreamData):
            conn = self.connections[event.conn]
            conn.info.last_ts = event.ts
            if conn.stalled:  # the writer's data moved: the reader's zero window is over
                reader = "s2c" if event.dir == "c2s" else "c2s"
                if reader in conn.stalled:
                    conn.stalled.discard(reader)
                    conn.info.stall_over(reader, event.ts, "data")
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
                return self._undecided(conn, event, output)
            if conn.info.zmtp:
                return self._emit(conn, event.dir, conn.dissector.receive_data(event.dir, event.data), event, output)
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
                    return self._decide(conn, True, output)
                return []
            if conn.info.zmtp:
                return self._emit(conn, event.dir, conn.dissector.gap(event.dir, event.length), None, output)
            return []
        if isinstance(event, StreamControl):
            conn = self.connections[event.conn]
            conn.info.control(event)
            if event.what == "window-open":
                conn.stalled.discard(event.dir)
            return []
        if isinstance(event, StreamNote):
            conn = self.connections[event.conn]
            if event.what == "zero-window" and event.dir not in conn.stalled:
                conn.stalled.add(event.dir)
                conn.info.stalls.append(Stall(event.dir, event.ts, event.packet))
            note = (event.dir, tcp_expert(event))
            if conn.info.zmtp is None:
                conn.held.append(("note", note))
                return []
            return self._emit(conn, None, [note], None, output) if conn.info.zmtp else []
        if isinstance(event, StreamClosed):
            conn = self.connections[event.conn]
            conn.info.last_ts = max(conn.info.last_ts, event.ts)
            conn.info.closed = event.reason
            out: list = []
            if conn.info.zmtp is None:
                out.extend(self._decide(conn, self._verdict(conn, final=True), output))
            if conn.info.zmtp and conn.dissector is not None:
                events = conn.dissector.close()
                if not conn.mid_stream or conn.confirmed_mid_stream:
                    out.extend(self._emit(conn, None, events, None, output))
            if not conn.info.zmtp or (conn.mid_stream and not conn.confirmed_mid_stream):
                out.extend(self._unreadable(conn, event, output))
                conn.info.zmtp = False
            return out
        return []

    # ---- deciding whether a connection is ZMTP

    def _verdict(self, conn: _Conn, *, final: bool = False) -> bool | None:
        if conn.mid_stream:
            return True  # a mid-stream dissector decides by itself (see _emit)
        if starts_like_request(conn.sniff["c2s"]):
            zws = sniff_upgrade(conn.sniff["c2s"])
            if zws:
                conn.zws = True
                return True
            if zws is None and not final:
                return None  # an HTTP request head still coming: a ZWS upgrade, perhaps
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

    def _undecided(self, conn: _Conn, event: StreamData, output: _Output) -> list:
        sniff = conn.sniff[event.dir]
        # The client's side may be an HTTP upgrade (ZWS): its whole head decides.
        limit = MAX_HEAD if event.dir == "c2s" and starts_like_request(sniff or event.data) else SNIFF_BYTES
        if len(sniff) < limit:
            sniff += event.data[: limit - len(sniff)]
        conn.held.append(("data", event))
        verdict = self._verdict(conn)
        if verdict is None:
            return []
        return self._decide(conn, verdict, output)

    def _decide(self, conn: _Conn, verdict: bool, output: _Output) -> list:
        conn.info.zmtp = verdict
        held, conn.held = conn.held, []
        if not verdict:
            conn.maps = {"c2s": _PacketMap(), "s2c": _PacketMap()}
            return []
        conn.sniff = {}
        conn.dissector = ZwsDissector(max_held=self.max_held) if conn.zws else \
            ConnectionDissector(mid_stream=conn.mid_stream, runs=self._scanner, max_held=self.max_held)
        out: list = []
        for what, ev in held:
            if what == "data":
                out.extend(self._emit(conn, ev.dir, conn.dissector.receive_data(ev.dir, ev.data), ev, output))
            elif what == "note":
                out.extend(self._emit(conn, None, [ev], None, output))
            else:
                out.extend(self._emit(conn, ev.dir, conn.dissector.gap(ev.dir, ev.length), None, output))
        return out

    # ---- output

    def _release(self, conn: _Conn, events: list[Item]) -> list[Item]:
        """The events to output now: a mid-stream connection's wait until a decoded element confirms it."""
        if conn.mid_stream and not conn.confirmed_mid_stream:
            # Mid-stream: only a decoded element (not a note or a gap) shows this is ZMTP.
            if not any(isinstance(e, _DECODED) for _, e in events):
                conn.held_mid.extend(events)
                return []
            conn.confirmed_mid_stream = True
            events = [*conn.held_mid, *events]
            conn.held_mid = []
        return events

    def _unreadable(self, conn: _Conn, closed: StreamClosed, output: _Output) -> list:
        """One `expert` per direction with payload of a connection nothing could be read of."""
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
            out.append(item if output.render is None else output.render(item))
        return out

    @staticmethod
    def _why_unreadable(conn: _Conn, d: str, seen: _Seen) -> str:
        if conn.info.zmtp is False:
            first = bytes(conn.sniff.get(d, b""))[:SNIFF_BYTES]
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

    def _emit(self, conn: _Conn, direction: str | None, events: list[Item], chunk: StreamData | None,
              output: _Output) -> list:
        """The output items of the events a dissector reported (`chunk`: the data they were read from)."""
        if not events:
            return []
        if self.curve_keys and not conn.zws:  # (CURVE boxes over ZWS are shown, not opened)
            events = self._with_decrypted(conn, events, self.curve_keys)
        events = self._release(conn, events)
        if not events:
            return []
        out: list = []
        render = output.render
        item = self._item
        for d, event in events:
            if isinstance(event, FrameRun):
                out.extend(output.run(conn, d, event, chunk))
            elif render is None:
                out.append(item(conn, d, event))
            else:
                out.append(render(item(conn, d, event)))
        self._forget(conn, direction)
        return out

    def _with_decrypted(self, conn: _Conn, events: list[Item], keys: Mapping[bytes, bytes]) -> list[Item]:
        out: list[Item] = []
        for d, event in events:
            out.append((d, event))
            if type(event) is Command:
                if conn.decryptor is None and event.name == "HELLO":
                    from ..engine.curve import CurveDecryptor  # (only a capture with CURVE loads the cryptography)

                    conn.decryptor = CurveDecryptor(keys.get)
                if conn.decryptor is not None:
                    out.extend(conn.decryptor.feed(d, event))
        return out

    def _run_dicts(self, conn: _Conn, d: str, run: FrameRun, chunk: StreamData | None) -> list[dict[str, Any]]:
        """A run as its events' dicts."""
        return [self._item(conn, d, e) for e in run.events()]

    def _run_json(self, conn: _Conn, d: str, run: FrameRun, chunk: StreamData | None) -> list[str]:
        """A run as JSON lines: a `JsonRun`'s heads joined with their source keys, in one piece."""
        if type(run) is not JsonRun:
            return [_json_line(item) for item in self._run_dicts(conn, d, run, chunk)]
        common, special = self._run_sources(conn, d, run, chunk)
        name = conn.info.conn
        shared = None if common is None else source_suffix(name, d, common[0], common[1])
        ends = {k: source_suffix(name, d, packets, ts) for k, packets, ts in special} if special else {}
        return [join_run(run.heads, shared, ends)]

    def _run_sourced(self, conn: _Conn, d: str, run: FrameRun, chunk: StreamData | None) -> list:
        """A plain `FrameRun` as one `SourcedRun`; any other run as dicts."""
        if type(run) is not FrameRun:
            return self._run_dicts(conn, d, run, chunk)
        n = len(run)
        common, special = self._run_sources(conn, d, run, chunk)
        packets: list[Any]
        stamps: list[Any]
        if common is not None:
            packets, stamps = [common[0]] * n, [common[1]] * n
        else:
            packets, stamps = [None] * n, [None] * n
        for k, found, ts in special:
            packets[k] = found
            stamps[k] = ts
        return [SourcedRun(conn.info.conn, d, run, packets, stamps)]

    def _run_sources(self, conn: _Conn, d: str, run: FrameRun, chunk: StreamData | None
                     ) -> tuple[tuple[list[int], float] | None, list[tuple[int, list[int], float]]]:
        """Where a run's events came from: (packets, ts) that events share, and (index, packets, ts) of the others.

        When the run was read from `chunk`'s own data, every event that starts in that data ends in
        it too, so they all share its packet and time; only the events that started before it
        are looked up. A run read apart from its data (held, then released) has every event looked up.
        """
        common: tuple[list[int], float] | None = None
        if (chunk is not None and chunk.dir == d and run.fresh == chunk.offset
                and run.end <= chunk.offset + len(chunk.data)):
            common = ([chunk.packet], chunk.ts)
            spans = run.spans(before=chunk.offset) if run.start < chunk.offset else []
        else:
            spans = run.spans()
        if not spans:
            return common, []
        lookup = conn.maps[d].lookup
        special = []
        for k, offset, length in spans:
            packets, ts = lookup(offset, length)
            special.append((k, packets, ts if ts is not None else conn.info.last_ts))
        return common, special


@dataclass(frozen=True, slots=True)
class _Output:
    """What `CaptureDissector._emit` makes of the events it releases: each event's dict goes through
    `render` (None: the dict itself), each run through `run` (a list of items)."""

    render: Callable[[dict[str, Any]], Any] | None
    run: Callable[[_Conn, str, FrameRun, StreamData | None], list]


def _json_line(item: dict[str, Any]) -> str:
    return orjson.dumps(item, option=orjson.OPT_APPEND_NEWLINE).decode()


# The elements whose decoding shows a mid-stream connection is ZMTP (not notes or gaps).
_DECODED = (Frame, Command, Message, FrameRun)


@dataclass
class DissectResult:
    """Where a dissection stopped, when the capture was damaged."""

    error: str | None = None
    connections: list[ConnectionInfo] = field(default_factory=list)


def dissect_capture(source: str | bytes | BinaryIO, *, with_fields: bool = True, max_body: int | None = None,
                    result: DissectResult | None = None, dissector: CaptureDissector | None = None,
                    curve_keys: Mapping[bytes, bytes] | None = None) -> Iterator[dict[str, Any]]:
    """Yields the ZMTP events of a capture file, in capture order.

    Raises `CaptureFormatError` at once for a file that is not a capture. A capture that
    is cut short yields what could be read; the error is then put in `result.error`
    (when a `result` is given) or raised after the last event. A `dissector` given (built with
    the same `with_fields` and `max_body`) lets the caller ask it about connections as they come.
    With `curve_keys` (a key log), the boxes of the CURVE connections it has keys of are opened.
    """
    packets = read_tcp_packets(source)
    dissector = dissector or CaptureDissector(with_fields=with_fields, max_body=max_body, curve_keys=curve_keys)
    for items in _dissect_packets(packets, dissector, dissector.feed, result):
        yield from items


def dissect_capture_jsonl(source: str | bytes | BinaryIO, *, with_fields: bool = True, max_body: int | None = None,
                          result: DissectResult | None = None,
                          curve_keys: Mapping[bytes, bytes] | None = None) -> Iterator[str]:
    """`dissect_capture()` as JSON lines: yields text pieces, each of zero or more whole lines.

    The lines are what `orjson.dumps` makes of `dissect_capture()`'s dicts, in the same order.
    """
    packets = read_tcp_packets(source)
    dissector = CaptureDissector(with_fields=with_fields, max_body=max_body, json=True, curve_keys=curve_keys)
    yield from _dissect_packets(packets, dissector, dissector.feed_json, result)


def dissect_capture_runs(source: str | bytes | BinaryIO, *, dissector: CaptureDissector | None = None,
                         result: DissectResult | None = None,
                         max_expanded: int | None = None) -> Iterator[dict[str, Any] | SourcedRun]:
    """`dissect_capture()` without fields, runs of ordinary frames as `SourcedRun`s (for a consumer that reads
    their octets itself); `dissector`, if given, must be built with `with_fields=False, runs=True`. A compressed
    capture that decompresses past `max_expanded` octets raises `capture.errors.ExpansionLimit` there."""
    packets = read_tcp_packets(source, max_expanded=max_expanded)
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
