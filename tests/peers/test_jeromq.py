"""Our TCP peers against JeroMQ, an independent (pure Java) ZeroMQ, both roles, dissecting both directions.

Debian 12's `libjeromq-java` is JeroMQ 0.3.6, a port of libzmq 3.2: it speaks ZMTP 2.0 (15/ZMTP)
and detects 1.0 peers, with no security mechanisms at all. So every connection here is a
downgrade: our 3.1 peers announce 3, read JeroMQ's revision 1 and finish with a 2.0 greeting
(23/ZMTP "Detecting ZMTP 1.0 and 2.0 Peers"), a path libzmq 4.3 never takes as the older side.
PLAIN and CURVE cannot be tried against it; what it does instead is checked below. The JeroMQ
side is tests/peers/jeromq/ZPeer.java, compiled once per session, one JVM for every scenario.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from test_sample_captures import load_record_module
from zmtplab.capture.tap import TapProxy
from zmtplab.engine import ConnectionDissector
from zmtplab.peers.tcp import TcpPeer, parse_endpoint

from .conftest import (
    MIB,
    TIMEOUT,
    EventLog,
    LineDriven,
    LineSocket,
    run,
    zbind,
    zmq_context,
    zrecv,
    zsend,
    zsock,
)

pytestmark = pytest.mark.interop

JAR = Path("/usr/share/java/jeromq.jar")
SOURCE = Path(__file__).parent / "jeromq" / "ZPeer.java"
TYPE_OCTET = {"PAIR": 0, "PUB": 1, "SUB": 2, "REQ": 3, "REP": 4, "DEALER": 5, "ROUTER": 6, "PULL": 7, "PUSH": 8,
              "XPUB": 9, "XSUB": 10}  # as JeroMQ (and libzmq 3.2) put them on the wire
DOWNGRADED = "a 3.x peer downgraded to ZMTP 2.0: revision 3, then 2.0 socket type and identity"
PSEUDO_SIGNATURE = "a 2.0/3.x peer's pseudo-signature read as a 1.0 identity frame header (23/ZMTP)"
SETUP = "scripts/install-system-deps.sh installs them (libjeromq-java, openjdk-17-jdk-headless)"


class JeroMQ(LineDriven):
    """One JVM running ZPeer: JeroMQ sockets driven by one command line each (see ZPeer.java)."""

    what = "ZPeer"

    def __init__(self, classes: Path) -> None:
        super().__init__(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", f"{classes}:{JAR}", "ZPeer"])

    def socket(self, socket_type: str, identity: bytes = b"") -> JSocket:
        return JSocket(self, self.new(socket_type, identity.hex()))


class JSocket(LineSocket):
    """One JeroMQ socket in the ZPeer JVM."""

    def bind(self) -> str:
        return self.helper.call("bind", self.name, "127.0.0.1")


@pytest.fixture(scope="session")
def jvm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JeroMQ]:
    """ZPeer compiled once and started once for the session."""
    javac = shutil.which("javac")
    if javac is None or shutil.which("java") is None or not JAR.exists():
        pytest.fail(f"JeroMQ tests need javac, java and {JAR}: {SETUP}")
    classes = tmp_path_factory.mktemp("jeromq")
    subprocess.run([javac, "-Xlint:all", "-Werror", "-cp", str(JAR), "-d", str(classes), str(SOURCE)], check=True)
    jvm = JeroMQ(classes)
    try:
        yield jvm
    finally:
        jvm.quit()


@pytest.fixture
def jq(jvm: JeroMQ) -> Iterator[JeroMQ]:
    """The session's JeroMQ; the sockets a test opens are closed after it."""
    try:
        yield jvm
    finally:
        jvm.close_all()


class Wire:
    """Dissects both directions of every connection of one of our peers (its `on_wire`)."""

    def __init__(self) -> None:
        self.dissectors: dict[str, ConnectionDissector] = {}
        self.events: dict[str, list[tuple[str, Any]]] = {}
        self.raw: dict[tuple[str, str], bytearray] = {}

    def __call__(self, conn: str, direction: str, data: bytes) -> None:
        dissector = self.dissectors.get(conn)
        if dissector is None:
            dissector = self.dissectors[conn] = ConnectionDissector()
            self.events[conn] = []
        self.raw.setdefault((conn, direction), bytearray()).extend(data)
        self.events[conn].extend(dissector.receive_data(direction, data))

    def of(self, kind: str, conn: str = "1", direction: str | None = None) -> list[Any]:
        return [e for d, e in self.events[conn] if e.kind == kind and direction in (None, d)]

    def greeting(self, direction: str, conn: str = "1") -> Any:
        (greeting,) = self.of("greeting", conn, direction)
        return greeting

    def messages(self, direction: str, conn: str = "1") -> list[list[bytes]]:
        return [[part.body for part in m.parts] for m in self.of("message", conn, direction)]

    def experts(self, conn: str = "1") -> list[tuple[str, str, str]]:
        return [(d, e.severity, e.text) for d, e in self.events[conn] if e.kind == "expert"]

    def problems(self, conn: str = "1") -> list[tuple[str, str, str]]:
        """The experts that are not mere notes (warnings and errors)."""
        return [e for e in self.experts(conn) if e[1] != "note"]


async def _pair_up(ours: TcpPeer, theirs: JSocket, ours_binds: bool) -> None:
    """Binds one side, connects the other, waits for our handshake."""
    if ours_binds:
        theirs.connect(await ours.bind("tcp://127.0.0.1:0"))
    else:
        ours.connect(theirs.bind())
    await ours.wait_ready(1, timeout=TIMEOUT)


def _by_direction(events: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Event dicts per direction, without what differs between sources (conn, dir, capture times)."""
    out: dict[str, list[dict[str, Any]]] = {"c2s": [], "s2c": []}
    for event in events:
        out[event["dir"]].append({k: v for k, v in event.items() if k not in ("conn", "dir", "t", "ts")})
    return out


def _to_first_message(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events up to and including the first message (a publisher retrying may send more)."""
    kinds = [e["kind"] for e in events]
    return events[:kinds.index("message") + 1] if "message" in kinds else events


def _dirs(ours_binds: bool) -> tuple[str, str]:
    """(our direction, JeroMQ's direction): c2s is from the connecting side."""
    return ("s2c", "c2s") if ours_binds else ("c2s", "s2c")


# ---------------------------------------------------------------- PUSH/PULL


@pytest.mark.parametrize("ours_binds", [True, False], ids=["ours-bind", "ours-connect"])
@pytest.mark.parametrize("ours_type", ["PUSH", "PULL"])
def test_push_pull(jq: JeroMQ, ours_type: str, ours_binds: bool) -> None:
    async def main() -> None:
        their_type = "PULL" if ours_type == "PUSH" else "PUSH"
        theirs = jq.socket(their_type)
        wire = Wire()
        async with TcpPeer(ours_type, on_wire=wire) as ours:
            await _pair_up(ours, theirs, ours_binds)
            messages = [[b"hello"], [b"multi", b"", b"frame" * 100], [MIB, b"tail"]]
            for msg in messages:
                if ours_type == "PUSH":
                    await ours.send(msg, timeout=TIMEOUT)
                    assert await theirs.recv() == msg
                else:
                    await theirs.send(msg)
                    assert await ours.recv(timeout=TIMEOUT) == msg
        mine, jeromq = _dirs(ours_binds)
        theirs_g, ours_g = wire.greeting(jeromq), wire.greeting(mine)
        # JeroMQ: 15/ZMTP's greeting, padding identity length + 1, revision 1; ours: the downgrade (revision 3).
        assert theirs_g.raw == b"\xff" + bytes(7) + b"\x01\x7f\x01" + bytes([TYPE_OCTET[their_type]]) + b"\x00\x00"
        assert (theirs_g.version, theirs_g.socket_type, theirs_g.identity) == ("2.0", their_type, b"")
        assert ours_g.raw == b"\xff" + bytes(7) + b"\x01\x7f\x03" + bytes([TYPE_OCTET[ours_type]]) + b"\x00\x00"
        assert wire.experts() == [(mine, "note", DOWNGRADED)]
        sent = mine if ours_type == "PUSH" else jeromq
        assert wire.messages(sent) == messages
        frames = wire.of("frame", direction=sent)
        assert [f.framing for f in frames] == ["2"] * 6
        assert [f.flags for f in frames] == [0, 1, 1, 2, 3, 0]  # MORE 1, LONG 2: frames over 255 octets

    run(main())


# ---------------------------------------------------------------- DEALER/ROUTER


def test_our_dealer_with_identity_to_jeromq_router(jq: JeroMQ) -> None:
    async def main() -> None:
        router = jq.socket("ROUTER")
        wire = Wire()
        async with TcpPeer("DEALER", identity=b"ours-1", on_wire=wire) as dealer:
            await _pair_up(dealer, router, ours_binds=False)
            await dealer.send([b"", b"request"])
            assert await router.recv() == [b"ours-1", b"", b"request"]
            await router.send([b"ours-1", b"", b"reply"])
            assert await dealer.recv(timeout=TIMEOUT) == [b"", b"reply"]
        ours_g = wire.greeting("c2s")
        assert (ours_g.socket_type, ours_g.identity) == ("DEALER", b"ours-1")
        assert ours_g.raw[1:9] == (len(b"ours-1") + 1).to_bytes(8, "big")  # the 1.0-compatible padding
        assert wire.greeting("s2c").socket_type == "ROUTER"
        assert wire.messages("c2s") == [[b"", b"request"]]
        assert wire.messages("s2c") == [[b"", b"reply"]]
        assert wire.experts() == [("c2s", "note", DOWNGRADED)]

    run(main())


def test_jeromq_dealers_to_our_router_identities_and_routing(jq: JeroMQ) -> None:
    async def main() -> None:
        named, anonymous = jq.socket("DEALER", identity=b"jq-1"), jq.socket("DEALER")
        wire = Wire()
        async with TcpPeer("ROUTER", on_wire=wire) as router:
            endpoint = await router.bind("tcp://127.0.0.1:0")
            named.connect(endpoint)
            anonymous.connect(endpoint)
            await router.wait_ready(2, timeout=TIMEOUT)
            await named.send([b"from named"])
            await anonymous.send([b"from anonymous"])
            got = {}
            for _ in range(2):
                frames = await router.recv(timeout=TIMEOUT)
                got[frames[1]] = frames[0]
            assert got[b"from named"] == b"jq-1"
            generated = got[b"from anonymous"]
            assert len(generated) == 5 and generated[0] == 0
            await router.send([generated, b"to anonymous"])
            await router.send([b"jq-1", b"to named"])
            assert await named.recv() == [b"to named"]
            assert await anonymous.recv() == [b"to anonymous"]
        identities = sorted(wire.greeting("c2s", conn).identity for conn in wire.events)
        assert identities == [b"", b"jq-1"]
        for conn in wire.events:
            assert wire.greeting("c2s", conn).raw[10] == 1 and wire.greeting("s2c", conn).raw[10] == 3
            assert wire.experts(conn) == [("s2c", "note", DOWNGRADED)]

    run(main())


def test_jeromq_router_connects_to_our_dealer(jq: JeroMQ) -> None:
    async def main() -> None:
        router = jq.socket("ROUTER")
        wire = Wire()
        async with TcpPeer("DEALER", identity=b"bound-dealer", on_wire=wire) as dealer:
            router.connect(await dealer.bind("tcp://127.0.0.1:0"))
            await dealer.wait_ready(1, timeout=TIMEOUT)
            await dealer.send([b"hi router"])
            assert await router.recv() == [b"bound-dealer", b"hi router"]
            await router.send([b"bound-dealer", b"hi dealer"])
            assert await dealer.recv(timeout=TIMEOUT) == [b"hi dealer"]
        assert wire.greeting("s2c").identity == b"bound-dealer" and wire.greeting("c2s").identity == b""
        assert wire.messages("s2c") == [[b"hi router"]] and wire.messages("c2s") == [[b"hi dealer"]]
        assert wire.experts() == [("s2c", "note", DOWNGRADED)]

    run(main())


def test_our_anonymous_dealer_gets_a_jeromq_generated_identity(jq: JeroMQ) -> None:
    async def main() -> None:
        router = jq.socket("ROUTER")
        wire = Wire()
        async with TcpPeer("DEALER", on_wire=wire) as dealer:
            await _pair_up(dealer, router, ours_binds=False)
            await dealer.send([b"who am I"])
            generated, body = await router.recv()
            assert body == b"who am I" and len(generated) == 5 and generated[0] == 0  # libzmq 3.2's form
            await router.send([generated, b"you are " + generated.hex().encode()])
            assert await dealer.recv(timeout=TIMEOUT) == [b"you are " + generated.hex().encode()]
        assert wire.greeting("c2s").identity == b""  # the generated identity never crosses the wire
        assert wire.messages("s2c") == [[b"you are " + generated.hex().encode()]]
        assert wire.experts() == [("c2s", "note", DOWNGRADED)]

    run(main())


# ---------------------------------------------------------------- REQ/REP


@pytest.mark.parametrize("ours_binds", [True, False], ids=["ours-bind", "ours-connect"])
def test_our_req_to_jeromq_rep(jq: JeroMQ, ours_binds: bool) -> None:
    async def main() -> None:
        rep = jq.socket("REP")
        wire = Wire()
        async with TcpPeer("REQ", on_wire=wire) as req:
            await _pair_up(req, rep, ours_binds)
            for i in range(3):
                await req.send([b"Hello %d" % i])
                assert await rep.recv() == [b"Hello %d" % i]
                await rep.send([b"World %d" % i])
                assert await req.recv(timeout=TIMEOUT) == [b"World %d" % i]
        mine, jeromq = _dirs(ours_binds)
        assert wire.messages(mine) == [[b"", b"Hello %d" % i] for i in range(3)]  # REQ's empty delimiter
        assert wire.messages(jeromq) == [[b"", b"World %d" % i] for i in range(3)]
        assert wire.problems() == []

    run(main())


@pytest.mark.parametrize("ours_binds", [True, False], ids=["ours-bind", "ours-connect"])
def test_jeromq_req_to_our_rep(jq: JeroMQ, ours_binds: bool) -> None:
    async def main() -> None:
        req = jq.socket("REQ")
        wire = Wire()
        async with TcpPeer("REP", on_wire=wire) as rep:
            await _pair_up(rep, req, ours_binds)
            for i in range(3):
                await req.send([b"Hello %d" % i, b"second part"])
                assert await rep.recv(timeout=TIMEOUT) == [b"Hello %d" % i, b"second part"]
                await rep.send([b"World %d" % i])
                assert await req.recv() == [b"World %d" % i]
        mine, jeromq = _dirs(ours_binds)
        assert wire.messages(jeromq) == [[b"", b"Hello %d" % i, b"second part"] for i in range(3)]
        assert wire.messages(mine) == [[b"", b"World %d" % i] for i in range(3)]
        assert wire.problems() == []

    run(main())


# ---------------------------------------------------------------- PUB/SUB


def test_jeromq_sub_to_our_pub_filtering_subscribe_and_cancel(jq: JeroMQ) -> None:
    async def main() -> None:
        sub = jq.socket("SUB")
        log = EventLog()
        wire = Wire()
        async with TcpPeer("PUB", on_event=log, on_wire=wire) as pub:
            sub.connect(await pub.bind("tcp://127.0.0.1:0"))
            sub.subscribe(b"weather")
            socket = pub.core.socket
            await pub.wait_for(lambda: any(b"weather" in p.topics for p in socket.pipes.values()), TIMEOUT)
            await pub.send([b"sports", b"3-1"])  # filtered at the publisher
            await pub.send([b"weather", b"sunny"])
            assert await sub.recv() == [b"weather", b"sunny"]
            sub.unsubscribe(b"weather")
            await pub.wait_for(lambda: not any(p.topics for p in socket.pipes.values()), TIMEOUT)
            await pub.send([b"weather", b"rain"])
            with pytest.raises(TimeoutError):
                await sub.recv(timeout=0.3)
        subs = [(e["topic"], e["subscribe"]) for e in log.what("subscription")]
        assert subs == [(b"weather".hex(), True), (b"weather".hex(), False)]
        # 15/ZMTP: (un)subscriptions are messages, %x01 or %x00 and the topic.
        assert wire.messages("c2s") == [[b"\x01weather"], [b"\x00weather"]]
        assert wire.messages("s2c") == [[b"weather", b"sunny"]]
        assert wire.problems() == []

    run(main())


@pytest.mark.parametrize("ours_binds", [True, False], ids=["ours-bind", "ours-connect"])
def test_our_sub_to_jeromq_pub(jq: JeroMQ, ours_binds: bool) -> None:
    async def main() -> None:
        pub = jq.socket("PUB")
        wire = Wire()
        async with TcpPeer("SUB", on_wire=wire) as sub:
            sub.subscribe(b"t")
            await _pair_up(sub, pub, ours_binds)
            got = None
            for _ in range(100):  # the slow joiner: publish until the subscription has arrived
                await pub.send([b"x-ignored"])
                await pub.send([b"t-topic", b"data"])
                try:
                    got = await sub.recv(timeout=0.05)
                    break
                except TimeoutError:
                    continue
            assert got == [b"t-topic", b"data"]
        mine, jeromq = _dirs(ours_binds)
        assert wire.messages(mine) == [[b"\x01t"]]
        assert [b"x-ignored"] not in wire.messages(jeromq)  # JeroMQ filters at the publisher, as libzmq 3.2
        assert wire.problems() == []

    run(main())


def test_our_xpub_and_xsub_go_on_the_wire_as_pub_and_sub(jq: JeroMQ) -> None:
    async def main() -> None:
        sub, pub = jq.socket("SUB"), jq.socket("PUB")
        wire_xpub, wire_xsub = Wire(), Wire()
        async with TcpPeer("XPUB", on_wire=wire_xpub) as xpub, TcpPeer("XSUB", on_wire=wire_xsub) as xsub:
            sub.connect(await xpub.bind("tcp://127.0.0.1:0"))
            sub.subscribe(b"news")
            assert await xpub.recv(timeout=TIMEOUT) == [b"\x01news"]
            await xpub.send([b"news", b"today"])
            assert await sub.recv() == [b"news", b"today"]
            await _pair_up(xsub, pub, ours_binds=False)
            await xsub.send([b"\x01sport"])
            got = None
            for _ in range(100):  # until JeroMQ's PUB has taken the subscription
                await pub.send([b"sport", b"3-1"])
                try:
                    got = await xsub.recv(timeout=0.05)
                    break
                except TimeoutError:
                    continue
            assert got == [b"sport", b"3-1"]
        # 15/ZMTP: XPUB and XSUB exist only in the API; the wire says PUB (1) and SUB (2).
        assert wire_xpub.greeting("s2c").raw[11] == 1 and wire_xpub.greeting("s2c").socket_type == "PUB"
        assert wire_xsub.greeting("c2s").raw[11] == 2 and wire_xsub.greeting("c2s").socket_type == "SUB"
        assert wire_xpub.experts() == [("s2c", "note", DOWNGRADED),
                                       ("c2s", "note", "subscribe 'news' as a prefixed message (2.0 style)")]
        assert wire_xsub.experts() == [("c2s", "note", DOWNGRADED),
                                       ("c2s", "note", "subscribe 'sport' as a prefixed message (2.0 style)")]

    run(main())


@pytest.mark.parametrize("their_type", ["XPUB", "XSUB"])
def test_jeromq_xpub_and_xsub_announce_octets_15_zmtp_lacks(jq: JeroMQ, their_type: str) -> None:
    """JeroMQ, like libzmq 3.2, puts XPUB = 9 and XSUB = 10 on the wire; 15/ZMTP has 0-8 only and
    says the X types go as PUB and SUB. Our peers refuse the greeting (15/ZMTP: SHOULD disconnect)."""

    async def main() -> None:
        theirs = jq.socket(their_type)
        ours_type = "SUB" if their_type == "XPUB" else "PUB"
        wire, log = Wire(), EventLog()
        async with TcpPeer(ours_type, on_wire=wire, on_event=log) as ours:
            theirs.connect(await ours.bind("tcp://127.0.0.1:0"))
            await ours.wait_for(lambda: len(log.what("closed")) >= 2, timeout=TIMEOUT)  # and JeroMQ reconnects
            assert ours.ready_count() == 0
        octet = TYPE_OCTET[their_type]
        assert log.what("handshake") == []
        assert all(f"unknown 2.0 socket type octet {octet}" in e["reason"] and e["error"] for e in log.what("closed"))
        theirs_g = wire.greeting("c2s")
        assert theirs_g.raw[10:12] == bytes([1, octet]) and theirs_g.socket_type is None
        assert ("c2s", "error", f"unknown 2.0 socket type octet {octet}") in wire.experts()

    run(main())


@pytest.mark.parametrize(("their_type", "libzmq_type"), [("XSUB", "XPUB"), ("DEALER", "PULL")])
def test_libzmq_takes_what_we_refuse_from_jeromq(jq: JeroMQ, their_type: str, libzmq_type: str) -> None:
    """libzmq 4.3.5 never reads a 2.0 peer's socket type: it takes JeroMQ's XSUB (octet 10) and
    even an invalid pair (DEALER to PULL), both of which our peers refuse."""

    async def main() -> None:
        theirs = jq.socket(their_type)
        async with zmq_context() as ctx:
            libzmq = zsock(ctx, getattr(zmq, libzmq_type))
            theirs.connect(zbind(libzmq))
            await theirs.send([b"\x01news"])
            assert await zrecv(libzmq) == [b"\x01news"]

    run(main())


@pytest.mark.parametrize("socket_type", ["PULL", "DEALER", "SUB"])
def test_libzmq_and_we_downgrade_to_jeromq_alike(jq: JeroMQ, socket_type: str) -> None:
    """libzmq 4.3.5 through the tap proxy and our peer, each facing JeroMQ: the same greeting
    octets, the same dissection, the same frames."""
    their_type = {"PULL": "PUSH", "DEALER": "ROUTER", "SUB": "PUB"}[socket_type]
    options: dict[str, Any] = {"identity": b"me"} if socket_type == "DEALER" else {}

    async def exchange(theirs: JSocket, send: Any, recv: Any) -> None:
        """A message each way where the pattern has one (PUB/SUB: JeroMQ to the subscriber only)."""
        if socket_type == "DEALER":
            await send([b"to router"])
            assert await theirs.recv() == [b"me", b"to router"]
            await theirs.send([b"me", b"to dealer"])
            assert await recv() == [b"to dealer"]
            return
        for _ in range(100):  # PUB: until the subscription has arrived
            await theirs.send([b"topic", b"data"])
            try:
                assert await recv(0.05) == [b"topic", b"data"]
                return
            except TimeoutError:
                continue
        raise AssertionError("nothing arrived")

    async def main() -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
        seen: list[dict[str, Any]] = []
        theirs_lz, theirs_ours = jq.socket(their_type), jq.socket(their_type)
        tap_target = parse_endpoint(theirs_lz.bind(), bind=False)
        proxy = TapProxy(("127.0.0.1", 0), tap_target, seen.append)
        await proxy.start()
        try:
            async with zmq_context() as ctx:
                libzmq = zsock(ctx, getattr(zmq, socket_type), **options)
                if socket_type == "SUB":
                    libzmq.subscribe(b"")
                libzmq.connect(f"tcp://127.0.0.1:{proxy.port}")
                await exchange(theirs_lz, lambda f: zsend(libzmq, f), lambda t=TIMEOUT: zrecv(libzmq, t))
            wire = Wire()
            async with TcpPeer(socket_type, on_wire=wire, **options) as ours:
                if socket_type == "SUB":
                    ours.subscribe(b"")
                ours.connect(theirs_ours.bind())
                await ours.wait_ready(1, timeout=TIMEOUT)
                await exchange(theirs_ours, ours.send, lambda t=TIMEOUT: ours.recv(timeout=t))
        finally:
            await proxy.close()
        # Each direction on its own: how the two directions interleave depends on when each was read.
        return _by_direction(seen), _by_direction({"dir": d, **e.to_dict()} for d, e in wire.events["1"])

    via_libzmq, via_ours = run(main())
    for direction in ("c2s", "s2c"):
        assert _to_first_message(via_libzmq[direction]) == _to_first_message(via_ours[direction])
    assert [e["kind"] for e in via_ours["c2s"][:2]] == ["greeting", "expert"]  # the downgrade note
    identity = options.get("identity", b"")
    downgraded = (b"\xff" + bytes(7) + bytes([len(identity) + 1]) + b"\x7f\x03" + bytes([TYPE_OCTET[socket_type]])
                  + b"\x00" + bytes([len(identity)]) + identity)
    assert via_ours["c2s"][0]["hex"] == downgraded.hex()


# ---------------------------------------------------------------- heartbeats


def test_no_ping_on_a_2_0_connection(jq: JeroMQ) -> None:
    """ZMTP 2.0 has no commands: JeroMQ would read a PING's flags 0x04 as a message. We send none."""

    async def main() -> None:
        theirs = jq.socket("PAIR")
        wire, log = Wire(), EventLog()
        async with TcpPeer("PAIR", heartbeat_ivl=0.05, on_wire=wire, on_event=log) as ours:
            await _pair_up(ours, theirs, ours_binds=True)
            await asyncio.sleep(0.4)  # eight heartbeat intervals
            await ours.send([b"only", b"this"])
            assert await theirs.recv() == [b"only", b"this"]
            with pytest.raises(TimeoutError):
                await theirs.recv(timeout=0.2)
            assert ours.ready_count() == 1 and log.what("closed") == []
        assert log.what("ping-sent") == []
        assert wire.raw["1", "s2c"][14:] == b"\x01\x04only\x00\x04this"  # after the greeting, the one message
        assert wire.problems() == []

    run(main())


# ---------------------------------------------------------------- versions, socket types, security


@pytest.mark.parametrize("version", ["3.1", "3.0", "2.0", "1.0"])
def test_our_versions_against_jeromq(jq: JeroMQ, version: str) -> None:
    """JeroMQ detects 1.0 and answers 2.0 to everything newer: our peers at each version get through."""

    async def main() -> None:
        router = jq.socket("ROUTER")
        wire = Wire()
        async with TcpPeer("DEALER", identity=b"v" + version.encode(), version=version, on_wire=wire) as dealer:
            await _pair_up(dealer, router, ours_binds=False)
            await dealer.send([b"ping", b"x" * 300])
            assert await router.recv() == [b"v" + version.encode(), b"ping", b"x" * 300]
            await router.send([b"v" + version.encode(), b"pong"])
            assert await dealer.recv(timeout=TIMEOUT) == [b"pong"]
        ours_g, theirs_g = wire.greeting("c2s"), wire.greeting("s2c")
        expected = "1.0" if version == "1.0" else "2.0"
        assert (ours_g.version, theirs_g.version) == (expected, expected)
        assert ours_g.identity == b"v" + version.encode()
        assert wire.messages("c2s") == [[b"ping", b"x" * 300]]
        assert wire.messages("s2c") == [[b"pong"]]
        notes = {"2.0": [], "1.0": [("s2c", "note", PSEUDO_SIGNATURE)]}.get(version, [("c2s", "note", DOWNGRADED)])
        assert wire.experts() == notes
        if version == "1.0":  # 15/ZMTP: JeroMQ's 10 octets, %xFF, length 1 (identity + 1), %x7F, are a 1.0 frame header
            assert theirs_g.raw == b"\xff" + bytes(7) + b"\x01\x7f" and theirs_g.identity == b""

    run(main())


def test_jeromq_does_not_check_socket_types_we_do(jq: JeroMQ) -> None:
    """15/ZMTP: an implementation SHOULD refuse an invalid pair. JeroMQ 0.3.6 never looks at the
    peer's socket type; our PUSH refuses JeroMQ's PUSH, and the dissector names the invalid pair."""

    async def main() -> None:
        theirs = jq.socket("PUSH")
        wire, log = Wire(), EventLog()
        async with TcpPeer("PUSH", on_wire=wire, on_event=log) as ours:
            theirs.connect(await ours.bind("tcp://127.0.0.1:0"))
            await ours.wait_for(lambda: bool(log.what("closed")), timeout=TIMEOUT)
            assert ours.ready_count() == 0
        closed = log.what("closed")[0]
        assert closed["error"] and "PUSH socket cannot talk to PUSH" in closed["reason"]
        assert log.what("handshake") == []
        assert wire.greeting("c2s").socket_type == "PUSH" and wire.greeting("s2c").socket_type == "PUSH"
        assert ("c2s", "error", "invalid socket pair: client PUSH cannot talk to server PUSH (23/ZMTP socket-type "
                "table)") in wire.experts()

    run(main())


@pytest.mark.parametrize("mechanism", ["PLAIN", "CURVE"])
def test_our_secure_client_refuses_jeromq(jq: JeroMQ, mechanism: str) -> None:
    """JeroMQ 0.3.6 speaks ZMTP 2.0, which has no security mechanisms: a PLAIN or CURVE client must not
    fall back to clear text (23/ZMTP: a 2.0 peer can only be talked to with NULL)."""

    async def main() -> None:
        rep = jq.socket("REP")
        options = ({"username": "admin", "password": "secret"} if mechanism == "PLAIN"
                   else {"curve_serverkey": "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"})
        wire, log = Wire(), EventLog()
        async with TcpPeer("REQ", mechanism=mechanism, on_wire=wire, on_event=log, **options) as req:
            req.connect(rep.bind())
            await req.wait_for(lambda: bool(log.what("closed")), timeout=TIMEOUT)
            assert req.ready_count() == 0
        closed = log.what("closed")[0]
        assert closed["reason"] == f"peer speaks ZMTP 2.0, which cannot do {mechanism}"
        assert log.what("handshake") == []
        # We sent the signature and our major version, read JeroMQ's revision 1, and stopped: no
        # mechanism name, no credentials, no clear-text fallback.
        assert wire.raw["1", "c2s"] == b"\xff" + bytes(7) + b"\x01\x7f\x03"
        assert wire.raw["1", "s2c"][:11] == b"\xff" + bytes(7) + b"\x01\x7f\x01"  # then REP's 4, maybe

    run(main())


def test_jeromq_client_refused_by_our_plain_server(jq: JeroMQ) -> None:
    async def main() -> None:
        req = jq.socket("REQ")
        wire, log = Wire(), EventLog()
        async with TcpPeer("REP", mechanism="PLAIN", plain_server=True, plain_users={"admin": "secret"},
                           on_wire=wire, on_event=log) as server:
            req.connect(await server.bind("tcp://127.0.0.1:0"))
            await server.wait_for(lambda: bool(log.what("closed")), timeout=TIMEOUT)
            await req.send([b"let me in"])  # queued on JeroMQ's side: it never reaches us
            with pytest.raises(TimeoutError):
                await server.recv(timeout=0.3)
            assert server.ready_count() == 0
        closed = log.what("closed")[0]
        assert closed["error"] and closed["reason"] == "peer speaks ZMTP 2.0, which cannot do PLAIN"
        assert wire.raw["1", "s2c"] == b"\xff" + bytes(7) + b"\x01\x7f\x03"
        assert wire.raw["1", "c2s"][:11] == b"\xff" + bytes(7) + b"\x01\x7f\x01"  # then REQ's 3, maybe

    run(main())


# ---------------------------------------------------------------- a capture of JeroMQ alone


@pytest.mark.capture
def test_jeromq_to_jeromq_captured_and_dissected(jq: JeroMQ, tmp_path: Path) -> None:
    """Two JeroMQ sockets, none of ours: dumpcap records them, `zmtplab dissect` reads the capture."""
    record = load_record_module()  # captures/record.py: its Dumpcap
    push, pull = jq.socket("PUSH"), jq.socket("PULL", identity=b"jq-pull")
    endpoint = pull.bind()
    out = tmp_path / "jeromq.pcapng"

    async def main() -> None:
        push.connect(endpoint)
        await push.send([b"hello", b"", b"x" * 300])  # (small: a MiB would show TCP's zero windows too)
        assert await pull.recv() == [b"hello", b"", b"x" * 300]
        jq.call("close", push.name)  # the TCP teardown goes on the wire too
        jq.open.remove(push.name)
        await asyncio.sleep(0.2)

    with record.Dumpcap(int(endpoint.rsplit(":", 1)[1]), out):
        run(main())
    result = subprocess.run([str(Path(sys.executable).with_name("zmtplab")), "dissect", str(out), "--jsonl",
                             "--no-fields"], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    greetings = {e["dir"]: e for e in events if e["kind"] == "greeting"}
    assert {d: (g["version"], g["socket_type"], g["identity"], g["hex"][20:24]) for d, g in greetings.items()} == {
        "c2s": ("2.0", "PUSH", "", "0108"), "s2c": ("2.0", "PULL", b"jq-pull".hex(), "0107")}
    (message,) = [e for e in events if e["kind"] == "message"]
    assert (message["dir"], message["frames"]) == ("c2s", [b"hello".hex(), "", (b"x" * 300).hex()])
    assert [e for e in events if e["kind"] in ("expert", "gap")] == []
