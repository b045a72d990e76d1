"""Streaming reader for pcap and pcapng capture files that yields the TCP segments they hold.

Pure standard library and built for speed: the file is read in 1 MiB chunks (never whole),
headers are decoded with precompiled `struct.Struct` objects straight out of the chunk, and the
only per-packet allocations are the payload slice and the `TcpPacket` itself.

Supported containers: classic pcap (both byte orders, microsecond and nanosecond magic, the
"modified" Kuznetzov variant) and pcapng (several sections of either byte order, several
interfaces with their own link type / snaplen / if_tsresol / if_tsoffset, EPB, SPB, the
obsolete PB; unknown blocks are skipped). Gzip-compressed captures are decompressed on the fly.

Supported link types: Ethernet (with 802.1Q / 802.1ad / QinQ tags), Linux cooked SLL and SLL2,
BSD null and OpenBSD loop (either byte order), raw IP (12, 14, 101, 228, 229).
"""

from __future__ import annotations

import gzip
import io
import ipaddress
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from .errors import CaptureFormatError, TruncatedCaptureError

__all__ = [
    "LINKTYPE_ETHERNET",
    "LINKTYPE_IPV4",
    "LINKTYPE_IPV6",
    "LINKTYPE_LINUX_SLL",
    "LINKTYPE_LINUX_SLL2",
    "LINKTYPE_LOOP",
    "LINKTYPE_NULL",
    "LINKTYPE_RAW",
    "SUPPORTED_LINKTYPES",
    "CaptureFormatError",
    "CaptureReader",
    "Frame",
    "ReaderStats",
    "TcpPacket",
    "TruncatedCaptureError",
    "decode_tcp",
    "read_tcp_packets",
    "sniff_format",
]

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
# DLT_RAW is 12 on most BSDs and 14 on OpenBSD; old files carry those numbers instead of 101.
_RAW_ALIASES = (12, 14)
SUPPORTED_LINKTYPES = frozenset(
    {LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_LOOP, LINKTYPE_LINUX_SLL,
     LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL2, *_RAW_ALIASES}
)

_CHUNK = 1 << 20
# No real block or record comes near this (Wireshark caps pcapng blocks at 16 MiB); anything
# larger is corruption and is reported without trying to read (or allocate) it.
MAX_RECORD = 64 << 20

_PCAP_MAGICS = {
    # magic as read little-endian -> (byte order, timestamp divisor, record header length)
    0xA1B2C3D4: ("<", 1_000_000, 16),
    0xD4C3B2A1: (">", 1_000_000, 16),
    0xA1B23C4D: ("<", 1_000_000_000, 16),
    0x4D3CB2A1: (">", 1_000_000_000, 16),
    # Alexey Kuznetzov's "modified" pcap: 8 extra bytes per record header.
    0xA1B2CD34: ("<", 1_000_000, 24),
    0x34CDB2A1: (">", 1_000_000, 24),
}
_SHB = 0x0A0D0D0A
_IDB = 0x00000001
_PB = 0x00000002
_SPB = 0x00000003
_EPB = 0x00000006
_BOM = 0x1A2B3C4D
_BOM_SWAPPED = 0x4D3C2B1A
_GZIP_MAGIC = b"\x1f\x8b"

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

_ETH_VLAN = (0x8100, 0x88A8, 0x9100)
_IPV4_HDR = struct.Struct("!BxH2xHxB2x4s4s")  # ver/ihl, total length, flags/frag, proto, src, dst
_IPV6_HDR = struct.Struct("!4xHB1x16s16s")  # payload length, next header, src, dst
_TCP_HDR = struct.Struct("!HHIIBBH")  # sport, dport, seq, ack, data offset, flags, window
# IPv6 extension headers laid out as (next header, length in 8-octet units beyond the first).
_IPV6_EXT_GENERIC = frozenset({0, 43, 60, 135, 139, 140})
_IPV6_FRAGMENT = 44
_IPV6_AH = 51
_AF_INET = 2
_AF_INET6 = frozenset({10, 23, 24, 28, 30})  # Linux, Winsock, NetBSD/OpenBSD, FreeBSD, macOS


@dataclass(slots=True)
class TcpPacket:
    """One TCP segment found in a capture."""

    number: int  # 1-based frame number in the capture, counting ALL frames, like Wireshark
    ts: float  # seconds since the epoch
    src: str  # IP addresses as text (ipaddress module formatting)
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int  # TCP flags byte (FIN=1, SYN=2, RST=4, PSH=8, ACK=16, URG=32, ECE=64, CWR=128)
    payload: bytes  # the captured payload bytes
    missing: int = 0  # payload bytes the segment carried but the capture did not (snaplen)
    window: int | None = None  # the raw (unscaled) window field; None when the source did not keep it


@dataclass(slots=True)
class Frame:
    """One captured frame, before any protocol decoding."""

    number: int
    ts: float
    linktype: int
    data: bytes  # the captured bytes (possibly cut by snaplen)
    orig_len: int  # the frame's length on the wire


@dataclass(slots=True)
class ReaderStats:
    """What the reader saw besides TCP segments; useful for expert notes about a capture."""

    frames: int = 0
    tcp_packets: int = 0
    non_tcp: int = 0  # frames that are not TCP over IPv4/IPv6 (ARP, UDP, ICMP, ...)
    ip_fragments: int = 0  # IPv4/IPv6 fragments seen (first fragments still yield their TCP header)
    skipped_fragments: int = 0  # non-first fragments, which carry no TCP header and are skipped
    truncated_headers: int = 0  # frames cut by snaplen before the TCP header ended
    malformed: int = 0  # frames whose IP/TCP headers contradict themselves
    unsupported_linktypes: set[int] = field(default_factory=set)


# --------------------------------------------------------------------------- format sniffing


def sniff_format(first_bytes: bytes) -> str | None:
    """Tell from a file's first bytes whether it is a 'pcap' or 'pcapng' capture (else None).

    Needs 4 bytes for pcap and 12 for pcapng (the byte-order magic is checked too). Gzip-compressed
    captures are recognised by decompressing the start of what was given.
    """
    head = bytes(first_bytes[:64])
    if head[:2] == _GZIP_MAGIC:
        try:
            head = zlib.decompressobj(wbits=31).decompress(bytes(first_bytes[:4096]), 64)
        except zlib.error:
            return None
        if head[:2] == _GZIP_MAGIC:  # a gzip inside a gzip is not something we read
            return None
    if len(head) < 4:
        return None
    magic = _U32LE.unpack_from(head)[0]
    if magic in _PCAP_MAGICS:
        return "pcap"
    if magic == _SHB and len(head) >= 12 and section_order(head, 0) is not None:
        return "pcapng"
    return None


# --------------------------------------------------------------------------- buffered input


class _Prepend:
    """A read()-able stream that first returns bytes already consumed from another stream."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if n < 0 or n >= len(self._head):
                out, self._head = self._head, b""
                return out
            out, self._head = self._head[:n], self._head[n:]
            return out
        return self._rest.read(n)


class _Input:
    """Chunked reader: `buf[pos:]` is unread data, `base` is the file offset of `buf[0]`.

    Reads happen in chunks of at most 1 MiB, so a corrupt length never triggers a large read
    or allocation: the buffer only ever grows by bytes the file really contains.
    """

    __slots__ = ("base", "buf", "compressed", "f", "pos")

    def __init__(self, f: BinaryIO, compressed: bool) -> None:
        self.f = f
        self.buf = b""
        self.pos = 0
        self.base = 0
        self.compressed = compressed

    def _read(self, n: int) -> bytes:
        try:
            return self.f.read(n) or b""
        except EOFError:
            return b""  # gzip stream cut short: the same as the file ending here
        except (OSError, zlib.error) as exc:
            if not self.compressed:
                raise
            raise CaptureFormatError(
                f"The compressed capture is corrupt near byte {self.base + len(self.buf)}: {exc}.",
                offset=self.base + len(self.buf),
            ) from None

    def ensure(self, n: int) -> bool:
        """Make `n` bytes available from `pos`; False if the input ends first."""
        avail = len(self.buf) - self.pos
        if avail >= n:
            return True
        parts = [self.buf[self.pos:]]
        self.base += self.pos
        self.pos = 0
        while avail < n:
            chunk = self._read(_CHUNK)
            if not chunk:
                break
            parts.append(chunk)
            avail += len(chunk)
        self.buf = b"".join(parts)
        return avail >= n

    def at_eof(self) -> bool:
        """True when no unread byte remains."""
        return not self.ensure(1)

    @property
    def offset(self) -> int:
        return self.base + self.pos


def _open_source(source: object) -> tuple[BinaryIO, bool]:
    """Turn a path, bytes or binary file object into a readable stream (and whether we own it)."""
    if isinstance(source, str | os.PathLike):
        try:
            return open(source, "rb", buffering=0), True
        except IsADirectoryError:
            raise CaptureFormatError(f"{os.fspath(source)} is a directory, not a capture file.") from None
    if isinstance(source, bytes | bytearray | memoryview):
        return io.BytesIO(bytes(source)), True
    if hasattr(source, "read"):
        return source, False  # type: ignore[return-value]
    raise TypeError(f"expected a path, bytes or a binary file object, not {type(source).__name__}")


# --------------------------------------------------------------------------- protocol decoding

_addr_cache: dict[bytes, str] = {}


def _addr(raw: bytes) -> str:
    """Format a 4- or 16-byte address like the ipaddress module, with a small cache."""
    text = _addr_cache.get(raw)
    if text is None:
        if len(_addr_cache) > 65536:  # bounded: a scan capture holds millions of addresses
            _addr_cache.clear()
        text = str(ipaddress.ip_address(raw))
        _addr_cache[raw] = text
    return text


def _tcp(number: int, ts: float, data: bytes, t: int, end: int, src: bytes, dst: bytes,
         stats: ReaderStats) -> TcpPacket | None:
    """Decode the TCP header at `t`; `end` is where the IP packet says the segment ends."""
    n = len(data)
    if t + 20 > end:
        stats.malformed += 1
        return None
    if t + 20 > n:
        stats.truncated_headers += 1
        return None
    sport, dport, seq, ack, doff, flags, window = _TCP_HDR.unpack_from(data, t)
    ps = t + ((doff >> 4) << 2)
    if ps < t + 20 or ps > end:
        stats.malformed += 1
        return None
    if end <= n:
        payload = data[ps:end]
        missing = 0
    elif ps < n:
        payload = data[ps:n]
        missing = end - n
    else:  # snaplen cut inside the TCP options: the fixed header is still worth reporting
        payload = b""
        missing = end - ps
    stats.tcp_packets += 1
    return TcpPacket(number, ts, _addr(src), _addr(dst), sport, dport, seq, ack, flags, payload, missing, window)


def _ipv4(number: int, ts: float, data: bytes, off: int, stats: ReaderStats) -> TcpPacket | None:
    n = len(data)
    if off + 20 > n:
        stats.truncated_headers += 1
        return None
    vihl, total, frag, proto, src, dst = _IPV4_HDR.unpack_from(data, off)
    ihl = (vihl & 15) << 2
    if vihl >> 4 != 4 or ihl < 20:
        stats.malformed += 1
        return None
    if proto != 6:
        stats.non_tcp += 1
        return None
    if frag & 0x3FFF:  # MF set or non-zero offset
        stats.ip_fragments += 1
        if frag & 0x1FFF:  # only the first fragment holds the TCP header
            stats.skipped_fragments += 1
            return None
    # total == 0 happens with TCP segmentation offload: trust the captured length then.
    end = off + total if total else n
    if total and total < ihl:
        stats.malformed += 1
        return None
    return _tcp(number, ts, data, off + ihl, end, src, dst, stats)


def _ipv6(number: int, ts: float, data: bytes, off: int, stats: ReaderStats) -> TcpPacket | None:
    n = len(data)
    if off + 40 > n:
        stats.truncated_headers += 1
        return None
    if data[off] >> 4 != 6:
        stats.malformed += 1
        return None
    plen, nh, src, dst = _IPV6_HDR.unpack_from(data, off)
    p = off + 40
    end = p + plen if plen else n  # plen 0: jumbogram (or TSO); use what was captured
    while nh != 6:
        if nh in _IPV6_EXT_GENERIC:
            if p + 2 > n:
                stats.truncated_headers += 1
                return None
            nh, p = data[p], p + ((data[p + 1] + 1) << 3)
        elif nh == _IPV6_FRAGMENT:
            if p + 8 > n:
                stats.truncated_headers += 1
                return None
            stats.ip_fragments += 1
            if ((data[p + 2] << 8) | data[p + 3]) & 0xFFF8:
                stats.skipped_fragments += 1
                return None
            nh, p = data[p], p + 8
        elif nh == _IPV6_AH:
            if p + 2 > n:
                stats.truncated_headers += 1
                return None
            nh, p = data[p], p + ((data[p + 1] + 2) << 2)
        else:  # UDP, ICMPv6, ESP, no-next-header, ...
            stats.non_tcp += 1
            return None
        if p > end:
            stats.malformed += 1
            return None
    return _tcp(number, ts, data, p, end, src, dst, stats)


def _ethertype(number: int, ts: float, data: bytes, etype: int, off: int,
               stats: ReaderStats) -> TcpPacket | None:
    """Decode from an EtherType onwards, peeling 802.1Q / 802.1ad tags."""
    while etype in _ETH_VLAN:
        if off + 4 > len(data):
            stats.truncated_headers += 1
            return None
        etype = (data[off + 2] << 8) | data[off + 3]
        off += 4
    if etype == 0x0800:
        return _ipv4(number, ts, data, off, stats)
    if etype == 0x86DD:
        return _ipv6(number, ts, data, off, stats)
    stats.non_tcp += 1
    return None


def _by_version(number: int, ts: float, data: bytes, off: int, stats: ReaderStats) -> TcpPacket | None:
    """Decode a bare IP packet, choosing IPv4 or IPv6 by its version nibble."""
    if off >= len(data):
        stats.truncated_headers += 1
        return None
    version = data[off] >> 4
    if version == 4:
        return _ipv4(number, ts, data, off, stats)
    if version == 6:
        return _ipv6(number, ts, data, off, stats)
    stats.non_tcp += 1
    return None


def decode_tcp(number: int, ts: float, linktype: int, data: bytes,
               stats: ReaderStats | None = None) -> TcpPacket | None:
    """Decode one captured frame of the given link type; the TCP segment it carries, or None.

    Never raises on malformed input: frames that are not TCP, or cannot be decoded, return None
    and are counted in `stats`.
    """
    if stats is None:
        stats = ReaderStats()
    n = len(data)
    try:
        if linktype == LINKTYPE_ETHERNET:
            if n < 14:
                stats.truncated_headers += 1
                return None
            etype = (data[12] << 8) | data[13]
            if etype < 0x0600:  # an 802.3 length field: LLC/SNAP, never IP on a modern LAN
                stats.non_tcp += 1
                return None
            return _ethertype(number, ts, data, etype, 14, stats)
        if linktype == LINKTYPE_LINUX_SLL:
            if n < 16:
                stats.truncated_headers += 1
                return None
            return _ethertype(number, ts, data, (data[14] << 8) | data[15], 16, stats)
        if linktype == LINKTYPE_LINUX_SLL2:
            if n < 20:
                stats.truncated_headers += 1
                return None
            return _ethertype(number, ts, data, (data[0] << 8) | data[1], 20, stats)
        if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
            if n < 4:
                stats.truncated_headers += 1
                return None
            # The family is in the capturing host's byte order (null) or big-endian (loop), but
            # files of both kinds exist with either order: a value above 0xFFFF is byte-swapped.
            family = _U32LE.unpack_from(data)[0]
            if family > 0xFFFF:
                family = int.from_bytes(data[:4], "big")
            if family == _AF_INET:
                return _ipv4(number, ts, data, 4, stats)
            if family in _AF_INET6:
                return _ipv6(number, ts, data, 4, stats)
            return _by_version(number, ts, data, 4, stats)
        if linktype in (LINKTYPE_RAW, *_RAW_ALIASES):
            return _by_version(number, ts, data, 0, stats)
        if linktype == LINKTYPE_IPV4:
            return _ipv4(number, ts, data, 0, stats)
        if linktype == LINKTYPE_IPV6:
            return _ipv6(number, ts, data, 0, stats)
    except (IndexError, struct.error):  # belt and braces: a bounds check we did not think of
        stats.malformed += 1
        return None
    stats.unsupported_linktypes.add(linktype)
    return None


# --------------------------------------------------------------------------- container parsing


def _truncated(what: str, inp: _Input, number: int) -> TruncatedCaptureError:
    return TruncatedCaptureError(
        f"The capture is truncated: it ends inside {what} at byte {inp.offset} "
        f"(after frame {number}).",
        offset=inp.offset,
        frame=number,
    )


def _corrupt(what: str, inp: _Input, number: int) -> CaptureFormatError:
    return CaptureFormatError(
        f"The capture is corrupt: {what} at byte {inp.offset} (after frame {number}).",
        offset=inp.offset,
        frame=number,
    )


def _pcap_frames(inp: _Input, stats: ReaderStats) -> Iterator[tuple[int, float, int, bytes, int]]:
    """Yield (number, ts, linktype, data, orig_len) for each record of a classic pcap file."""
    if not inp.ensure(24):
        raise _truncated("the file header", inp, 0)
    order, div, rec_len = _PCAP_MAGICS[_U32LE.unpack_from(inp.buf, inp.pos)[0]]
    network = struct.unpack_from(order + "I", inp.buf, inp.pos + 20)[0]
    # The upper bits of the link-type field carry FCS information; the type is the low 16 bits.
    linktype = network & 0xFFFF
    inp.pos += 24
    rec = struct.Struct(order + "IIII")
    number = 0
    buf, pos = inp.buf, inp.pos
    while True:
        if len(buf) - pos < rec_len:
            inp.pos = pos
            if not inp.ensure(rec_len):
                if inp.at_eof():
                    return
                raise _truncated(f"the header of frame {number + 1}", inp, number)
            buf, pos = inp.buf, inp.pos
        sec, frac, incl, orig = rec.unpack_from(buf, pos)
        if incl > MAX_RECORD:
            inp.pos = pos
            raise _corrupt(f"frame {number + 1} claims {incl} captured bytes", inp, number)
        size = rec_len + incl
        if len(buf) - pos < size:
            inp.pos = pos
            if not inp.ensure(size):
                raise _truncated(f"frame {number + 1} (record of {size} bytes)", inp, number)
            buf, pos = inp.buf, inp.pos
        number += 1
        stats.frames = number
        yield number, sec + frac / div, linktype, buf[pos + rec_len:pos + size], orig
        pos += size


@dataclass(slots=True)
class _Interface:
    linktype: int
    snaplen: int
    div: int  # timestamp units per second
    tsoffset: int  # seconds added to every timestamp


def _parse_idb(body: bytes, order: str) -> _Interface:
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
        elif code == 14 and len(value) >= 8:  # if_tsoffset: seconds to add
            tsoffset = struct.unpack_from(order + "q", value)[0]
        p += 4 + ((length + 3) & ~3)
    return _Interface(linktype, snaplen, div, tsoffset)


def _pcapng_frames(inp: _Input, stats: ReaderStats) -> Iterator[tuple[int, float, int, bytes, int]]:
    """Yield (number, ts, linktype, data, orig_len) for each packet block of a pcapng file."""
    number = 0
    interfaces: list[_Interface] = []
    order = "<"
    hdr = struct.Struct("<II")
    u32 = struct.Struct("<I")
    epb = struct.Struct("<IIIII")
    pb = struct.Struct("<HHIIII")
    last_ts = 0.0
    buf, pos = inp.buf, inp.pos
    while True:
        if len(buf) - pos < 12:
            inp.pos = pos
            if not inp.ensure(12):
                if inp.at_eof():
                    return
                raise _truncated("a block header", inp, number)
            buf, pos = inp.buf, inp.pos
        btype, blen = hdr.unpack_from(buf, pos)
        if btype == _SHB:
            # A new section may switch byte order; the byte-order magic says which.
            declared = section_order(buf, pos)
            if declared is None:
                inp.pos = pos
                raise _corrupt("a section header with an invalid byte-order magic", inp, number)
            order = declared
            hdr = struct.Struct(order + "II")
            u32 = struct.Struct(order + "I")
            epb = struct.Struct(order + "IIIII")
            pb = struct.Struct(order + "HHIIII")
            btype, blen = hdr.unpack_from(buf, pos)
            interfaces = []
        if blen < 12 or blen & 3 or blen > MAX_RECORD:
            inp.pos = pos
            raise _corrupt(f"a block (type 0x{btype:08x}) with impossible length {blen}", inp, number)
        if len(buf) - pos < blen:
            inp.pos = pos
            if not inp.ensure(blen):
                what = f"frame {number + 1}" if btype in (_EPB, _SPB, _PB) else f"a block of type 0x{btype:08x}"
                raise _truncated(f"{what} ({blen}-byte block)", inp, number)
            buf, pos = inp.buf, inp.pos
        if u32.unpack_from(buf, pos + blen - 4)[0] != blen:
            inp.pos = pos
            raise _corrupt("a block whose trailing length differs from its leading length", inp, number)
        if btype in (_EPB, _PB):
            if blen < 32:
                inp.pos = pos
                raise _corrupt("a packet block too short for its header", inp, number)
            if btype == _EPB:
                if_id, hi, lo, caplen, orig = epb.unpack_from(buf, pos + 8)
            else:
                if_id, _drops, hi, lo, caplen, orig = pb.unpack_from(buf, pos + 8)
            if caplen > blen - 32:
                inp.pos = pos
                raise _corrupt(f"frame {number + 1} claims more bytes than its block holds", inp, number)
            if if_id >= len(interfaces):
                inp.pos = pos
                raise _corrupt(f"frame {number + 1} names undefined interface {if_id}", inp, number)
            iface = interfaces[if_id]
            number += 1
            stats.frames = number
            last_ts = ((hi << 32) | lo) / iface.div + iface.tsoffset
            yield number, last_ts, iface.linktype, buf[pos + 28:pos + 28 + caplen], orig
        elif btype == _SPB:
            if blen < 16:
                inp.pos = pos
                raise _corrupt("a simple packet block too short for its header", inp, number)
            if not interfaces:
                inp.pos = pos
                raise _corrupt("a simple packet block before any interface description", inp, number)
            iface = interfaces[0]
            orig = u32.unpack_from(buf, pos + 8)[0]
            caplen = min(orig, blen - 16)
            if iface.snaplen:
                caplen = min(caplen, iface.snaplen)
            number += 1
            stats.frames = number
            # An SPB has no timestamp: repeat the previous packet's so time never goes backwards.
            yield number, last_ts, iface.linktype, buf[pos + 12:pos + 12 + caplen], orig
        elif btype == _IDB:
            if blen < 20:
                inp.pos = pos
                raise _corrupt("an interface description block too short for its header", inp, number)
            interfaces.append(_parse_idb(buf[pos + 8:pos + blen], order))
        # Every other block (name resolution, statistics, custom, decryption secrets...) is skipped.
        pos += blen


# --------------------------------------------------------------------------- public reader


class CaptureReader:
    """An open capture file: validates the header on construction, then iterates frames lazily.

    `source` is a path, the file's bytes, or a binary file object (read sequentially; pipes
    work). Construction raises `CaptureFormatError` when the bytes are not a capture. Use as a
    context manager, or call `close()`; iterating to the end closes a file the reader opened.
    """

    def __init__(self, source: str | os.PathLike[str] | bytes | BinaryIO) -> None:
        f, self._owns = _open_source(source)
        self._file = f
        self.stats = ReaderStats()
        try:
            inp = _Input(f, compressed=False)
            inp.ensure(64)  # gathers short reads (pipes) until the magic numbers can be judged
            compressed = inp.buf[:2] == _GZIP_MAGIC
            if compressed:
                # Read the same bytes again, through the decompressor.
                gz = gzip.GzipFile(fileobj=_Prepend(inp.buf, f), mode="rb")  # type: ignore[arg-type]
                inp = _Input(gz, compressed=True)  # type: ignore[arg-type]
                inp.ensure(64)
            self._inp = inp
            if inp.at_eof():
                raise CaptureFormatError("The file is empty, not a pcap or pcapng capture.")
            fmt = sniff_format(inp.buf[:64])
            if fmt is None:
                magic = inp.buf[:4].hex(" ")
                raise CaptureFormatError(
                    f"Not a pcap or pcapng capture file (it starts with bytes {magic})."
                )
            if fmt == "pcap" and not self._inp.ensure(24):
                raise _truncated("the file header", self._inp, 0)
        except BaseException:
            self.close()
            raise
        self.format: str = fmt
        self.compressed = compressed
        self._started = False

    def _raw(self) -> Iterator[tuple[int, float, int, bytes, int]]:
        if self._started:
            raise RuntimeError("a CaptureReader can be iterated only once")
        self._started = True
        if self.format == "pcap":
            return _pcap_frames(self._inp, self.stats)
        return _pcapng_frames(self._inp, self.stats)

    def frames(self) -> Iterator[Frame]:
        """Iterate every frame of the capture, undecoded."""
        try:
            for number, ts, linktype, data, orig in self._raw():
                yield Frame(number, ts, linktype, data, orig)
        finally:
            self.close()

    def tcp_packets(self) -> Iterator[TcpPacket]:
        """Iterate the TCP segments of the capture in file order; other frames are counted in `stats`."""
        stats = self.stats
        try:
            for number, ts, linktype, data, orig in self._raw():
                try:
                    # Ethernet + IPv4 is the overwhelmingly common case: skip the dispatch for it.
                    if linktype == 1 and len(data) >= 34 and data[12] == 8 and data[13] == 0:
                        pkt = _ipv4(number, ts, data, 14, stats)
                    else:
                        pkt = decode_tcp(number, ts, linktype, data, stats)
                except (IndexError, struct.error):  # decode_tcp's guard, for the inline path too
                    stats.malformed += 1
                    pkt = None
                if pkt is not None:
                    if pkt.missing and pkt.missing > orig - len(data):
                        # The IP header claims more than the wire carried: a bad length, not snaplen.
                        pkt.missing = max(orig - len(data), 0)
                    yield pkt
        finally:
            self.close()

    def close(self) -> None:
        """Close the underlying file if the reader opened it."""
        if self._owns:
            self._file.close()

    def __enter__(self) -> CaptureReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_tcp_packets(path_or_fileobj: str | os.PathLike[str] | bytes | BinaryIO) -> Iterator[TcpPacket]:
    """Iterate the TCP segments of a pcap/pcapng capture (a path, bytes or binary file object).

    The header is checked immediately: a file that is not a capture raises `CaptureFormatError`
    from this call, before any iteration. A capture cut short yields every complete frame and
    then raises `TruncatedCaptureError` naming the frame and byte offset.
    """
    return CaptureReader(path_or_fileobj).tcp_packets()
