"""TCP reassembly: real libzmq captures, and every awkward thing TCP and captures do."""

from __future__ import annotations

import io
import random
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zmtplab.capture.pcapfile import TcpPacket, read_tcp_packets
from zmtplab.capture.pcapwriter import PcapngWriter
from zmtplab.capture.tcpstream import (
    StreamClosed,
    StreamControl,
    StreamData,
    StreamGap,
    StreamNote,
    StreamOpened,
    TcpReassembler,
    reassemble,
)

CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "captures"

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
CLIENT = ("10.0.0.1", 40000)
SERVER = ("10.0.0.2", 5555)
MASK = 0xFFFFFFFF


def capture(name: str) -> Path:
    path = CAPTURES / name
    assert path.is_file(), f"reference capture missing: {path}"
    return path


def seg(number: int, seq: int, payload: bytes = b"", flags: int = ACK | PSH, *, c2s: bool = True,
        ack: int = 0, missing: int = 0, ts: float | None = None,
        client: tuple[str, int] = CLIENT, server: tuple[str, int] = SERVER) -> TcpPacket:
    """A segment of the test connection (client -> server when c2s)."""
    src, dst = (client, server) if c2s else (server, client)
    return TcpPacket(number, float(number) if ts is None else ts, src[0], dst[0], src[1], dst[1],
                     seq & MASK, ack & MASK, flags, payload, missing)


def split(data: bytes, isn: int, sizes: list[int], first: int = 1) -> list[TcpPacket]:
    """Cut `data` into segments of the given sizes (cycled) starting after ISN `isn`."""
    out, pos, i = [], 0, 0
    while pos < len(data):
        size = sizes[i % len(sizes)]
        out.append(seg(first + i, isn + 1 + pos, data[pos:pos + size]))
        pos += size
        i += 1
    return out


def collect(events) -> tuple[dict, dict, list]:
    """Rebuild each (conn, dir) stream from events, checking offsets are contiguous and ordered
    (notes and control events are left out: `notes()` and `controls()` read them)."""
    streams: dict = defaultdict(bytearray)
    gaps: dict = defaultdict(list)
    others = []
    for ev in events:
        if isinstance(ev, StreamData):
            buf = streams[ev.conn, ev.dir]
            assert ev.offset == len(buf), f"out-of-order delivery: {ev.offset} != {len(buf)}"
            assert ev.data, "empty StreamData"
            buf += ev.data
        elif isinstance(ev, StreamGap):
            buf = streams[ev.conn, ev.dir]
            assert ev.offset == len(buf) and ev.length > 0
            gaps[ev.conn, ev.dir].append((ev.offset, ev.length))
            buf += b"\x00" * ev.length
        elif not isinstance(ev, StreamNote | StreamControl):
            others.append(ev)
    return dict(streams), dict(gaps), others


def notes(events) -> list[tuple]:
    """(what, dir, offset, length, packet) of each note."""
    return [(e.what, e.dir, e.offset, e.length, e.packet) for e in events if isinstance(e, StreamNote)]


def controls(events) -> list[tuple]:
    """(what, dir, packet) of each control event."""
    return [(e.what, e.dir, e.packet) for e in events if isinstance(e, StreamControl)]


def run(packets, **options) -> list:
    return list(reassemble(packets, TcpReassembler(**options)))


def handshake(isn_c: int, isn_s: int) -> list[TcpPacket]:
    return [
        seg(1, isn_c, flags=SYN),
        seg(2, isn_s, flags=SYN | ACK, c2s=False, ack=isn_c + 1),
        seg(3, isn_c + 1, flags=ACK, ack=isn_s + 1),
    ]


# ------------------------------------------------------------------ real captures


def test_push_pull_greeting_arrives_in_three_pieces():
    events = run(read_tcp_packets(capture("push_pull.pcapng")))
    opened = [e for e in events if isinstance(e, StreamOpened)]
    assert len(opened) == 1
    assert opened[0].conn == "0" and opened[0].syn_seen and opened[0].packet == 1
    assert opened[0].server == ("127.0.0.1", 15556)  # PUSH binds; PULL connects and is the client
    for direction in ("c2s", "s2c"):
        pieces = [e for e in events if isinstance(e, StreamData) and e.dir == direction][:3]
        assert [len(p.data) for p in pieces] == [10, 1, 53]
        assert [p.offset for p in pieces] == [0, 10, 11]
        assert pieces[0].data == bytes.fromhex("FF 00 00 00 00 00 00 00 01 7F")
        assert pieces[1].data == b"\x03"
    streams, gaps, others = collect(events)
    assert not gaps
    assert streams["0", "s2c"].endswith(b"\x00\x0aMy Message")
    assert isinstance(others[-1], StreamClosed) and others[-1].reason == "fin" and others[-1].packet == 17


def test_large_capture_reassembles_the_one_mebibyte_frame_exactly():
    streams, gaps, others = collect(run(read_tcp_packets(capture("large.pcapng"))))
    assert not gaps
    s2c = bytes(streams["0", "s2c"])
    # greeting (64) + READY command; then the long frame: flags 0x02, 8-byte size, body.
    ready_size = s2c[65]
    frame = 64 + 2 + ready_size
    assert s2c[frame] == 0x02
    assert int.from_bytes(s2c[frame + 1:frame + 9], "big") == 1 << 20
    body = s2c[frame + 9:]
    assert body == bytes(range(256)) * 4096
    assert [type(e).__name__ for e in others] == ["StreamOpened", "StreamClosed"]


@pytest.mark.capture
def test_large_capture_matches_tshark_payload_bytes():
    path = capture("large.pcapng")
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "tcp.srcport", "-e", "tcp.payload"],
                         capture_output=True, text=True, check=True).stdout
    expected = b"".join(bytes.fromhex(payload) for port, _, payload in
                        (line.partition("\t") for line in out.splitlines()) if port == "15560")
    streams, _, _ = collect(run(read_tcp_packets(path)))
    assert bytes(streams["0", "s2c"]) == expected


@pytest.mark.parametrize("name", ["push_pull.pcapng", "push_pull_multipart.pcapng", "dealer_router.pcapng",
                                  "req_rep.pcapng", "pub_sub.pcapng", "large.pcapng", "bulk.pcapng"])
def test_reference_captures_have_one_clean_connection(name):
    packets = list(read_tcp_packets(capture(name)))
    streams, gaps, others = collect(run(packets))
    assert not gaps
    assert [type(e) for e in others] == [StreamOpened, StreamClosed]
    assert others[1].reason == "fin"
    # Each direction's stream runs from the byte after the SYN to the highest byte sent.
    for direction in ("c2s", "s2c"):
        sender = others[0].client if direction == "c2s" else others[0].server
        mine = [p for p in packets if (p.src, p.sport) == sender]
        isn = next(p.seq for p in mine if p.flags & SYN)
        length = max((p.seq - isn - 1 + len(p.payload)) & MASK for p in mine if p.payload)
        assert len(streams.get(("0", direction), b"")) == length


def test_bulk_retransmission_is_delivered_once():
    # Frame 6223 of bulk.pcapng is a 241-byte retransmission (tshark: "suspected retransmission").
    packets = list(read_tcp_packets(capture("bulk.pcapng")))
    retrans = packets[6222]
    assert retrans.number == 6223 and len(retrans.payload) == 241
    first = next(p for p in packets if p.seq == retrans.seq and p.payload and p.number < 6223)
    assert first.payload == retrans.payload
    events = run(packets)
    carriers = {e.packet for e in events if isinstance(e, StreamData)}
    assert first.number in carriers and 6223 not in carriers
    total = sum(len(p.payload) for p in packets if p.sport == 15561)
    streams, _, _ = collect(events)
    assert len(streams["0", "s2c"]) == total - 241


def test_bulk_reads_and_reassembles_whole():
    # How fast is benchmarks/dissect_vs_tshark.py's job: a test run beside other work must not time it.
    total = 0
    r = TcpReassembler()
    for pkt in read_tcp_packets(capture("bulk.pcapng")):
        for ev in r.feed(pkt):
            if isinstance(ev, StreamData):
                total += len(ev.data)
    r.finish()
    assert total == 92 + 5197741


# ------------------------------------------------------------------ ordering, duplicates, overlaps


def test_shuffled_segments_reassemble_in_order():
    data = bytes(random.Random(1).randrange(256) for _ in range(5000))
    segs = split(data, 1000, [100, 7, 333, 1])
    rnd = random.Random(7)
    body = segs[:]
    rnd.shuffle(body)
    streams, gaps, _ = collect(run(handshake(1000, 9000) + body))
    assert not gaps
    assert bytes(streams["0", "c2s"]) == data


def test_duplicates_and_retransmissions_are_delivered_once():
    data = bytes(range(200))
    segs = split(data, 50, [40])
    packets = [*handshake(50, 9000), segs[0], segs[0], segs[1], segs[0], segs[2], segs[2], segs[3], segs[4], segs[1]]
    events = run(packets)
    streams, gaps, _ = collect(events)
    assert not gaps
    assert bytes(streams["0", "c2s"]) == data
    assert sum(len(e.data) for e in events if isinstance(e, StreamData)) == 200


def test_overlapping_segments_keep_the_first_seen_bytes():
    isn = 100
    packets = [
        *handshake(isn, 9000),
        seg(4, isn + 1 + 10, b"BBBBBBBBBB"),  # bytes 10..19 arrive first (out of order)
        seg(5, isn + 1 + 5, b"cccccccccccccccccccc"),  # 5..24 overlaps them with other values
        seg(6, isn + 1, b"aaaaaaa"),  # 0..6: fills the hole, overlaps 5..6 (already seen as "c")
    ]
    streams, gaps, _ = collect(run(packets))
    assert not gaps
    assert bytes(streams["0", "c2s"]) == b"aaaaa" + b"ccccc" + b"BBBBBBBBBB" + b"ccccc"


def test_overlap_with_already_delivered_bytes_only_adds_new_bytes():
    packets = [*handshake(0, 9000), seg(4, 1, b"hello"), seg(5, 4, b"XXworld")]
    streams, _, _ = collect(run(packets))
    assert bytes(streams["0", "c2s"]) == b"helloworld"


def test_buffered_data_reports_the_frame_that_carried_it():
    packets = [*handshake(0, 9000), seg(4, 6, b"world"), seg(5, 1, b"hello")]
    data = [e for e in run(packets) if isinstance(e, StreamData)]
    assert [(e.offset, e.data, e.packet) for e in data] == [(0, b"hello", 5), (5, b"world", 4)]


@pytest.mark.parametrize("isn", [MASK - 3, MASK, MASK - 1000, 0x7FFFFFFF])
def test_sequence_numbers_wrap_around_two_to_the_32(isn):
    data = bytes(range(256)) * 20
    segs = split(data, isn, [97])
    body = segs[:]
    random.Random(isn).shuffle(body)
    events = run(handshake(isn, 5) + body + [seg(99, isn + 1 + len(data), flags=FIN | ACK),
                                             seg(100, 6, flags=FIN | ACK, c2s=False, ack=isn + 2 + len(data))])
    streams, gaps, others = collect(events)
    assert not gaps
    assert bytes(streams["0", "c2s"]) == data
    assert others[-1] == StreamClosed("0", 100.0, 100, "fin")


def test_streams_longer_than_four_gibibytes_keep_counting_offsets():
    r = TcpReassembler()
    r.feed(seg(1, 0, flags=SYN))
    chunk = b"x" * 65536
    seq = 1
    last = None
    for i in range((5 << 30) // len(chunk)):
        events = r.feed(seg(2 + i, seq, chunk))
        seq += len(chunk)
        last = events[-1]
    assert last.offset == (5 << 30) - len(chunk)


# ------------------------------------------------------------------ gaps


def test_snaplen_truncation_becomes_a_gap_with_exact_offset_and_length():
    packets = [
        *handshake(0, 9000),
        seg(4, 1, b"0123456789"),
        seg(5, 11, b"abc", missing=1397),  # 1400 bytes on the wire, 3 captured
        seg(6, 1411, b"tail"),
    ]
    events = run(packets)
    streams, gaps, _ = collect(events)
    assert gaps == {("0", "c2s"): [(13, 1397)]}
    gap = next(e for e in events if isinstance(e, StreamGap))
    assert gap.packet == 5
    assert streams["0", "c2s"][:13] == b"0123456789abc"
    assert streams["0", "c2s"][-4:] == b"tail"


def test_truncated_out_of_order_segment_gap_is_reported_when_reached():
    packets = [*handshake(0, 9000), seg(4, 11, b"ab", missing=8), seg(5, 1, b"0123456789"), seg(6, 21, b"z")]
    streams, gaps, _ = collect(run(packets))
    assert gaps == {("0", "c2s"): [(12, 8)]}
    assert bytes(streams["0", "c2s"]) == b"0123456789ab" + bytes(8) + b"z"


def test_hole_acknowledged_by_the_peer_is_a_gap_immediately_without_a_reorder_window():
    packets = [
        *handshake(0, 9000),
        seg(4, 1, b"a" * 100),
        seg(5, 201, b"c" * 100),  # 101..200 was lost by the capture
        seg(6, 9001, flags=ACK, c2s=False, ack=301),  # ...but the receiver has it
    ]
    r = TcpReassembler(reorder_window=0)
    events = [e for p in packets for e in r.feed(p)]
    gaps = [e for e in events if isinstance(e, StreamGap)]
    assert [(g.offset, g.length, g.packet) for g in gaps] == [(100, 100, 6)]
    assert events[-1] == StreamData("0", "c2s", 200, b"c" * 100, 5, 5.0)


def test_acknowledged_hole_becomes_a_gap_once_the_reorder_window_has_passed():
    r = TcpReassembler(reorder_window=3)
    for p in [*handshake(0, 9000), seg(4, 1, b"a" * 100), seg(5, 201, b"c" * 100)]:
        r.feed(p)
    assert r.feed(seg(6, 9001, flags=ACK, c2s=False, ack=301)) == []
    for n in (7, 8, 9):  # three later packets may still bring bytes 100..199
        assert r.feed(seg(n, 9001, flags=ACK, c2s=False, ack=301, ts=float(n))) == []
    events = r.feed(seg(10, 9001, flags=ACK, c2s=False, ack=301))
    # the gap names the ACK that proved the bytes were sent, and the buffered bytes follow it
    assert events == [StreamGap("0", "c2s", 100, 100, 6, 6.0), StreamData("0", "c2s", 200, b"c" * 100, 5, 5.0)]


def test_a_hole_the_capture_ends_with_names_the_ack_that_proved_it():
    packets = [*handshake(0, 9000), seg(4, 1, b"a" * 10), seg(5, 21, b"c" * 10),
               seg(6, 9001, flags=ACK, c2s=False, ack=31), seg(7, 9001, flags=ACK, c2s=False, ack=31)]
    gaps = [e for e in run(packets) if isinstance(e, StreamGap)]
    assert gaps == [StreamGap("0", "c2s", 10, 10, 6, 6.0)]  # reported by finish(), named after frame 6


def test_segment_written_after_the_ack_that_covers_it_fills_the_hole():
    # Issue 15.1: multi-queue NICs, -i any and merged captures write a segment after its ACK.
    body = bytes(range(256)) * 512  # 128 KiB in four 32 KiB segments, like large.pcapng
    segs = split(body, 0, [32768], first=4)
    packets = [*handshake(0, 9000), segs[0], segs[1], segs[3],
               seg(8, 9001, flags=ACK, c2s=False, ack=1 + len(body)),  # the receiver has all of it...
               segs[2]]  # ...and the capture too, one packet late
    events = run(packets)
    streams, gaps, _ = collect(events)
    assert not gaps
    assert bytes(streams["0", "c2s"]) == body
    assert [e.packet for e in events if isinstance(e, StreamData)] == [4, 5, 6, 7]


def test_ack_between_several_holes_gives_up_only_what_it_covers_up_to_each_buffered_byte():
    packets = [
        *handshake(0, 9000),
        seg(4, 1, b"a" * 100),  # 0..99
        seg(5, 201, b"c" * 100),  # 200..299 (hole 100..199)
        seg(6, 401, b"e" * 100),  # 400..499 (hole 300..399)
        seg(7, 601, b"g" * 100),  # 600..699 (hole 500..599)
        seg(8, 9001, flags=ACK, c2s=False, ack=351),  # lands inside the second hole
    ]
    r = TcpReassembler(reorder_window=0)
    events = [e for p in packets for e in r.feed(p) if not isinstance(e, StreamNote)]
    # The gaps stop at the first buffered byte: 100..199 is one gap, not 100..349; 300..349 is a
    # second one; 350..399 may still come (the ACK does not cover it), so nothing after it moves.
    assert [(type(e).__name__, e.offset, getattr(e, "length", len(getattr(e, "data", b"")))) for e in events[-3:]] \
        == [("StreamGap", 100, 100), ("StreamData", 200, 100), ("StreamGap", 300, 50)]
    events = [e for e in r.feed(seg(9, 351, b"d" * 50)) if not isinstance(e, StreamNote)]  # fills hole 2
    assert [(e.offset, e.data[:1], len(e.data)) for e in events] == [(350, b"d", 50), (400, b"e", 100)]
    tail = [e for e in r.finish() if not isinstance(e, StreamNote)]
    assert [(type(e).__name__, e.offset) for e in tail[:2]] == [("StreamGap", 500), ("StreamData", 600)]


def test_ack_short_of_the_buffered_data_only_gives_up_what_it_covers():
    packets = [
        *handshake(0, 9000),
        seg(4, 1, b"a" * 100),
        seg(5, 301, b"d" * 100),
        seg(6, 9001, flags=ACK, c2s=False, ack=151),  # 101..150 received by the peer, 151.. not yet
    ]
    r = TcpReassembler(reorder_window=0)
    events = [e for p in packets for e in r.feed(p)]
    assert [(g.offset, g.length) for g in events if isinstance(g, StreamGap)] == [(100, 50)]
    # the retransmission of the rest still fills the hole
    events = r.feed(seg(7, 151, b"b" * 150))
    assert [(e.offset, len(e.data)) for e in events if isinstance(e, StreamData)] == [(150, 150), (300, 100)]


def test_snaplen_cut_is_filled_by_a_full_retransmission_later_in_the_capture():
    packets = [*handshake(0, 9000), seg(4, 1, b"0123456789"), seg(5, 11, b"ab", missing=8),
               seg(6, 21, b"tail"), seg(7, 11, b"abcdefghij")]  # the same segment again, whole
    streams, gaps, _ = collect(run(packets))
    assert not gaps
    assert bytes(streams["0", "c2s"]) == b"0123456789abcdefghijtail"


def test_out_of_order_buffer_is_bounded_and_overflow_becomes_a_gap():
    r = TcpReassembler(max_buffer=1000, max_segments=10)
    for p in handshake(0, 9000):
        r.feed(p)
    events = []
    # hole at 0..99, then 100-byte segments keep arriving beyond it
    for i in range(1, 15):
        events += r.feed(seg(3 + i, 1 + 100 * i, bytes([i]) * 100))
    gaps = [e for e in events if isinstance(e, StreamGap)]
    assert [(g.offset, g.length) for g in gaps] == [(0, 100)]
    streams, _, _ = collect(events)
    assert bytes(streams["0", "c2s"])[100:] == b"".join(bytes([i]) * 100 for i in range(1, 15))


def test_segment_count_limit_bounds_tiny_segments():
    r = TcpReassembler(max_segments=50)
    for p in handshake(0, 9000):
        r.feed(p)
    events = []
    for i in range(1, 200, 2):  # every other byte: holes everywhere
        events += r.feed(seg(4 + i, 1 + i, b"x"))
    assert max(len(h.pending) for c in r._conns.values() for h in (c.c2s, c.s2c)) <= 50
    assert any(isinstance(e, StreamGap) for e in events)


def test_finish_turns_remaining_holes_into_gaps_and_closes():
    packets = [*handshake(0, 9000), seg(4, 1, b"abc"), seg(5, 11, b"xyz")]
    r = TcpReassembler()
    events = [e for p in packets for e in r.feed(p)]
    tail = r.finish()
    assert tail == [StreamGap("0", "c2s", 3, 7, 5, 5.0), StreamData("0", "c2s", 10, b"xyz", 5, 5.0),
                    StreamClosed("0", 5.0, 5, "end-of-capture")]
    _streams, gaps, _ = collect(events + tail)
    assert gaps == {("0", "c2s"): [(3, 7)]}


def test_lost_segment_before_fin_is_a_gap_once_the_fin_is_acked():
    packets = [
        *handshake(0, 9000),
        seg(4, 1, b"abc"),
        seg(5, 8, b"", flags=FIN | ACK),  # bytes 3..6 never captured, FIN at offset 7
        seg(6, 9001, flags=FIN | ACK, c2s=False, ack=9),
    ]
    events = run(packets)
    assert [e for e in events if isinstance(e, StreamGap)] == [StreamGap("0", "c2s", 3, 4, 6, 6.0)]
    assert events[-1] == StreamClosed("0", 6.0, 6, "fin")


# ------------------------------------------------------------------ TCP notes (issue 16.8)


def test_retransmission_out_of_order_and_lost_segment_notes():
    packets = [
        *handshake(0, 9000),
        seg(4, 1, b"a" * 100),
        seg(5, 201, b"c" * 100),  # 100..199 not seen: the previous segment was not captured
        seg(6, 101, b"b" * 100),  # ...it comes now: new bytes below the highest seen
        seg(7, 101, b"b" * 100),  # the same again: nothing new
        seg(8, 300, b"c"),  # a keep-alive (1 byte at the highest - 1): no note
        seg(9, 301, b"", flags=FIN | ACK),
        seg(10, 301, b"", flags=FIN | ACK),  # the FIN again
    ]
    events = run(packets)
    assert notes(events) == [("lost-segment", "c2s", 100, 100, 5), ("out-of-order", "c2s", 100, 100, 6),
                             ("retransmission", "c2s", 100, 100, 7), ("retransmission", "c2s", 300, 0, 10)]
    streams, gaps, _ = collect(events)
    assert not gaps and bytes(streams["0", "c2s"]) == b"a" * 100 + b"b" * 100 + b"c" * 100


def test_a_segment_the_peer_already_acked_is_noted_even_in_order():
    # Written after the ACK that covers it: tshark calls it a spurious retransmission; it brings
    # new bytes, so it is out of order (and it is delivered, not reported missing).
    packets = [*handshake(0, 9000), seg(4, 1, b"a" * 10), seg(5, 9001, flags=ACK, c2s=False, ack=21),
               seg(6, 11, b"b" * 10)]
    events = run(packets)
    assert notes(events) == [("out-of-order", "c2s", 10, 10, 6)]
    assert bytes(collect(events)[0]["0", "c2s"]) == b"a" * 10 + b"b" * 10


def test_zero_window_is_noted_for_the_segment_that_advertises_it():
    packets = [*handshake(0, 9000), seg(4, 1, b"a" * 10)]
    zero = seg(5, 9001, flags=ACK, c2s=False, ack=11)
    zero.window = 0
    update = seg(6, 9001, flags=ACK, c2s=False, ack=11)
    update.window = 65535
    assert notes(run([*packets, zero, update])) == [("zero-window", "s2c", 0, 0, 5)]


def test_the_window_update_after_a_zero_window_is_a_control_event():
    packets = [*handshake(0, 9000), seg(4, 1, b"a" * 10)]
    zero = seg(5, 9001, flags=ACK, c2s=False, ack=11)
    zero.window = 0
    again = seg(6, 9001, flags=ACK, c2s=False, ack=11)
    again.window = 0
    update = seg(7, 9001, flags=ACK, c2s=False, ack=11)
    update.window = 65535
    later = seg(8, 9001, flags=ACK, c2s=False, ack=11)
    later.window = 65535
    events = run([*packets, zero, again, update, later, seg(9, 11, b"b")])
    assert controls(events) == [("syn-ack", "s2c", 2), ("window-open", "s2c", 7)]


def test_who_closed_first_fin_and_rst():
    packets = [*handshake(0, 9000), seg(4, 1, b"hi"),
               seg(5, 9001, flags=FIN | ACK, c2s=False, ack=3),  # the server closes first
               seg(6, 3, b"late", ack=9002),  # the client still writes (half-close): the server resets
               seg(7, 9002, flags=RST, c2s=False)]
    events = run(packets)
    assert controls(events) == [("syn-ack", "s2c", 2), ("fin", "s2c", 5), ("rst", "s2c", 7)]
    assert next(e for e in events if isinstance(e, StreamClosed)).reason == "rst"


def test_a_refused_connect_is_a_syn_answered_by_a_rst():
    events = run([seg(1, 100, flags=SYN), seg(2, 0, flags=RST | ACK, c2s=False, ack=101)])
    assert controls(events) == [("rst", "s2c", 2)]
    assert [type(e).__name__ for e in events] == ["StreamOpened", "StreamControl", "StreamClosed"]


def test_a_real_zero_window_in_a_capture_file_is_noted():
    # large.pcapng: the PULL side's buffer fills during the 1 MiB frame (tshark: frame 19, "TCP Zero Window").
    events = run(read_tcp_packets(capture("large.pcapng")))
    assert [(n[0], n[1], n[4]) for n in notes(events)] == [("zero-window", "c2s", 19)]


# ------------------------------------------------------------------ connections


def test_connection_ids_count_in_order_of_appearance_and_client_is_the_syn_sender():
    other_client = ("10.0.0.3", 41000)
    packets = [
        seg(1, 500, flags=SYN, client=other_client),
        seg(2, 100, flags=SYN),
        seg(3, 900, flags=SYN | ACK, c2s=False, ack=101),
    ]
    opened = [e for e in run(packets) if isinstance(e, StreamOpened)]
    assert [(o.conn, o.client, o.server, o.packet) for o in opened] == [
        ("0", other_client, SERVER, 1), ("1", CLIENT, SERVER, 2)]


def test_syn_ack_seen_first_makes_its_receiver_the_client():
    packets = [seg(1, 900, flags=SYN | ACK, c2s=False, ack=101), seg(2, 101, b"hi", ack=901),
               seg(3, 901, b"yo", c2s=False, ack=103)]
    events = run(packets)
    assert events[0] == StreamOpened("0", CLIENT, SERVER, True, 1.0, 1)
    streams, _, _ = collect(events)
    assert streams == {("0", "c2s"): bytearray(b"hi"), ("0", "s2c"): bytearray(b"yo")}


def test_mid_stream_capture_starts_offsets_at_the_first_seen_sequence_number():
    packets = [
        seg(1, 77777, b"s2c first", c2s=False, ack=5000),
        seg(2, 5000, flags=ACK, ack=77786),  # a pure ACK does not fix this direction's offset 0...
        seg(3, 4999, b"K", ack=77786),  # ...the first payload does
        seg(4, 5000, b"hello", ack=77786),
    ]
    events = run(packets)
    opened = events[0]
    assert opened == StreamOpened("0", ("10.0.0.2", 5555), ("10.0.0.1", 40000), False, 1.0, 1)
    streams, gaps, _ = collect(events)
    assert streams["0", "c2s"] == bytearray(b"s2c first")  # the first sender is the client
    assert streams["0", "s2c"] == bytearray(b"Khello")
    assert not gaps


def test_keepalive_and_zero_window_probes_are_not_duplicated_into_the_stream():
    packets = [
        *handshake(0, 9000),
        seg(4, 1, b"hello"),
        seg(5, 5, b"o"),  # keep-alive: 1 old byte at seq-1
        seg(6, 5, b""),  # zero-window probe / keep-alive without data
        seg(7, 6, b"world"),
    ]
    streams, gaps, _ = collect(run(packets))
    assert bytes(streams["0", "c2s"]) == b"helloworld" and not gaps


def test_syn_with_data_and_fin_with_data():
    packets = [
        seg(1, 1000, b"early", flags=SYN),  # TCP Fast Open style
        seg(2, 7000, flags=SYN | ACK, c2s=False, ack=1006),
        seg(3, 1006, b" data", flags=FIN | ACK | PSH, ack=7001),
        seg(4, 7001, b"bye", flags=FIN | ACK | PSH, c2s=False, ack=1012),
        seg(5, 1012, flags=ACK, ack=7005),
    ]
    events = run(packets)
    streams, _gaps, others = collect(events)
    assert streams == {("0", "c2s"): bytearray(b"early data"), ("0", "s2c"): bytearray(b"bye")}
    assert others == [StreamOpened("0", CLIENT, SERVER, True, 1.0, 1), StreamClosed("0", 4.0, 4, "fin")]


def test_port_reuse_after_fin_is_a_new_connection():
    packets = [
        *handshake(0, 9000),
        seg(4, 1, b"one"),
        seg(5, 4, flags=FIN | ACK, ack=9001),
        seg(6, 9001, flags=FIN | ACK, c2s=False, ack=5),
        seg(7, 5, flags=ACK, ack=9002),
        seg(8, 9002, flags=ACK, c2s=False, ack=5),  # a late duplicate ACK belongs to the old connection
        seg(9, 0, flags=SYN),  # same ISN even: the port pair was closed
        seg(10, 9000, flags=SYN | ACK, c2s=False, ack=1),
        seg(11, 1, b"two", ack=9001),
    ]
    events = run(packets)
    streams, _, others = collect(events)
    assert [(type(e).__name__, e.conn) for e in others] == [
        ("StreamOpened", "0"), ("StreamClosed", "0"), ("StreamOpened", "1"), ("StreamClosed", "1")]
    assert others[1].reason == "fin" and others[3].reason == "end-of-capture"
    assert streams == {("0", "c2s"): bytearray(b"one"), ("1", "c2s"): bytearray(b"two")}


def test_port_reuse_after_rst_and_with_a_new_isn_while_open():
    packets = [
        *handshake(0, 9000),
        seg(4, 1, b"one"),
        seg(5, 9001, flags=RST | ACK, c2s=False, ack=4),
        seg(6, 4, b"late"),  # in flight when the RST came: swallowed
        seg(7, 5000, flags=SYN),  # new connection
        seg(8, 5001, b"two"),
        seg(9, 77000, flags=SYN),  # yet another ISN on a connection never closed
        seg(10, 77001, b"three"),
    ]
    events = run(packets)
    streams, _, others = collect(events)
    closed = [e for e in others if isinstance(e, StreamClosed)]
    assert [(c.conn, c.reason, c.packet) for c in closed] == [
        ("0", "rst", 5), ("1", "reused", 9), ("2", "end-of-capture", 10)]
    assert streams == {("0", "c2s"): bytearray(b"one"), ("1", "c2s"): bytearray(b"two"),
                       ("2", "c2s"): bytearray(b"three")}


def test_syn_retransmission_is_not_a_new_connection():
    packets = [seg(1, 10, flags=SYN), seg(2, 10, flags=SYN, ts=3.0), seg(3, 90, flags=SYN | ACK, c2s=False, ack=11),
               seg(4, 11, b"x", ack=91)]
    opened = [e for e in run(packets) if isinstance(e, StreamOpened)]
    assert len(opened) == 1


def test_syn_after_a_long_silence_is_a_new_connection_even_with_the_same_isn():
    packets = [seg(1, 10, flags=SYN, ts=0.0), seg(2, 11, b"x", ts=1.0), seg(3, 10, flags=SYN, ts=10_000.0)]
    opened = [e for e in run(packets, idle_timeout=60.0) if isinstance(e, StreamOpened)]
    assert [o.conn for o in opened] == ["0", "1"]


def test_rst_flushes_buffered_data_with_gaps():
    packets = [*handshake(0, 9000), seg(4, 1, b"abc"), seg(5, 7, b"ghi"), seg(6, 10, flags=RST)]
    streams, gaps, others = collect(run(packets))
    assert gaps == {("0", "c2s"): [(3, 3)]}
    assert bytes(streams["0", "c2s"]) == b"abc\x00\x00\x00ghi"
    assert others[-1].reason == "rst"


def test_closed_connections_are_forgotten_after_the_idle_timeout():
    r = TcpReassembler(idle_timeout=10.0)
    for i in range(5000):
        client = ("10.1.0.1", 1024 + i)
        t = float(i)
        for p in (seg(1, 0, flags=SYN, client=client, ts=t), seg(2, 1, b"x", client=client, ts=t),
                  seg(3, 1, flags=RST, c2s=False, client=client, ts=t)):
            r.feed(p)
    assert len(r._conns) < 5000 // 4


# ------------------------------------------------------------------ through a capture file


def test_snaplen_truncated_capture_file_yields_exact_gaps():
    f = io.BytesIO()
    w = PcapngWriter(f, snaplen=54 + 100)  # Ethernet + IPv4 + TCP headers + 100 payload bytes
    c = w.add_connection(CLIENT, SERVER)
    c.handshake(1.0)
    data = bytes(range(256)) * 20  # 5120 bytes: segments of 1460, 1460, 1460, 740
    c.send("c2s", data, 2.0)
    c.close(3.0)
    streams, gaps, others = collect(run(read_tcp_packets(f.getvalue())))
    assert gaps == {("0", "c2s"): [(100, 1360), (1560, 1360), (3020, 1360), (4480, 640)]}
    got = bytes(streams["0", "c2s"])
    for start in (0, 1460, 2920, 4380):
        assert got[start:start + 100] == data[start:start + 100]
    assert others[-1].reason == "fin"


# ------------------------------------------------------------------ properties

segment_sizes = st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(min_size=1, max_size=3000), sizes=segment_sizes,
       isn=st.one_of(st.integers(0, MASK), st.integers(MASK - 4000, MASK)), seed=st.integers(0, 2**32),
       dup_rate=st.floats(0, 0.5), syn=st.booleans())
def test_any_order_with_duplicates_reassembles_the_original_bytes(data, sizes, isn, seed, dup_rate, syn):
    rnd = random.Random(seed)
    segs = split(data, isn, sizes, first=2)
    body = segs + [s for s in segs if rnd.random() < dup_rate]
    # overlapping retransmissions: same bytes, different boundaries
    for _ in range(rnd.randrange(3)):
        a = rnd.randrange(len(data))
        b = rnd.randrange(a, len(data)) + 1
        body.append(seg(999, isn + 1 + a, data[a:b]))
    rnd.shuffle(body)
    if syn:
        packets = [seg(1, isn, flags=SYN), *body]
    else:
        # mid-stream: the first segment seen must start the stream, the rest in any order
        first = segs[0]
        packets = [first, *(p for p in body if p is not first)]
    streams, gaps, _ = collect(run(packets))
    assert not gaps
    assert bytes(streams["0", "c2s"]) == data


@settings(max_examples=100, deadline=None)
@given(data=st.binary(min_size=1, max_size=2000), sizes=segment_sizes, seed=st.integers(0, 2**32),
       drop=st.sets(st.integers(0, 40), max_size=5))
def test_lost_segments_become_gaps_of_exactly_their_size(data, sizes, seed, drop):
    segs = split(data, 1234, sizes, first=2)
    kept = [s for i, s in enumerate(segs) if i not in drop or i == 0]
    random.Random(seed).shuffle(kept)
    events = run([seg(1, 1234, flags=SYN), *kept, seg(500, 1235 + len(data), flags=FIN | ACK)])
    streams, gaps, _ = collect(events)
    got = bytes(streams["0", "c2s"])
    assert len(got) == len(data)
    lost = bytearray(len(data))
    for i, s in enumerate(segs):
        if i in drop and i != 0:
            start = s.seq - 1235
            lost[start:start + len(s.payload)] = b"\x01" * len(s.payload)
    gap_mask = bytearray(len(data))
    for offset, length in gaps.get(("0", "c2s"), []):
        gap_mask[offset:offset + length] = b"\x01" * length
    assert gap_mask == lost
    assert all(got[i] == data[i] for i in range(len(data)) if not lost[i])


_FLAG_CHOICES = [ACK, ACK | PSH, SYN, SYN | ACK, FIN | ACK, RST, RST | ACK, 0, FIN | ACK | PSH, SYN | FIN]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(-40, 400), st.integers(-40, 400),
                          st.sampled_from(_FLAG_CHOICES), st.integers(0, 60), st.integers(0, 30),
                          st.floats(0, 500)),
                max_size=60),
       st.integers(0, MASK))
def test_arbitrary_segment_soup_keeps_every_invariant(soup, base):
    """Garbage in (damaged captures, scans, resets): events stay well-formed, nothing raises."""
    r = TcpReassembler(max_buffer=200, max_segments=6, idle_timeout=100.0)
    events = []
    for number, (c2s, second_pair, seq, ack, flags, size, missing, ts) in enumerate(soup, 1):
        client = ("10.0.0.3", 41000) if second_pair else CLIENT
        payload = bytes([number % 256]) * size
        events += r.feed(seg(number, base + seq, payload, flags, c2s=c2s, ack=base + ack, missing=missing,
                             ts=ts, client=client))
    events += r.finish()
    opened, closed = [], []
    position: dict = {}
    for ev in events:
        if isinstance(ev, StreamOpened):
            assert ev.conn == str(len(opened))
            opened.append(ev.conn)
        elif isinstance(ev, StreamClosed):
            assert ev.conn in opened and ev.conn not in closed
            closed.append(ev.conn)
        elif isinstance(ev, StreamNote):
            assert ev.conn in opened and ev.length >= 0
        elif isinstance(ev, StreamControl):
            assert ev.conn in opened and ev.conn not in closed
        else:
            assert ev.conn in opened and ev.conn not in closed
            key = (ev.conn, ev.dir)
            length = len(ev.data) if isinstance(ev, StreamData) else ev.length
            assert ev.offset == position.get(key, 0) and length > 0
            position[key] = ev.offset + length
    assert sorted(closed, key=int) == opened  # finish() closes everything
    assert r._total_pending == 0
