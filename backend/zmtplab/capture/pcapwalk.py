"""Walking the records of a classic pcap file and the blocks of a pcapng file: the one parser of both.

`pcapfile.CaptureReader` walks a capture from its first byte to its last; `pipeline.ranges` walks
byte ranges of one file, each from a record or block boundary (with the pcapng section state
there) up to the first boundary at or after its end. Both drive the same `Walker`, so they read
the same frames, timestamps and link types, and stop with the same error at the same byte.

No protocol decoding happens here: a walk yields each frame's captured bytes with its timestamp,
link type, length on the wire and file offset. Problems are not raised but kept as the walk's
`error` (a `WalkError`), which the sequential reader raises and the range scanner records.

pcapng: several sections of either byte order, several interfaces with their own link type,
snaplen, if_tsresol and if_tsoffset; EPB, SPB and the obsolete PB; every other block is skipped.
pcap: both byte orders, micro- and nanosecond magic, the "modified" (Kuznetzov) record header.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from .errors import CaptureFormatError, TruncatedCaptureError

__all__ = [
    "CHUNK",
    "EPB",
    "IDB",
    "MAX_RECORD",
    "PACKET_BLOCKS",
    "PB",
    "PCAP_MAGICS",
    "SHB",
    "SPB",
    "Interface",
    "PcapFormat",
    "Section",
    "WalkError",
    "Walker",
    "Window",
    "parse_idb",
    "pcap_format",
    "section_order",
]

CHUNK = 1 << 20
# No real block or record comes near this (Wireshark caps pcapng blocks at 16 MiB); anything
# larger is corruption and is reported without trying to read (or allocate) it.
MAX_RECORD = 64 << 20

PCAP_MAGICS = {
    # magic as read little-endian -> (byte order, timestamp divisor, record header length)
    0xA1B2C3D4: ("<", 1_000_000, 16),
    0xD4C3B2A1: (">", 1_000_000, 16),
    0xA1B23C4D: ("<", 1_000_000_000, 16),
    0x4D3CB2A1: (">", 1_000_000_000, 16),
    # Alexey Kuznetzov's "modified" pcap: 8 extra bytes per record header.
    0xA1B2CD34: ("<", 1_000_000, 24),
    0x34CDB2A1: (">", 1_000_000, 24),
}
SHB = 0x0A0D0D0A
IDB = 0x00000001
PB = 0x00000002
SPB = 0x00000003
EPB = 0x00000006
PACKET_BLOCKS = frozenset({EPB, SPB, PB})
_BOM = 0x1A2B3C4D
_BOM_SWAPPED = 0x4D3C2B1A
_U32LE = struct.Struct("<I")


def section_order(data: bytes | bytearray | memoryview, offset: int) -> str | None:
    """The byte order ("<" or ">") a pcapng section header at `offset` declares by its byte-order
    magic, or None when the magic is neither."""
    bom = _U32LE.unpack_from(data, offset + 8)[0]
    if bom == _BOM:
        return "<"
    if bom == _BOM_SWAPPED:
        return ">"
    return None


@dataclass(frozen=True, slots=True)
class Interface:
    """What a pcapng Interface Description Block says about the packets of its interface."""

    linktype: int
    snaplen: int
    div: int  # timestamp units per second
    tsoffset: int  # seconds added to every timestamp


def parse_idb(body: bytes, order: str) -> Interface:
    """Decode an Interface Description Block body (after the 8-byte block header)."""
    linktype, _reserved, snaplen = struct.unpack_from(order + "HHI", body)
    div, tsoffset = 1_000_000, 0
    p, end = 8, len(body) - 4  # options run up to the trailing block length
    opt = struct.Struct(order + "HH")
    while p + 4 <= end:
        code, length = opt.unpack_from(body, p)
        if code == 0:
            break
        value = body[p + 4:p + 4 + length]
        if code == 9 and length >= 1:  # if_tsresol: 10^-n, or 2^-n when the top bit is set
            res = value[0]
            div = 2 ** (res & 0x7F) if res & 0x80 else 10**res
        elif code == 14 and len(value) >= 8:  # if_tsoffset: seconds to add (an option cut short is ignored)
            tsoffset = struct.unpack_from(order + "q", value)[0]
        p += 4 + ((length + 3) & ~3)
    return Interface(linktype, snaplen, div, tsoffset)


@dataclass(frozen=True, slots=True)
class Section:
    """What a pcapng walk knows at a block boundary: the section's byte order and interfaces."""

    order: str = "<"
    interfaces: tuple[Interface, ...] = ()


@dataclass(frozen=True, slots=True)
class PcapFormat:
    """A classic pcap file's header: how its records are laid out."""

    order: str
    div: int  # timestamp units per second
    rec_len: int  # bytes of a record header
    linktype: int
    snaplen: int


def pcap_format(head: bytes | bytearray | memoryview) -> PcapFormat:
    """The format of a classic pcap file from its 24-byte header (its magic must be one of `PCAP_MAGICS`)."""
    order, div, rec_len = PCAP_MAGICS[_U32LE.unpack_from(head)[0]]
    snaplen, network = struct.unpack_from(order + "II", head, 16)
    # The upper bits of the link-type field carry FCS information; the type is the low 16 bits.
    return PcapFormat(order, div, rec_len, network & 0xFFFF, snaplen)


@dataclass(frozen=True, slots=True)
class WalkError:
    """Where and why a walk stopped before the end; `frames` counts the frames walked before it.

    `what` may name the frame it is about as `{n1}` (the walk may not know its frame numbers:
    a range scan counts from its own start); `message()` fills it in from `frames`.
    """

    kind: str  # 'truncated' or 'corrupt'
    what: str
    offset: int
    frames: int

    def message(self) -> str:
        """The error as a sentence."""
        what = self.what.replace("{n1}", str(self.frames + 1))
        if self.kind == "truncated":
            return f"The capture is truncated: it ends inside {what} at byte {self.offset} (after frame {self.frames})."
        return f"The capture is corrupt: {what} at byte {self.offset} (after frame {self.frames})."

    def exception(self) -> CaptureFormatError:
        """The error to raise: `TruncatedCaptureError` or `CaptureFormatError`."""
        cls = TruncatedCaptureError if self.kind == "truncated" else CaptureFormatError
        return cls(self.message(), offset=self.offset, frame=self.frames)


class ByteStream(Protocol):
    """What a `Window` reads: a binary file, a pipe, a gzip stream."""

    def read(self, n: int = -1, /) -> bytes: ...

    def seek(self, offset: int, whence: int = 0, /) -> int: ...


class Window:
    """A window `data` onto a binary stream, `base` being the stream offset of `data[0]`.

    Refills read `chunk` bytes at a time (1 MiB at most), so a corrupt length never triggers a
    large read or allocation: the window only ever grows by bytes the stream really holds.
    `bounded=False` reads what a refill misses in one read instead, for a local file whose
    reader probes lengths far ahead (the range scanner's boundary guesses: one read to the end
    of the file is faster there than many). Bytes before the position asked for are dropped. A
    position outside the window seeks, which only a seekable file allows; a walk moves forward,
    so a stream (a pipe, a gzip file) is never asked to.
    """

    __slots__ = ("base", "bounded", "chunk", "compressed", "data", "f")

    def __init__(self, f: ByteStream, base: int = 0, *, chunk: int = CHUNK, bounded: bool = True,
                 compressed: bool = False) -> None:
        """`f` is read from `base` on (a seekable file is sought there)."""
        if base:
            f.seek(base)
        self.f = f
        self.base = base
        self.data = b""
        self.chunk = min(chunk, CHUNK)
        self.bounded = bounded
        self.compressed = compressed

    def _read(self, n: int, near: int) -> bytes:
        """Up to `n` bytes; a compressed stream's corruption is a `CaptureFormatError` "near" `near`."""
        try:
            return self.f.read(n) or b""
        except EOFError:
            return b""  # gzip stream cut short: the same as the file ending here
        except (OSError, zlib.error) as exc:
            if not self.compressed:
                raise
            raise CaptureFormatError(f"The compressed capture is corrupt near byte {near}: {exc}.",
                                     offset=near) from None

    def fill(self, pos: int, n: int) -> bool:
        """Make the bytes [pos, pos + n) available in `data`; False if the stream ends first."""
        have = self.base + len(self.data)
        if self.base <= pos and pos + n <= have:
            return True
        if pos < self.base or pos > have:
            self.f.seek(pos)
            self.base, self.data = pos, b""
            have = pos
        parts = [self.data[pos - self.base:]]
        got = have - pos
        # The figure the reader has always given for a corrupt compressed stream (it is what
        # `zmtplab dissect` prints): the position asked for plus the bytes the window held.
        near = pos + len(self.data)
        while got < n:
            chunk = self._read(self.chunk if self.bounded else max(self.chunk, n - got), near)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        self.base, self.data = pos, b"".join(parts)
        return got >= n


class Walker:
    """One walk over the frames of a capture, from a record or block boundary `pos` to `stop`.

    With `pcap` it walks classic pcap records of that format; without, pcapng blocks, starting
    with `section` (the byte order and interfaces in force at `pos`) and `last_ts` (the time a
    simple packet block takes before any timestamped packet: 0.0 when None). It stops at the
    first boundary at or after `stop`, at the end of the file, at the first error, or (with
    `headers_only`) before the first packet block.

    `packets()` yields each frame; `skip()` walks without slicing out the frames' bytes. After
    the walk: `pos` is the boundary it stopped on (or the start of the record or block at
    fault), `frames` how many frames it passed, `section` and `last_ts` what is in force at
    `pos`, and `error` why it stopped early (None: it did not).
    """

    __slots__ = ("error", "frames", "headers_only", "last_ts", "pcap", "pos", "section", "stop", "window")

    def __init__(self, window: Window, pos: int, *, pcap: PcapFormat | None = None, section: Section = Section(),
                 last_ts: float | None = None, stop: int = 1 << 62, headers_only: bool = False) -> None:
        self.window = window
        self.pos = pos
        self.pcap = pcap
        self.section = section
        self.last_ts = last_ts
        self.stop = stop
        self.headers_only = headers_only
        self.frames = 0
        self.error: WalkError | None = None

    def packets(self) -> Iterator[tuple[float, int, bytes, int, int]]:
        """Yield (ts, linktype, data, orig_len, data_offset) per frame, `data_offset` being where
        the frame's captured bytes sit in the file."""
        return self._pcap(True) if self.pcap is not None else self._pcapng(True)

    def skip(self) -> Walker:
        """Walk to the end without slicing out the frames; returns the walker."""
        for _ in self._pcap(False) if self.pcap is not None else self._pcapng(False):
            pass
        return self

    def _pcap(self, with_data: bool) -> Iterator[tuple[float, int, bytes, int, int]]:
        fmt = self.pcap
        assert fmt is not None
        win = self.window
        rec = struct.Struct(fmt.order + "IIII")
        rec_len, div, linktype = fmt.rec_len, fmt.div, fmt.linktype
        pos, stop, frames = self.pos, self.stop, 0
        data, base = win.data, win.base
        error = None
        try:
            while pos < stop:
                o = pos - base
                if o < 0 or o + rec_len > len(data):
                    if not win.fill(pos, rec_len):
                        if win.fill(pos, 1):
                            error = WalkError("truncated", "the header of frame {n1}", pos, frames)
                        break
                    data, base = win.data, win.base
                    o = pos - base
                sec, frac, incl, orig = rec.unpack_from(data, o)
                if incl > MAX_RECORD:
                    error = WalkError("corrupt", f"frame {{n1}} claims {incl} captured bytes", pos, frames)
                    break
                size = rec_len + incl
                if o + size > len(data):
                    if not win.fill(pos, size):
                        error = WalkError("truncated", f"frame {{n1}} (record of {size} bytes)", pos, frames)
                        break
                    data, base = win.data, win.base
                    o = pos - base
                frames += 1
                if with_data:
                    yield sec + frac / div, linktype, data[o + rec_len:o + size], orig, pos + rec_len
                pos += size
        finally:
            self.pos, self.frames, self.error = pos, frames, error

    def _pcapng(self, with_data: bool) -> Iterator[tuple[float, int, bytes, int, int]]:
        win = self.window
        pos, stop, frames, last_ts = self.pos, self.stop, 0, self.last_ts
        section = self.section
        order = section.order
        interfaces = list(section.interfaces)
        changed = False
        hdr, u32, epb, pb = _pcapng_structs(order)
        headers_only = self.headers_only
        data, base = win.data, win.base
        error = None
        try:
            while pos < stop:
                o = pos - base
                if o < 0 or o + 12 > len(data):
                    if not win.fill(pos, 12):
                        if win.fill(pos, 1):
                            error = WalkError("truncated", "a block header", pos, frames)
                        break
                    data, base = win.data, win.base
                    o = pos - base
                btype, blen = hdr.unpack_from(data, o)
                if btype == SHB:
                    # A new section may switch byte order; the byte-order magic says which.
                    declared = section_order(data, o)
                    if declared is None:
                        error = WalkError("corrupt", "a section header with an invalid byte-order magic", pos, frames)
                        break
                    order = declared
                    hdr, u32, epb, pb = _pcapng_structs(order)
                    btype, blen = hdr.unpack_from(data, o)
                    interfaces = []
                    changed = True
                if headers_only and btype in PACKET_BLOCKS:
                    break
                if blen < 12 or blen & 3 or blen > MAX_RECORD:
                    error = WalkError("corrupt", f"a block (type 0x{btype:08x}) with impossible length {blen}",
                                      pos, frames)
                    break
                if o + blen > len(data):
                    if not win.fill(pos, blen):
                        what = "frame {n1}" if btype in PACKET_BLOCKS else f"a block of type 0x{btype:08x}"
                        error = WalkError("truncated", f"{what} ({blen}-byte block)", pos, frames)
                        break
                    data, base = win.data, win.base
                    o = pos - base
                if u32.unpack_from(data, o + blen - 4)[0] != blen:
                    error = WalkError("corrupt", "a block whose trailing length differs from its leading length",
                                      pos, frames)
                    break
                if btype in (EPB, PB):
                    if blen < 32:
                        error = WalkError("corrupt", "a packet block too short for its header", pos, frames)
                        break
                    if btype == EPB:
                        if_id, hi, lo, caplen, orig = epb.unpack_from(data, o + 8)
                    else:
                        if_id, _drops, hi, lo, caplen, orig = pb.unpack_from(data, o + 8)
                    if caplen > blen - 32:
                        error = WalkError("corrupt", "frame {n1} claims more bytes than its block holds", pos, frames)
                        break
                    if if_id >= len(interfaces):
                        error = WalkError("corrupt", f"frame {{n1}} names undefined interface {if_id}", pos, frames)
                        break
                    iface = interfaces[if_id]
                    last_ts = ((hi << 32) | lo) / iface.div + iface.tsoffset
                    frames += 1
                    if with_data:
                        yield last_ts, iface.linktype, data[o + 28:o + 28 + caplen], orig, pos + 28
                elif btype == SPB:
                    if blen < 16:
                        error = WalkError("corrupt", "a simple packet block too short for its header", pos, frames)
                        break
                    if not interfaces:
                        error = WalkError("corrupt", "a simple packet block before any interface description",
                                          pos, frames)
                        break
                    frames += 1
                    if with_data:
                        iface = interfaces[0]
                        orig = u32.unpack_from(data, o + 8)[0]
                        caplen = min(orig, blen - 16)
                        if iface.snaplen:
                            caplen = min(caplen, iface.snaplen)
                        # An SPB has no timestamp: repeat the previous packet's so time never goes backwards.
                        yield (0.0 if last_ts is None else last_ts), iface.linktype, data[o + 12:o + 12 + caplen], \
                            orig, pos + 12
                elif btype == IDB:
                    if blen < 20:
                        error = WalkError("corrupt", "an interface description block too short for its header",
                                          pos, frames)
                        break
                    interfaces.append(parse_idb(data[o + 8:o + blen], order))
                    changed = True
                # Every other block (name resolution, statistics, custom, decryption secrets...) is skipped.
                pos += blen
        finally:
            self.pos, self.frames, self.last_ts, self.error = pos, frames, last_ts, error
            if changed:
                self.section = Section(order, tuple(interfaces))


def _pcapng_structs(order: str) -> tuple[struct.Struct, struct.Struct, struct.Struct, struct.Struct]:
    """The block header, u32, EPB and PB header layouts of a section of byte order `order`."""
    return (struct.Struct(order + "II"), struct.Struct(order + "I"), struct.Struct(order + "IIIII"),
            struct.Struct(order + "HHIIII"))
