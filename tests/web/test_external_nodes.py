"""External nodes of real topology sessions (issue 34.1): a program outside the lab is a node. The session listens
on an endpoint of its own, its `topology` message says where, and a real pyzmq socket that connects there is
that node: its greeting, READY and messages are the session's events, the lab's sockets route to it and say so,
and a hostile peer is cut off with an error event, never the session."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import zmq
from starlette.websockets import WebSocketDisconnect
from webkit import events_of, make_settings, open_client, receive_all, receive_until
from websockets.sync.client import connect as ws_connect

from testkit import LiveServer, free_port
from zmtplab.web.app import create_app

pytestmark = [pytest.mark.timeout(60), pytest.mark.interop]

ROUTER_TOPOLOGY = {"mode": "tcp", "nodes": [{"name": "router", "type": "ROUTER", "echo": True},
                                            {"name": "w1", "type": "DEALER"},
                                            {"name": "you", "type": "DEALER", "external": True}],
                   "links": [{"connect": "w1", "bind": "router"}, {"connect": "you", "bind": "router"}]}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("external")) as c:
        yield c


def create(client, body: dict[str, Any]) -> str:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def external_node(message: dict[str, Any], name: str) -> dict[str, Any]:
    assert message["type"] == "topology"
    return next(n for n in message["topology"]["nodes"] if n["name"] == name)


def receive_json_until(ws: Any, predicate: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """A real websocket's messages (batches unpacked) up to the first that satisfies `predicate`."""
    seen: list[dict[str, Any]] = []
    for _ in range(5000):
        message = json.loads(ws.recv(timeout=20))
        for m in message if isinstance(message, list) else [message]:
            seen.append(m)
            if predicate(m):
                return seen
    raise AssertionError(f"not seen: {seen[-5:]}")


@contextlib.contextmanager
def zmq_socket(kind: int, **options: int | bytes) -> Iterator[zmq.Socket]:
    """A real libzmq socket (pyzmq's bundled libzmq): linger 0, reads give up after 10 s, `options` set."""
    ctx = zmq.Context()
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 10_000)
    for name, value in options.items():
        sock.setsockopt(getattr(zmq, name), value)
    try:
        yield sock
    finally:
        sock.close()
        ctx.term()


def address(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
    return host.strip("[]"), int(port)


def test_a_pyzmq_dealer_on_an_external_node_gets_routed_replies(client):
    """A real libzmq DEALER connects to the endpoint the topology message names: its READY is an event of the
    session, the ROUTER's echo routes each reply back to it by its identity (a decision it shows), and the DEALER
    receives them."""
    session_id = create(client, ROUTER_TOPOLOGY)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        you = external_node(ws.receive_json(), "you")
        assert you["external"] is True and you["endpoint"].startswith("tcp://127.0.0.1:")
        with zmq_socket(zmq.DEALER, ROUTING_ID=b"student-7") as dealer:
            dealer.connect(you["endpoint"])
            dealer.send(b"hello lab")
            assert dealer.recv() == b"hello lab"  # the ROUTER's application echoed it, routed by identity
            seen = receive_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "socket"
                                 and m["event"]["node"] == "router" and m["event"]["what"] == "route")
        topologies = [m for m in seen if m["type"] == "topology"]
        conns = topologies[-1]["topology"]["conns"]
        ext = next(c for c in conns if c["client"] == "you")
        assert ext["server"] == "router" and ext["link"] == 1
        events = events_of(seen)
        mine = [e for e in events if e.get("conn") == ext["conn"]]
        ready = next(e for e in mine if e["kind"] == "command" and e["name"] == "READY" and e["dir"] == "c2s")
        assert ready["properties"] == {"Socket-Type": "DEALER", "Identity": "student-7"}
        assert any(e["kind"] == "message" and e["dir"] == "c2s" and e["frames"] == [b"hello lab".hex()]
                   for e in mine)
        route = [e for e in events if e["kind"] == "socket" and e["node"] == "router" and e["what"] == "route"][-1]
        assert route["rule"] == "identity-routing" and route["peer"] == "you" and route["conn"] == ext["conn"]
        read = next(e for e in events if e["kind"] == "peer" and e["peer"] == "router")
        assert read["frames"] == [b"student-7".hex(), b"hello lab".hex()] and "msg" in read


PUSH_TOPOLOGY = {"mode": "tcp", "nodes": [{"name": "push", "type": "PUSH"},
                                          {"name": "you", "type": "PULL", "external": True}],
                 "links": [{"connect": "you", "bind": "push"}]}
PYTHON = Path("/usr/bin/python3")  # Debian's, with Debian's python3-zmq: a libzmq built with ws://
PULL_TWO = """
import sys, zmq
ctx = zmq.Context(); s = ctx.socket(zmq.PULL); s.setsockopt(zmq.LINGER, 0); s.setsockopt(zmq.RCVTIMEO, 20000)
s.connect(sys.argv[1])
print(s.recv().decode(), s.recv().decode(), flush=True)
"""


def pushes_two(ws: Any) -> None:
    for text in ("one", "two"):
        ws.send_json({"type": "send", "from": "push", "frames": [text]})


def test_a_libzmq_pull_over_tcp_takes_the_lab_push_round_robin(client):
    """pyzmq's bundled libzmq PULL on the tcp:// endpoint: both messages reach it, each routed by the PUSH's round
    robin to it (the decision names it), its greeting and READY dissected on its connection."""
    session_id = create(client, PUSH_TOPOLOGY)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        you = external_node(ws.receive_json(), "you")
        with zmq_socket(zmq.PULL) as pull:
            pull.connect(you["endpoint"])
            pushes_two(ws)
            assert [pull.recv(), pull.recv()] == [b"one", b"two"]
            seen = receive_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "message"
                                 and m["event"]["frames"] == [b"two".hex()])
    events = events_of(seen)
    assert [e["version"] for e in events if e["kind"] == "greeting"] == ["3.1", "3.1"]
    assert {(e["dir"], e["properties"]["Socket-Type"]) for e in events if e["kind"] == "command"} == {
        ("c2s", "PULL"), ("s2c", "PUSH")}
    routes = [e for e in events if e["kind"] == "socket" and e["what"] == "route"]
    assert [(e["node"], e["peer"], e["rule"]) for e in routes] == [("push", "you", "round-robin")] * 2


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app served on a real port: libzmq and browsers reach its ZWS route over the network."""
    with LiveServer(create_app(make_settings(tmp_path_factory.mktemp("external-zws")))) as srv:
        yield srv


def test_a_libzmq_pull_over_ws_joins_through_the_app(server):
    """Debian's libzmq (built with ws://) PULL connects to the topology message's `zws` URL, offering
    ZWS2.0/NULL,ZWS2.0: the app accepts ZWS2.0/NULL, bridges it in as the node's connection, and the session
    dissects the ZWS upgrade and READY commands and the messages the PUSH sends it."""
    if not PYTHON.exists() or subprocess.run([str(PYTHON), "-c", "import zmq"], capture_output=True).returncode:
        pytest.fail(f"this test needs {PYTHON} with Debian's python3-zmq (scripts/install-system-deps.sh)")
    session_id = httpx.post(f"{server.base}/api/sessions", json=PUSH_TOPOLOGY).json()["id"]
    with ws_connect(f"{server.ws_base}/ws/sessions/{session_id}") as ws:
        you = external_node(json.loads(ws.recv(timeout=10)), "you")
        assert you["zws"] == f"{server.ws_base}/zws-{session_id}-you"
        pull = subprocess.Popen([str(PYTHON), "-c", PULL_TWO, you["zws"]], stdout=subprocess.PIPE, text=True)
        try:
            seen = receive_json_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "command"
                                      and m["event"]["dir"] == "c2s")  # (its READY: the pipe is there)
            for text in ("one", "two"):
                ws.send(json.dumps({"type": "send", "from": "push", "frames": [text]}))
            out, _ = pull.communicate(timeout=30)
        finally:
            pull.kill()
        assert out.split() == ["one", "two"]
        seen += receive_json_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "message"
                                   and m["event"]["frames"] == [b"two".hex()])
    events = events_of(seen)
    upgrades = [e for e in events if e["kind"] == "greeting"]
    assert {(e["dir"], e["transport"], e["protocol"]) for e in upgrades} == {("c2s", "zws", "ZWS2.0/NULL"),
                                                                             ("s2c", "zws", "ZWS2.0/NULL")}
    ready = [e for e in events if e["kind"] == "command" and e["name"] == "READY"]
    assert {e["properties"]["Socket-Type"] for e in ready} == {"PULL", "PUSH"}
    assert [e["frames"] for e in events if e["kind"] == "message"] == [[b"one".hex()], [b"two".hex()]]


GREETING = b"\xff" + bytes(8) + b"\x7f\x03\x01NULL" + bytes(16) + b"\x00" + bytes(31)
READY = b"\x04\x1c\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER"
HOSTILE = {  # what a hostile program sends, and what the error event says of it
    "a 2^63 size": (GREETING + READY + b"\x02" + struct.pack(">Q", 1 << 63) + b"abc", "larger than"),
    "garbage": (b"\x00\x01\x02garbage that is no ZMTP at all\r\n" * 4, "identity frame with length 0"),
    "an HTTP request": (b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n", "no greeting and handshake within 1 s"),
    "a greeting that never ends": (GREETING[:10], "no greeting and handshake within 1 s"),
}


@pytest.fixture(scope="module")
def strict_client(tmp_path_factory):
    """An app that gives an external program 1 s to finish its handshake."""
    with open_client(tmp_path_factory.mktemp("external-strict"), session_external_handshake_timeout=1.0) as c:
        yield c


@pytest.mark.parametrize("what", list(HOSTILE))
def test_a_hostile_program_gets_an_error_event_and_a_close_and_the_session_goes_on(strict_client, what):
    """A program that sends a frame of 2^63 octets, garbage, or a greeting it never finishes is cut off: an
    `expert` error (rule `external`) says why on its connection, an `error` message too, its socket is closed; then
    a real DEALER on the same endpoint still gets its routed reply."""
    data, why = HOSTILE[what]
    session_id = create(strict_client, ROUTER_TOPOLOGY)
    with strict_client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        you = external_node(ws.receive_json(), "you")
        with socket.create_connection(address(you["endpoint"]), timeout=20) as hostile:
            hostile.sendall(data)
            seen = receive_until(ws, lambda m: m["type"] == "error")
            assert why in seen[-1]["detail"] and "external node you" in seen[-1]["detail"]
            try:
                while hostile.recv(1 << 16):
                    pass  # (whatever the lab's node wrote before the close, then the end: a timeout fails)
            except ConnectionResetError:
                pass  # (closed with a reset: as closed)
        expert = [e for e in events_of(seen) if e["kind"] == "expert" and e.get("rule") == "external"]
        assert len(expert) == 1 and expert[0]["severity"] == "error" and why in expert[0]["text"]
        with zmq_socket(zmq.DEALER) as dealer:
            dealer.connect(you["endpoint"])
            dealer.send(b"after " + what.encode())
            assert dealer.recv() == b"after " + what.encode()


def test_the_endpoint_takes_max_connections_and_closes_with_its_session(client):
    """A second program on a node of max_connections 1 is refused (an `error` says so) while the first is
    connected; once the session ends, nothing listens on the endpoint any more."""
    session_id = create(client, ROUTER_TOPOLOGY)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        you = external_node(ws.receive_json(), "you")
        with socket.create_connection(address(you["endpoint"]), timeout=20) as first:
            first.sendall(GREETING + READY)
            receive_until(ws, lambda m: m["type"] == "event" and m["event"].get("name") == "READY"
                          and m["event"]["dir"] == "c2s")
            with socket.create_connection(address(you["endpoint"]), timeout=20) as second:
                detail = receive_until(ws, lambda m: m["type"] == "error")[-1]["detail"]
                assert "external node you" in detail and "max_connections" in detail
                assert second.recv(16) == b""
    assert client.delete(f"/api/sessions/{session_id}").status_code == 204
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address(you["endpoint"]), timeout=5).close()


def test_the_lab_connects_to_an_external_node_with_an_endpoint(client):
    """An external node with an `endpoint`: the lab's PUSH connects there, and again while nothing listens (said
    once), until a real pyzmq PULL binds it, then sends to it; a host outside
    `live_tap_targets` is refused with 422, as external nodes in a simulated session are."""
    port = free_port()
    body = {**PUSH_TOPOLOGY, "nodes": [{"name": "push", "type": "PUSH"},
                                       {"name": "you", "type": "PULL", "external": True,
                                        "endpoint": f"tcp://127.0.0.1:{port}"}]}
    session_id = create(client, body)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        first = ws.receive_json()
        assert external_node(first, "you")["endpoint"] == f"tcp://127.0.0.1:{port}"
        seen = [first]
        with zmq_socket(zmq.PULL) as pull:
            pull.bind(f"tcp://127.0.0.1:{port}")
            seen += receive_until(ws, lambda m: m["type"] == "event" and m["event"].get("name") == "READY"
                                  and m["event"]["dir"] == "s2c")  # (the PULL's: our PUSH has its pipe)
            pushes_two(ws)
            assert [pull.recv(), pull.recv()] == [b"one", b"two"]
            seen += receive_until(ws, lambda m: m["type"] == "event" and m["event"]["kind"] == "message"
                                  and m["event"]["frames"] == [b"two".hex()])
        assert [m for m in seen if m["type"] == "error"] == []  # (said once, before this socket came)
        conns = [m for m in seen if m["type"] == "topology"][-1]["topology"]["conns"]
        assert conns == [{"conn": "0", "link": 0, "client": "push", "server": "you"}]
    far = {**body, "nodes": [body["nodes"][0], {**body["nodes"][1], "endpoint": "tcp://192.0.2.7:5555"}]}
    r = client.post("/api/sessions", json=far)
    assert r.status_code == 422 and "ZMTPLAB_LIVE_TAP_TARGETS" in r.json()["detail"]
    r = client.post("/api/sessions", json={**ROUTER_TOPOLOGY, "mode": "simulated"})
    assert r.status_code == 422 and "external nodes need a real session" in r.json()["detail"]


@pytest.mark.parametrize(("change", "words"), [
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "b", "type": "PUSH"},
                {"name": "you", "type": "PULL", "external": True}],
      "links": [{"connect": "you", "bind": "a"}, {"connect": "you", "bind": "b"}]},
     "node 'you': an external node has one link"),
    ({"nodes": [{"name": "a", "type": "PAIR"}, {"name": "you", "type": "PAIR", "external": True,
                                                  "max_connections": 2}],
      "links": [{"connect": "you", "bind": "a"}]}, "a PAIR takes one connection"),
    ({"nodes": [{"name": "a", "type": "PUSH", "endpoint": "tcp://127.0.0.1:5555"},
                {"name": "you", "type": "PULL"}], "links": [{"connect": "you", "bind": "a"}]},
     "endpoint and max_connections are an external node's"),
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "you", "type": "PULL", "external": True,
                                                  "endpoint": "ws://127.0.0.1:5555/x"}],
      "links": [{"connect": "you", "bind": "a"}]}, "endpoint is tcp://HOST:PORT"),
    ({"nodes": [{"name": "a", "type": "REP"}, {"name": "you", "type": "REQ", "external": True, "echo": True}],
      "links": [{"connect": "you", "bind": "a"}]}, "REP, ROUTER"),
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "you", "type": "PULL", "external": True}],
      "links": [{"connect": "you", "bind": "a"}], "script": [{"from": "you", "frames": ["x"]}]}, "cannot send"),
])
def test_external_nodes_the_lab_cannot_run_are_refused_naming_them(client, change, words):
    r = client.post("/api/sessions", json={"mode": "tcp", **change})
    assert r.status_code == 422 and words in r.json()["detail"][0]["msg"], r.text


def test_a_hostile_zws_peer_is_closed_and_the_route_refuses_what_it_cannot_bridge(client):
    """Over the app's ZWS route: a frame with reserved flag bits set makes the lab's node end the connection,
    which the session says (an `expert` error naming the dissector's warning) and the peer's websocket closes with
    1008; no such node is 4404, a subprotocol the node cannot speak 1002, a second peer beyond max_connections
    4429."""
    session_id = create(client, PUSH_TOPOLOGY)
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        ws.receive_json()
        with client.websocket_connect(f"/zws-{session_id}-you", subprotocols=["ZWS2.0"]) as peer:
            assert peer.accepted_subprotocol == "ZWS2.0"
            peer.send_bytes(b"\x00")
            assert peer.receive_bytes() == b"\x00"  # (the lab PUSH's routing id)
            assert refusal(client, f"/zws-{session_id}-you", ["ZWS2.0"]) == 4429
            peer.send_bytes(b"\xfcgarbage")
            assert peer.receive() == {"type": "websocket.close", "code": 1008, "reason": ""}
        seen = receive_until(ws, lambda m: m["type"] == "error")
        assert seen[-1]["detail"] == ("external node you: the lab's node closed the connection after this: reserved "
                                      "flag bits set: 0xfc; the connection was closed")
        assert [e["rule"] for e in events_of(seen) if e["kind"] == "expert"] == ["flags", "external"]
    assert refusal(client, f"/zws-{session_id}-nobody", ["ZWS2.0"]) == 4404
    assert refusal(client, f"/zws-{session_id}-you", ["chat"]) == 1002
    assert refusal(client, "/zws-0123-you", ["ZWS2.0"]) == 4404


def refusal(client: Any, path: str, offer: list[str]) -> int:
    """The close code the ZWS route answers a peer offering `offer` on `path` with, before any message."""
    with pytest.raises(WebSocketDisconnect) as refused, client.websocket_connect(path, subprotocols=offer) as peer:
        peer.receive_bytes()
    return refused.value.code


CLASS_TOPOLOGY = {"mode": "tcp", "nodes": [{"name": "teacher", "type": "PUSH"},
                                           {"name": "lab", "type": "PULL"},
                                           {"name": "class", "type": "PULL", "external": True, "max_connections": 5}],
                  "links": [{"connect": "lab", "bind": "teacher"}, {"connect": "class", "bind": "teacher"}]}


def test_a_summary_watcher_gets_the_lab_s_connections_and_only_counts_the_class_s(client):
    """Two students' pages join a class node (an external PULL taking five) over ZWS behind the teacher's PUSH. The
    teacher's socket gets every element of every connection; a page watching with `?external=summary` (live, and
    one that comes later and reads the backlog) gets the lab's own connection's elements and none of the students',
    the topology message listing the lab's connection only and counting the students (`connected`), sent again
    once the class changed rather than once per student."""
    session_id = create(client, CLASS_TOPOLOGY)
    watching = f"/ws/sessions/{session_id}?watch=1&external=summary"
    with client.websocket_connect(f"/ws/sessions/{session_id}") as teacher, \
            client.websocket_connect(watching) as early:
        assert "connected" not in external_node(teacher.receive_json(), "class")
        first = early.receive_json()
        assert external_node(first, "class")["connected"] == 0
        with client.websocket_connect(f"/zws-{session_id}-class", subprotocols=["ZWS2.0"]) as one, \
                client.websocket_connect(f"/zws-{session_id}-class", subprotocols=["ZWS2.0"]) as two:
            for peer in (one, two):
                peer.send_bytes(b"\x00")
                assert peer.receive_bytes() == b"\x00"  # (the teacher PUSH's routing id)
            seen = receive_until(teacher, lambda m: m["type"] == "topology" and len(m["topology"]["conns"]) == 3)
            conns = seen[-1]["topology"]["conns"]
            students = {c["conn"] for c in conns if c["client"] == "class"}
            lab = next(c["conn"] for c in conns if c["client"] == "lab")
            for student in students:  # (its routing id dissected: its pipe is the PUSH's a moment later)
                receive_until(teacher, lambda m, s=student: m["type"] == "event" and m["event"]["conn"] == s
                              and m["event"]["dir"] == "c2s")
            for n in range(6):
                teacher.send_json({"type": "send", "from": "teacher", "frames": [f"task {n}"]})
            dealt: dict[str, list[str]] = {}

            def deal(m: dict[str, Any]) -> bool:
                if m["type"] == "event" and m["event"]["kind"] == "message" and m["event"]["dir"] == "s2c":
                    dealt.setdefault(m["event"]["conn"], []).append(bytes.fromhex(m["event"]["frames"][0]).decode())
                return sum(map(len, dealt.values())) == 6

            receive_until(teacher, deal)
            assert set(dealt) == {lab, *students}  # the teacher's full view: every connection's messages
            joined = [c["conn"] for c in conns if c["client"] == "class"]  # (in the order the pages joined)
            for conn, peer in zip(joined, (one, two), strict=True):  # each page got what the wire carried to it
                assert [peer.receive_bytes() for _ in dealt[conn]] == [b"\x00" + t.encode() for t in dealt[conn]]
            last_lab = dealt[lab][-1]
            live = [first, *receive_all(early, lambda m: m["type"] == "topology"
                                        and external_node(m, "class")["connected"] == 2,
                                        lambda m: m["type"] == "event" and m["event"]["kind"] == "message"
                                        and m["event"]["frames"] == [last_lab.encode().hex()])]
            with client.websocket_connect(watching) as late:
                backlog = receive_until(late, lambda m: m["type"] == "state")
    for seen_by in (live, backlog):
        assert not {e.get("conn") for e in events_of(seen_by)} & students
        assert [bytes.fromhex(e["frames"][0]).decode() for e in events_of(seen_by) if e["kind"] == "message"
                and e["dir"] == "s2c"] == dealt[lab]
        topologies = [m["topology"] for m in seen_by if m["type"] == "topology"]
        assert [c["conn"] for c in topologies[-1]["conns"]] == [lab]
    assert len([m for m in live if m["type"] == "topology"]) <= 2  # (the two students' opens: at most one message)
    assert external_node(backlog[0], "class")["connected"] == 2
