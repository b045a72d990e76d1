"""Byte vectors written down from the specs (23/ZMTP's worked example, the ABNF of 13, 15, 23, 37 and 24).

Every vector is decoded whole, one byte at a time and split at every offset, and must
give the same events each way (`assert_cut_invariant`).
"""

from __future__ import annotations

import pytest
from feeding import assert_cut_invariant, decode

from zmtplab.engine import StreamDecoder
from zmtplab.engine.constants import SOCKET_TYPE_NAMES_V2


def table(event: dict) -> list[tuple[str, int, int, object]]:
    """(name, offset, length, value) of each field of an event's `to_dict()`."""
    return [(f["name"], f["offset"], f["length"], f["value"]) for f in event["fields"]]


def bare(**kwargs):
    """A decoder for bytes that start after the greeting (framing and mechanism given)."""
    return lambda: StreamDecoder(framing=kwargs.get("framing", "3"), mechanism=kwargs.get("mechanism", "NULL"))


def of_kind(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["kind"] == kind]


# ---------------------------------------------------------------- 23/ZMTP worked example

DEALER_READY = (bytes.fromhex("0429") + b"\x05READY" + b"\x0bSocket-Type" + b"\x00\x00\x00\x06DEALER"
                + b"\x08Identity" + b"\x00\x00\x00\x00")
ROUTER_READY = bytes.fromhex("041c") + b"\x05READY" + b"\x0bSocket-Type" + b"\x00\x00\x00\x06ROUTER"

# The two halves of the greeting in the worked example: signature + major, then the rest.
EXAMPLE_GREETING = (b"\xff" + bytes(8) + b"\x7f" + b"\x03"
                    + b"\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" + bytes(31))

DEALER_READY_TABLE = [
    ("flags", 0, 1, "0x04 (COMMAND)"),
    ("size", 1, 1, 41),
    ("name-size", 2, 1, 5),
    ("command-name", 3, 5, "READY"),
    ("name-size", 8, 1, 11),
    ("property-name", 9, 11, "Socket-Type"),
    ("value-size", 20, 4, 6),
    ("property-value", 24, 6, "DEALER"),
    ("name-size", 30, 1, 8),
    ("property-name", 31, 8, "Identity"),
    ("value-size", 39, 4, 0),
    ("property-value", 43, 0, ""),
]


def test_worked_example_dealer_ready_is_43_octets_with_the_spec_offsets():
    assert len(DEALER_READY) == 43
    events = assert_cut_invariant(DEALER_READY, bare())
    assert [e["kind"] for e in events] == ["command"]
    ready = events[0]
    assert (ready["offset"], ready["length"], ready["name"]) == (0, 43, "READY")
    assert ready["properties"] == {"Socket-Type": "DEALER", "Identity": ""}
    assert table(ready) == DEALER_READY_TABLE
    assert {f["rule"] for f in ready["fields"][4:]} == {"name", "value"}


def test_worked_example_router_ready_is_30_octets():
    assert len(ROUTER_READY) == 30
    events = assert_cut_invariant(ROUTER_READY, bare())
    assert [e["kind"] for e in events] == ["command"]
    ready = events[0]
    assert (ready["offset"], ready["length"], ready["name"]) == (0, 30, "READY")
    assert ready["properties"] == {"Socket-Type": "ROUTER"}
    assert table(ready) == [DEALER_READY_TABLE[0], ("size", 1, 1, 28), *DEALER_READY_TABLE[2:7],
                            ("property-value", 24, 6, "ROUTER")]


def test_worked_example_greeting_diagram():
    events = assert_cut_invariant(EXAMPLE_GREETING)
    assert [e["kind"] for e in events] == ["greeting"]
    greeting = events[0]
    assert (greeting["offset"], greeting["length"]) == (0, 64)
    assert (greeting["version"], greeting["mechanism"], greeting["as_server"]) == ("3.0", "NULL", False)
    assert table(greeting) == [
        ("signature", 0, 1, "0xff"),
        ("padding", 1, 8, "0000000000000000"),
        ("signature-end", 9, 1, "0x7f"),
        ("version-major", 10, 1, 3),
        ("version-minor", 11, 1, 0),
        ("mechanism", 12, 20, "NULL"),
        ("as-server", 32, 1, 0),
        ("filler", 33, 31, "00" * 31),
    ]


def test_worked_example_whole_exchange_after_the_greeting():
    """Greeting then READY: the READY's fields keep the spec's offsets, shifted by the 64-octet greeting."""
    c2s = EXAMPLE_GREETING + DEALER_READY
    events = assert_cut_invariant(c2s)
    assert [e["kind"] for e in events] == ["greeting", "command"]
    assert table(events[1]) == [(n, o + 64, length, v) for n, o, length, v in DEALER_READY_TABLE]
    s2c = EXAMPLE_GREETING + ROUTER_READY
    events = assert_cut_invariant(s2c)
    assert events[1]["offset"] == 64 and events[1]["length"] == 30
    assert events[1]["properties"] == {"Socket-Type": "ROUTER"}


def test_libzmq_greeting_padding_and_3_1():
    """37/ZMTP greeting as libzmq sends it: padding is identity length + 1, minor version 1."""
    raw = b"\xff" + bytes(7) + b"\x01" + b"\x7f\x03\x01" + b"NULL".ljust(20, b"\x00") + b"\x00" + bytes(31)
    greeting = assert_cut_invariant(raw)[0]
    assert greeting["version"] == "3.1"
    assert table(greeting)[1] == ("padding", 1, 8, "0000000000000001")
    assert "identity length + 1 = 1" in greeting["fields"][1]["note"]


# ---------------------------------------------------------------- 23/ZMTP and 37/ZMTP framing


def test_short_final_frame():
    events = assert_cut_invariant(b"\x00\x03abc", bare())
    assert [e["kind"] for e in events] == ["frame", "message"]
    frame, message = events
    assert (frame["more"], frame["long"], frame["size"], frame["body"]) == (False, False, 3, "616263")
    assert table(frame) == [("flags", 0, 1, "0x00 (none)"), ("size", 1, 1, 3), ("body", 2, 3, "abc")]
    assert [f["rule"] for f in frame["fields"]] == ["flags", "short-size", "message-body"]
    assert (message["offset"], message["length"], message["frames"]) == (0, 5, ["616263"])


def test_long_final_frame():
    body = bytes(range(256)) * 2
    data = b"\x02" + len(body).to_bytes(8, "big") + body
    frame, message = assert_cut_invariant(data, bare())
    assert (frame["long"], frame["size"], frame["length"]) == (True, 512, 521)
    assert table(frame)[:2] == [("flags", 0, 1, "0x02 (LONG)"), ("size", 1, 8, 512)]
    assert frame["fields"][1]["rule"] == "long-size"
    assert bytes.fromhex(message["frames"][0]) == body


def test_more_frames_make_one_message():
    long_body = b"L" * 300
    data = (b"\x01\x01a" + b"\x03" + len(long_body).to_bytes(8, "big") + long_body + b"\x00\x00")
    events = assert_cut_invariant(data, bare())
    assert [e["kind"] for e in events] == ["frame", "frame", "frame", "message"]
    assert [e["more"] for e in events[:3]] == [True, True, False]
    assert [e["long"] for e in events[:3]] == [False, True, False]
    message = events[3]
    assert (message["offset"], message["length"]) == (0, len(data))
    assert message["frames"] == ["61", long_body.hex(), ""]


def test_empty_frame_and_short_size_255():
    data = b"\x00\x00" + b"\x00\xff" + b"x" * 255
    events = assert_cut_invariant(data, bare())
    messages = of_kind(events, "message")
    assert [m["frames"] for m in messages] == [[""], [("x" * 255).encode().hex()]]
    assert not of_kind(events, "expert")


def test_long_command_frame():
    value = b"v" * 300
    body = b"\x05READY" + b"\x0bSocket-Type\x00\x00\x00\x03SUB" + b"\x05X-Big" + len(value).to_bytes(4, "big") + value
    data = b"\x06" + len(body).to_bytes(8, "big") + body
    (command,) = assert_cut_invariant(data, bare())
    assert command["kind"] == "command" and command["name"] == "READY"
    assert command["properties"] == {"Socket-Type": "SUB", "X-Big": "v" * 300}
    assert table(command)[:4] == [("flags", 0, 1, "0x06 (LONG|COMMAND)"), ("size", 1, 8, len(body)),
                                  ("name-size", 9, 1, 5), ("command-name", 10, 5, "READY")]


def test_command_among_messages():
    data = b"\x01\x01a\x00\x01b" + b"\x04\x07\x04PING\x00\x00" + b"\x00\x01c"
    events = assert_cut_invariant(data, bare())
    assert [e["kind"] for e in events] == ["frame", "frame", "message", "command", "frame", "message"]
    assert events[3]["name"] == "PING"


# ---------------------------------------------------------------- 37/ZMTP commands


def test_ping():
    data = b"\x04\x0b\x04PING\x00\x64ctx1"
    (ping,) = assert_cut_invariant(data, bare())
    assert (ping["name"], ping["ttl"], ping["context"]) == ("PING", 100, b"ctx1".hex())
    assert table(ping)[2:] == [("name-size", 2, 1, 4), ("command-name", 3, 4, "PING"),
                               ("ping-ttl", 7, 2, 100), ("ping-context", 9, 4, b"ctx1".hex())]


def test_ping_without_context_and_pong():
    events = assert_cut_invariant(b"\x04\x07\x04PING\x00\x00" + b"\x04\x09\x04PONGctx1", bare())
    assert [(e["name"], e.get("ttl"), e["context"]) for e in events] == [("PING", 0, ""), ("PONG", None, "63747831")]
    assert table(events[1])[-1] == ("ping-context", 16, 4, "63747831")


def test_subscribe_and_cancel():
    data = b"\x04\x11\x09SUBSCRIBEweather" + b"\x04\x0a\x09SUBSCRIBE" + b"\x04\x0e\x06CANCELweather"
    events = assert_cut_invariant(data, bare())
    assert [(e["name"], e["topic"]) for e in events] == [
        ("SUBSCRIBE", b"weather".hex()), ("SUBSCRIBE", ""), ("CANCEL", b"weather".hex())]
    assert table(events[0])[-1] == ("subscription", 12, 7, "weather")
    assert table(events[2])[-1] == ("subscription", 40, 7, "weather")


def test_error_command():
    data = b"\x04\x0e\x05ERROR\x07go away"
    events = assert_cut_invariant(data, bare())
    assert [e["kind"] for e in events] == ["command", "expert"]
    error, expert = events
    assert (error["name"], error["reason"]) == ("ERROR", "go away")
    assert table(error)[-2:] == [("reason-size", 8, 1, 7), ("error-reason", 9, 7, "go away")]
    assert expert["severity"] == "error" and "go away" in expert["text"]


def test_join_and_leave_are_named():
    events = assert_cut_invariant(b"\x04\x09\x04JOINteam" + b"\x04\x0a\x05LEAVEteam", bare())
    assert [(e["name"], e["group"]) for e in events] == [("JOIN", "team"), ("LEAVE", "team")]


# ---------------------------------------------------------------- 24/ZMTP-PLAIN

PLAIN_CLIENT_GREETING = b"\xff" + bytes(8) + b"\x7f\x03\x01" + b"PLAIN".ljust(20, b"\x00") + b"\x00" + bytes(31)
PLAIN_SERVER_GREETING = b"\xff" + bytes(8) + b"\x7f\x03\x01" + b"PLAIN".ljust(20, b"\x00") + b"\x01" + bytes(31)


def test_plain_hello_and_initiate():
    hello = b"\x04\x13\x05HELLO\x05admin\x06secret"
    initiate = b"\x04\x1c\x08INITIATE\x0bSocket-Type\x00\x00\x00\x03REQ"
    events = assert_cut_invariant(PLAIN_CLIENT_GREETING + hello + initiate)
    assert [e["kind"] for e in events] == ["greeting", "command", "command"]
    greeting, hello_ev, initiate_ev = events
    assert (greeting["mechanism"], greeting["as_server"]) == ("PLAIN", False)
    assert (hello_ev["name"], hello_ev["username"], hello_ev["password"]) == ("HELLO", "admin", "secret")
    assert table(hello_ev)[2:] == [
        ("name-size", 66, 1, 5), ("command-name", 67, 5, "HELLO"),
        ("username-size", 72, 1, 5), ("username", 73, 5, "admin"),
        ("password-size", 78, 1, 6), ("password", 79, 6, "secret"),
    ]
    assert (initiate_ev["offset"], initiate_ev["name"]) == (85, "INITIATE")
    assert initiate_ev["properties"] == {"Socket-Type": "REQ"}


def test_plain_welcome_and_ready():
    welcome = b"\x04\x08\x07WELCOME"
    ready = b"\x04\x19\x05READY\x0bSocket-Type\x00\x00\x00\x03REP"
    events = assert_cut_invariant(PLAIN_SERVER_GREETING + welcome + ready)
    assert [e["kind"] for e in events] == ["greeting", "command", "command"]
    assert events[0]["as_server"] is True
    assert (events[1]["name"], events[1]["length"]) == ("WELCOME", 10)
    assert events[2]["properties"] == {"Socket-Type": "REP"}


def test_plain_hello_is_not_decoded_as_curve_or_null():
    """HELLO means different bytes per mechanism: under NULL it has no decoder of its own."""
    hello = b"\x04\x13\x05HELLO\x05admin\x06secret"
    (command,) = decode(hello, bare(mechanism="NULL"))
    assert "username" not in command.to_dict()
    (command,) = decode(hello, bare(mechanism="PLAIN"))
    assert command.details["username"] == "admin"


# ---------------------------------------------------------------- 15/ZMTP (2.0)


@pytest.mark.parametrize("code", sorted(SOCKET_TYPE_NAMES_V2))
def test_v2_greeting_socket_type_octets(code):
    raw = b"\xff" + bytes(8) + b"\x7f" + b"\x01" + bytes((code,)) + b"\x00\x03abc"
    (greeting,) = assert_cut_invariant(raw)
    assert (greeting["kind"], greeting["version"], greeting["length"]) == ("greeting", "2.0", 17)
    assert greeting["socket_type"] == SOCKET_TYPE_NAMES_V2[code]
    assert greeting["identity"] == "616263"
    assert table(greeting)[3:] == [
        ("revision", 10, 1, 1), ("socket-type", 11, 1, f"{code} ({SOCKET_TYPE_NAMES_V2[code]})"),
        ("identity-flags", 12, 1, "0x00"), ("identity-size", 13, 1, 3), ("identity", 14, 3, "abc"),
    ]


def test_v2_framing_has_no_commands():
    greeting = b"\xff" + bytes(8) + b"\x7f\x01\x07\x00\x00"  # PULL, anonymous
    body = b"z" * 256
    data = greeting + b"\x01\x01a" + b"\x02" + len(body).to_bytes(8, "big") + body + b"\x04\x01b"
    events = assert_cut_invariant(data)
    kinds = [e["kind"] for e in events]
    assert kinds == ["greeting", "frame", "frame", "message", "expert", "frame", "message"]
    assert events[0]["socket_type"] == "PULL" and events[0]["identity"] == ""
    assert events[3]["frames"] == ["61", body.hex()]
    assert events[4]["rule"] == "flags" and "reserved" in events[4]["text"]  # 0x04 is reserved in 2.0
    assert events[5]["body"] == "62"


def test_v2_unknown_socket_type_is_an_expert():
    raw = b"\xff" + bytes(8) + b"\x7f\x01\x09\x00\x00"
    events = assert_cut_invariant(raw)
    assert events[0]["kind"] == "greeting" and events[1]["kind"] == "expert"
    assert events[1]["offset"] == 11 and events[1]["rule"] == "socket-type"


# ---------------------------------------------------------------- 13/ZMTP (1.0)


def test_v1_identity_greeting_and_length_includes_flags():
    data = b"\x04\x00abc" + b"\x04\x01xyz" + b"\x01\x00"
    events = assert_cut_invariant(data)
    assert [e["kind"] for e in events] == ["greeting", "frame", "frame", "message"]
    greeting, more, final, message = events
    assert (greeting["version"], greeting["identity"], greeting["length"]) == ("1.0", "616263", 5)
    assert table(greeting) == [("length", 0, 1, 4), ("idflags", 1, 1, "0x00"), ("identity", 2, 3, "abc")]
    assert (more["size"], more["more"], more["length"]) == (3, True, 5)
    assert table(more) == [("length", 5, 1, 4), ("flags", 6, 1, "0x01 (MORE)"), ("body", 7, 3, "xyz")]
    assert (final["size"], final["more"], final["length"]) == (0, False, 2)
    assert message["frames"] == ["78797a", ""]


def test_v1_anonymous_greeting_and_long_frame():
    body = b"q" * 300
    data = b"\x01\x00" + b"\xff" + (len(body) + 1).to_bytes(8, "big") + b"\x00" + body
    events = assert_cut_invariant(data)
    greeting, frame, message = events
    assert (greeting["version"], greeting["identity"]) == ("1.0", "")
    assert (frame["size"], frame["length"], frame["long"]) == (300, 310, True)
    assert table(frame)[:3] == [("length-escape", 2, 1, 255), ("length", 3, 8, 301), ("flags", 11, 1, "0x00 (none)")]
    assert message["frames"] == [body.hex()]


def test_v1_zero_length_frame_is_discarded_with_an_expert():
    events = assert_cut_invariant(b"\x01\x00" + b"\x00" + b"\x02\x00a")
    assert [e["kind"] for e in events] == ["greeting", "expert", "frame", "message"]
    assert events[1]["offset"] == 2 and events[1]["rule"] == "length"
    assert events[3]["frames"] == ["61"]
