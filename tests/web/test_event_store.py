"""The capture event store's columnar layout (issue 22.1): no bigger than the capture, and it gives back every
event `zmtplab dissect` makes, with the same keys, in capture order and per connection, filtered by kind,
searched by text, each with its fields. Real libzmq captures, no server (the HTTP contract has its own tests)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from webkit import SHARED

from zmtplab.capture.dissect import dissect_capture
from zmtplab.eventstore import AnalysisJob, EventStore, IngestJob, analyze_file, ingest_capture
from zmtplab.eventstore.layout import Finder, run_hits
from zmtplab.eventstore.store import Matches

REPO = Path(__file__).resolve().parents[2]
MAX_BODY = 16 << 20


def build(capture: Path, directory: Path, **kwargs: Any) -> EventStore:
    result = ingest_capture(IngestJob(capture, directory / "events.sqlite", directory / "progress.json",
                                      directory / "cancel", store_max_body=MAX_BODY, max_events=10**9,
                                      progress_interval=1.0, **kwargs))
    assert result.state == "done", result
    return EventStore(directory / "events.sqlite")


def reference(capture: Path, *, with_fields: bool = True) -> list[dict[str, Any]]:
    """`zmtplab dissect`'s events, each with the `index` the store gives it."""
    events = list(dissect_capture(str(capture), with_fields=with_fields, max_body=MAX_BODY))
    counts: dict[str, int] = {}
    for ev in events:
        ev["index"] = counts.get(ev["conn"], 0)
        counts[ev["conn"]] = ev["index"] + 1
    return events


def without_fields(ev: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ev.items() if k != "fields"}


@pytest.fixture(scope="module")
def bulk(tmp_path_factory: pytest.TempPathFactory) -> tuple[EventStore, list[dict[str, Any]]]:
    capture = SHARED / "bulk.pcapng"
    assert capture.is_file(), f"the shared captures are missing: {capture}"
    store = build(capture, tmp_path_factory.mktemp("bulk"))
    yield store, reference(capture, with_fields=False)
    store.close()


def test_the_store_is_no_bigger_than_the_capture(bulk):
    store, _ = bulk
    # (The store of rows of JSON it replaces took 2.0x the capture's 5.9 MB.)
    assert store.path.stat().st_size <= (SHARED / "bulk.pcapng").stat().st_size


def test_every_event_of_bulk_comes_back_in_capture_order(bulk):
    store, events = bulk
    assert store.listing(None, 0, 10).total == len(events)
    for offset in [*range(0, len(events), len(events) // 13), len(events) - 500]:
        assert store.listing(None, offset, 500).events == events[offset:offset + 500]
    page = store.listing("0", 300_000, 100).events
    assert page == [ev for ev in events if ev["conn"] == "0"][300_000:300_100]


@pytest.mark.parametrize("name", ["broker", "push_slow_pull", "curve", "downgrade_zmtp20", "large"])
def test_every_event_comes_back_with_its_fields(tmp_path: Path, name: str):
    capture = SHARED / "large.pcapng" if name == "large" else REPO / "captures" / f"{name}.pcapng"
    store = build(capture, tmp_path)
    events = reference(capture)
    assert store.listing(None, 0, len(events) + 10).events == [without_fields(ev) for ev in events]
    assert [store.event(ev["conn"], ev["index"]) for ev in events] == events
    listed = store.listing(None, 0, len(events)).events
    store.fields_of(listed)
    assert listed == events


@pytest.mark.parametrize("kinds", [["message"], ["frame"], ["greeting", "command"], ["command", "message"]])
def test_kind_filters_page_like_a_scan(bulk, kinds):
    store, events = bulk
    wanted = [ev for ev in events if ev["kind"] in kinds]
    page = store.listing(None, 0, 50, kinds=kinds)
    assert page.total == len(wanted) and page.events == wanted[:50]
    middle = len(wanted) // 2 + 3
    assert store.listing(None, middle, 20, kinds=kinds).events == wanted[middle:middle + 20]
    assert store.listing("0", middle, 20, kinds=kinds).events == [e for e in wanted if e["conn"] == "0"][middle:
                                                                                                         middle + 20]


def test_search_finds_what_a_scan_of_the_bodies_finds(bulk):
    store, events = bulk
    # "msg 1999": `msg 1999`, `msg 19991`.., `msg 199901`.. (every 10th message carries a topic instead).
    wanted = [ev for ev in events if ev["kind"] in ("frame", "message")
              and any(b"msg 1999" in bytes.fromhex(body) for body in ([ev["body"]] if "body" in ev else ev["frames"]))]
    found = store.listing(None, 0, 1000, q="MSG 1999")
    assert found.total == len(wanted) == 2 * (1 + 9 + 90) and not found.partial
    assert found.events == wanted
    # Hex finds the same octets; a text across a frame header finds nothing; names match commands.
    assert store.listing(None, 0, 1000, q="6d73672031393939").total == len(wanted)
    assert store.listing(None, 0, 10, q="topic.3x").total == 0
    assert [e["name"] for e in store.listing(None, 0, 10, q="ready").events] == ["READY", "READY"]
    assert store.listing(None, 0, 10, q="msg 1999", kinds=["message"]).total == len(wanted) // 2


@given(data=st.lists(st.sampled_from(b"aab\x00"), max_size=400).map(bytes),
       needle=st.lists(st.sampled_from(b"ab\x00"), min_size=1, max_size=3).map(bytes),
       start=st.integers(0, 50), span=st.integers(0, 450), sparse=st.integers(0, 4))
def test_find_all_finds_every_occurrence(data: bytes, needle: bytes, start: int, span: int, sparse: int):
    # memmem for the first few hits, numpy for the rest: every start from `start` to before `end`, overlaps too.
    end = start + span
    wanted = [i for i in range(start, min(end, len(data))) if data.startswith(needle, i)]
    assert Finder(data).find_all(needle, start, end, sparse=sparse).tolist() == wanted


_BODIES = st.lists(st.sampled_from(b"ab"), max_size=12).map(bytes) | st.binary(min_size=256, max_size=260)


@given(runs=st.lists(st.lists(st.lists(_BODIES, min_size=1, max_size=3), min_size=1, max_size=4), min_size=1,
                     max_size=4),
       gap=st.integers(0, 3),
       needles=st.lists(st.sampled_from([b"a", b"ab", b"ba", b"aab", b"\x00"]), min_size=1, max_size=3, unique=True))
def test_run_hits_places_every_hit_in_its_frame_and_message(runs, gap: int, needles: list[bytes]):
    # Runs of messages of one to three frames (short headers, and long ones for 256 octets and more), back to back
    # with a few other octets between them: a hit counts in a frame when it lies whole within the frame's body,
    # and names the frame's event and its message's event (events go frame by frame, each message after its last),
    # once however many of the needles (a query's case forms) it holds.
    data, run_pos, run_end, wanted = bytearray(), [], [], set()
    for r, messages in enumerate(runs):
        data += b"\x01" * gap
        run_pos.append(len(data))
        k = 0
        for frames in messages:
            holders = []
            for i, body in enumerate(frames):
                more = 1 if i < len(frames) - 1 else 0
                head = bytes([more, len(body)]) if len(body) < 256 else bytes([more | 2]) + len(body).to_bytes(8, "big")
                data += head + body
                if any(needle in body for needle in needles):
                    holders.append(k)
                k += 1
            wanted.update((r, f, k) for f in holders)
            k += 1
        run_end.append(len(data))
    data = bytes(data)
    hits = [(Finder(data).find_all(needle, 0, len(data)), len(needle)) for needle in needles]
    r, frame_events, message_events = run_hits(data, hits, np.array(run_pos), np.array(run_end))
    assert set(zip(r.tolist(), frame_events.tolist(), message_events.tolist(), strict=True)) == wanted


@given(pieces=st.lists(st.tuples(st.integers(1, 200), st.sampled_from([1, 3, 50]), st.integers(0, 40)), max_size=6),
       offset=st.integers(0, 800), limit=st.integers(0, 500), seed=st.integers(0, 2**16))
def test_a_search_pages_its_matches_however_each_piece_keeps_them(pieces, offset: int, limit: int, seed: int):
    # Each searched piece keeps its matches as positions or as a bitmap (whichever is smaller); a page is the
    # same slice of all of them either way.
    import random
    rng = random.Random(seed)
    matches, every, base = Matches(), [], 0
    for count, spread, gap in pieces:
        positions = sorted(rng.sample(range(base, base + count * spread), count))
        matches.add(np.array(positions, np.int64))
        every += positions
        base += count * spread + gap
    assert matches.window(offset, limit) == (every[offset:offset + limit], len(every))


@pytest.mark.parametrize(("q", "conn", "kinds"), [("msg 1", None, None), ("MSG 1", "0", ["message"]),
                                                ("6d 73 67", None, ["frame"]), ("g 19", "0", None)])
def test_a_text_most_elements_hold_is_found_in_every_one(bulk, q: str, conn: str | None, kinds: list[str] | None):
    # Dense hits (hundreds of thousands: a text in nearly every frame body) are placed in their elements all at
    # once rather than one by one; the answer is still exactly the elements that hold the text, in order.
    store, events = bulk
    wanted = [(ev["conn"], ev["index"]) for ev in events if (conn is None or ev["conn"] == conn)
              and (kinds is None or ev["kind"] in kinds) and _brute_force(ev, q)]
    found = store.listing(conn, 0, len(events), q=q, kinds=kinds)
    assert (found.total, found.partial) == (len(wanted), False)
    assert len(wanted) >= 20_000
    assert [(ev["conn"], ev["index"]) for ev in found.events] == wanted


def test_the_analysis_made_apart_is_the_one_made_in_the_same_pass(tmp_path: Path):
    capture = REPO / "captures" / "broker.pcapng"
    (tmp_path / "one").mkdir()
    together = build(capture, tmp_path / "one")
    (tmp_path / "two").mkdir()
    apart = analyze_file(AnalysisJob(capture, tmp_path / "two" / "cancel"))
    assert apart.state == "done"
    assert apart.analysis == together.analysis and together.analysis["findings"] is not None


def _brute_force(ev: dict[str, Any], q: str) -> bool:
    """The search's promise, spelt out apart from the store: names case-insensitively, bodies in four case forms
    (or as hex), one event at a time."""
    forms = {f.encode() for f in (q, q.lower(), q.upper(), q.capitalize())}
    if re.fullmatch(r"(?:0x)?[0-9a-fA-F\s:]+", q) and len(digits := re.sub(r"0x|[\s:]", "", q)) % 2 == 0:
        forms.add(bytes.fromhex(digits))  # (a hex query: those octets too)
    kind = ev["kind"]
    props = ev.get("properties") or {}
    texts = {"expert": [ev.get("text"), ev.get("severity"), ev.get("rule")],
             "command": [ev.get("name"), ev.get("reason"), ev.get("username"), *props,
                         *(v for v in props.values() if isinstance(v, str))],
             "greeting": [ev.get("socket_type"), ev.get("mechanism"), "greeting"], "gap": ["gap"]}.get(kind, [])
    if any(isinstance(t, str) and q.lower() in t.lower() for t in texts):
        return True
    bodies = {"frame": [ev.get("body")], "message": ev.get("frames") or [], "command": [ev.get("topic")],
              "greeting": [ev.get("identity")]}.get(kind, [])
    return any(isinstance(b, str) and any(f in bytes.fromhex(b) for f in forms) for b in bodies if b)


@pytest.mark.parametrize("name", ["curve", "plain_ok", "mechanism_mismatch", "heartbeat_ttl", "downgrade_zmtp10",
                                  "broker", "shared/dealer_router", "shared/pub_sub", "shared/req_rep"])
def test_search_finds_every_single_event_a_scan_finds(tmp_path: Path, name: str):
    # Greetings, commands, experts and frames outside runs are searched through the chunks' search column and
    # filter: nothing the events hold may be missed, and nothing else found.
    capture = SHARED / f"{name[7:]}.pcapng" if name.startswith("shared/") else REPO / "captures" / f"{name}.pcapng"
    store = build(capture, tmp_path)
    events = [without_fields(ev) for ev in reference(capture)]
    hits = 0
    for q in ("ready", "PING", "plain", "admin", "error", "warn", "ROUTER", "dealer", "Hello", "greeting", "gap",
              "sub", "socket-type", "identity", "null", "curve", "msg", "0x00", "01 00", "x", "no such text"):
        wanted = [ev for ev in events if _brute_force(ev, q)]
        found = store.listing(None, 0, len(events) + 1, q=q)
        assert (found.total, found.partial) == (len(wanted), False), q
        assert found.events == wanted, q
        hits += sum(ev["kind"] not in ("frame", "message") for ev in wanted)
    assert hits, "no single event matched: the test searched nothing of the column"


def test_the_chunk_filter_lets_through_every_needle_the_chunk_holds():
    import random

    from zmtplab.eventstore.layout import bigrams, may_hold

    rng = random.Random(22)
    octets = bytes(rng.randrange(256) for _ in range(4001))  # (odd: the last pair sits at an odd offset)
    column = b"sunny 21c"
    grams = bigrams(octets, column)
    for start in [*range(0, 40), len(octets) - 2, len(octets) - 3]:  # (at even and at odd offsets)
        assert may_hold(grams, [b"\x00\x00", octets[start:start + 2], b"\xff\xfe"])
        assert may_hold(grams, [octets[start:start + 3]]) and may_hold(grams, [octets[start:start + 8]])
    assert may_hold(grams, [b"nny 2"]) and may_hold(grams, [b"a"])  # (one octet: no pair to test)
    # 4,001 random octets hold about 4,000 of the 65,536 pairs: most needles of a few octets have a pair missing.
    absent = [n for n in (bytes(rng.randrange(256) for _ in range(4)) for _ in range(200)) if n not in octets]
    skipped = sum(not may_hold(grams, [n]) for n in absent)
    assert skipped > 150
    assert not may_hold(bigrams(b"msg 1 msg 2 msg 3", b""), [b"sunny 21C", b"SUNNY 21C", b"Sunny 21c"])
    # Each case form is looked for only where its pairs are: lower-case text is not scanned for `MSG 12345`.
    assert may_hold(bigrams(b"msg 123456", b"ready"), [b"msg 12345", b"MSG 12345", b"Msg 12345", b"Ready"]) == \
        [b"msg 12345"]


def test_a_store_of_the_older_layout_is_not_read(tmp_path: Path):
    import sqlite3

    build(REPO / "captures" / "push_pull.pcapng", tmp_path).close()
    db = sqlite3.connect(tmp_path / "events.sqlite")
    db.execute("UPDATE meta SET value = '3' WHERE key = 'layout'")
    db.commit()
    db.close()
    with pytest.raises(ValueError, match="older layout"):
        EventStore(tmp_path / "events.sqlite")

