"""Our peers over ws:// (45/ZWS) against real libzmq, both roles, with every byte dissected.

The libzmq side is Debian's libzmq5 (4.3.4), which is built with the ws:// transport (DRAFT in libzmq's
build, so `zmq_has("ws")` answers 0, yet `ws://` binds and connects), through Debian's python3-zmq in a
helper process under /usr/bin/python3 (tests/peers/libzmq_ws/zpeer.py). The pyzmq wheel from PyPI that
the other tests use bundles a libzmq without ws://. scripts/install-system-deps.sh installs both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from zmtplab.engine import ZwsDissector
from zmtplab.peers.tcp import TcpPeer

from .conftest import TIMEOUT, EventLog, LineDriven, LineSocket, run

pytestmark = pytest.mark.interop

PYTHON = Path("/usr/bin/python3")
HELPER = Path(__file__).parent / "libzmq_ws" / "zpeer.py"
SETUP = "scripts/install-system-deps.sh installs them (python3-zmq, which brings Debian's libzmq5)"


class Libzmq(LineDriven):
    """One helper process holding Debian libzmq's sockets (zpeer.py under Debian's python3)."""

    what = "zpeer"

    def __init__(self) -> None:
        super().__init__([str(PYTHON), str(HELPER)])
        self.zap_started = False

    def socket(self, socket_type: str, **options: int | str) -> LSocket:
        name = self.new(socket_type)
        for option, value in options.items():
            self.call("set", name, option, str(value))
        return LSocket(self, name)

    def zap(self, user: str, password: str) -> None:
        """A ZAP handler accepting PLAIN `user`/`password` (once per process: it holds the ZAP endpoint)."""
        if not self.zap_started:
            self.call("zap", user, password)
            self.zap_started = True


class LSocket(LineSocket):
    """One libzmq socket in the helper."""

    def bind(self, endpoint: str = "ws://127.0.0.1:*/zmq") -> str:
        return self.helper.call("bind", self.name, endpoint)


@pytest.fixture(scope="session")
def libzmq_process() -> Iterator[Libzmq]:
    """The helper, started once for the session."""
    probe = subprocess.run([str(PYTHON), "-c", "import zmq"], capture_output=True) if PYTHON.exists() else None
    if probe is None or probe.returncode != 0:
        pytest.fail(f"the ws:// interop tests need {PYTHON} with Debian's python3-zmq: {SETUP}")
    lib = Libzmq()
    try:
        yield lib
    finally:
        lib.quit()


@pytest.fixture
def lib(libzmq_process: Libzmq) -> Iterator[Libzmq]:
    """The session's libzmq; the sockets a test opens are closed after it."""
    try:
        yield libzmq_process
    finally:
        libzmq_process.close_all()


class Wire:
    """Dissects both directions of every connection of one of our ws:// peers (its `on_wire`)."""

    def __init__(self) -> None:
        self.dissectors: dict[str, ZwsDissector] = {}
        self.events: dict[str, list[tuple[str, Any]]] = {}

    def __call__(self, conn: str, direction: str, data: bytes) -> None:
        dissector = self.dissectors.get(conn)
        if dissector is None:
            dissector = self.dissectors[conn] = ZwsDissector()
            self.events[conn] = []
        self.events[conn].extend(dissector.receive_data(direction, data))

    def dicts(self, conn: str = "1") -> list[dict[str, Any]]:
        return [{"dir": d, **e.to_dict()} for d, e in self.events[conn]]

    def of(self, kind: str, direction: str | None = None, conn: str = "1") -> list[dict[str, Any]]:
        return [e for e in self.dicts(conn) if e["kind"] == kind and direction in (None, e["dir"])]

    def messages(self, direction: str, conn: str = "1") -> list[list[bytes]]:
        return [[bytes.fromhex(f) for f in e["frames"]] for e in self.of("message", direction, conn)]

    def problems(self, conn: str = "1") -> list[tuple[str, str, str]]:
        return [(e["dir"], e["severity"], e["text"]) for e in self.of("expert", conn=conn) if e["severity"] != "note"]


def ours(socket_type: str, wire: Wire, log: EventLog | None = None, **options: Any) -> TcpPeer:
    return TcpPeer(socket_type, on_wire=wire, on_event=log, **options)


# ---------------------------------------------------------------- we connect to libzmq


def test_our_push_connects_to_libzmq_pull(lib: Libzmq) -> None:
    async def main() -> Wire:
        wire = Wire()
        pull = lib.socket("PULL")
        endpoint = pull.bind()
        async with ours("PUSH", wire) as push:
            push.connect(endpoint)
            await push.send([b"hello", b"world"])
            await push.send([b"x" * 70000])  # a 64-bit WebSocket payload length, masked by us
            assert await pull.recv() == [b"hello", b"world"]
            assert await pull.recv() == [b"x" * 70000]
        return wire

    wire = run(main())
    request, response = (e for e in wire.of("greeting"))
    assert request["protocols"] == ["ZWS2.0/NULL", "ZWS2.0"] and request["target"] == "/zmq"
    assert (response["status"], response["protocol"]) == (101, "ZWS2.0/NULL")
    assert [e["properties"]["Socket-Type"] for e in wire.of("command", "s2c")] == ["PULL"]
    assert wire.messages("c2s") == [[b"hello", b"world"], [b"x" * 70000]]
    assert wire.problems() == []


def test_our_dealer_and_libzmq_router_route_by_identity(lib: Libzmq) -> None:
    async def main() -> Wire:
        wire = Wire()
        router = lib.socket("ROUTER")
        endpoint = router.bind()
        async with ours("DEALER", wire, identity=b"client-1") as dealer:
            dealer.connect(endpoint)
            await dealer.send([b"", b"request"])
            assert await router.recv() == [b"client-1", b"", b"request"]
            await router.send([b"client-1", b"", b"reply"])
            assert await dealer.recv(timeout=TIMEOUT) == [b"", b"reply"]
        return wire

    wire = run(main())
    ready = wire.of("command", "c2s")[0]
    assert ready["properties"] == {"Socket-Type": "DEALER", "Identity": "client-1"}
    assert wire.messages("s2c") == [[b"", b"reply"]]
    assert wire.problems() == []


def test_our_client_offering_only_zws2_0_gets_routing_ids_from_libzmq(lib: Libzmq) -> None:
    """What a browser offers: ZWS2.0 without mechanism, where each side first sends its routing id."""
    async def main() -> Wire:
        wire = Wire()
        router = lib.socket("ROUTER")
        endpoint = router.bind()
        async with ours("DEALER", wire, identity=b"browser", zws_protocols=["ZWS2.0"]) as dealer:
            dealer.connect(endpoint)
            await dealer.send([b"hi"])
            assert await router.recv() == [b"browser", b"hi"]
            await router.send([b"browser", b"back"])
            assert await dealer.recv(timeout=TIMEOUT) == [b"back"]
        return wire

    wire = run(main())
    greetings = wire.of("greeting")
    assert {g["protocol"] for g in greetings} == {"ZWS2.0"} and {g["version"] for g in greetings} == {"2.0"}
    assert [g["identity"] for g in greetings if g["dir"] == "c2s" and "identity" in g] == [b"browser".hex()]
    assert wire.of("command") == []  # no mechanism: no handshake commands
    assert wire.problems() == []


def test_our_plain_client_with_a_libzmq_plain_server(lib: Libzmq) -> None:
    async def main() -> Wire:
        wire = Wire()
        lib.zap("admin", "secret")  # libzmq 4.3's PLAIN server fails every handshake without a ZAP handler
        rep = lib.socket("REP", plain_server=1)
        endpoint = rep.bind()
        async with ours("REQ", wire, mechanism="PLAIN", username="admin", password="secret") as req:
            req.connect(endpoint)
            await req.send([b"Hello"])
            assert await rep.recv() == [b"Hello"]
            await rep.send([b"World"])
            assert await req.recv(timeout=TIMEOUT) == [b"World"]
        return wire

    wire = run(main())
    assert [g["protocol"] for g in wire.of("greeting")] == ["ZWS2.0/PLAIN", "ZWS2.0/PLAIN"]
    assert [c["name"] for c in wire.of("command", "c2s")] == ["HELLO", "INITIATE"]
    assert [c["name"] for c in wire.of("command", "s2c")] == ["WELCOME", "READY"]
    assert wire.of("command", "c2s")[0]["username"] == "admin"
    assert wire.problems() == []


def test_our_sub_subscribes_to_a_libzmq_pub(lib: Libzmq) -> None:
    async def main() -> Wire:
        wire = Wire()
        pub = lib.socket("PUB")
        endpoint = pub.bind()
        async with ours("SUB", wire) as sub:
            sub.subscribe(b"weather")
            sub.connect(endpoint)
            await sub.wait_ready(1, timeout=TIMEOUT)
            got = None
            for _ in range(200):  # the slow joiner: libzmq drops until our subscription has arrived
                await pub.send([b"sports", b"3-1"])
                await pub.send([b"weather", b"sunny"])
                try:
                    got = await sub.recv(timeout=0.05)
                    break
                except TimeoutError:
                    continue
            assert got == [b"weather", b"sunny"]
        return wire

    wire = run(main())
    assert wire.messages("c2s")[0] == [b"\x01weather"]  # 45/ZWS: a %x01-prefixed message
    assert all(m[0] == b"weather" for m in wire.messages("s2c"))
    notes = [e["text"] for e in wire.of("expert", "c2s")]
    assert "subscribe 'weather' as a prefixed message (ZWS)" in notes


# ---------------------------------------------------------------- libzmq connects to us


def test_libzmq_push_connects_to_our_pull(lib: Libzmq) -> None:
    async def main() -> Wire:
        wire = Wire()
        async with ours("PULL", wire) as pull:
            endpoint = await pull.bind("ws://127.0.0.1:0/zmq")
            push = lib.socket("PUSH")
            push.connect(endpoint)
            await push.send([b"from", b"libzmq"])
            await push.send([b"y" * 300])
            assert await pull.recv(timeout=TIMEOUT) == [b"from", b"libzmq"]
            assert await pull.recv(timeout=TIMEOUT) == [b"y" * 300]
        return wire

    wire = run(main())
    request = wire.of("greeting", "c2s")[0]
    assert request["protocols"] == ["ZWS2.0/NULL", "ZWS2.0"] and request["target"] == "/zmq"
    fields = {f["name"]: f["value"] for f in request["fields"]}
    assert fields["Sec-WebSocket-Protocol"] == "ZWS2.0/NULL,ZWS2.0"  # libzmq's own offer, as it wrote it
    assert wire.of("greeting", "s2c")[0]["protocol"] == "ZWS2.0/NULL"
    assert [c["properties"]["Socket-Type"] for c in wire.of("command", "c2s")] == ["PUSH"]
    frames = wire.of("frame", "c2s")
    assert frames[0]["fields"][2]["name"] == "masking-key"  # libzmq masks as a client must
    assert wire.messages("c2s") == [[b"from", b"libzmq"], [b"y" * 300]]
    assert wire.problems() == []


def test_libzmq_router_and_our_dealer_server_with_a_browser_s_choice(lib: Libzmq) -> None:
    """We accept only ZWS2.0 (a browser's kind of offer, served): libzmq falls back from ZWS2.0/NULL to it."""
    async def main() -> Wire:
        wire = Wire()
        async with ours("DEALER", wire, identity=b"server-1", zws_protocols=["ZWS2.0"]) as dealer:
            endpoint = await dealer.bind("ws://127.0.0.1:0/")
            router = lib.socket("ROUTER", routing_id="r")
            router.connect(endpoint)
            await dealer.wait_ready(1, timeout=TIMEOUT)
            await dealer.send([b"to router"])
            assert await router.recv() == [b"server-1", b"to router"]
            await router.send([b"server-1", b"to dealer"])
            assert await dealer.recv(timeout=TIMEOUT) == [b"to dealer"]
        return wire

    wire = run(main())
    assert {g["protocol"] for g in wire.of("greeting")} == {"ZWS2.0"}
    ids = {g["dir"]: g["identity"] for g in wire.of("greeting") if "identity" in g}
    assert ids == {"c2s": b"r".hex(), "s2c": b"server-1".hex()}
    assert wire.problems() == []


def test_libzmq_plain_client_with_our_plain_server(lib: Libzmq) -> None:
    async def main() -> tuple[Wire, EventLog]:
        wire, log = Wire(), EventLog()
        async with ours("REP", wire, log, mechanism="PLAIN", plain_server=True, username="admin",
                        password="secret") as rep:
            endpoint = await rep.bind("ws://127.0.0.1:0/zmq")
            req = lib.socket("REQ", plain_username="admin", plain_password="secret")
            req.connect(endpoint)
            await req.send([b"Hello"])
            assert await rep.recv(timeout=TIMEOUT) == [b"Hello"]
            await rep.send([b"World"])
            assert await req.recv() == [b"World"]
        return wire, log

    wire, log = run(main())
    assert [e["user_id"] for e in log.what("handshake")] == ["admin"]
    assert wire.of("greeting", "c2s")[0]["protocols"] == ["ZWS2.0/PLAIN"]
    assert wire.problems() == []


def test_libzmq_heartbeats_are_websocket_pings_we_answer(lib: Libzmq) -> None:
    async def main() -> tuple[Wire, EventLog]:
        wire, log = Wire(), EventLog()
        # (long timeouts, ours and libzmq's: a loaded machine can hold a pong past one interval)
        async with ours("PAIR", wire, log, heartbeat_ivl=0.05, heartbeat_timeout=TIMEOUT) as pair:
            endpoint = await pair.bind("ws://127.0.0.1:0/")
            theirs = lib.socket("PAIR", heartbeat_ivl=50, heartbeat_timeout=int(TIMEOUT * 1000))
            theirs.connect(endpoint)
            await pair.wait_for(lambda: len(log.what("ping")) >= 2 and len(log.what("pong")) >= 2, timeout=TIMEOUT)
        return wire, log

    wire, log = run(main())
    assert {e["context"] for e in log.what("ping")} == {""}  # libzmq's pings carry nothing
    names = {(c["dir"], c["name"]) for c in wire.of("command")}
    assert {("c2s", "WS-PING"), ("s2c", "WS-PONG"), ("s2c", "WS-PING"), ("c2s", "WS-PONG")} <= names
    assert wire.problems() == []


def test_libzmq_push_to_our_push_is_refused(lib: Libzmq) -> None:
    async def main() -> tuple[Wire, EventLog]:
        wire, log = Wire(), EventLog()
        async with ours("PUSH", wire, log) as push:
            endpoint = await push.bind("ws://127.0.0.1:0/")
            theirs = lib.socket("PUSH")
            theirs.connect(endpoint)
            await push.wait_for(lambda: bool(log.what("closed")), timeout=TIMEOUT)
        return wire, log

    wire, log = run(main())
    # Both sides refuse; whichever reads the other's READY first closes (libzmq does, silently, as 45/ZWS says).
    assert log.what("closed")[0]["error"]
    assert not log.what("handshake")
    assert [c["properties"]["Socket-Type"] for c in wire.of("command", "s2c")] == ["PUSH"]


# ---------------------------------------------------------------- zmtplab peer


def test_zmtplab_peer_over_ws_with_libzmq(lib: Libzmq) -> None:
    pull = lib.socket("PULL")
    endpoint = pull.bind()
    out = subprocess.run([sys.executable, "-m", "zmtplab.cli", "peer", "PUSH", endpoint, "--connect", "--send",
                          "hello,world", "--jsonl", "--timeout", "20"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert run(LSocket(lib, pull.name).recv()) == [b"hello", b"world"]
    events = [json.loads(line) for line in out.stdout.splitlines()]
    greetings = [e for e in events if e["kind"] == "greeting"]
    assert [(g["dir"], g["transport"], g["protocol"]) for g in greetings] == [
        ("c2s", "zws", "ZWS2.0/NULL"), ("s2c", "zws", "ZWS2.0/NULL")]
    assert [e["frames"] for e in events if e["kind"] == "message" and e["dir"] == "c2s"] == [
        [b"hello".hex(), b"world".hex()]]
    handshake = [e for e in events if e.get("what") == "handshake"]
    assert handshake and handshake[0]["version"] == "ZWS2.0/NULL" and handshake[0]["peer_socket_type"] == "PULL"
