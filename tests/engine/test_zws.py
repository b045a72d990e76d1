"""ZWS (45/ZWS, ZeroMQ over WebSocket) in the engine: `ZwsConnection` pairs, and `ZwsDissector` reading their
bytes in every cut, hostile ones included.

The peer's WebSocket layer is wsproto's; the events out are the contract's (docs/zws.md): the HTTP upgrade
and, without a mechanism, the routing id as greetings, ZWS frames as commands, frames and messages.
"""

from __future__ import annotations

import json
import tracemalloc
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wsproto.events import BytesMessage
from zws_pair import C2S, S2C, ZwsPair, dissect, per_direction

from zmtplab import i18n
from zmtplab.engine import (
    Command,
    ConnectionClosed,
    HandshakeComplete,
    LocalProtocolError,
    MessageReceived,
    PingReceived,
    PlainClient,
    PlainServer,
    PongReceived,
    RemoteProtocolError,
    SubscriptionChanged,
    ZwsConnection,
    ZwsDissector,
    ZwsFrame,
    ZwsGreeting,
)
from zmtplab.engine.commands import command_body
from zmtplab.engine.websocket import accept_token, read_header, unmask
from zmtplab.engine.zws import choose, client_offer, sniff_upgrade

FUZZ = settings(max_examples=100, deadline=timedelta(seconds=5), database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def pair(client_type: str = "DEALER", server_type: str = "ROUTER", *, one_byte: bool = False,
         protocols: list[str] | None = None, accepted: list[str] | None = None, client_mech=None, server_mech=None,
         identity: bytes = b"") -> ZwsPair:
    client = ZwsConnection(client_type, client=True, mechanism=client_mech, identity=identity, host="example:5555",
                           target="/zmq", protocols=protocols)
    server = ZwsConnection(server_type, client=False, mechanism=server_mech, protocols=accepted)
    return ZwsPair(client, server, one_byte=one_byte).run()


def opcodes(data: bytes) -> list[int]:
    """The opcodes of the WebSocket frames in `data`."""
    out, pos = [], 0
    while (header := read_header(data, pos)) is not None:
        out.append(header.opcode)
        pos += header.size + header.length
    return out


# ---------------------------------------------------------------- negotiation


def test_subprotocols_are_offered_and_chosen_as_libzmq_does():
    assert client_offer("NULL") == ["ZWS2.0/NULL", "ZWS2.0"]
    assert client_offer("plain") == ["ZWS2.0/PLAIN"]
    # A server takes the first offered protocol it speaks: libzmq's offer gives NULL, a browser's ZWS2.0.
    assert choose(["ZWS2.0/NULL", "ZWS2.0"], "NULL") == "ZWS2.0/NULL"
    assert choose(["ZWS2.0"], "NULL") == "ZWS2.0"
    assert choose(["ZWS2.0/PLAIN", "ZWS2.0"], "NULL") == "ZWS2.0"
    assert choose(["ZWS2.0/NULL", "ZWS2.0"], "PLAIN") is None
    assert choose(["ZWS2.0/NULL", "ZWS2.0"], "NULL", accepted=["ZWS2.0"]) == "ZWS2.0"
    assert choose(["chat", "ZWS2.0/BEARER"], "NULL") is None


def test_sniffing_an_upgrade_needs_its_whole_head():
    request = (b"GET /zmq HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
               b"Sec-WebSocket-Key: x3JJHMbDL1EzLkh9GBhXDw==\r\nSec-WebSocket-Version: 13\r\n"
               b"Sec-WebSocket-Protocol: ZWS2.0\r\n\r\n")
    assert sniff_upgrade(request) is True
    assert sniff_upgrade(request[:40]) is None
    assert sniff_upgrade(b"GE") is None
    assert sniff_upgrade(request.replace(b"ZWS2.0", b"chat")) is False  # WebSocket, not ZWS
    assert sniff_upgrade(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n") is False  # plain HTTP
    assert sniff_upgrade(b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f") is False  # ZMTP


# ---------------------------------------------------------------- the peer


@pytest.mark.parametrize("one_byte", [False, True])
def test_null_handshake_messages_both_ways(one_byte):
    p = pair(identity=b"client-1", one_byte=one_byte)
    assert p.client.protocol == p.server.protocol == "ZWS2.0/NULL"
    (ready_c,) = [e for e in p.events["client"] if isinstance(e, HandshakeComplete)]
    (ready_s,) = [e for e in p.events["server"] if isinstance(e, HandshakeComplete)]
    assert (ready_c.peer_socket_type, ready_c.version) == ("ROUTER", "ZWS2.0/NULL")
    assert (ready_s.peer_socket_type, ready_s.peer_identity) == ("DEALER", b"client-1")
    p.send("client", [b"", b"request"])
    p.send("server", [b"", b"x" * 70000])  # a 64-bit WebSocket payload length
    assert [e.frames for e in p.events["server"] if isinstance(e, MessageReceived)] == [(b"", b"request")]
    assert [e.frames for e in p.events["client"] if isinstance(e, MessageReceived)] == [(b"", b"x" * 70000)]
    assert p.errors == {"client": None, "server": None}


def test_without_mechanism_the_first_message_is_the_routing_id():
    p = pair(protocols=["ZWS2.0"], identity=b"me")
    assert p.server.protocol == "ZWS2.0"
    (done,) = [e for e in p.events["server"] if isinstance(e, HandshakeComplete)]
    assert (done.peer_identity, done.peer_socket_type) == (b"me", None)
    p.send("client", [b"hello"])
    assert [e.frames for e in p.events["server"] if isinstance(e, MessageReceived)] == [(b"hello",)]
    # On the wire: the client's routing id is its first binary message, flag %x00 then the id.
    header = read_header(p.stream(C2S), len(p.segments[0][1]))
    assert header is not None and header.masked and header.length == 3
    start = len(p.segments[0][1]) + header.size
    assert unmask(p.stream(C2S)[start:start + 3], header.mask) == b"\x00me"


def test_plain_handshake_and_a_refused_password():
    p = pair("REQ", "REP", client_mech=PlainClient("admin", "secret"), server_mech=PlainServer())
    assert p.client.protocol == "ZWS2.0/PLAIN"
    assert [e.user_id for e in p.events["server"] if isinstance(e, HandshakeComplete)] == ["admin"]
    refused = pair("REQ", "REP", client_mech=PlainClient("admin", "wrong"),
                   server_mech=PlainServer(lambda user, password: None))
    assert [e.reason for e in refused.events["client"] if isinstance(e, ConnectionClosed)] == [
        "server refused: Invalid username or password"]
    names = [e["name"] for e in per_direction(dissect(refused.segments))[S2C] if e["kind"] == "command"]
    assert names == ["ERROR", "WS-CLOSE"]


def test_no_common_subprotocol_is_refused_with_http_400():
    p = pair(client_mech=PlainClient("u", "p"))  # offers ZWS2.0/PLAIN to a NULL server
    (closed,) = [e for e in p.events["server"] if isinstance(e, ConnectionClosed)]
    assert closed.error and "ZWS2.0/PLAIN" in closed.reason
    assert p.stream(S2C).startswith(b"HTTP/1.1 400 ")
    assert [e.reason for e in p.events["client"] if isinstance(e, ConnectionClosed)] == [
        "the server refused the WebSocket upgrade: HTTP 400"]
    events = per_direction(dissect(p.segments))
    assert [e["status"] for e in events[S2C] if e["kind"] == "greeting"] == [400]
    assert any(e["kind"] == "expert" and "HTTP 400" in e["text"] for e in events[S2C])


def test_invalid_socket_pair_gets_error_and_close():
    p = pair("PUSH", "PUSH")
    closed = [e for e in p.events["server"] + p.events["client"] if isinstance(e, ConnectionClosed)]
    assert closed and all(e.error for e in closed)
    assert any("cannot talk to PUSH" in e.reason for e in closed)


def test_subscriptions_are_prefixed_messages_and_pings_are_websocket_pings():
    p = pair("SUB", "PUB")
    p.write("client", p.client.subscribe(b"weather"))
    p.write("client", p.client.cancel(b"weather"))
    assert [(e.topic, e.subscribe) for e in p.events["server"] if isinstance(e, SubscriptionChanged)] == [
        (b"weather", True), (b"weather", False)]
    p.write("server", p.server.ping(context=b"hb"))
    assert [e.context for e in p.events["client"] if isinstance(e, PingReceived)] == [b"hb"]
    assert [e.context for e in p.events["server"] if isinstance(e, PongReceived)] == [b"hb"]
    with pytest.raises(LocalProtocolError):
        p.server.subscribe(b"x")


def test_send_before_ready_and_unknown_mechanisms_are_local_errors():
    client = ZwsConnection("PULL", client=True)
    with pytest.raises(LocalProtocolError):
        client.send([b"x"])
    with pytest.raises(LocalProtocolError):
        ZwsConnection("PULL", client=True, protocols=["ZWS2.0/PLAIN"])  # does not fit NULL
    with pytest.raises(LocalProtocolError):
        ZwsConnection("PULL", client=True, mechanism=type("Curve", (PlainServer,), {"name": "CURVE"})())


@pytest.mark.parametrize("bad, rule", [
    (b"\x82\x80" + b"\x00" * 4, "flags"),  # an empty binary message: no flag octet
    (b"\x81\x82\x00\x00\x00\x00hi", "opcode"),  # a text message
    (b"\x82\x82\x00\x00\x00\x00\x04x", "flags"),  # reserved flag bits
    (b"\x82\x86\x00\x00\x00\x00\x00hello", "traffic"),  # a message before READY
])
def test_a_server_refuses_bad_zws_frames(bad, rule):
    p = ZwsPair(ZwsConnection("PUSH", client=True, protocols=["ZWS2.0/NULL"]),
                ZwsConnection("PULL", client=False))
    request = p.client.start()
    p.server.receive_data(request)
    p.server.data_to_send()  # the 101 and READY: the client never reads them here
    with pytest.raises(RemoteProtocolError) as caught:
        p.server.receive_data(bad)
    assert caught.value.rule == rule
    assert p.server.state == "closed"
    assert opcodes(p.server.data_to_send())[-1] == 0x8  # a close frame tells the client


def test_garbage_instead_of_an_upgrade_is_refused():
    server = ZwsConnection("PULL", client=False)
    with pytest.raises(RemoteProtocolError) as caught:
        server.receive_data(b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f\x03\x01NULL" + b"\x00" * 48 + b"\r\n\r\n")
    assert caught.value.rule == "upgrade"
    assert server.data_to_send().startswith(b"HTTP/1.1 400 ")


def test_a_2_63_payload_length_is_refused_and_a_big_message_is_bounded():
    server = ZwsConnection("PULL", client=False, max_frame_size=1000)
    client = ZwsConnection("PUSH", client=True)
    ZwsPair(client, server).run()
    assert server.state == "ready"
    with pytest.raises(RemoteProtocolError):  # RFC 6455: the 64-bit length's top bit must be 0
        server.receive_data(b"\x82\xff" + (1 << 63).to_bytes(8, "big") + b"\x00" * 4)
    server = ZwsConnection("PULL", client=False, max_frame_size=1000)
    ZwsPair(ZwsConnection("PUSH", client=True), server).run()
    # 2^63 - 1 is a legal length: what arrives is counted, and more than the maximum closes (1009).
    server.receive_data(b"\x82\xff" + ((1 << 63) - 1).to_bytes(8, "big") + b"\x00" * 4 + b"\x00" * 600)
    assert server.state == "ready"
    server.receive_data(b"\x00" * 600)
    assert server.state == "closed"
    assert [e.reason for e in server.events() if isinstance(e, ConnectionClosed)] == [
        "frame of more than 1000 octets"]
    close = server.data_to_send()
    assert close[0] == 0x88 and close[2:4] == (1009).to_bytes(2, "big")  # a close frame: message too big


# ---------------------------------------------------------------- the dissector


def conversation(**kwargs) -> ZwsPair:
    p = pair(identity=b"client-1", **kwargs)
    p.send("client", [b"", b"request 1"])
    p.send("server", [b"", b"reply " + b"r" * 200])
    p.write("server", p.server.ping(context=b"hb"))
    p.write("client", p.client.ping())
    return p


def test_the_dissector_maps_a_conversation_onto_the_event_contract():
    p = conversation()
    events = per_direction(dissect(p.segments))
    c2s, s2c = events[C2S], events[S2C]
    assert [e["kind"] for e in c2s] == ["greeting", "command", "frame", "frame", "message", "command", "command"]
    assert [e["kind"] for e in s2c] == ["greeting", "command", "frame", "frame", "message", "command", "command"]
    request, response = c2s[0], s2c[0]
    assert request["hex"] == p.segments[0][1].hex()
    assert {k: request[k] for k in ("version", "transport", "protocol", "protocols", "target", "mechanism")} == {
        "version": "3.0", "transport": "zws", "protocol": "ZWS2.0/NULL", "protocols": ["ZWS2.0/NULL", "ZWS2.0"],
        "target": "/zmq", "mechanism": "NULL"}
    assert (response["status"], response["protocol"], response["as_server"]) == (101, "ZWS2.0/NULL", False)
    fields = {f["name"]: f["value"] for f in request["fields"]}
    assert fields["request-line"] == "GET /zmq HTTP/1.1" and fields["Host"] == "example:5555"
    key = fields["Sec-WebSocket-Key"]
    assert {f["name"]: f["value"] for f in response["fields"]}["Sec-WebSocket-Accept"] == accept_token(key)
    ready = c2s[1]
    assert (ready["name"], ready["transport"], ready["properties"]) == (
        "READY", "zws", {"Socket-Type": "DEALER", "Identity": "client-1"})
    assert c2s[4]["frames"] == ["", b"request 1".hex()] and s2c[4]["frames"] == ["", (b"reply " + b"r" * 200).hex()]
    assert s2c[3]["long"] and not s2c[2]["long"]  # 207 payload octets need the 16-bit length
    # The client masks: `hex` is the wire, `body` and the field values are unmasked.
    frame = c2s[3]
    wire = p.stream(C2S)[frame["offset"]:frame["offset"] + frame["length"]]
    assert frame["hex"] == wire.hex() and frame["body"] == b"request 1".hex() and frame["size"] == 9
    names = [f["name"] for f in frame["fields"]]
    assert names == ["fin-opcode", "mask-length", "masking-key", "flags", "body"]
    # `unmasked`: the same octets with the masking undone, what the fields describe (the pages draw it).
    assert frame["unmasked"] == (wire[:6] + b"\x00request 1").hex()
    assert bytes.fromhex(c2s[1]["unmasked"])[7:13] == b"\x05READY"
    assert "unmasked" not in s2c[3] and "unmasked" not in s2c[1]  # a server does not mask
    assert [e["name"] for e in s2c[5:]] + [e["name"] for e in c2s[5:]] == ["WS-PING", "WS-PONG", "WS-PONG",
                                                                           "WS-PING"]
    assert s2c[5]["data"] == b"hb".hex() and c2s[5]["data"] == b"hb".hex()
    assert not [e for e in c2s + s2c if e["kind"] == "expert"]
    json.dumps(events)


def test_every_element_s_fields_tile_its_octets():
    p = conversation()
    for direction, event in dissect(p.segments):
        if isinstance(event, (ZwsGreeting, Command, ZwsFrame)):
            pos = event.offset
            for f in sorted(event.fields, key=lambda f: f.offset):
                assert f.offset == pos, (direction, event.kind, f.name)
                pos += f.length
            assert pos == event.offset + event.length, (direction, event.kind)


def test_routing_ids_are_greetings():
    p = pair(protocols=["ZWS2.0"], identity=b"me")
    p.send("client", [b"a", b"b"])
    events = per_direction(dissect(p.segments))
    greetings = [e for e in events[C2S] if e["kind"] == "greeting"]
    assert [(g["version"], g.get("identity")) for g in greetings] == [("2.0", None), ("2.0", b"me".hex())]
    assert [e["identity"] for e in events[S2C] if e["kind"] == "greeting" and "identity" in e] == [""]
    assert [e["frames"] for e in events[C2S] if e["kind"] == "message"] == [[b"a".hex(), b"b".hex()]]


def assert_cut_invariant(segments: list[tuple[str, bytes]]) -> dict:
    """Each direction's events are the same whether the writes come whole, one octet at a time, or each
    direction is split at every offset (the other direction's bytes in between)."""
    whole = per_direction(dissect(segments))
    one_byte = [(d, data[i:i + 1]) for d, data in segments for i in range(len(data))]
    assert per_direction(dissect(one_byte)) == whole, "one byte at a time"
    streams = {d: b"".join(data for dd, data in segments if dd == d) for d in (C2S, S2C)}
    for d, other in ((C2S, S2C), (S2C, C2S)):
        stream = streams[d]
        for i in range(1, len(stream)):
            cut = [(d, stream[:i]), (other, streams[other]), (d, stream[i:])]
            assert per_direction(dissect(cut)) == whole, f"{d} split at {i}"
    return whole


@pytest.mark.parametrize("protocols", [None, ["ZWS2.0"]])
def test_the_dissector_gives_the_same_events_however_the_bytes_are_cut(protocols):
    p = pair(identity=b"id", protocols=protocols)
    p.send("client", [b"", b"q"])
    p.send("server", [b"r" * 130])
    assert_cut_invariant(p.segments)


def test_findings_of_a_broken_conversation():
    p = pair()  # then frames the peers would never send, on the same wire
    p.segments.append((S2C, b"\x81\x02hi"))  # a text message
    p.segments.append((S2C, b"\x82\x00"))  # an empty binary message
    p.segments.append((S2C, b"\x82\x82\x00\x00\x00\x00\x00x"))  # masked by the server
    p.segments.append((S2C, b"\xf2\x02\x07y"))  # RSV bits and a reserved flag bit
    p.segments.append((S2C, b"\x8b\x00"))  # a reserved opcode
    p.segments.append((C2S, b"\x82\x03\x01ab"))  # an unmasked client frame, MORE, then the connection ends
    texts = [(e["severity"], e["text"]) for e in per_direction(dissect(p.segments))[S2C] if e["kind"] == "expert"]
    assert ("error", "a text message (opcode 0x1): ZWS messages are binary (45/ZWS)") in texts
    assert ("error", "an empty WebSocket message: a ZWS frame starts with its flag octet (45/ZWS Framing)") in texts
    assert ("warn", "a server's frame must not be masked (RFC 6455 5.1)") in texts
    assert ("warn", "reserved flag bits set: 0x04") in texts
    assert ("error", "reserved WebSocket opcode 0xb (RFC 6455 5.2)") in texts
    c2s = [(e["severity"], e["text"]) for e in per_direction(dissect(p.segments))[C2S] if e["kind"] == "expert"]
    assert ("warn", "a client's frame must be masked (RFC 6455 5.1)") in c2s
    assert ("error", "connection closed in the middle of a message") in c2s


def test_a_fragmented_message_is_one_zws_frame():
    p = pair("PUSH", "PULL", protocols=["ZWS2.0/NULL"])
    mask = b"\x01\x02\x03\x04"
    first, second = b"\x00hel", b"lo"
    p.segments.append((C2S, b"\x02\x84" + mask + unmask(first, mask)))  # binary, not FIN
    p.segments.append((C2S, b"\x89\x80" + mask))  # a ping between the fragments
    p.segments.append((C2S, b"\x80\x82" + mask + unmask(second, mask)))  # continuation, FIN
    events = per_direction(dissect(p.segments))[C2S]
    frames = [e for e in events if e["kind"] == "frame"]
    assert [(f["body"], f["length"]) for f in frames] == [(b"hello".hex(), 24)]
    assert [e["frames"] for e in events if e["kind"] == "message"] == [[b"hello".hex()]]
    assert any(e["kind"] == "command" and e["name"] == "WS-PING" for e in events)
    assert any(e["kind"] == "expert" and "fragmented" in e["text"] for e in events)


def test_an_upgrade_never_answered_and_a_capture_gap():
    p = pair()
    request = p.segments[0]
    alone = per_direction(dissect([request]))[C2S]
    assert alone[0]["kind"] == "greeting" and alone[0]["protocol"] is None and alone[0]["version"] == "3.0"
    assert alone[-1]["text"] == "the server never answered the HTTP upgrade"
    from zmtplab.engine import ZwsDissector

    d = ZwsDissector()
    items = []
    for direction, data in p.segments:
        items += d.receive_data(direction, data)
    items += d.gap(C2S, 10)
    items += d.receive_data(C2S, b"\x82\x80\x00\x00\x00\x00")
    items += d.close()
    c2s = per_direction(items)[C2S]
    assert [e["kind"] for e in c2s[-3:]] == ["gap", "expert", "expert"]
    assert c2s[-1]["text"] == "6 bytes could not be decoded: no certain frame boundary found"


# ---------------------------------------------------------------- hostile input, fuzzed

frames_st = st.lists(st.binary(max_size=300), min_size=1, max_size=3)


@FUZZ
@given(messages=st.lists(st.tuples(st.booleans(), frames_st), max_size=4), routing=st.booleans())
def test_random_conversations_are_read_as_sent_in_any_cut(messages, routing):
    p = pair(protocols=["ZWS2.0"] if routing else None)
    for from_client, frames in messages:
        p.send("client" if from_client else "server", frames)
    sent = {C2S: [[f.hex() for f in fr] for c, fr in messages if c], S2C: [[f.hex() for f in fr] for c, fr in
                                                                          messages if not c]}
    whole = per_direction(dissect(p.segments))
    for d in (C2S, S2C):
        assert [e["frames"] for e in whole[d] if e["kind"] == "message"] == sent[d]
        assert not [e for e in whole[d] if e["kind"] == "expert"]
    one_byte = [(d, data[i:i + 1]) for d, data in p.segments for i in range(len(data))]
    assert per_direction(dissect(one_byte)) == whole


def _valid_streams() -> list[tuple[str, bytes]]:
    p = conversation()
    return [(C2S, p.stream(C2S)), (S2C, p.stream(S2C))]


VALID = _valid_streams()


@st.composite
def hostile(draw):
    """Both directions: a valid stream with octets changed, inserted, deleted or cut, or random bytes."""
    out = []
    for direction, stream in VALID:
        if draw(st.booleans()):
            out.append((direction, draw(st.binary(max_size=400))))
            continue
        data = bytearray(stream)
        for _ in range(draw(st.integers(1, 6))):
            op = draw(st.sampled_from(["set", "insert", "delete", "truncate"]))
            pos = draw(st.integers(0, len(data) - 1)) if data else 0
            if op == "set" and data:
                data[pos] = draw(st.integers(0, 255))
            elif op == "insert":
                data[pos:pos] = draw(st.binary(min_size=1, max_size=10))
            elif op == "delete" and data:
                del data[pos:pos + draw(st.integers(1, 10))]
            elif op == "truncate":
                del data[pos:]
        out.append((direction, bytes(data)))
    return out


@FUZZ
@given(streams=hostile(), cut=st.integers(1, 64))
def test_the_dissector_never_raises_and_its_events_stay_in_their_stream(streams, cut):
    segments = [(d, data[i:i + cut]) for d, data in streams for i in range(0, len(data), cut)]
    items = dissect(segments)
    length = {d: len(data) for d, data in streams}
    for direction, event in items:
        assert 0 <= event.offset <= length[direction]
        assert event.offset + event.length <= length[direction]
        json.dumps(event.to_dict())
    assert per_direction(dissect([(d, data) for d, data in streams])) == per_direction(items)


@FUZZ
@given(data=st.binary(max_size=600), client=st.booleans())
def test_a_peer_raises_only_remote_protocol_errors_on_garbage(data, client):
    conn = ZwsConnection("DEALER", client=client)
    conn.start()
    head = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Protocol: ZWS2.0/NULL\r\nSec-WebSocket-Accept: x\r\n\r\n")
    for chunk in ((head if client else b"") + data, b""):
        try:
            conn.receive_data(chunk)
        except RemoteProtocolError:
            break
    assert conn.state in ("greeting", "handshake", "ready", "closed")


def test_a_command_the_mechanism_does_not_expect_ends_the_handshake():
    client = ZwsConnection("PUSH", client=True)
    server = ZwsConnection("PULL", client=False)
    server.receive_data(client.start())
    client.receive_data(server.data_to_send())  # the 101 and READY: the client answers READY, never delivered
    client.data_to_send()
    server.receive_data(client.ws.send(BytesMessage(data=b"\x02" + command_body("HELLO", b"\x01u\x01p"))))
    assert server.state == "closed"
    assert [e.reason for e in server.events() if isinstance(e, ConnectionClosed)] == [
        "unexpected HELLO command during the NULL handshake"]
    out = server.data_to_send()
    assert opcodes(out) == [0x2, 0x8] and b"ERROR" in out  # ERROR, then the close frame


# ---------------------------------------------------------------- languages


def test_every_text_of_zws_has_its_chinese():
    """Field notes, findings and close reasons of ZWS are catalog texts (i18n.translate renders them)."""
    from zmtplab import i18n

    texts: set[str] = set()
    broken = pair()
    broken.segments += [(S2C, b"\x81\x02hi"), (S2C, b"\x82\x00"), (S2C, b"\x82\x82\x00\x00\x00\x00\x00x"),
                        (S2C, b"\xf2\x02\x07y"), (S2C, b"\x8b\x00"), (S2C, b"\x88\x05\x03\xe8bye"),
                        (S2C, b"\x82\x02\x00z"), (C2S, b"\x82\x03\x01ab")]
    refused = pair(client_mech=PlainClient("u", "p"))
    routing = pair(protocols=["ZWS2.0"])
    routing.segments.append((C2S, b"\x82\x02\x02x"))
    long_length = b"\x82\x7e\x00\x05\x00abcd"
    for segments in (conversation().segments, broken.segments, refused.segments, routing.segments,
                     [*pair().segments, (S2C, long_length)], pair().segments[:1], [(C2S, b"GET / HTTP/1.1\r\n\r\n")],
                     [(C2S, b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            b"Sec-WebSocket-Protocol: ZWS2.0/BEARER\r\n\r\n")]):
        for _, event in dissect(segments):
            d = event.to_dict()
            texts.update(t for t in [d.get("text"), *(f.get("note") for f in d.get("fields", []))] if t)
    for p in (refused, pair("PUSH", "PUSH")):
        texts.update(e.reason for e in p.events["client"] + p.events["server"] if isinstance(e, ConnectionClosed))
    texts.discard("peer closed the connection")
    assert len(texts) > 40
    unknown = sorted(t for t in texts if i18n.recognise(t) is None)
    assert unknown == []
    assert all(i18n.translate(t, "zh-CN") != t for t in texts)


def _head(lines: list[str]) -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


REQUEST_LINES = ["Host: h", "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                 "Sec-WebSocket-Version: 13"]
ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="  # RFC 6455's worked example for that key


def test_zws1_0_names_the_client_s_socket_type_in_its_query():
    mask = b"\x00\x00\x00\x00"
    segments = [(C2S, _head(["GET /?type=dealer HTTP/1.1", *REQUEST_LINES, "Sec-WebSocket-Protocol: ZWS1.0"])),
                (S2C, _head(["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
                             f"Sec-WebSocket-Accept: {ACCEPT}", "Sec-WebSocket-Protocol: ZWS1.0"])),
                (C2S, b"\x82\x82" + mask + b"\x00a"), (S2C, b"\x82\x01\x00"), (C2S, b"\x82\x83" + mask + b"\x00hi")]
    events = per_direction(dissect(segments))
    request = events[C2S][0]
    assert (request["protocol"], request["version"], request["socket_type"]) == ("ZWS1.0", "2.0", "DEALER")
    assert [e.get("identity") for e in events[C2S] if e["kind"] == "greeting"] == [None, b"a".hex()]
    assert [e["frames"] for e in events[C2S] if e["kind"] == "message"] == [[b"hi".hex()]]
    assert not [e for e in events[C2S] + events[S2C] if e["kind"] == "expert"]


def test_a_response_without_a_subprotocol_is_not_zws():
    segments = [(C2S, _head(["GET /zmq HTTP/1.1", *REQUEST_LINES, "Sec-WebSocket-Protocol: ZWS2.0/NULL"])),
                (S2C, _head(["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
                             "Sec-WebSocket-Accept: wrong"]))]
    events = per_direction(dissect(segments))
    assert [e["protocol"] for e in events[C2S] + events[S2C] if e["kind"] == "greeting"] == [None, None]
    texts = [e["text"] for e in events[S2C] if e["kind"] == "expert"]
    assert texts[:2] == [
        "Sec-WebSocket-Accept does not answer the client's Sec-WebSocket-Key (RFC 6455 4.2.2)",
        "the server chose no subprotocol: without one the connection is not ZWS (45/ZWS: the server must choose "
        "one of the client's)"]


# ---- a budget (a live capture's): no frame or message held past it (issue 31.2)

def budgeted(segments: list[tuple[str, bytes]], max_held: int) -> tuple[ZwsDissector, list[dict]]:
    dissector = ZwsDissector(max_held=max_held)
    out = [e.to_dict() for d, data in segments for _, e in dissector.receive_data(d, data)]
    return dissector, out


def masked_frame(payload: bytes, *, fin: bool = True, opcode: int = 2, mask: bytes = b"\x01\x02\x03\x04") -> bytes:
    """A client's frame (masked) as written on the wire."""
    size = len(payload)
    length = (bytes([0x80 | size]) if size < 126 else bytes([0x80 | 126]) + size.to_bytes(2, "big") if size < 65536
              else bytes([0x80 | 127]) + size.to_bytes(8, "big"))
    return bytes([(0x80 if fin else 0) | opcode]) + length + mask + unmask(payload, mask)


def test_a_2_62_octet_websocket_frame_is_reported_at_its_header_and_never_held():
    p = pair("PUSH", "PULL", protocols=["ZWS2.0/NULL"])
    dissector, _ = budgeted(p.segments, 1 << 20)
    header = b"\x82\xff" + (1 << 62).to_bytes(8, "big") + b"\x01\x02\x03\x04"
    first = [e.to_dict() for _, e in dissector.receive_data(C2S, header + b"x" * 100)]
    assert [(e["kind"], e["rule"]) for e in first] == [("expert", "budget")] and str(1 << 62) in first[0]["text"]
    side = dissector.sides[C2S]
    chunk = b"y" * 65536
    tracemalloc.start()
    try:
        for _ in range(1024):  # 64 MiB of its payload
            assert dissector.receive_data(C2S, chunk) == []
            assert side.buffer.available == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert side.received == len(p.stream(C2S)) + len(header) + 100 + (64 << 20)


def test_over_budget_frames_and_messages_are_skipped_and_reading_goes_on():
    p = pair("PUSH", "PULL", protocols=["ZWS2.0/NULL"])
    big = masked_frame(b"\x00" + b"b" * (2 << 20))  # one frame over the budget
    fragments = [masked_frame((b"\x00" if i == 0 else b"") + b"f" * 60_000, fin=i == 39, opcode=0 if i else 2)
                 for i in range(40)]  # a message of 40 fragments, each within it
    after = masked_frame(b"\x00after")
    segments = [*p.segments, (C2S, big), *((C2S, f) for f in fragments), (C2S, after)]
    for cut in (None, 7):  # whole writes, and 7 octets at a time
        written = segments if cut is None else [(d, data[i:i + cut]) for d, data in segments
                                                for i in range(0, len(data), cut)]
        dissector, events = budgeted(written, 1 << 20)
        c2s = [e for e in events if e["offset"] >= len(p.stream(C2S)) or e["kind"] == "expert"]
        notes = [e for e in c2s if e["kind"] == "expert" and e["rule"] == "budget"]
        assert [n["text"].split(" of ")[0] for n in notes] == ["WebSocket frame", "a WebSocket message"]
        assert [e["frames"] for e in c2s if e["kind"] == "message"] == [[b"after".hex()]]
        assert dissector.sides[C2S].buffer.available < 1 << 20
        assert all(i18n.translate(n["text"], "zh-CN") != n["text"] for n in notes)
    # Without a budget the same stream is read whole.
    whole = per_direction(dissect(segments))[C2S]
    assert [len(e["frames"][0]) // 2 for e in whole if e["kind"] == "message"][-3:] == [2 << 20, 40 * 60_000, 5]


def test_a_multipart_message_that_outgrows_the_budget_stops_being_held():
    p = pair("PUSH", "PULL", protocols=["ZWS2.0/NULL"])
    parts = [masked_frame(b"\x01" + b"m" * 1000) for _ in range(2000)]  # MORE, MORE, ... 2 MB in all
    _, events = budgeted([*p.segments, *((C2S, part) for part in parts), (C2S, masked_frame(b"\x00end"))], 1 << 20)
    notes = [e for e in events if e["kind"] == "expert" and e["rule"] == "budget"]
    assert len(notes) == 1 and notes[0]["text"].startswith("a message of more than 1048576 octets held in")
    assert sum(e["kind"] == "frame" for e in events) >= 2001  # (its frames are still reported)
    assert i18n.translate(notes[0]["text"], "zh-CN") != notes[0]["text"]
