"""Hypothesis: whatever the encoders write, the decoder reads back (greetings, frames, every command body).

Each example is also fed in two chunks split at a drawn offset and must decode the same.
"""

from __future__ import annotations

from datetime import timedelta

from feeding import decode, dicts, run_decoder
from hypothesis import given, settings
from hypothesis import strategies as st

from zmtplab.engine import StreamDecoder
from zmtplab.engine.commands import (
    NAME_CHARS,
    cancel_body,
    command_body,
    error_body,
    initiate_body,
    ping_body,
    plain_hello_body,
    plain_welcome_body,
    pong_body,
    ready_body,
    subscribe_body,
)
from zmtplab.engine.constants import SOCKET_TYPE_CODES_V2, SOCKET_TYPES
from zmtplab.engine.fields import text_or_hex
from zmtplab.engine.framing import encode_frame, encode_message
from zmtplab.engine.greeting import MECHANISM_CHARS, encode_greeting, encode_v1_identity, encode_v2_tail, signature

SETTINGS = settings(max_examples=100, deadline=timedelta(seconds=2), database=None)

mechanism_names = st.text(alphabet="".join(sorted(map(chr, MECHANISM_CHARS))), min_size=1, max_size=20)
identities = st.binary(max_size=255)
bodies = st.one_of(st.binary(max_size=40), st.binary(min_size=250, max_size=700))
ascii_text = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=300)


def same_when_split(data: bytes, split: int, factory=StreamDecoder) -> list:
    """Decodes `data` whole and in two chunks cut at `split`; both must agree. Returns the events."""
    events = decode(data, factory)
    cut = split % (len(data) + 1)
    assert dicts(run_decoder(factory(), [data[:cut], data[cut:]])) == dicts(events)
    return events


def only_notes(events) -> bool:
    return all(e.severity == "note" for e in events if e.kind == "expert")


# ---------------------------------------------------------------- greetings


@SETTINGS
@given(minor=st.integers(0, 255), mechanism=mechanism_names, as_server=st.booleans(),
       identity_length=st.one_of(st.none(), st.integers(0, 255)), split=st.integers(0, 200))
def test_v3_greeting_round_trip(minor, mechanism, as_server, identity_length, split):
    raw = encode_greeting(minor=minor, mechanism=mechanism, as_server=as_server, identity_length=identity_length)
    assert len(raw) == 64
    events = same_when_split(raw, split)
    (greeting,) = [e for e in events if e.kind == "greeting"]
    assert (greeting.version, greeting.mechanism, greeting.as_server) == (f"3.{minor}", mechanism, as_server)
    assert (greeting.offset, greeting.length, greeting.raw) == (0, 64, raw)
    assert [f.offset for f in greeting.fields] == [0, 1, 9, 10, 11, 12, 32, 33]
    assert only_notes(events)


@SETTINGS
@given(major=st.integers(4, 255), minor=st.integers(0, 255))
def test_higher_versions_are_accepted_as_3x(major, minor):
    events = decode(encode_greeting(major=major, minor=minor))
    assert events[0].kind == "greeting" and events[0].version == f"{major}.{minor}"
    assert only_notes(events)


@SETTINGS
@given(socket_type=st.sampled_from(SOCKET_TYPES), identity=identities, padded=st.booleans(),
       split=st.integers(0, 300))
def test_v2_greeting_round_trip(socket_type, identity, padded, split):
    raw = signature(len(identity) if padded else None) + b"\x01" + encode_v2_tail(socket_type, identity)
    events = same_when_split(raw, split)
    (greeting,) = events
    on_wire = {"XPUB": "PUB", "XSUB": "SUB"}.get(socket_type, socket_type)  # 15/ZMTP has no X types
    assert SOCKET_TYPE_CODES_V2[socket_type] == raw[11]
    assert (greeting.version, greeting.socket_type, greeting.identity) == ("2.0", on_wire, identity)
    assert greeting.length == 14 + len(identity)


@SETTINGS
@given(identity=identities, split=st.integers(0, 300))
def test_v1_greeting_round_trip(identity, split):
    raw = encode_v1_identity(identity)
    events = same_when_split(raw, split)
    (greeting,) = events
    assert (greeting.version, greeting.identity, greeting.length) == ("1.0", identity, len(raw))


# ---------------------------------------------------------------- frames


@SETTINGS
@given(framing=st.sampled_from(["1", "2", "3"]),
       messages=st.lists(st.lists(bodies, min_size=1, max_size=4), min_size=1, max_size=4),
       split=st.integers(0, 3000))
def test_message_round_trip(framing, messages, split):
    data = b"".join(encode_message(frames, framing=framing) for frames in messages)
    events = same_when_split(data, split, lambda: StreamDecoder(framing=framing))
    frames = [e for e in events if e.kind == "frame"]
    got = [e for e in events if e.kind == "message"]
    assert [m.frames for m in got] == messages
    assert [f.body for f in frames] == [b for frames_ in messages for b in frames_]
    assert [f.more for f in frames] == [i < len(m) - 1 for m in messages for i in range(len(m))]
    limit = 253 if framing == "1" else 255  # 13/ZMTP: the length counts the flags octet; 255 escapes
    assert [f.long for f in frames] == [len(f.body) > limit for f in frames]
    assert sum(f.length for f in frames) == len(data)
    assert [e for e in events if e.kind == "expert"] == []


@SETTINGS
@given(body=bodies, more=st.booleans(), command=st.booleans(), framing=st.sampled_from(["1", "2", "3"]))
def test_single_frame_round_trip(body, more, command, framing):
    command = command and framing == "3" and not more and len(body) > 0
    data = encode_frame(body, more=more, command=command, framing=framing)
    events = decode(data, lambda: StreamDecoder(framing=framing), close=False)
    if command:
        assert events[0].kind == "command" and events[0].raw == data
        return
    frame = events[0]
    assert (frame.kind, frame.body, frame.more, frame.size, frame.length) == ("frame", body, more, len(body),
                                                                              len(data))
    assert len(events) == (1 if more else 2)


# ---------------------------------------------------------------- command bodies

property_names = st.text(alphabet="".join(sorted(map(chr, NAME_CHARS))), min_size=1, max_size=255)
properties = st.dictionaries(property_names, st.binary(max_size=300), max_size=4).filter(
    lambda d: len({k.lower() for k in d}) == len(d))


def decode_command(body: bytes, mechanism: str = "NULL", split: int = 0):
    data = encode_frame(body, command=True)
    events = same_when_split(data, split, lambda: StreamDecoder(framing="3", mechanism=mechanism))
    command = events[0]
    assert command.kind == "command" and command.length == len(data)
    return command, events[1:]


@SETTINGS
@given(props=properties, split=st.integers(0, 2000), initiate=st.booleans())
def test_ready_and_initiate_round_trip(props, split, initiate):
    body = initiate_body(props) if initiate else ready_body(props)
    command, rest = decode_command(body, "PLAIN" if initiate else "NULL", split)
    assert command.name == ("INITIATE" if initiate else "READY")
    assert command.metadata == props
    assert command.properties == {k: text_or_hex(v) for k, v in props.items()}
    assert rest == []


@SETTINGS
@given(reason=ascii_text)
def test_error_round_trip(reason):
    command, rest = decode_command(error_body(reason))
    assert (command.name, command.details["reason"]) == ("ERROR", reason[:255])
    assert [e.rule for e in rest] == ["error"]  # the ERROR itself is reported, nothing else


@SETTINGS
@given(ttl=st.integers(0, 0xFFFF), context=st.binary(max_size=16), split=st.integers(0, 40))
def test_ping_pong_round_trip(ttl, context, split):
    command, rest = decode_command(ping_body(ttl, context), split=split)
    assert (command.name, command.details) == ("PING", {"ttl": ttl, "context": context.hex()})
    assert rest == []
    command, rest = decode_command(pong_body(context), split=split)
    assert (command.name, command.details) == ("PONG", {"context": context.hex()})
    assert rest == []


@SETTINGS
@given(topic=st.binary(max_size=300), cancel=st.booleans())
def test_subscribe_cancel_round_trip(topic, cancel):
    command, rest = decode_command(cancel_body(topic) if cancel else subscribe_body(topic))
    assert (command.name, command.details["topic"]) == ("CANCEL" if cancel else "SUBSCRIBE", topic.hex())
    assert rest == []


@SETTINGS
@given(username=ascii_text.map(lambda t: t[:255]), password=ascii_text.map(lambda t: t[:255]))
def test_plain_hello_welcome_round_trip(username, password):
    command, rest = decode_command(plain_hello_body(username.encode(), password.encode()), "PLAIN")
    assert (command.name, command.details) == ("HELLO", {"username": username, "password": password})
    assert rest == []
    command, rest = decode_command(plain_welcome_body(), "PLAIN")
    assert (command.name, command.details, rest) == ("WELCOME", {}, [])


@SETTINGS
@given(name=st.text(alphabet=st.characters(min_codepoint=0x41, max_codepoint=0x5A), min_size=1, max_size=255),
       data=st.binary(max_size=300))
def test_any_command_name_round_trip(name, data):
    command, _ = decode_command(command_body(name, data), "NULL")
    assert command.name == name
    assert command.raw.endswith(data)
