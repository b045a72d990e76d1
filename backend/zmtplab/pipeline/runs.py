"""Runs of ordinary frames as Arrow record batches, column by column, with no dict per event.

A dense connection is mostly ordinary message frames (flags MORE/LONG, nothing else), and the
decoder hands runs of them over whole (`engine.batch.FrameRun`, via `CaptureDissector.feed_runs`).
Their `frame` and `message` rows follow from the octets alone, so they are laid out here straight
into the stage table's columns (`rows.STAGE_SCHEMA`): the same rows `rows.events_to_batches` makes
of the dicts `FrameRun.events()` would give, without building those dicts. (Tests compare both.)

Each column is one list comprehension per run; the fields' list<struct> column is built as three
struct arrays (every frame's flags, size and body fields) interleaved by one `take`. Frame rows and
message rows come out as two batches; the tables carry their own order (`seq`).
"""

from __future__ import annotations

from functools import lru_cache
from itertools import accumulate, chain
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..capture.dissect import SourcedRun
from ..engine.framing import body_field, header_fields
from .rows import FIELD_TYPE, STAGE_SCHEMA

_TYPES = {f.name: f.type for f in STAGE_SCHEMA}
_FIELD_TYPES = [f.type for f in FIELD_TYPE]
_BODY = body_field(0, b"")
_BODY_NAME, BODY_RULE, BODY_NOTE = _BODY.name, _BODY.rule, _BODY.note

RunItem = tuple[int, int, int, int | None, SourcedRun]  # cap, first_frame, seq of the first event, emit_frame, run


@lru_cache(maxsize=64)
def _header_parts(flags: int, framing: str) -> tuple[str, str, str, str, str, int, str, str]:
    """What a frame header's two fields hold besides their offsets and the size's value: name,
    value, rule and note of the flags field, then name, length, rule and note of the size field."""
    header = bytes([flags]) + (bytes(8) if flags & 2 else b"\0")
    flag, size = header_fields(0, header, framing)
    return flag.name, flag.value, flag.rule, flag.note, size.name, size.length, size.rule, size.note


class _FieldColumns:
    """The six child columns of some fields."""

    __slots__ = ("length", "name", "note", "offset", "rule", "value")

    def __init__(self) -> None:
        self.name: list[str] = []
        self.offset: list[int] = []
        self.length: list[int] = []
        self.value: list[str] = []
        self.rule: list[str] = []
        self.note: list[str] = []

    def array(self) -> pa.StructArray:
        children = [pa.array(c, t) for c, t in zip(
            (self.name, self.offset, self.length, self.value, self.rule, self.note), _FIELD_TYPES, strict=True)]
        return pa.StructArray.from_arrays(children, fields=list(FIELD_TYPE))


class _Rows:
    """Column lists of one kind of row (frames or messages)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.cap: list[int] = []
        self.first_frame: list[int] = []
        self.seq: list[int] = []
        self.emit_frame: list[int | None] = []
        self.dir: list[str] = []
        self.offset: list[int] = []
        self.length: list[int] = []
        self.ts: list[float] = []
        self.packets: list[list[int]] = []
        self.truncated: list[bool | None] = []
        self.extra: dict[str, list[Any]] = {}

    def add_keys(self, cap: int, first_frame: int, emit_frame: int | None, d: str, seq: list[int],
                 sourced: SourcedRun, ks: list[int]) -> None:
        n = len(ks)
        self.cap += [cap] * n
        self.first_frame += [first_frame] * n
        self.emit_frame += [emit_frame] * n
        self.dir += [d] * n
        self.seq += seq
        stamps, packets = sourced.ts, sourced.packets
        self.ts += [stamps[k] for k in ks]
        self.packets += [packets[k] for k in ks]

    def columns(self) -> dict[str, Any]:
        n = len(self.offset)
        out: dict[str, Any] = {
            "cap": pa.array(self.cap, pa.int32()),
            "first_frame": pa.array(self.first_frame, pa.int64()),
            "seq": pa.array(self.seq, pa.int64()),
            "emit_frame": pa.array(self.emit_frame, pa.int64()),
            "dir": pa.array(self.dir, pa.string()),
            "offset": pa.array(self.offset, pa.int64()),
            "length": pa.array(self.length, pa.int64()),
            "kind": pa.array([self.kind] * n, pa.string()),
            "ts": pa.array(self.ts, pa.float64()),
            "packets": pa.array(self.packets, _TYPES["packets"]),
            "truncated": pa.array(self.truncated, pa.bool_()),
        }
        for name, values in self.extra.items():
            out[name] = pa.array(values, _TYPES[name])
        return out


def runs_to_batches(runs: list[RunItem], *, with_fields: bool = True,
                    max_body: int | None = None) -> list[pa.RecordBatch]:
    """`(cap, first_frame, first seq, emit_frame, run)` items as STAGE_SCHEMA batches (frames, messages)."""
    frames, messages = _Rows("frame"), _Rows("message")
    more = frames.extra["more"] = []
    long = frames.extra["long"] = []
    sizes = frames.extra["size"] = []
    bodies = frames.extra["body"] = []
    hexes = frames.extra["hex"] = []
    parts_hex = messages.extra["frames"] = []
    message_sizes = messages.extra["message_size"] = []
    flag_fields, size_fields, body_fields, part_fields = (_FieldColumns(), _FieldColumns(), _FieldColumns(),
                                                          _FieldColumns())
    part_counts: list[int] = []
    for cap, first_frame, seq, emit_frame, sourced in runs:
        run = sourced.run
        data = bytes(run.data)
        h = data.hex()
        start = run.start
        frs = list(run._frames())  # (position, header length, flags, size, end)
        n = len(frs)
        flags_of = [f for _p, _hl, f, _s, _e in frs]
        single = not any(f & 1 for f in flags_of)
        if single:  # every frame is a whole message: frame i is event 2i, its message 2i + 1
            fks = list(range(0, 2 * n, 2))
            mks = list(range(1, 2 * n, 2))
            spans = [(i, i) for i in range(n)]
        else:
            fks, mks, spans = _message_spans(flags_of)

        # ---- frame rows
        frames.add_keys(cap, first_frame, emit_frame, sourced.dir, [seq + k for k in fks], sourced, fks)
        offs = [start + p for p, _hl, _f, _s, _e in frs]
        frames.offset += offs
        frames.length += [e - p for p, _hl, _f, _s, e in frs]
        more += [bool(f & 1) for f in flags_of]
        long += [hl > 2 for _p, hl, _f, _s, _e in frs]
        sizes += [s for _p, _hl, _f, s, _e in frs]
        body_hex = [h[2 * (p + hl):2 * e] for p, hl, _f, _s, e in frs]
        cut2 = None if max_body is None else 2 * max_body
        if cut2 is not None and any(s > max_body for _p, _hl, _f, s, _e in frs):  # type: ignore[operator]
            bodies += [b[:cut2] for b in body_hex]
            hexes += [h[2 * p:2 * (p + hl) + cut2] if len(b) > cut2 else h[2 * p:2 * e]
                      for (p, hl, _f, _s, e), b in zip(frs, body_hex, strict=True)]
            frames.truncated += [True if len(b) > cut2 else None for b in body_hex]
        else:
            bodies += body_hex
            hexes += [h[2 * p:2 * e] for p, _hl, _f, _s, e in frs]
            frames.truncated += [None] * n
        if with_fields:
            values = [body_field(0, data[p + hl:e]).value for p, hl, _f, _s, e in frs]
            parts = [_header_parts(f, run.framing) for f in flags_of]
            _add_header_fields(flag_fields, size_fields, frs, offs, parts)
            body_fields.name += [_BODY_NAME] * n
            body_offs = [o + hl for o, (_p, hl, _f, _s, _e) in zip(offs, frs, strict=True)]
            body_lens = [s for _p, _hl, _f, s, _e in frs]
            body_fields.offset += body_offs
            body_fields.length += body_lens
            body_fields.value += values
            body_fields.rule += [BODY_RULE] * n
            body_fields.note += [BODY_NOTE] * n

        # ---- message rows
        messages.add_keys(cap, first_frame, emit_frame, sourced.dir, [seq + k for k in mks], sourced, mks)
        messages.offset += [offs[a] for a, _b in spans]
        messages.length += [frs[b][4] - frs[a][0] for a, b in spans]
        for a, b in spans:
            hexes_of = body_hex[a:b + 1]
            if cut2 is not None and any(len(x) > cut2 for x in hexes_of):
                hexes_of = [x[:cut2] for x in hexes_of]
                messages.truncated.append(True)
            else:
                messages.truncated.append(None)
            parts_hex.append(hexes_of)
            message_sizes.append(sum(map(len, hexes_of)) // 2)
        if with_fields:
            part_counts += [b - a + 1 for a, b in spans]
            part_fields.name += (["frame 1"] * n if single else
                                 [f"frame {i - a + 1}" for a, b in spans for i in range(a, b + 1)])
            part_fields.offset += body_offs
            part_fields.length += body_lens
            part_fields.value += values
            part_fields.rule += [BODY_RULE] * n
            part_fields.note += [BODY_NOTE] * n
    out = []
    if frames.offset:
        cols = frames.columns()
        if with_fields:
            cols["fields"] = _interleaved(flag_fields, size_fields, body_fields)
        out.append(_batch(cols, len(frames.offset)))
    if messages.offset:
        cols = messages.columns()
        if with_fields:
            offsets = pa.array([0, *accumulate(part_counts)], pa.int32())
            cols["fields"] = pa.ListArray.from_arrays(offsets, part_fields.array())
        out.append(_batch(cols, len(messages.offset)))
    return out


def _message_spans(flags_of: list[int]) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """Event indexes of the frames and of the messages, and each message's (first, last) frame."""
    fks: list[int] = []
    mks: list[int] = []
    spans: list[tuple[int, int]] = []
    k = 0
    first = 0
    for i, flags in enumerate(flags_of):
        fks.append(k)
        k += 1
        if not flags & 1:
            mks.append(k)
            k += 1
            spans.append((first, i))
            first = i + 1
    return fks, mks, spans


def _add_header_fields(flag_fields: _FieldColumns, size_fields: _FieldColumns, frs: list[tuple[int, ...]],
                       offs: list[int], parts: list[tuple[str, str, str, str, str, int, str, str]]) -> None:
    n = len(frs)
    one = parts[0] if all(p is parts[0] for p in parts) else None
    if one is not None:  # one kind of header in the whole run (the usual case): constants repeat
        fn, fv, fr, fno, sn, sl, sr, sno = one
        flag_fields.name += [fn] * n
        flag_fields.value += [fv] * n
        flag_fields.rule += [fr] * n
        flag_fields.note += [fno] * n
        size_fields.name += [sn] * n
        size_fields.length += [sl] * n
        size_fields.rule += [sr] * n
        size_fields.note += [sno] * n
    else:
        flag_fields.name += [p[0] for p in parts]
        flag_fields.value += [p[1] for p in parts]
        flag_fields.rule += [p[2] for p in parts]
        flag_fields.note += [p[3] for p in parts]
        size_fields.name += [p[4] for p in parts]
        size_fields.length += [p[5] for p in parts]
        size_fields.rule += [p[6] for p in parts]
        size_fields.note += [p[7] for p in parts]
    flag_fields.offset += offs
    flag_fields.length += [1] * n
    size_fields.offset += [o + 1 for o in offs]
    size_fields.value += [str(s) for _p, _hl, _f, s, _e in frs]


def _interleaved(*columns: _FieldColumns) -> pa.ListArray:
    """list<struct>: row i holds the i-th field of each of `columns`, in that order."""
    arrays = [c.array() for c in columns]
    n, k = len(arrays[0]), len(arrays)
    flat = pa.concat_arrays(arrays)
    order = pa.array(list(chain.from_iterable(range(i, n * k, n) for i in range(n))), pa.int64())
    return pa.ListArray.from_arrays(pa.array(range(0, n * k + 1, k), pa.int32()), pc.take(flat, order))


def _batch(columns: dict[str, Any], n: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([columns[f.name] if f.name in columns else pa.nulls(n, f.type)
                                       for f in STAGE_SCHEMA], schema=STAGE_SCHEMA)
