"""`CommandFrameProtocol` against uvicorn's own websocket protocol: the same ASGI messages, the same bytes back
and the same end, whatever the frames and however the network splits them; then over a real socket."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.sync.client import connect

from testkit import LiveServer
from zmtplab.web.core.wsprotocol import PAUSE_AT, CommandFrameProtocol

pytestmark = pytest.mark.timeout(120)

LIMIT = 4096  # the frame size limit of these tests' servers
HANDSHAKE = (b"GET /ws HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


class RecordingTransport(asyncio.Transport):
    """The protocol's side of a socket: what it writes, whether it reads, whether it closed."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.paused = False
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(name, default)


async def accepting_app(scope: dict, receive: Any, send: Any) -> None:
    """Accepts, then leaves the messages in the protocol's queue for the test to read."""
    assert (await receive())["type"] == "websocket.connect"
    await send({"type": "websocket.accept"})
    await asyncio.Future()


async def opened(cls: type[WebSocketsSansIOProtocol]) -> tuple[WebSocketsSansIOProtocol, RecordingTransport]:
    config = uvicorn.Config(accepting_app, ws=cls, ws_max_size=LIMIT, ws_per_message_deflate=False,
                            log_level="critical")
    config.load()
    protocol = cls(config, ServerState(), {}, asyncio.get_running_loop())
    transport = RecordingTransport()
    protocol.connection_made(transport)
    protocol.data_received(HANDSHAKE)
    for _ in range(20):
        await asyncio.sleep(0)
    assert protocol.conn.state is State.OPEN
    del transport.written[:]
    return protocol, transport


def outcome(protocol: WebSocketsSansIOProtocol, transport: RecordingTransport) -> dict[str, Any]:
    """Everything the application and the peer can see."""
    queue = protocol.queue
    return {"messages": [queue.get_nowait() for _ in range(queue.qsize())], "written": bytes(transport.written),
            "paused": transport.paused, "closed": transport.closed, "state": protocol.conn.state}


def feed(chunks: list[bytes], cls: type[WebSocketsSansIOProtocol]) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        protocol, transport = await opened(cls)
        for chunk in chunks:
            if transport.closed:  # a closed socket reads nothing more
                break
            protocol.data_received(chunk)
        return outcome(protocol, transport)

    return asyncio.run(run())


def assert_same(ours: dict[str, Any], uvicorns: dict[str, Any]) -> None:
    """The same outcome, except that ours pauses reading only once `PAUSE_AT` commands wait (never when
    uvicorn's would not)."""
    ours, uvicorns = dict(ours), dict(uvicorns)
    paused = ours.pop("paused")
    assert ours == {k: v for k, v in uvicorns.items() if k != "paused"}
    assert not paused or uvicorns["paused"]


def frame(opcode: Opcode, payload: bytes, *, fin: bool = True, rsv1: bool = False, mask: bool = True) -> bytes:
    """A client's frame (masked, as clients must, unless `mask` is False; RSV1 set when `rsv1`)."""
    data = Frame(opcode, payload, fin).serialize(mask=mask)
    return bytes([data[0] | 0x40]) + data[1:] if rsv1 else data


def huge_length_header() -> bytes:
    """A text frame that says it carries 2**63 - 1 octets."""
    return bytes([0x81, 0xFF]) + (2**63 - 1).to_bytes(8, "big") + os.urandom(4)


FRAMES = st.one_of(
    st.text(max_size=60).map(lambda t: [frame(Opcode.TEXT, t.encode())]),  # the common command
    st.text(min_size=130, max_size=400).map(lambda t: [frame(Opcode.TEXT, t.encode())]),  # a 16-bit length
    st.binary(max_size=40).map(lambda b: [frame(Opcode.BINARY, b)]),
    st.binary(max_size=20).map(lambda b: [frame(Opcode.PING, b)]),
    st.binary(max_size=20).map(lambda b: [frame(Opcode.PONG, b)]),
    st.lists(st.text(max_size=20), min_size=2, max_size=3).map(  # a fragmented message
        lambda parts: [frame(Opcode.TEXT, parts[0].encode(), fin=False),
                       *[frame(Opcode.CONT, p.encode(), fin=False) for p in parts[1:-1]],
                       frame(Opcode.CONT, parts[-1].encode())]),
    st.just([frame(Opcode.TEXT, b"\xff\xfe not UTF-8")]),
    st.just([frame(Opcode.TEXT, b"x" * (LIMIT + 1))]),  # over the limit: 1009
    st.just([huge_length_header()]),
    st.just([frame(Opcode.TEXT, b"unmasked", mask=False)]),
    st.just([frame(Opcode.TEXT, b"compressed?", rsv1=True)]),  # no extension was agreed
    st.just([bytes([0x83, 0x80]) + os.urandom(4)]),  # a reserved opcode
    st.just([frame(Opcode.CLOSE, (1000).to_bytes(2, "big") + b"bye")]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(FRAMES, min_size=1, max_size=6), st.data())
def test_the_same_as_uvicorns_protocol_however_the_frames_are_split(frame_groups, data):
    frames = [f for group in frame_groups for f in group]
    # uvicorn's protocol, one frame per read (it drops what preceded a bad frame in the same read, so it is
    # fed each frame alone here: every message before a failure reaches the application, as it should).
    expected = feed(frames, WebSocketsSansIOProtocol)
    stream = b"".join(frames)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(stream) - 1)), max_size=8)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True) if stream[a:b]]
    assert_same(feed(chunks, CommandFrameProtocol), expected)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.lists(st.integers(1, 40), max_size=10))
def test_any_octets_end_as_uvicorns_protocol_ends(noise, sizes):
    # Whatever a hostile client sends after the handshake: no exception, and, when no message came of it (the
    # usual case for noise), the same outcome as uvicorn's own protocol given the same octets in one read.
    chunks, pos = [], 0
    for size in [*sizes, len(noise)]:
        if pos < len(noise):
            chunks.append(noise[pos:pos + size])
            pos += size
    got = feed(chunks, CommandFrameProtocol)
    assert all(m["type"] in ("websocket.receive", "websocket.disconnect") for m in got["messages"])
    if not any(m["type"] == "websocket.receive" for m in got["messages"]):
        assert_same(got, feed([noise], WebSocketsSansIOProtocol))


def test_one_octet_at_a_time():
    frames = [frame(Opcode.TEXT, b'{"type":"send","frames":["a"]}'), frame(Opcode.PING, b"p"),
              frame(Opcode.TEXT, "é".encode() * 100), frame(Opcode.BINARY, b"\x00\x01"),
              frame(Opcode.TEXT, b"part one, ", fin=False), frame(Opcode.CONT, b"part two"),
              frame(Opcode.TEXT, b"after the fragments"), frame(Opcode.CLOSE, (1000).to_bytes(2, "big"))]
    stream = b"".join(frames)
    got = feed([stream[i:i + 1] for i in range(len(stream))], CommandFrameProtocol)
    assert_same(got, feed(frames, WebSocketsSansIOProtocol))
    assert [m.get("text", m.get("bytes")) for m in got["messages"]] == [
        '{"type":"send","frames":["a"]}', "é" * 100, b"\x00\x01",
        "part one, part two", "after the fragments", None]
    assert got["messages"][-1] == {"type": "websocket.disconnect", "code": 1000, "reason": ""}


def test_commands_are_read_directly_once_the_handshake_is_over():
    async def run() -> None:
        protocol, transport = await opened(CommandFrameProtocol)
        two = frame(Opcode.TEXT, b"two")
        protocol.data_received(frame(Opcode.TEXT, b"one") + two[:3])
        assert protocol.direct is True and protocol.conn.reader.buffer == b""  # websockets' parser saw nothing
        protocol.data_received(two[3:])
        assert [protocol.queue.get_nowait()["text"] for _ in range(2)] == ["one", "two"]
        assert not transport.paused  # (two commands waiting: reading goes on, no system call per command)
        protocol.data_received(huge_length_header())  # refused from its header, as websockets does
        assert protocol.direct is False and transport.closed
        assert protocol.queue.get_nowait() == {"type": "websocket.disconnect", "code": 1009,
                                               "reason": f"frame with 9223372036854775807 bytes exceeds limit "
                                                         f"of {LIMIT} bytes"}

    asyncio.run(run())


def test_reading_pauses_once_many_commands_wait_and_resumes_when_they_are_taken():
    async def run() -> None:
        protocol, transport = await opened(CommandFrameProtocol)
        protocol.data_received(b"".join(frame(Opcode.TEXT, b"%d" % i) for i in range(PAUSE_AT - 1)))
        assert not transport.paused
        protocol.data_received(frame(Opcode.TEXT, b"one more"))
        assert transport.paused and protocol.queue.qsize() == PAUSE_AT
        taken = [(await protocol.receive())["text"] for _ in range(PAUSE_AT)]
        assert taken == [str(i) for i in range(PAUSE_AT - 1)] + ["one more"]
        assert not transport.paused  # (uvicorn's receive() resumes once the queue is empty)

    asyncio.run(run())


# ---------------------------------------------------------------- over a real socket


async def echo_app(scope: dict, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (message := await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await receive()
    await send({"type": "websocket.accept"})
    while (message := await receive())["type"] == "websocket.receive":
        await send({"type": "websocket.send", **{k: v for k, v in message.items() if k in ("text", "bytes")}})


@pytest.fixture(scope="module")
def echo_server():
    with LiveServer(echo_app, name="echo-server", ws_max_size=1 << 20) as server:  # (CommandFrameProtocol)
        assert server.config.ws is CommandFrameProtocol
        yield server.ws_base + "/"


@pytest.mark.parametrize("compression", [None, "deflate"])
def test_a_real_client_gets_every_message_back(echo_server, compression):
    texts = ["short", "é" * 200, "x" * 70_000, *(f"command {i}" for i in range(500))]
    with connect(echo_server, compression=compression, max_size=None) as ws:
        for text in texts[:3]:
            ws.send(text)
        pong = ws.ping(b"are you there")  # a control frame between commands
        for text in texts[3:]:
            ws.send(text)
        ws.send(b"\x00binary")
        ws.send(iter(["frag", "mented"]))  # one message in three frames
        ws.send("after the fragments")
        got = [ws.recv(timeout=10) for _ in range(len(texts) + 3)]
        assert pong.wait(10)
    assert got == [*texts, b"\x00binary", "fragmented", "after the fragments"]


def test_a_real_client_over_the_limit_is_closed_with_1009(echo_server):
    with connect(echo_server, compression=None, max_size=None) as ws:
        ws.send("fine")
        assert ws.recv(timeout=10) == "fine"
        ws.send("x" * ((1 << 20) + 1))
        with pytest.raises(Exception) as info:
            ws.recv(timeout=10)
    assert "1009" in str(info.value)
