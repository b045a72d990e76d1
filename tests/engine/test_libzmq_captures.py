"""Facts of real libzmq 4.3.5 traffic (the shared reference captures and their README table).

Each direction is extracted with tshark (session fixture `captures`), decoded by the
dissector in the capture's own segmentation, and checked against what the scenario did.
The same bytes fed one at a time, or split anywhere, give the same events. A strict
`Connection` replaying one side of each scenario produces libzmq's bytes exactly.
"""

from __future__ import annotations

import pytest
from feeding import (
    assert_cut_invariant,
    dicts,
    dissect,
    interleaved,
    one_byte_chunks,
    one_byte_segments,
    per_direction,
    run_decoder,
)

from zmtplab.engine import Connection, StreamDecoder

pytestmark = pytest.mark.capture

SMALL = ["push_pull", "push_pull_multipart", "dealer_router", "req_rep", "pub_sub"]
ALL = [*SMALL, "large", "bulk"]

LARGE_BODY = bytes(range(256)) * 4096

# What each scenario did (captures/README.md): socket types, READY properties, messages per direction.
SCENARIOS: dict[str, dict] = {
    "push_pull": {
        "server": "PUSH", "client": "PULL",
        "ready": {"c2s": {"Socket-Type": "PULL"}, "s2c": {"Socket-Type": "PUSH"}},
        "messages": {"c2s": [], "s2c": [[b"My Message"]]},
    },
    "push_pull_multipart": {
        "server": "PUSH", "client": "PULL",
        "ready": {"c2s": {"Socket-Type": "PULL"}, "s2c": {"Socket-Type": "PUSH"}},
        "messages": {"c2s": [], "s2c": [[b"a" * 256, b"My Message"]]},
    },
    "dealer_router": {
        "server": "ROUTER", "client": "DEALER", "identity": b"client-1",
        "ready": {"c2s": {"Socket-Type": "DEALER", "Identity": "client-1"},
                  "s2c": {"Socket-Type": "ROUTER", "Identity": ""}},
        "messages": {"c2s": [[b"", f"request {i}".encode()] for i in range(3)],
                     "s2c": [[b"", f"reply to request {i}".encode()] for i in range(3)]},
    },
    "req_rep": {
        "server": "REP", "client": "REQ",
        "ready": {"c2s": {"Socket-Type": "REQ", "Identity": ""}, "s2c": {"Socket-Type": "REP"}},
        "messages": {"c2s": [[b"", b"Hello"]] * 2, "s2c": [[b"", b"World"]] * 2},
    },
    "pub_sub": {
        "server": "PUB", "client": "SUB",
        "ready": {"c2s": {"Socket-Type": "SUB"}, "s2c": {"Socket-Type": "PUB"}},
        "messages": {"c2s": [], "s2c": [[b"weather", b"sunny 21C"], [b"sports 3-1"]]},
        "commands": {"c2s": [("SUBSCRIBE", b"weather"), ("SUBSCRIBE", b""), ("CANCEL", b"weather")]},
    },
    "large": {
        "server": "PUSH", "client": "PULL",
        "ready": {"c2s": {"Socket-Type": "PULL"}, "s2c": {"Socket-Type": "PUSH"}},
        "messages": {"c2s": [], "s2c": [[LARGE_BODY]]},
    },
    "bulk": {
        "server": "PUSH", "client": "PULL",
        "ready": {"c2s": {"Socket-Type": "PULL"}, "s2c": {"Socket-Type": "PUSH"}},
    },
}


def bulk_message(i: int) -> list[bytes]:
    if i % 10 == 0:
        return [f"topic.{i % 7}".encode(), b"x" * (i % 300)]
    return [f"msg {i}".encode()]


@pytest.fixture(scope="module")
def dissected(captures):
    """Each capture through a `ConnectionDissector`, in the capture's own segmentation."""
    return {name: dissect(captures[name].segments) for name in ALL}


def kinds(events, direction, kind):
    return [e for d, e in events if d == direction and e.kind == kind]


@pytest.mark.parametrize("name", ALL)
def test_greetings_are_3_1_null_sent_in_three_pieces(captures, dissected, name):
    cap = captures[name]
    identity = SCENARIOS[name].get("identity", b"")
    for direction in ("c2s", "s2c"):
        (greeting,) = kinds(dissected[name], direction, "greeting")
        assert (greeting.version, greeting.mechanism, greeting.as_server) == ("3.1", "NULL", False)
        assert (greeting.offset, greeting.length) == (0, 64)
        chunks = cap.chunks(direction)
        assert [len(c) for c in chunks[:3]] == [10, 1, 53]
        # The pseudo-signature: padding is the identity length + 1 (a 1.0 peer reads a frame header).
        ident_len = len(identity) if direction == "c2s" else 0
        assert chunks[0] == b"\xff" + (ident_len + 1).to_bytes(8, "big") + b"\x7f"


@pytest.mark.parametrize("name", ALL)
def test_ready_properties(dissected, name):
    for direction in ("c2s", "s2c"):
        commands = kinds(dissected[name], direction, "command")
        assert commands[0].name == "READY" and commands[0].offset == 64
        assert commands[0].properties == SCENARIOS[name]["ready"][direction]


@pytest.mark.parametrize("name", ALL)
def test_no_problems_in_real_traffic(captures, dissected, name):
    assert [e.to_dict(with_fields=False) for _, e in dissected[name] if e.kind in ("expert", "gap")] == []


@pytest.mark.parametrize("name", [*SMALL, "large"])
def test_messages(dissected, name):
    for direction in ("c2s", "s2c"):
        messages = [m.frames for m in kinds(dissected[name], direction, "message")]
        assert messages == SCENARIOS[name]["messages"][direction]


def test_multipart_first_frame_is_long(dissected):
    frames = kinds(dissected["push_pull_multipart"], "s2c", "frame")
    assert [(f.long, f.more, f.size) for f in frames] == [(True, True, 256), (False, False, 10)]
    assert frames[0].header == b"\x03" + (256).to_bytes(8, "big")


@pytest.mark.parametrize("name", ["dealer_router", "req_rep"])
def test_request_reply_empty_delimiter(dissected, name):
    for direction in ("c2s", "s2c"):
        for message in kinds(dissected[name], direction, "message"):
            first = message.parts[0]
            assert (first.body, first.more, first.length) == (b"", True, 2)


def test_pub_sub_subscriptions_are_3_1_commands(dissected):
    commands = kinds(dissected["pub_sub"], "c2s", "command")[1:]
    assert [(c.name, bytes.fromhex(c.details["topic"])) for c in commands] == SCENARIOS["pub_sub"]["commands"]["c2s"]
    assert kinds(dissected["pub_sub"], "s2c", "command")[1:] == []


def test_large_frame_reassembled_from_many_segments(captures, dissected):
    assert len(captures["large"].chunks("s2c")) > 10
    (frame,) = kinds(dissected["large"], "s2c", "frame")
    assert (frame.long, frame.size, frame.length) == (True, 1 << 20, 9 + (1 << 20))
    assert frame.body == LARGE_BODY


def test_bulk_counts(captures, dissected):
    events = dissected["bulk"]
    frames = kinds(events, "s2c", "frame")
    messages = kinds(events, "s2c", "message")
    assert len(messages) == 200_000
    assert len(frames) == 220_000
    assert sum(len(m.parts) for m in messages) == 220_000
    assert [m.frames for m in messages[:21]] == [bulk_message(i) for i in range(21)]
    assert [m.frames for m in messages[-3:]] == [bulk_message(i) for i in range(199_997, 200_000)]
    assert all(m.frames == bulk_message(i) for i, m in enumerate(messages))
    assert captures["bulk"].retransmitted > 0  # the capture holds a retransmitted segment; it must not count twice
    assert messages[-1].offset + messages[-1].length == len(captures["bulk"].stream("s2c"))


# ---------------------------------------------------------------- however the bytes arrive


@pytest.mark.parametrize("name", SMALL)
def test_small_captures_cut_anywhere(captures, name):
    for direction in ("c2s", "s2c"):
        assert_cut_invariant(captures[name].stream(direction))


@pytest.mark.parametrize("name", SMALL)
def test_dissector_one_byte_segments(captures, dissected, name):
    segments = captures[name].segments
    expected = per_direction(dissected[name])
    assert per_direction(dissect(one_byte_segments(segments))) == expected
    for size in (1, 7, 64):
        cap = captures[name]
        assert per_direction(dissect(interleaved(cap.stream("c2s"), cap.stream("s2c"), size))) == expected


def test_large_capture_one_byte_at_a_time_and_split(captures):
    stream = captures["large"].stream("s2c")
    whole = dicts(run_decoder(StreamDecoder(), [stream]), with_fields=False)
    assert dicts(run_decoder(StreamDecoder(), one_byte_chunks(stream)), with_fields=False) == whole
    frame_start = 64 + 28
    for cut in [*range(1, frame_start + 12), len(stream) // 2, len(stream) - 1]:
        got = dicts(run_decoder(StreamDecoder(), [stream[:cut], stream[cut:]]), with_fields=False)
        assert got == whole, f"split at {cut}"


def test_bulk_capture_in_other_cuts(captures, dissected):
    """200,000 messages re-cut into odd-sized writes: the same elements at the same offsets."""

    def summary(events):  # each direction in its own stream order
        return {direction: [(e.kind, e.offset, e.length, e.frames if e.kind == "message" else None)
                            for d, e in events if d == direction] for direction in ("c2s", "s2c")}

    cap = captures["bulk"]
    rechunked = interleaved(cap.stream("c2s"), cap.stream("s2c"), 65536 + 3)
    assert summary(dissect(rechunked)) == summary(dissected["bulk"])


# ---------------------------------------------------------------- a strict peer replaying one side


def replay(side: str, name: str, captures) -> tuple[Connection, bytes, list]:
    """A `Connection` in libzmq's place on `side`, fed the other side's segments; returns what it wrote."""
    scenario = SCENARIOS[name]
    identity = scenario.get("identity", b"") if side == "client" else b""
    conn = Connection(scenario[side], identity=identity)
    incoming = "s2c" if side == "client" else "c2s"
    written = bytearray(conn.start())
    events = []
    for chunk in captures[name].chunks(incoming):
        conn.receive_data(chunk)
        written += conn.data_to_send()
        events.extend(conn.events())
    return conn, bytes(written), events


@pytest.mark.parametrize("name", [*SMALL, "large"])
@pytest.mark.parametrize("side", ["client", "server"])
def test_strict_peer_speaks_exactly_like_libzmq(captures, name, side):
    scenario = SCENARIOS[name]
    outgoing = "c2s" if side == "client" else "s2c"
    conn, written, events = replay(side, name, captures)
    libzmq = captures[name].stream(outgoing)
    # Greeting and READY: byte for byte what libzmq sent.
    assert written == libzmq[:len(written)]
    assert len(written) == 64 + len(captures[name].chunks(outgoing)[3])
    handshake = [e for e in events if e.kind == "handshake"]
    assert len(handshake) == 1 and handshake[0].version == "3.1"
    other = "server" if side == "client" else "client"
    assert handshake[0].peer_socket_type == scenario[other]
    incoming = "s2c" if side == "client" else "c2s"
    received = [list(e.frames) for e in events if e.kind == "received"]
    assert received == scenario["messages"][incoming]
    # Then the traffic: our encoding of the same messages and commands is libzmq's.
    rest = bytearray()
    if name == "pub_sub" and side == "client":
        rest += conn.subscribe(b"weather") + conn.subscribe(b"") + conn.cancel(b"weather")
        assert [e.kind for e in events if e.kind == "subscription"] == []
    else:
        for frames in scenario["messages"][outgoing]:
            rest += conn.send(frames)
    assert bytes(rest) == libzmq[len(written):]


def test_strict_pub_reports_subscriptions(captures):
    _, _, events = replay("server", "pub_sub", captures)
    subs = [(e.subscribe, e.topic) for e in events if e.kind == "subscription"]
    assert subs == [(True, b"weather"), (True, b""), (False, b"weather")]
