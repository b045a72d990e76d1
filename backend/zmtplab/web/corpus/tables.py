"""Pages of a corpus run's Parquet tables (`events`, `connections`, `errors`), read with pyarrow.

No Spark: the web process reads the files the pipeline wrote. The tables have no order of their
own (each dissect task writes its own file, rows grouped by event shape), so a page is found in
two steps: the few key columns of the matching rows are read and sorted (the order is cached per
filter, so paging on is cheap), then only the rows of the page are read in full with `take`.

Orders: `events` in `zmtplab dissect` order within each capture (by the frame that completed the
event, end of capture last, then connection number and position), `connections` by connection
number, `errors` by offset; captures in the order the run was given them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pyarrow is imported when a table is first read: the server starts without it
    import pyarrow as pa
    import pyarrow.dataset as ds

TABLES = ("events", "connections", "errors")
# Key columns read to order each table (besides `capture`), and the sort after the capture's rank.
_ORDER: dict[str, tuple[list[str], list[str]]] = {
    "events": (["emit_frame", "conn", "seq"], ["_end", "emit_frame", "_conn", "seq"]),
    "connections": (["conn"], ["_conn"]),
    "errors": (["offset"], ["offset"]),
}
# The filters each table takes (columns compared for equality).
FILTERS = {"events": ("capture", "kind", "conn", "dir"), "connections": ("capture", "conn"),
           "errors": ("capture", "kind")}
_MAX_CACHED_ROWS = 20_000_000  # positions kept by the order cache, over all its entries (8 bytes each)


class UnknownTable(KeyError):
    """No table of this name."""


@dataclass(frozen=True)
class TableQuery:
    """One page: table, filters (None: any) and the slice."""

    table: str
    offset: int = 0
    limit: int = 100
    capture: str | None = None  # the value of the `capture` column (the path the pipeline was given)
    kind: str | None = None
    conn: str | None = None
    dir: str | None = None
    fields: bool = False  # events only: include each event's `fields` (large)


class TableReader:
    """Reads pages of finished runs' tables; thread-safe (routes call it from worker threads)."""

    def __init__(self, max_cell: int = 2048, cache_entries: int = 16) -> None:
        self.max_cell = max_cell
        self.cache_entries = cache_entries
        self._orders: OrderedDict[tuple, pa.Array] = OrderedDict()
        self._lock = threading.Lock()

    def page(self, out_dir: Path, query: TableQuery, captures: list[str]) -> tuple[list[dict[str, Any]], int]:
        """The rows of the page (JSON-ready dicts) and how many rows match the filters.

        `captures` are the run's `capture` values in the run's order (they order the rows).
        """
        import pyarrow.dataset as ds
        if query.table not in TABLES:
            raise UnknownTable(query.table)
        dataset = ds.dataset(out_dir / query.table, format="parquet")
        expr = _filter(query)
        positions = self._order(out_dir, dataset, query, expr, captures)
        total = len(positions)
        wanted = positions[query.offset: query.offset + query.limit]
        if not len(wanted):
            return [], total
        columns = [n for n in dataset.schema.names if query.fields or n != "fields"]
        rows = dataset.take(wanted, columns=columns, filter=expr)
        types = {f.name: f.type for f in rows.schema}
        return [self._row(r, types) for r in rows.to_pylist()], total

    def forget(self, out_dir: Path) -> None:
        """Drops the cached orders of one run (before it is deleted)."""
        with self._lock:
            for key in [k for k in self._orders if k[0] == str(out_dir)]:
                del self._orders[key]

    def _order(self, out_dir: Path, dataset: ds.Dataset, query: TableQuery, expr: ds.Expression | None,
               captures: list[str]) -> pa.Array:
        """Positions (within the filtered scan) of the matching rows, in display order."""
        import pyarrow as pa
        import pyarrow.compute as pc
        key = (str(out_dir), query.table, query.capture, query.kind, query.conn, query.dir)
        with self._lock:
            cached = self._orders.get(key)
            if cached is not None:
                self._orders.move_to_end(key)
                return cached
        columns, sort = _ORDER[query.table]
        keys = dataset.to_table(columns=["capture", *columns], filter=expr)
        rank = pc.index_in(keys.column("capture"), value_set=pa.array(captures, pa.string()))
        keys = keys.append_column("_rank", pc.fill_null(rank, len(captures)))
        if "conn" in columns:
            keys = keys.append_column("_conn", _conn_numbers(keys.column("conn")))
        if "emit_frame" in columns:
            keys = keys.append_column("_end", pc.is_null(keys.column("emit_frame")))
        positions = pc.sort_indices(keys, sort_keys=[(c, "ascending") for c in ["_rank", *sort]])
        with self._lock:
            self._orders[key] = positions
            while len(self._orders) > self.cache_entries or (
                    len(self._orders) > 1 and sum(len(v) for v in self._orders.values()) > _MAX_CACHED_ROWS):
                self._orders.popitem(last=False)
        return positions

    def _row(self, row: dict[str, Any], types: dict[str, pa.DataType]) -> dict[str, Any]:
        """A row as JSON: maps as objects, long texts (hex bodies) cut to `max_cell` characters."""
        import pyarrow as pa
        out: dict[str, Any] = {}
        for name, value in row.items():
            t = types[name]
            if value is None:
                out[name] = None
            elif pa.types.is_map(t):
                out[name] = {k: self._cut(v) for k, v in value}
            elif isinstance(value, str):
                out[name] = self._cut(value)
            elif isinstance(value, list) and value and isinstance(value[0], str):
                out[name] = [self._cut(v) for v in value]
            else:
                out[name] = value
        return out

    def _cut(self, value: Any) -> Any:
        if isinstance(value, str) and len(value) > self.max_cell:
            return value[: self.max_cell] + "\u2026"
        return value


def _filter(query: TableQuery) -> ds.Expression | None:
    import pyarrow.compute as pc
    expr = None
    for name in FILTERS[query.table]:
        value = getattr(query, name)
        if value is None:
            continue
        term = pc.field(name) == value
        expr = term if expr is None else expr & term
    return expr


def _conn_numbers(conn: pa.ChunkedArray) -> pa.ChunkedArray:
    """Connection ids ("0", "1", ...) as numbers, so "10" sorts after "9"."""
    import pyarrow as pa
    import pyarrow.compute as pc
    try:
        return pc.cast(conn, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # not numbers: keep their text order
        return pc.cast(conn, pa.string())
