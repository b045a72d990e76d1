"""Reassembly of damaged captures: every sample capture written out of order, duplicated, dropped
and cut (captures/variants.py), checked against the variant's ground truth and against tshark.

The rule (issue 15.1): a byte the capture contains is never reported missing, and a byte it lacks
is always reported missing, exactly.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest

from zmtplab.capture.pcapfile import read_tcp_packets
from zmtplab.capture.tcpstream import StreamData, StreamGap, StreamNote, StreamOpened, reassemble

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "captures").glob("*.pcapng")) + sorted((REPO.parent / "shared" / "captures").glob("*.pcapng"))
# Variants per capture, with a fixed seed: the big files get a few, the small ones more.
COUNTS = {"large": 4, "bulk": 2}
DEFAULT_COUNT = 12
SEED = 15


def _load_variants():
    spec = importlib.util.spec_from_file_location("captures_variants", REPO / "captures" / "variants.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


variants_module = _load_variants()


def sample_id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.name}"


@cache
def variants_of(path: Path) -> list:
    return list(variants_module.variants(path, COUNTS.get(path.stem, DEFAULT_COUNT), SEED))


def streams_by_direction(source) -> tuple[dict, dict]:
    """Reassemble; each direction's stream (gaps as zero bytes) and gaps, keyed (src, sport, dst, dport)."""
    streams: dict = defaultdict(bytearray)
    gaps: dict = defaultdict(list)
    keys: dict = {}
    for ev in reassemble(read_tcp_packets(source)):
        if isinstance(ev, StreamOpened):
            assert (*ev.client, *ev.server) not in keys.values(), "one connection per port pair"
            keys[ev.conn, "c2s"] = (*ev.client, *ev.server)
            keys[ev.conn, "s2c"] = (*ev.server, *ev.client)
        elif isinstance(ev, StreamData):
            buf = streams[keys[ev.conn, ev.dir]]
            assert ev.offset == len(buf)
            buf += ev.data
        elif isinstance(ev, StreamGap):
            buf = streams[keys[ev.conn, ev.dir]]
            assert ev.offset == len(buf)
            gaps[keys[ev.conn, ev.dir]].append((ev.offset, ev.length))
            buf += bytes(ev.length)
    return dict(streams), dict(gaps)


def test_every_sample_capture_is_covered():
    assert len(SAMPLES) >= 30, SAMPLES
    for path in SAMPLES:
        streams, gaps = streams_by_direction(path)
        assert streams and not gaps, f"{path} must reassemble cleanly to serve as the truth"


def test_variants_are_reproducible_and_damaged():
    path = REPO / "captures" / "dealer_router.pcapng"
    first = list(variants_module.variants(path, 6, SEED))
    again = list(variants_module.variants(path, 6, SEED))
    assert [v.data for v in first] == [v.data for v in again]
    assert [v.kind for v in first] == ["mixed", "swap", "ack-first", "duplicate", "drop", "snaplen"]
    original = path.read_bytes()
    assert all(v.what and v.data != original for v in first)


@pytest.mark.parametrize("path", SAMPLES, ids=sample_id)
def test_damaged_variants_reassemble_to_the_bytes_they_hold_and_gaps_exactly_where_they_lack(path):
    original, _ = streams_by_direction(path)
    for v in variants_of(path):
        streams, gaps = streams_by_direction(v.data)
        truth = v.truth
        for key in set(truth.extent) | set(streams):
            where = f"{v.name} ({'; '.join(v.what)}), direction {key}"
            got = bytes(streams.get(key, b""))
            assert len(got) == truth.extent.get(key, 0), where
            assert gaps.get(key, []) == truth.missing(key), where
            want = bytes(original[key][:len(got)])
            mask = bytes(truth.covered.get(key, b""))[:len(got)].ljust(len(got), b"\x00")
            # Where the variant holds a byte, it is the original's; where it lacks one, a gap said so.
            assert bytes(a if m else 0 for a, m in zip(want, mask, strict=True)) == got, where


# ------------------------------------------------------------------ tshark as the referee

_MISSING = re.compile(rb"^\[(\d+) bytes missing in capture file\]\x00?$")
_FIELDS = ["ip.src", "tcp.srcport", "ip.dst", "tcp.dstport", "tcp.seq", "tcp.len", "tcp.flags.syn", "tcp.flags.fin",
           "tcp.payload"]
# tshark's tcp.analysis flags -> the StreamNote kinds that report the same fact (its four kinds of
# retransmission differ by timing and duplicate ACKs; we say whether the segment brought new bytes).
_ANALYSIS = {"tcp.analysis.lost_segment": "lost-segment", "tcp.analysis.retransmission": "retransmission",
             "tcp.analysis.fast_retransmission": "retransmission",
             "tcp.analysis.spurious_retransmission": "retransmission", "tcp.analysis.out_of_order": "retransmission",
             "tcp.analysis.zero_window": "zero-window"}
_RULE = "=" * 67
# The variants tshark referees (it takes a while to start): mixed, swap, ack-first and snaplen.
TSHARK_VARIANTS = (0, 1, 2, 5)


@cache
def tshark_views(path: Path, index: int) -> tuple[tuple[dict, dict, dict], tuple[dict, dict], dict]:
    """One tshark run over a variant: its per-frame TCP fields, the follow-stream of every connection
    and the frames its TCP analysis flags, by StreamNote kind."""
    variant = variants_of(path)[index]
    conns = sum(isinstance(e, StreamOpened) for e in reassemble(read_tcp_packets(variant.data)))
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "variant.pcapng"
        file.write_bytes(variant.data)
        out = subprocess.run(["tshark", "-r", str(file), "-o", "tcp.relative_sequence_numbers:TRUE", "-T", "fields",
                              *(x for f in [*_FIELDS, "frame.number", *_ANALYSIS] for x in ("-e", f)),
                              *(x for n in range(conns) for x in ("-z", f"follow,tcp,raw,{n}"))],
                             capture_output=True, text=True, check=True).stdout
    frames, *blocks = out.split(_RULE)
    follow: tuple[dict, dict] = ({}, {})
    for block in blocks[::2]:  # each follow block sits between two rules
        streams, missing = tshark_follow(block)
        follow[0].update(streams)
        follow[1].update(missing)
    flagged: dict = defaultdict(set)
    for line in filter(None, frames.splitlines()):
        cols = line.split("\t")[len(_FIELDS):]
        for kind, flag in zip(_ANALYSIS.values(), cols[1:], strict=True):
            if flag:
                flagged[kind].add(int(cols[0]))
    return tshark_segments(frames), follow, dict(flagged)


def tshark_segments(out: str) -> tuple[dict, dict, dict]:
    """What tshark's own TCP dissection says each frame carries: per direction, the bytes at each
    relative sequence number, which of them the file holds, and where the stream ends."""
    streams: dict = defaultdict(bytearray)
    held: dict = defaultdict(bytearray)
    extent: dict = defaultdict(int)
    for line in filter(None, out.splitlines()):
        src, sport, dst, dport, seq, size, syn, fin, payload = line.split("\t")[:len(_FIELDS)]
        if syn == "1" or (size == "0" and fin != "1"):
            continue  # a pure ACK places no byte (and a keep-alive sits at seq - 1)
        key = (src, int(sport), dst, int(dport))
        off, size = int(seq) - 1, int(size)
        got = bytes.fromhex(payload)
        for buf in (streams[key], held[key]):
            if len(buf) < off + size:
                buf.extend(bytes(off + size - len(buf)))
        streams[key][off:off + len(got)] = got
        held[key][off:off + len(got)] = b"\x01" * len(got)
        extent[key] = max(extent[key], off + size)
    return dict(streams), dict(held), dict(extent)


def tshark_follow(out: str) -> tuple[dict, dict]:
    """One connection's block of tshark's follow-stream output: each direction's bytes (markers of
    missing bytes as zero bytes) and the (offset, length) of those markers, keyed (src, sport, dst, dport)."""
    nodes = {n: (host, int(port)) for n, host, port in re.findall(r"^Node (\d): (.+):(\d+)$", out, re.M)}
    forward = (*nodes["0"], *nodes["1"])
    backward = (*nodes["1"], *nodes["0"])
    streams: dict = defaultdict(bytearray)
    missing: dict = defaultdict(list)
    for line in out.splitlines()[5:]:
        if not line.strip():
            continue
        key = backward if line.startswith("\t") else forward
        chunk = bytes.fromhex(line.strip())
        marker = _MISSING.match(chunk)
        if marker:
            missing[key].append((len(streams[key]), int(marker[1])))
            streams[key] += bytes(int(marker[1]))
        else:
            streams[key] += chunk
    return dict(streams), dict(missing)


def refereed(path: Path, *, cuts: bool) -> list:
    """(variant, tshark views) of the refereed variants of a capture (with snaplen cuts or not)."""
    vs = variants_of(path)
    chosen = [i for i in TSHARK_VARIANTS if i < len(vs)]
    with ThreadPoolExecutor(2) as pool:
        views = list(pool.map(lambda i: tshark_views(path, i), chosen))
    return [(vs[i], view) for i, view in zip(chosen, views, strict=True)
            if cuts or not any(p.keep is not None for p in vs[i].frames)]


@pytest.mark.capture
@pytest.mark.parametrize("path", SAMPLES, ids=sample_id)
def test_damaged_variants_match_what_tshark_dissects_in_each_frame(path):
    """tshark's per-frame view (its own header decoding, sequence numbers and snaplen handling)
    predicts every variant's streams and gaps exactly."""
    for v, ((theirs, held, extent), _, _) in refereed(path, cuts=True):
        ours, our_gaps = streams_by_direction(v.data)
        for key in set(ours) | set(theirs):
            where = f"{v.name} ({'; '.join(v.what)}), direction {key}"
            mine = bytes(ours.get(key, b""))
            assert len(mine) == extent.get(key, 0), where
            mask = bytes(held.get(key, b"")).ljust(len(mine), b"\x00")
            expected_gaps, pos = [], 0
            while (start := mask.find(0, pos)) >= 0 and start < len(mine):
                stop = mask.find(1, start)
                stop = len(mine) if stop < 0 else stop
                expected_gaps.append((start, stop - start))
                pos = stop
            assert our_gaps.get(key, []) == expected_gaps, where
            assert mine == bytes(theirs.get(key, b"")).ljust(len(mine), b"\x00"), where


@pytest.mark.capture
@pytest.mark.parametrize("path", SAMPLES, ids=sample_id)
def test_damaged_variants_match_tshark_follow_stream(path):
    """tshark's follow-stream agrees byte for byte wherever it shows data.

    tshark 4.0's follow differs in two known ways, both checked here: it drops a segment that comes
    after it marked the segment's bytes missing ("[N bytes missing in capture file]"), where we
    deliver them (the truth says the file holds them); and it silently leaves out bytes a snaplen cut
    lost, shifting what follows, so variants with cuts are refereed by the per-frame test above.
    """
    late = 0
    sample = refereed(path, cuts=False)
    assert sample
    for v, (_, (theirs, their_missing), _) in sample:
        ours, our_gaps = streams_by_direction(v.data)
        for key in set(ours) | set(theirs):
            where = f"{v.name} ({'; '.join(v.what)}), direction {key}"
            mine, their = bytes(ours.get(key, b"")), bytes(theirs.get(key, b""))
            assert len(their) <= len(mine), where
            covered = bytes(v.truth.covered.get(key, b"")).ljust(len(mine), b"\x00")
            pos = 0
            for start, length in [*their_missing.get(key, []), (len(their), 0)]:
                assert mine[pos:start] == their[pos:start], where
                if length and (start, length) not in our_gaps.get(key, []):
                    # tshark gave up bytes that came later: we hold them, and the file does.
                    assert covered[start:start + length] == b"\x01" * length, where
                    late += 1
                pos = start + length
            # tshark says nothing of bytes missing at a stream's end (before its FIN): ours are gaps.
            tail = [g for g in our_gaps.get(key, []) if g[0] >= len(their)]
            assert sum(n for _, n in tail) == len(mine) - len(their), where
    print(f"{path.name}: tshark's follow gave up {late} late runs that we delivered")


@pytest.mark.capture
@pytest.mark.parametrize("path", SAMPLES, ids=sample_id)
def test_tcp_notes_flag_the_frames_tshark_flags(path):
    """Issue 16.8: retransmissions, out-of-order segments, lost segments and zero windows, frame by
    frame as tshark's TCP analysis flags them (`-z expert`), on the damaged variants."""
    for v, (_, _, flagged) in refereed(path, cuts=True):
        ours: dict = defaultdict(set)
        for ev in reassemble(read_tcp_packets(v.data)):
            if isinstance(ev, StreamNote):
                ours["retransmission" if ev.what == "out-of-order" else ev.what].add(ev.packet)
        for kind in ("lost-segment", "retransmission", "zero-window"):
            assert ours.get(kind, set()) == flagged.get(kind, set()), f"{v.name} ({'; '.join(v.what)}): {kind}"
