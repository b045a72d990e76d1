#!/usr/bin/env python3
"""Record sample ZMTP captures from real libzmq peers (pyzmq) with dumpcap.

Usage::

    python captures/record.py [--out DIR] [--only NAME ...] [--list] [--table]

For every scenario this starts ``dumpcap -i lo -f 'tcp port P' -w DIR/NAME.pcapng``,
waits until dumpcap reports that it is capturing ("File: ..."), runs the scenario on
127.0.0.1:P, waits until dumpcap has written the end of every connection (a FIN from
each side, or a RST: on a busy machine dumpcap reads the kernel's buffer late, and
what it has not read when stopped is lost), and stops dumpcap with SIGINT.
Each scenario has its own port so that a capture only ever holds its own traffic.

Most scenarios are two pyzmq sockets talking to each other. A few put a small
hand-written peer (``RawPeer``) on one side to make libzmq show behaviour that two
libzmq peers never produce between themselves: the downgrade to ZMTP 2.0 and 1.0,
ZMTP 3.0 subscriptions (0x01-prefixed messages instead of SUBSCRIBE commands) and a
heartbeat TTL running out. The libzmq side of those captures is still real libzmq.

Exit status: 0 when every selected scenario was recorded, 1 when a scenario failed,
2 when dumpcap is missing or cannot capture on ``lo``.
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path

import zmq

CAPTURES = Path(__file__).resolve().parent
sys.path.insert(0, str(CAPTURES))  # recording.py and incidents.py, beside this script
from recording import (  # noqa: E402
    HOST,
    NO_RECONNECT_MS,
    SCENARIOS,
    CaptureError,
    Dumpcap,
    Monitor,
    RawPeer,
    RawServer,
    Scenario,
    ScenarioError,
    connect_all,
    deny_all,
    describe_failed_handshake,
    drain,
    endpoint,
    make_socket,
    markdown_table,
    plain_users,
    record,
    recv_expect,
    scenario,
    send_routed,
    wait_auth_failure,
    zap_handler,
    zmq_context,
    zmtp3_command,
    zmtp3_frame,
    zmtp3_greeting,
    zmtp3_ready,
)


@scenario("push_pull", 15601, "PUSH", "PULL", "server sends `My Message` and `second`")
def run_push_pull(port: int, out_dir: Path) -> str:
    """PUSH (bind) sends two single-frame messages to PULL (connect)."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PUSH)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.PULL)
        client.connect(endpoint(port))
        server.send(b"My Message")
        server.send(b"second")
        recv_expect(client, [b"My Message"], "PULL")
        recv_expect(client, [b"second"], "PULL")
    return ""


@scenario(
    "dealer_router", 15602, "ROUTER", "DEALER, identity `client-1`",
    "2 times: DEALER sends [``, `request i`]; ROUTER replies [``, `reply i`]",
)  # fmt: skip
def run_dealer_router(port: int, out_dir: Path) -> str:
    """DEALER with a routing id does two request/replies with a ROUTER."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.DEALER, ROUTING_ID=b"client-1")
        client.connect(endpoint(port))
        for i in (1, 2):
            client.send_multipart([b"", b"request %d" % i])
            recv_expect(server, [b"client-1", b"", b"request %d" % i], "ROUTER")
            server.send_multipart([b"client-1", b"", b"reply %d" % i])
            recv_expect(client, [b"", b"reply %d" % i], "DEALER")
    return ""


@scenario("req_rep", 15603, "REP", "REQ", "2 times: `Hello` -> `World` (with the empty delimiter frame)")
def run_req_rep(port: int, out_dir: Path) -> str:
    """REQ and REP do two round trips; libzmq adds the empty delimiter on the wire."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.REP)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.REQ)
        client.connect(endpoint(port))
        for _ in range(2):
            client.send(b"Hello")
            recv_expect(server, [b"Hello"], "REP")
            server.send(b"World")
            recv_expect(client, [b"World"], "REQ")
    return ""


@scenario(
    "router_router", 15604, "ROUTER, identity `server`", "ROUTER, identity `client`",
    "client routes `hello` to `server`; server routes `hello back` to `client`",
)  # fmt: skip
def run_router_router(port: int, out_dir: Path) -> str:
    """Two ROUTERs with identities address each other by those identities."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER, ROUTING_ID=b"server")
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.ROUTER, ROUTING_ID=b"client", ROUTER_MANDATORY=1)
        client.connect(endpoint(port))
        send_routed(client, [b"server", b"hello"])
        recv_expect(server, [b"client", b"hello"], "server ROUTER")
        server.send_multipart([b"client", b"hello back"])
        recv_expect(client, [b"server", b"hello back"], "client ROUTER")
    return ""


@scenario(
    "dealer_dealer", 15605, "DEALER", "DEALER",
    "client sends [`hello`, `dealer`]; server sends `hi`",
)  # fmt: skip
def run_dealer_dealer(port: int, out_dir: Path) -> str:
    """Two DEALERs exchange messages freely (no envelopes)."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.DEALER)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.DEALER)
        client.connect(endpoint(port))
        client.send_multipart([b"hello", b"dealer"])
        recv_expect(server, [b"hello", b"dealer"], "server DEALER")
        server.send(b"hi")
        recv_expect(client, [b"hi"], "client DEALER")
    return ""


@scenario(
    "dealer_rep", 15606, "REP", "DEALER",
    "DEALER sends [``, `question`] (delimiter by hand); REP answers `answer`",
)  # fmt: skip
def run_dealer_rep(port: int, out_dir: Path) -> str:
    """A DEALER talks to REP by adding the empty delimiter frame itself."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.REP)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.DEALER)
        client.connect(endpoint(port))
        client.send_multipart([b"", b"question"])
        recv_expect(server, [b"question"], "REP")
        server.send(b"answer")
        recv_expect(client, [b"", b"answer"], "DEALER")
    return ""


@scenario("req_router", 15607, "ROUTER", "REQ", "REQ sends `hello`; ROUTER replies `world` to it")
def run_req_router(port: int, out_dir: Path) -> str:
    """REQ talks to a ROUTER; the ROUTER sees [routing id, ``, body]."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.REQ)
        client.connect(endpoint(port))
        client.send(b"hello")
        try:
            routing_id, delimiter, body = server.recv_multipart()
        except (zmq.Again, ValueError) as exc:
            raise ScenarioError(f"ROUTER: bad or missing request: {exc}") from exc
        if (delimiter, body) != (b"", b"hello"):
            raise ScenarioError(f"ROUTER: unexpected request {[delimiter, body]!r}")
        server.send_multipart([routing_id, b"", b"world"])
        recv_expect(client, [b"world"], "REQ")
    return ""


@scenario(
    "pub_sub", 15608, "PUB", "SUB",
    "SUB subscribes `weather` and ``; PUB sends [`weather`, `sunny 21C`] and `sports 3-1`; "
    "SUB cancels `weather`",
)  # fmt: skip
def run_pub_sub(port: int, out_dir: Path) -> str:
    """SUBSCRIBE/CANCEL commands (ZMTP 3.1) around two published messages."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PUB)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.SUB)
        client.setsockopt(zmq.SUBSCRIBE, b"weather")
        client.setsockopt(zmq.SUBSCRIBE, b"")
        monitor = Monitor(client)
        client.connect(endpoint(port))
        monitor.wait_for(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        monitor.close()
        # PUB drops messages until the subscriptions have arrived and been processed;
        # there is no event for that on PUB, so give the loopback a moment.
        time.sleep(0.2)
        server.send_multipart([b"weather", b"sunny 21C"])
        server.send(b"sports 3-1")
        recv_expect(client, [b"weather", b"sunny 21C"], "SUB")
        recv_expect(client, [b"sports 3-1"], "SUB")
        client.setsockopt(zmq.UNSUBSCRIBE, b"weather")
        time.sleep(0.1)  # let CANCEL leave before linger 0 would drop it
    return ""


@scenario(
    "xpub_xsub", 15609, "XPUB", "XSUB",
    "XSUB sends `\\x01topic`; XPUB sends [`topic`, `data`]; XSUB sends `upstream` and `\\x00topic`",
)  # fmt: skip
def run_xpub_xsub(port: int, out_dir: Path) -> str:
    """XSUB sends subscriptions as 0x01/0x00-prefixed messages plus one plain message."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.XPUB)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.XSUB)
        client.connect(endpoint(port))
        client.send(b"\x01topic")
        recv_expect(server, [b"\x01topic"], "XPUB")
        server.send_multipart([b"topic", b"data"])
        recv_expect(client, [b"topic", b"data"], "XSUB")
        # XPUB passes messages that are not subscriptions up to the application.
        client.send(b"upstream")
        recv_expect(server, [b"upstream"], "XPUB")
        client.send(b"\x00topic")
        recv_expect(server, [b"\x00topic"], "XPUB")
    return ""


@scenario(
    "pair", 15610, "PAIR, heartbeat 100 ms", "PAIR, heartbeat 100 ms",
    "`ping?` / `pong!`, then ~400 ms idle: PING/PONG commands both ways",
)  # fmt: skip
def run_pair(port: int, out_dir: Path) -> str:
    """Two PAIRs with ZMQ_HEARTBEAT_IVL=100 ms so PING and PONG appear on the wire."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PAIR, HEARTBEAT_IVL=100)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.PAIR, HEARTBEAT_IVL=100)
        client.connect(endpoint(port))
        client.send(b"ping?")
        recv_expect(server, [b"ping?"], "server PAIR")
        server.send(b"pong!")
        recv_expect(client, [b"pong!"], "client PAIR")
        time.sleep(0.4)
    return ""


@scenario(
    "multipart", 15611, "PULL", "PUSH",
    "client sends [300 bytes 00..ff 00..2b (long frame), `short`] and [`a`, `b`, `c`]",
)  # fmt: skip
def run_multipart(port: int, out_dir: Path) -> str:
    """A long frame (size > 255, 8-byte size field) followed by short frames."""
    long_body = bytes(i % 256 for i in range(300))
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PULL)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.PUSH)
        client.connect(endpoint(port))
        client.send_multipart([long_body, b"short"])
        client.send_multipart([b"a", b"b", b"c"])
        recv_expect(server, [long_body, b"short"], "PULL")
        recv_expect(server, [b"a", b"b", b"c"], "PULL")
    return ""


@scenario(
    "empty_frames", 15612, "PULL", "PUSH",
    "client sends [``], [``, ``, `end`] and [`start`, ``]",
)  # fmt: skip
def run_empty_frames(port: int, out_dir: Path) -> str:
    """Zero-length frames in every position of a message."""
    messages = [[b""], [b"", b"", b"end"], [b"start", b""]]
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PULL)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.PUSH)
        client.connect(endpoint(port))
        for message in messages:
            client.send_multipart(message)
        for message in messages:
            recv_expect(server, message, "PULL")
    return ""


PLAIN_USERS = plain_users({b"admin": b"secret"})


@scenario(
    "plain_ok", 15613, "REP, PLAIN server + ZAP handler", "REQ, PLAIN `admin` / `secret`",
    "HELLO with credentials, WELCOME, INITIATE, READY; `Hello` -> `World`",
)  # fmt: skip
def run_plain_ok(port: int, out_dir: Path) -> str:
    """PLAIN handshake accepted by a ZAP handler, then one request/reply."""
    with zmq_context() as ctx, zap_handler(ctx, PLAIN_USERS) as zap:
        server = make_socket(ctx, zmq.REP, PLAIN_SERVER=1)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.REQ, PLAIN_USERNAME=b"admin", PLAIN_PASSWORD=b"secret")
        client.connect(endpoint(port))
        client.send(b"Hello")
        recv_expect(server, [b"Hello"], "REP")
        server.send(b"World")
        recv_expect(client, [b"World"], "REQ")
        return f"ZAP requests: {len(zap.requests)}"


@scenario(
    "plain_denied", 15614, "REP, PLAIN server + ZAP handler", "REQ, PLAIN `admin` / `wrong`",
    "HELLO; ZAP says 400; server sends ERROR `400` (malformed, see README) and both close",
)  # fmt: skip
def run_plain_denied(port: int, out_dir: Path) -> str:
    """PLAIN handshake rejected by the ZAP handler (status 400)."""
    with zmq_context() as ctx, zap_handler(ctx, PLAIN_USERS):
        server = make_socket(ctx, zmq.REP, PLAIN_SERVER=1)
        server.bind(endpoint(port))
        client = make_socket(
            ctx, zmq.REQ, PLAIN_USERNAME=b"admin", PLAIN_PASSWORD=b"wrong", RECONNECT_IVL=NO_RECONNECT_MS
        )
        monitor = Monitor(client)
        client.connect(endpoint(port))
        client.send(b"Hello")  # queued; never delivered
        return wait_auth_failure(monitor, server)


@scenario(
    "curve", 15615, "REP, CURVE server", "REQ, CURVE client (knows the server key)",
    "HELLO, WELCOME, INITIATE, READY; `Hello` -> `World` as MESSAGE commands",
)  # fmt: skip
def run_curve(port: int, out_dir: Path) -> str:
    """CURVE handshake and two encrypted messages; the long-term keys go to a JSON file.

    The keys are throwaway. With the server's secret key a dissector can open the
    HELLO and WELCOME boxes; the rest needs the short-term keys, which never leave
    libzmq.
    """
    server_public, server_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.REP, CURVE_SERVER=1, CURVE_SECRETKEY=server_secret)
        server.bind(endpoint(port))
        client = make_socket(
            ctx, zmq.REQ,
            CURVE_SERVERKEY=server_public, CURVE_PUBLICKEY=client_public, CURVE_SECRETKEY=client_secret,
        )  # fmt: skip
        client.connect(endpoint(port))
        client.send(b"Hello")
        recv_expect(server, [b"Hello"], "REP")
        server.send(b"World")
        recv_expect(client, [b"World"], "REQ")
    keys = {
        "note": "throwaway long-term keys (Z85) used to record curve.pcapng",
        "server": {"public": server_public.decode(), "secret": server_secret.decode()},
        "client": {"public": client_public.decode(), "secret": client_secret.decode()},
    }
    (out_dir / "curve.keys.json").write_text(json.dumps(keys, indent=2) + "\n")
    return "keys in curve.keys.json"


@scenario(
    "curve_denied", 15616, "REP, CURVE server + ZAP handler refusing all", "REQ, CURVE client",
    "HELLO, WELCOME, INITIATE; ZAP says 400; server sends ERROR `400` and both close",
)  # fmt: skip
def run_curve_denied(port: int, out_dir: Path) -> str:
    """A CURVE handshake that the ZAP handler refuses after INITIATE."""
    server_public, server_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    with zmq_context() as ctx, zap_handler(ctx, deny_all):
        server = make_socket(ctx, zmq.REP, CURVE_SERVER=1, CURVE_SECRETKEY=server_secret)
        server.bind(endpoint(port))
        client = make_socket(
            ctx, zmq.REQ, RECONNECT_IVL=NO_RECONNECT_MS,
            CURVE_SERVERKEY=server_public, CURVE_PUBLICKEY=client_public, CURVE_SECRETKEY=client_secret,
        )  # fmt: skip
        monitor = Monitor(client)
        client.connect(endpoint(port))
        client.send(b"Hello")  # queued; never delivered
        return wait_auth_failure(monitor, server)


@scenario(
    "null_denied", 15617, "REP, NULL, ZAP domain `global` + ZAP handler refusing all", "REQ, NULL",
    "greetings; client sends READY, server ERROR `400` instead of READY (they may cross); both close",
)  # fmt: skip
def run_null_denied(port: int, out_dir: Path) -> str:
    """NULL consults ZAP only when the server socket has a ZAP domain."""
    with zmq_context() as ctx, zap_handler(ctx, deny_all):
        server = make_socket(ctx, zmq.REP, ZAP_DOMAIN=b"global")
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.REQ, RECONNECT_IVL=NO_RECONNECT_MS)
        monitor = Monitor(client)
        client.connect(endpoint(port))
        client.send(b"Hello")  # queued; never delivered
        return wait_auth_failure(monitor, server)


@scenario(
    "mismatch_push_push", 15618, "PUSH", "PUSH",
    "greetings and READY (Socket-Type PUSH) both ways, then both close: no ERROR",
)  # fmt: skip
def run_mismatch_push_push(port: int, out_dir: Path) -> str:
    """Incompatible socket types: libzmq rejects the peer's READY metadata."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PUSH)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.PUSH, RECONNECT_IVL=NO_RECONNECT_MS)
        monitor = Monitor(client)
        client.connect(endpoint(port))
        return describe_failed_handshake(monitor)


@scenario(
    "mechanism_mismatch", 15619, "REP, PLAIN server", "REQ, NULL",
    "greetings announce PLAIN and NULL, then both close: no ERROR",
)  # fmt: skip
def run_mechanism_mismatch(port: int, out_dir: Path) -> str:
    """A NULL client meets a PLAIN server: the greetings disagree on the mechanism."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.REP, PLAIN_SERVER=1)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.REQ, RECONNECT_IVL=NO_RECONNECT_MS)
        monitor = Monitor(client)
        client.connect(endpoint(port))
        return describe_failed_handshake(monitor)


@scenario(
    "heartbeat_ttl", 15620, "ROUTER", "DEALER, heartbeat 100 ms, TTL 2 s, timeout 1 s",
    "`hi`, then ~350 ms idle: client PINGs carry TTL 20 (deciseconds), server PONGs",
)  # fmt: skip
def run_heartbeat_ttl(port: int, out_dir: Path) -> str:
    """Only the client heartbeats; its PINGs carry ZMQ_HEARTBEAT_TTL in deciseconds."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        client = make_socket(
            ctx, zmq.DEALER, ROUTING_ID=b"hb", HEARTBEAT_IVL=100, HEARTBEAT_TTL=2000, HEARTBEAT_TIMEOUT=1000
        )
        client.connect(endpoint(port))
        client.send(b"hi")
        recv_expect(server, [b"hb", b"hi"], "ROUTER")
        time.sleep(0.35)
    return ""


@scenario(
    "heartbeat_ttl_expiry", 15621, "ROUTER", "hand-made ZMTP 3.1 DEALER",
    "client sends PING TTL 3 (300 ms) context `ctx1`; libzmq PONGs `ctx1`, then closes "
    "after 300 ms of silence",
)  # fmt: skip
def run_heartbeat_ttl_expiry(port: int, out_dir: Path) -> str:
    """libzmq enforces the TTL a peer announced in PING by closing the connection."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        peer = RawPeer.connect(port)
        try:
            peer.send(zmtp3_greeting(minor=1))
            greeting = peer.recv_exact(64)
            if greeting[10:12] != b"\x03\x01":
                raise ScenarioError(f"unexpected libzmq greeting {greeting.hex()}")
            peer.send(zmtp3_ready({b"Socket-Type": b"DEALER"}))
            peer.recv_command3(b"READY")
            peer.send(zmtp3_command(b"PING", struct.pack(">H", 3) + b"ctx1"))
            pong = peer.recv_command3(b"PONG")
            if pong != b"ctx1":
                raise ScenarioError(f"PONG context {pong!r}, expected b'ctx1'")
            waited = peer.wait_closed(timeout=3)
        finally:
            peer.close()
    return f"libzmq closed {waited * 1000:.0f} ms after PONG"


@scenario(
    "sub_zmtp30", 15622, "hand-made ZMTP 3.0 PUB", "SUB (libzmq)",
    "peer greets 3.0, so libzmq subscribes with a `\\x01weather` message, not a command; "
    "receives `weather sunny`; cancels with `\\x00weather`",
)  # fmt: skip
def run_sub_zmtp30(port: int, out_dir: Path) -> str:
    """libzmq's SUB falls back to 3.0 subscription messages when the peer says 3.0."""
    seen: list[bytes] = []

    def pub(peer: RawPeer) -> None:
        peer.send(zmtp3_greeting(minor=0))
        greeting = peer.recv_exact(64)
        if greeting[10] != 3:
            raise ScenarioError(f"unexpected libzmq greeting {greeting.hex()}")
        peer.send(zmtp3_ready({b"Socket-Type": b"PUB"}))
        peer.recv_command3(b"READY")
        seen.append(peer.recv_frame3()[1])  # the subscription
        peer.send(zmtp3_frame(b"weather sunny"))
        seen.append(peer.recv_frame3()[1])  # the cancel, after the SUB got the message

    with zmq_context() as ctx:
        raw = RawServer(port, pub)
        raw.start()
        client = make_socket(ctx, zmq.SUB)
        client.setsockopt(zmq.SUBSCRIBE, b"weather")
        client.connect(endpoint(port))
        recv_expect(client, [b"weather sunny"], "SUB")
        client.setsockopt(zmq.UNSUBSCRIBE, b"weather")
        raw.finish()
    if seen != [b"\x01weather", b"\x00weather"]:
        raise ScenarioError(f"subscription frames {seen!r}")
    return ""


@scenario(
    "downgrade_zmtp20", 15623, "PULL (libzmq)", "hand-made ZMTP 2.0 PUSH",
    "peer greets 2.0 (revision 01, type PUSH); libzmq answers major 03 then its socket type "
    "and speaks 2.0 framing; client sends `hello` and [`one`, `two`]",
)  # fmt: skip
def run_downgrade_zmtp20(port: int, out_dir: Path) -> str:
    """libzmq downgrades to ZMTP 2.0 for a peer whose revision byte is 1."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PULL)
        server.bind(endpoint(port))
        peer = RawPeer.connect(port)
        try:
            # signature, revision 1, socket type PUSH (8), empty identity (final-short 0)
            peer.send(b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x01\x08" + b"\x00\x00")
            greeting = peer.recv_exact(12)
            identity = peer.recv_frame3()
            peer.send(b"\x00\x05hello" + b"\x01\x03one" + b"\x00\x03two")
            recv_expect(server, [b"hello"], "PULL")
            recv_expect(server, [b"one", b"two"], "PULL")
        finally:
            peer.close()
    return f"libzmq greeting {greeting.hex()} identity frame {identity!r}"


@scenario(
    "downgrade_zmtp10", 15624, "PULL (libzmq)", "hand-made ZMTP 1.0 PUSH",
    "peer sends an anonymous identity (01 00) and no signature; libzmq's 10-byte signature "
    "doubles as its 1.0 identity header; client sends `hello` and [`one`, `two`]",
)  # fmt: skip
def run_downgrade_zmtp10(port: int, out_dir: Path) -> str:
    """libzmq detects an unversioned (ZMTP 1.0) peer from its first byte."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.PULL)
        server.bind(endpoint(port))
        peer = RawPeer.connect(port)
        try:
            # 1.0 frames: length (counts the flags octet), flags (MORE=1), body
            peer.send(b"\x01\x00")
            signature = peer.recv_exact(10)
            peer.send(b"\x06\x00hello" + b"\x04\x01one" + b"\x04\x00two")
            recv_expect(server, [b"hello"], "PULL")
            recv_expect(server, [b"one", b"two"], "PULL")
        finally:
            peer.close()
    return f"libzmq sent {signature.hex()}"


@scenario("push_3pull", 15640, "PUSH", "3 x PULL", "PUSH sends `task 0`..`task 29`: round robin, 10 each")
def run_push_3pull(port: int, out_dir: Path) -> str:
    """A ventilator and three workers, all connected before the first task: an even round robin."""
    with zmq_context() as ctx:
        push = make_socket(ctx, zmq.PUSH)
        push.bind(endpoint(port))
        workers = connect_all(ctx, zmq.PULL, port, 3)
        time.sleep(0.2)
        for i in range(30):
            push.send(b"task %d" % i)
        counts = [len(drain(w)) for w in workers]
        if counts != [10, 10, 10]:
            raise ScenarioError(f"expected 10 tasks each, got {counts}")
    return "10/10/10"


@scenario(
    "push_late_pull", 15641, "PUSH", "3 x PULL, the third late",
    "PUSH sends 20 tasks to two workers, then a third connects and 12 more go round robin: 14/14/4",
)  # fmt: skip
def run_push_late_pull(port: int, out_dir: Path) -> str:
    """Round-robin skew from a late connection: the first two workers had all the early tasks."""
    with zmq_context() as ctx:
        push = make_socket(ctx, zmq.PUSH)
        push.bind(endpoint(port))
        workers = connect_all(ctx, zmq.PULL, port, 2)
        time.sleep(0.2)
        for i in range(20):
            push.send(b"task %d" % i)
        workers += connect_all(ctx, zmq.PULL, port, 1)
        time.sleep(0.2)
        for i in range(20, 32):
            push.send(b"task %d" % i)
        counts = [len(drain(w)) for w in workers]
        if sum(counts) != 32 or counts[2] != 4:
            raise ScenarioError(f"expected 32 tasks, 4 to the late worker; got {counts}")
    return "/".join(map(str, counts))


@scenario(
    "pub_late_sub", 15642, "PUB", "2 x SUB `weather.`, the second late",
    "PUB sends 10 `weather.*` to the first SUB; the second subscribes, then 5 more reach both (slow joiner)",
)  # fmt: skip
def run_pub_late_sub(port: int, out_dir: Path) -> str:
    """The slow joiner: a SUB that subscribes after the publisher started misses what went before."""
    with zmq_context() as ctx:
        pub = make_socket(ctx, zmq.PUB)
        pub.bind(endpoint(port))
        early = connect_all(ctx, zmq.SUB, port, 1, SUBSCRIBE=b"weather.")[0]
        time.sleep(0.2)
        for i in range(10):
            pub.send_multipart([b"weather.%d" % i, b"%d C" % (10 + i)])
        pub.send_multipart([b"sport.0", b"not for them"])
        late = connect_all(ctx, zmq.SUB, port, 1, SUBSCRIBE=b"weather.")[0]
        time.sleep(0.2)
        for i in range(10, 15):
            pub.send_multipart([b"weather.%d" % i, b"%d C" % (10 + i)])
        got = (len(drain(early)), len(drain(late)))
        if got != (15, 5):
            raise ScenarioError(f"expected 15 and 5 messages, got {got}")
    return "15/5"


@scenario(
    "broker", 15643, "ROUTER :15643 / DEALER :15644 (a proxy)", "3 x REQ -> frontend, 2 x REP -> backend",
    "each REQ asks `request c-i`; the broker adds the client's identity towards the REP and strips it back",
    ports=2,
)  # fmt: skip
def run_broker(port: int, out_dir: Path) -> str:
    """The zguide's extended request-reply: REQ clients, a ROUTER/DEALER proxy, REP workers."""
    with zmq_context() as ctx:
        frontend = make_socket(ctx, zmq.ROUTER)
        frontend.bind(endpoint(port))
        backend = make_socket(ctx, zmq.DEALER)
        backend.bind(endpoint(port + 1))
        control = ctx.socket(zmq.PAIR)
        control.bind("inproc://broker-control")
        proxy = threading.Thread(target=_proxy, args=(ctx, frontend, backend), daemon=True)
        proxy.start()
        workers = connect_all(ctx, zmq.REP, port + 1, 2)
        clients = [connect_all(ctx, zmq.REQ, port, 1, ROUTING_ID=b"c-%d" % i)[0] for i in range(3)]
        time.sleep(0.2)
        for round_ in range(2):
            for i, client in enumerate(clients):
                client.send(b"request c-%d.%d" % (i, round_))
                worker = next((w for w in workers if w.poll(1000)), None)
                if worker is None:
                    raise ScenarioError(f"no worker got request c-{i}.{round_}")
                request = worker.recv()
                worker.send(request.replace(b"request", b"reply"))
                recv_expect(client, [b"reply c-%d.%d" % (i, round_)], f"REQ {i}")
        control.send(b"TERMINATE")
        proxy.join(timeout=2)
        control.close()
    return "6 round trips"


@scenario(
    "ping_ttl_long", 15645, "ROUTER", "DEALER, heartbeat 100 ms, TTL 70 s",
    "`hi`, then PINGs whose TTL is 700 deciseconds (over the 65 s that libzmq 4.3 mishandles, issue #4226)",
)  # fmt: skip
def run_ping_ttl_long(port: int, out_dir: Path) -> str:
    """libzmq itself announces a long heartbeat TTL in its PINGs."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.DEALER, ROUTING_ID=b"hb", HEARTBEAT_IVL=100, HEARTBEAT_TTL=70_000)
        client.connect(endpoint(port))
        client.send(b"hi")
        recv_expect(server, [b"hb", b"hi"], "ROUTER")
        time.sleep(0.35)
    return ""


@scenario(
    "curve_wrong_key", 15646, "ROUTER, CURVE server (curve.keys.json's server keys)",
    "DEALER, CURVE client told the wrong server key (the client's own public key)",
    "the client's HELLO is sealed for the wrong key: the server cannot open it and drops the connection",
)  # fmt: skip
def run_curve_wrong_key(port: int, out_dir: Path) -> str:
    """The most common CURVE failure: the client has another server public key; it looks like a dead server."""
    keys = json.loads((Path(__file__).resolve().parent / "curve.keys.json").read_text())
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER, CURVE_SERVER=1, CURVE_SECRETKEY=keys["server"]["secret"].encode())
        server.bind(endpoint(port))
        client = make_socket(ctx, zmq.DEALER, CURVE_SERVERKEY=keys["client"]["public"].encode(),
                             CURVE_PUBLICKEY=keys["client"]["public"].encode(),
                             CURVE_SECRETKEY=keys["client"]["secret"].encode(), RECONNECT_IVL=NO_RECONNECT_MS)
        monitor = Monitor(client)
        client.connect(endpoint(port))
        client.send(b"hello?")
        if server.poll(500):
            raise ScenarioError("the server accepted a client with the wrong server key")
        return describe_failed_handshake(monitor)


@scenario(
    "identity_collision", 15647, "ROUTER", "2 x DEALER, both with identity `dup`",
    "the second DEALER announces the identity the first holds; libzmq's ROUTER refuses it; `to dup` goes to the first",
)  # fmt: skip
def run_identity_collision(port: int, out_dir: Path) -> str:
    """Two peers of one ROUTER with the same Identity: without ROUTER_HANDOVER the second is refused."""
    with zmq_context() as ctx:
        server = make_socket(ctx, zmq.ROUTER)
        server.bind(endpoint(port))
        first, second = connect_all(ctx, zmq.DEALER, port, 2, ROUTING_ID=b"dup")
        time.sleep(0.2)
        first.send(b"from first")
        recv_expect(server, [b"dup", b"from first"], "ROUTER")
        server.send_multipart([b"dup", b"to dup"])
        recv_expect(first, [b"to dup"], "first DEALER")
        if second.poll(200):
            raise ScenarioError("the second DEALER got a message for `dup`")
    return ""


@scenario(
    "push_slow_pull", 15648, "PUSH, SNDHWM 4", "PULL, RCVHWM 4, RCVBUF 4 KiB, reads late",
    "PUSH sends 2 KiB tasks to a PULL that does not read: its TCP window closes and PUSH blocks; then it reads",
)  # fmt: skip
def run_push_slow_pull(port: int, out_dir: Path) -> str:
    """Back-pressure: a slow reader's TCP receive window goes to zero while the sender still has tasks."""
    with zmq_context() as ctx:
        push = make_socket(ctx, zmq.PUSH, SNDHWM=4, SNDBUF=4096, SNDTIMEO=200)
        push.bind(endpoint(port))
        pull = make_socket(ctx, zmq.PULL, RCVHWM=4, RCVBUF=4096)
        pull.connect(endpoint(port))
        time.sleep(0.2)
        sent = 0
        with suppress(zmq.Again):
            for i in range(200):
                push.send(b"%04d" % i + b"." * 2044)
                sent += 1
        if sent == 200:
            raise ScenarioError("PUSH never blocked: no back-pressure")
        time.sleep(0.3)
        got = len(drain(pull))
        if got != sent:
            raise ScenarioError(f"PUSH sent {sent} before blocking, PULL read {got}")
    return f"PUSH blocked after {sent} tasks"


# ZWS (45/ZWS, ZeroMQ over WebSocket): the PyPI wheel's libzmq has no ws:// transport, Debian's libzmq5 has it.
# Its side runs in Debian's python3 with python3-zmq (scripts/install-system-deps.sh); ours is zmtplab's peer.
DEBIAN_PYTHON = "/usr/bin/python3"
LIBZMQ_WS = """
import sys, zmq
kind, action, endpoint, count = sys.argv[1:5]
ctx = zmq.Context()
sock = ctx.socket(getattr(zmq, kind))
sock.linger = 1000
sock.rcvtimeo = sock.sndtimeo = 3000
if action == "bind":
    sock.bind(endpoint)
else:
    sock.connect(endpoint)
print("ready", flush=True)
for _ in range(int(count)):
    line = sys.stdin.readline().split()
    if line[0] == "send":
        sock.send_multipart([bytes.fromhex(f) for f in line[1].split(",")])
    else:
        print(",".join(f.hex() for f in sock.recv_multipart()), flush=True)
sys.stdin.readline()
sock.close()
ctx.term()
"""


class LibzmqWs:
    """One libzmq socket over ws:// in Debian's python3: `send()` and `recv()` one message at a time."""

    def __init__(self, kind: str, action: str, endpoint: str, steps: int) -> None:
        if not Path(DEBIAN_PYTHON).exists():
            raise ScenarioError(f"{DEBIAN_PYTHON} with python3-zmq (Debian's libzmq, with ws://) is needed")
        self.proc = subprocess.Popen([DEBIAN_PYTHON, "-c", LIBZMQ_WS, kind, action, endpoint, str(steps)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        if self._line() != "ready":
            raise ScenarioError(f"libzmq {kind} did not start")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def send(self, frames: list[bytes]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("send " + ",".join(f.hex() for f in frames) + "\n")

    def recv(self) -> list[bytes]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("recv\n")
        line = self._line()
        if not line:
            raise ScenarioError(f"libzmq received nothing (exit {self.proc.poll()})")
        return [bytes.fromhex(f) for f in line.split(",")]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("close\n")
        self.proc.stdin.close()
        self.proc.wait(10)


def ws_endpoint(port: int) -> str:
    return f"ws://{HOST}:{port}/zmq"


@scenario(
    "zws_dealer_router", 15650, "ROUTER (libzmq 4.3.4, Debian)", "DEALER, identity `client-1` (zmtplab peer)",
    "ws://: ZWS2.0/NULL; DEALER sends [``, `request`] (masked); ROUTER replies [``, `reply`]",
)  # fmt: skip
def run_zws_dealer_router(port: int, out_dir: Path) -> str:
    """45/ZWS with a mechanism: our DEALER offers libzmq's ZWS2.0/NULL,ZWS2.0 and libzmq's ROUTER picks NULL."""
    import asyncio

    from zmtplab.peers.tcp import TcpPeer

    router = LibzmqWs("ROUTER", "bind", ws_endpoint(port), 2)

    async def dealer() -> None:
        async with TcpPeer("DEALER", identity=b"client-1") as peer:
            peer.connect(ws_endpoint(port))
            await peer.send([b"", b"request"])
            got = await asyncio.to_thread(router.recv)
            if got != [b"client-1", b"", b"request"]:
                raise ScenarioError(f"ROUTER received {got}")
            router.send([b"client-1", b"", b"reply"])
            if await peer.recv(timeout=3) != [b"", b"reply"]:
                raise ScenarioError("DEALER got another reply")

    asyncio.run(dealer())
    router.close()
    return ""


@scenario(
    "zws_routing_ids", 15651, "PULL accepting only ZWS2.0, as a browser offers (zmtplab peer)",
    "PUSH (libzmq 4.3.4, Debian)",
    "ws://: libzmq offers ZWS2.0/NULL,ZWS2.0, gets ZWS2.0: routing ids first, then `hello` and [`one`, `two`] (masked)",
)  # fmt: skip
def run_zws_routing_ids(port: int, out_dir: Path) -> str:
    """45/ZWS without a mechanism: each side's first message is its routing id (ZMTP/2-like)."""
    import asyncio

    from zmtplab.peers.tcp import TcpPeer

    async def pull() -> None:
        async with TcpPeer("PULL", zws_protocols=["ZWS2.0"]) as peer:
            await peer.bind(ws_endpoint(port))
            push = await asyncio.to_thread(LibzmqWs, "PUSH", "connect", ws_endpoint(port), 2)
            push.send([b"hello"])
            push.send([b"one", b"two"])
            for expected in ([b"hello"], [b"one", b"two"]):
                if await peer.recv(timeout=3) != expected:
                    raise ScenarioError("PULL got another message")
            await asyncio.to_thread(push.close)

    asyncio.run(pull())
    return ""


def _proxy(ctx: zmq.Context, frontend: zmq.Socket, backend: zmq.Socket) -> None:
    control = ctx.socket(zmq.PAIR)
    control.connect("inproc://broker-control")
    with suppress(zmq.ZMQError):
        zmq.proxy_steerable(frontend, backend, None, control)
    control.close()


# The recorded incidents (captures/incidents/, each with its facts file) come after the samples.
import incidents  # noqa: E402, F401


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="record only these scenarios (default: all)")
    parser.add_argument(
        "--out", type=Path, default=None,
        help="directory for the .pcapng (and facts) files (default: captures/, and captures/incidents/ for the "
             "incidents)",
    )  # fmt: skip
    parser.add_argument("--only", nargs="+", metavar="NAME", default=[], help="record only these scenarios")
    parser.add_argument("--list", action="store_true", help="list scenarios and exit")
    parser.add_argument(
        "--table", action="store_true",
        help="print the README's markdown table for the captures already in --out and exit",
    )  # fmt: skip
    return parser.parse_args(argv)


def out_dir(sc: Scenario, out: Path | None) -> Path:
    """Where ``sc``'s files go: ``out``, else its folder under captures/."""
    return out if out is not None else CAPTURES / sc.folder


def main(argv: list[str] | None = None) -> int:
    """Record the selected scenarios, printing one line each; return the exit status."""
    args = parse_args(argv)
    if args.list:
        for sc in SCENARIOS.values():
            where = f"{sc.folder}/" if sc.folder else ""
            print(f"{where + sc.name:32} {sc.port}  {sc.server} <- {sc.client}: {sc.summary}")
        return 0
    names = [*args.names, *args.only] or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    if args.table:
        folders = {SCENARIOS[n].folder for n in names}
        for folder in sorted(folders):
            chosen = [SCENARIOS[n] for n in names if SCENARIOS[n].folder == folder]
            print(markdown_table(chosen, out_dir(chosen[0], args.out)))
        return 0
    try:
        Dumpcap.executable()
    except CaptureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = 0
    for name in names:
        sc = SCENARIOS[name]
        where = out_dir(sc, args.out)
        where.mkdir(parents=True, exist_ok=True)
        try:
            packets, note = record(sc, where)
        except CaptureError as exc:
            # Without a working dumpcap no other scenario can succeed either.
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:
            failed += 1
            print(f"FAIL {sc.name:22} port {sc.port}: {type(exc).__name__}: {exc}", flush=True)
            continue
        count = "?" if packets is None else str(packets)
        path = where / f"{sc.name}.pcapng"
        extra = f"  ({note})" if note else ""
        print(f"ok   {sc.name:22} port {sc.port} {count:>4} packets  {path}{extra}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
