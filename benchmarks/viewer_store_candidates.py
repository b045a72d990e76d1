"""The viewer's event store candidates measured on one capture (issue 22.1; the comparison is in
docs/viewer-store.md): what each costs to build, on disk, per page and per search.

- `ours`: the store the viewer uses (`zmtplab.eventstore`: columnar chunks in SQLite, runs kept as octets);
- `fts5`: SQLite, one row per event (its JSON without fields) and an FTS5 trigram index of its searchable text
  (bodies as text, names, expert texts), the classic design;
- `duckdb`: one Parquet file of one row per event (pyarrow, zstd), paged and searched by DuckDB
  (skipped with a note when the `duckdb` module is not importable; it is not a dependency of the project).

The per-row candidates are fed by `dissect_capture(with_fields=False)` (a dict per event, the cost any
row-per-event layout pays); ours by `dissect_capture_runs`. Each prints one line:
`candidate=... build=...s MB/s=... size/capture=... page=...ms search=...s`.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

from zmtplab.capture.dissect import dissect_capture
from zmtplab.eventstore import EventStore, IngestJob, ingest_capture


def searchable(ev: dict) -> str:
    """The text a search looks in: bodies as text (latin-1, so every octet is one character), names, texts."""
    parts = [ev["kind"]]
    for key in ("name", "text", "socket_type", "mechanism", "reason"):
        if isinstance(ev.get(key), str):
            parts.append(ev[key])
    for body in [ev.get("body"), *(ev.get("frames") or [])]:
        if isinstance(body, str) and body:
            parts.append(bytes.fromhex(body).decode("latin-1"))
    return " ".join(parts)


def pages(fetch, total: int, n: int = 30) -> float:
    rng = random.Random(22)
    times = []
    for _ in range(n):
        offset = rng.randrange(max(1, total - 100))
        t = time.perf_counter()
        rows = fetch(offset)
        times.append(time.perf_counter() - t)
        assert rows, offset
    return statistics.median(times)


def ours(capture: Path, work: Path, needle: str) -> dict[str, float]:
    t = time.perf_counter()
    r = ingest_capture(IngestJob(capture, work / "events.sqlite", work / "p.json", work / "cancel",
                                 store_max_body=16 << 20, max_events=10**10, progress_interval=1.0, analysis=False))
    build = time.perf_counter() - t
    store = EventStore(work / "events.sqlite")
    page = pages(lambda o: store.listing(None, o, 100).events, r.events)
    t = time.perf_counter()
    found = store.listing(None, 0, 100, q=needle)
    search = time.perf_counter() - t
    return {"build": build, "size": (work / "events.sqlite").stat().st_size, "page": page, "search": search,
            "found": found.total}


def fts5(capture: Path, work: Path, needle: str) -> dict[str, float]:
    path = work / "fts5.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
        PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
        CREATE TABLE events(pos INTEGER PRIMARY KEY, conn TEXT, idx INTEGER, kind TEXT, json BLOB);
        CREATE VIRTUAL TABLE search USING fts5(text, content='', tokenize='trigram');
    """)
    t = time.perf_counter()
    rows, texts, counts = [], [], {}
    for pos, ev in enumerate(dissect_capture(str(capture), with_fields=False, max_body=1024)):
        idx = counts.get(ev["conn"], 0)
        counts[ev["conn"]] = idx + 1
        rows.append((pos, ev["conn"], idx, ev["kind"], orjson.dumps(ev)))
        texts.append((pos, searchable(ev)))
        if len(rows) >= 50_000:
            db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", rows)
            db.executemany("INSERT INTO search(rowid, text) VALUES (?, ?)", texts)
            rows, texts = [], []
    db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO search(rowid, text) VALUES (?, ?)", texts)
    db.commit()
    build = time.perf_counter() - t
    total = sum(counts.values())
    page = pages(lambda o: db.execute("SELECT json FROM events WHERE pos >= ? ORDER BY pos LIMIT 100",
                                      (o,)).fetchall(), total)
    t = time.perf_counter()
    found = db.execute("SELECT count(*) FROM search WHERE search MATCH ?", (f'"{needle}"',)).fetchone()[0]
    search = time.perf_counter() - t
    db.close()
    return {"build": build, "size": path.stat().st_size, "page": page, "search": search, "found": found}


def duckdb_parquet(capture: Path, work: Path, needle: str) -> dict[str, float] | None:
    try:
        import duckdb
    except ImportError:
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = work / "events.parquet"
    schema = pa.schema([("pos", pa.int64()), ("conn", pa.string()), ("idx", pa.int64()), ("kind", pa.string()),
                        ("json", pa.string()), ("text", pa.string())])
    t = time.perf_counter()
    writer = pq.ParquetWriter(path, schema, compression="zstd")
    cols: dict[str, list] = {name: [] for name in schema.names}
    counts: dict[str, int] = {}
    for pos, ev in enumerate(dissect_capture(str(capture), with_fields=False, max_body=1024)):
        idx = counts.get(ev["conn"], 0)
        counts[ev["conn"]] = idx + 1
        for name, value in (("pos", pos), ("conn", ev["conn"]), ("idx", idx), ("kind", ev["kind"]),
                            ("json", orjson.dumps(ev).decode()), ("text", searchable(ev))):
            cols[name].append(value)
        if len(cols["pos"]) >= 200_000:
            writer.write_table(pa.table(cols, schema=schema))
            cols = {name: [] for name in schema.names}
    writer.write_table(pa.table(cols, schema=schema))
    writer.close()
    build = time.perf_counter() - t
    total = sum(counts.values())
    con = duckdb.connect()
    page = pages(lambda o: con.execute(f"SELECT json FROM '{path}' WHERE pos >= ? ORDER BY pos LIMIT 100",
                                       [o]).fetchall(), total)
    t = time.perf_counter()
    found = con.execute(f"SELECT count(*) FROM '{path}' WHERE contains(text, ?)", [needle]).fetchone()[0]
    search = time.perf_counter() - t
    return {"build": build, "size": path.stat().st_size, "page": page, "search": search, "found": found}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", type=Path)
    parser.add_argument("--needle", default="sunny 21C")
    parser.add_argument("--only", nargs="*", default=["ours", "fts5", "duckdb"])
    args = parser.parse_args()
    size = args.capture.stat().st_size
    print(f"capture: {args.capture} ({size / 1e6:.1f} MB), load {os.getloadavg()[0]:.2f}", flush=True)
    for name, run in (("ours", ours), ("fts5", fts5), ("duckdb", duckdb_parquet)):
        if name not in args.only:
            continue
        with tempfile.TemporaryDirectory(prefix="zmtplab-cand-") as tmp:
            r = run(args.capture, Path(tmp), args.needle)
        if r is None:
            print(f"candidate={name}: not measured (module not importable)")
            continue
        print(f"candidate={name} build={r['build']:.1f}s MB/s={size / 1e6 / r['build']:.1f} "
              f"size/capture={r['size'] / size:.2f} page={r['page'] * 1000:.1f}ms search={r['search']:.3f}s "
              f"found={r['found']} load={os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
