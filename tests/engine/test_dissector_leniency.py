"""The dissector's leniency: each spec violation becomes the right `expert` and decoding goes on.

Capture gaps: a gap inside a frame body whose size is known keeps the frame boundaries
(the frame is marked truncated); a gap over a header loses them until a certain boundary
comes back. Decoders that start in the middle of a stream resynchronise.
"""

from __future__ import annotations

import pytest
from feeding import assert_cut_invariant, dissect, one_byte_segments, per_direction

from zmtplab.engine import ConnectionDissector, RemoteProtocolError, StreamDecoder
from zmtplab.engine.commands import error_body, ping_body, pong_body, ready_body, subscribe_body
from zmtplab.engine.framing import encode_frame, encode_message
from zmtplab.engine.greeting import encode_greeting


def command(body: bytes) -> bytes:
    return encode_frame(body, command=True)


def ready(socket_type: str) -> bytes:
    return command(ready_body({"Socket-Type": socket_type.encode()}))


GREETING = encode_greeting()
PUSH = GREETING + ready("PUSH")  # 92 octets: greeting and READY
PULL = GREETING + ready("PULL")
TAIL = encode_frame(b"tail")  # a message after the fault shows decoding went on


def experts(events: list[dict], severity: str | None = None) -> list[dict]:
    return [e for e in events if e["kind"] == "expert" and (severity is None or e["severity"] == severity)]


def one_expert(events: list[dict], rule: str) -> dict:
    found = [e for e in experts(events) if e["rule"] == rule]
    assert len(found) == 1, experts(events)
    return found[0]


def ends_with_tail(events: list[dict], offset: int) -> None:
    messages = [e for e in events if e["kind"] == "message"]
    assert messages[-1]["frames"] == [b"tail".hex()] and messages[-1]["offset"] == offset


def both_ways(c2s: bytes, s2c: bytes, *, greetings_first: bool = False) -> dict[str, list[dict]]:
    """Dissects a connection whole and as 1-octet writes; both must agree. Returns per-direction events.

    With `greetings_first`, both greetings travel before the rest, as they do on a real connection.
    """
    if greetings_first:
        segments = [("c2s", c2s[:64]), ("s2c", s2c[:64]), ("c2s", c2s[64:]), ("s2c", s2c[64:])]
    else:
        segments = [("c2s", c2s), ("s2c", s2c)]
    whole = per_direction(dissect(segments))
    assert per_direction(dissect(one_byte_segments(segments))) == whole
    return whole


# ---------------------------------------------------------------- one direction


def test_reserved_flag_bits():
    events = assert_cut_invariant(PUSH + b"\x18\x01x" + TAIL)
    expert = one_expert(events, "flags")
    assert (expert["offset"], expert["length"], expert["severity"]) == (92, 1, "warn")
    assert "0x18" in expert["text"]
    frame = next(e for e in events if e["kind"] == "frame")
    assert (frame["offset"], frame["body"]) == (92, "78")
    ends_with_tail(events, 95)


def test_more_on_a_command():
    events = assert_cut_invariant(PUSH + b"\x05\x07\x04PING\x00\x00" + TAIL)
    expert = one_expert(events, "flags")
    assert (expert["offset"], expert["severity"]) == (92, "warn") and "MORE" in expert["text"]
    assert [e["name"] for e in events if e["kind"] == "command"] == ["READY", "PING"]
    ends_with_tail(events, 101)


def test_zero_sized_property_name():
    body = b"\x05READY" + b"\x00\x00\x00\x00\x01x" + b"\x0bSocket-Type\x00\x00\x00\x04PUSH"
    events = assert_cut_invariant(GREETING + command(body) + TAIL)
    expert = one_expert(events, "name")
    assert (expert["offset"], expert["severity"]) == (72, "error")
    ready_ev = next(e for e in events if e["kind"] == "command")
    assert ready_ev["properties"]["Socket-Type"] == "PUSH"  # the next property is still read
    ends_with_tail(events, 64 + 2 + len(body))


def test_property_name_longer_than_the_metadata():
    body = b"\x05READY" + b"\x40Socket-Type\x00\x00\x00\x04PUSH"
    events = assert_cut_invariant(GREETING + command(body) + TAIL)
    expert = one_expert(events, "property")
    assert (expert["offset"], expert["length"], expert["severity"]) == (72, len(body) - 6, "error")
    assert "cut short" in expert["text"]
    ready_ev = next(e for e in events if e["kind"] == "command")
    assert ready_ev["fields"][-1]["name"] == "truncated-property"
    ends_with_tail(events, 64 + 2 + len(body))


def test_truncated_metadata_value():
    body = b"\x05READY" + b"\x0bSocket-Type\x00\x00\x00\x09PUSH"
    events = assert_cut_invariant(GREETING + command(body) + TAIL)
    expert = one_expert(events, "value")
    assert (expert["offset"], expert["length"], expert["severity"]) == (84, 4, "error")
    assert "claims 9 octets, 4 present" in expert["text"]
    ends_with_tail(events, 64 + 2 + len(body))


def test_property_name_characters_and_duplicates():
    body = b"\x05READY" + b"\x05Na me\x00\x00\x00\x00" + b"\x04NAME\x00\x00\x00\x00" + b"\x04name\x00\x00\x00\x00"
    events = assert_cut_invariant(GREETING + command(body) + TAIL)
    assert one_expert(events, "name-char")["offset"] == 73
    duplicate = one_expert(events, "name")  # names are case-insensitive: "name" repeats "NAME"
    assert (duplicate["offset"], duplicate["severity"]) == (91, "note")
    ends_with_tail(events, 64 + 2 + len(body))


def test_ping_context_over_16_octets():
    ping = command(ping_body(10, bytes(range(20))))
    pong = command(pong_body(bytes(range(17))))
    events = assert_cut_invariant(PUSH + ping + pong + TAIL)
    found = [e for e in experts(events) if e["rule"] == "ping-context"]
    assert [(e["offset"], e["length"], e["severity"]) for e in found] == [(101, 20, "warn"), (92 + len(ping) + 7, 17,
                                                                                              "warn")]
    assert [e["name"] for e in events if e["kind"] == "command"] == ["READY", "PING", "PONG"]
    ends_with_tail(events, 92 + len(ping) + len(pong))


def test_unknown_mechanism():
    greeting = encode_greeting(mechanism="X-SECRET")
    hello = command(b"\x05HELLO" + b"opaque")
    events = assert_cut_invariant(greeting + hello + TAIL)
    expert = one_expert(events, "mechanism")
    assert (expert["offset"], expert["length"], expert["severity"]) == (12, 20, "note")
    assert "X-SECRET" in expert["text"]
    cmd = next(e for e in events if e["kind"] == "command")
    assert cmd["name"] == "HELLO" and cmd["fields"][-1]["name"] == "command-data"
    ends_with_tail(events, 64 + len(hello))


def test_malformed_mechanism_name():
    events = assert_cut_invariant(encode_greeting(mechanism="nul l") + TAIL)
    expert = one_expert(events, "mechanism")
    assert (expert["offset"], expert["severity"]) == (12, "error")
    ends_with_tail(events, 64)


def test_greeting_field_problems():
    raw = bytearray(encode_greeting())
    raw[9], raw[32], raw[40] = 0x7D, 7, 1
    events = assert_cut_invariant(bytes(raw) + TAIL)
    assert [(e["rule"], e["offset"], e["severity"]) for e in experts(events)] == [
        ("signature", 9, "warn"), ("as-server", 32, "warn"), ("filler", 33, "note")]
    ends_with_tail(events, 64)


def test_error_command():
    error = command(error_body("Invalid socket type"))
    events = assert_cut_invariant(GREETING + error + TAIL)
    expert = one_expert(events, "error")
    assert expert["severity"] == "error" and "Invalid socket type" in expert["text"]
    assert [e["reason"] for e in events if e["kind"] == "command"] == ["Invalid socket type"]
    ends_with_tail(events, 64 + len(error))


def test_command_name_problems():
    events = assert_cut_invariant(PUSH + b"\x04\x00" + command(b"\x04PI1G") + command(b"\x09READ") + TAIL)
    rules = [(e["rule"], e["severity"]) for e in experts(events)]
    assert rules == [("command-name", "error"), ("command-name-char", "warn"), ("command-name", "error")]
    ends_with_tail(events, 92 + 2 + 7 + 7)


def test_long_size_for_a_short_frame_is_a_note():
    events = assert_cut_invariant(PUSH + b"\x02" + (3).to_bytes(8, "big") + b"abc" + TAIL)
    assert one_expert(events, "long-size")["severity"] == "note"
    ends_with_tail(events, 92 + 12)


def test_stream_ending_inside_a_message():
    events = assert_cut_invariant(PUSH + encode_frame(b"first", more=True) + b"\x00\x05ab")
    expert = one_expert(events, "message")
    assert (expert["offset"], expert["severity"]) == (99, "error")
    assert [e for e in events if e["kind"] == "message"] == []


# ---------------------------------------------------------------- both directions


def test_invalid_socket_pair():
    # 23/ZMTP: a NULL peer may send messages right after its own READY, before the other's.
    events = both_ways(GREETING + ready("PUSH") + TAIL, GREETING + ready("SUB"))
    assert experts(events["c2s"]) == []
    (pair_expert,) = experts(events["s2c"])
    assert (pair_expert["rule"], pair_expert["severity"]) == ("socket-type", "error")
    assert "client PUSH cannot talk to server SUB" in pair_expert["text"]


def test_message_before_the_handshake():
    events = both_ways(GREETING + TAIL + ready("PUSH"), PULL)
    early = [e for e in experts(events["c2s"]) if e["rule"] == "traffic"]
    assert len(early) == 1 and early[0]["offset"] == 64


def test_mechanism_mismatch_and_as_server():
    events = both_ways(encode_greeting(mechanism="PLAIN"), encode_greeting(mechanism="NULL", as_server=True))
    texts = [e["text"] for e in experts(events["s2c"], "error")]
    assert any("mechanism mismatch" in t for t in texts)
    null_server = both_ways(PUSH, encode_greeting(as_server=True) + ready("PULL"))
    assert [e["rule"] for e in experts(null_server["s2c"], "warn")] == ["as-server"]


def test_pong_that_does_not_echo():
    events = both_ways(PUSH + command(ping_body(10, b"abc")), PULL + command(pong_body(b"xyz")) + command(
        pong_body(b"")))
    assert [(e["rule"], e["severity"]) for e in experts(events["s2c"])] == [("ping-context", "warn"),
                                                                            ("pong", "note")]


def test_31_commands_to_a_30_peer_and_subscribe_from_a_non_subscriber():
    c2s = GREETING + ready("PUB") + command(subscribe_body(b"x")) + command(ping_body(0))
    events = both_ways(c2s, encode_greeting(minor=0) + ready("SUB"), greetings_first=True)
    assert [(e["rule"], e["severity"]) for e in experts(events["c2s"])] == [
        ("subscribe", "warn"), ("version", "warn"), ("version", "warn")]


def test_handshake_never_completed():
    events = both_ways(PUSH, GREETING)
    (expert,) = experts(events["s2c"])
    assert expert["rule"] == "handshake" and expert["offset"] == 64


def test_error_from_the_server_ends_the_handshake_quietly():
    events = both_ways(PUSH, GREETING + command(error_body("no")))
    assert [e["rule"] for e in experts(events["c2s"]) + experts(events["s2c"])] == ["error"]


# ---------------------------------------------------------------- capture gaps


def decode_with_gap(before: bytes, gap: int, after: list[bytes], **kwargs) -> list[dict]:
    decoder = StreamDecoder(**kwargs)
    decoder.receive_data(before)
    decoder.gap(gap)
    for chunk in after:
        decoder.receive_data(chunk)
    decoder.close()
    return [e.to_dict() for e in decoder.events()]


def test_gap_inside_a_known_body_keeps_boundaries():
    frame = encode_frame(bytes(range(100)))  # at 92, body 94..193
    events = decode_with_gap(PUSH + frame[:32], 50, [frame[82:], TAIL])
    kinds = [e["kind"] for e in events]
    assert kinds == ["greeting", "command", "gap", "expert", "frame", "message", "frame", "message"]
    gap, expert, truncated = events[2], events[3], events[4]
    assert (gap["offset"], gap["length"]) == (124, 50)
    assert (expert["offset"], expert["length"], expert["rule"]) == (124, 50, "message-body")
    assert (truncated["offset"], truncated["length"], truncated["size"], truncated["truncated"]) == (92, 102, 100,
                                                                                                     True)
    assert truncated["body"] == bytes(range(30)).hex()
    assert (events[6]["offset"], events[6]["body"]) == (194, b"tail".hex())


def test_two_gaps_inside_one_body_and_a_gap_up_to_its_end():
    frame = encode_frame(bytes(range(100)))
    events = decode_with_gap(PUSH + frame[:32], 20, [frame[52:60]])
    decoder = StreamDecoder()
    decoder.receive_data(PUSH + frame[:32])
    decoder.gap(20)
    decoder.receive_data(frame[52:60])
    decoder.gap(10)
    decoder.receive_data(frame[70:] + TAIL)
    decoder.close()
    events = [e.to_dict() for e in decoder.events()]
    assert [e["kind"] for e in events].count("gap") == 2
    assert [e["rule"] for e in experts(events)] == ["message-body", "message-body"]
    truncated = next(e for e in events if e["kind"] == "frame")
    assert (truncated["offset"], truncated["length"], truncated["truncated"]) == (92, 102, True)
    ends_with_tail(events, 194)
    events = decode_with_gap(PUSH + frame[:32], 70, [TAIL])
    ends_with_tail(events, 194)


def test_gap_inside_a_multipart_message_keeps_it_whole():
    first = encode_frame(b"a" * 10, more=True)
    second = encode_frame(b"b" * 50)
    events = decode_with_gap(PUSH + first + second[:20], 10, [second[30:], TAIL])
    messages = [e for e in events if e["kind"] == "message"]
    assert messages[0]["frames"][0] == (b"a" * 10).hex() and len(messages[0]["frames"]) == 2
    ends_with_tail(events, 92 + len(first) + len(second))


def test_gap_over_a_header_loses_sync_until_a_certain_boundary():
    f1, f2 = encode_frame(b"a" * 10), encode_frame(b"b" * 10)
    resume = encode_frame(b"c" * 5) + encode_frame(b"d" * 5)
    events = decode_with_gap(PUSH + f1[:5], len(f1) - 5 + 3, [f2[3:], resume, TAIL])
    rules = [(e["rule"], e["severity"], e["offset"]) for e in experts(events)]
    assert rules == [("frame", "warn", 97), ("frame", "warn", 107), ("frame", "note", 116)]
    assert "no longer certain" in experts(events)[0]["text"]
    assert [m["frames"] for m in events if m["kind"] == "message"] == [
        [(b"c" * 5).hex()], [(b"d" * 5).hex()], [b"tail".hex()]]
    assert [e["offset"] for e in events if e["kind"] == "frame"] == [116, 123, 130]


def test_gap_over_a_header_drops_the_partial_message():
    first = encode_frame(b"a" * 10, more=True)
    events = decode_with_gap(PUSH + first + b"\x00", 20, [encode_frame(b"x") + encode_frame(b"y"), TAIL])
    assert ("message", "warn") in [(e["rule"], e["severity"]) for e in experts(events)]
    assert [m["frames"] for m in events if m["kind"] == "message"] == [["78"], ["79"], [b"tail".hex()]]


def test_gap_in_the_dissector_and_no_resync_inside_a_segment():
    dissector = ConnectionDissector()
    out = dissector.receive_data("c2s", PUSH + b"\x00")
    out += dissector.gap("c2s", 5)
    out += dissector.receive_data("c2s", b"garbage that is not frames\xff")
    out += dissector.close()
    kinds = [e.kind for _, e in out]
    assert "gap" in kinds
    lost = [e.text for _, e in out if e.kind == "expert" and e.rule == "frame"]
    assert len(lost) == 2 and "no longer certain" in lost[0] and "could not be decoded" in lost[1]


def test_strict_decoder_refuses_gaps():
    with pytest.raises(RemoteProtocolError) as info:
        StreamDecoder(strict=True).gap(3)
    assert info.value.rule == "gap"


# ---------------------------------------------------------------- starting mid-stream


def test_mid_stream_decoder_resyncs():
    # Frames at 92 ("one"), 97 ("two"), 102 ("three"), 109 (300 x "x"); writes start at 102 and 109.
    stream = PUSH + encode_message([b"one", b"two"]) + encode_frame(b"three") + encode_frame(b"x" * 300)
    for start in (93, 95, 100, 101):
        decoder = StreamDecoder(mid_stream=True)
        decoder.receive_data(stream[start:102])
        decoder.receive_data(stream[102:109])
        decoder.receive_data(stream[109:])
        decoder.close()
        events = [e.to_dict() for e in decoder.events()]
        assert events[0]["kind"] == "expert" and events[0]["severity"] == "note"
        messages = [e["frames"] for e in events if e["kind"] == "message"]
        assert messages == [[b"three".hex()], [(b"x" * 300).hex()]]
        resumed = [e for e in experts(events) if "resumes" in e["text"]]
        assert len(resumed) == 1 and resumed[0]["offset"] == 102 - start
        assert [e["offset"] for e in events if e["kind"] == "frame"] == [102 - start, 109 - start]
        assert [e for e in experts(events, "error")] == []


def test_mid_stream_at_a_boundary_and_mid_stream_dissector():
    traffic = encode_message([b"", b"request"]) + command(ping_body(5, b"c"))
    decoder = StreamDecoder(mid_stream=True)
    decoder.receive_data(traffic)
    decoder.close()
    events = [e.to_dict() for e in decoder.events()]
    assert [e["kind"] for e in events] == ["expert", "expert", "frame", "frame", "message", "command"]
    c2s = encode_message([b"", b"request"]) * 3
    s2c = encode_message([b"", b"reply"]) * 3
    out = dissect([("c2s", c2s[5:11]), ("s2c", s2c[3:9]), ("c2s", c2s[11:]), ("s2c", s2c[9:])], mid_stream=True)
    warnings = [e for _, e in out if e.kind == "expert" and e.severity != "note" and "skipped" not in e.text]
    assert warnings == []  # no "handshake never completed" or "message before handshake" mid-stream
    assert [e.frames for d, e in out if d == "c2s" and e.kind == "message"] == [[b"", b"request"]] * 2
    assert [e.frames for d, e in out if d == "s2c" and e.kind == "message"] == [[b"", b"reply"]] * 2


def test_plain_username_cut_short_leaves_every_finding_inside_the_hello():
    """A HELLO whose username size claims more than its body holds: the password is missing at the body's
    end, not past it (found by the lenient decoder's fuzzing: the finding lay one octet after the stream)."""
    hello = command(b"\x05HELLO\x01")  # username size 1, no username, no password size
    events = assert_cut_invariant(encode_greeting(mechanism="PLAIN") + hello)
    found = {e["rule"]: (e["offset"], e["length"], e["severity"]) for e in experts(events) if e["offset"] >= 64}
    assert found == {"username": (72, 1, "error"), "password": (73, 0, "error")}
    assert all(e["offset"] + e["length"] <= 64 + len(hello) for e in experts(events))
