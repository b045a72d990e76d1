"""The pcap/pcapng reader: real libzmq captures, tshark as the referee, every format and link type."""

from __future__ import annotations

import gzip
import io
import struct
import subprocess
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zmtplab.capture.errors import CaptureFormatError, TruncatedCaptureError
from zmtplab.capture.pcapfile import (
    CaptureReader,
    TcpPacket,
    decode_tcp,
    read_tcp_packets,
    sniff_format,
)
from zmtplab.capture.pcapwriter import (
    ACK,
    FIN,
    PSH,
    SYN,
    PcapngWriter,
    ethernet_frame,
    ipv4_packet,
    ipv6_packet,
    tcp_segment,
)
from zmtplab.capture.tcpstream import StreamOpened, TcpReassembler

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO.parent / "shared" / "captures"

# The README table of the reference captures: file -> packets.
README_COUNTS = {
    "push_pull.pcapng": 18,
    "push_pull_multipart.pcapng": 18,
    "dealer_router.pcapng": 24,
    "req_rep.pcapng": 22,
    "pub_sub.pcapng": 21,
    "large.pcapng": 53,
    "bulk.pcapng": 7035,
}
README_PORTS = {
    "push_pull.pcapng": 15556, "push_pull_multipart.pcapng": 15557, "dealer_router.pcapng": 15558,
    "req_rep.pcapng": 15559, "pub_sub.pcapng": 15560, "large.pcapng": 15560, "bulk.pcapng": 15561,
}
CLIENT4 = ("192.0.2.10", 40001)
SERVER4 = ("192.0.2.20", 16000)
CLIENT6 = ("2001:db8::10", 40001)
SERVER6 = ("2001:db8::20", 16000)


def capture(name: str) -> Path:
    path = CAPTURES / name
    assert path.is_file(), f"reference capture missing: {path}"
    return path


def all_packets(source) -> list[TcpPacket]:
    return list(read_tcp_packets(source))


# ------------------------------------------------------------------ reference captures


@pytest.mark.parametrize(("name", "count"), README_COUNTS.items())
def test_reference_captures_have_the_readme_packet_counts(name, count):
    reader = CaptureReader(capture(name))
    assert reader.format == "pcapng"
    packets = list(reader.tcp_packets())
    assert len(packets) == count
    assert [p.number for p in packets] == list(range(1, count + 1))
    assert reader.stats.frames == count and reader.stats.tcp_packets == count
    assert {p.src for p in packets} == {"127.0.0.1"}
    assert README_PORTS[name] in {p.sport for p in packets} | {p.dport for p in packets}
    assert all(p.missing == 0 for p in packets)
    assert all(packets[i].ts <= packets[i + 1].ts for i in range(count - 1))


def test_push_pull_greeting_is_split_10_1_53_in_both_directions():
    packets = all_packets(capture("push_pull.pcapng"))
    assert packets[0].flags == SYN and packets[1].flags == SYN | ACK
    for sender in (15556, 45190):
        data = [p for p in packets if p.sport == sender and p.payload][:3]
        assert [len(p.payload) for p in data] == [10, 1, 53]
        assert data[0].payload == bytes.fromhex("FF 00 00 00 00 00 00 00 01 7F")
        assert data[1].payload == b"\x03"
        assert data[2].payload[1:5] == b"NULL"
    # frame 4 is the server's signature (the README's byte string), frame 14 carries "My Message"
    assert packets[3].payload == bytes.fromhex("FF00000000000000017F")
    assert packets[13].payload == b"\x00\x0aMy Message"


def test_frames_iterates_every_frame_undecoded():
    frames = list(CaptureReader(capture("push_pull.pcapng")).frames())
    assert len(frames) == 18
    assert frames[0].linktype == 1 and frames[0].orig_len == len(frames[0].data) == 74


def _tshark(path: Path, *fields: str, prefs: tuple[str, ...] = ()) -> list[list[str]]:
    args = ["tshark", "-n", "-r", str(path), *prefs, "-T", "fields"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def _our_rows(path: Path) -> list[tuple]:
    """(frame, tcp.stream, seq_raw, tcp.len, time, src, dst) from our reader + reassembler."""
    r = TcpReassembler()
    conn_of: dict[frozenset, str] = {}
    rows = []
    for p in read_tcp_packets(path):
        pair = frozenset({(p.src, p.sport), (p.dst, p.dport)})
        for ev in r.feed(p):
            if isinstance(ev, StreamOpened):
                conn_of[pair] = ev.conn
        rows.append((p.number, int(conn_of[pair]), p.seq, len(p.payload) + p.missing, p.ts, p.src, p.dst))
    return rows


def _cross_check(path: Path) -> None:
    fields = ("frame.number", "tcp.stream", "tcp.seq_raw", "tcp.len", "frame.time_epoch", "ip.src", "ip.dst",
              "ipv6.src", "ipv6.dst")
    theirs = [row for row in _tshark(path, *fields) if row[1]]
    ours = _our_rows(path)
    assert len(ours) == len(theirs), path.name
    for mine, row in zip(ours, theirs, strict=True):
        number, stream, seq, length, ts, src, dst = mine
        assert (number, stream, seq, length) == (int(row[0]), int(row[1]), int(row[2]), int(row[3])), path.name
        assert abs(ts - float(row[4])) < 1e-6
        assert (src, dst) == ((row[5], row[6]) if row[5] else (row[7], row[8]))


@pytest.mark.capture
def test_reader_agrees_with_tshark_on_every_reference_and_project_capture(tmp_path):
    paths = [capture(name) for name in README_COUNTS]
    project = sorted((REPO / "captures").glob("*.pcap*"))
    assert project, "the project's captures/ directory holds no capture"
    # One tshark start per file is the slow part: the project's captures are checked concatenated.
    merged = tmp_path / "project.pcapng"
    subprocess.run(["mergecap", "-a", "-F", "pcapng", "-w", str(merged), *map(str, project)], check=True)
    with ThreadPoolExecutor(max_workers=4) as pool:
        for future in [pool.submit(_cross_check, p) for p in [*paths, merged]]:
            future.result()


@pytest.mark.capture
def test_connection_numbering_agrees_with_tshark_when_ports_are_reused(tmp_path):
    buf = io.BytesIO()
    w = PcapngWriter(buf)
    first = w.add_connection(CLIENT4, SERVER4)  # closed with FINs
    first.handshake(1.0)
    first.send("c2s", b"first", 1.1)
    first.close(1.2)
    second = w.add_connection(CLIENT4, SERVER4)  # same port pair, reset
    second.handshake(2.0)
    second.send("s2c", b"second", 2.1)
    second.reset("c2s", 2.2)
    third = w.add_connection(CLIENT4, SERVER4)  # left open...
    third.handshake(3.0)
    third.send("c2s", b"third", 3.1)
    fourth = w.add_connection(CLIENT4, SERVER4, isn_client=12345)  # ...and replaced by a new SYN
    fourth.handshake(4.0)
    fourth.send("c2s", b"fourth", 4.1)
    fourth.close(4.2)
    path = tmp_path / "reuse.pcapng"
    path.write_bytes(buf.getvalue())
    _cross_check(path)
    assert sorted({row[1] for row in _our_rows(path)}) == [0, 1, 2, 3]


def test_bulk_is_read_fast_and_in_bounded_memory():
    path = capture("bulk.pcapng")
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        count = sum(1 for _ in read_tcp_packets(path))
        best = min(best, time.perf_counter() - start)
    assert count == 7035
    # The target is "well under 0.1 s" (about 0.02 s here); leave room for a loaded CI machine.
    assert best < 0.25, f"reading bulk.pcapng took {best:.3f} s"
    tracemalloc.start()
    try:
        for _ in read_tcp_packets(path):
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"peak {peak} bytes: the 5.9 MB file must be streamed, not loaded"


# ------------------------------------------------------------------ format detection and errors


@pytest.mark.parametrize("magic", ["a1b2c3d4", "d4c3b2a1", "a1b23c4d", "4d3cb2a1", "a1b2cd34", "34cdb2a1"])
def test_sniff_format_knows_every_pcap_magic(magic):
    assert sniff_format(bytes.fromhex(magic) + bytes(20)) == "pcap"


def test_sniff_format_pcapng_gzip_and_garbage():
    head = capture("push_pull.pcapng").read_bytes()[:64]
    assert sniff_format(head) == "pcapng"
    assert sniff_format(head[:12]) == "pcapng"
    assert sniff_format(head[:11]) is None
    big = bytes.fromhex("0a0d0d0a 0000001c 1a2b3c4d") + bytes(16)
    assert sniff_format(big) == "pcapng"
    assert sniff_format(bytes.fromhex("0a0d0d0a 0000001c 12345678")) is None
    assert sniff_format(gzip.compress(head)) == "pcapng"
    assert sniff_format(b"") is None
    assert sniff_format(b"GET / HTTP/1.1\r\n") is None
    assert sniff_format(b"\x1f\x8b garbage") is None


@pytest.mark.parametrize("content", [b"", b"hello world, this is not a capture\n", b"\xa1\xb2", bytes(100),
                                     b"PK\x03\x04" + bytes(60)])
def test_not_a_capture_raises_at_the_call_before_any_iteration(tmp_path, content):
    path = tmp_path / "upload.bin"
    path.write_bytes(content)
    with pytest.raises(CaptureFormatError) as info:
        read_tcp_packets(path)  # no iteration needed: the call itself checks
    message = str(info.value)
    assert message.endswith(".") and "\n" not in message


def test_directory_is_not_a_capture(tmp_path):
    with pytest.raises(CaptureFormatError):
        read_tcp_packets(tmp_path)


def test_truncated_pcap_header_is_reported_at_the_call():
    with pytest.raises(TruncatedCaptureError):
        read_tcp_packets(bytes.fromhex("d4c3b2a1") + bytes(10))


def _block_offsets(data: bytes) -> list[int]:
    """Byte offsets where each pcapng block starts (and the end of the file)."""
    offsets, pos = [], 0
    while pos < len(data):
        offsets.append(pos)
        pos += struct.unpack_from("<I", data, pos + 4)[0]
    return [*offsets, len(data)]


def test_truncation_at_every_byte_yields_a_prefix_then_a_truncation_error():
    data = capture("push_pull.pcapng").read_bytes()
    full = all_packets(data)
    boundaries = set(_block_offsets(data))
    for cut in range(12, len(data)):
        got = []
        try:
            for p in read_tcp_packets(data[:cut]):
                got.append(p)
        except TruncatedCaptureError as exc:
            assert cut not in boundaries
            assert exc.frame == len(got)
            assert f"frame {len(got)}" in str(exc) or "block" in str(exc)
        else:
            assert cut in boundaries
        assert got == full[:len(got)]


def test_truncated_classic_pcap_yields_complete_records_then_fails():
    buf = io.BytesIO()
    w = PcapngWriter(buf, format="pcap")
    conn = w.add_connection(CLIENT4, SERVER4)
    conn.handshake(10.0)
    conn.send("c2s", b"x" * 100, 11.0)
    data = buf.getvalue()
    full = all_packets(data)
    assert len(full) == 5
    got = []
    with pytest.raises(TruncatedCaptureError) as info:
        for p in read_tcp_packets(data[:-10]):
            got.append(p)
    assert got == full[:4] and info.value.frame == 4


def _epb_offset(data: bytes) -> int:
    return next(o for o in _block_offsets(data) if o < len(data) and data[o:o + 4] == b"\x06\x00\x00\x00")


@pytest.mark.parametrize("length", [0xFFFFFFFF, 0xFFFFFFFC, 0x7FFFFFF0, 1 << 28, 8, 13])
def test_absurd_block_lengths_are_errors_not_allocations(length):
    data = bytearray(capture("push_pull.pcapng").read_bytes())
    struct.pack_into("<I", data, _epb_offset(bytes(data)) + 4, length)
    tracemalloc.start()
    try:
        with pytest.raises(CaptureFormatError):
            all_packets(bytes(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 << 20


def test_block_longer_than_the_rest_of_the_file_is_a_truncation():
    data = bytearray(capture("push_pull.pcapng").read_bytes())
    last = max(o for o in _block_offsets(bytes(data))[:-1] if data[o] == 6)  # the last EPB (frame 18)
    struct.pack_into("<I", data, last + 4, 4096)
    got = []
    with pytest.raises(TruncatedCaptureError) as info:
        for p in read_tcp_packets(bytes(data)):
            got.append(p)
    assert len(got) == 17 and info.value.frame == 17 and info.value.offset == last


def test_absurd_pcap_record_length_is_an_error():
    buf = io.BytesIO()
    w = PcapngWriter(buf, format="pcap")
    w.add_connection(CLIENT4, SERVER4).handshake(1.0)
    data = bytearray(buf.getvalue())
    struct.pack_into("<I", data, 24 + 8, 0xFFFFFFF0)
    with pytest.raises(CaptureFormatError, match="claims"):
        all_packets(bytes(data))


def test_mismatched_trailing_length_and_undefined_interface_are_errors():
    data = bytearray(capture("push_pull.pcapng").read_bytes())
    epb = _epb_offset(bytes(data))
    bad = bytearray(data)
    length = struct.unpack_from("<I", bad, epb + 4)[0]
    struct.pack_into("<I", bad, epb + length - 4, length + 4)
    with pytest.raises(CaptureFormatError, match="trailing length"):
        all_packets(bytes(bad))
    bad = bytearray(data)
    struct.pack_into("<I", bad, epb + 8, 7)
    with pytest.raises(CaptureFormatError, match="interface 7"):
        all_packets(bytes(bad))


# ------------------------------------------------------------------ sources


class OnlyRead:
    """A non-seekable stream, like a pipe from dumpcap, that returns short reads."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self, n: int = -1) -> bytes:
        n = min(n if n >= 0 else len(self._data), 777)
        out, self._data = self._data[:n], self._data[n:]
        return out


def test_paths_bytes_file_objects_pipes_and_gzip_all_read_the_same():
    path = capture("push_pull.pcapng")
    data = path.read_bytes()
    expected = all_packets(path)
    assert all_packets(str(path)) == expected
    assert all_packets(data) == expected
    assert all_packets(io.BytesIO(data)) == expected
    assert all_packets(OnlyRead(data)) == expected
    assert all_packets(gzip.compress(data)) == expected
    assert all_packets(OnlyRead(gzip.compress(data))) == expected
    with path.open("rb") as f:
        assert all_packets(f) == expected
        assert not f.closed  # the caller's file stays the caller's


def test_corrupt_gzip_is_a_capture_format_error():
    data = bytearray(gzip.compress(capture("push_pull.pcapng").read_bytes()))
    data[40] ^= 0xFF
    with pytest.raises(CaptureFormatError):
        all_packets(bytes(data))
    with pytest.raises(CaptureFormatError):
        all_packets(gzip.compress(capture("push_pull.pcapng").read_bytes())[:200])


# ------------------------------------------------------------------ every format and link type


def _conversation(v6: bool = False, **writer_options) -> bytes:
    buf = io.BytesIO()
    w = PcapngWriter(buf, **writer_options)
    client, server = (CLIENT6, SERVER6) if v6 else (CLIENT4, SERVER4)
    c = w.add_connection(client, server, mss=1000)
    c.handshake(1000.000000123)
    c.send("s2c", bytes.fromhex("FF00000000000000017F"), 1000.5)
    c.send("c2s", bytes(range(256)) * 10, 1001.25)
    c.close(1002.0)
    return buf.getvalue()


def _shape(packets: list[TcpPacket]) -> list[tuple]:
    return [(p.number, p.sport, p.dport, p.seq, p.ack, p.flags, p.payload, p.missing) for p in packets]


LINK_VARIANTS = [
    ("pcapng", 1, "ns", "<"), ("pcapng", 1, "us", ">"), ("pcap", 1, "us", "<"), ("pcap", 1, "ns", ">"),
    ("pcap", 113, "us", "<"), ("pcapng", 113, "ns", ">"), ("pcap", 276, "ns", "<"), ("pcapng", 276, "us", "<"),
    ("pcap", 0, "us", "<"), ("pcap", 0, "ns", ">"), ("pcapng", 0, "ns", "<"),
    ("pcap", 108, "us", "<"), ("pcapng", 108, "us", ">"),
    ("pcap", 101, "us", "<"), ("pcapng", 101, "ns", "<"), ("pcap", 12, "us", "<"),
]


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize(("fmt", "linktype", "resolution", "order"), LINK_VARIANTS)
def test_every_link_type_and_format_reads_back_identically(fmt, linktype, resolution, order, v6):
    baseline = all_packets(_conversation(v6))
    data = _conversation(v6, format=fmt, linktype=linktype, resolution=resolution, byteorder=order)
    reader = CaptureReader(data)
    assert reader.format == fmt
    packets = list(reader.tcp_packets())
    assert _shape(packets) == _shape(baseline)
    src, dst = (CLIENT6, SERVER6) if v6 else (CLIENT4, SERVER4)
    assert (packets[0].src, packets[0].dst) == (src[0], dst[0])
    assert packets[0].ts == pytest.approx(1000.000000123 if resolution == "ns" else 1000.0, abs=1e-10)
    assert packets[-1].ts == pytest.approx(1002.000002, abs=1e-9)


@pytest.mark.parametrize(("linktype", "v6"), [(228, False), (229, True)])
def test_raw_ipv4_and_ipv6_link_types(linktype, v6):
    packets = all_packets(_conversation(v6, linktype=linktype))
    assert _shape(packets) == _shape(all_packets(_conversation(v6)))


def test_conversation_contents_are_what_was_written():
    packets = all_packets(_conversation())
    assert [p.flags for p in packets[:3]] == [SYN, SYN | ACK, ACK]
    assert packets[3].payload == bytes.fromhex("FF00000000000000017F") and packets[3].sport == 16000
    data = [p for p in packets if p.sport == 40001 and p.payload]
    assert [len(p.payload) for p in data] == [1000, 1000, 560]
    assert b"".join(p.payload for p in data) == bytes(range(256)) * 10
    assert packets[-3].flags == FIN | ACK and packets[-1].flags == ACK


def test_null_link_type_family_in_the_other_byte_order():
    # A little-endian file whose null headers were written by a big-endian host, and vice versa.
    tcp = tcp_segment(CLIENT4[0], SERVER4[0], 1, 2, 10, 0, SYN)
    ip = ipv4_packet(CLIENT4[0], SERVER4[0], 6, tcp)
    tcp6 = tcp_segment(CLIENT6[0], SERVER6[0], 1, 2, 10, 0, SYN)
    ip6 = ipv6_packet(CLIENT6[0], SERVER6[0], 6, tcp6)
    for linktype in (0, 108):
        buf = io.BytesIO()
        w = PcapngWriter(buf, format="pcap", linktype=linktype)
        w.write_frame(struct.pack(">I", 2) + ip, 1.0)
        w.write_frame(struct.pack("<I", 2) + ip, 1.0)
        w.write_frame(struct.pack("<I", 30) + ip6, 1.0)  # macOS AF_INET6
        w.write_frame(struct.pack(">I", 28) + ip6, 1.0)  # FreeBSD AF_INET6
        w.write_frame(struct.pack("<I", 10) + ip6, 1.0)  # Linux AF_INET6
        w.write_frame(struct.pack("<I", 99) + ip6, 1.0)  # unknown family: the version nibble decides
        packets = all_packets(buf.getvalue())
        assert [p.dst for p in packets] == [SERVER4[0]] * 2 + [SERVER6[0]] * 4


def test_pcapng_sections_interfaces_resolutions_and_block_kinds():
    buf = io.BytesIO()
    w = PcapngWriter(buf, linktype=1, resolution="us")
    sll = w.add_interface(113, tsresol=0x80 | 20)  # 2^-20 s units
    w.write_block(0x00000004, b"\x00" * 4)  # a name resolution block: skipped
    w.write_block(0x0BAD0BAD, b"custom stuff")  # unknown block: skipped
    c = w.add_connection(CLIENT4, SERVER4)
    c.handshake(5.5)  # frames 1-3 on interface 0 (Ethernet)
    c2 = w.add_connection(("198.51.100.1", 5000), ("198.51.100.2", 6000), interface=sll)
    c2.segment("c2s", 7.25, b"over sll", flags=PSH | ACK)  # frame 4 on interface 1
    c.segment("c2s", 8.0, b"spb", flags=PSH | ACK, block="spb")  # frame 5: no timestamp
    c.segment("c2s", 9.0, b"old", flags=PSH | ACK, block="pb")  # frame 6: obsolete packet block
    w.new_section(byteorder=">")
    w.add_interface(101, tsresol=3, tsoffset=1000)  # milliseconds, +1000 s
    w.add_interface(108, tsresol=0x80 | 1)  # half seconds (only interface 0 is used below)
    c3 = w.add_connection(CLIENT6, SERVER6)
    c3.segment("c2s", 1042.125, b"v6 raw", flags=PSH | ACK)  # frame 7
    w.write_block(0x00000005, b"\x00" * 20)  # interface statistics: skipped
    reader = CaptureReader(buf.getvalue())
    packets = list(reader.tcp_packets())
    assert [p.number for p in packets] == [1, 2, 3, 4, 5, 6, 7]
    assert [p.payload for p in packets[3:]] == [b"over sll", b"spb", b"old", b"v6 raw"]
    assert packets[0].ts == pytest.approx(5.5)
    assert packets[3].ts == 7.25 and packets[3].src == "198.51.100.1"
    assert packets[4].ts == packets[3].ts  # an SPB repeats the previous timestamp
    assert packets[5].ts == 9.0
    assert packets[6].ts == 1042.125 and packets[6].src == CLIENT6[0]
    assert reader.stats.frames == 7


def test_snaplen_cut_payload_is_reported_as_missing():
    data = _conversation(snaplen=54 + 10)
    packets = all_packets(data)
    big = [p for p in packets if p.sport == 40001 and (p.payload or p.missing)]
    assert [(len(p.payload), p.missing) for p in big] == [(10, 990), (10, 990), (10, 550)]
    assert big[0].payload == bytes(range(10))


def test_snaplen_inside_the_tcp_header_skips_the_frame_and_counts_it():
    data = _conversation(snaplen=14 + 20 + 10)
    reader = CaptureReader(data)
    assert list(reader.tcp_packets()) == []
    assert reader.stats.frames == 12 and reader.stats.truncated_headers == 12


def _one_frame_capture(frame: bytes, linktype: int = 1, orig_len: int | None = None) -> CaptureReader:
    buf = io.BytesIO()
    w = PcapngWriter(buf, linktype=linktype)
    w.write_frame(frame, 1.0, orig_len=orig_len)
    return CaptureReader(buf.getvalue())


def _tcp4(payload: bytes = b"data", **ip_options) -> bytes:
    tcp = tcp_segment(CLIENT4[0], SERVER4[0], 1234, 4321, 7, 9, PSH | ACK, payload)
    return ipv4_packet(CLIENT4[0], SERVER4[0], 6, tcp, **ip_options)


def test_vlan_and_qinq_tags_are_peeled():
    for vlans in ([100], [100, 200], [1, 2, 3]):
        reader = _one_frame_capture(ethernet_frame(_tcp4(), 0x0800, vlans=vlans))
        [p] = reader.tcp_packets()
        assert p.payload == b"data" and p.sport == 1234


def test_ipv4_options_and_ethernet_padding():
    frame = ethernet_frame(_tcp4(b"x", options=b"\x07\x07\x04" + bytes(4) + b"\x01"), 0x0800)
    frame += b"\x00" * (60 - len(frame))  # minimum Ethernet frame: padding is not payload
    [p] = _one_frame_capture(frame).tcp_packets()
    assert p.payload == b"x" and p.missing == 0


def test_tso_packets_with_zero_total_length_use_the_captured_length():
    [p] = _one_frame_capture(ethernet_frame(_tcp4(b"offloaded", total_length=0), 0x0800)).tcp_packets()
    assert p.payload == b"offloaded"


def test_ip_length_beyond_an_uncut_frame_is_not_reported_as_missing():
    [p] = _one_frame_capture(ethernet_frame(_tcp4(b"abc", total_length=500), 0x0800)).tcp_packets()
    assert p.payload == b"abc" and p.missing == 0


def test_ipv4_fragments_first_is_read_later_ones_skipped():
    first = _tcp4(b"part one", dont_fragment=False, more_fragments=True)
    later = ipv4_packet(CLIENT4[0], SERVER4[0], 6, b"part two", frag_offset=24, dont_fragment=False)
    buf = io.BytesIO()
    w = PcapngWriter(buf)
    w.write_ip(first, 1.0)
    w.write_ip(later, 1.1)
    w.write_ip(_tcp4(b"whole"), 1.2)
    reader = CaptureReader(buf.getvalue())
    packets = list(reader.tcp_packets())
    assert [(p.number, p.payload) for p in packets] == [(1, b"part one"), (3, b"whole")]
    assert reader.stats.ip_fragments == 2 and reader.stats.skipped_fragments == 1


def test_ipv6_extension_headers_are_skipped():
    tcp = tcp_segment(CLIENT6[0], SERVER6[0], 1234, 4321, 7, 9, PSH | ACK, b"v6 data")
    exts = [(0, bytes(6)), (43, bytes([0, 0]) + bytes(4) + bytes(16)), (60, bytes(14)), (51, bytes(10)),
            (44, b"\x00\x00" + b"\x00\x00\x00\x2a")]  # an atomic fragment: offset 0, no more
    ip = ipv6_packet(CLIENT6[0], SERVER6[0], 6, tcp, ext_headers=exts)
    [p] = _one_frame_capture(ethernet_frame(ip, 0x86DD)).tcp_packets()
    assert p.payload == b"v6 data" and p.src == CLIENT6[0] and p.dport == 4321
    later = ipv6_packet(CLIENT6[0], SERVER6[0], 6, b"rest", ext_headers=[(44, b"\x00\x08" + b"\x00\x00\x00\x01")])
    reader = _one_frame_capture(ethernet_frame(later, 0x86DD))
    assert list(reader.tcp_packets()) == []
    assert reader.stats.skipped_fragments == 1


def test_non_tcp_frames_are_counted_but_not_yielded():
    udp = ipv4_packet(CLIENT4[0], SERVER4[0], 17, bytes(12))
    arp = ethernet_frame(bytes(28), 0x0806)
    buf = io.BytesIO()
    w = PcapngWriter(buf)
    w.write_frame(arp, 1.0)
    w.write_ip(udp, 1.1)
    w.write_ip(_tcp4(), 1.2)
    reader = CaptureReader(buf.getvalue())
    packets = list(reader.tcp_packets())
    assert [p.number for p in packets] == [3]  # frame numbers count every frame, like Wireshark
    assert reader.stats.non_tcp == 2 and reader.stats.frames == 3


def test_unknown_link_type_is_counted():
    reader = _one_frame_capture(b"\x00" * 40, linktype=147)
    assert list(reader.tcp_packets()) == []
    assert reader.stats.unsupported_linktypes == {147}


def test_decode_tcp_never_raises_on_short_frames():
    frame = ethernet_frame(_tcp4(), 0x0800)
    for linktype in (0, 1, 12, 101, 108, 113, 228, 229, 276):
        for cut in range(len(frame)):
            decode_tcp(1, 0.0, linktype, frame[:cut])


# ------------------------------------------------------------------ robustness properties


def _drain(data: bytes) -> None:
    try:
        for _ in read_tcp_packets(data):
            pass
    except CaptureFormatError:
        pass


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400), st.sampled_from([b"", bytes.fromhex("d4c3b2a1"), bytes.fromhex("4d3cb2a1"),
                                                bytes.fromhex("0a0d0d0a"), bytes.fromhex("0a0d0d0a1c0000004d3c2b1a"),
                                                bytes.fromhex("0a0d0d0a0000001c1a2b3c4d")]))
def test_random_bytes_only_ever_raise_capture_format_error(tail, prefix):
    _drain(prefix + tail)


@settings(max_examples=300, deadline=2000)
@given(st.sampled_from([0, 1, 12, 14, 101, 108, 113, 228, 229, 276, 9999]), st.binary(max_size=120),
       st.sampled_from([b"", bytes.fromhex("0000000000000000000000000800"), bytes.fromhex("45"),
                        bytes.fromhex("6000000000000600"), bytes.fromhex("02000000"), bytes.fromhex("0800")]))
def test_decode_tcp_returns_a_packet_or_none_for_any_frame(linktype, body, prefix):
    pkt = decode_tcp(1, 0.0, linktype, prefix + body)
    assert pkt is None or (isinstance(pkt, TcpPacket) and pkt.missing >= 0)


_REFERENCE = (CAPTURES / "push_pull.pcapng").read_bytes() if (CAPTURES / "push_pull.pcapng").exists() else b""
_PCAP_REFERENCE = _conversation(v6=True, format="pcap", linktype=113)


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.sampled_from(["pcapng", "pcap"]),
       edits=st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 255), st.sampled_from("xid")), max_size=6),
       cut=st.integers(0, 3000))
def test_mutated_captures_only_ever_raise_capture_format_error(source, edits, cut):
    assert _REFERENCE, "push_pull.pcapng missing"
    data = bytearray(_REFERENCE if source == "pcapng" else _PCAP_REFERENCE)
    for pos, value, kind in edits:
        pos %= len(data) or 1
        if kind == "x":
            data[pos] = value
        elif kind == "i":
            data[pos:pos] = bytes([value]) * (value % 7 + 1)
        else:
            del data[pos:pos + value % 9 + 1]
    _drain(bytes(data[:cut or None]))
    _drain(gzip.compress(bytes(data)))
