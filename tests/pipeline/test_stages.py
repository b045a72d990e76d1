"""The pipeline's logic without Spark: ranges -> packets keyed by connection -> shuffled into
partitions -> sorted -> reassembled and dissected per group -> connections numbered by first
frame. The events equal `zmtplab dissect`'s, row for row and in the same order."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pipeline_util import (
    PROJECT,
    SHARED,
    busy_capture,
    dissect_reference,
    order_key,
    streams_of,
    write_classic_pcap,
)

from zmtplab.pipeline.plan import make_plan
from zmtplab.pipeline.ranges import read_range_located
from zmtplab.pipeline.rows import row_to_event
from zmtplab.pipeline.sink import finalize
from zmtplab.pipeline.source import read_partition
from zmtplab.pipeline.stages import connections_partition, dissect_partition

SOURCES = [SHARED / "req_rep.pcapng", SHARED / "pub_sub.pcapng", PROJECT / "curve.pcapng",
           SHARED / "dealer_router.pcapng", PROJECT / "plain_ok.pcapng"]


def local_pipeline(paths: list[Path], *, split_size: int, partitions: int,
                   inline: bool = False) -> tuple[dict[str, list[dict]], list]:
    """What the Spark job does, in one process: returns events by capture (in dissect order) and the plan's errors."""
    plan = make_plan([str(p) for p in paths], split_size=split_size)
    packets = pa.Table.from_batches([b for part in plan.partitions for b in read_partition(part, inline=inline)])
    part_of = pc.bit_wise_and(packets.column("flow"), partitions - 1)  # the "shuffle"
    shards = []
    for p in range(partitions):
        shard = packets.filter(pc.equal(part_of, p))
        shards.append(shard.sort_by([("cap", "ascending"), ("flow", "ascending"), ("frame", "ascending")]))
    conns = pa.Table.from_batches(
        [b for s in shards for b in connections_partition(s.to_batches(max_chunksize=997))])
    ids: dict[tuple[int, int], str] = {}
    for cap in set(conns.column("cap").to_pylist()):
        firsts = sorted(f for c, f in zip(conns.column("cap").to_pylist(), conns.column("first_frame").to_pylist(),
                                          strict=True) if c == cap)
        ids.update({(cap, f): str(i) for i, f in enumerate(firsts)})
    names = [c.name for c in plan.captures]
    rows = []
    for s in shards:
        for batch in dissect_partition(s.to_batches(max_chunksize=997), paths=[c.path for c in plan.captures],
                                       max_rows=64):
            rows.extend(finalize(batch, ids, names).to_pylist())
    by_capture: dict[str, list[dict]] = {}
    for row in rows:
        by_capture.setdefault(row["capture"], []).append(row)
    return {k: [row_to_event(r) for r in sorted(v, key=order_key)] for k, v in by_capture.items()}, plan.errors


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> list[Path]:
    d = tmp_path_factory.mktemp("stages")
    busy = d / "busy.pcapng"
    busy_capture(busy, SOURCES, late_interface=True, new_section=True, simple_blocks=True)
    busy_pcap = d / "busy.pcap"
    busy_capture(busy_pcap, SOURCES, format="pcap", mss=536)
    head = d / "bulk_head.pcap"
    write_classic_pcap(SHARED / "bulk.pcapng", head, max_frames=600)
    return [busy, busy_pcap, head]


def test_recorded_captures_match_dissect_row_for_row():
    paths = [p for p in sorted(SHARED.glob("*.pcapng")) + sorted(PROJECT.glob("*.pcapng")) if p.name != "bulk.pcapng"]
    got, errors = local_pipeline(paths, split_size=16 << 10, partitions=4)
    assert errors == []
    for path in paths:
        ref, _result = dissect_reference(path)
        assert got.get(str(path), []) == ref, path.name


@pytest.mark.parametrize("inline", [False, True], ids=["payload-offsets", "inline-payloads"])
def test_interleaved_connections_port_reuse_and_split_files_match_dissect(synthetic, inline):
    got, errors = local_pipeline(synthetic, split_size=2048, partitions=2, inline=inline)
    assert errors == []
    for path in synthetic:
        ref, _result = dissect_reference(path)
        assert got[str(path)] == ref, path.name
    conns = {e["conn"] for e in got[str(synthetic[0])]}
    assert len(conns) >= 8  # port reuse made a connection of its own


def test_packets_out_of_order_within_a_group_are_refused():
    plan = make_plan([str(SHARED / "req_rep.pcapng")])
    packets = pa.Table.from_batches([b for part in plan.partitions for b in read_partition(part, inline=True)])
    shuffled = packets.sort_by([("frame", "descending")])
    with pytest.raises(RuntimeError, match="out of order"):
        list(dissect_partition(shuffled.to_batches()))


@pytest.mark.parametrize("linktype", [0, 1, 101, 108, 113, 228, 229, 276])
def test_payload_offsets_point_at_the_payload_for_every_link_type(tmp_path, linktype):
    from zmtplab.capture.pcapwriter import PcapngWriter

    path = tmp_path / f"lt{linktype}.pcapng"
    with open(path, "wb") as f:
        w = PcapngWriter(f, linktype=linktype, snaplen=200 if linktype == 1 else 262144)
        v6 = linktype == 229
        conn = w.add_connection(("fd00::1" if v6 else "10.0.0.1", 40000), ("fd00::2" if v6 else "10.0.0.2", 5555))
        conn.handshake(1.0)
        for i, (direction, data) in enumerate(streams_of(SHARED / "req_rep.pcapng")):
            conn.send(direction, data + bytes(300 * (i % 2)), 2.0 + i)
        conn.close(9.0)
    plan = make_plan([str(path)])
    located = [x for part in plan.partitions for r in part for x in read_range_located(r)]
    data = path.read_bytes()
    with_payload = [(p, o) for p, o in located if p.payload]
    assert with_payload
    for pkt, offset in with_payload:
        assert offset is not None
        assert data[offset:offset + len(pkt.payload)] == pkt.payload
