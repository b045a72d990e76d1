"""TCP reassembly: turns captured segments into ordered byte streams per connection and direction.

Feed `TcpPacket`s (see `pcapfile`) to a `TcpReassembler` in capture order; it returns stream
events: `StreamOpened`, `StreamData` (always in order, each byte once), `StreamGap` (bytes the
capture never had), `StreamNote` (TCP-level facts about one segment, as Wireshark's expert flags
them), `StreamControl` (what each side did to the connection itself: a SYN/ACK, its first FIN, a
RST, its window reopened after a zero window) and `StreamClosed`. Call `finish()` at the end of the
capture.

Rules, in the order a segment meets them:

* Connections. Ids are "0", "1", ... in order of first appearance (like Wireshark's tcp.stream).
  The client is the SYN sender (the receiver of a SYN/ACK), else the first sender. A SYN on a
  port pair whose connection is closed, or whose direction already had a different ISN or already
  carried data without a SYN, or after `idle_timeout` seconds of silence, starts a new connection;
  a still-open predecessor is closed first with reason 'reused'. Other packets for a closed
  connection are swallowed until it has been idle for `idle_timeout` (then they open a new,
  mid-stream connection). A connection closes with 'fin' once both FINs are seen and every byte
  before them was delivered or reported as a gap; with 'rst' at a RST.
* Offsets. Offset 0 is the byte after the SYN, or the first payload byte seen when the SYN was
  not captured. Sequence numbers are unwrapped relative to the delivery point, so 32-bit wrap and
  streams longer than 4 GiB work.
* Duplicates and overlaps. Bytes before the delivery point are dropped (retransmissions,
  keep-alive and zero-window probes at seq-1). Overlapping out-of-order segments keep the bytes
  seen FIRST (the usual policy of reassemblers and of Linux/BSD stacks); a later segment only fills
  what is still uncovered. Bytes a frame carried but the capture cut off (snaplen) do not count
  as seen: a retransmission that holds them fills them in.
* Gaps. The rule: a byte the capture contains is never reported missing, and a byte it lacks is
  always reported missing, exactly (offset and length), within the bounds below. Captures are
  often written out of order (multi-queue NICs, `-i any`, merged files), so a segment may come
  after the ACK that covers it; a hole is therefore held open for `reorder_window` later packets
  (of the whole capture) after the evidence that its bytes exist, and a late segment fills it.
  A hole is a range not yet seen while later bytes of the same direction are buffered (or its
  FIN is known). It becomes a `StreamGap` when:
  1. the other side ACKed past the hole start (the receiver got those bytes) and
     `reorder_window` packets have passed since that ACK without bringing them. Every hole below
     the ACK is then given up, each gap running up to the ACK but never past the next buffered
     byte or the FIN; the rest of a hole may still be filled by a retransmission. (An ACK past
     the last byte seen, with nothing buffered and no FIN known, proves nothing: it may only
     cover an unseen FIN.)
  2. bytes a segment carried that the capture cut off (`TcpPacket.missing`, snaplen) were not
     brought by any of the next `reorder_window` packets: a gap of exactly that offset and
     length, reported when the stream reaches them;
  3. the bytes or segments buffered past holes exceed `max_buffer` / `max_segments` for one
     direction, or `max_total_buffer` for all connections: the first hole is given up at once
     (this and the window bound memory; they, and a segment written after its connection's RST,
     are the only ways a byte the capture holds can still be reported missing);
  4. the connection ends (RST, a reused port pair, or `finish()` at the end of the capture):
     every remaining hole is reported, up to the FIN when one was seen.
  A retransmission that arrives after its bytes were declared a gap is dropped like any other
  old data. `reorder_window=0` reports ACKed holes and snaplen cuts at once.
* Notes (`StreamNote`, as Wireshark's tcp.analysis flags them, checked in its order against the
  highest sequence number a direction has shown, its FIN included):
  'lost-segment' when a segment starts beyond it (the previous segment was not captured);
  'retransmission' when a segment with data (or a FIN) starts below it, or holds only bytes the
  peer's latest ACK covers, and brings no byte not seen before, 'out-of-order' when it does (a
  keep-alive, 0 or 1 byte at the highest - 1, is neither); 'zero-window' when a segment without
  SYN/FIN/RST advertises a zero window. SYN and RST segments get no notes; segments of a closed
  connection get notes and nothing else.
* Control (`StreamControl`, one per fact, in the order the segments show them): 'syn-ack' when the
  server accepts (the first SYN/ACK), 'fin' at each direction's first FIN, 'rst' at a RST of an open
  connection (its sender's direction), and 'window-open' when a direction that advertised a zero
  window advertises a non-zero one again (the window update: back-pressure ends there, or when the
  other side's data moves, whichever the capture shows first).
* Each `StreamData` names the frame that carried its bytes (`packet`, `ts`), so data released
  from the out-of-order buffer keeps its own frame; a gap names the frame that showed the bytes
  missing (the first ACK in the window that covered them, even when the connection's end reports
  them; the cut frame) or else the one whose arrival decided it (buffer limits, the close); close
  events name the frame whose arrival decided them.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = [
    "Segment",
    "StreamClosed",
    "StreamControl",
    "StreamData",
    "StreamEvent",
    "StreamGap",
    "StreamNote",
    "StreamOpened",
    "TcpReassembler",
    "reassemble",
]

Direction = Literal["c2s", "s2c"]
CloseReason = Literal["fin", "rst", "end-of-capture", "reused"]
NoteKind = Literal["retransmission", "out-of-order", "lost-segment", "zero-window"]
ControlKind = Literal["syn-ack", "fin", "rst", "window-open"]

_FIN, _SYN, _RST, _ACK = 0x01, 0x02, 0x04, 0x10
_MASK = 0xFFFFFFFF
_HALF = 1 << 31
_WRAP = 1 << 32


class Segment(Protocol):
    """What the reassembler reads from a packet (`pcapfile.TcpPacket` has all of it)."""

    number: int
    ts: float
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int
    window: int | None


@dataclass(frozen=True, slots=True)
class StreamOpened:
    """A new TCP connection: `client` connected to `server` (both (ip, port))."""

    conn: str
    client: tuple[str, int]
    server: tuple[str, int]
    syn_seen: bool  # the first packet was a SYN or SYN/ACK, so offsets count from the ISN
    ts: float
    packet: int


@dataclass(frozen=True, slots=True)
class StreamData:
    """In-order bytes of one direction, starting at `offset` of that direction's stream."""

    conn: str
    dir: Direction
    offset: int
    data: bytes
    packet: int  # the frame that carried these bytes
    ts: float  # that frame's timestamp


@dataclass(frozen=True, slots=True)
class StreamGap:
    """`length` bytes at `offset` that the capture does not contain."""

    conn: str
    dir: Direction
    offset: int
    length: int
    packet: int  # the frame whose arrival made the gap certain
    ts: float


@dataclass(frozen=True, slots=True)
class StreamNote:
    """A TCP-level fact about frame `packet` of one direction (see the module docstring): for a
    lost segment the `length` bytes at `offset` it shows missing, else the segment's own range."""

    conn: str
    dir: Direction
    what: NoteKind
    offset: int
    length: int
    packet: int
    ts: float


@dataclass(frozen=True, slots=True)
class StreamControl:
    """What one side did to the connection itself (see the module docstring), in frame `packet`."""

    conn: str
    dir: Direction  # the sender of the segment
    what: ControlKind
    ts: float
    packet: int


@dataclass(frozen=True, slots=True)
class StreamClosed:
    """The connection ended (both FINs, a RST, a reused port pair, or the capture's end)."""

    conn: str
    ts: float
    packet: int
    reason: CloseReason


StreamEvent = StreamOpened | StreamData | StreamGap | StreamNote | StreamControl | StreamClosed


def _first(entry: list) -> int:
    return entry[0]


class _Conn:
    __slots__ = ("c2s", "closed", "id", "keys", "last_packet", "last_ts", "s2c")

    def __init__(self, cid: str, keys: tuple[tuple, tuple], ts: float, packet: int) -> None:
        self.id = cid
        self.keys = keys
        self.closed = False
        self.last_ts = ts
        self.last_packet = packet
        self.c2s = _Half(self, "c2s")
        self.s2c = _Half(self, "s2c")
        self.c2s.peer = self.s2c
        self.s2c.peer = self.c2s


class _Half:
    """One direction of a connection."""

    __slots__ = ("acked", "base", "conn", "dir", "fin", "high", "isn", "last_ack", "next", "peer", "pending",
                 "pending_bytes", "proofs", "zero")

    def __init__(self, conn: _Conn, direction: Direction) -> None:
        self.conn = conn
        self.dir: Direction = direction
        self.peer: _Half = self
        self.base: int | None = None  # raw sequence number of offset 0
        self.isn: int | None = None  # raw ISN when the SYN was seen
        self.next = 0  # next offset to deliver
        self.fin: int | None = None  # offset of the FIN, once seen
        # Out-of-order entries [start, end, bytes | None, packet, ts, due]; None marks bytes a frame
        # carried but the capture cut off (snaplen), which later bytes may still fill until `due`
        # (a packet count). Sorted by start, non-overlapping; packet/ts are those of the carrying frame.
        self.pending: list[list] = []
        self.pending_bytes = 0
        self.acked = 0  # the highest offset an ACK proved received, once it covered a hole
        self.proofs: deque[tuple[int, int, float]] = deque()  # (upto, packet, ts) of ACKs still in the window
        # The highest sequence offset shown (a FIN counts one), for notes; with no hole or FIN it
        # may lag `next`, which the fast path moves alone.
        self.high: int | None = None
        self.last_ack: int | None = None  # the raw ack of this direction's latest ACK
        self.zero = False  # this direction advertised a zero window, not reopened since

    def offset(self, seq: int) -> int:
        """Unwrap a raw sequence number into a stream offset near the delivery point."""
        base = self.base
        assert base is not None, "a stream offset asked for before the direction's first sequence number"
        d = (seq - base - self.next) & _MASK
        if d >= _HALF:
            d -= _WRAP
        return self.next + d


class TcpReassembler:
    """Reassembles TCP connections from segments fed in capture order (see the module docstring).

    `max_buffer` / `max_segments` bound one direction's out-of-order buffer, `max_total_buffer`
    all of them together; `reorder_window` is how many later packets (of the whole capture) may
    still bring bytes an ACK or a snaplen cut showed missing before they are reported as a gap
    (0: at once); `idle_timeout` (seconds of capture time) decides when a quiet port pair counts
    as a new connection and when closed connections are forgotten.
    """

    def __init__(self, *, max_buffer: int = 4 << 20, max_segments: int = 4096,
                 max_total_buffer: int = 64 << 20, reorder_window: int = 1024,
                 idle_timeout: float = 120.0) -> None:
        if reorder_window < 0:
            raise ValueError(f"reorder_window must be >= 0, not {reorder_window}")
        self.max_buffer = max_buffer
        self.max_segments = max_segments
        self.max_total_buffer = max_total_buffer
        self.reorder_window = reorder_window
        self.idle_timeout = idle_timeout
        self._flows: dict[tuple, _Half] = {}  # (src, sport, dst, dport) -> the sending half
        self._conns: dict[str, _Conn] = {}  # connections still in the table, by id
        self._next_id = 0
        self._total_pending = 0
        self._fed = 0
        self._count = 0  # every packet fed, the clock of `reorder_window`
        # Holes waiting for late bytes, oldest first: (due, half, upto | None, packet, ts). At
        # `due` the holes below `upto` are given up (None: a snaplen cut is reported when reached).
        self._waiting: deque[tuple[int, _Half, int | None, int, float]] = deque()

    # ------------------------------------------------------------------ public API

    def conn_of(self, pkt: Segment) -> str | None:
        """The id of the connection `pkt`'s direction belongs to now (None: no connection in the table)."""
        half = self._flows.get((pkt.src, pkt.sport, pkt.dst, pkt.dport))
        return half.conn.id if half is not None else None

    def feed(self, pkt: Segment) -> list[StreamEvent]:
        """Take one captured segment; return the stream events it causes (often one StreamData)."""
        self._count += 1
        key = (pkt.src, pkt.sport, pkt.dst, pkt.dport)
        half = self._flows.get(key)
        flags = pkt.flags
        out: list[StreamEvent] = []
        if self._waiting and self._waiting[0][0] < self._count:
            self._expire(out)
        # Fast path: an established direction, no SYN/FIN/RST, exactly where expected and not yet
        # ACKed by the peer (in-order data, or a pure ACK).
        elif (half is not None and not flags & 0x07 and half.base is not None and not pkt.missing
                and not half.pending and half.fin is None and not half.conn.closed
                and not half.peer.pending and half.peer.fin is None and pkt.window != 0 and not half.zero
                and half.high <= half.next and ((pkt.seq - half.base) & _MASK) == (half.next & _MASK)):
            payload = pkt.payload
            acked = half.peer.last_ack
            if not payload or acked is None or ((acked - pkt.seq - len(payload)) & _MASK) >= _HALF:
                conn = half.conn
                conn.last_ts = pkt.ts
                conn.last_packet = pkt.number
                if flags & _ACK:
                    half.last_ack = pkt.ack
                if not payload:
                    return out
                off = half.next
                half.next = off + len(payload)
                return [StreamData(conn.id, half.dir, off, payload, pkt.number, pkt.ts)]
        self._slow(pkt, key, half, out)
        self._fed += 1
        if self._fed & 0xFFF == 0:
            self._sweep(pkt.ts)
        return out

    def finish(self) -> list[StreamEvent]:
        """End of capture: report remaining holes as gaps and close every open connection."""
        out: list[StreamEvent] = []
        for conn in list(self._conns.values()):
            if not conn.closed:
                both_fin = conn.c2s.fin is not None and conn.s2c.fin is not None
                self._close(conn, "fin" if both_fin else "end-of-capture", conn.last_ts, conn.last_packet, out)
        self._conns.clear()
        self._flows.clear()
        self._waiting.clear()
        return out

    # ------------------------------------------------------------------ connections

    def _slow(self, pkt: Segment, key: tuple, half: _Half | None, out: list[StreamEvent]) -> None:
        flags = pkt.flags
        syn = flags & _SYN
        if half is not None:
            conn = half.conn
            idle = pkt.ts - conn.last_ts > self.idle_timeout
            if conn.closed:
                if not (syn or idle):
                    # Trailing ACKs, retransmissions after the close, data after a RST: notes only.
                    if half.base is not None and not flags & _RST:
                        self._note(half, half.offset(pkt.seq), len(pkt.payload) + pkt.missing, pkt, out)
                        if flags & _ACK:
                            half.last_ack = pkt.ack
                    return
                half = None
            elif syn and (idle or (half.isn is not None and pkt.seq != half.isn)
                          or (half.isn is None and half.base is not None)):
                self._close(conn, "reused", pkt.ts, pkt.number, out)
                half = None
        if half is None:
            half = self._open(pkt, key, out)
        self._segment(half, pkt, out)

    def _open(self, pkt: Segment, key: tuple, out: list[StreamEvent]) -> _Half:
        cid = str(self._next_id)
        self._next_id += 1
        rkey = (pkt.dst, pkt.dport, pkt.src, pkt.sport)
        # A SYN/ACK comes from the server: its receiver is the client.
        server_first = (pkt.flags & (_SYN | _ACK)) == (_SYN | _ACK)
        conn = _Conn(cid, (key, rkey), pkt.ts, pkt.number)
        self._conns[cid] = conn
        mine, theirs = (conn.s2c, conn.c2s) if server_first else (conn.c2s, conn.s2c)
        self._flows[key] = mine
        self._flows[rkey] = theirs
        sender, receiver = (pkt.src, pkt.sport), (pkt.dst, pkt.dport)
        client, server = (receiver, sender) if server_first else (sender, receiver)
        out.append(StreamOpened(cid, client, server, bool(pkt.flags & _SYN), pkt.ts, pkt.number))
        return mine

    def _sweep(self, now: float) -> None:
        """Forget closed connections idle for `idle_timeout`, so the table does not grow forever."""
        stale = [c for c in self._conns.values() if c.closed and now - c.last_ts > self.idle_timeout]
        for conn in stale:
            del self._conns[conn.id]
            for k in conn.keys:
                h = self._flows.get(k)
                if h is not None and h.conn is conn:  # the pair may already belong to a newer connection
                    del self._flows[k]

    # ------------------------------------------------------------------ segments

    def _segment(self, half: _Half, pkt: Segment, out: list[StreamEvent]) -> None:
        conn = half.conn
        conn.last_ts = pkt.ts
        conn.last_packet = pkt.number
        flags = pkt.flags
        if flags & _RST:
            out.append(StreamControl(conn.id, half.dir, "rst", pkt.ts, pkt.number))
            self._close(conn, "rst", pkt.ts, pkt.number, out)
            return
        if half.zero and pkt.window:
            half.zero = False
            out.append(StreamControl(conn.id, half.dir, "window-open", pkt.ts, pkt.number))
        seq = pkt.seq
        if flags & _SYN:
            if flags & _ACK and half.isn is None:
                out.append(StreamControl(conn.id, half.dir, "syn-ack", pkt.ts, pkt.number))
            if half.base is None:
                half.isn = seq
                half.base = (seq + 1) & _MASK
                half.high = 0
            seq = (seq + 1) & _MASK  # data on a SYN (TCP Fast Open) starts after it
        payload = pkt.payload
        missing = pkt.missing
        if half.base is None:
            if payload or missing or flags & _FIN:
                half.base = seq
            else:  # a pure ACK cannot place offset 0 (it may be a keep-alive at seq-1)
                if pkt.window == 0 and not flags & _FIN:
                    half.zero = True
                    out.append(StreamNote(conn.id, half.dir, "zero-window", 0, 0, pkt.number, pkt.ts))
                if flags & _ACK:
                    half.last_ack = pkt.ack
                    self._acked(half.peer, pkt.ack, pkt, out)
                return
        off = half.offset(seq)
        if not flags & _SYN:
            self._note(half, off, len(payload) + missing, pkt, out)
        if flags & _ACK:
            half.last_ack = pkt.ack
        if payload or missing or flags & _FIN:
            if payload or missing:
                self._data(half, off, payload, missing, pkt, out)
            if flags & _FIN and half.fin is None:
                out.append(StreamControl(conn.id, half.dir, "fin", pkt.ts, pkt.number))
                self._set_fin(half, off + len(payload) + missing)
        if flags & _ACK:
            self._acked(half.peer, pkt.ack, pkt, out)
        self._maybe_closed(conn, pkt.number, pkt.ts, out)

    def _note(self, half: _Half, off: int, size: int, pkt: Segment, out: list[StreamEvent]) -> None:
        """The notes a (non-SYN) segment of `size` sequence bytes at `off` deserves, in tshark's order."""
        fin = pkt.flags & _FIN
        conn = half.conn
        if pkt.window == 0 and not fin:
            half.zero = True
            out.append(StreamNote(conn.id, half.dir, "zero-window", off, size, pkt.number, pkt.ts))
        high = half.high
        if high is not None:
            high = max(high, half.next)
            if off > high:
                out.append(StreamNote(conn.id, half.dir, "lost-segment", high, off - high, pkt.number, pkt.ts))
            if (size or fin) and not (size <= 1 and not fin and off == high - 1):  # not a keep-alive
                acked = half.peer.last_ack
                # Data the peer has ACKed already (a spurious retransmission to tshark; the late
                # segment of a capture written out of order too), or starting below the highest byte.
                if ((size and acked is not None and off + size <= half.offset(acked))
                        or (off < high and not (size > 1 and off == high - 1))):
                    what = "out-of-order" if self._brings_new(half, off, off + size) else "retransmission"
                    out.append(StreamNote(conn.id, half.dir, what, off, size, pkt.number, pkt.ts))
        end = off + size + (1 if fin else 0)
        if high is None or end > high:
            half.high = end

    @staticmethod
    def _brings_new(half: _Half, start: int, end: int) -> bool:
        """Whether [start, end) holds a byte neither delivered nor buffered yet."""
        cur = max(start, half.next)
        pend = half.pending
        for i in range(max(bisect_right(pend, cur, key=_first) - 1, 0), len(pend)):
            if cur >= end:
                return False
            s, e = pend[i][0], pend[i][1]
            if e <= cur:
                continue
            if s > cur:
                return True
            cur = e
        return cur < end

    def _set_fin(self, half: _Half, fin: int) -> None:
        half.fin = fin
        # Nothing exists after a FIN: drop anything buffered beyond it.
        kept = []
        for entry in half.pending:
            start, end, data = entry[0], entry[1], entry[2]
            if start >= fin:
                self._forget(half, data, end - start)
                continue
            if end > fin:
                if data is not None:
                    self._forget(half, data, end - fin)
                    entry[2] = data[: fin - start]
                entry[1] = fin
            kept.append(entry)
        half.pending = kept

    def _forget(self, half: _Half, data: bytes | None, nbytes: int) -> None:
        if data is not None:
            half.pending_bytes -= nbytes
            self._total_pending -= nbytes

    def _data(self, half: _Half, off: int, payload: bytes, missing: int, pkt: Segment,
              out: list[StreamEvent]) -> None:
        """Place payload (and `missing` uncaptured bytes after it) at `off`; deliver what is in order."""
        end = off + len(payload)
        gend = end + missing
        if half.fin is not None and gend > half.fin:  # nothing can follow the FIN
            gend = half.fin
            if end > gend:
                payload = payload[: max(0, gend - off)]
                end = gend
        nxt = half.next
        if gend <= nxt:
            return  # a retransmission, duplicate or keep-alive probe
        if off < nxt:  # partly old: keep only what is new
            cut = nxt - off
            payload = payload[cut:] if cut < len(payload) else b""
            off = nxt
            end = max(end, nxt)
        if off == nxt and payload and not (half.pending and half.pending[0][0] < end):
            out.append(StreamData(half.conn.id, half.dir, off, payload, pkt.number, pkt.ts))
            half.next = end
        elif payload:
            self._insert(half, off, end, payload, pkt)
        if gend > end:
            # A snaplen cut: the bytes exist, and a retransmission later in the capture may hold them.
            due = self._count + self.reorder_window
            self._insert(half, end, gend, None, pkt, due)
            if self.reorder_window:
                self._waiting.append((due, half, None, pkt.number, pkt.ts))
        self._drain(half, pkt.number, pkt.ts, out)
        self._enforce_limits(half, pkt, out)

    def _insert(self, half: _Half, start: int, end: int, data: bytes | None, pkt: Segment, due: int = 0) -> None:
        """Buffer [start, end) beyond the delivery point, keeping bytes already buffered (first seen).

        Real bytes replace bytes buffered as cut off by snaplen: the capture holds them after all.
        """
        pend = half.pending
        if data is not None:
            self._uncover(pend, start, end)
        pieces = []
        cur = start
        for i in range(max(bisect_right(pend, start, key=_first) - 1, 0), len(pend)):
            s, e = pend[i][0], pend[i][1]
            if e <= cur:
                continue
            if s >= end:
                break
            if s > cur:
                pieces.append((cur, s))
            cur = max(cur, e)
            if cur >= end:
                break
        if cur < end:
            pieces.append((cur, end))
        for a, b in pieces:
            if data is None:
                insort(pend, [a, b, None, pkt.number, pkt.ts, due], key=_first)
            else:
                insort(pend, [a, b, data[a - start:b - start], pkt.number, pkt.ts, 0], key=_first)
                half.pending_bytes += b - a
                self._total_pending += b - a

    @staticmethod
    def _uncover(pend: list[list], start: int, end: int) -> None:
        """Cut [start, end) out of the snaplen entries (data None) of `pend`."""
        i = max(bisect_right(pend, start, key=_first) - 1, 0)
        while i < len(pend) and pend[i][0] < end:
            entry = pend[i]
            s, e = entry[0], entry[1]
            if entry[2] is not None or e <= start:
                i += 1
                continue
            parts = []
            if s < start:
                parts.append([s, start, None, *entry[3:]])
            if e > end:
                parts.append([end, e, None, *entry[3:]])
            pend[i:i + 1] = parts
            i += len(parts)

    def _drain(self, half: _Half, packet: int, ts: float, out: list[StreamEvent], *, force: bool = False) -> None:
        """Deliver buffered entries that now start at the delivery point (data keeps its carrier frame).

        A snaplen cut is reported once its `due` has passed (or with `force`); until then it waits.
        """
        pend = half.pending
        done = 0
        for start, end, data, carrier, carrier_ts, due in pend:
            if start > half.next:
                break
            if data is None and end > half.next and due > self._count and not force:
                break
            done += 1
            self._forget(half, data, end - start)
            if end <= half.next:
                continue
            if start < half.next:
                if data is not None:
                    data = data[half.next - start:]
                start = half.next
            if data is None:
                # A snaplen cut no later packet filled: missing, as its own frame showed.
                self._gap(half, start, end - start, carrier, carrier_ts, out)
            else:
                out.append(StreamData(half.conn.id, half.dir, start, data, carrier, carrier_ts))
            half.next = end
        if done:
            del pend[:done]

    def _gap(self, half: _Half, offset: int, length: int, packet: int, ts: float,
             out: list[StreamEvent]) -> None:
        """Report missing bytes, merging with a gap reported just before for the same bytes' neighbour."""
        if length <= 0:
            return
        last = out[-1] if out else None
        if (isinstance(last, StreamGap) and last.conn == half.conn.id and last.dir == half.dir
                and last.offset + last.length == offset):
            out[-1] = StreamGap(last.conn, last.dir, last.offset, last.length + length, packet, ts)
        else:
            out.append(StreamGap(half.conn.id, half.dir, offset, length, packet, ts))

    def _skip_hole(self, half: _Half, upto: int, packet: int, ts: float, out: list[StreamEvent]) -> None:
        """Declare [next, upto) missing and move the delivery point there."""
        if upto > half.next:
            self._gap(half, half.next, upto - half.next, packet, ts, out)
            half.next = upto

    def _enforce_limits(self, half: _Half, pkt: Segment, out: list[StreamEvent]) -> None:
        while half.pending and (half.pending_bytes > self.max_buffer or len(half.pending) > self.max_segments):
            self._skip_hole(half, half.pending[0][0], pkt.number, pkt.ts, out)
            self._drain(half, pkt.number, pkt.ts, out, force=True)
        while self._total_pending > self.max_total_buffer:
            fattest = max((h for c in self._conns.values() for h in (c.c2s, c.s2c)),
                          key=lambda h: h.pending_bytes)
            if not fattest.pending:
                break
            self._skip_hole(fattest, fattest.pending[0][0], pkt.number, pkt.ts, out)
            self._drain(fattest, pkt.number, pkt.ts, out, force=True)
            self._maybe_closed(fattest.conn, pkt.number, pkt.ts, out)

    def _acked(self, half: _Half, ack: int, pkt: Segment, out: list[StreamEvent]) -> None:
        """The peer acknowledged `half`'s bytes up to raw `ack`: holes below that are capture loss,
        unless one of the next `reorder_window` packets brings them (a capture written out of order)."""
        if half.base is None or not (half.pending or half.fin is not None):
            return
        upto = half.offset(ack)
        if upto <= half.next or upto <= half.acked:
            return
        half.acked = upto
        if self.reorder_window:
            self._waiting.append((self._count + self.reorder_window, half, upto, pkt.number, pkt.ts))
            half.proofs.append((upto, pkt.number, pkt.ts))
        else:
            self._give_up(half, upto, pkt.number, pkt.ts, out)

    def _give_up(self, half: _Half, upto: int, packet: int, ts: float, out: list[StreamEvent]) -> None:
        """Report the holes below `upto` as gaps; a gap never runs past a buffered byte or the FIN."""
        while half.next < upto:
            if half.pending:
                limit = half.pending[0][0]
            elif half.fin is not None:
                limit = half.fin
            else:
                break  # nothing seen beyond: the ACK may only cover an unseen FIN
            if half.fin is not None:
                limit = min(limit, half.fin)
            before = half.next
            self._skip_hole(half, min(upto, limit), packet, ts, out)
            self._drain(half, packet, ts, out)
            if half.next == before:
                break  # a snaplen cut still waiting for its bytes

    def _expire(self, out: list[StreamEvent]) -> None:
        """Give up the holes whose window of late packets has passed."""
        waiting, count = self._waiting, self._count
        while waiting and waiting[0][0] < count:
            _due, half, upto, packet, ts = waiting.popleft()
            if upto is not None:
                half.proofs.popleft()
            if half.conn.closed:
                continue
            if upto is None:
                self._drain(half, packet, ts, out)
            else:
                self._give_up(half, upto, packet, ts, out)
            self._maybe_closed(half.conn, packet, ts, out)

    # ------------------------------------------------------------------ closing

    def _maybe_closed(self, conn: _Conn, packet: int, ts: float, out: list[StreamEvent]) -> None:
        c2s, s2c = conn.c2s, conn.s2c
        if (not conn.closed and c2s.fin is not None and s2c.fin is not None
                and c2s.next >= c2s.fin and s2c.next >= s2c.fin):
            conn.closed = True
            out.append(StreamClosed(conn.id, ts, packet, "fin"))

    @staticmethod
    def _proof(half: _Half, start: int, packet: int, ts: float) -> tuple[int, float]:
        """The frame a hole at `start` is named after when the connection ends: the first ACK in the
        window that covers it (as its expiry would have named it), else the closing frame."""
        for upto, p, t in half.proofs:
            if upto > start:
                return p, t
        return packet, ts

    def _close(self, conn: _Conn, reason: CloseReason, ts: float, packet: int, out: list[StreamEvent]) -> None:
        """Flush both directions (holes become gaps) and report the connection closed."""
        for half in (conn.c2s, conn.s2c):
            for start, end, data, carrier, carrier_ts, _due in half.pending:
                self._forget(half, data, end - start)
                if end <= half.next:
                    continue
                if start > half.next:
                    self._skip_hole(half, start, *self._proof(half, half.next, packet, ts), out)
                if start < half.next and data is not None:
                    data = data[half.next - start:]
                    start = half.next
                if data is None:
                    self._skip_hole(half, end, carrier, carrier_ts, out)
                else:
                    out.append(StreamData(conn.id, half.dir, start, data, carrier, carrier_ts))
                    half.next = end
            half.pending = []
            if half.fin is not None:
                self._skip_hole(half, half.fin, *self._proof(half, half.next, packet, ts), out)
        conn.closed = True
        out.append(StreamClosed(conn.id, ts, packet, reason))


def reassemble(packets: Iterable[Segment], reassembler: TcpReassembler | None = None) -> Iterator[StreamEvent]:
    """Feed `packets` to a reassembler (a default one if None) and yield every event, finish() included."""
    r = TcpReassembler() if reassembler is None else reassembler
    feed = r.feed
    for pkt in packets:
        yield from feed(pkt)
    yield from r.finish()
