"""Reading captures in byte ranges gives exactly the packets, frame numbers and errors of a
sequential read, whatever the range size: pcapng (both byte orders, several sections, late
interfaces, simple packet blocks), classic pcap (micro- and nanoseconds) and gzip."""

from __future__ import annotations

import gzip
import shutil
import struct
from dataclasses import astuple
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pipeline_util import PROJECT, SHARED, block_offsets, busy_capture, sequential_error, write_classic_pcap

from zmtplab.capture.errors import CaptureFormatError
from zmtplab.capture.pcapfile import read_tcp_packets
from zmtplab.pipeline.ranges import (
    chain_scans,
    error_message,
    nominal_ranges,
    probe,
    read_range,
    scan_range,
)

SOURCES = [SHARED / "req_rep.pcapng", SHARED / "pub_sub.pcapng", PROJECT / "curve.pcapng",
           SHARED / "dealer_router.pcapng"]


def split_read(path: Path, split: int) -> tuple[list[tuple], str | None, int, int]:
    """(packets, error message, planned ranges, rescans) of a ranged read."""
    header = probe(str(path))
    scans = [scan_range(header, i, s, e) for i, (s, e) in enumerate(nominal_ranges(header, split))]
    planned, err, rescans = chain_scans(header, scans)
    packets = [astuple(p) for r in planned for p in read_range(r)]
    return packets, (error_message(err) if err else None), len(planned), rescans


def sequential(path: Path) -> tuple[list[tuple], str | None]:
    out = []
    try:
        for p in read_tcp_packets(str(path)):
            out.append(astuple(p))
    except CaptureFormatError as exc:
        return out, str(exc)
    return out, None


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("ranges")
    out = {"bulk": SHARED / "bulk.pcapng", "large": SHARED / "large.pcapng"}
    out["bulk_pcap"] = d / "bulk.pcap"
    write_classic_pcap(SHARED / "bulk.pcapng", out["bulk_pcap"], max_frames=2500)
    out["large_ns"] = d / "large_ns.pcap"
    write_classic_pcap(SHARED / "large.pcapng", out["large_ns"], nanoseconds=True)
    out["busy"] = d / "busy.pcapng"
    busy_capture(out["busy"], SOURCES, late_interface=True, new_section=True, simple_blocks=True)
    out["busy_be"] = d / "busy_be.pcapng"
    busy_capture(out["busy_be"], SOURCES, byteorder=">", new_section=True)
    out["busy_pcap"] = d / "busy.pcap"
    busy_capture(out["busy_pcap"], SOURCES, format="pcap")
    out["gz"] = d / "busy.pcapng.gz"
    with open(out["busy"], "rb") as src, gzip.open(out["gz"], "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


CASES = [(name, split) for name in ("bulk", "large", "bulk_pcap", "large_ns", "busy", "busy_be", "busy_pcap", "gz")
         for split in (1500, 4096, 65536, 1 << 30) if not (name == "bulk" and split == 1500)]


@pytest.mark.parametrize(("name", "split"), CASES)
def test_split_read_equals_sequential_read(files, name, split):
    path = files[name]
    ref, ref_err = sequential(path)
    got, err, planned, _rescans = split_read(path, split)
    assert got == ref
    assert err == ref_err
    if name != "gz" and split < path.stat().st_size // 4:
        assert planned > 2  # the file really was read in pieces


def test_bulk_forced_into_many_ranges_reads_every_frame_once(files):
    got, err, planned, rescans = split_read(files["bulk"], 64 << 10)
    assert err is None
    assert planned >= 80
    assert rescans == 0  # pcapng boundaries are found without a wrong guess
    numbers = [p[0] for p in got]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert len(got) == 7035


def _damage(src: Path, dst: Path, at: int, patch: bytes) -> None:
    data = bytearray(src.read_bytes())
    data[at:at + len(patch)] = patch
    dst.write_bytes(bytes(data))


def test_damaged_and_truncated_files_stop_where_a_sequential_read_stops(files, tmp_path):
    bulk = files["bulk"]
    offsets = block_offsets(bulk)
    mid = next(o for o in offsets if o > 2_000_000)
    cases = {}
    cases["length"] = tmp_path / "length.pcapng"
    _damage(bulk, cases["length"], mid + 4, struct.pack("<I", 0x7FFFFF00))
    cases["trailer"] = tmp_path / "trailer.pcapng"
    _damage(bulk, cases["trailer"], mid + 4, struct.pack("<I", 100))
    cases["cut"] = tmp_path / "cut.pcapng"
    cases["cut"].write_bytes(bulk.read_bytes()[:3_000_001])
    pcap = files["bulk_pcap"]
    data = pcap.read_bytes()
    pos = 24
    while pos < len(data) // 2:
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    cases["pcap_incl"] = tmp_path / "incl.pcap"
    _damage(pcap, cases["pcap_incl"], pos + 8, struct.pack("<I", 0x7FFFFF00))
    cases["pcap_cut"] = tmp_path / "cut.pcap"
    cases["pcap_cut"].write_bytes(data[: len(data) - 7])
    for name, path in cases.items():
        ref, ref_err = sequential(path)
        assert ref_err is not None and ref_err == sequential_error(path), name
        for split in (8192, 1 << 20):
            got, err, _planned, _rescans = split_read(path, split)
            assert got == ref, (name, split)
            assert err == ref_err, (name, split)


def test_a_wrong_boundary_guess_is_corrected_by_the_chain(files):
    """A range whose first boundary was guessed wrong (as garbage that looks like a header would
    make it) is rescanned from where the previous range really ended."""
    path = files["bulk_pcap"]
    header = probe(str(path))
    nominal = nominal_ranges(header, 32768)
    scans = [scan_range(header, i, s, e) for i, (s, e) in enumerate(nominal)]
    # pretend range 3's heuristic stopped at a false boundary 5 bytes past the true one
    s3 = scans[3]
    scans[3] = scan_range(header, 3, s3.nominal_start, s3.nominal_end, start=s3.start + 5)
    scans[3].exact = False
    planned, err, rescans = chain_scans(header, scans)
    assert rescans >= 1
    got = [astuple(p) for r in planned for p in read_range(r)]
    assert (got, err) == (sequential(path)[0], None)


def test_files_that_are_not_captures_are_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    for path in (text, empty):
        with pytest.raises(CaptureFormatError):
            probe(str(path))


# --------------------------------------------------------------------------- reader and scanner agree
#
# The sequential reader and the range scanner once walked pcapng blocks with two copies of the code,
# which had drifted apart; they now drive one walker. These generate pcapng files of every block
# kind, in both byte orders and several sections, damage some, and hold the two to the same packets
# and the same error.


def _block(order: str, btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    return struct.pack(order + "II", btype, 12 + len(body)) + body + struct.pack(order + "I", 12 + len(body))


def _shb(order: str) -> bytes:
    return _block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def _option(order: str, code: int, value: bytes, declared: int | None = None) -> bytes:
    length = len(value) if declared is None else declared
    return struct.pack(order + "HH", code, length) + value + b"\0" * (-len(value) % 4)


def _idb(order: str, linktype: int, snaplen: int = 0, options: bytes = b"") -> bytes:
    return _block(order, 1, struct.pack(order + "HHI", linktype, 0, snaplen) + options)


def _segment(payload: bytes, *, ip_total: int | None = None, raw_ip: bool = False) -> bytes:
    """An IPv4 TCP segment from 10.0.0.1:40000 to 10.0.0.2:5555, Ethernet-framed unless `raw_ip`."""
    tcp = struct.pack("!HHIIBBHHH", 40000, 5555, 1000, 2000, 0x50, 0x18, 512, 0, 0) + payload
    total = 20 + len(tcp) if ip_total is None else ip_total
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 6, 0, b"\x0a\0\0\x01", b"\x0a\0\0\x02") + tcp
    return ip if raw_ip else b"\x02" * 12 + b"\x08\x00" + ip


def _epb(order: str, if_id: int, ts: int, frame: bytes, orig: int | None = None) -> bytes:
    orig = len(frame) if orig is None else orig
    return _block(order, 6, struct.pack(order + "IIIII", if_id, ts >> 32, ts & 0xFFFFFFFF, len(frame), orig) + frame)


def _pb(order: str, if_id: int, ts: int, frame: bytes) -> bytes:
    return _block(order, 2, struct.pack(order + "HHIIII", if_id, 0, ts >> 32, ts & 0xFFFFFFFF, len(frame),
                                        len(frame)) + frame)


def _spb(order: str, frame: bytes, orig: int | None = None) -> bytes:
    return _block(order, 3, struct.pack(order + "I", len(frame) if orig is None else orig) + frame)


def _agree(tmp: Path, data: bytes, splits: tuple[int, ...] = (64, 200, 1 << 20)) -> None:
    path = tmp / "generated.pcapng"
    path.write_bytes(data)
    ref = sequential(path)
    for split in splits:
        got, err, _planned, _rescans = split_read(path, split)
        assert (got, err) == ref, split


@st.composite
def _pcapng_files(draw) -> bytes:
    """A pcapng file: 1-3 sections of either byte order, interfaces of two link types with time
    resolutions and offsets (some options cut short), EPB, PB, SPB, other blocks, odd frames."""
    out = []
    ts = 1_700_000_000_000_000
    for _section in range(draw(st.integers(1, 3))):
        order = draw(st.sampled_from("<>"))
        out.append(_shb(order))
        links: list[int] = []
        # Mostly an interface first (packets before any are an error, a rare one here), then anything.
        kinds = ["idb"] * draw(st.sampled_from([0, 1, 1, 1, 2]))
        kinds += draw(st.lists(st.sampled_from(["idb", "epb", "epb", "epb", "pb", "spb", "spb", "nrb", "isb",
                                                "custom", "unknown"]), max_size=10))
        for kind in kinds:
            raw_ip = bool(links) and links[0] == 101
            payload = draw(st.binary(max_size=24))
            frame = _segment(payload, raw_ip=raw_ip,
                             ip_total=draw(st.sampled_from([None, None, 0, 400, 30])))
            if draw(st.booleans()) and len(frame) > 20:
                frame = frame[:draw(st.integers(0, len(frame)))]  # cut by a snaplen
            ts += draw(st.integers(0, 1 << 20))
            if kind == "idb":
                options = b""
                if draw(st.booleans()):
                    options += _option(order, 9, bytes([draw(st.sampled_from([3, 6, 9, 0x8A]))]))
                if draw(st.booleans()):
                    cut_short = draw(st.booleans())
                    value = struct.pack(order + "q", draw(st.integers(-5, 5)))
                    options += _option(order, 14, value[:4] if cut_short else value, declared=8)
                if draw(st.booleans()):
                    options += _option(order, 2, b"eth0") + _option(order, 0, b"")
                links.append(draw(st.sampled_from([1, 101])))
                out.append(_idb(order, links[-1], draw(st.sampled_from([0, 0, 40, 262144])), options))
            elif kind == "epb":
                # Now and then one past the end: an undefined interface.
                if_id = len(links) if draw(st.integers(0, 14)) == 0 else draw(st.integers(0, max(len(links) - 1, 0)))
                out.append(_epb(order, if_id, ts, frame, draw(st.sampled_from([None, None, 0, len(frame) + 50]))))
            elif kind == "pb":
                out.append(_pb(order, draw(st.integers(0, max(len(links) - 1, 0))), ts, frame))
            elif kind == "spb":
                short = draw(st.integers(0, 14)) == 0
                out.append(struct.pack(order + "III", 3, 12, 12) if short else
                           _spb(order, frame, draw(st.sampled_from([None, len(frame) + 7]))))
            else:
                btype = {"nrb": 4, "isb": 5, "custom": 0xBAD, "unknown": 0x1234}[kind]
                out.append(_block(order, btype, draw(st.binary(max_size=20))))
    data = b"".join(out)
    damage = draw(st.sampled_from(["none", "none", "cut", "bytes"]))
    if damage == "cut" and len(data) > 28:
        data = data[:draw(st.integers(28, len(data) - 1))]
    elif damage == "bytes" and len(data) > 32:
        at = draw(st.integers(28, len(data) - 4))
        data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at + 4:]
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(data=_pcapng_files())
def test_generated_pcapng_files_read_the_same_sequentially_and_in_ranges(tmp_path, data):
    _agree(tmp_path, data)


def test_an_interface_option_cut_short_is_ignored_by_both(tmp_path):
    """An if_tsoffset option that declares 8 bytes where only the block's trailing length is left:
    the reader ignored it, the range probe crashed on it (struct.error)."""
    idb = _idb("<", 1, options=_option("<", 14, b"", declared=8))
    data = _shb("<") + idb + _epb("<", 0, 1_000_000, _segment(b"hi"))
    _agree(tmp_path, data)
    assert [p.ts for p in read_tcp_packets(data)] == [1.0]


def test_a_simple_packet_block_too_short_is_an_error_to_both(tmp_path):
    """A 12-byte simple packet block has no room for its original length: the reader stopped
    there, the range scanner read the trailing length as one and went on."""
    head = _shb("<") + _idb("<", 1) + _epb("<", 0, 1_000_000, _segment(b"hi"))
    data = head + struct.pack("<III", 3, 12, 12) + _epb("<", 0, 2_000_000, _segment(b"yo"))
    _agree(tmp_path, data)
    got, err, _planned, _rescans = split_read(tmp_path / "generated.pcapng", 1 << 20)
    assert len(got) == 1
    assert err == f"The capture is corrupt: a simple packet block too short for its header at byte {len(head)} " \
                  f"(after frame 1)."


def test_an_ip_length_beyond_the_wire_length_is_not_missing_bytes_to_either(tmp_path):
    """An IP header claiming 400 bytes of a 56-byte frame, captured whole: the bytes were never on
    the wire, so neither reader reports them as cut by a snaplen (the scanner used to: 358)."""
    data = _shb("<") + _idb("<", 1) + _epb("<", 0, 1_000_000, _segment(b"hi", ip_total=400))
    _agree(tmp_path, data)
    got, _err, _planned, _rescans = split_read(tmp_path / "generated.pcapng", 1 << 20)
    assert [p[10] for p in got] == [0]  # TcpPacket.missing


@pytest.mark.parametrize("content", [b"\x1f\x8b\r\n" + b"\0" * 60, gzip.compress(b"hello, not a capture"), b"",
                                     b"\xd4\xc3\xb2\xa1\x02\x00"],
                         ids=["bad-gzip-method", "gzip-of-text", "empty", "pcap-header-cut"])
def test_a_file_that_is_not_a_capture_is_refused_in_the_readers_words(tmp_path, content):
    """A gzip header with a bad compression method was 'not a capture' to the range probe and a
    corrupt compressed capture to the reader: the probe now lets the reader judge the header."""
    path = tmp_path / "input.pcap.gz"
    path.write_bytes(content)
    with pytest.raises(CaptureFormatError) as reader_said:
        read_tcp_packets(str(path))
    with pytest.raises(CaptureFormatError) as probe_said:
        probe(str(path))
    assert str(probe_said.value) == str(reader_said.value)
