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
