"""The conversion between event dicts (the JSON contract) and Arrow rows.

One event is one row. The contract's keys map to columns:

* `conn`, `dir`, `offset`, `length`, `kind`, `ts`, `packets` (array<long>), and `fields` as
  array<struct<name, offset, length, value, rule, note>> where `value` is text (a number or a
  boolean as its JSON text);
* every kind-specific key of the event contract (docs/architecture.md) as its own nullable
  column (`properties` is map<string,string>, `frames` array<string>);
* `extra` (map<string,string>) holds any key the engine adds that has no column yet, and any
  key whose value does not fit its column's type, JSON-encoded, so nothing is ever dropped;
* the pipeline adds `capture` (the input file), `seq` (the event's position within its
  connection), `emit_frame` (the frame whose arrival completed the event, null when the end of
  the capture did) and `message_size` (body octets of a message event).

`row_to_event` turns a row back into the contract's dict; `event_to_comparable` normalises a
`zmtplab dissect` dict the same way (field values as text), so the two compare equal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import accumulate
from operator import itemgetter
from typing import Any

import pyarrow as pa

from ..engine.notation import compact_json_any
from .runs import runs_to_batches
from .schemas import FIELD_TYPE, PIPELINE_COLUMNS, SCALAR_COLUMNS, STAGE_SCHEMA, STR_MAP

_INT = (int,)  # (SCALAR_COLUMNS' python types of an integer column)


def field_value_text(value: Any) -> str | None:
    """A field's value as the table stores it: text as is, anything else as its JSON text."""
    cls = value.__class__
    if cls is str:
        return value
    if cls is int:
        return str(value)
    if value is None:
        return None
    return compact_json_any(value)


MAX_RUN_OCTETS = 64 << 20  # runs of ordinary frames up to this size are laid out as columns (pipeline.runs)


class EventBatcher:
    """Collects event dicts with their connection keys, and runs of ordinary frames
    (`pipeline.runs`), and turns them into Arrow record batches."""

    def __init__(self, max_rows: int = 4096, max_bytes: int = 16 << 20, *, with_fields: bool = True,
                 max_body: int | None = None) -> None:
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.with_fields = with_fields
        self.max_body = max_body
        self._reset()

    def _reset(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.keys: list[tuple[int, int, int, int | None]] = []
        self.runs: list[tuple[int, int, int, int | None, Any]] = []
        self.run_rows = 0
        self.approx_bytes = 0

    def __len__(self) -> int:
        return len(self.events) + self.run_rows

    def add_run(self, cap: int, first_frame: int, seq: int, emit_frame: int | None, run: Any) -> None:
        """A `capture.dissect.SourcedRun` whose first event has sequence number `seq`."""
        if len(run.run.data) > MAX_RUN_OCTETS:
            # Laid out as columns, a run's hex must fit 32-bit string offsets: giant messages go as dicts.
            for k, event in enumerate(run.run.events()):
                item = event.to_dict(with_fields=self.with_fields, max_body=self.max_body)
                item.update(conn=run.conn, dir=run.dir, packets=run.packets[k], ts=run.ts[k])
                self.add(cap, first_frame, seq + k, emit_frame, item)
            return
        self.runs.append((cap, first_frame, seq, emit_frame, run))
        self.run_rows += len(run.run)
        self.approx_bytes += 6 * len(run.run.data) + 256 * len(run.run)

    def add(self, cap: int, first_frame: int, seq: int, emit_frame: int | None, event: dict[str, Any]) -> None:
        self.events.append(event)
        self.keys.append((cap, first_frame, seq, emit_frame))
        # Hex text of an element's octets appears up to three times (body, hex, a field value).
        self.approx_bytes += 6 * event["length"] + 256

    @property
    def full(self) -> bool:
        return len(self) >= self.max_rows or self.approx_bytes >= self.max_bytes

    def flush(self) -> list[pa.RecordBatch]:
        """The collected events as record batches (one per event shape: no copy to merge them)."""
        batches = events_to_batches(self.events, self.keys) if self.events else []
        if self.runs:
            batches += runs_to_batches(self.runs, with_fields=self.with_fields, max_body=self.max_body)
        self._reset()
        return batches


_FIELD_GETTER = itemgetter("name", "offset", "length", "value", "rule", "note")
_FIELD_COLUMN_TYPES = [f.type for f in FIELD_TYPE]
_COLUMN_TYPES = {f.name: f.type for f in STAGE_SCHEMA}
_SCALAR_PY = {name: py for name, (_t, py) in SCALAR_COLUMNS.items()}


def events_to_batch(events: list[dict[str, Any]], keys: list[tuple[int, int, int, int | None]]) -> pa.RecordBatch:
    """Event dicts (with their (cap, first_frame, seq, emit_frame)) as one record batch of STAGE_SCHEMA."""
    parts = events_to_batches(events, keys)
    if len(parts) == 1:
        return parts[0]
    return pa.Table.from_batches(parts, schema=STAGE_SCHEMA).combine_chunks().to_batches()[0]


def events_to_batches(events: list[dict[str, Any]],
                      keys: list[tuple[int, int, int, int | None]]) -> list[pa.RecordBatch]:
    """Event dicts (with their (cap, first_frame, seq, emit_frame)) as record batches of STAGE_SCHEMA.

    Rows come out grouped by the events' key sets (their "shape"), one batch per shape, not in
    the order given: the tables carry their own order columns. A shape whose keys all have
    columns is converted by pyarrow in one call (field values are made text in place first);
    anything unusual (unknown keys, nulls, values of another type) takes a slower path that
    moves what does not fit into `extra`.
    """
    shapes: dict[tuple[str, ...], list[int]] = {}
    for i, e in enumerate(events):
        shape = tuple(e)
        group = shapes.get(shape)
        if group is None:
            shapes[shape] = [i]
        else:
            group.append(i)
    parts = []
    for shape, idx in shapes.items():
        subset = [events[i] for i in idx]
        subkeys = [keys[i] for i in idx]
        batch = _shape_batch_fast(shape, subset, subkeys)
        parts.append(batch if batch is not None else _shape_batch(shape, subset, subkeys))
    return parts or [pa.RecordBatch.from_pylist([], schema=STAGE_SCHEMA)]


_FAST_KEYS = frozenset(name for name in _COLUMN_TYPES if name not in PIPELINE_COLUMNS) | {"conn"}
_struct_types: dict[tuple[str, ...], pa.DataType] = {}


def _key_arrays(keys: list[tuple[int, int, int, int | None]]) -> dict[str, pa.Array]:
    cap, first, seq, emit = zip(*keys, strict=True)
    return {"cap": pa.array(cap, pa.int32()), "first_frame": pa.array(first, pa.int64()),
            "seq": pa.array(seq, pa.int64()), "emit_frame": pa.array(emit, pa.int64())}


def _shape_batch_fast(shape: tuple[str, ...], events: list[dict[str, Any]],
                      keys: list[tuple[int, int, int, int | None]]) -> pa.RecordBatch | None:
    """One pyarrow conversion for a whole shape, or None when the slow path is needed."""
    if not _FAST_KEYS.issuperset(shape):
        return None
    stype = _struct_types.get(shape)
    if stype is None:
        stype = _struct_types[shape] = pa.struct([pa.field(k, _COLUMN_TYPES[k]) for k in shape if k != "conn"])
    if "fields" in shape:
        for e in events:
            fl = e["fields"]
            if fl is None:
                return None
            for f in fl:
                v = f["value"]
                if v.__class__ is not str:
                    f["value"] = str(v) if v.__class__ is int else field_value_text(v)
    try:
        arr = pa.array(events, type=stype)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, ValueError):
        return None
    columns = _key_arrays(keys)
    for i, f in enumerate(stype):
        child = arr.field(i)
        if child.null_count:  # a key present with a null value: the slow path records it in `extra`
            return None
        columns[f.name] = child
    if "frames" in columns and "kind" in shape:
        columns["message_size"] = pa.array(
            [sum(map(len, e["frames"])) // 2 if e["kind"] == "message" else None for e in events], pa.int64())
    n = len(events)
    return pa.RecordBatch.from_arrays([columns[f.name] if f.name in columns else pa.nulls(n, f.type)
                                       for f in STAGE_SCHEMA], schema=STAGE_SCHEMA)


def _shape_batch(shape: tuple[str, ...], events: list[dict[str, Any]],
                 keys: list[tuple[int, int, int, int | None]]) -> pa.RecordBatch:
    n = len(events)
    getter = itemgetter(*shape)
    values = list(zip(*map(getter, events), strict=True)) if len(shape) > 1 else [tuple(map(getter, events))]
    columns: dict[str, Any] = _key_arrays(keys)
    extras: list[Any] = [None] * n
    for key, vals in zip(shape, values, strict=True):
        if key == "conn":
            continue
        if key == "fields":
            columns[key] = _fields_array(vals)
        elif key == "properties":
            if all(isinstance(v, dict) and all(x.__class__ is str for x in v.values()) for v in vals):
                columns[key] = pa.array([list(v.items()) for v in vals], STR_MAP)
            else:
                _to_extra(key, vals, extras)
        elif key == "frames":
            columns[key] = pa.array(vals, pa.list_(pa.string()))
        elif key in _SCALAR_PY:
            columns[key] = _scalar_array(key, list(vals), _COLUMN_TYPES[key], _SCALAR_PY[key], extras)
        elif key in _COLUMN_TYPES and key not in PIPELINE_COLUMNS:
            try:
                columns[key] = pa.array(vals, _COLUMN_TYPES[key])
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                _to_extra(key, vals, extras)
        else:
            _to_extra(key, vals, extras)
    if "frames" in columns and "kind" in shape:
        kinds = values[shape.index("kind")]
        frames = values[shape.index("frames")]
        columns["message_size"] = pa.array(
            [sum(map(len, f)) // 2 if k == "message" and isinstance(f, list) else None
             for k, f in zip(kinds, frames, strict=True)], pa.int64())
    if any(extras):
        columns["extra"] = pa.array([list(x.items()) if x else None for x in extras], STR_MAP)
    arrays = [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in STAGE_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=STAGE_SCHEMA)


def _to_extra(key: str, vals: Iterable[Any], extras: list[Any]) -> None:
    for i, v in enumerate(vals):
        if extras[i] is None:
            extras[i] = {}
        extras[i][key] = compact_json_any(v)


def _fields_array(lists: tuple[Any, ...]) -> pa.Array:
    """list<struct> of the events' fields; an event without fields (None) gets a null list."""
    valid = [fl is not None for fl in lists]
    lists = tuple(fl if fl is not None else () for fl in lists)
    offsets = [0, *accumulate(map(len, lists))]
    flat = [_FIELD_GETTER(f) for fl in lists for f in fl]
    if flat:
        name, offset, length, value, rule, note = zip(*flat, strict=True)
        value = [v if v.__class__ is str else str(v) if v.__class__ is int else field_value_text(v) for v in value]
        cols = [name, offset, length, value, rule, note]
    else:
        cols = [[] for _ in range(6)]
    struct = pa.StructArray.from_arrays([pa.array(c, t) for c, t in zip(cols, _FIELD_COLUMN_TYPES, strict=True)],
                                        fields=list(FIELD_TYPE))
    mask = None if all(valid) else pa.array([not v for v in valid], pa.bool_())
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct, mask=mask)


def _scalar_array(name: str, values: list[Any], atype: pa.DataType, pytypes: tuple[type, ...],
                  extras: list[Any]) -> pa.Array:
    """The column's array; values of an unexpected type move to `extra` instead of failing the batch."""
    if None in values:  # the key was there with a null value: keep that in `extra`
        for i, v in enumerate(values):
            if v is None:
                extras[i] = extras[i] or {}
                extras[i][name] = "null"
    try:
        if atype == pa.int64() and any(v.__class__ is bool for v in values):
            raise TypeError("bool in an integer column")
        return pa.array(values, atype)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        pass
    kept = []
    for i, v in enumerate(values):
        if v is None or (isinstance(v, pytypes) and not (pytypes == _INT and isinstance(v, bool))
                         and not (pytypes == _INT and not -(1 << 63) <= v < (1 << 63))):
            kept.append(v)
        else:
            kept.append(None)
            extras[i] = extras[i] or {}
            extras[i][name] = compact_json_any(v)
    return pa.array(kept, atype)


# --------------------------------------------------------------------------- back to the contract


def row_to_event(row: dict[str, Any], *, keep_pipeline_columns: bool = False) -> dict[str, Any]:
    """A row of the `events` table (as a dict) as the event contract's dict.

    Null kind-specific columns are left out, `extra` is expanded, `properties` becomes a dict.
    Field values stay text (see the module docstring).
    """
    out: dict[str, Any] = {}
    for k, v in row.items():
        if k in PIPELINE_COLUMNS and not keep_pipeline_columns:
            continue
        if v is None:
            continue
        if k == "properties":
            out[k] = dict(v) if not isinstance(v, dict) else v
        elif k == "fields":
            out[k] = [dict(f) if not isinstance(f, dict) else f for f in v]
        elif k == "extra":
            continue
        else:
            out[k] = v
    extra = row.get("extra")
    if extra:
        for k, v in (extra.items() if isinstance(extra, dict) else extra):
            out[k] = json.loads(v)
    return out


def event_to_comparable(event: dict[str, Any]) -> dict[str, Any]:
    """A `zmtplab dissect` event normalised as the table stores it: field values as text."""
    out = dict(event)
    if "fields" in out:
        out["fields"] = [{**f, "value": field_value_text(f["value"])} for f in out["fields"]]
    return out


def rows_of(table: pa.Table | pa.RecordBatch) -> Iterable[dict[str, Any]]:
    """Rows of an Arrow table as dicts (maps as lists of pairs, as pyarrow gives them)."""
    return table.to_pylist()
