"""Two strict `Connection`s talking in memory (`pair.connection_pair`), with a dissector reading the wire.

Handshakes for every socket pair of the 23/ZMTP table under NULL and PLAIN; version
negotiation across 3.1, 3.0, 2.0 and 1.0; refusals (bad pairs, bad passwords, mechanism
mismatch); heartbeats; subscriptions; limits and malformed input to a strict peer.
"""

from __future__ import annotations

import itertools

import pytest
from pair import ConnectionPair, connection_pair

from zmtplab.engine import (
    Connection,
    LocalProtocolError,
    PlainClient,
    PlainServer,
    RemoteProtocolError,
)
from zmtplab.engine.commands import error_body
from zmtplab.engine.constants import VALID_PEERS
from zmtplab.engine.framing import encode_frame
from zmtplab.engine.greeting import encode_greeting

# 23/ZMTP (37/ZMTP) "The Socket-Type Property": each type and its legal peers, as the spec lists them.
SPEC_TABLE = {
    "REQ": {"REP", "ROUTER"},
    "REP": {"REQ", "DEALER"},
    "DEALER": {"REP", "DEALER", "ROUTER"},
    "ROUTER": {"REQ", "DEALER", "ROUTER"},
    "PUB": {"SUB", "XSUB"},
    "XPUB": {"SUB", "XSUB"},
    "SUB": {"PUB", "XPUB"},
    "XSUB": {"PUB", "XPUB"},
    "PUSH": {"PULL"},
    "PULL": {"PUSH"},
    "PAIR": {"PAIR"},
}
TYPES = sorted(SPEC_TABLE)
ALL_PAIRS = list(itertools.product(TYPES, TYPES))
IDENTITY_AWARE = {"REQ", "DEALER", "ROUTER"}


def test_engine_table_is_the_spec_table():
    assert {k: set(v) for k, v in VALID_PEERS.items()} == SPEC_TABLE
    for a, b in ALL_PAIRS:
        assert (b in SPEC_TABLE[a]) == (a in SPEC_TABLE[b]), "the table is symmetric"


def make(mechanism: str, client_type: str, server_type: str, **kwargs) -> tuple[Connection, Connection]:
    if mechanism == "PLAIN":
        client_mech, server_mech = PlainClient("admin", "secret"), PlainServer()
    else:
        client_mech = server_mech = None
    client = Connection(client_type, mechanism=client_mech, identity=b"cli-" + client_type.encode(), **kwargs)
    server = Connection(server_type, mechanism=server_mech, **kwargs)
    return client, server


def handshake(pair: ConnectionPair, side: str):
    done = pair.of_kind(side, "handshake")
    return done[0] if len(done) == 1 else None


def quiet_wire(pair: ConnectionPair) -> None:
    """The dissector found nothing wrong (notes are allowed)."""
    pair.close()
    bad = [e.to_dict(with_fields=False) for e in pair.experts() if e.severity != "note"]
    assert bad == []


# ---------------------------------------------------------------- socket pairs


@pytest.mark.parametrize("mechanism", ["NULL", "PLAIN"])
@pytest.mark.parametrize(("client_type", "server_type"), ALL_PAIRS)
def test_socket_pairs(mechanism, client_type, server_type):
    valid = server_type in SPEC_TABLE[client_type]
    for one_byte in (False, True):
        pair = connection_pair(*make(mechanism, client_type, server_type), one_byte=one_byte)
        if valid:
            check_valid_pair(pair, mechanism, client_type, server_type)
        else:
            check_refused_pair(pair, mechanism, client_type, server_type)


def check_valid_pair(pair: ConnectionPair, mechanism: str, client_type: str, server_type: str) -> None:
    client_done, server_done = handshake(pair, "client"), handshake(pair, "server")
    assert client_done is not None and server_done is not None
    assert (client_done.version, client_done.mechanism) == ("3.1", mechanism)
    assert client_done.peer_socket_type == server_type
    assert server_done.peer_socket_type == client_type
    expected_identity = b"cli-" + client_type.encode() if client_type in IDENTITY_AWARE else b""
    assert server_done.peer_identity == expected_identity
    if mechanism == "PLAIN":
        assert server_done.user_id == "admin"
        assert pair.commands("c2s") == ["HELLO", "INITIATE"]
        assert pair.commands("s2c") == ["WELCOME", "READY"]
    else:
        assert pair.commands() == ["READY", "READY"]
    assert pair.client.state == pair.server.state == "ready"
    # Traffic both ways once the handshake is done.
    pair.send("client", [b"hello", b"world"])
    pair.send("server", [b"reply"])
    received = {side: [e.frames for e in pair.of_kind(side, "received")] for side in ("client", "server")}
    assert received["server"] == [(b"hello", b"world")]  # to a PUB too: two frames are not a subscription
    assert received["client"] == [(b"reply",)]
    quiet_wire(pair)
    messages = pair.wire_kind("message")
    assert [m.frames for m in messages] == [[b"hello", b"world"], [b"reply"]]


def check_refused_pair(pair: ConnectionPair, mechanism: str, client_type: str, server_type: str) -> None:
    assert handshake(pair, "client") is None or handshake(pair, "server") is None
    for side in ("client", "server"):
        closed = pair.of_kind(side, "closed")
        assert len(closed) == 1 and closed[0].error, side
    assert pair.client.state == pair.server.state == "closed"
    assert "ERROR" in pair.commands()
    pair.close()
    texts = [e.text for e in pair.experts("error")]
    assert any(client_type in t and server_type in t for t in texts), texts
    if mechanism == "NULL":
        refusal = [e for e in pair.experts("error") if e.rule == "socket-type"]
        assert len(refusal) == 1
        assert f"client {client_type} cannot talk to server {server_type}" in refusal[0].text
    else:
        # The server refuses the client's INITIATE metadata: ERROR instead of READY.
        assert pair.commands("s2c") == ["WELCOME", "ERROR"]
        assert any(f"a {server_type} socket cannot talk to {client_type}" in t for t in texts)


# ---------------------------------------------------------------- versions


def expected_outcome(client: tuple[str, str], server: tuple[str, str]) -> str | None:
    """The version a (version, strategy) pair settles on, or None when one side refuses to downgrade."""
    (vc, sc), (vs, ss) = client, server
    if vc.startswith("3") and vs.startswith("3"):
        return "3.1" if vc == vs == "3.1" else "3.0"
    if vc == vs:
        return vc
    newer, older = ((vc, sc), vs) if float(vc) > float(vs) else ((vs, ss), vc)
    return None if newer[1] == "full" else older


VERSION_SIDES = [(v, s) for v in ("3.1", "3.0", "2.0") for s in ("partial", "full")] + [("1.0", "full")]


@pytest.mark.parametrize(("client_side", "server_side"), list(itertools.product(VERSION_SIDES, VERSION_SIDES)),
                         ids=lambda side: f"{side[0]}-{side[1]}")
def test_version_negotiation(client_side, server_side):
    expected = expected_outcome(client_side, server_side)
    for one_byte in (False, True):
        client = Connection("DEALER", identity=b"dealer-1", version=client_side[0], strategy=client_side[1])
        server = Connection("ROUTER", identity=b"router-1", version=server_side[0], strategy=server_side[1])
        pair = connection_pair(client, server, one_byte=one_byte)
        if expected is None:
            assert handshake(pair, "client") is None and handshake(pair, "server") is None
            assert pair.client.state == pair.server.state == "closed"
            # The full-greeting side refuses once it sees the older greeting, unless the older peer,
            # handed a whole 3.x greeting it cannot read, gave up first.
            refused = any("cannot downgrade" in e.reason for side in ("client", "server")
                          for e in pair.of_kind(side, "closed"))
            assert refused or any(pair.errors.values())
            continue
        client_done, server_done = handshake(pair, "client"), handshake(pair, "server")
        assert client_done is not None and server_done is not None, (pair.events, pair.errors)
        assert client_done.version == server_done.version == expected
        types = (None, None) if expected == "1.0" else ("ROUTER", "DEALER")  # 13/ZMTP has no socket types
        assert (client_done.peer_socket_type, server_done.peer_socket_type) == types
        assert (client_done.peer_identity, server_done.peer_identity) == (b"router-1", b"dealer-1")
        framing = {"1.0": "1", "2.0": "2"}.get(expected, "3")
        assert pair.client.framing == pair.server.framing == framing
        pair.send("client", [b"", b"request"])
        pair.send("server", [b"", b"x" * 300])
        assert [e.frames for e in pair.of_kind("server", "received")] == [(b"", b"request")]
        assert [e.frames for e in pair.of_kind("client", "received")] == [(b"", b"x" * 300)]
        quiet_wire(pair)
        greetings = pair.wire_kind("greeting")
        assert sorted(g.version for g in greetings) == sorted(
            [client_side[0] if expected.startswith("3") else expected,
             server_side[0] if expected.startswith("3") else expected])
        assert [m.frames for m in pair.wire_kind("message")] == [[b"", b"request"], [b"", b"x" * 300]]


def test_libzmq_style_greeting_goes_in_three_pieces():
    client = Connection("PULL")
    assert client.start() == b"\xff" + (1).to_bytes(8, "big") + b"\x7f"
    client.receive_data(b"\xff" + bytes(8) + b"\x7f")
    assert client.data_to_send() == b"\x03"
    client.receive_data(b"\x03")
    rest = client.data_to_send()
    assert len(rest) == 53 and rest[0] == 1 and rest[1:5] == b"NULL"


def test_non_null_mechanism_never_downgrades():
    client = Connection("REQ", mechanism=PlainClient("a", "b"))
    server = Connection("REP", version="2.0")
    pair = connection_pair(client, server)
    assert handshake(pair, "client") is None
    assert "cannot do PLAIN" in pair.of_kind("client", "closed")[0].reason
    with pytest.raises(LocalProtocolError):
        Connection("REQ", mechanism=PlainClient("a", "b"), version="2.0")


# ---------------------------------------------------------------- mechanisms


def test_plain_bad_password_gets_error():
    def authenticate(user: str, password: str) -> str | None:
        return user if (user, password) == ("admin", "secret") else None

    for one_byte in (False, True):
        client = Connection("REQ", mechanism=PlainClient("admin", "wrong"))
        server = Connection("REP", mechanism=PlainServer(authenticate))
        pair = connection_pair(client, server, one_byte=one_byte)
        assert handshake(pair, "client") is None and handshake(pair, "server") is None
        assert pair.commands("c2s") == ["HELLO"]
        assert pair.commands("s2c") == ["ERROR"]
        (error,) = pair.wire_kind("command", "s2c")
        assert error.details["reason"] == "Invalid username or password"
        assert pair.wire_kind("command", "c2s")[0].details == {"username": "admin", "password": "wrong"}
        (closed,) = pair.of_kind("client", "closed")
        assert closed.error and "Invalid username or password" in closed.reason
        assert pair.of_kind("server", "closed")[0].error


def test_plain_good_password_sets_user_id():
    client = Connection("DEALER", mechanism=PlainClient("alice", "pw"))
    server = Connection("ROUTER", mechanism=PlainServer(lambda u, p: f"user:{u}" if p == "pw" else None))
    pair = connection_pair(client, server)
    assert handshake(pair, "server").user_id == "user:alice"
    assert handshake(pair, "client").mechanism == "PLAIN"
    quiet_wire(pair)


@pytest.mark.parametrize(("client_mech", "server_mech"), [("NULL", "PLAIN"), ("PLAIN", "NULL")])
def test_mechanism_mismatch_closes(client_mech, server_mech):
    client = Connection("PUSH", mechanism=PlainClient("u", "p") if client_mech == "PLAIN" else None)
    server = Connection("PULL", mechanism=PlainServer() if server_mech == "PLAIN" else None)
    pair = connection_pair(client, server)
    for side in ("client", "server"):
        assert handshake(pair, side) is None
        (closed,) = pair.of_kind(side, "closed")
        assert closed.error and "mechanism mismatch" in closed.reason
    assert pair.commands() == []  # closed right after the greetings, nothing else sent
    mismatch = [e for e in pair.experts("error") if e.rule == "mechanism"]
    assert len(mismatch) == 1 and "PLAIN" in mismatch[0].text and "NULL" in mismatch[0].text


def test_two_plain_servers_are_refused():
    pair = connection_pair(Connection("PUSH", mechanism=PlainServer()), Connection("PULL", mechanism=PlainServer()))
    for side in ("client", "server"):
        assert handshake(pair, side) is None
        assert pair.of_kind(side, "closed")[0].error


# ---------------------------------------------------------------- heartbeats


@pytest.mark.parametrize("context", [b"", b"c", b"0123456789abcdef"])
def test_ping_gets_pong_echoing_context(context):
    for one_byte in (False, True):
        pair = connection_pair(Connection("DEALER"), Connection("ROUTER"), one_byte=one_byte)
        pair.write("client", pair.client.ping(75, context))
        (ping,) = pair.of_kind("server", "ping")
        assert (ping.ttl, ping.context) == (75, context)
        (pong,) = pair.of_kind("client", "pong")
        assert pong.context == context
        assert pair.commands() == ["READY", "READY", "PING", "PONG"]
        assert pair.wire_kind("command", "c2s")[-1].details == {"ttl": 75, "context": context.hex()}
        assert pair.wire_kind("command", "s2c")[-1].details == {"context": context.hex()}
        quiet_wire(pair)


def test_ping_limits():
    pair = connection_pair(Connection("PAIR"), Connection("PAIR"))
    with pytest.raises(LocalProtocolError):
        pair.client.ping(0, b"x" * 17)
    with pytest.raises(LocalProtocolError):
        pair.client.ping(70000)
    old = connection_pair(Connection("PAIR", version="3.0"), Connection("PAIR"))
    with pytest.raises(LocalProtocolError):
        old.client.ping(10)
    with pytest.raises(LocalProtocolError):
        Connection("PAIR").ping(10)


# ---------------------------------------------------------------- subscriptions


@pytest.mark.parametrize("sub_type", ["SUB", "XSUB"])
@pytest.mark.parametrize("pub_type", ["PUB", "XPUB"])
def test_subscriptions_3_1_use_commands(sub_type, pub_type):
    pair = connection_pair(Connection(sub_type), Connection(pub_type))
    pair.write("client", pair.client.subscribe(b"weather"))
    pair.write("client", pair.client.subscribe(b""))
    pair.write("client", pair.client.cancel(b"weather"))
    subs = [(e.subscribe, e.topic) for e in pair.of_kind("server", "subscription")]
    assert subs == [(True, b"weather"), (True, b""), (False, b"weather")]
    assert pair.commands("c2s") == ["READY", "SUBSCRIBE", "SUBSCRIBE", "CANCEL"]
    topics = [bytes.fromhex(c.details["topic"]) for c in pair.wire_kind("command", "c2s")[1:]]
    assert topics == [b"weather", b"", b"weather"]
    assert pair.wire_kind("message") == []
    pair.send("server", [b"weather", b"sunny"])
    assert [e.frames for e in pair.of_kind("client", "received")] == [(b"weather", b"sunny")]
    quiet_wire(pair)


@pytest.mark.parametrize(("sub_version", "pub_version"), [("3.0", "3.1"), ("3.1", "3.0"), ("3.0", "3.0"),
                                                          ("2.0", "3.1"), ("3.1", "2.0"), ("3.1", "1.0")])
def test_subscriptions_before_3_1_use_prefixed_messages(sub_version, pub_version):
    for one_byte in (False, True):
        pair = connection_pair(Connection("SUB", version=sub_version), Connection("PUB", version=pub_version),
                               one_byte=one_byte)
        pair.write("client", pair.client.subscribe(b"weather"))
        pair.write("client", pair.client.cancel(b"weather"))
        subs = [(e.subscribe, e.topic) for e in pair.of_kind("server", "subscription")]
        assert subs == [(True, b"weather"), (False, b"weather")]
        assert pair.of_kind("server", "received") == []
        assert [m.frames for m in pair.wire_kind("message", "c2s")] == [[b"\x01weather"], [b"\x00weather"]]
        assert "SUBSCRIBE" not in pair.commands()
        quiet_wire(pair)
        notes = [e.text for e in pair.experts("note") if e.rule == "subscribe"]
        if "1.0" in (sub_version, pub_version):
            assert notes == []  # 13/ZMTP does not say which side is the subscriber
        else:
            assert len(notes) == 2 and "subscribe 'weather'" in notes[0] and "cancel 'weather'" in notes[1]


def test_only_subscribers_subscribe():
    pair = connection_pair(Connection("PUSH"), Connection("PULL"))
    with pytest.raises(LocalProtocolError):
        pair.client.subscribe(b"x")


# ---------------------------------------------------------------- limits and malformed input


@pytest.mark.parametrize(("size", "rule", "version"), [(101, "short-size", "3.1"), (256, "long-size", "3.1"),
                                                        (1 << 62, "long-size", "3.1"), (300, "long-size", "2.0"),
                                                        (200, "length", "1.0")])
def test_oversized_frame_is_refused_at_its_header(size, rule, version):
    client = Connection("PUSH", version=version)
    server = Connection("PULL", version=version, max_frame_size=100)
    pair = connection_pair(client, server)
    assert handshake(pair, "server") is not None
    offset = len(pair.wire["c2s"])
    framing = pair.client.framing
    if framing == "1":
        header = b"\xff" + (size + 1).to_bytes(8, "big") + b"\x00"
    elif size > 255:
        header = b"\x02" + size.to_bytes(8, "big")
    else:
        header = b"\x00" + bytes((size,))
    pair.write("client", header)  # no body at all: the limit applies as soon as the size is known
    error = pair.errors["server"]
    assert isinstance(error, RemoteProtocolError)
    assert (error.offset, error.rule) == (offset, rule)
    assert f"at offset {offset}" in str(error) and rule in str(error)
    assert pair.server.state == "closed"
    assert pair.of_kind("server", "closed")[-1].error


def test_frames_up_to_the_limit_pass():
    pair = connection_pair(Connection("PUSH"), Connection("PULL", max_frame_size=100))
    pair.send("client", [b"x" * 100])
    assert pair.errors["server"] is None
    assert [e.frames for e in pair.of_kind("server", "received")] == [(b"x" * 100,)]


GREETING = encode_greeting()
READY_PUSH = encode_frame(b"\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH", command=True)

MALFORMED = {
    "mechanism with lower case": (encode_greeting(mechanism="null"), 12, "mechanism"),
    "signature not ending in 0x7f": (GREETING[:9] + b"\x7d" + GREETING[10:], 9, "signature"),
    "message before the handshake": (GREETING + b"\x00\x01x", 64, "traffic"),
    "command without a name": (GREETING + b"\x04\x00", 66, "command-name"),
    "command name longer than its body": (GREETING + b"\x04\x03\x09RE", 66, "command-name"),
    "metadata cut short": (GREETING + b"\x04\x0b\x05READY\x0bSock", 72, "property"),
    "property value cut short": (GREETING + b"\x04\x17\x05READY\x0bSocket-Type\x00\x00\x00\x09PUS", 84, "value"),
    "zero-sized property name": (GREETING + b"\x04\x0b\x05READY\x00\x00\x00\x00\x00", 72, "name"),
    "MORE on a command": (GREETING + b"\x05\x1a" + READY_PUSH[2:], 64, "flags"),
    "reserved flag bits after READY": (GREETING + READY_PUSH + b"\x10\x01x", 92, "flags"),
    "PING shorter than its TTL": (GREETING + READY_PUSH + b"\x04\x06\x04PING\x01", 99, "ping-ttl"),
    "2.0 identity in a long frame": (b"\xff" + bytes(8) + b"\x7f\x01\x08\x02" + bytes(8), 12, "final-short"),
    "2.0 unknown socket type": (b"\xff" + bytes(8) + b"\x7f\x01\x0c\x00\x00", 11, "socket-type"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_to_a_strict_peer(case):
    data, offset, rule = MALFORMED[case]
    for cut in (None, 1):
        conn = Connection("PULL")
        conn.start()
        chunks = [data] if cut is None else [data[i:i + 1] for i in range(len(data))]
        with pytest.raises(RemoteProtocolError) as info:
            for chunk in chunks:
                conn.receive_data(chunk)
        assert (info.value.offset, info.value.rule) == (offset, rule), str(info.value)
        assert conn.state == "closed"
        closed = [e for e in conn.events() if e.kind == "closed"]
        assert len(closed) == 1 and closed[0].error
        conn.receive_data(b"\x00\x01x")  # a closed connection ignores what follows


def test_unknown_2_0_socket_type_never_completes_the_handshake():
    """JeroMQ 0.3.6 (libzmq 3.2) announces XSUB as octet 10, which 15/ZMTP lacks: refused, never ready."""
    conn = Connection("XPUB")
    conn.start()
    with pytest.raises(RemoteProtocolError) as info:
        conn.receive_data(b"\xff" + bytes(7) + b"\x01\x7f\x01\x0a\x00\x00")
    assert (info.value.offset, info.value.rule) == (11, "socket-type")
    assert [e.kind for e in conn.events()] == ["closed"]
    assert conn.state == "closed"


def test_ready_without_socket_type_is_refused_with_error():
    conn = Connection("PULL")
    conn.start()
    conn.receive_data(GREETING + encode_frame(b"\x05READY", command=True))
    out = conn.data_to_send()
    assert out.endswith(encode_frame(error_body("peer's metadata has no Socket-Type"), command=True))
    assert conn.state == "closed"


def test_peer_error_closes():
    pair = connection_pair(Connection("PUSH"), Connection("PULL"))
    pair.write("server", encode_frame(b"\x05ERROR\x04gone", command=True))
    (closed,) = pair.of_kind("client", "closed")
    assert closed.error and "gone" in closed.reason


def test_local_misuse_raises_local_protocol_error():
    with pytest.raises(LocalProtocolError):
        Connection("NOPE")
    with pytest.raises(LocalProtocolError):
        Connection("PUSH", version="4.0")
    with pytest.raises(LocalProtocolError):
        Connection("PUSH", identity=b"x" * 256)
    conn = Connection("PUSH")
    with pytest.raises(LocalProtocolError):
        conn.send([b"too early"])
    conn.start()
    with pytest.raises(LocalProtocolError):
        conn.start()
    pair = connection_pair(Connection("PUSH"), Connection("PULL"))
    with pytest.raises(LocalProtocolError):
        pair.client.send([])


def test_end_of_stream_closes():
    pair = connection_pair(Connection("PUSH"), Connection("PULL"))
    pair.client.receive_data(b"")
    (closed,) = pair.client.events()[-1:]
    assert closed.kind == "closed" and not closed.error  # the handshake had completed
    fresh = Connection("PUSH")
    fresh.start()
    fresh.receive_data(b"")
    assert fresh.events()[-1].error
