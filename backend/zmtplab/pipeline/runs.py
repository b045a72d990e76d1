"""Runs of ordinary frames as Arrow record batches, laid out with array operations, no dict per event.

A dense connection is mostly ordinary message frames (flags MORE/LONG, nothing else), and the
decoder hands runs of them over whole (`engine.batch.FrameRun`, via `CaptureDissector.feed_runs`).
Their `frame` and `message` rows follow from the octets alone, so they are laid out here straight
into the stage table's columns (`schemas.STAGE_SCHEMA`): the same rows `rows.events_to_batches` makes
of the dicts `FrameRun.events()` would give, without building those dicts. (Tests compare both.)

The runs of one batch are joined into one buffer; every frame's position, flags, size and event
number then come from numpy over the frame starts the decoder's scan kept, the `hex` column is the
hex of that buffer cut at the frame starts, `body` the hex of the bodies' octets joined (the buffer
without the headers), a message's `frames` are a list view over `body`, and the repeated texts of
fields (names, rules, notes) are taken from one small array made once from the engine's own field
functions, with one `take` per column. A body field's value (text or hex, the contract's rule) is
decided in bulk for printable ASCII bodies (the joined bodies read as text) and for bodies with an
ASCII control character; the engine's `body_value` decides every other body, one call each.
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
from .schemas import FIELD_TYPE, STAGE_SCHEMA

RunItem = tuple[int, int, int, int | None, SourcedRun]  # cap, first_frame, seq of the first event, emit_frame, run

_TYPES = {f.name: f.type for f in STAGE_SCHEMA}
_FRAMINGS = ("3", "2")  # the framings the decoder batches
_DIRS = ("c2s", "s2c")
_BODY = body_field(0, b"")
_DISPLAY_LIMIT = 4096  # body_field's `limit`: longer bodies are shown cut, by the engine's function
# The class bits of an octet for body values: an ASCII control character, or an octet outside ASCII.
_CONTROL, _HIGH = 1, 2
_OCTET_CLASS = np.array([_CONTROL if k < 0x20 or k == 0x7F else _HIGH if k >= 0x80 else 0 for k in range(256)],
                        np.uint8)


@lru_cache(maxsize=1)
def _field_texts() -> dict[str, pa.Array]:
    """The repeated texts of a frame's fields: `name`, `rule` and `note` of its flags field at index
    `combo` (4 * framing + flags), of its size field at 8 + combo, of its body field at 16; `value` of
    its flags field at `combo`.

    Made from `engine.framing.header_fields` and `body_field`, so they are exactly what the engine writes."""
    flag_fields, size_fields = [], []
    for framing in _FRAMINGS:
        for flags in range(4):
            header = bytes([flags]) + (bytes(8) if flags & 2 else b"\0")
            flag, size = header_fields(0, header, framing)
            flag_fields.append(flag)
            size_fields.append(size)
    every = [*flag_fields, *size_fields, _BODY]
    return {
        "name": pa.array([x.name for x in every], pa.string()),
        "rule": pa.array([x.rule for x in every], pa.string()),
        "note": pa.array([x.note for x in every], pa.string()),
        "value": pa.array([x.value for x in flag_fields], pa.string()),
    }


class _Layout:
    """Every frame of a list of runs, as numpy arrays over the runs' joined octets, and their bodies
    joined without the headers (`bodies`, frame i's at `body_at[i]:body_at[i + 1]`)."""

    def __init__(self, runs: list[RunItem]) -> None:
        datas: list[bytes | bytearray] = []
        starts: list[int] = []  # frame positions, each within its run's octets
        counts: list[int] = []  # frames per run
        events: list[int] = []  # events per run
        self.stamps: list[float] = []  # per event, runs one after the other
        self.packets: list[list[int]] = []
        stream_start: list[int] = []
        framings: list[int] = []
        dirs: list[int] = []
        for *_keys, sourced in runs:  # (one pass; the per-frame work is numpy's)
            run = sourced.run
            datas.append(run.data)
            frame_starts = run.starts if run.starts is not None else [p for p, *_rest in run.frames()]
            starts += frame_starts
            counts.append(len(frame_starts))
            events.append(run.count)
            stream_start.append(run.start)
            framings.append(_FRAMINGS.index(run.framing))
            dirs.append(_DIRS.index(sourced.dir))
            self.stamps += sourced.ts
            self.packets += sourced.packets
        self.blob = b"".join(datas)
        n = self.n = len(starts)
        per_run = np.array(counts, np.int64)
        lengths = np.fromiter(map(len, datas), np.int64, len(datas))
        self.run = np.repeat(np.arange(len(runs)), per_run)  # the run of each frame
        run_base = (np.cumsum(lengths) - lengths)[self.run]  # where each frame's run begins in `blob`
        s = self.start = np.array(starts, np.int64) + run_base  # positions in `blob`
        e = self.end = np.empty(n, np.int64)
        e[:-1] = s[1:]  # runs hold whole frames, so a frame ends where the next begins
        e[-1] = len(self.blob)
        octets = self.octets = np.frombuffer(self.blob, np.uint8)
        flags = self.flags = octets[s].astype(np.int64)
        self.long = (flags & 2) != 0
        self.hlen = np.where(self.long, 9, 2)
        self.size = e - s - self.hlen
        self.offset = np.array(stream_start, np.int64)[self.run] + s - run_base
        self.last = (flags & 1) == 0  # the frame ends a message
        self.combo = 4 * np.array(framings, np.int64)[self.run] + flags  # index into _field_texts()
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
        caps, firsts, seqs, emits, _sourced = zip(*runs, strict=True)
        self.cap = np.repeat(np.array(caps, np.int64), per_run)
        self.first_frame = np.repeat(np.array(firsts, np.int64), per_run)
        self.seq = np.repeat(np.array(seqs, np.int64), per_run) + k
        self.emit = np.repeat(np.array([0 if x is None else x for x in emits], np.int64), per_run)
        self.emit_null = np.repeat(np.array([x is None for x in emits]), per_run)
        self.dir = np.repeat(np.array(dirs, np.int64), per_run)
        # The bodies, joined: every octet but the headers' (2, or 9 for LONG, at each frame's start).
        keep = np.ones(len(self.blob), bool)
        keep[s] = False
        keep[s + 1] = False
        for i in range(2, 9):
            keep[s[self.long] + i] = False
        self.bodies = octets[keep]
        self.body_at = np.concatenate(([0], np.cumsum(self.size))).astype(np.int32)

    def body_values(self, hex_bodies: pa.Array) -> pa.Array:
        """The value of each frame's body field: the body as text when it is printable UTF-8, else
        as hex, cut for display (`engine.framing.body_field`). Bodies of printable ASCII and bodies
        with an ASCII control character (never printable) are decided here in bulk; the engine's
        own function decides every other one."""
        octets, at = self.bodies, self.body_at
        # What each body holds, in one pass: the OR over its octets of their class bits (_CONTROL, _HIGH).
        kinds = np.bitwise_or.reduceat(np.append(_OCTET_CLASS[octets], np.uint8(0)), at[:-1])
        kinds[at[:-1] == at[1:]] = 0  # (reduceat gives an empty body the next body's first octet)
        has_control = (kinds & _CONTROL) != 0
        has_high = (kinds & _HIGH) != 0
        shown_whole = self.size <= _DISPLAY_LIMIT
        ascii_text = shown_whole & ~has_control & ~has_high
        as_hex = shown_whole & has_control
        # The bodies as text, read in place: only the rows of printable ASCII (valid UTF-8) are taken from it.
        text = pa.StringArray.from_buffers(self.n, pa.py_buffer(at), pa.py_buffer(octets))
        values = pc.if_else(pa.array(ascii_text), text, hex_bodies)
        others = np.flatnonzero(~(ascii_text | as_hex))
        if len(others):
            data = octets.tobytes()
            found = [body_value(data[a:b]) for a, b in zip(at[others].tolist(), at[others + 1].tolist(), strict=True)]
            mask = np.zeros(self.n, bool)
            mask[others] = True
            values = pc.replace_with_mask(values, pa.array(mask), pa.array(found, pa.string()))
        return values


def runs_to_batches(runs: list[RunItem], *, with_fields: bool = True,
                    max_body: int | None = None) -> list[pa.RecordBatch]:
    """`(cap, first_frame, first seq, emit_frame, run)` items as STAGE_SCHEMA batches (frames, messages)."""
    if not runs:
        return []
    f = _Layout(runs)
    ts = np.array(f.stamps, np.float64)
    packets, packets_at = _packet_lists(f.packets)
    hexes, bodies, whole_bodies, truncated = _texts(f, max_body)
    values = f.body_values(whole_bodies) if with_fields else None

    frame_cols: dict[str, Any] = _keys(f, np.arange(f.n), f.seq, "frame")
    frame_cols.update(
        length=pa.array(f.end - f.start), ts=pa.array(ts[f.event]), packets=packets.take(pa.array(packets_at[f.event])),
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
        assert max_body is not None  # (a frame was cut: there is a limit)
        shown = np.minimum(f.size, max_body)
        sizes = np.add.reduceat(shown, first)
        cut = pa.array(np.where(np.add.reduceat((f.size > shown).astype(np.int64), first) > 0, True, None),
                       pa.bool_())
    event = f.event[last] + 1
    message_cols.update(
        length=pa.array(f.offset[last] + (f.end - f.start)[last] - f.offset[first]), ts=pa.array(ts[event]),
        packets=packets.take(pa.array(packets_at[event])), frames=frames, message_size=pa.array(sizes), truncated=cut)
    if values is not None:
        message_cols["fields"] = _message_fields(f, values, list_offsets)
    return [_batch(frame_cols, f.n), _batch(message_cols, len(last))]


def _packet_lists(lists: list[list[int]]) -> tuple[pa.Array, np.ndarray]:
    """The events' `packets` lists as an Arrow array of the distinct ones and each event's index in it.

    The events of a run that lie within one packet share one list object (`SourcedRun`), so only
    where the object changes is a list converted: a few per packet instead of one per event."""
    ids = np.fromiter(map(id, lists), np.int64, len(lists))
    new = np.empty(len(lists), bool)
    new[:1] = True
    np.not_equal(ids[1:], ids[:-1], out=new[1:])
    firsts = np.flatnonzero(new)
    return pa.array([lists[i] for i in firsts.tolist()], _TYPES["packets"]), np.cumsum(new) - 1


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
    # The bodies' hex from their own joined octets: one hexlify more, cheaper than cutting every header off.
    whole = bodies = pa.StringArray.from_buffers(f.n, pa.py_buffer(2 * f.body_at), pa.py_buffer(
        binascii.hexlify(f.bodies)))
    over = f.size > max_body if max_body is not None else None
    if max_body is None or over is None or not over.any():
        return hexes, bodies, whole, pa.nulls(f.n, pa.bool_())
    cut = 2 * max_body
    mask = pa.array(over)
    bodies = pc.if_else(mask, pc.utf8_slice_codeunits(bodies, 0, cut), bodies)
    cut_hexes = pc.if_else(pa.array(f.long), pc.utf8_slice_codeunits(hexes, 0, 18 + cut),
                           pc.utf8_slice_codeunits(hexes, 0, 4 + cut))
    return pc.if_else(mask, cut_hexes, hexes), bodies, whole, pa.array(np.where(over, True, None), pa.bool_())


def _frame_fields(f: _Layout, values: pa.Array) -> pa.ListArray:
    """Each frame's flags, size and body fields (list<struct>, three per frame)."""
    n = f.n
    texts = _field_texts()
    # Field 3k is frame k's flags field, 3k + 1 its size field, 3k + 2 its body field; their repeated
    # texts are taken from `_field_texts()` at combo, 8 + combo and 16.
    at = np.empty(3 * n, np.int64)
    at[0::3] = f.combo
    at[1::3] = f.combo + 8
    at[2::3] = 16
    index = pa.array(at)
    # A value is the flags' text (`_field_texts()`), the size as text, or the body's value.
    value_at = np.empty(3 * n, np.int64)
    value_at[0::3] = f.combo
    value_at[1::3] = np.arange(8, 8 + n)
    value_at[2::3] = np.arange(8 + n, 8 + 2 * n)
    value_texts = pa.concat_arrays([texts["value"], pc.cast(pa.array(f.size), pa.string()), values])
    children = [
        texts["name"].take(index),
        pa.array(np.stack([f.offset, f.offset + 1, f.offset + f.hlen], axis=1).ravel()),
        pa.array(np.stack([np.ones(n, np.int64), f.hlen - 1, f.size], axis=1).ravel()),
        value_texts.take(pa.array(value_at)),
        texts["rule"].take(index),
        texts["note"].take(index),
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
