"""Runs of ordinary frames as Arrow record batches, laid out with array operations, no dict per event.

A dense connection is mostly ordinary message frames (flags MORE/LONG, nothing else), and the
decoder hands runs of them over whole (`engine.batch.FrameRun`, via `CaptureDissector.feed_runs`).
Their `frame` and `message` rows follow from the octets alone, so they are laid out here straight
into the stage table's columns (`rows.STAGE_SCHEMA`): the same rows `rows.events_to_batches` makes
of the dicts `FrameRun.events()` would give, without building those dicts. (Tests compare both.)

The runs of one batch are joined into one buffer; every frame's position, flags, size and event
number then come from numpy over the frame starts the decoder's scan kept, the `hex` column is the
hex of that buffer cut at the frame starts, `body` the same text without each header, a message's
`frames` are a list view over `body`, and the repeated texts of fields (names, rules, notes) are
taken from small dictionaries made once from the engine's own field functions. A body field's value
(text or hex, the contract's rule) is decided in bulk for printable ASCII bodies and for bodies with
an ASCII control character; the engine's `body_value` decides every other body, one call each.
(Batches of runs stay far below 2 GiB of hex, so 32-bit string offsets hold: `rows.MAX_RUN_OCTETS`.)

Frame rows and message rows come out as two batches; the tables carry their own order (`seq`).
"""

from __future__ import annotations

import binascii
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..capture.dissect import SourcedRun
from ..engine.framing import body_field, body_value, header_fields
from .rows import FIELD_TYPE, STAGE_SCHEMA

RunItem = tuple[int, int, int, int | None, SourcedRun]  # cap, first_frame, seq of the first event, emit_frame, run

_TYPES = {f.name: f.type for f in STAGE_SCHEMA}
_FRAMINGS = ("3", "2")  # the framings the decoder batches
_DIRS = ("c2s", "s2c")
_BODY = body_field(0, b"")
_DISPLAY_LIMIT = 4096  # body_field's `limit`: longer bodies are shown cut, by the engine's function


@lru_cache(maxsize=1)
def _header_texts() -> dict[str, pa.Array]:
    """The texts of a header's fields for each (framing, flags) combination, index 4 * framing + flags.

    Made from `engine.framing.header_fields`, so they are exactly what the engine writes."""
    parts: dict[str, list[Any]] = {k: [] for k in ("flag_name", "flag_value", "flag_rule", "flag_note",
                                                   "size_name", "size_rule", "size_note")}
    for framing in _FRAMINGS:
        for flags in range(4):
            header = bytes([flags]) + (bytes(8) if flags & 2 else b"\0")
            flag, size = header_fields(0, header, framing)
            for key, value in (("flag_name", flag.name), ("flag_value", flag.value), ("flag_rule", flag.rule),
                               ("flag_note", flag.note), ("size_name", size.name), ("size_rule", size.rule),
                               ("size_note", size.note)):
                parts[key].append(value)
    return {k: pa.array(v, pa.string()) for k, v in parts.items()}


class _Layout:
    """Every frame of a list of runs, as numpy arrays over the runs' joined octets."""

    def __init__(self, runs: list[RunItem]) -> None:
        datas: list[bytes] = []
        starts: list[int] = []
        counts: list[int] = []  # frames per run
        events: list[int] = []  # events per run
        bases: list[int] = []  # where each run's octets begin in `blob`
        self.stamps: list[float] = []  # per event, runs one after the other
        self.packets: list[list[int]] = []
        base = 0
        for _cap, _first, _seq, _emit, sourced in runs:
            run = sourced.run
            frame_starts = run.starts if run.starts is not None else [p for p, *_rest in run.frames()]
            datas.append(bytes(run.data))
            starts += [base + p for p in frame_starts]
            counts.append(len(frame_starts))
            events.append(len(run))
            bases.append(base)
            self.stamps += sourced.ts
            self.packets += sourced.packets
            base += len(run.data)
        self.blob = b"".join(datas)
        n = self.n = len(starts)
        per_run = np.array(counts, np.int64)
        self.run = np.repeat(np.arange(len(runs)), per_run)  # the run of each frame
        s = self.start = np.array(starts, np.int64)  # positions in `blob`
        e = self.end = np.empty(n, np.int64)
        e[:-1] = s[1:]  # runs hold whole frames, so a frame ends where the next begins
        e[-1] = len(self.blob)
        octets = np.frombuffer(self.blob, np.uint8)
        flags = self.flags = octets[s].astype(np.int64)
        self.long = (flags & 2) != 0
        self.hlen = np.where(self.long, 9, 2)
        self.size = e - s - self.hlen
        self.longest = int((e - s).max())
        stream_start = np.array([item[4].run.start for item in runs], np.int64)
        self.offset = stream_start[self.run] + s - np.array(bases, np.int64)[self.run]
        self.last = (flags & 1) == 0  # the frame ends a message
        framing = np.array([_FRAMINGS.index(item[4].run.framing) for item in runs], np.int64)
        self.combo = 4 * framing[self.run] + flags  # index into _header_texts()
        # Event numbers: a frame is followed by its message's event when it ends one.
        done_before = np.cumsum(self.last) - self.last  # messages completed before each frame
        first_of_run = np.cumsum(per_run) - per_run
        local = np.arange(n) - first_of_run[self.run]
        k = local + done_before - done_before[first_of_run][self.run]  # event number within its run
        self.event = (np.cumsum(events) - np.array(events))[self.run] + k  # index into stamps/packets
        self.msg_last = np.flatnonzero(self.last)  # the last frame of each message
        self.msg_first = np.concatenate(([0], self.msg_last[:-1] + 1)).astype(np.int64)
        self.msg_of_frame = done_before
        # Per run values, per frame.
        self.cap = np.repeat(np.array([item[0] for item in runs], np.int64), per_run)
        self.first_frame = np.repeat(np.array([item[1] for item in runs], np.int64), per_run)
        self.seq = np.repeat(np.array([item[2] for item in runs], np.int64), per_run) + k
        emits = [item[3] for item in runs]
        self.emit = np.repeat(np.array([0 if x is None else x for x in emits], np.int64), per_run)
        self.emit_null = np.repeat(np.array([x is None for x in emits]), per_run)
        self.dir = np.repeat(np.array([_DIRS.index(item[4].dir) for item in runs], np.int64), per_run)

    def body_values(self, hex_bodies: pa.Array) -> pa.Array:
        """The value of each frame's body field: the body as text when it is printable UTF-8, else
        as hex, cut for display (`engine.framing.body_field`). Bodies of printable ASCII and bodies
        with an ASCII control character (never printable) are decided here in bulk; the engine's
        own function decides every other one."""
        octets = np.frombuffer(self.blob + b"\0", np.uint8)  # (a last index for reduceat)
        first, end = self.start + self.hlen, self.end
        bounds = np.stack([first, end], axis=1).ravel()  # sums over [first, end) at even places
        empty = first == end  # (where reduceat gives the octet at `first` instead of 0)
        has_control = (np.add.reduceat((octets < 0x20) | (octets == 0x7F), bounds, dtype=np.int64)[::2] > 0) & ~empty
        has_high = (np.add.reduceat(octets >= 0x80, bounds, dtype=np.int64)[::2] > 0) & ~empty
        shown_whole = self.size <= _DISPLAY_LIMIT
        ascii_text = shown_whole & ~has_control & ~has_high
        as_hex = shown_whole & has_control
        frames = pa.BinaryArray.from_buffers(pa.binary(), self.n, [None, pa.py_buffer(
            np.append(self.start, len(self.blob)).astype(np.int32)), pa.py_buffer(self.blob)])
        bodies = _after_headers(frames, self.long, self.longest)
        text = pc.if_else(pa.array(ascii_text), bodies, pa.scalar(b"", pa.binary())).cast(pa.string())
        values = pc.if_else(pa.array(ascii_text), text, hex_bodies)
        others = np.flatnonzero(~(ascii_text | as_hex))
        if len(others):
            blob = self.blob
            found = [body_value(blob[a:b]) for a, b in zip(first[others].tolist(), end[others].tolist(), strict=True)]
            mask = np.zeros(self.n, bool)
            mask[others] = True
            values = pc.replace_with_mask(values, pa.array(mask), pa.array(found, pa.string()))
        return values


def _after_headers(frames: pa.Array, long: np.ndarray, longest: int) -> pa.Array:
    """Each frame (its octets, or their hex) without its header (2 octets, or 9 when LONG).
    `longest` is the longest frame's length in octets."""
    unit = 2 if pa.types.is_string(frames.type) else 1
    slicer = pc.utf8_slice_codeunits if unit == 2 else pc.binary_slice
    # An explicit end: pyarrow 26's binary_slice fails with its default one (INT64_MAX).
    stop = unit * max(longest, 9)
    if long.all():
        return slicer(frames, 9 * unit, stop)
    if not long.any():
        return slicer(frames, 2 * unit, stop)
    return pc.if_else(pa.array(long), slicer(frames, 9 * unit, stop), slicer(frames, 2 * unit, stop))


def runs_to_batches(runs: list[RunItem], *, with_fields: bool = True,
                    max_body: int | None = None) -> list[pa.RecordBatch]:
    """`(cap, first_frame, first seq, emit_frame, run)` items as STAGE_SCHEMA batches (frames, messages)."""
    if not runs:
        return []
    f = _Layout(runs)
    ts = np.array(f.stamps, np.float64)
    packets = pa.array(f.packets, _TYPES["packets"])
    hexes, bodies, whole_bodies, truncated = _texts(f, max_body)
    values = f.body_values(whole_bodies) if with_fields else None

    frame_cols: dict[str, Any] = _keys(f, np.arange(f.n), f.seq, "frame")
    frame_cols.update(
        length=pa.array(f.end - f.start), ts=pa.array(ts[f.event]), packets=packets.take(pa.array(f.event)),
        more=pa.array(~f.last), long=pa.array(f.long), size=pa.array(f.size), body=bodies, hex=hexes,
        truncated=truncated)
    if values is not None:
        frame_cols["fields"] = _frame_fields(f, values)

    last, first = f.msg_last, f.msg_first
    list_offsets = pa.array(np.append(first, f.n).astype(np.int32))
    message_cols: dict[str, Any] = _keys(f, first, f.seq[last] + 1, "message")
    frames = pa.ListArray.from_arrays(list_offsets, bodies)
    if truncated.null_count == len(truncated):
        sizes = np.add.reduceat(f.size, first)
        cut = pa.nulls(len(first), pa.bool_())
    else:
        shown = np.minimum(f.size, max_body)  # type: ignore[call-overload]
        sizes = np.add.reduceat(shown, first)
        cut = pa.array(np.where(np.add.reduceat((f.size > shown).astype(np.int64), first) > 0, True, None),
                       pa.bool_())
    event = f.event[last] + 1
    message_cols.update(
        length=pa.array(f.offset[last] + (f.end - f.start)[last] - f.offset[first]), ts=pa.array(ts[event]),
        packets=packets.take(pa.array(event)), frames=frames, message_size=pa.array(sizes), truncated=cut)
    if values is not None:
        message_cols["fields"] = _message_fields(f, values, list_offsets)
    return [_batch(frame_cols, f.n), _batch(message_cols, len(last))]


def _keys(f: _Layout, rows: np.ndarray, seq: np.ndarray, kind: str) -> dict[str, Any]:
    """The columns every row has, from the frames `rows` (a message's from its first frame)."""
    return {
        "cap": pa.array(f.cap[rows], pa.int32()),
        "first_frame": pa.array(f.first_frame[rows]),
        "seq": pa.array(seq),
        "emit_frame": pa.array(f.emit[rows], pa.int64(), mask=f.emit_null[rows]),
        "dir": pa.array(_DIRS, pa.string()).take(pa.array(f.dir[rows])),
        "offset": pa.array(f.offset[rows]),
        "kind": pa.repeat(pa.scalar(kind, pa.string()), len(rows)),
    }


def _texts(f: _Layout, max_body: int | None) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """The frames' `hex`, `body` and `truncated` columns (bodies cut to `max_body` octets as
    `Frame.to_dict` cuts them), and their whole bodies' hex."""
    text = binascii.hexlify(f.blob)
    offsets = np.append(2 * f.start, 2 * len(f.blob)).astype(np.int32)
    hexes = pa.StringArray.from_buffers(f.n, pa.py_buffer(offsets), pa.py_buffer(text))
    whole = bodies = _after_headers(hexes, f.long, f.longest)
    over = f.size > max_body if max_body is not None else None
    if over is None or not over.any():
        return hexes, bodies, whole, pa.nulls(f.n, pa.bool_())
    cut = 2 * max_body  # type: ignore[operator]
    mask = pa.array(over)
    bodies = pc.if_else(mask, pc.utf8_slice_codeunits(bodies, 0, cut), bodies)
    cut_hexes = pc.if_else(pa.array(f.long), pc.utf8_slice_codeunits(hexes, 0, 18 + cut),
                           pc.utf8_slice_codeunits(hexes, 0, 4 + cut))
    return pc.if_else(mask, cut_hexes, hexes), bodies, whole, pa.array(np.where(over, True, None), pa.bool_())


def _frame_fields(f: _Layout, values: pa.Array) -> pa.ListArray:
    """Each frame's flags, size and body fields (list<struct>, three per frame)."""
    n = f.n
    texts = _header_texts()
    combo = pa.array(f.combo)
    body_at = f.offset + f.hlen

    def three(a: pa.Array, b: pa.Array, c: pa.Array) -> pa.Array:
        """[a0, b0, c0, a1, b1, c1, ...]"""
        order = np.stack([np.arange(n), np.arange(n) + n, np.arange(n) + 2 * n], axis=1).ravel()
        return pa.concat_arrays([a, b, c]).take(pa.array(order))

    def const(text: str) -> pa.Array:
        return pa.repeat(pa.scalar(text, pa.string()), n)

    children = [
        three(texts["flag_name"].take(combo), texts["size_name"].take(combo), const(_BODY.name)),
        pa.array(np.stack([f.offset, f.offset + 1, body_at], axis=1).ravel()),
        pa.array(np.stack([np.ones(n, np.int64), f.hlen - 1, f.size], axis=1).ravel()),
        three(texts["flag_value"].take(combo), pc.cast(pa.array(f.size), pa.string()), values),
        three(texts["flag_rule"].take(combo), texts["size_rule"].take(combo), const(_BODY.rule)),
        three(texts["flag_note"].take(combo), texts["size_note"].take(combo), const(_BODY.note)),
    ]
    struct = pa.StructArray.from_arrays(children, fields=list(FIELD_TYPE))
    return pa.ListArray.from_arrays(pa.array(np.arange(0, 3 * n + 1, 3, dtype=np.int32)), struct)


def _message_fields(f: _Layout, values: pa.Array, list_offsets: pa.Array) -> pa.ListArray:
    """Each message's fields: one body field per frame, named "frame 1", "frame 2"..."""
    n = f.n
    part = np.arange(n) - f.msg_first[f.msg_of_frame]  # 0 for a message's first frame
    names = pa.array([f"frame {i}" for i in range(1, int(part.max()) + 2)], pa.string()).take(pa.array(part))
    children = [
        names,
        pa.array(f.offset + f.hlen),
        pa.array(f.size),
        values,
        pa.repeat(pa.scalar(_BODY.rule, pa.string()), n),
        pa.repeat(pa.scalar(_BODY.note, pa.string()), n),
    ]
    struct = pa.StructArray.from_arrays(children, fields=list(FIELD_TYPE))
    return pa.ListArray.from_arrays(list_offsets, struct)


def _batch(columns: dict[str, Any], n: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([columns[f.name] if f.name in columns else pa.nulls(n, f.type)
                                       for f in STAGE_SCHEMA], schema=STAGE_SCHEMA)
