"""`zmtplab dissect --jsonl`: the fast output is the event contract's JSON, event for event.

The reference form is `dissect_capture()`: one dict per event, built from `event.to_dict()`.
`dissect_capture_jsonl()` (what the CLI prints with `--jsonl`) writes runs of ordinary frames
straight as JSON when fields are left out (capture/jsonlines.py) and batches its writes; every line
must parse to the reference dict, and be the very bytes `orjson.dumps` makes of it, for every
capture, with and without fields and with `--max-body`.
"""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path

import orjson
import pytest

from zmtplab.capture.dissect import CaptureDissector, DissectResult, dissect_capture, dissect_capture_jsonl
from zmtplab.capture.jsonlines import JsonRun
from zmtplab.capture.pcapwriter import PSH, PcapngWriter
from zmtplab.cli import main
from zmtplab.engine.commands import ping_body, ready_body
from zmtplab.engine.framing import U64, encode_frame, encode_message
from zmtplab.engine.greeting import encode_greeting

SHARED = Path(__file__).resolve().parents[3] / "shared" / "captures"  # shared/ sits beside the repository
OURS = Path(__file__).resolve().parents[2] / "captures"
CAPTURES = sorted(SHARED.glob("*.pcapng")) + sorted(OURS.glob("*.pcapng"))
VARIANTS = [(False, None), (True, None), (False, 8), (True, 8), (False, 0)]
# The bulk capture (420,005 events) is compared whole without fields, in these variants only.
BULK_VARIANTS = {(False, None), (False, 8), (True, None), (True, 8)}

# bulk.pcapng with fields is 220 MB of JSON: its first events are compared (the code path is
# the same for all of them); without fields it is compared whole.
FIELDS_LIMIT = {"bulk.pcapng": 20_000}


@functools.lru_cache(maxsize=8)
def reference(source, with_fields: bool, max_body: int | None, limit: int | None = None) -> list[dict]:
    """The reference dicts (cached: the CLI tests compare against the same; do not modify them)."""
    return list(itertools.islice(dissect_capture(source, with_fields=with_fields, max_body=max_body,
                                                 result=DissectResult()), limit))


def fast_lines(source, with_fields: bool, max_body: int | None, limit: int | None = None) -> list[bytes]:
    lines: list[bytes] = []
    for piece in dissect_capture_jsonl(source, with_fields=with_fields, max_body=max_body, result=DissectResult()):
        lines.extend(piece.encode().splitlines(keepends=True))
        if limit is not None and len(lines) >= limit:
            return lines[:limit]
    return lines


def assert_same(lines: list[bytes], ref: list[dict]) -> None:
    """Each line parses (stdlib json) to its reference event, and is the very text orjson makes of it."""
    assert len(lines) == len(ref)
    assert all(line.endswith(b"\n") for line in lines)
    array = b"[" + b",".join(line[:-1] for line in lines) + b"]"  # one parse for all lines: much faster
    if json.loads(array) != ref or array != orjson.dumps(ref):
        for line, event in zip(lines, ref, strict=True):  # name the first line that differs
            assert json.loads(line) == event
            assert line == orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE)


def _id(path: Path) -> str:
    return f"{'shared' if path.parent == SHARED else 'project'}/{path.name}"


# bulk.pcapng is big: it runs only in BULK_VARIANTS, the other captures in every variant.
CASES = [(path, variant) for path in CAPTURES for variant in VARIANTS
         if path.name != "bulk.pcapng" or variant in BULK_VARIANTS]


@pytest.mark.parametrize(("path", "variant"), CASES, ids=lambda v: _id(v) if isinstance(v, Path) else str(v))
def test_fast_output_equals_reference(path, variant):
    with_fields, max_body = variant
    limit = FIELDS_LIMIT.get(path.name) if with_fields else None
    ref = reference(path, with_fields, max_body, limit)
    assert ref, "every sample capture holds ZMTP"
    assert_same(fast_lines(path, with_fields, max_body, limit), ref)


@pytest.mark.parametrize(("name", "args"), [
    ("bulk.pcapng", ["--no-fields"]),
    *((name, args) for name in ("pub_sub.pcapng", "large.pcapng", "push_pull_multipart.pcapng")
      for args in ([], ["--no-fields"], ["--max-body", "8"], ["--no-fields", "--max-body", "0"])),
])
def test_cli_prints_the_reference(name, args, capsysbinary):
    path = SHARED / name
    assert main(["dissect", "--jsonl", *args, str(path)]) == 0
    out = capsysbinary.readouterr().out
    max_body = int(args[args.index("--max-body") + 1]) if "--max-body" in args else None
    assert_same(out.splitlines(keepends=True), reference(path, "--no-fields" not in args, max_body, None))
    assert out.endswith(b"\n")


# ---------------------------------------------------------------- synthetic captures: odd cuts, gaps, mid-stream


def _greeting_ready(socket_type: bytes) -> bytes:
    return encode_greeting() + encode_frame(ready_body({"Socket-Type": socket_type}), command=True)


def _traffic(seed: int) -> bytes:
    out = []
    for i in range(400):
        r = (i * 7919 + seed) % 100
        if r < 60:
            out.append(encode_message([b"m%d" % i]))
        elif r < 75:
            out.append(encode_message([b"p" * (i % 37), b"q" * (i % 300), b""]))
        elif r < 80:
            out.append(encode_message([bytes(range(256)) * (1 + i % 5)]))
        elif r < 85:
            out.append(b"\x02" + U64.pack(4) + b"long")  # LONG for a short frame: a note
        elif r < 88:
            out.append(b"\x08\x01z")  # a reserved flag bit
        elif r < 92:
            out.append(encode_frame(ping_body(10, b"c%d" % i), command=True))
        else:
            out.append(encode_message([b"\x01topic%d" % i]))
    return b"".join(out)


def synthetic_capture(path: Path) -> Path:
    """Connections cut into odd segment sizes, with lost segments (gaps) and one captured mid-stream."""
    with open(path, "wb") as f:
        writer = PcapngWriter(f)
        ts = 1.7e9
        plans = [(b"PUSH", b"PULL", False, set()), (b"PUB", b"SUB", False, {9, 40}),
                 (b"DEALER", b"ROUTER", True, {1, 2}), (b"XPUB", b"XSUB", False, set())]
        for n, (server, client, skip_syn, lost) in enumerate(plans):
            conn = writer.add_connection(("10.0.0.1", 40000 + n), ("10.0.0.2", 5555 + n))
            if not skip_syn:
                conn.handshake(ts)
            streams = {"s2c": _greeting_ready(server) + _traffic(n), "c2s": _greeting_ready(client) + _traffic(n + 50)}
            pos = {"s2c": 0, "c2s": 0}
            sizes = [1, 3, 7, 64, 500, 1460, 9, 2, 3000, 11]
            k = 0
            while any(pos[d] < len(streams[d]) for d in pos):
                left = [d for d in ("s2c", "c2s") if pos[d] < len(streams[d])]
                d = left[0] if len(left) == 1 or k % 3 else left[1]
                chunk = streams[d][pos[d]:pos[d] + sizes[k % len(sizes)]]
                pos[d] += len(chunk)
                k += 1
                ts += 1e-5
                if k in lost:
                    conn.seq[d] = (conn.seq[d] + len(chunk)) & 0xFFFFFFFF  # never written: a gap
                else:
                    conn.segment(d, ts, chunk, flags=PSH)
            conn.close(ts + 1e-3)
            ts += 1
    return path


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    return synthetic_capture(tmp_path_factory.mktemp("captures") / "synthetic.pcapng")


@pytest.mark.parametrize(("with_fields", "max_body"), VARIANTS, ids=lambda v: str(v))
def test_synthetic_capture(synthetic, with_fields, max_body):
    ref = reference(synthetic, with_fields, max_body)
    kinds = {e["kind"] for e in ref}
    assert {"gap", "expert", "command", "frame", "message"} <= kinds
    assert_same(fast_lines(synthetic, with_fields, max_body), ref)


@pytest.mark.parametrize("with_fields", [False, True])
def test_runs_without_their_packet_fall_back_to_lookups(synthetic, monkeypatch, with_fields):
    """A run emitted apart from the packet it came in (no chunk) gets each event's packets looked up.
    (Runs are JSON runs with fields as without: `dissect --jsonl` writes fields from templates.)"""
    original = CaptureDissector._run_sources
    seen = []

    def detached(self, conn, d, run, chunk):
        seen.append(run)
        return original(self, conn, d, run, None)

    monkeypatch.setattr(CaptureDissector, "_run_sources", detached)
    for path in (synthetic, SHARED / "push_pull_multipart.pcapng", SHARED / "dealer_router.pcapng"):
        assert_same(fast_lines(path, with_fields, None), reference(path, with_fields, None))
    assert seen and all(isinstance(b, JsonRun) for b in seen)


def test_negative_max_body_cuts_as_to_dict_does(synthetic):
    """A negative `--max-body` makes no JSON runs (their cut would differ from `to_dict`'s): same lines."""
    assert_same(fast_lines(synthetic, False, -1), reference(synthetic, False, -1))


@pytest.mark.parametrize("with_fields", [False, True])
def test_feed_of_a_json_dissector_still_gives_dicts(synthetic, with_fields):
    """`feed()` on a dissector built for JSON expands batches into the same dicts."""
    from zmtplab.capture.pcapfile import read_tcp_packets
    from zmtplab.capture.tcpstream import TcpReassembler

    dissector = CaptureDissector(with_fields=with_fields, json=True)
    reassembler = TcpReassembler()
    out = []
    for packet in read_tcp_packets(synthetic):
        for event in reassembler.feed(packet):
            out.extend(dissector.feed(event))
    for event in reassembler.finish():
        out.extend(dissector.feed(event))
    assert out == reference(synthetic, with_fields, None)
