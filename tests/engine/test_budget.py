"""The lenient decoder's budget (`max_held`, issue 31): whatever a peer declares, a tap's or a live capture's
dissector holds at most that many octets for one element; what is larger is reported when its header comes,
and its body skipped as it streams.
"""

from __future__ import annotations

import tracemalloc
from datetime import timedelta

from feeding import assert_cut_invariant, decode, dicts, run_decoder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zmtplab.engine import ConnectionDissector, StreamDecoder
from zmtplab.engine.commands import ready_body
from zmtplab.engine.decoder import OVERSIZE_PREFIX
from zmtplab.engine.framing import encode_frame, encode_message
from zmtplab.engine.greeting import encode_greeting, encode_v1_identity

BUDGET = 1000
HANDSHAKE = encode_greeting() + encode_frame(ready_body({"Socket-Type": b"PUSH"}), command=True)


def budgeted() -> StreamDecoder:
    return StreamDecoder(max_held=BUDGET)


def budget_notes(events: list[dict]) -> list[dict]:
    return [e for e in events if e["kind"] == "expert" and e.get("rule") == "budget"]


def test_a_2_63_octet_frame_is_reported_at_its_header_and_never_held() -> None:
    dissector = ConnectionDissector(max_held=1 << 20)
    dissector.receive_data("c2s", HANDSHAKE)
    header = b"\x02" + (1 << 63).to_bytes(8, "big")
    first = [e.to_dict() for _, e in dissector.receive_data("c2s", header + b"x" * 100)]
    assert [e["kind"] for e in first] == ["expert"]
    assert first[0]["rule"] == "budget" and str(1 << 63) in first[0]["text"]
    chunk = b"y" * 65536
    decoder = dissector.decoders["c2s"]
    tracemalloc.start()
    try:
        for _ in range(1024):  # 64 MiB of its body
            assert dissector.receive_data("c2s", chunk) == []
            assert decoder.buffer.available == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert decoder.received == len(HANDSHAKE) + 9 + 100 + (64 << 20)
    ended = [e.to_dict() for _, e in dissector.close()]
    assert ended[0]["text"] == "connection closed in the middle of a message"


def test_an_oversize_frame_ends_truncated_with_its_prefix_and_decoding_goes_on() -> None:
    body = bytes(range(256)) * 20  # 5,120 octets, over the budget of 1,000
    stream = HANDSHAKE + encode_frame(b"before") + encode_message([b"head", body, b"tail"]) + encode_frame(b"after")
    events = assert_cut_invariant(stream, budgeted, every_split=False)
    note = budget_notes(events)
    assert len(note) == 1 and "frame of 5120 octets" in note[0]["text"]
    frames = [e for e in events if e["kind"] == "frame"]
    assert [e["body"] for e in frames if not e.get("truncated")] == [b"before".hex(), b"head".hex(), b"tail".hex(),
                                                                       b"after".hex()]
    cut = next(e for e in frames if e.get("truncated"))
    assert cut["size"] == len(body) and cut["length"] == 9 + len(body)  # (a LONG header: 9 octets)
    assert bytes.fromhex(cut["body"]) == body[:min(BUDGET // 4, OVERSIZE_PREFIX)]
    messages = [e["frames"] for e in events if e["kind"] == "message"]
    assert messages[1][0] == b"head".hex() and messages[1][2] == b"tail".hex() and messages[-1] == [b"after".hex()]
    assert not [e for e in events if e["kind"] == "expert" and e["severity"] == "error"]


def test_the_same_stream_without_a_budget_is_read_whole() -> None:
    body = b"z" * 5000
    events = dicts(decode(HANDSHAKE + encode_frame(body)))
    assert not budget_notes(events)
    assert next(e for e in events if e["kind"] == "frame")["body"] == body.hex()


def test_an_oversize_command_is_skipped_and_the_next_one_decoded() -> None:
    big = encode_frame(b"\x05HELLO" + b"u" * 3000, command=True)
    stream = HANDSHAKE + big + encode_frame(b"\x04PING\x00\x0a", command=True)
    events = assert_cut_invariant(stream, budgeted, every_split=False)
    assert "command of 3006 octets" in budget_notes(events)[0]["text"]
    assert [e["name"] for e in events if e["kind"] == "command"] == ["READY", "PING"]


def test_a_message_of_many_small_frames_stops_being_held() -> None:
    parts = [b"p" * 10] * 200  # 200 x (12 + overhead) octets: over 1,000 after a few frames
    stream = HANDSHAKE + encode_message(parts) + encode_message([b"next"])
    events = assert_cut_invariant(stream, budgeted, every_split=False)
    assert "a message of more than 1000 octets" in budget_notes(events)[0]["text"]
    assert sum(1 for e in events if e["kind"] == "frame") == 201  # every frame still reported
    assert [e["frames"] for e in events if e["kind"] == "message"] == [[b"next".hex()]]


def test_an_endless_1_0_identity_is_given_up() -> None:
    header = b"\xff" + (1 << 40).to_bytes(8, "big") + b"\x00"  # a 1.0 long identity frame that never ends
    decoder = budgeted()
    out = run_decoder(decoder, [header] + [b"\x00" * 4096] * 64, close=False)
    assert decoder.buffer.available <= BUDGET
    assert "1.0 identity" in budget_notes(dicts(out))[0]["text"]
    # A normal 1.0 greeting still reads.
    assert decode(encode_v1_identity(b"abc") + encode_message([b"a"], framing="1"), budgeted)[0].kind == "greeting"


def test_a_lost_stream_keeps_no_more_than_the_budget() -> None:
    # A capture gap, then chains that never end within the budget (a frame that claims 2^39 octets): no
    # candidate start is kept further back than the budget.
    decoder = budgeted()
    decoder.receive_data(HANDSHAKE)
    decoder.gap(10)
    for _ in range(100):
        decoder.receive_data(b"\x02" + (1 << 39).to_bytes(8, "big") + b"q" * 300)
        assert decoder.buffer.available <= BUDGET


FUZZ = settings(max_examples=150, deadline=timedelta(seconds=5), database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(st.lists(st.binary(min_size=1, max_size=700), min_size=1, max_size=40), st.booleans())
def test_hostile_streams_never_make_it_hold_more_than_the_budget(chunks: list[bytes], greet: bool) -> None:
    decoder = budgeted()
    if greet:
        decoder.receive_data(HANDSHAKE)
    for chunk in chunks:
        decoder.receive_data(chunk)
        decoder.events()
        assert decoder.held <= 2 * BUDGET  # (the element in progress, and the message it belongs to)
