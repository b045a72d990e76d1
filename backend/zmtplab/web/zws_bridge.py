"""The app's ZWS endpoint of an external node: `WS /zws-{id}-{node}`, a ZWS 2.0 peer (a browser, libzmq
over ws://) bridged into a real topology session as one connection of that node.

The websocket is accepted with the subprotocol a peer of the lab node's mechanism speaks, chosen as libzmq chooses
(the first offered that fits: `ZWS2.0` from a browser, `ZWS2.0/NULL` from libzmq's `ZWS2.0/NULL,ZWS2.0`). Then
the bridge is the WebSocket client of a real ZWS connection to the lab node's `ws://` listener, through the link's
ZWS tap (`sessions.tcp.TcpRuntime.bridge`), which dissects it as it dissects any connection: each message of the
peer goes on as one binary WebSocket message (the same flag octet and body; masked with the bridge's key, its
upgrade request the bridge's), each message of the lab node comes back to the peer whole. When either side ends,
both do: the session's rules (an error, a budget, a late handshake) end the peer's websocket with 1008.

Close codes: 4404 no such session or external node taking ZWS connections, 4429 the node has its
`max_connections`, 1002 no subprotocol the node speaks was offered or the lab refused the upgrade, 1003 a text
message (ZWS is binary), 1008 the session closed the connection.
"""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import WebSocket, WebSocketDisconnect
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)

from ..engine.zws import choose
from ..peers.topology import TopologyError
from ..sessions import NodeFull, Session, SessionError, SessionManager
from ..sessions.tcp import TcpRuntime
from ..sessions.tcp.runtime import ZWS_RESOURCE

READ_SIZE = 64 * 1024


def mechanism(session: Session, name: str) -> str | None:
    """The mechanism external node `name` must speak: its link's lab end's (None: no such external node)."""
    topology = session.setup.topology
    try:
        node = topology.node(name)
    except TopologyError:
        return None
    link = next((lk for lk in topology.links if name in (lk.connect, lk.bind)), None)
    if not node.external or link is None:
        return None
    return topology.node(link.bind if link.connect == name else link.connect).mechanism


async def serve(websocket: WebSocket, manager: SessionManager, session_id: str, name: str) -> None:
    """One ZWS peer bridged into session `session_id` as external node `name` (see the module docstring)."""
    session = manager.sessions.get(session_id)
    runtime = session.runtime if session is not None and not session.ended else None
    wanted = mechanism(session, name) if session is not None else None
    if session is None or not isinstance(runtime, TcpRuntime) or wanted is None:
        await websocket.close(code=4404)
        return
    offered = list(websocket.scope.get("subprotocols") or [])
    protocol = choose(offered, wanted)
    if protocol is None:
        await websocket.close(code=1002)  # (no Sec-WebSocket-Protocol it speaks: the handshake fails, as libzmq's)
        return
    client = websocket.client
    try:
        reader, writer = await runtime.bridge(name, (client.host, client.port) if client else ("", 0))
    except SessionError as exc:
        await websocket.close(code=4429 if isinstance(exc, NodeFull) else 4404)
        return
    try:
        lab = WSConnection(ConnectionType.CLIENT)
        writer.write(lab.send(Request(host="lab", target=ZWS_RESOURCE, subprotocols=[protocol])))
        if not await _upgraded(lab, reader):
            await websocket.close(code=1002)
            return
        await websocket.accept(subprotocol=protocol)
        session.touch()
        await _relay(websocket, lab, reader, writer)
    finally:
        writer.close()


async def _upgraded(lab: WSConnection, reader: asyncio.StreamReader) -> bool:
    """Reads the lab node's answer to the upgrade: True once it accepted."""
    while data := await reader.read(READ_SIZE):
        lab.receive_data(data)
        for event in lab.events():
            if isinstance(event, AcceptConnection):
                return True
            if isinstance(event, RejectConnection):
                return False
    return False


async def _relay(websocket: WebSocket, lab: WSConnection, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
    """Both ways until either ends: the peer's messages to the lab node, the lab node's back to the peer."""
    up = asyncio.create_task(_peer_to_lab(websocket, lab, writer))
    down = asyncio.create_task(_lab_to_peer(websocket, lab, reader, writer))
    done, pending = await asyncio.wait((up, down), return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
    code = 1003 if up in done and up.result() == 1003 else 1008 if down in done else 1000
    with contextlib.suppress(Exception):
        await websocket.close(code=code)


async def _peer_to_lab(websocket: WebSocket, lab: WSConnection, writer: asyncio.StreamWriter) -> int:
    """The peer's messages, each sent on as one binary message; its end closes the lab's side. The close code."""
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            data = message.get("bytes")
            if data is None:
                return 1003
            writer.write(lab.send(BytesMessage(data=data)))
            await writer.drain()
    except (WebSocketDisconnect, ConnectionError, OSError):
        pass
    with contextlib.suppress(Exception):
        writer.write(lab.send(CloseConnection(code=1000)))
    return 1000


async def _lab_to_peer(websocket: WebSocket, lab: WSConnection, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> None:
    """The lab node's messages, each handed to the peer whole, until it closes or the session ends the connection."""
    parts: list[bytes] = []
    data = b""  # (first what came with the upgrade's answer: the lab node's routing id may have)
    while True:
        if data:
            lab.receive_data(data)
        for event in lab.events():
            if isinstance(event, BytesMessage):
                parts.append(bytes(event.data))
                if event.message_finished:
                    await websocket.send_bytes(b"".join(parts))
                    parts = []
            elif isinstance(event, Ping):
                writer.write(lab.send(event.response()))
            elif isinstance(event, (CloseConnection, TextMessage)):
                return
        data = await reader.read(READ_SIZE)
        if not data:
            return
