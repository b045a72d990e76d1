"""Event dicts survive the trip through Arrow rows: every key comes back, field values as text."""

from __future__ import annotations

from itertools import islice

import pytest
from pipeline_util import PROJECT, SHARED, dissect_reference

from zmtplab.capture.dissect import dissect_capture
from zmtplab.pipeline.rows import EventBatcher, event_to_comparable, events_to_batch, row_to_event
from zmtplab.pipeline.schemas import STAGE_SCHEMA


def round_trip(events: list[dict]) -> list[dict]:
    keys = [(0, 1, i, None) for i in range(len(events))]
    rows = sorted(events_to_batch(events, keys).to_pylist(), key=lambda r: r["seq"])
    out = []
    for row, event in zip(rows, events, strict=True):
        back = row_to_event(row)
        if "conn" in event:
            back["conn"] = event["conn"]
        out.append(back)
    return out


@pytest.mark.parametrize("path", sorted(SHARED.glob("*.pcapng")) + sorted(PROJECT.glob("*.pcapng")),
                         ids=lambda p: p.name)
def test_every_capture_event_round_trips(path):
    events = list(islice(dissect_capture(str(path)), 30_000))
    assert round_trip(events) == [event_to_comparable(e) for e in events]


def test_keys_without_a_column_or_of_an_unexpected_type_go_to_extra():
    events = [
        {"kind": "command", "offset": 0, "length": 3, "name": "X", "ttl": "not a number", "mechanism": None,
         "brand_new": {"a": [1, 2]}, "properties": {"a": 1}, "fields": []},
        {"kind": "frame", "offset": 3, "length": 2, "size": True, "more": 1, "body": "", "huge": 1 << 70},
        {"kind": "expert", "offset": 0, "length": 0, "severity": "warn", "text": "t", "rule": "r",
         "fields": [{"name": "n", "offset": 0, "length": 1, "value": v, "rule": "r", "note": "x"}
                    for v in (3, "3", True, None, 2.5, [1])]},
    ]
    back = round_trip(events)
    assert back[0] == {k: v for k, v in events[0].items()}
    assert back[1] == events[1]
    assert [f["value"] for f in back[2]["fields"]] == ["3", "3", "true", None, "2.5", "[1]"]
    assert back[2] == event_to_comparable(events[2])


def test_batches_are_cut_by_rows_and_by_bytes():
    batcher = EventBatcher(max_rows=10, max_bytes=1 << 20)
    for i in range(9):
        batcher.add(0, 1, i, None, {"kind": "gap", "offset": i, "length": 1})
    assert not batcher.full
    batcher.add(0, 1, 9, None, {"kind": "gap", "offset": 9, "length": 1})
    assert batcher.full
    batches = batcher.flush()
    assert all(b.schema == STAGE_SCHEMA for b in batches)
    assert sum(b.num_rows for b in batches) == 10 and len(batcher) == 0
    batcher.add(0, 1, 0, None, {"kind": "frame", "offset": 0, "length": 1 << 20, "body": ""})
    assert batcher.full


def test_message_size_counts_body_octets():
    events, _ = dissect_reference(SHARED / "push_pull_multipart.pcapng")
    message = next(e for e in events if e["kind"] == "message")
    row = events_to_batch([message], [(0, 1, 0, 5)]).to_pylist()[0]
    assert row["message_size"] == 256 + len("My Message")
    assert row["emit_frame"] == 5
