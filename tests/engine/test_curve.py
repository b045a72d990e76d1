"""CURVE (25/ZMTP-CURVE, 26/CurveZMQ): Z85 and keys, in-memory handshakes and traffic, attacks, the dissector,
and interop with real libzmq 4.3.5 (pyzmq) over loopback."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable

import pytest
import zmq
from nacl.bindings import crypto_box
from pair import connection_pair
from zmq.utils import z85 as pyzmq_z85

from zmtplab.engine import (
    Command,
    Connection,
    ConnectionClosed,
    CurveClient,
    CurveServer,
    RemoteProtocolError,
    generate_keypair,
    z85_decode,
    z85_encode,
)
from zmtplab.engine.curve import (
    MESSAGE_FLAG_COMMAND,
    MESSAGE_FLAG_MORE,
    CurveDecryptor,
    keylog_line,
    parse_keylog,
)
from zmtplab.engine.greeting import encode_greeting

SERVER_KEYS = generate_keypair()
CLIENT_KEYS = generate_keypair()


def curve_pair(client_type: str, server_type: str, *, client: CurveClient | None = None,
               server: CurveServer | None = None, one_byte: bool = False, client_identity: bytes = b""):
    spub, ssec = SERVER_KEYS
    client = client or CurveClient(spub, *CLIENT_KEYS)
    server = server or CurveServer(spub, ssec)
    return connection_pair(Connection(client_type, mechanism=client, identity=client_identity),
                           Connection(server_type, mechanism=server), one_byte=one_byte)


def kinds(events) -> list[str]:
    return [e.kind for e in events]


def received(events) -> list[tuple[bytes, ...]]:
    return [e.frames for e in events if e.kind == "received"]


def frame_body(wire: bytes) -> tuple[int, bytes]:
    """(flags, body) of the single frame in `wire`."""
    flags = wire[0]
    if flags & 0x02:
        size = struct.unpack(">Q", wire[1:9])[0]
        assert len(wire) == 9 + size
        return flags, wire[9:]
    assert len(wire) == 2 + wire[1]
    return flags, wire[2:]


def as_command(wire: bytes) -> Command:
    return Command(0, len(wire), name="MESSAGE", raw=wire)


# ---------------------------------------------------------------- Z85 and keys


def test_z85_rfc32_vector_and_pyzmq_agree():
    raw = bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])
    assert z85_encode(raw) == b"HelloWorld"
    assert z85_decode("HelloWorld") == raw
    for data in (b"", bytes(4), b"\xff" * 4, bytes(range(32)), *SERVER_KEYS):
        assert z85_encode(data) == pyzmq_z85.encode(data)
        assert z85_decode(z85_encode(data)) == data
    with pytest.raises(ValueError):
        z85_encode(b"abc")
    with pytest.raises(ValueError):
        z85_decode(b"abcd")
    with pytest.raises(ValueError):
        z85_decode(b"abc d")
    with pytest.raises(ValueError):
        z85_decode(b"#####")  # above 2^32 - 1


def test_generate_keypair_matches_libzmq_derivation():
    public, secret = generate_keypair()
    assert len(public) == len(secret) == 32
    assert zmq.curve_public(z85_encode(secret)) == z85_encode(public)


def test_keys_in_z85_and_checked():
    spub, ssec = SERVER_KEYS
    server = CurveServer(z85_encode(spub).decode(), z85_encode(ssec))
    assert server.public == spub
    client = CurveClient(z85_encode(spub), secret=CLIENT_KEYS[1])
    assert client.public == CLIENT_KEYS[0]
    with pytest.raises(ValueError):
        CurveServer(CLIENT_KEYS[0], ssec)  # public key of another secret
    with pytest.raises(ValueError):
        CurveClient(spub, public=CLIENT_KEYS[0])  # public without secret
    with pytest.raises(ValueError):
        CurveClient(spub[:31])


# ---------------------------------------------------------------- in-memory handshakes and traffic


@pytest.mark.parametrize("one_byte", [False, True])
def test_dealer_router_handshake_and_traffic_both_ways(one_byte):
    pair = curve_pair("DEALER", "ROUTER", one_byte=one_byte, client_identity=b"client-1")
    assert pair.errors == {"client": None, "server": None}
    (c_done,) = pair.take("client")
    (s_done,) = pair.take("server")
    assert c_done.kind == s_done.kind == "handshake"
    assert c_done.mechanism == s_done.mechanism == "CURVE"
    assert c_done.peer_socket_type == "ROUTER" and s_done.peer_socket_type == "DEALER"
    assert s_done.peer_identity == b"client-1"
    assert s_done.user_id == z85_encode(CLIENT_KEYS[0]).decode()
    assert pair.server.mechanism.client_public == CLIENT_KEYS[0]

    pair.send("client", [b"", b"request", b"x" * 300])
    assert received(pair.take("server")) == [(b"", b"request", b"x" * 300)]
    pair.send("server", [b"client-1", b"", b"reply"])
    pair.send("server", [b"client-1", b"", b"second"])
    assert received(pair.take("client")) == [(b"client-1", b"", b"reply"), (b"client-1", b"", b"second")]
    assert pair.errors == {"client": None, "server": None}


def test_push_pull_both_roles():
    pair = curve_pair("PUSH", "PULL")
    assert kinds(pair.take("server")) == ["handshake"]
    pair.send("client", [b"one", b"two", b"three"])
    pair.send("client", [b""])
    assert received(pair.take("server")) == [(b"one", b"two", b"three"), (b"",)]

    pair = curve_pair("PULL", "PUSH")
    assert kinds(pair.take("client")) == ["handshake"]
    pair.send("server", [b"from", b"server"])
    assert received(pair.take("client")) == [(b"from", b"server")]


def test_wire_layout_and_short_nonces_follow_libzmq():
    pair = curve_pair("DEALER", "ROUTER")
    cmds = pair.wire_kind("command")
    by_name = {c.name: c for c in cmds}
    assert [c.name for c in pair.wire_kind("command", "c2s")] == ["HELLO", "INITIATE"]
    assert [c.name for c in pair.wire_kind("command", "s2c")] == ["WELCOME", "READY"]
    assert len(by_name["HELLO"].raw) == 2 + 200
    assert len(by_name["WELCOME"].raw) == 2 + 168
    assert by_name["HELLO"].details["nonce"] == "0000000000000001"
    assert by_name["INITIATE"].details["nonce"] == "0000000000000002"
    assert by_name["READY"].details["nonce"] == "0000000000000001"
    # MESSAGE travels in a data frame (COMMAND and MORE clear), one per application frame, as libzmq sends it.
    wire = pair.client.send([b"a", b"b"])
    first, second = wire[:2 + wire[1]], wire[2 + wire[1]:]
    assert frame_body(first)[0] == 0 and frame_body(second)[0] == 0
    assert frame_body(first)[1][:16] == b"\x07MESSAGE" + struct.pack(">Q", 3)
    assert frame_body(second)[1][:16] == b"\x07MESSAGE" + struct.pack(">Q", 4)
    server_mech = pair.server.mechanism
    assert server_mech.decode_message_command(as_command(first)) == (MESSAGE_FLAG_MORE, b"a")
    assert server_mech.decode_message_command(as_command(second)) == (0, b"b")
    reply = pair.server.send([b"r"])
    assert frame_body(reply)[1][:16] == b"\x07MESSAGE" + struct.pack(">Q", 2)


def test_commands_travel_inside_message_boxes():
    pair = curve_pair("DEALER", "ROUTER")
    pair.take("client"), pair.take("server")
    ping = pair.client.ping(25, b"ctx")
    flags, body = frame_body(ping)
    assert flags == 0 and body.startswith(b"\x07MESSAGE")
    # Open it with a twin of the server's mechanism state: bit 1 of the payload flags marks a command.
    assert pair.server.mechanism.decode_message_command(as_command(ping)) == (MESSAGE_FLAG_COMMAND,
                                                                              b"\x04PING\x00\x19ctx")
    pair = curve_pair("DEALER", "ROUTER")
    pair.take("client"), pair.take("server")
    pair.write("client", pair.client.ping(25, b"ctx"))
    (ping_event,) = pair.take("server")
    assert (ping_event.kind, ping_event.ttl, ping_event.context) == ("ping", 25, b"ctx")
    (pong_event,) = pair.take("client")
    assert (pong_event.kind, pong_event.context) == ("pong", b"ctx")
    assert not {"PING", "PONG"} & set(pair.commands())  # never in clear text: inside MESSAGE boxes


def test_subscribe_and_cancel_inside_boxes():
    pair = curve_pair("SUB", "PUB")
    pair.take("client"), pair.take("server")
    pair.write("client", pair.client.subscribe(b"weather"))
    pair.write("client", pair.client.cancel(b"weather"))
    events = pair.take("server")
    assert [(e.kind, e.topic, e.subscribe) for e in events] == [("subscription", b"weather", True),
                                                                ("subscription", b"weather", False)]
    pair.send("server", [b"weather", b"sunny"])
    assert received(pair.take("client")) == [(b"weather", b"sunny")]


# ---------------------------------------------------------------- failures and attacks


def closed(events) -> ConnectionClosed:
    (event,) = [e for e in events if e.kind == "closed"]
    return event


def test_wrong_server_key_fails_the_handshake():
    other_public, _ = generate_keypair()
    pair = curve_pair("DEALER", "ROUTER", client=CurveClient(other_public))
    server_events, client_events = pair.take("server"), pair.take("client")
    assert "handshake" not in kinds(server_events) + kinds(client_events)
    server_closed = closed(server_events)
    assert server_closed.error and "HELLO" in server_closed.reason and "server key" in server_closed.reason
    client_closed = closed(client_events)  # the server closed silently, as libzmq does
    assert client_closed.error
    assert pair.commands() == ["HELLO"]


def test_server_impersonation_is_detected_by_the_client():
    # An impostor cannot open HELLO; one that answers anyway cannot make a WELCOME box from the real key.
    impostor_public, impostor_secret = generate_keypair()
    conn = Connection("DEALER", mechanism=CurveClient(SERVER_KEYS[0]))
    conn.start()
    conn.receive_data(encode_greeting(mechanism="CURVE", as_server=True))
    hello = conn.data_to_send()[-200:]
    assert hello[:6] == b"\x05HELLO"
    box = crypto_box(impostor_public + bytes(96), b"WELCOME-" + bytes(16), hello[80:112], impostor_secret)
    welcome = b"\x07WELCOME" + bytes(16) + box
    conn.receive_data(b"\x04" + bytes((len(welcome),)) + welcome)
    event = closed(conn.events())
    assert event.error and "WELCOME" in event.reason
    assert conn.data_to_send() == b""  # 26/CurveZMQ: a client never sends ERROR


def test_refused_client_key_gets_error():
    allowed_pub, allowed_sec = generate_keypair()
    spub, ssec = SERVER_KEYS

    def authenticate(key: bytes) -> str | None:
        return "alice" if key == allowed_pub else None

    pair = curve_pair("DEALER", "ROUTER", server=CurveServer(spub, ssec, authenticate))
    assert pair.commands() == ["HELLO", "WELCOME", "INITIATE", "ERROR"]
    (error,) = [c for c in pair.wire_kind("command") if c.name == "ERROR"]
    assert error.details["reason"] == "400"  # libzmq's ZAP refusal: the status code alone
    client_closed = closed(pair.take("client"))
    assert client_closed.error and "refused" in client_closed.reason and "400" in client_closed.reason
    assert "handshake" not in kinds(pair.take("server"))

    pair = curve_pair("DEALER", "ROUTER", client=CurveClient(spub, allowed_pub, allowed_sec),
                      server=CurveServer(spub, ssec, authenticate))
    (done,) = pair.take("server")
    assert done.kind == "handshake" and done.user_id == "alice"


def test_tampered_message_box_is_rejected():
    pair = curve_pair("DEALER", "ROUTER")
    wire = bytearray(pair.client.send([b"secret payload"]))
    wire[-5] ^= 0x01
    pair.write("client", bytes(wire))
    error = pair.errors["server"]
    assert isinstance(error, RemoteProtocolError) and error.rule == "message-box"
    assert received(pair.take("server")) == []
    assert pair.server.state == "closed"


def greeted_pair() -> tuple[Connection, Connection]:
    """A client and a server that exchanged whole greetings; the client's HELLO waits in its output."""
    spub, ssec = SERVER_KEYS
    client = Connection("DEALER", mechanism=CurveClient(spub), strategy="full")
    server = Connection("ROUTER", mechanism=CurveServer(spub, ssec), strategy="full")
    client_greeting, server_greeting = client.start(), server.start()
    server.receive_data(client_greeting)
    client.receive_data(server_greeting)
    return client, server


@pytest.mark.parametrize("index", [2 + 120 + 5, 2 + 80 + 3])  # in the signature box; in C'
def test_tampered_hello_closes_the_server(index):
    client, server = greeted_pair()
    hello = bytearray(client.data_to_send())
    assert hello[-200:-194] == b"\x05HELLO"
    hello[len(hello) - 202 + index] ^= 0x40
    server.receive_data(bytes(hello))
    event = closed(server.events())
    assert event.error and "HELLO" in event.reason
    assert server.data_to_send() == b""  # no WELCOME, no ERROR


def test_tampered_initiate_is_rejected():
    client, server = greeted_pair()
    server.receive_data(client.data_to_send())  # HELLO
    client.receive_data(server.data_to_send())  # WELCOME
    initiate = bytearray(client.data_to_send())
    initiate[-1] ^= 0x80
    server.receive_data(bytes(initiate))
    event = closed(server.events())
    assert event.error and "INITIATE" in event.reason


def test_replayed_message_is_rejected():
    pair = curve_pair("PUSH", "PULL")
    pair.take("server")
    wire = pair.client.send([b"pay me once"])
    pair.write("client", wire)
    assert received(pair.take("server")) == [(b"pay me once",)]
    pair.write("client", wire)
    error = pair.errors["server"]
    assert isinstance(error, RemoteProtocolError) and error.rule == "message-nonce"
    assert "replayed" in str(error)
    assert received(pair.take("server")) == []


def test_reordered_messages_are_rejected_but_gaps_are_allowed():
    pair = curve_pair("PUSH", "PULL")
    pair.take("server")
    first = pair.client.send([b"first"])
    second = pair.client.send([b"second"])
    pair.write("client", second)  # nonce 4 after INITIATE's 2: a gap, accepted (libzmq only wants "greater")
    assert received(pair.take("server")) == [(b"second",)]
    pair.write("client", first)
    assert pair.errors["server"].rule == "message-nonce"


def test_message_before_handshake_and_garbage_traffic():
    pair = curve_pair("PUSH", "PULL")
    pair.write("client", b"\x00\x05hello")  # a clear-text frame once CURVE is up
    assert isinstance(pair.errors["server"], RemoteProtocolError)
    assert pair.errors["server"].rule == "message"


# ---------------------------------------------------------------- the dissector


def test_dissector_shows_the_handshake_public_parts():
    pair = curve_pair("DEALER", "ROUTER", client_identity=b"c1")
    pair.send("client", [b"", b"hello"])
    pair.send("server", [b"c1", b"", b"world"])
    pair.close()
    greetings = pair.wire_kind("greeting")
    assert [(g.mechanism, g.as_server) for g in greetings] == [("CURVE", False), ("CURVE", True)]
    commands = {c.name: c.to_dict() for c in pair.wire_kind("command") if c.name != "MESSAGE"}
    assert list(commands) == ["HELLO", "WELCOME", "INITIATE", "READY"]
    hello = commands["HELLO"]
    assert hello["version"] == "0100" and hello["nonce"] == "0000000000000001"
    assert len(bytes.fromhex(hello["client_short_key"])) == 32
    names = [f["name"] for f in hello["fields"]]
    assert {"version", "padding", "client-short-key", "nonce", "signature-box"} <= set(names)
    welcome = commands["WELCOME"]
    assert len(bytes.fromhex(welcome["nonce"])) == 16
    assert len(bytes.fromhex(welcome["welcome_box"])) == 144
    initiate = commands["INITIATE"]
    assert len(bytes.fromhex(initiate["cookie"])) == 96 and initiate["nonce"] == "0000000000000002"
    assert initiate["box_size"] >= 144
    ready = commands["READY"]
    assert ready["nonce"] == "0000000000000001" and ready["box_size"] >= 16
    # The handshake decodes without decoding errors; the encrypted traffic is still visible as elements.
    assert [e.text for e in pair.experts("error")] == []
    assert len(pair.wire_kind("frame")) + len(pair.wire_kind("command")) >= 4 + 3


def test_dissector_shows_message_commands():
    pair = curve_pair("DEALER", "ROUTER", client_identity=b"c1")
    pair.send("client", [b"", b"hello"])
    pair.send("server", [b"c1", b"", b"world"])
    pair.close()
    messages = [c.to_dict() for c in pair.wire_kind("command") if c.name == "MESSAGE"]
    assert len(messages) == 5
    assert [m["nonce"] for m in messages[:2]] == ["0000000000000003", "0000000000000004"]
    assert all(m["box_size"] >= 17 for m in messages)
    assert [e.text for e in pair.experts() if e.severity != "note"] == []


# ---------------------------------------------------------------- interop with libzmq (pyzmq)

TIMEOUT = 10.0
MIB = bytes(range(256)) * 4096


class Driver:
    """Drives one of our `Connection`s over a blocking TCP socket, with timeouts everywhere."""

    def __init__(self, sock: socket.socket, conn: Connection) -> None:
        self.sock = sock
        self.conn = conn
        self.events: list = []
        sock.settimeout(0.02)
        sock.sendall(conn.start())

    def flush(self) -> None:
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def pump(self, until: Callable[[], bool], timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; events so far: {self.events}")
            self.flush()
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                continue
            self.conn.receive_data(data)
            self.events.extend(self.conn.events())
            self.flush()
            if not data:
                break

    def wait_kind(self, kind: str, count: int = 1):
        self.pump(lambda: sum(e.kind == kind for e in self.events) >= count)
        return [e for e in self.events if e.kind == kind]

    def messages(self) -> list[tuple[bytes, ...]]:
        return received(self.events)


def zrecv(zsock, driver: Driver | None = None) -> list[bytes]:
    """Receives from a pyzmq socket within the timeout, pumping our side meanwhile."""
    if driver is None:
        assert zsock.poll(int(TIMEOUT * 1000)), "pyzmq socket received nothing"
    else:
        driver.pump(lambda: bool(zsock.poll(0)))
    return zsock.recv_multipart()


@pytest.fixture
def zctx():
    ctx = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


def zsocket(ctx, kind: int):
    sock = ctx.socket(kind)
    sock.linger = 0
    sock.rcvtimeo = sock.sndtimeo = int(TIMEOUT * 1000)
    return sock


def listener() -> socket.socket:
    lst = socket.create_server(("127.0.0.1", 0))
    lst.settimeout(TIMEOUT)
    return lst


@pytest.mark.interop
def test_our_client_against_libzmq_router(zctx):
    spub, ssec = SERVER_KEYS
    router = zsocket(zctx, zmq.ROUTER)
    router.curve_server = True
    router.curve_secretkey = z85_encode(ssec)
    router.curve_publickey = z85_encode(spub)
    router.heartbeat_ivl = 100  # libzmq PINGs us inside MESSAGE boxes; we answer PONG the same way
    # (when the test next reads: libzmq's default timeout, one interval, closed the connection when a loaded
    # machine kept the test from reading for 100 ms)
    router.heartbeat_timeout = int(TIMEOUT * 1000)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        driver = Driver(sock, Connection("DEALER", mechanism=CurveClient(spub), identity=b"our-dealer"))
        (done,) = driver.wait_kind("handshake")
        assert done.mechanism == "CURVE" and done.peer_socket_type == "ROUTER"

        driver.write(driver.conn.send([b"hello", b"world"]))
        assert zrecv(router, driver) == [b"our-dealer", b"hello", b"world"]
        router.send_multipart([b"our-dealer", b"reply", b"two"])
        driver.pump(lambda: len(driver.messages()) >= 1)
        assert driver.messages() == [(b"reply", b"two")]

        driver.write(driver.conn.send([b"big", MIB]))
        assert zrecv(router, driver) == [b"our-dealer", b"big", MIB]
        router.send_multipart([b"our-dealer", MIB])
        driver.pump(lambda: len(driver.messages()) >= 2)
        assert driver.messages()[1] == (MIB,)

        driver.wait_kind("ping")  # a libzmq heartbeat, opened from its MESSAGE box
        driver.write(driver.conn.ping(30, b"ours"))
        (pong,) = driver.wait_kind("pong")
        assert pong.context == b"ours"  # libzmq opened our PING (flags bit 1) and answered in a box
        assert driver.conn.state == "ready"


@pytest.mark.interop
def test_our_client_refused_by_libzmq_zap(zctx, tmp_path):
    from zmq.auth.thread import ThreadAuthenticator

    spub, ssec = SERVER_KEYS
    auth = ThreadAuthenticator(zctx)
    auth.start()
    try:
        auth.configure_curve(domain="*", location=str(tmp_path))  # no certificates: every client is refused
        router = zsocket(zctx, zmq.ROUTER)
        router.curve_server = True
        router.curve_secretkey = z85_encode(ssec)
        port = router.bind_to_random_port("tcp://127.0.0.1")
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
            driver = Driver(sock, Connection("DEALER", mechanism=CurveClient(spub)))
            (event,) = driver.wait_kind("closed")
            assert event.error and "ZAP status 400" in event.reason
    finally:
        auth.stop()


@pytest.mark.interop
def test_libzmq_dealer_against_our_router(zctx):
    spub, ssec = SERVER_KEYS
    cpub, csec = zmq.curve_keypair()
    with listener() as lst:
        dealer = zsocket(zctx, zmq.DEALER)
        dealer.curve_serverkey = z85_encode(spub)
        dealer.curve_publickey, dealer.curve_secretkey = cpub, csec
        dealer.routing_id = b"zmq-dealer"
        dealer.connect(f"tcp://127.0.0.1:{lst.getsockname()[1]}")
        sock, _ = lst.accept()
        with sock:
            driver = Driver(sock, Connection("ROUTER", mechanism=CurveServer(spub, ssec)))
            (done,) = driver.wait_kind("handshake")
            assert done.peer_socket_type == "DEALER" and done.peer_identity == b"zmq-dealer"
            assert done.user_id == cpub.decode()  # the default authenticator names the client by its Z85 key
            dealer.send_multipart([b"", b"request"])
            driver.pump(lambda: len(driver.messages()) >= 1)
            assert driver.messages() == [(b"", b"request")]
            driver.write(driver.conn.send([b"", b"reply", b"more"]))
            assert zrecv(dealer, driver) == [b"", b"reply", b"more"]
            driver.write(driver.conn.send([MIB]))
            assert zrecv(dealer, driver) == [MIB]
            dealer.send_multipart([b"", MIB])
            driver.pump(lambda: len(driver.messages()) >= 2)
            assert driver.messages()[1] == (b"", MIB)


@pytest.mark.interop
def test_libzmq_push_against_our_pull(zctx):
    spub, ssec = SERVER_KEYS
    with listener() as lst:
        push = zsocket(zctx, zmq.PUSH)
        push.curve_serverkey = z85_encode(spub)
        push.curve_publickey, push.curve_secretkey = zmq.curve_keypair()
        push.connect(f"tcp://127.0.0.1:{lst.getsockname()[1]}")
        sock, _ = lst.accept()
        with sock:
            driver = Driver(sock, Connection("PULL", mechanism=CurveServer(spub, ssec)))
            driver.wait_kind("handshake")
            push.send_multipart([b"a", b"b", b"c"])
            push.send(MIB)
            driver.pump(lambda: len(driver.messages()) >= 2)
            assert driver.messages() == [(b"a", b"b", b"c"), (MIB,)]


@pytest.mark.interop
def test_libzmq_sub_against_our_pub(zctx):
    spub, ssec = SERVER_KEYS
    with listener() as lst:
        sub = zsocket(zctx, zmq.SUB)
        sub.curve_serverkey = z85_encode(spub)
        sub.curve_publickey, sub.curve_secretkey = zmq.curve_keypair()
        sub.setsockopt(zmq.SUBSCRIBE, b"weather")
        sub.connect(f"tcp://127.0.0.1:{lst.getsockname()[1]}")
        sock, _ = lst.accept()
        with sock:
            driver = Driver(sock, Connection("PUB", mechanism=CurveServer(spub, ssec)))
            (change,) = driver.wait_kind("subscription")  # SUBSCRIBE in a box, payload flags bit 1
            assert change.topic == b"weather" and change.subscribe
            driver.write(driver.conn.send([b"weather", b"sunny"]))
            assert zrecv(sub, driver) == [b"weather", b"sunny"]


@pytest.mark.interop
def test_libzmq_client_refused_by_our_server_sees_auth_failure(zctx):
    spub, ssec = SERVER_KEYS
    with listener() as lst:
        dealer = zsocket(zctx, zmq.DEALER)
        monitor = dealer.get_monitor_socket(zmq.EVENT_HANDSHAKE_FAILED_AUTH)
        monitor.rcvtimeo = int(TIMEOUT * 1000)
        dealer.curve_serverkey = z85_encode(spub)
        dealer.curve_publickey, dealer.curve_secretkey = zmq.curve_keypair()
        dealer.connect(f"tcp://127.0.0.1:{lst.getsockname()[1]}")
        sock, _ = lst.accept()
        with sock:
            driver = Driver(sock, Connection("ROUTER", mechanism=CurveServer(spub, ssec, lambda key: None)))
            driver.wait_kind("closed")
            driver.flush()
            from zmq.utils.monitor import recv_monitor_message

            event = recv_monitor_message(monitor)
            assert event["event"] == zmq.EVENT_HANDSHAKE_FAILED_AUTH and event["value"] == 400
        dealer.disable_monitor()
        monitor.close()


# ---------------------------------------------------------------- the key log and the decryptor


def decrypted(pair, keys):
    """The decryptor's views of the pair's wire events, in order."""
    decryptor = CurveDecryptor(keys.get)
    return [(d, view) for d, event in pair.wire_events for d, view in decryptor.feed(d, event)]


def test_session_keys_open_every_box_of_the_connection():
    client, server = CurveClient(SERVER_KEYS[0], *CLIENT_KEYS), CurveServer(*SERVER_KEYS)
    pair = curve_pair("DEALER", "ROUTER", client=client, server=server, client_identity=b"me")
    pair.send("client", [b"", b"hello"])
    pair.send("server", [b"", "世界".encode()])
    pair.write("client", pair.client.ping(20, b"ctx"))
    # Both sides name the same key: the client's short-term public key and the precomputed key of the two.
    assert client.session_keys() == server.session_keys() is not None
    line = keylog_line(*client.session_keys())
    keys = parse_keylog(f"# a comment\n{line}\n")
    views = decrypted(pair, keys)
    commands = [(d, v.name, v.properties) for d, v in views if v.kind == "command"]
    assert commands[:2] == [("c2s", "INITIATE", {"Socket-Type": "DEALER", "Identity": "me"}),
                            ("s2c", "READY", {"Socket-Type": "ROUTER", "Identity": ""})]
    # The PING and the server's PONG travel in MESSAGE boxes (flags bit 1), with their context.
    pings = [(d, v.name, v.details.get("context")) for d, v in views if v.kind == "command"][2:]
    assert pings == [("c2s", "PING", b"ctx".hex()), ("s2c", "PONG", b"ctx".hex())]
    messages = [(d, v.frames) for d, v in views if v.kind == "message"]
    assert messages == [("c2s", [b"", b"hello"]), ("s2c", [b"", "世界".encode()])]
    for _, view in views:
        as_dict = view.to_dict()
        assert as_dict["decrypted"] is True and as_dict["fields"]
    # Each decrypted view sits on its box: inside the MESSAGE command that carried it, on the wire.
    boxes = {(d, e.offset): e for d, e in pair.wire_events if e.kind == "command" and e.name == "MESSAGE"}
    for d, view in views:
        if view.kind == "frame":
            box = next(e for (bd, _), e in boxes.items() if bd == d and e.offset < view.offset < e.offset + e.length)
            assert view.offset + view.length == box.offset + box.length
    text = next(v for _, v in views if v.kind == "message" and v.frames[-1] == "世界".encode()).to_dict()
    assert text["fields"][-1]["value"] == "世界"


def test_a_wrong_key_is_said_once_and_nothing_is_made_up():
    pair = curve_pair("DEALER", "ROUTER")
    pair.send("client", [b"a"])
    pair.send("client", [b"b"])
    client_short = pair.client.mechanism.session_keys()[0]
    views = decrypted(pair, {client_short: bytes(32)})
    assert [(v.kind, v.rule) for _, v in views] == [("expert", "curve-keylog")]
    assert decrypted(pair, {}) == []  # no key for this connection: nothing to say


def test_keylog_lines_are_checked():
    assert parse_keylog("CLIENT_RANDOM 00 11\n\n") == {}
    with pytest.raises(ValueError, match="line 2"):
        parse_keylog("# ok\nCURVE_SESSION_KEY 00 11\n")
    with pytest.raises(ValueError, match="64 hex"):
        parse_keylog("CURVE_SESSION_KEY zz\n")
