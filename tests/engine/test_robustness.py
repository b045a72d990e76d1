"""Hostile input: random and mutated byte streams, absurd declared sizes, capture gaps.

The lenient decoder and the dissector never raise, never hang, keep JSON-ready events
and never hold more than they were given; a strict peer raises nothing but
`RemoteProtocolError` (with an offset and a rule). A frame claiming 2^63 octets is
never allocated.
"""

from __future__ import annotations

import json
import tracemalloc
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zmtplab.engine import Connection, ConnectionDissector, PlainServer, RemoteProtocolError, StreamDecoder
from zmtplab.engine.commands import (
    cancel_body,
    error_body,
    ping_body,
    plain_hello_body,
    pong_body,
    ready_body,
    subscribe_body,
)
from zmtplab.engine.framing import encode_frame, encode_message
from zmtplab.engine.greeting import encode_greeting, encode_v1_identity, encode_v2_tail, signature

FUZZ = settings(max_examples=120, deadline=timedelta(seconds=3), database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def command(body: bytes) -> bytes:
    return encode_frame(body, command=True)


C2S_V3 = (encode_greeting(identity_length=0) + command(ready_body({"Socket-Type": b"SUB"}))
          + command(subscribe_body(b"weather")) + command(ping_body(30, b"ctx"))
          + encode_message([b"", b"x" * 300]) + command(cancel_body(b"weather")) + command(error_body("bye")))
S2C_V3 = (encode_greeting() + command(ready_body({"Socket-Type": b"PUB", "Identity": b""}))
          + command(pong_body(b"ctx")) + encode_message([b"weather", b"sunny"]) + encode_frame(b"y" * 260))
C2S_PLAIN = (encode_greeting(mechanism="PLAIN") + command(plain_hello_body(b"admin", b"secret"))
             + command(b"\x08INITIATE" + b"\x0bSocket-Type\x00\x00\x00\x03REQ") + encode_message([b"", b"hi"]))
V2 = signature(3) + b"\x01" + encode_v2_tail("DEALER", b"abc") + encode_message([b"a", b"b" * 300], framing="2")
V1 = encode_v1_identity(b"abc") + encode_message([b"a", b"b" * 300], framing="1")
VALID_STREAMS = [C2S_V3, S2C_V3, C2S_PLAIN, V2, V1]


@st.composite
def mutated(draw, streams=tuple(VALID_STREAMS)):
    """A valid stream with a few octets flipped, inserted, deleted, or its tail cut."""
    data = bytearray(draw(st.sampled_from(streams)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["set", "insert", "delete", "truncate", "flag"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "set" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "flag" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=12))
        elif op == "delete":
            del data[pos:pos + draw(st.integers(1, 12))]
        elif op == "truncate":
            del data[pos:]
    return bytes(data)


streams = st.one_of(st.binary(max_size=1500), mutated(), st.sampled_from(VALID_STREAMS))
chunk_sizes = st.lists(st.integers(1, 300), min_size=1, max_size=12)


def cut(data: bytes, sizes: list[int]) -> list[bytes]:
    out, pos, i = [], 0, 0
    while pos < len(data):
        size = sizes[i % len(sizes)]
        out.append(data[pos:pos + size])
        pos += size
        i += 1
    return out


def check_events(events, limit: int) -> None:
    """Every event is JSON-ready and lies within the `limit` octets of the stream seen so far."""
    for event in events:
        json.dumps(event.to_dict())
        assert 0 <= event.offset <= limit and event.length >= 0
        if event.kind != "gap":
            assert event.offset + event.length <= limit, event.to_dict(with_fields=False)
        for f in event.fields:
            assert f.offset >= 0 and f.offset + f.length <= limit


# ---------------------------------------------------------------- the lenient decoder


@FUZZ
@given(data=streams, sizes=chunk_sizes, mid_stream=st.booleans(), framing=st.sampled_from([None, "1", "2", "3"]))
def test_lenient_decoder_never_raises(data, sizes, mid_stream, framing):
    decoder = StreamDecoder(mid_stream=mid_stream, framing=framing)
    fed = 0
    events = []
    for chunk in cut(data, sizes):
        decoder.receive_data(chunk)
        fed += len(chunk)
        assert len(decoder.buffer.data) <= fed  # never more than it was given
        assert decoder.received == fed and decoder.offset <= fed
        events.extend(decoder.events())
    decoder.close()
    events.extend(decoder.events())
    check_events(events, len(data))
    decoder.receive_data(b"after close")  # ignored, not an error
    assert decoder.events() == []


@FUZZ
@given(data=streams, sizes=chunk_sizes,
       gaps=st.lists(st.tuples(st.integers(0, 2000), st.integers(1, 5000)), max_size=3))
def test_gaps_anywhere_never_break_the_decoder(data, sizes, gaps):
    decoder = StreamDecoder()
    chunks = cut(data, sizes)
    at = {pos % (len(chunks) + 1): length for pos, length in gaps}
    total = 0
    events = []
    for i, chunk in enumerate(chunks):
        if i in at:
            decoder.gap(at[i])
            total += at[i]
        decoder.receive_data(chunk)
        total += len(chunk)
        assert decoder.received == total
        assert len(decoder.buffer.data) <= total
        events.extend(decoder.events())
    decoder.close()
    events.extend(decoder.events())
    check_events(events, total)
    for gap in (e for e in events if e.kind == "gap"):
        assert gap.length in at.values()


# ---------------------------------------------------------------- the dissector


@FUZZ
@given(c2s=streams, s2c=streams, sizes=chunk_sizes, order=st.lists(st.booleans(), min_size=1, max_size=20),
       mid_stream=st.booleans(), gap=st.one_of(st.none(), st.integers(1, 3000)))
def test_dissector_never_raises(c2s, s2c, sizes, order, mid_stream, gap):
    dissector = ConnectionDissector(mid_stream=mid_stream)
    pending = {"c2s": cut(c2s, sizes), "s2c": cut(s2c, list(reversed(sizes)))}
    out = []
    i = 0
    while pending["c2s"] or pending["s2c"]:
        direction = "c2s" if order[i % len(order)] else "s2c"
        i += 1
        if not pending[direction]:
            direction = "s2c" if direction == "c2s" else "c2s"
        out.extend(dissector.receive_data(direction, pending[direction].pop(0)))
        if gap is not None and i == 2:
            out.extend(dissector.gap(direction, gap))
    out.extend(dissector.close())
    assert dissector.close() == []
    for direction, event in out:
        assert direction in ("c2s", "s2c")
        json.dumps(event.to_dict())
    for direction in ("c2s", "s2c"):
        decoder = dissector.decoders[direction]
        assert len(decoder.buffer.data) <= decoder.received


# ---------------------------------------------------------------- a strict peer


@FUZZ
@given(data=streams, sizes=chunk_sizes, socket_type=st.sampled_from(["PULL", "SUB", "REP", "ROUTER", "PAIR"]),
       version=st.sampled_from(["3.1", "3.0", "2.0", "1.0"]), plain=st.booleans())
def test_strict_peer_raises_only_protocol_errors(data, sizes, socket_type, version, plain):
    mechanism = PlainServer() if plain and version.startswith("3") else None
    conn = Connection(socket_type, version=version, mechanism=mechanism, max_frame_size=1 << 20)
    conn.start()
    try:
        for chunk in cut(data, sizes):
            conn.receive_data(chunk)
            conn.data_to_send()
    except RemoteProtocolError as exc:
        assert isinstance(exc.offset, int) and 0 <= exc.offset <= len(data)
        assert isinstance(exc.rule, str) and exc.rule
        assert conn.state == "closed"
    events = conn.events()
    assert sum(e.kind == "closed" for e in events) <= 1


# ---------------------------------------------------------------- absurd sizes

HUGE_V3 = b"\x02" + b"\xff" * 8 + b"abc"  # a long frame claiming 2^64 - 1 octets
AFTER_READY = encode_greeting() + command(ready_body({"Socket-Type": b"PUSH"}))


@pytest.mark.parametrize(("prefix", "huge", "framing"), [
    (b"", HUGE_V3, "3"),
    (AFTER_READY, HUGE_V3, None),
    (AFTER_READY, b"\x03" + b"\x7f" + b"\xff" * 7 + b"abc", None),  # 2^63 - 1 with MORE
    (AFTER_READY, b"\x06" + b"\xff" * 8 + b"\x05READY", None),  # a command claiming 2^64 - 1
    (b"", b"\x02" + b"\xff" * 8 + b"abc", "2"),
    (b"", b"\xff" * 9 + b"\x00abc", "1"),  # 13/ZMTP long length
    (b"\xff" * 9 + b"\x7e", b"abc", None),  # a 1.0 identity claiming 2^64 - 2 octets
])
def test_huge_declared_size_is_never_allocated(prefix, huge, framing):
    tracemalloc.start()
    try:
        decoder = StreamDecoder(framing=framing)
        decoder.receive_data(prefix + huge)
        for _ in range(100):
            decoder.receive_data(b"more bytes")
        held = len(decoder.buffer.data)
        decoder.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held <= len(prefix + huge) + 1000
    assert peak < 4 * 1024 * 1024
    events = decoder.events()
    experts = [e for e in events if e.kind == "expert" and e.severity == "error"]
    assert experts, "close() reports the unfinished frame"
    assert experts[-1].rule in ("message", "greeting")


def test_huge_frame_in_the_dissector_and_a_gap_inside_it():
    tracemalloc.start()
    try:
        dissector = ConnectionDissector()
        out = dissector.receive_data("c2s", AFTER_READY + HUGE_V3)
        out += dissector.gap("c2s", 1 << 40)  # inside the declared body: boundaries stay certain
        out += dissector.receive_data("c2s", b"z" * 1000)
        out += dissector.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024
    assert any(e.kind == "gap" and e.length == 1 << 40 for _, e in out)
    assert any(e.kind == "expert" and e.rule == "message-body" for _, e in out)


def test_strict_peer_without_limit_does_not_allocate_either():
    conn = Connection("PULL")
    conn.start()
    conn.receive_data(AFTER_READY)
    assert conn.events()[-1].kind == "handshake"
    tracemalloc.start()
    try:
        conn.receive_data(HUGE_V3)
        for _ in range(100):
            conn.receive_data(b"x" * 100)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024
    assert conn.state == "ready" and conn.events() == []


def test_strict_peer_with_limit_refuses_the_header():
    conn = Connection("PULL", max_frame_size=1 << 20)
    conn.start()
    conn.receive_data(AFTER_READY)
    with pytest.raises(RemoteProtocolError) as info:
        conn.receive_data(HUGE_V3)
    assert (info.value.offset, info.value.rule) == (len(AFTER_READY), "long-size")


def test_mid_stream_resync_ignores_absurd_sizes():
    decoder = StreamDecoder(mid_stream=True)
    decoder.receive_data(b"\x02" + b"\xff" * 8)  # would claim 2^64 - 1 octets: not a certain boundary
    decoder.receive_data(encode_message([b"a", b"bb"]))
    decoder.receive_data(encode_frame(b"ccc"))
    decoder.close()
    events = decoder.events()
    assert [m.frames for m in events if m.kind == "message"] == [[b"a", b"bb"], [b"ccc"]]
    assert len(decoder.buffer.data) < 100
