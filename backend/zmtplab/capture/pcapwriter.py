"""Write pcapng (or classic pcap) captures of synthetic TCP connections.

`PcapngWriter` writes the file structure; `add_connection()` returns a `TcpConnectionWriter` that
plays a TCP conversation (handshake, data split into MSS-sized segments with correct sequence and
acknowledgement numbers, FIN both ways) as Ethernet/IPv4 frames, or any other supported link
type, IPv6 included. IPv4 and TCP checksums are correct, so Wireshark reads the result cleanly.

Used to export sessions as captures and by the tests to build captures of every link type and
file format the reader supports.
"""

from __future__ import annotations

import ipaddress
import math
import struct
import sys
from collections.abc import Sequence
from typing import BinaryIO, Literal

from .pcapfile import (  # (the link types are the reader's: one list of what a capture's link layer may be)
    LINKTYPE_ETHERNET,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_LOOP,
    LINKTYPE_NULL,
    LINKTYPE_RAW,
)

__all__ = [
    "ACK",
    "FIN",
    "PSH",
    "RST",
    "SYN",
    "PcapngWriter",
    "TcpConnectionWriter",
    "ethernet_frame",
    "internet_checksum",
    "ipv4_packet",
    "ipv6_packet",
    "tcp_segment",
]

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

Direction = Literal["c2s", "s2c"]
Address = tuple[str, int]

_MAC_CLIENT = bytes.fromhex("020000000001")
_MAC_SERVER = bytes.fromhex("020000000002")
_ETHERTYPE_IPV4 = 0x0800
_ETHERTYPE_IPV6 = 0x86DD
_ETHERTYPE_VLAN = 0x8100
_ETHERTYPE_QINQ = 0x88A8
_AF_INET = 2
_AF_INET6_BSD = 24  # the value Wireshark (and NetBSD/OpenBSD) know for IPv6 in null/loop headers


# --------------------------------------------------------------------------- packet builders


def internet_checksum(data: bytes) -> int:
    """RFC 1071 ones'-complement checksum of `data` (as the 16-bit value to store big-endian)."""
    if len(data) & 1:
        data += b"\x00"
    # Sum native-order words (fast), fold, and swap back: the sum is byte-order independent.
    total = sum(memoryview(data).cast("H"))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    if sys.byteorder == "little":
        total = ((total & 0xFF) << 8) | (total >> 8)
    return ~total & 0xFFFF


def _ip_bytes(addr: str) -> bytes:
    return ipaddress.ip_address(addr).packed


def tcp_segment(src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: int,
                payload: bytes = b"", *, window: int = 65535, options: bytes = b"") -> bytes:
    """Build a TCP header + payload with a correct checksum (IPv4 or IPv6 pseudo-header)."""
    if len(options) % 4:
        options += b"\x00" * (4 - len(options) % 4)  # pad with end-of-option-list
    hlen = 20 + len(options)
    header = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                         (hlen // 4) << 4, flags & 0xFF, window, 0, 0) + options
    s, d = _ip_bytes(src), _ip_bytes(dst)
    length = hlen + len(payload)
    # The pseudo-header: addresses, protocol and TCP length, laid out per IP version.
    pseudo = s + d + (struct.pack("!BBH", 0, 6, length) if len(s) == 4 else struct.pack("!IxxxB", length, 6))
    csum = internet_checksum(pseudo + header + payload)
    return header[:16] + struct.pack("!H", csum) + header[18:] + payload


def ipv4_packet(src: str, dst: str, proto: int, payload: bytes, *, ident: int = 0, ttl: int = 64,
                dont_fragment: bool = True, more_fragments: bool = False, frag_offset: int = 0,
                options: bytes = b"", total_length: int | None = None) -> bytes:
    """Build an IPv4 header (with options and a correct checksum) followed by `payload`.

    `frag_offset` is in bytes (a multiple of 8); `total_length` overrides the length field.
    """
    if len(options) % 4:
        options += b"\x00" * (4 - len(options) % 4)
    ihl = 5 + len(options) // 4
    flags = (0x4000 if dont_fragment else 0) | (0x2000 if more_fragments else 0) | (frag_offset // 8)
    total = 4 * ihl + len(payload) if total_length is None else total_length
    header = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, total, ident & 0xFFFF, flags, ttl, proto, 0,
                         _ip_bytes(src), _ip_bytes(dst)) + options
    csum = internet_checksum(header)
    return header[:10] + struct.pack("!H", csum) + header[12:] + payload


def ipv6_packet(src: str, dst: str, next_header: int, payload: bytes, *,
                ext_headers: Sequence[tuple[int, bytes]] = (), hop_limit: int = 64) -> bytes:
    """Build an IPv6 header, extension headers, then `payload`.

    Each extension header is (type, body) where body is everything after its first two octets
    (next header, length): 6 octets for a fragment header (44), 6 + 8k octets for hop-by-hop (0),
    routing (43) and destination options (60), 2 + 4k octets for AH (51).
    """
    chain = b""
    types = [t for t, _ in ext_headers] + [next_header]
    for i, (etype, body) in enumerate(ext_headers):
        size = 2 + len(body)
        if etype == 44:
            length = 0
        elif etype == 51:
            length = size // 4 - 2
        else:
            length = size // 8 - 1
        chain += bytes([types[i + 1], length]) + body
    body = chain + payload
    header = struct.pack("!IHBB16s16s", 6 << 28, len(body), types[0], hop_limit, _ip_bytes(src), _ip_bytes(dst))
    return header + body


def ethernet_frame(payload: bytes, ethertype: int, *, src: bytes = _MAC_CLIENT, dst: bytes = _MAC_SERVER,
                   vlans: Sequence[int] = ()) -> bytes:
    """Build an Ethernet II frame; `vlans` are VLAN ids, outermost first (two or more = QinQ)."""
    tags = b""
    for i, vid in enumerate(vlans):
        tpid = _ETHERTYPE_QINQ if i == 0 and len(vlans) > 1 else _ETHERTYPE_VLAN
        tags += struct.pack("!HH", tpid, vid & 0x0FFF)
    return dst + src + tags + struct.pack("!H", ethertype) + payload


def _link_frame(linktype: int, ip: bytes, *, outgoing: bool, null_order: str, vlans: Sequence[int]) -> bytes:
    """Wrap an IP packet in the link-layer header of `linktype`."""
    v6 = ip[0] >> 4 == 6
    ethertype = _ETHERTYPE_IPV6 if v6 else _ETHERTYPE_IPV4
    if linktype == LINKTYPE_ETHERNET:
        src, dst = (_MAC_CLIENT, _MAC_SERVER) if outgoing else (_MAC_SERVER, _MAC_CLIENT)
        return ethernet_frame(ip, ethertype, src=src, dst=dst, vlans=vlans)
    if linktype == LINKTYPE_LINUX_SLL:
        # packet type 4 = sent by us, 0 = to us; ARPHRD_ETHER; 6-byte address padded to 8
        mac = _MAC_CLIENT if outgoing else _MAC_SERVER
        return struct.pack("!HHH8sH", 4 if outgoing else 0, 1, 6, mac, ethertype) + ip
    if linktype == LINKTYPE_LINUX_SLL2:
        mac = _MAC_CLIENT if outgoing else _MAC_SERVER
        return struct.pack("!HHIHBB8s", ethertype, 0, 1, 1, 4 if outgoing else 0, 6, mac) + ip
    if linktype == LINKTYPE_NULL:
        return struct.pack(null_order + "I", _AF_INET6_BSD if v6 else _AF_INET) + ip
    if linktype == LINKTYPE_LOOP:
        return struct.pack(">I", _AF_INET6_BSD if v6 else _AF_INET) + ip
    if linktype in (LINKTYPE_RAW, 12, 14):
        return ip
    if linktype == LINKTYPE_IPV4 and not v6:
        return ip
    if linktype == LINKTYPE_IPV6 and v6:
        return ip
    raise ValueError(f"cannot carry {'IPv6' if v6 else 'IPv4'} in link type {linktype}")


def _tsresol_divisor(tsresol: int) -> int:
    return 2 ** (tsresol & 0x7F) if tsresol & 0x80 else 10**tsresol


_RESOLUTIONS = {"us": 6, "ns": 9}


# --------------------------------------------------------------------------- the file writer


class PcapngWriter:
    """Writes a pcapng (default) or classic pcap (`format='pcap'`) capture to a binary file object.

    `linktype`, `snaplen` and `resolution` ('ns' or 'us') describe the first interface (the only
    one in pcap); `byteorder` is '<' or '>' for the file's byte order (and for null link headers);
    `mss` is the default segment size of connections. Frames longer than the interface's snaplen
    are written truncated, like a real capture.
    """

    def __init__(self, fileobj: BinaryIO, *, format: Literal["pcapng", "pcap"] = "pcapng",
                 linktype: int = LINKTYPE_ETHERNET, snaplen: int = 262144,
                 resolution: Literal["ns", "us"] = "ns", byteorder: Literal["<", ">"] = "<",
                 mss: int = 1460) -> None:
        if format not in ("pcapng", "pcap"):
            raise ValueError(f"format must be 'pcapng' or 'pcap', not {format!r}")
        if resolution not in _RESOLUTIONS:
            raise ValueError(f"resolution must be 'ns' or 'us', not {resolution!r}")
        self._f = fileobj
        self.format = format
        self.byteorder = byteorder
        self.mss = mss
        self.frames = 0  # frames written so far; the number of the last one
        self._interfaces: list[tuple[int, int, int, int]] = []  # (linktype, snaplen, divisor, tsoffset)
        self._ip_id = 0
        self._connections = 0
        if format == "pcap":
            magic = 0xA1B23C4D if resolution == "ns" else 0xA1B2C3D4
            self._f.write(struct.pack(byteorder + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
            self._interfaces.append((linktype, snaplen, 10 ** _RESOLUTIONS[resolution], 0))
        else:
            self.new_section()
            self.add_interface(linktype, snaplen=snaplen, tsresol=_RESOLUTIONS[resolution])

    # ------------------------------------------------------------------ pcapng structure

    def _block(self, btype: int, body: bytes) -> None:
        body += b"\x00" * (-len(body) % 4)
        total = len(body) + 12
        o = self.byteorder
        self._f.write(struct.pack(o + "II", btype, total) + body + struct.pack(o + "I", total))

    def _option(self, code: int, value: bytes) -> bytes:
        return struct.pack(self.byteorder + "HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)

    def new_section(self, byteorder: Literal["<", ">"] | None = None) -> None:
        """Start a new pcapng section (optionally switching byte order); interfaces must be re-added."""
        if self.format != "pcapng":
            raise ValueError("sections exist only in pcapng")
        if byteorder is not None:
            self.byteorder = byteorder
        self._interfaces = []
        options = self._option(4, b"zmtplab") + self._option(0, b"")
        self._block(0x0A0D0D0A, struct.pack(self.byteorder + "IHHq", 0x1A2B3C4D, 1, 0, -1) + options)

    def add_interface(self, linktype: int, *, snaplen: int = 262144, tsresol: int = 9,
                      tsoffset: int = 0, name: str | None = None) -> int:
        """Describe a new pcapng interface and return its id.

        `tsresol` is the raw if_tsresol octet: n for 10^-n seconds, 0x80 | n for 2^-n seconds.
        """
        if self.format != "pcapng":
            raise ValueError("a classic pcap file has exactly one interface")
        options = self._option(9, bytes([tsresol]))
        if name:
            options += self._option(2, name.encode())
        if tsoffset:
            options += self._option(14, struct.pack(self.byteorder + "q", tsoffset))
        options += self._option(0, b"")
        self._block(1, struct.pack(self.byteorder + "HHI", linktype, 0, snaplen) + options)
        self._interfaces.append((linktype, snaplen, _tsresol_divisor(tsresol), tsoffset))
        return len(self._interfaces) - 1

    def write_block(self, block_type: int, body: bytes) -> None:
        """Write an arbitrary pcapng block (readers must skip types they do not know)."""
        if self.format != "pcapng":
            raise ValueError("blocks exist only in pcapng")
        self._block(block_type, body)

    def linktype(self, interface: int = 0) -> int:
        """The link type of an interface."""
        return self._interfaces[interface][0]

    # ------------------------------------------------------------------ frames

    def write_frame(self, frame: bytes, ts: float, *, interface: int = 0, orig_len: int | None = None,
                    block: Literal["epb", "spb", "pb"] = "epb") -> int:
        """Write one frame (cut to the interface's snaplen) and return its frame number.

        `block` chooses the pcapng block: enhanced (default), simple (no timestamp, interface 0)
        or the obsolete packet block.
        """
        _linktype, snaplen, div, tsoffset = self._interfaces[interface]
        orig = len(frame) if orig_len is None else orig_len
        data = frame[:snaplen] if snaplen else frame
        # A time past what the format holds (a session's delay fault of 1e300 s) is written as the last it holds.
        last = (1 << 32) - 1 if self.format == "pcap" else ((1 << 64) - 1) // div + tsoffset - 1
        if not ts <= last:  # (infinity and NaN too)
            ts = float(last)
        # Whole seconds and the fraction separately: ts * div as a float would lose nanoseconds.
        whole = math.floor(ts)
        units = (whole - tsoffset) * div + round((ts - whole) * div)
        o = self.byteorder
        if self.format == "pcap":
            sec, frac = divmod(units, div)
            self._f.write(struct.pack(o + "IIII", sec, frac, len(data), orig) + data)
        elif block == "epb":
            self._block(6, struct.pack(o + "IIIII", interface, units >> 32, units & 0xFFFFFFFF,
                                       len(data), orig) + data)
        elif block == "spb":
            if interface != 0:
                raise ValueError("a simple packet block always belongs to interface 0")
            self._block(3, struct.pack(o + "I", orig) + data)
        elif block == "pb":
            self._block(2, struct.pack(o + "HHIIII", interface, 0, units >> 32, units & 0xFFFFFFFF,
                                       len(data), orig) + data)
        else:
            raise ValueError(f"unknown block kind {block!r}")
        self.frames += 1
        return self.frames

    def write_ip(self, ip_packet: bytes, ts: float, *, interface: int = 0, outgoing: bool = True,
                 vlans: Sequence[int] = (), block: Literal["epb", "spb", "pb"] = "epb") -> int:
        """Wrap an IP packet in the interface's link-layer header, write it, return its frame number."""
        frame = _link_frame(self._interfaces[interface][0], ip_packet, outgoing=outgoing,
                            null_order=self.byteorder, vlans=vlans)
        return self.write_frame(frame, ts, interface=interface, block=block)

    def next_ip_id(self) -> int:
        """A fresh IPv4 identification value."""
        self._ip_id = (self._ip_id + 1) & 0xFFFF
        return self._ip_id

    # ------------------------------------------------------------------ connections

    def add_connection(self, client: Address, server: Address, *, isn_client: int | None = None,
                       isn_server: int | None = None, mss: int | None = None, interface: int = 0,
                       vlans: Sequence[int] = ()) -> TcpConnectionWriter:
        """Start describing a TCP connection from `client` to `server`; nothing is written yet."""
        self._connections += 1
        n = self._connections
        # Deterministic but distinct initial sequence numbers, so captures are reproducible.
        isn_c = (0x10000000 * n + 0x1111) & 0xFFFFFFFF if isn_client is None else isn_client
        isn_s = (0x87000000 + 0x01000000 * n + 0x2222) & 0xFFFFFFFF if isn_server is None else isn_server
        return TcpConnectionWriter(self, client, server, isn_c, isn_s, mss or self.mss, interface, vlans)

    def flush(self) -> None:
        """Flush the underlying file object."""
        self._f.flush()


class TcpConnectionWriter:
    """One synthetic TCP connection inside a `PcapngWriter`; every method returns frame numbers."""

    def __init__(self, writer: PcapngWriter, client: Address, server: Address, isn_client: int,
                 isn_server: int, mss: int, interface: int, vlans: Sequence[int]) -> None:
        self.writer = writer
        self.client = (str(ipaddress.ip_address(client[0])), client[1])
        self.server = (str(ipaddress.ip_address(server[0])), server[1])
        if ipaddress.ip_address(client[0]).version != ipaddress.ip_address(server[0]).version:
            raise ValueError("client and server must both be IPv4 or both IPv6")
        self.mss = mss
        self.interface = interface
        self.vlans = tuple(vlans)
        self.isn = {"c2s": isn_client & 0xFFFFFFFF, "s2c": isn_server & 0xFFFFFFFF}
        # next sequence number each side will send
        self.seq = {"c2s": (isn_client + 1) & 0xFFFFFFFF, "s2c": (isn_server + 1) & 0xFFFFFFFF}

    def _ends(self, direction: Direction) -> tuple[Address, Address]:
        if direction == "c2s":
            return self.client, self.server
        if direction == "s2c":
            return self.server, self.client
        raise ValueError(f"direction must be 'c2s' or 's2c', not {direction!r}")

    @staticmethod
    def _other(direction: Direction) -> Direction:
        return "s2c" if direction == "c2s" else "c2s"

    def segment(self, direction: Direction, ts: float, payload: bytes = b"", *, flags: int = PSH | ACK,
                seq: int | None = None, ack: int | None = None, advance: bool = True,
                options: bytes = b"", block: Literal["epb", "spb", "pb"] = "epb") -> int:
        """Write one TCP segment exactly as asked; return its frame number.

        `seq` / `ack` default to the connection's current numbers; with `advance` (and no explicit
        seq) the sender's sequence number moves past the payload (and past SYN/FIN).
        """
        (src, sport), (dst, dport) = self._ends(direction)
        explicit = seq is not None
        if seq is None:
            seq = self.seq[direction]
        if ack is None:
            ack = self.seq[self._other(direction)] if flags & ACK else 0
        tcp = tcp_segment(src, dst, sport, dport, seq, ack, flags, payload, options=options)
        if ":" in src:
            ip = ipv6_packet(src, dst, 6, tcp)
        else:
            ip = ipv4_packet(src, dst, 6, tcp, ident=self.writer.next_ip_id())
        number = self.writer.write_ip(ip, ts, interface=self.interface, outgoing=direction == "c2s",
                                      vlans=self.vlans, block=block)
        if advance and not explicit:
            used = len(payload) + (1 if flags & FIN else 0)
            self.seq[direction] = (seq + used) & 0xFFFFFFFF
        return number

    def handshake(self, ts: float) -> list[int]:
        """SYN, SYN/ACK, ACK (the SYNs advertise the MSS)."""
        mss_option = struct.pack("!BBH", 2, 4, self.mss)
        return [
            self.segment("c2s", ts, flags=SYN, seq=self.isn["c2s"], ack=0, options=mss_option),
            self.segment("s2c", ts + 1e-6, flags=SYN | ACK, seq=self.isn["s2c"], options=mss_option),
            self.segment("c2s", ts + 2e-6, flags=ACK),
        ]

    def send(self, direction: Direction, data: bytes, ts: float, *, ack: bool = True) -> list[int]:
        """Send `data` as MSS-sized segments (PSH on the last), then the receiver's ACK if `ack`."""
        numbers = []
        step = 1e-6
        chunks = [data[i:i + self.mss] for i in range(0, len(data), self.mss)] or [b""]
        for i, chunk in enumerate(chunks):
            flags = ACK | (PSH if i == len(chunks) - 1 else 0)
            numbers.append(self.segment(direction, ts + i * step, chunk, flags=flags))
        if ack:
            numbers.append(self.segment(self._other(direction), ts + len(chunks) * step, flags=ACK))
        return numbers

    def close(self, ts: float, *, first: Direction = "c2s") -> list[int]:
        """FIN from `first`, FIN from the other side, final ACK."""
        other = self._other(first)
        return [
            self.segment(first, ts, flags=FIN | ACK),
            self.segment(other, ts + 1e-6, flags=FIN | ACK),
            self.segment(first, ts + 2e-6, flags=ACK),
        ]

    def reset(self, direction: Direction, ts: float) -> int:
        """Abort the connection with a RST/ACK from `direction`."""
        return self.segment(direction, ts, flags=RST | ACK, advance=False)
