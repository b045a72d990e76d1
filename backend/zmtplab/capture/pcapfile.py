"""Streaming reader for pcap and pcapng capture files that yields the TCP segments they hold.

Pure standard library and built for speed: the file is read in 1 MiB chunks (never whole),
headers are decoded with precompiled `struct.Struct` objects straight out of the chunk, and the
only per-packet allocations are the payload slice and the `TcpPacket` itself.

Supported containers: classic pcap (both byte orders, microsecond and nanosecond magic, the
"modified" Kuznetzov variant) and pcapng (several sections of either byte order, several
interfaces with their own link type / snaplen / if_tsresol / if_tsoffset, EPB, SPB, the
obsolete PB; unknown blocks are skipped), walked by `pcapwalk.Walker` (which the pipeline's
range reader drives too). Gzip-compressed captures are decompressed on the fly.

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

from .errors import CaptureFormatError, ExpansionLimit, TruncatedCaptureError
from .pcapwalk import PCAP_MAGICS, SHB, ByteStream, Walker, WalkError, Window, pcap_format, section_order

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
    "payload_start",
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

_GZIP_MAGIC = b"\x1f\x8b"

_U32LE = struct.Struct("<I")
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
    if magic in PCAP_MAGICS:
        return "pcap"
    if magic == SHB and len(head) >= 12 and section_order(head, 0) is not None:
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

    def seek(self, offset: int, whence: int = 0, /) -> int:
        """Never: the bytes are read once, in order (a gzip reader asks only to rewind, which a window never does)."""
        raise io.UnsupportedOperation("a compressed capture is read as a stream")


class _Capped:
    """A decompressed stream that raises `ExpansionLimit` once more than `limit` octets came out of it."""

    def __init__(self, f: ByteStream, limit: int) -> None:
        self._f = f
        self._left = limit
        self.limit = limit

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n if n >= 0 else self._left + 1)
        self._left -= len(data)
        if self._left < 0:
            raise ExpansionLimit(self.limit)
        return data

    def seek(self, offset: int, whence: int = 0, /) -> int:
        raise io.UnsupportedOperation("a compressed capture is read as a stream")


def _open_source(source: str | os.PathLike[str] | bytes | BinaryIO) -> tuple[BinaryIO, bool]:
    """Turn a path, bytes or binary file object into a readable stream (and whether we own it)."""
    if isinstance(source, str | os.PathLike):
        try:
            return open(source, "rb", buffering=0), True
        except IsADirectoryError:
            raise CaptureFormatError(f"{os.fspath(source)} is a directory, not a capture file.") from None
    if isinstance(source, bytes | bytearray | memoryview):
        return io.BytesIO(bytes(source)), True
    if hasattr(source, "read"):
        return source, False
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
               stats: ReaderStats | None = None, orig_len: int | None = None) -> TcpPacket | None:
    """Decode one captured frame of the given link type; the TCP segment it carries, or None.

    With `orig_len`, the frame's length on the wire, a segment whose IP header claims more
    than the wire carried reports as `missing` only what the capture cut (the rest is a bad
    length, not snaplen). Never raises on malformed input: frames that are not TCP, or cannot
    be decoded, return None and are counted in `stats`.
    """
    if stats is None:
        stats = ReaderStats()
    if linktype == 1 and len(data) >= 34 and data[12] == 8 and data[13] == 0:
        # Ethernet + IPv4 is the overwhelmingly common case: skip the dispatch for it.
        try:
            pkt = _ipv4(number, ts, data, 14, stats)
        except (IndexError, struct.error):  # _by_link's guard, for this path too
            stats.malformed += 1
            return None
    else:
        pkt = _by_link(number, ts, linktype, data, stats)
    if pkt is not None and orig_len is not None and pkt.missing and pkt.missing > orig_len - len(data):
        pkt.missing = max(orig_len - len(data), 0)
    return pkt


def _by_link(number: int, ts: float, linktype: int, data: bytes, stats: ReaderStats) -> TcpPacket | None:
    """Decode a frame by its link type (`decode_tcp` without its shortcut and wire length check)."""
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


def _ip_start(data: bytes, linktype: int) -> int | None:
    """Where the IP header of a frame starts (for the link types `decode_tcp` knows)."""
    if linktype == LINKTYPE_ETHERNET:
        off = 14
        if len(data) < off:
            return None
        etype = (data[12] << 8) | data[13]
        while etype in _ETH_VLAN and off + 4 <= len(data):
            etype = (data[off + 2] << 8) | data[off + 3]
            off += 4
        return off
    if linktype == LINKTYPE_LINUX_SLL:
        return 16
    if linktype == LINKTYPE_LINUX_SLL2:
        return 20
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        return 4
    if linktype in (LINKTYPE_RAW, *_RAW_ALIASES, LINKTYPE_IPV4, LINKTYPE_IPV6):
        return 0
    return None


def payload_start(data: bytes, linktype: int, payload: bytes) -> int | None:
    """Where `payload` (the TCP payload `decode_tcp` found in `data`) starts within the frame.

    The payload ends where the IP packet ends (or where the capture cut the frame); the answer is
    checked against the bytes themselves, and None means "could not locate it" (the caller then
    ships the bytes instead of their offset)."""
    ip = _ip_start(data, linktype)
    n = len(data)
    if ip is None or ip >= n:
        return None
    version = data[ip] >> 4
    if version == 4 and ip + 4 <= n:
        total = (data[ip + 2] << 8) | data[ip + 3]
        end = ip + total if total else n
    elif version == 6 and ip + 6 <= n:
        plen = (data[ip + 4] << 8) | data[ip + 5]
        end = ip + 40 + plen if plen else n
    else:
        return None
    start = min(end, n) - len(payload)
    if start < 0 or not data.startswith(payload, start):
        return None
    return start


# --------------------------------------------------------------------------- public reader


class CaptureReader:
    """An open capture file: validates the header on construction, then iterates frames lazily.

    `source` is a path, the file's bytes, or a binary file object (read sequentially; pipes
    work). Construction raises `CaptureFormatError` when the bytes are not a capture. Use as a
    context manager, or call `close()`; iterating to the end closes a file the reader opened.
    """

    def __init__(self, source: str | os.PathLike[str] | bytes | BinaryIO, *, max_expanded: int | None = None) -> None:
        """`max_expanded`: how many octets a compressed capture may decompress into (`ExpansionLimit` beyond)."""
        f, self._owns = _open_source(source)
        self._file = f
        self.stats = ReaderStats()
        try:
            win = Window(f)
            win.fill(0, 64)  # gathers short reads (pipes) until the magic numbers can be judged
            compressed = win.data[:2] == _GZIP_MAGIC
            if compressed:
                # Read the same bytes again, through the decompressor.
                gz: ByteStream = gzip.GzipFile(fileobj=_Prepend(win.data, f), mode="rb")
                if max_expanded is not None:
                    gz = _Capped(gz, max_expanded)
                win = Window(gz, compressed=True)
                win.fill(0, 64)
            self._window = win
            if not win.data:
                raise CaptureFormatError("The file is empty, not a pcap or pcapng capture.")
            fmt = sniff_format(win.data[:64])
            if fmt is None:
                magic = win.data[:4].hex(" ")
                raise CaptureFormatError(
                    f"Not a pcap or pcapng capture file (it starts with bytes {magic})."
                )
            if fmt == "pcap" and not win.fill(0, 24):
                raise WalkError("truncated", "the file header", 0, 0).exception()
        except BaseException:
            self.close()
            raise
        self.format: str = fmt
        self.compressed = compressed
        self._started = False

    def _walker(self) -> Walker:
        if self._started:
            raise RuntimeError("a CaptureReader can be iterated only once")
        self._started = True
        if self.format == "pcap":
            return Walker(self._window, 24, pcap=pcap_format(self._window.data))
        return Walker(self._window, 0)

    def frames(self) -> Iterator[Frame]:
        """Iterate every frame of the capture, undecoded."""
        stats = self.stats
        try:
            walker = self._walker()
            for number, (ts, linktype, data, orig, _offset) in enumerate(walker.packets(), 1):
                stats.frames = number
                yield Frame(number, ts, linktype, data, orig)
            if walker.error is not None:
                raise walker.error.exception()
        finally:
            self.close()

    def tcp_packets(self) -> Iterator[TcpPacket]:
        """Iterate the TCP segments of the capture in file order; other frames are counted in `stats`."""
        stats = self.stats
        try:
            walker = self._walker()
            for number, (ts, linktype, data, orig, _offset) in enumerate(walker.packets(), 1):
                stats.frames = number
                pkt = decode_tcp(number, ts, linktype, data, stats, orig)
                if pkt is not None:
                    yield pkt
            if walker.error is not None:
                raise walker.error.exception()
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


def read_tcp_packets(path_or_fileobj: str | os.PathLike[str] | bytes | BinaryIO, *,
                     max_expanded: int | None = None) -> Iterator[TcpPacket]:
    """Iterate the TCP segments of a pcap/pcapng capture (a path, bytes or binary file object).

    The header is checked immediately: a file that is not a capture raises `CaptureFormatError`
    from this call, before any iteration. A capture cut short yields every complete frame and
    then raises `TruncatedCaptureError` naming the frame and byte offset; a compressed one that decompresses
    past `max_expanded` octets raises `ExpansionLimit` once it gets there.
    """
    return CaptureReader(path_or_fileobj, max_expanded=max_expanded).tcp_packets()
