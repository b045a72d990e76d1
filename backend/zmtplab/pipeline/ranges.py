"""Reading a pcap/pcapng capture in byte ranges, so one large file can be spread over many tasks.

`capture.pcapfile` reads a capture from its first byte to its last. This module cuts a file into
ranges that start and end at packet boundaries and reads each range on its own, with the same
frame numbers, timestamps, link types and error checks a sequential read would give: both drive
the one record and block walker, `capture.pcapwalk.Walker`.

* `probe(path)` reads a file's header on the driver: format, byte order, link type, and (pcapng)
  the interface table of the header blocks, the `Section` every range needs.
* `scan_range(...)` parses one range structurally (no protocol decoding): where its first packet
  boundary is, how many frames it holds, which byte it ends on, the interface state after it,
  and the first error, if any. Ranges are scanned in parallel, each *assuming* the file's header
  state and a heuristically found start; `chain_scans` then walks them in order on the driver,
  checks every assumption against the previous range's authoritative result, and rescans the
  (rare) ranges where an assumption failed. The outcome is exactly what a sequential read sees.
* `read_range(...)` yields the `TcpPacket`s of one planned range.

Boundaries: a pcapng block carries its length at both ends, so a candidate block start is checked
for a known type, a sane length and an equal trailing length, and so are the two blocks after it.
A classic pcap record header has no marker: a candidate is checked for a plausible timestamp,
captured <= original length and a sane size, and so are the next three headers. A wrong guess
is harmless: the chain check notices it and rescans that range from the right offset.

Gzip-compressed files cannot be entered in the middle; they are always one range, read by
`capture.pcapfile.CaptureReader`.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from ..capture.errors import CaptureFormatError
from ..capture.pcapfile import CaptureReader, ReaderStats, TcpPacket, decode_tcp, payload_start
from ..capture.pcapwalk import (
    CHUNK,
    EPB,
    IDB,
    MAX_RECORD,
    PB,
    SHB,
    SPB,
    PcapFormat,
    Section,
    Walker,
    WalkError,
    Window,
    pcap_format,
    section_order,
)

__all__ = [
    "FileHeader",
    "PlannedRange",
    "RangeScan",
    "chain_scans",
    "nominal_ranges",
    "probe",
    "read_range",
    "read_range_located",
    "scan_range",
]


# Block types a heuristic boundary may start with (the standard and experimental ones in use).
_KNOWN_BLOCKS = frozenset({SHB, IDB, PB, SPB, 4, 5, EPB, 7, 8, 9, 0x0A, 0x0B, 0xBAD, 0x40000BAD})
_U32LE = struct.Struct("<I")


@dataclass(frozen=True, slots=True)
class FileHeader:
    """A capture file as the driver sees it before reading packets."""

    path: str
    size: int
    format: str  # 'pcap' or 'pcapng'
    compressed: bool = False
    # classic pcap
    pcap: PcapFormat | None = None
    first_sec: int | None = None  # the first record's seconds, to judge candidate headers
    # pcapng
    data_start: int = 0  # first byte after the leading header blocks (SHB, IDBs, ...)
    header_state: Section = field(default_factory=Section)  # the byte order and interfaces there

    @property
    def splittable(self) -> bool:
        return not self.compressed


@dataclass(slots=True)
class RangeScan:
    """The structural result of scanning one range."""

    index: int
    nominal_start: int
    nominal_end: int
    start: int | None  # the first packet boundary at or after nominal_start (None: none in the range)
    end: int  # the first boundary at or after nominal_end reached by parsing (or where parsing stopped)
    frames: int = 0
    state_in: Section | None = None  # the state this scan assumed at `start`
    state_out: Section | None = None
    last_ts: float | None = None  # timestamp of the range's last timestamped packet (for SPBs after it)
    error: WalkError | None = None
    exact: bool = False  # start and state_in are known to be right (not guessed)


@dataclass(frozen=True, slots=True)
class PlannedRange:
    """One range to read: exact start and stop boundaries and everything needed to decode it."""

    cap: int  # index of the capture in the plan
    index: int
    start: int
    stop: int
    first_frame: int  # number of the range's first frame (1-based, counting all frames)
    state: Section
    last_ts: float  # the timestamp an SPB before any timestamped packet of the range takes
    frames: int
    header: FileHeader = field(repr=False)


# --------------------------------------------------------------------------- file header


def probe(path: str) -> FileHeader:
    """Reads the header of a capture file; raises `CaptureFormatError` when it is not one (the
    sequential reader judges it, so the error is the one a sequential read raises)."""
    size = os.path.getsize(path)
    with CaptureReader(path) as reader:
        fmt, compressed = reader.format, reader.compressed
    if compressed:
        return FileHeader(path, size, fmt, compressed=True)
    with open(path, "rb", buffering=0) as f:
        if fmt == "pcap":
            head = f.read(28)
            pcap = pcap_format(head)
            first_sec = struct.unpack_from(pcap.order + "I", head, 24)[0] if len(head) >= 28 else None
            return FileHeader(path, size, fmt, pcap=pcap, first_sec=first_sec, data_start=24)
        # pcapng: walk the leading non-packet blocks to learn the interfaces every range starts with.
        walker = Walker(Window(f), 0, headers_only=True).skip()
    return FileHeader(path, size, fmt, data_start=walker.pos, header_state=walker.section)


# --------------------------------------------------------------------------- planning helpers


def nominal_ranges(header: FileHeader, split_size: int) -> list[tuple[int, int]]:
    """Cuts a file into byte ranges of about `split_size` (the first starts after the file header)."""
    start = 0 if header.format == "pcapng" else 24  # a pcapng range 0 reads the header blocks itself
    if header.compressed or header.size - start <= split_size:
        return [(start, header.size if not header.compressed else 1 << 62)]
    out = []
    pos = start
    while pos < header.size:
        end = min(pos + split_size, header.size)
        if header.size - end < split_size // 4:  # no tiny last range
            end = header.size
        out.append((pos, end))
        pos = end
    return out


# --------------------------------------------------------------------------- boundary heuristics


def _pcap_record_ok(buf: Window, pos: int, h: FileHeader, rec: struct.Struct, ref_sec: int | None) -> tuple[bool, int]:
    """Whether a plausible record header sits at `pos`; (ok, position of the next header)."""
    fmt = h.pcap
    assert fmt is not None
    if not buf.fill(pos, fmt.rec_len):
        return False, 0
    sec, frac, incl, orig = rec.unpack_from(buf.data, pos - buf.base)
    limit = fmt.snaplen if 0 < fmt.snaplen <= MAX_RECORD else 262144
    if frac >= fmt.div or incl > max(limit, 262144) or orig < incl or orig > MAX_RECORD:
        return False, 0
    if ref_sec is not None and abs(sec - ref_sec) > 366 * 86400:
        return False, 0
    return True, pos + fmt.rec_len + incl


def _pcap_candidate(buf: Window, pos: int, h: FileHeader, rec: struct.Struct) -> bool:
    ok, nxt = _pcap_record_ok(buf, pos, h, rec, h.first_sec)
    if not ok:
        return False
    sec = rec.unpack_from(buf.data, pos - buf.base)[0]
    for _ in range(3):
        if nxt == h.size:
            return True
        if nxt > h.size:
            return False
        ok, nxt2 = _pcap_record_ok(buf, nxt, h, rec, sec)
        if not ok:
            return False
        nxt = nxt2
    return True


def _pcapng_block_ok(buf: Window, pos: int, order: str) -> int:
    """Length of a plausible block at `pos`, else 0."""
    if not buf.fill(pos, 12):
        return 0
    o = pos - buf.base
    btype = _U32LE.unpack_from(buf.data, o)[0]
    if btype == SHB:
        declared = section_order(buf.data, o)
        if declared is None:
            return 0
        order = declared
    else:
        btype = struct.unpack_from(order + "I", buf.data, o)[0]
    if btype not in _KNOWN_BLOCKS:
        return 0
    blen = struct.unpack_from(order + "I", buf.data, o + 4)[0]
    if blen < 12 or blen & 3 or blen > MAX_RECORD or not buf.fill(pos, blen):
        return 0
    o = pos - buf.base
    if struct.unpack_from(order + "I", buf.data, o + blen - 4)[0] != blen:
        return 0
    if btype in (EPB, PB):
        if blen < 32:
            return 0
        if_id = struct.unpack_from(order + ("I" if btype == EPB else "H"), buf.data, o + 8)[0]
        caplen = struct.unpack_from(order + "I", buf.data, o + 20)[0]
        if if_id > 0xFFFF or caplen > blen - 32:
            return 0
    return blen


def _pcapng_candidate(buf: Window, pos: int, size: int, order: str) -> bool:
    for _ in range(3):
        if pos == size:
            return True
        blen = _pcapng_block_ok(buf, pos, order)
        if not blen:
            return False
        pos += blen
    return True


def find_boundary(buf: Window, h: FileHeader, start: int, end: int, order: str) -> int | None:
    """The first offset in [start, end) where a packet boundary plausibly starts."""
    if h.format == "pcapng":
        pos = (start + 3) & ~3
        step = 4
        while pos < end:
            if _pcapng_candidate(buf, pos, h.size, order):
                return pos
            pos += step
        return None
    assert h.pcap is not None
    rec = struct.Struct(h.pcap.order + "IIII")
    pos = start
    while pos < end:
        if _pcap_candidate(buf, pos, h, rec):
            return pos
        pos += 1
    return None


# --------------------------------------------------------------------------- scanning


def _initial_state(h: FileHeader, start: int) -> Section:
    return Section() if start == 0 else h.header_state


def scan_range(h: FileHeader, index: int, nominal_start: int, nominal_end: int, *,
               start: int | None = None, state: Section | None = None) -> RangeScan:
    """Scans one range. Without `start`, the first boundary is found heuristically (unless the range
    begins the file's packet data) and the header state is assumed; with it, both are taken as exact."""
    if h.compressed:
        return _scan_compressed(h, index)
    exact = start is not None
    with open(h.path, "rb", buffering=0) as f:
        buf = Window(f, 0, chunk=min(CHUNK, max(1 << 16, nominal_end - nominal_start + (1 << 16))), bounded=False)
        first = nominal_start == (0 if h.format == "pcapng" else 24)
        if start is None:
            if first:
                start, exact = nominal_start, True
            else:
                order = h.pcap.order if h.pcap is not None else h.header_state.order
                start = find_boundary(buf, h, nominal_start, nominal_end, order)
        if state is None:
            state = _initial_state(h, start if start is not None else nominal_start)
        scan = RangeScan(index, nominal_start, nominal_end, start, nominal_end, state_in=state, exact=exact)
        if start is None or start >= nominal_end:
            scan.start = None
            scan.end = start if start is not None else nominal_end
            scan.state_out = state
            return scan
        walker = Walker(buf, start, pcap=h.pcap, section=state, stop=nominal_end).skip()
        scan.frames, scan.end, scan.error = walker.frames, walker.pos, walker.error
        scan.state_out = walker.section
        scan.last_ts = walker.last_ts
        return scan


def _scan_compressed(h: FileHeader, index: int) -> RangeScan:
    """A gzip capture: one range, read sequentially by pcapfile (frames counted, first error kept)."""
    scan = RangeScan(index, 0, 1 << 62, 0, 1 << 62, state_in=Section(), state_out=Section(), exact=True)
    reader = CaptureReader(h.path)
    frames = 0
    try:
        for _frame in reader.frames():
            frames += 1
    except CaptureFormatError as exc:
        kind = "truncated" if type(exc).__name__ == "TruncatedCaptureError" else "corrupt"
        scan.error = WalkError(kind, str(exc), exc.offset or 0, frames)
    finally:
        reader.close()
    scan.frames = frames
    return scan


def chain_scans(h: FileHeader, scans: list[RangeScan]) -> tuple[list[PlannedRange], WalkError | None, int]:
    """Checks the scans of one file in order, rescanning where a guess was wrong.

    Returns the planned ranges (only non-empty ones), the file's first error (frame counts made
    global: `frames` is then the number of frames read before it) and how many ranges were rescanned.
    """
    planned: list[PlannedRange] = []
    rescans = 0
    frame_base = 0
    prev_end: int | None = None
    prev_state = Section()
    last_ts = 0.0
    for scan in sorted(scans, key=lambda s: s.nominal_start):
        if h.compressed:
            planned.append(PlannedRange(-1, scan.index, 0, 1 << 62, 1, Section(), 0.0, scan.frames, h))
            err = scan.error
            return planned, (replace(err, frames=scan.frames) if err else None), 0
        if prev_end is not None:
            if prev_end >= scan.nominal_end:
                # The previous range ran over this one completely: it is empty.
                continue
            expected_state = prev_state if h.format == "pcapng" else Section()
            ok = (scan.start == prev_end and (h.format == "pcap" or scan.state_in == expected_state))
            if not ok:
                rescans += 1
                scan = scan_range(h, scan.index, scan.nominal_start, scan.nominal_end, start=prev_end,
                                  state=expected_state)
        if scan.frames:
            assert scan.start is not None  # (a range that read frames found where they start)
            stop = scan.error.offset if scan.error else scan.end
            planned.append(PlannedRange(-1, scan.index, scan.start, stop, frame_base + 1,
                                        scan.state_in or Section(), last_ts, scan.frames, h))
        if scan.error is not None:
            err = replace(scan.error, frames=frame_base + scan.error.frames)
            return planned, err, rescans
        frame_base += scan.frames
        if scan.last_ts is not None:
            last_ts = scan.last_ts
        prev_end = scan.end
        prev_state = scan.state_out or prev_state
    return planned, None, rescans


def error_message(err: WalkError) -> str:
    """The error as a sentence in `pcapfile`'s words."""
    if err.what.startswith("The ") or err.what.startswith("Not "):
        return err.what  # already a message (compressed files: the reader's)
    return err.message()


# --------------------------------------------------------------------------- reading


def read_range(r: PlannedRange, stats: ReaderStats | None = None) -> Iterator[TcpPacket]:
    """The TCP segments of one planned range, numbered and timed as a sequential read numbers them."""
    for pkt, _offset in read_range_located(r, stats):
        yield pkt


def read_range_located(r: PlannedRange, stats: ReaderStats | None = None
                       ) -> Iterator[tuple[TcpPacket, int | None]]:
    """Like `read_range`, with the file offset of each segment's payload (None when it has none, or
    when it cannot be located, e.g. in a gzip file)."""
    h = r.header
    if stats is None:
        stats = ReaderStats()
    if h.compressed:
        for pkt in _read_compressed(r, stats):
            yield pkt, None
        return
    with open(h.path, "rb", buffering=0) as f:
        buf = Window(f, r.start, chunk=min(CHUNK, max(1 << 16, r.stop - r.start)), bounded=False)
        walker = Walker(buf, r.start, pcap=h.pcap, section=r.state, last_ts=r.last_ts, stop=r.stop)
        for number, (ts, linktype, data, orig, data_offset) in enumerate(walker.packets(), r.first_frame):
            pkt = decode_tcp(number, ts, linktype, data, stats, orig)
            if pkt is not None:
                start = payload_start(data, linktype, pkt.payload) if pkt.payload else None
                yield pkt, (None if start is None else data_offset + start)
        if walker.error is not None:
            raise CaptureFormatError(f"{h.path}: the file changed since it was planned: "
                                     f"{error_message(walker.error)}", offset=walker.error.offset)
    if walker.frames != r.frames:
        raise CaptureFormatError(f"{h.path}: the file changed since it was planned "
                                 f"(range {r.index}: {walker.frames} frames, expected {r.frames}).")


def _read_compressed(r: PlannedRange, stats: ReaderStats) -> Iterator[TcpPacket]:
    reader = CaptureReader(r.header.path)
    try:
        for pkt in reader.tcp_packets():
            if pkt.number > r.frames:
                break
            yield pkt
    except CaptureFormatError:
        pass  # planned: the error is in the plan already, and the packets before it were yielded
    finally:
        reader.close()
