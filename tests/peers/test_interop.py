"""Our TCP peers against libzmq 4.3.5 (through pyzmq), both roles and both directions, on 127.0.0.1."""

from __future__ import annotations

import asyncio

import pytest
import zmq
import zmq.auth.asyncio

from zmtplab.engine import z85_encode
from zmtplab.peers.tcp import TcpPeer

from .conftest import MIB, TIMEOUT, EventLog, run, zbind, zmq_context, zrecv, zsend, zsock

pytestmark = pytest.mark.interop

Z = {name: getattr(zmq, name) for name in ("PUSH", "PULL", "DEALER", "ROUTER", "REQ", "REP", "PUB", "SUB", "XPUB",
                                           "XSUB", "PAIR")}


async def _pair_up(ours: TcpPeer, theirs, ours_binds: bool) -> None:
    """Binds one side, connects the other, waits for our handshake."""
    if ours_binds:
        endpoint = await ours.bind("tcp://127.0.0.1:0")
        theirs.connect(endpoint)
    else:
        ours.connect(zbind(theirs))
    await ours.wait_ready(1, timeout=TIMEOUT)


# ---------------------------------------------------------------- PUSH/PULL, large and multi-frame messages


@pytest.mark.parametrize("ours_binds", [True, False], ids=["ours-bind", "ours-connect"])
@pytest.mark.parametrize("ours_type", ["PUSH", "PULL"])
def test_push_pull(ours_type: str, ours_binds: bool) -> None:
    async def main() -> None:
        their_type = "PULL" if ours_type == "PUSH" else "PUSH"
        async with zmq_context() as ctx:
            theirs = zsock(ctx, Z[their_type])
            async with TcpPeer(ours_type) as ours:
                await _pair_up(ours, theirs, ours_binds)
                messages = [[b"hello"], [b"multi", b"", b"frame" * 100], [MIB], [MIB, b"tail", MIB[:300]]]
                for msg in messages:
                    if ours_type == "PUSH":
                        await ours.send(msg, timeout=TIMEOUT)
                        assert await zrecv(theirs) == msg
                    else:
                        await zsend(theirs, msg)
                        assert await ours.recv(timeout=TIMEOUT) == msg

    run(main())


def test_many_messages_both_ways_keep_order() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            theirs = zsock(ctx, zmq.PULL)
            async with TcpPeer("PUSH", sndhwm=100) as ours:
                await _pair_up(ours, theirs, ours_binds=False)
                for i in range(3000):
                    await ours.send([b"%d" % i, b"x" * (i % 300)], timeout=TIMEOUT)
                for i in range(3000):
                    assert await zrecv(theirs) == [b"%d" % i, b"x" * (i % 300)]

    run(main())


# ---------------------------------------------------------------- DEALER/ROUTER


def test_our_dealer_with_identity_to_libzmq_router() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            router = zsock(ctx, zmq.ROUTER)
            async with TcpPeer("DEALER", identity=b"ours-1") as dealer:
                await _pair_up(dealer, router, ours_binds=False)
                await dealer.send([b"", b"request"])
                assert await zrecv(router) == [b"ours-1", b"", b"request"]
                await zsend(router, [b"ours-1", b"", b"reply"])
                assert await dealer.recv(timeout=TIMEOUT) == [b"", b"reply"]

    run(main())


def test_libzmq_dealers_to_our_router_identities_and_routing() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            named = zsock(ctx, zmq.DEALER, identity=b"lz-1")
            anonymous = zsock(ctx, zmq.DEALER)
            async with TcpPeer("ROUTER") as router:
                endpoint = await router.bind("tcp://127.0.0.1:0")
                named.connect(endpoint)
                anonymous.connect(endpoint)
                await router.wait_ready(2, timeout=TIMEOUT)
                await zsend(named, [b"from named"])
                await zsend(anonymous, [b"from anonymous"])
                got = {}
                for _ in range(2):
                    frames = await router.recv(timeout=TIMEOUT)
                    got[frames[1]] = frames[0]
                assert got[b"from named"] == b"lz-1"
                generated = got[b"from anonymous"]
                assert len(generated) == 5 and generated[0] == 0  # libzmq's generated form
                await router.send([generated, b"to anonymous"])
                await router.send([b"lz-1", b"to named"])
                await router.send([b"nobody", b"dropped"])  # unknown identity: silently dropped
                assert await zrecv(named) == [b"to named"]
                assert await zrecv(anonymous) == [b"to anonymous"]

    run(main())


def test_libzmq_router_connects_to_our_dealer() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            router = zsock(ctx, zmq.ROUTER)
            async with TcpPeer("DEALER", identity=b"bound-dealer") as dealer:
                endpoint = await dealer.bind("tcp://127.0.0.1:0")
                router.connect(endpoint)
                await dealer.wait_ready(1, timeout=TIMEOUT)
                await dealer.send([b"hi router"])
                assert await zrecv(router) == [b"bound-dealer", b"hi router"]
                await zsend(router, [b"bound-dealer", b"hi dealer"])
                assert await dealer.recv(timeout=TIMEOUT) == [b"hi dealer"]

    run(main())


# ---------------------------------------------------------------- REQ/REP


@pytest.mark.parametrize("ours_binds", [True, False], ids=["ours-bind", "ours-connect"])
def test_our_req_to_libzmq_rep(ours_binds: bool) -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            rep = zsock(ctx, zmq.REP)
            async with TcpPeer("REQ") as req:
                await _pair_up(req, rep, ours_binds)
                for i in range(3):
                    await req.send([b"Hello %d" % i])
                    assert await zrecv(rep) == [b"Hello %d" % i]
                    await zsend(rep, [b"World %d" % i])
                    assert await req.recv(timeout=TIMEOUT) == [b"World %d" % i]

    run(main())


def test_libzmq_req_to_our_rep() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            req = zsock(ctx, zmq.REQ)
            async with TcpPeer("REP") as rep:
                await _pair_up(rep, req, ours_binds=True)
                for i in range(3):
                    await zsend(req, [b"Hello %d" % i, b"second part"])
                    assert await rep.recv(timeout=TIMEOUT) == [b"Hello %d" % i, b"second part"]
                    await rep.send([b"World %d" % i])
                    assert await zrecv(req) == [b"World %d" % i]

    run(main())


# ---------------------------------------------------------------- PUB/SUB, XPUB/XSUB


def test_libzmq_sub_to_our_pub_filtering_subscribe_and_cancel() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            sub = zsock(ctx, zmq.SUB)
            log = EventLog()
            async with TcpPeer("PUB", on_event=log) as pub:
                endpoint = await pub.bind("tcp://127.0.0.1:0")
                sub.connect(endpoint)
                sub.subscribe(b"weather")
                socket = pub.core.socket
                await pub.wait_for(lambda: any(b"weather" in p.topics for p in socket.pipes.values()), TIMEOUT)
                await pub.send([b"sports", b"3-1"])  # filtered at the publisher
                await pub.send([b"weather", b"sunny"])
                assert await zrecv(sub) == [b"weather", b"sunny"]
                sub.unsubscribe(b"weather")
                await pub.wait_for(lambda: not any(p.topics for p in socket.pipes.values()), TIMEOUT)
                subs = [(e["topic"], e["subscribe"]) for e in log.what("subscription")]
                assert subs == [(b"weather".hex(), True), (b"weather".hex(), False)]
                await pub.send([b"weather", b"rain"])
                with pytest.raises(asyncio.TimeoutError):
                    await zrecv(sub, timeout=0.3)

    run(main())


def test_our_sub_to_libzmq_xpub_subscribe_cancel_and_filter() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            xpub = zsock(ctx, zmq.XPUB)
            async with TcpPeer("SUB") as sub:
                await _pair_up(sub, xpub, ours_binds=False)
                sub.subscribe(b"a")
                assert await zrecv(xpub) == [b"\x01a"]  # a SUBSCRIBE command, passed up by libzmq's XPUB
                await zsend(xpub, [b"b-not-for-us"])
                await zsend(xpub, [b"a-for-us", b"part 2"])
                assert await sub.recv(timeout=TIMEOUT) == [b"a-for-us", b"part 2"]
                sub.unsubscribe(b"a")
                assert await zrecv(xpub) == [b"\x00a"]

    run(main())


def test_libzmq_pub_to_our_sub_receives_after_subscription() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            pub = zsock(ctx, zmq.PUB)
            async with TcpPeer("SUB") as sub:
                endpoint = await sub.bind("tcp://127.0.0.1:0")
                sub.subscribe(b"t")
                pub.connect(endpoint)
                await sub.wait_ready(1, timeout=TIMEOUT)
                got = None
                for _ in range(100):  # the slow joiner: publish until the subscription has arrived
                    await zsend(pub, [b"x-ignored"])
                    await zsend(pub, [b"t-topic", b"data"])
                    try:
                        got = await sub.recv(timeout=0.05)
                        break
                    except TimeoutError:
                        continue
                assert got == [b"t-topic", b"data"]

    run(main())


def test_libzmq_xsub_to_our_xpub() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            xsub = zsock(ctx, zmq.XSUB)
            async with TcpPeer("XPUB") as xpub:
                await _pair_up(xpub, xsub, ours_binds=True)
                await zsend(xsub, [b"\x01news"])
                assert await xpub.recv(timeout=TIMEOUT) == [b"\x01news"]
                await xpub.send([b"news", b"today"])
                assert await zrecv(xsub) == [b"news", b"today"]
                await zsend(xsub, [b"\x00news"])
                assert await xpub.recv(timeout=TIMEOUT) == [b"\x00news"]

    run(main())


# ---------------------------------------------------------------- PAIR and heartbeats


def test_pair_with_libzmq_heartbeats_stays_connected() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            # Long timeouts, libzmq's and ours (its TTL): a loaded machine can stall a PONG or a read past a
            # short one; the timeouts have tests of their own.
            theirs = zsock(ctx, zmq.PAIR, heartbeat_ivl=100, heartbeat_timeout=int(TIMEOUT * 1000),
                           heartbeat_ttl=int(TIMEOUT * 1000))
            log = EventLog()
            async with TcpPeer("PAIR", on_event=log) as ours:
                await _pair_up(ours, theirs, ours_binds=False)
                await ours.wait_for(lambda: len(log.what("ping")) >= 5, timeout=TIMEOUT)
                pings = log.what("ping")
                assert all(p["ttl"] == TIMEOUT * 10 for p in pings)  # in deciseconds
                assert log.what("closed") == [] and ours.ready_count() == 1
                assert len(log.what("handshake")) == 1
                await ours.send([b"still", b"here"])
                assert await zrecv(theirs) == [b"still", b"here"]
                await zsend(theirs, [b"yes"])
                assert await ours.recv(timeout=TIMEOUT) == [b"yes"]

    run(main())


def test_our_heartbeats_answered_by_libzmq() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            theirs = zsock(ctx, zmq.PAIR)
            log = EventLog()
            # Long timeouts, ours and libzmq's (the TTL): a loaded machine can stall a PONG past one interval,
            # and this test is about the answers (the timeouts have tests of their own).
            async with TcpPeer("PAIR", on_event=log, heartbeat_ivl=0.05, heartbeat_ttl=TIMEOUT,
                               heartbeat_timeout=TIMEOUT) as ours:
                await _pair_up(ours, theirs, ours_binds=True)
                await ours.wait_for(lambda: len(log.what("pong")) >= 5, timeout=TIMEOUT)
                assert len(log.what("ping-sent")) >= 5 and log.what("closed") == []

    run(main())


def test_heartbeat_timeout_when_libzmq_peer_goes_away_silently() -> None:
    """A silent peer: a raw socket that completes the handshake (via a libzmq greeting copy) then says nothing."""

    async def main() -> None:
        log = EventLog()
        async with TcpPeer("PAIR", on_event=log, heartbeat_ivl=0.05, heartbeat_timeout=0.2) as ours:
            endpoint = await ours.bind("tcp://127.0.0.1:0")
            host, port = endpoint[len("tcp://"):].rsplit(":", 1)
            reader, writer = await asyncio.open_connection(host, int(port))
            from zmtplab.engine import Connection

            fake = Connection("PAIR")
            writer.write(fake.start())
            while fake.state != "ready":
                data = await asyncio.wait_for(reader.read(4096), TIMEOUT)
                fake.receive_data(data)
                writer.write(fake.data_to_send())
            # From here on we read but never answer: PINGs go unanswered.
            await ours.wait_for(lambda: bool(log.what("closed")), timeout=TIMEOUT)
            assert "heartbeat timeout" in log.what("closed")[0]["reason"]
            writer.close()

    run(main())


# ---------------------------------------------------------------- PLAIN


def test_plain_client_against_libzmq_zap_server() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            auth = zmq.auth.asyncio.AsyncioAuthenticator(ctx)
            auth.start()
            auth.configure_plain(domain="*", passwords={"admin": "secret"})
            try:
                server = zsock(ctx, zmq.REP, plain_server=True)
                endpoint = zbind(server)
                async with TcpPeer("REQ", mechanism="PLAIN", username="admin", password="secret") as good:
                    good.connect(endpoint)
                    await good.wait_ready(1, timeout=TIMEOUT)
                    await good.send([b"let me in"])
                    assert await zrecv(server) == [b"let me in"]
                    await zsend(server, [b"welcome"])
                    assert await good.recv(timeout=TIMEOUT) == [b"welcome"]
                log = EventLog()
                async with TcpPeer("REQ", mechanism="PLAIN", username="admin", password="wrong",
                                   on_event=log, reconnect_ivl=5.0) as bad:
                    bad.connect(endpoint)
                    await bad.wait_for(lambda: bool(log.what("closed")), timeout=TIMEOUT)
                    assert log.what("handshake") == []
                    reason = log.what("closed")[0]["reason"]
                    assert "refused" in reason or "ERROR" in reason
            finally:
                auth.stop()

    run(main())


def test_libzmq_plain_client_against_our_plain_server() -> None:
    async def main() -> None:
        async with zmq_context() as ctx:
            log = EventLog()
            async with TcpPeer("REP", mechanism="PLAIN", plain_server=True, plain_users={"admin": "secret"},
                               on_event=log) as server:
                endpoint = await server.bind("tcp://127.0.0.1:0")
                client = zsock(ctx, zmq.REQ, plain_username=b"admin", plain_password=b"secret")
                client.connect(endpoint)
                await zsend(client, [b"hello"])
                assert await server.recv(timeout=TIMEOUT) == [b"hello"]
                await server.send([b"hi admin"])
                assert await zrecv(client) == [b"hi admin"]
                assert log.what("handshake")[0]["user_id"] == "admin"
                intruder = zsock(ctx, zmq.REQ, plain_username=b"admin", plain_password=b"guess")
                intruder.connect(endpoint)
                await server.wait_for(lambda: any(e.get("error") for e in log.what("closed")), timeout=TIMEOUT)
                assert len(log.what("handshake")) == 1

    run(main())


# ---------------------------------------------------------------- CURVE


def test_curve_client_against_libzmq_server() -> None:
    async def main() -> None:
        server_public, server_secret = zmq.curve_keypair()
        async with zmq_context() as ctx:
            server = zsock(ctx, zmq.DEALER, curve_server=True, curve_publickey=server_public,
                           curve_secretkey=server_secret)
            endpoint = zbind(server)
            async with TcpPeer("DEALER", mechanism="CURVE", curve_serverkey=server_public.decode()) as client:
                client.connect(endpoint)
                await client.wait_ready(1, timeout=TIMEOUT)
                await client.send([b"secret", MIB])
                assert await zrecv(server) == [b"secret", MIB]
                await zsend(server, [b"encrypted", b"reply"])
                assert await client.recv(timeout=TIMEOUT) == [b"encrypted", b"reply"]

    run(main())


def test_libzmq_curve_client_against_our_server() -> None:
    async def main() -> None:
        server_public, server_secret = zmq.curve_keypair()
        client_public, client_secret = zmq.curve_keypair()
        async with zmq_context() as ctx:
            log = EventLog()
            async with TcpPeer("ROUTER", mechanism="CURVE", curve_server=True, curve_publickey=server_public,
                               curve_secretkey=server_secret, on_event=log) as server:
                endpoint = await server.bind("tcp://127.0.0.1:0")
                client = zsock(ctx, zmq.DEALER, curve_serverkey=server_public, curve_publickey=client_public,
                               curve_secretkey=client_secret, identity=b"curvy")
                client.connect(endpoint)
                await zsend(client, [b"hello", b"curve"])
                assert await server.recv(timeout=TIMEOUT) == [b"curvy", b"hello", b"curve"]
                await server.send([b"curvy", b"back"])
                assert await zrecv(client) == [b"back"]
                assert log.what("handshake")[0]["user_id"] == client_public.decode()
                assert z85_encode(bytes(32))  # the engine's Z85 is what libzmq uses for keys

    run(main())
