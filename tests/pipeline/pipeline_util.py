"""Helpers of the pipeline tests: what `zmtplab dissect` says about a capture, and the pipeline's
tables read back as the event contract, both in the same order."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from zmtplab.capture.dissect import DissectResult, dissect_capture
from zmtplab.capture.errors import CaptureFormatError
from zmtplab.capture.pcapfile import CaptureReader
from zmtplab.pipeline.rows import event_to_comparable, row_to_event

SHARED = Path(__file__).resolve().parents[3] / "shared" / "captures"  # shared/ sits beside the repository
PROJECT = Path(__file__).resolve().parents[2] / "captures"


def dissect_reference(path: str | Path) -> tuple[list[dict[str, Any]], DissectResult]:
    """`zmtplab dissect`'s events for a capture (field values as text), in its output order."""
    result = DissectResult()
    events = [event_to_comparable(e) for e in dissect_capture(str(path), result=result)]
    return events, result


def order_key(row: dict[str, Any]) -> tuple:
    """The pipeline's rows in `zmtplab dissect` order: by the frame that completed each event
    (end of capture last), then connection number, then position within the connection."""
    emit = row["emit_frame"]
    return (emit is None, emit or 0, int(row["conn"]), row["seq"])


def read_events(out: str | Path, skip: tuple[str, ...] = ()) -> dict[str, list[dict[str, Any]]]:
    """The `events` table grouped by capture (except `skip`), each list in dissect order."""
    table = pq.read_table(Path(out) / "events")
    if skip:
        table = table.filter(pc.invert(pc.is_in(table.column("capture"), pa.array(list(skip)))))
    by_capture: dict[str, list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        by_capture.setdefault(row["capture"], []).append(row)
    for rows in by_capture.values():
        rows.sort(key=order_key)
    return by_capture


def as_events(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row_to_event(r) for r in rows]


def read_capture_table(out: str | Path, capture: str) -> pa.Table:
    """One capture's rows of the `events` table, in dissect order, as Arrow."""
    table = pq.read_table(Path(out) / "events", filters=[("capture", "=", capture)])
    emit = table.column("emit_frame")
    keyed = table.append_column("_end", pc.is_null(emit)).append_column("_conn", pc.cast(table.column("conn"),
                                                                                          pa.int64()))
    keyed = keyed.sort_by([("_end", "ascending"), ("emit_frame", "ascending"), ("_conn", "ascending"),
                           ("seq", "ascending")])
    return keyed.drop_columns(["_end", "_conn"])


def same_as_dissect_arrow(out: str | Path, path: str | Path) -> bool:
    """Column-by-column comparison in Arrow of a capture's table rows with `zmtplab dissect`'s events
    (converted by the same code whose round trip test_rows checks): fast for big captures."""
    import gc

    from zmtplab.pipeline.rows import events_to_batch

    got = read_capture_table(out, str(path))
    batches, conns, chunk = [], [], []
    old = gc.get_threshold()
    gc.set_threshold(20000, 20, 20)
    try:
        for event in dissect_capture(str(path)):
            chunk.append(event)
            if len(chunk) == 4096:
                n = len(conns)
                batches.append(events_to_batch(chunk, [(0, 0, n + i, None) for i in range(len(chunk))]))
                conns.extend(e["conn"] for e in chunk)
                chunk = []
        n = len(conns)
        batches.append(events_to_batch(chunk, [(0, 0, n + i, None) for i in range(len(chunk))]))
        conns.extend(e["conn"] for e in chunk)
    finally:
        gc.set_threshold(*old)
    ref = pa.Table.from_batches(batches).sort_by("seq")
    if got.num_rows != ref.num_rows:
        return False
    if not got.column("conn").combine_chunks().equals(pa.array(conns, pa.string())):
        return False
    for name in ref.schema.names:
        if name in ("cap", "first_frame", "seq", "emit_frame"):
            continue
        if not got.column(name).combine_chunks().equals(ref.column(name).combine_chunks()):
            return False
    return True


def task_inputs(paths: list[Path]) -> tuple[Any, pa.Table, dict[str, Any]]:
    """What the events pass's tasks get for `paths`, without Spark: the plan, every packet sorted as the shuffle
    sorts them, and the run's broadcast (connection ids numbered as the connections pass numbers them)."""
    from zmtplab.pipeline.plan import make_plan
    from zmtplab.pipeline.source import read_partition
    from zmtplab.pipeline.stages import connections_partition

    plan = make_plan([str(p) for p in paths])
    packets = pa.Table.from_batches([b for part in plan.partitions for b in read_partition(part)])
    packets = packets.sort_by([("cap", "ascending"), ("flow", "ascending"), ("frame", "ascending")])
    conns = pa.Table.from_batches(list(connections_partition(packets.to_batches())))
    ids: dict[tuple[int, int], str] = {}
    for cap, first in sorted(zip(conns.column("cap").to_pylist(), conns.column("first_frame").to_pylist(),
                                 strict=True)):
        ids[(cap, first)] = str(sum(1 for c, _f in ids if c == cap))
    run = {"ids": ids, "names": [c.name for c in plan.captures], "paths": [c.path for c in plan.captures]}
    return plan, packets, run


def read_table(out: str | Path, name: str) -> list[dict[str, Any]]:
    return pq.read_table(Path(out) / name).to_pylist()


def write_classic_pcap(source: str | Path, target: str | Path, *, max_frames: int | None = None,
                       nanoseconds: bool = False) -> int:
    """Rewrites a capture as classic pcap (little-endian, micro- or nanosecond); returns the frames written."""
    reader = CaptureReader(str(source))
    div = 1_000_000_000 if nanoseconds else 1_000_000
    magic = 0xA1B23C4D if nanoseconds else 0xA1B2C3D4
    n = 0
    with open(target, "wb") as out:
        linktype = None
        for frame in reader.frames():
            if linktype is None:
                linktype = frame.linktype
                out.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 262144, linktype))
            sec = int(frame.ts)
            frac = min(div - 1, round((frame.ts - sec) * div))
            out.write(struct.pack("<IIII", sec, frac, len(frame.data), frame.orig_len))
            out.write(frame.data)
            n += 1
            if max_frames is not None and n >= max_frames:
                break
    return n


def block_offsets(path: str | Path) -> list[int]:
    """Start offsets of the blocks of a little-endian pcapng file."""
    data = Path(path).read_bytes()
    pos, out = 0, []
    while pos + 8 <= len(data):
        out.append(pos)
        pos += struct.unpack_from("<I", data, pos + 4)[0]
    return out


def sequential_error(path: str | Path) -> str | None:
    """The error a sequential read of the file ends with (None when it reads to the end)."""
    try:
        for _ in CaptureReader(str(path)).frames():
            pass
    except CaptureFormatError as exc:
        return str(exc)
    return None


# --------------------------------------------------------------------------- synthetic captures


def streams_of(path: str | Path) -> list[tuple[str, bytes]]:
    """The (direction, bytes) deliveries of a recorded capture's first connection, in order."""
    from zmtplab.capture.pcapfile import read_tcp_packets
    from zmtplab.capture.tcpstream import StreamData, reassemble

    out = []
    for ev in reassemble(read_tcp_packets(str(path))):
        if isinstance(ev, StreamData) and ev.conn == "0":
            out.append((ev.dir, bytes(ev.data)))
    return out


def busy_capture(path: str | Path, sources: list[str | Path], *, format: str = "pcapng", byteorder: str = "<",
                 reuse_port: bool = True, late_interface: bool = False, new_section: bool = False,
                 simple_blocks: bool = False, rst: bool = True, ipv6: bool = True, mss: int = 1460) -> int:
    """A capture of several ZMTP connections replayed from `sources`, their packets interleaved.

    Connection i runs from 10.0.0.(i+1):(40000+i) to 10.0.1.1:5555 (the last one over IPv6 when
    `ipv6`); with `reuse_port` a further connection reuses connection 0's address pair after it
    closed (a new ISN: a new connection); with `rst` one connection ends with a RST. pcapng
    extras: an interface described after packets were written, a second section in the other
    byte order, and pure ACKs in simple packet blocks. Returns the number of frames.
    """
    from zmtplab.capture.pcapfile import LINKTYPE_ETHERNET, LINKTYPE_RAW
    from zmtplab.capture.pcapwriter import ACK, RST, PcapngWriter

    with open(path, "wb") as f:
        w = PcapngWriter(f, format=format, byteorder=byteorder, resolution="us", mss=mss)  # type: ignore[arg-type]
        ts = 1_700_000_000.0

        def scripts(first: int, srcs: list, iface: int = 0) -> list[list]:
            out = []
            for i, src in enumerate(srcs):
                n = first + i
                v6 = ipv6 and i == len(srcs) - 1 and len(srcs) > 1
                client = (f"fd00::{n + 1}", 40000 + n) if v6 else (f"10.0.0.{n + 1}", 40000 + n)
                server = ("fd00::100", 5555) if v6 else ("10.0.1.1", 5555)
                out.append([w.add_connection(client, server, interface=iface), list(streams_of(src)), "open"])
            return out

        def play(conns: list[list], *, end_rst: int | None = None) -> None:
            nonlocal ts
            while any(c[2] != "done" for c in conns):
                for k, c in enumerate(conns):
                    conn, chunks, state = c
                    ts += 0.001
                    if state == "open":
                        conn.handshake(ts)
                        c[2] = "data"
                    elif state == "data" and chunks:
                        direction, data = chunks.pop(0)
                        conn.send(direction, data, ts)
                        if simple_blocks and format == "pcapng" and conn.interface == 0 and len(chunks) % 3 == 0:
                            conn.segment("s2c" if direction == "c2s" else "c2s", ts, flags=ACK, block="spb")
                    elif state == "data":
                        if end_rst == k:
                            conn.segment("c2s", ts, flags=RST | ACK)
                        else:
                            conn.close(ts)
                        c[2] = "done"

        conns = scripts(0, sources)
        play(conns, end_rst=1 if rst and len(conns) > 2 else None)
        if reuse_port:
            again = w.add_connection(("10.0.0.1", 40000), ("10.0.1.1", 5555), isn_client=0x5EED0001)
            play([[again, list(streams_of(sources[-1])), "open"]])
        if late_interface and format == "pcapng":
            iface = w.add_interface(LINKTYPE_RAW, tsresol=6)
            play(scripts(len(sources) + 1, sources[:2], iface))
        if new_section and format == "pcapng":
            w.new_section(">" if byteorder == "<" else "<")
            w.add_interface(LINKTYPE_ETHERNET, tsresol=9)
            play(scripts(len(sources) + 3, sources[:2]))
        return w.frames
