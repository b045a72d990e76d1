"""The asyncio TCP runtime among our own peers: connections, reconnection, timers, backpressure, bad input."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from zmtplab.engine import Connection, ConnectionDissector
from zmtplab.engine.greeting import encode_greeting
from zmtplab.peers.sockets import Again
from zmtplab.peers.tcp import TcpPeer, parse_endpoint, ws_target

from .conftest import TIMEOUT, EventLog, run


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_parse_endpoint() -> None:
    assert parse_endpoint("tcp://127.0.0.1:5555", bind=False) == ("127.0.0.1", 5555)
    assert parse_endpoint("tcp://*:*", bind=True) == ("0.0.0.0", 0)
    assert parse_endpoint("tcp://[::1]:7", bind=False) == ("::1", 7)
    assert parse_endpoint("ws://127.0.0.1:5555/zmq", bind=False) == ("127.0.0.1", 5555)
    assert parse_endpoint("ws://*:0", bind=True) == ("0.0.0.0", 0)
    assert (ws_target("ws://h:1/a/b"), ws_target("ws://h:1"), ws_target("tcp://h:1")) == ("/a/b", "/", None)
    for bad in ("ipc:///tmp/x", "tcp://host", "tcp://h:notaport", "tcp://*:5", "wss://h:1/x", "ws://h/x"):
        with pytest.raises(ValueError):
            parse_endpoint(bad, bind=False)


def test_several_connections_round_robin_and_fair_queue() -> None:
    async def main() -> None:
        async with TcpPeer("PUSH") as push:
            endpoint = await push.bind("tcp://127.0.0.1:0")
            pulls = [TcpPeer("PULL") for _ in range(3)]
            for p in pulls:
                p.connect(endpoint)
            await push.wait_ready(3, timeout=TIMEOUT)
            for i in range(9):
                await push.send([b"%d" % i])
            counts = []
            for p in pulls:
                got = [await p.recv(timeout=TIMEOUT) for _ in range(3)]
                counts.append(len(got))
                with pytest.raises(TimeoutError):
                    await p.recv(timeout=0.05)
            assert counts == [3, 3, 3]  # round robin: each connection got a third
            for p in pulls:
                await p.close()

        async with TcpPeer("PULL") as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            pushes = [TcpPeer("PUSH") for _ in range(3)]
            for i, p in enumerate(pushes):
                p.connect(endpoint)
                for j in range(3):
                    await p.send([b"%d-%d" % (i, j)])
            got = [await pull.recv(timeout=TIMEOUT) for _ in range(9)]
            assert sorted(m[0] for m in got) == sorted(b"%d-%d" % (i, j) for i in range(3) for j in range(3))
            for p in pushes:
                await p.close()

    run(main())


def test_on_wire_sees_both_directions_for_a_dissector() -> None:
    async def main() -> None:
        seen: dict[str, ConnectionDissector] = {}
        elements: list[tuple[str, str]] = []

        def on_wire(conn_id: str, direction: str, data: bytes) -> None:
            dissector = seen.setdefault(conn_id, ConnectionDissector())
            elements.extend((d, e.kind) for d, e in dissector.receive_data(direction, data))

        async with TcpPeer("PULL", on_wire=on_wire) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with TcpPeer("PUSH") as push:
                push.connect(endpoint)
                await push.send([b"a", b"b"])
                assert await pull.recv(timeout=TIMEOUT) == [b"a", b"b"]
        assert ("c2s", "greeting") in elements and ("s2c", "greeting") in elements
        assert elements.count(("c2s", "command")) == 1 and elements.count(("s2c", "command")) == 1
        assert ("c2s", "message") in elements

    run(main())


def test_connect_before_bind_queues_and_reconnects_with_backoff() -> None:
    async def main() -> None:
        port = _free_port()
        log = EventLog()
        push = TcpPeer("PUSH", on_event=log, reconnect_ivl=0.02, reconnect_ivl_max=0.16)
        push.connect(f"tcp://127.0.0.1:{port}")
        await push.send([b"queued before the peer exists"])  # the connect-side pipe takes it, as in libzmq
        await push.wait_for(lambda: len(log.what("reconnect")) >= 5, timeout=TIMEOUT)
        delays = [e["delay"] for e in log.what("reconnect")]
        assert delays[3] > delays[0]  # backoff: the interval doubles (plus jitter) up to the maximum
        assert all(d <= 0.16 + 0.02 for d in delays)
        assert log.what("connect-failed")
        async with TcpPeer("PULL") as pull:
            await pull.bind(f"tcp://127.0.0.1:{port}")
            assert await pull.recv(timeout=TIMEOUT) == [b"queued before the peer exists"]
        # The server went away: the client reconnects to a new one on the same port.
        async with TcpPeer("PULL") as pull2:
            await pull2.bind(f"tcp://127.0.0.1:{port}")
            await push.wait_ready(1, timeout=TIMEOUT)
            await push.send([b"after reconnection"])
            assert await pull2.recv(timeout=TIMEOUT) == [b"after reconnection"]
        await push.close()

    run(main())


def test_a_bound_sender_waits_for_its_first_peer() -> None:
    async def main() -> None:
        async with TcpPeer("PUSH") as push:
            endpoint = await push.bind("tcp://127.0.0.1:0")
            sending = asyncio.ensure_future(push.send([b"first"]))  # no pipe yet: send() waits, as libzmq's
            await asyncio.sleep(0.1)
            assert not sending.done()
            async with TcpPeer("PULL") as pull:
                pull.connect(endpoint)
                await asyncio.wait_for(sending, TIMEOUT)  # the handshake wakes it
                assert await pull.recv(timeout=TIMEOUT) == [b"first"]

    run(main())


def test_close_lingers_for_queued_messages_within_linger() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        port = _free_port()
        push = TcpPeer("PUSH", reconnect_ivl=0.02)
        push.connect(f"tcp://127.0.0.1:{port}")
        await push.send([b"for a late peer"])
        assert push.unsent() == (1, 0)  # queued in the connect-side pipe, counted though it is not up
        closing = asyncio.ensure_future(push.close(linger=-1))  # ZMQ_LINGER -1: as long as it takes
        await asyncio.sleep(0.3)
        assert not closing.done()  # it keeps reconnecting meanwhile
        async with TcpPeer("PULL") as pull:
            await pull.bind(f"tcp://127.0.0.1:{port}")
            assert await pull.recv(timeout=TIMEOUT) == [b"for a late peer"]
            await asyncio.wait_for(closing, TIMEOUT)

        nobody = TcpPeer("PUSH")
        nobody.connect(f"tcp://127.0.0.1:{_free_port()}")
        await nobody.send([b"never delivered"])
        started = loop.time()
        assert not await nobody.drain(0.2)
        await nobody.close(linger=0.3)
        assert 0.5 <= loop.time() - started < 0.2 + 0.3 + 2.0  # linger bounds it

    run(main())


def test_close_as_a_connection_completes_does_not_wait_for_the_other_side() -> None:
    async def main() -> None:
        async with TcpPeer("PULL") as pull:  # stays open: it never hangs up
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            closing: list[asyncio.Future] = []

            def on_event(event: dict) -> None:
                if event["what"] == "connected":  # in connection_made: create_connection() has not returned
                    closing.append(asyncio.ensure_future(push.close(linger=0)))

            push = TcpPeer("PUSH", on_event=on_event)
            push.connect(endpoint)
            await push.wait_for(lambda: bool(closing), timeout=TIMEOUT)
            done, _ = await asyncio.wait(closing, timeout=3.0)  # (not wait_for: 3.11's can hide a hang)
            assert done, "close() waited for the other side to hang up"
            assert not push.connections

    run(main())


def test_heartbeats_between_our_peers_with_ttl() -> None:
    async def main() -> None:
        log_a, log_b = EventLog(), EventLog()
        # A long timeout: a loaded machine can stall a PONG past one interval (the timeout has its own test).
        async with TcpPeer("DEALER", on_event=log_a, heartbeat_ivl=0.05, heartbeat_ttl=2.0,
                           heartbeat_timeout=TIMEOUT) as a:
            endpoint = await a.bind("tcp://127.0.0.1:0")
            async with TcpPeer("DEALER", on_event=log_b) as b:
                b.connect(endpoint)
                await a.wait_for(lambda: len(log_a.what("pong")) >= 3, timeout=TIMEOUT)
                assert log_b.what("ping")[0]["ttl"] == 20
                assert not log_a.what("closed") and not log_b.what("closed")

    run(main())


def test_high_water_marks_give_backpressure() -> None:
    async def main() -> None:
        big = bytes(65536)
        async with TcpPeer("PULL", rcvhwm=4) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with TcpPeer("PUSH", sndhwm=4) as push:
                push.connect(endpoint)
                await push.wait_ready(1, timeout=TIMEOUT)
                sent = 0
                blocked = False
                for _ in range(2000):
                    try:
                        push.send_nowait([big, b"%d" % sent])
                        sent += 1
                    except Again:
                        blocked = True
                        await asyncio.sleep(0.02)  # let the pipes and the TCP buffers fill
                        try:
                            push.send_nowait([big, b"%d" % sent])
                            sent += 1
                            continue
                        except Again:
                            break
                    await asyncio.sleep(0)
                assert blocked and sent < 2000  # bounded by HWMs plus the TCP buffers
                pipe = next(iter(pull.core.socket.pipes.values()))
                assert len(pipe.inq) <= 4 + 256 * 1024 // 65536 + 1  # at most one read past the HWM
                for i in range(sent):
                    frames = await pull.recv(timeout=TIMEOUT)
                    assert frames[1] == b"%d" % i
                await push.send([b"flows again"], timeout=TIMEOUT)
                assert await pull.recv(timeout=TIMEOUT) == [b"flows again"]

    run(main())


async def _raw(endpoint: str, data: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = parse_endpoint(endpoint, bind=False)
    reader, writer = await asyncio.open_connection(host, port)
    if data:
        writer.write(data)
        await writer.drain()
    return reader, writer


async def _ready_raw(endpoint: str, socket_type: str = "PUSH") -> tuple[asyncio.StreamWriter, Connection]:
    """A raw client that completes a NULL handshake, then lets the test write anything."""
    reader, writer = await _raw(endpoint, b"")
    conn = Connection(socket_type, strategy="full")
    writer.write(conn.start())
    while conn.state != "ready":
        conn.receive_data(await asyncio.wait_for(reader.read(4096), TIMEOUT))
        writer.write(conn.data_to_send())
    return writer, conn


def test_bad_input_closes_that_connection_and_keeps_serving_others(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="zmtplab.peers")

    async def main() -> None:
        log = EventLog()
        async with TcpPeer("PULL", on_event=log, handshake_ivl=0.3, max_frame_size=1024) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with TcpPeer("PUSH") as good:
                good.connect(endpoint)
                await good.send([b"before"])
                assert await pull.recv(timeout=TIMEOUT) == [b"before"]

                async def closed_with(fragment: str) -> dict:
                    await pull.wait_for(lambda: any(fragment in e["reason"] for e in log.what("closed")), TIMEOUT)
                    event = next(e for e in log.what("closed") if fragment in e["reason"])
                    assert event["error"] is True
                    await good.send([fragment.encode()])
                    assert await pull.recv(timeout=TIMEOUT) == [fragment.encode()]
                    return event

                # Garbage: a signature, then a mechanism name that is not one.
                _, w1 = await _raw(endpoint, b"\xff" + bytes(8) + b"\x7f\x03\x01" + b"N@LL!" + bytes(48))
                await closed_with("mechanism")
                # A peer that insists on another mechanism: PLAIN against our NULL.
                _, w2 = await _raw(endpoint, encode_greeting(mechanism="PLAIN"))
                await closed_with("mismatch")
                # An oversized frame after a good handshake.
                w3, _ = await _ready_raw(endpoint)
                w3.write(b"\x02" + (1 << 20).to_bytes(8, "big") + b"x" * 100)
                await closed_with("exceeds")
                # A stalled handshake: connect and say nothing.
                _, w5 = await _raw(endpoint, b"")
                await closed_with("handshake timed out")
                for w in (w1, w2, w3, w5):
                    if w is not None:
                        w.close()

        reasons = [r.getMessage() for r in caplog.records if r.name == "zmtplab.peers"]
        assert any("mechanism mismatch" in r for r in reasons)
        assert any("handshake timed out" in r for r in reasons)

    run(main())


def test_wrong_version_and_invalid_socket_type_are_refused() -> None:
    async def main() -> None:
        log = EventLog()
        async with TcpPeer("PULL", on_event=log, mechanism="PLAIN", plain_server=True) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            # ZMTP 2.0 cannot do PLAIN.
            _reader, writer = await _raw(endpoint, b"\xff" + bytes(8) + b"\x7f\x01\x08\x00\x00")
            await pull.wait_for(lambda: bool(log.what("closed")), TIMEOUT)
            assert "2.0" in log.what("closed")[0]["reason"]
            writer.close()
        log = EventLog()
        async with TcpPeer("PULL", on_event=log) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with TcpPeer("PULL") as other:  # PULL cannot talk to PULL: ERROR and close
                other.connect(endpoint)
                await pull.wait_for(lambda: bool(log.what("closed")), TIMEOUT)
                assert "invalid socket type" in log.what("closed")[0]["reason"]
                assert not log.what("handshake") or pull.ready_count() == 0

    run(main())


def test_pair_refuses_a_second_peer() -> None:
    async def main() -> None:
        log = EventLog()
        async with TcpPeer("PAIR", on_event=log) as pair:
            endpoint = await pair.bind("tcp://127.0.0.1:0")
            async with TcpPeer("PAIR") as first, TcpPeer("PAIR", reconnect_ivl=5) as second:
                first.connect(endpoint)
                await pair.wait_ready(1, timeout=TIMEOUT)
                second.connect(endpoint)
                await pair.wait_for(lambda: bool(log.what("closed")), TIMEOUT)
                assert "one peer" in log.what("closed")[0]["reason"]
                await first.send([b"still paired"])
                assert await pair.recv(timeout=TIMEOUT) == [b"still paired"]

    run(main())
