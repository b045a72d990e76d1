"""The engine's FastPath gives exactly what the Connection gives, however the bytes are cut."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zmtplab.engine import Connection, RemoteProtocolError
from zmtplab.engine.commands import ping_body
from zmtplab.engine.fastpath import TAIL_LIMIT, FastPath
from zmtplab.engine.framing import encode_frame, encode_message


def ready_pair(max_frame_size: int | None = None) -> tuple[Connection, Connection]:
    client = Connection("PUSH")
    server = Connection("PULL", max_frame_size=max_frame_size)
    out_c, out_s = client.start(), server.start()
    for _ in range(10):
        if out_c:
            server.receive_data(out_c)
        if out_s:
            client.receive_data(out_s)
        out_c, out_s = client.data_to_send(), server.data_to_send()
        if not out_c and not out_s:
            break
    assert client.state == server.state == "ready"
    server.events()
    return client, server


def slow_messages(data_chunks: list[bytes]) -> list[tuple[bytes, ...]]:
    _, server = ready_pair()
    out = []
    for chunk in data_chunks:
        server.receive_data(chunk)
        out.extend(e.frames for e in server.events() if e.kind == "received")
    return out


def fast_messages(data_chunks: list[bytes]) -> tuple[list[tuple[bytes, ...]], Connection]:
    _, server = ready_pair()
    fast = FastPath(server)
    out = []
    for chunk in data_chunks:
        out.extend(fast.receive(chunk))
        if fast.fell_back:
            out.extend(e.frames for e in server.events() if e.kind == "received")
        assert fast.error is None
    return out, server


frames_st = st.lists(st.binary(max_size=300), min_size=1, max_size=4)
messages_st = st.lists(frames_st, min_size=1, max_size=20)


@settings(max_examples=150, deadline=None)
@given(messages=messages_st, cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=8))
def test_fast_receive_equals_the_connection(messages: list[list[bytes]], cuts: list[int]) -> None:
    stream = b"".join(encode_message(m) for m in messages)
    bounds = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    chunks = [stream[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    expected = [tuple(m) for m in messages]
    assert slow_messages(chunks) == expected
    got, _ = fast_messages(chunks)
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(messages=messages_st)
def test_fast_encode_equals_connection_send(messages: list[list[bytes]]) -> None:
    client, _ = ready_pair()
    fast = FastPath(client)
    assert fast.encode([tuple(m) for m in messages]) == b"".join(client.send(m) for m in messages)


def test_commands_go_through_the_connection() -> None:
    stream = encode_message([b"a"]) + encode_frame(ping_body(10, b"ctx"), command=True) + encode_message([b"b"])
    got, server = fast_messages([stream])
    assert got == [(b"a",), (b"b",)]
    assert server.data_to_send().endswith(b"\x04PONGctx")  # answered by the engine itself


def test_large_frames_across_many_chunks() -> None:
    big = bytes(range(256)) * 4096
    stream = encode_message([big, b"x"]) + encode_message([b"after"])
    chunks = [stream[i:i + 7000] for i in range(0, len(stream), 7000)]
    assert len(big) > TAIL_LIMIT
    got, _ = fast_messages(chunks)
    assert got == [(big, b"x"), (b"after",)]


def test_errors_and_offsets_are_the_decoders_and_earlier_messages_survive() -> None:
    stream = encode_message([b"ok"]) + encode_message([b"a", b"b"]) + b"\x02" + (5000).to_bytes(8, "big")
    _, server = ready_pair(max_frame_size=1000)
    with pytest.raises(RemoteProtocolError) as slow:
        server.receive_data(stream)
    assert [e.frames for e in server.events() if e.kind == "received"] == [(b"ok",), (b"a", b"b")]
    _, server = ready_pair(max_frame_size=1000)
    fast = FastPath(server)
    assert fast.receive(stream) == [(b"ok",), (b"a", b"b")]
    assert isinstance(fast.error, RemoteProtocolError) and server.state == "closed"
    assert str(fast.error) == str(slow.value) and fast.error.offset == slow.value.offset == 92 + 4 + 6


def test_reserved_flags_are_refused_as_by_the_decoder() -> None:
    _, server = ready_pair()
    fast = FastPath(server)
    assert fast.receive(encode_message([b"ok"]) + b"\x80\x01x") == [(b"ok",)]
    assert isinstance(fast.error, RemoteProtocolError) and "reserved" in str(fast.error)


@settings(max_examples=100, deadline=None)
@given(messages=messages_st, budget=st.integers(min_value=1, max_value=3000))
def test_encode_queue_takes_whole_messages_within_budget(messages: list[list[bytes]], budget: int) -> None:
    from collections import deque

    client, _ = ready_pair()
    fast = FastPath(client)
    items: deque = deque(tuple(m) for m in messages)
    items.append("not a message")
    chunks = []
    while isinstance(items[0], tuple):
        data, taken = fast.encode_queue(items, budget)
        assert taken >= 1
        chunks.append(data)
    assert b"".join(chunks) == b"".join(client.send(m) for m in messages)
    assert list(items) == ["not a message"]


def test_what_the_scan_leaves_goes_to_the_decoder_at_once() -> None:
    """A LONG header on a short frame, a command inside an unfinished message: the decoder's, not held as a tail."""
    long_short = b"\x02" + (5).to_bytes(8, "big") + b"hello"
    stream = encode_message([b"a"]) + long_short + encode_message([b"b"])
    got, _ = fast_messages([stream])
    assert got == [(b"a",), (b"hello",), (b"b",)] == slow_messages([stream])
    _, server = ready_pair()
    fast = FastPath(server)
    inside = encode_frame(b"part", more=True) + encode_frame(ping_body(10, b"ctx"), command=True)
    assert fast.receive(encode_message([b"a"]) + inside) == [(b"a",)]
    assert fast.fell_back and fast.buffered == 0  # the decoder has it (and says what is wrong there)


def test_a_limit_under_a_short_frame_holds_for_short_frames() -> None:
    _, server = ready_pair(max_frame_size=100)
    fast = FastPath(server)
    got = fast.receive(encode_message([b"short"]))
    got += [e.frames for e in server.events() if e.kind == "received"] if fast.fell_back else []
    assert got == [(b"short",)]
    assert fast.receive(encode_message([b"x" * 200])) == []
    assert isinstance(fast.error, RemoteProtocolError) and server.state == "closed"
