"""Runs of ordinary frames laid out as columns give exactly the rows their events' dicts give."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zmtplab.capture.dissect import SourcedRun
from zmtplab.engine.batch import FrameRun, scan_run
from zmtplab.engine.framing import encode_frame
from zmtplab.pipeline import rows
from zmtplab.pipeline.rows import EventBatcher, events_to_batches
from zmtplab.pipeline.runs import runs_to_batches

BODIES = st.one_of(
    st.binary(max_size=40),
    st.text(alphabet="abc xyz:0123", max_size=30).map(str.encode),
    st.integers(256, 5000).map(lambda n: bytes([0x41 + n % 26]) * n),  # LONG frames, some over the 4096 display cut
)
MESSAGES = st.lists(st.lists(BODIES, min_size=1, max_size=4), min_size=1, max_size=12)


def make_run(messages: list[list[bytes]], framing: str, start: int, *, keep_starts: bool = True) -> FrameRun:
    data = b"".join(encode_frame(body, more=i < len(parts) - 1) for parts in messages for i, body in enumerate(parts))
    end, count, starts = scan_run(bytearray(data), 0)
    assert end == len(data) and len(starts) == sum(map(len, messages))
    return FrameRun(start, data, start, framing, count, starts if keep_starts else None)


def expected_rows(items, *, with_fields: bool, max_body: int | None) -> list[dict]:
    """The rows `events_to_batches` makes of the dicts of the runs' events."""
    events, keys = [], []
    for cap, first, seq, emit, sourced in items:
        for k, event in enumerate(sourced.run.events()):
            d = event.to_dict(with_fields=with_fields, max_body=max_body)
            d.update(conn=sourced.conn, dir=sourced.dir, packets=sourced.packets[k], ts=sourced.ts[k])
            events.append(d)
            keys.append((cap, first, seq + k, emit))
    return sorted((r for b in events_to_batches(events, keys) for r in b.to_pylist()),
                  key=lambda r: (r["cap"], r["seq"]))


RUNS = st.lists(st.tuples(MESSAGES, st.sampled_from(["3", "2"]), st.integers(0, 1 << 40), st.booleans(),
                          st.sampled_from(["c2s", "s2c"]), st.one_of(st.none(), st.integers(1, 10**6))),
                min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(runs=RUNS, with_fields=st.booleans(), max_body=st.sampled_from([None, 0, 1, 7, 300, 4096]))
def test_columns_equal_the_rows_of_the_events_dicts(runs, with_fields, max_body):
    items = []
    for i, (messages, framing, start, keep_starts, d, emit) in enumerate(runs):
        run = make_run(messages, framing, start, keep_starts=keep_starts)
        n = len(run)
        sourced = SourcedRun(str(i), d, run, [[1000 + k, 1001 + k] for k in range(n)], [1.5 + k for k in range(n)])
        items.append((i, 17 + i, 100 * i, emit, sourced))
    batches = runs_to_batches(items, with_fields=with_fields, max_body=max_body)
    got = sorted((r for b in batches for r in b.to_pylist()), key=lambda r: (r["cap"], r["seq"]))
    assert got == expected_rows(items, with_fields=with_fields, max_body=max_body)


def test_several_runs_in_one_batch_keep_their_own_keys():
    a = make_run([[b"one"], [b"two", b"three"]], "3", 0)
    b = make_run([[b"\x00\xff" * 200]], "2", 50)
    items = [
        (0, 1, 0, 9, SourcedRun("0", "c2s", a, [[9]] * len(a), [0.5] * len(a))),
        (1, 4, 7, None, SourcedRun("2", "s2c", b, [[11, 12]] * len(b), [0.25] * len(b))),
    ]
    rows = [r for batch in runs_to_batches(items) for r in batch.to_pylist()]
    assert len(rows) == len(a) + len(b) == 5 + 2
    by = {(r["cap"], r["seq"]): r for r in rows}
    assert by[(0, 4)]["kind"] == "message" and by[(0, 4)]["frames"] == [b"two".hex(), b"three".hex()]
    assert [f["name"] for f in by[(0, 4)]["fields"]] == ["frame 1", "frame 2"]
    assert by[(1, 7)]["emit_frame"] is None and by[(1, 7)]["packets"] == [11, 12]
    assert by[(1, 7)]["fields"][2]["value"] == ("00ff" * 200)  # not printable: shown as hex
    assert by[(1, 8)]["message_size"] == 400


@pytest.mark.parametrize("data", [b"\x04\x00", b"\x02\x00\x00\x00\x00\x00\x00\x00\x05hello", b"\x01\x01a"])
def test_scan_run_stops_where_the_decoder_must_judge(data):
    """A command, a LONG size under 256, an unfinished message: no run."""
    assert scan_run(bytearray(data), 0) == (0, 0, [])


def test_a_giant_run_goes_as_dicts_with_the_same_rows(monkeypatch):
    """Runs over MAX_RUN_OCTETS (their hex would overflow 32-bit offsets) take the dict path."""
    run = make_run([[b"x" * 300, b"y"], [b"z"]], "3", 10)
    sourced = SourcedRun("0", "s2c", run, [[5]] * len(run), [2.5] * len(run))
    expected = expected_rows([(0, 1, 0, 7, sourced)], with_fields=True, max_body=None)
    batcher = EventBatcher()
    batcher.add_run(0, 1, 0, 7, sourced)
    assert batcher.runs and not batcher.events
    monkeypatch.setattr(rows, "MAX_RUN_OCTETS", 100)
    giant = EventBatcher()
    giant.add_run(0, 1, 0, 7, sourced)
    assert not giant.runs and len(giant.events) == len(run)
    for got in (batcher.flush(), giant.flush()):
        assert sorted((r for b in got for r in b.to_pylist()), key=lambda r: r["seq"]) == expected
