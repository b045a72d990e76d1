"""Two strict `Connection`s wired together in memory, with a `ConnectionDissector` reading the wire.

`connection_pair(client, server)` starts both sides and shuttles bytes between them
until nothing more moves (the handshake, when it can complete). Writes go in
alternation, so both greetings travel "at the same time" as they do over TCP; with
`one_byte=True` every write is cut into 1-octet chunks, the hardest case for
greeting detection and reassembly. A side that raises `RemoteProtocolError` is
recorded in `errors` (and stops reading); a closed side's peer gets end-of-stream
once the wire is quiet.
"""

from __future__ import annotations

from typing import Any

from zmtplab.engine import Connection, ConnectionDissector, RemoteProtocolError
from zmtplab.engine.events import Event, WireEvent

C2S, S2C = "c2s", "s2c"
SIDES = ("client", "server")
_WRITES = {"client": C2S, "server": S2C}
_READER = {C2S: "server", S2C: "client"}


class ConnectionPair:
    """A client and a server `Connection` joined by an in-memory wire (see the module docstring)."""

    def __init__(self, client: Connection, server: Connection, *, one_byte: bool = False,
                 dissect: bool = True) -> None:
        self.conns = {"client": client, "server": server}
        self.one_byte = one_byte
        self.outbox = {C2S: bytearray(), S2C: bytearray()}
        self.wire = {C2S: bytearray(), S2C: bytearray()}
        self.events: dict[str, list[Event]] = {"client": [], "server": []}
        self.errors: dict[str, RemoteProtocolError | None] = {"client": None, "server": None}
        self.dissector = ConnectionDissector() if dissect else None
        self.wire_events: list[tuple[str, WireEvent]] = []
        self._eof_sent = {"client": False, "server": False}
        self._closed_wire = False

    # ---------------------------------------------------------------- sides

    @property
    def client(self) -> Connection:
        return self.conns["client"]

    @property
    def server(self) -> Connection:
        return self.conns["server"]

    def start(self) -> ConnectionPair:
        """Both sides send their first bytes; the wire runs until it is quiet."""
        for side in SIDES:
            self.outbox[_WRITES[side]] += self.conns[side].start()
        self.pump()
        return self

    def write(self, side: str, data: bytes) -> None:
        """Queues bytes `side` writes (e.g. the result of `send()`, `ping()`, `subscribe()`) and runs the wire."""
        self.outbox[_WRITES[side]] += data
        self.pump()

    def send(self, side: str, frames: list[bytes]) -> None:
        """`side` sends one message."""
        self.write(side, self.conns[side].send(frames))

    def take(self, side: str) -> list[Event]:
        """The peer events `side` reported since the last call."""
        out, self.events[side] = self.events[side], []
        return out

    def of_kind(self, side: str, kind: str) -> list[Any]:
        """Events of one kind `side` reported so far (without taking them)."""
        return [e for e in self.events[side] if e.kind == kind]

    # ---------------------------------------------------------------- the wire

    def pump(self) -> None:
        """Moves bytes in alternation until both outboxes are empty, then delivers end-of-stream to peers of
        closed sides."""
        while True:
            while self.outbox[C2S] or self.outbox[S2C]:
                for direction in (C2S, S2C):
                    box = self.outbox[direction]
                    if not box:
                        continue
                    size = 1 if self.one_byte else len(box)
                    chunk = bytes(box[:size])
                    del box[:size]
                    self._deliver(direction, chunk)
            if not self._deliver_eofs():
                return

    def _deliver(self, direction: str, chunk: bytes) -> None:
        self.wire[direction] += chunk
        if self.dissector is not None:
            self.wire_events.extend(self.dissector.receive_data(direction, chunk))
        reader = _READER[direction]
        conn = self.conns[reader]
        if self.errors[reader] is None:
            try:
                conn.receive_data(chunk)
            except RemoteProtocolError as exc:
                self.errors[reader] = exc
        self._collect(reader)

    def _collect(self, side: str) -> None:
        conn = self.conns[side]
        self.outbox[_WRITES[side]] += conn.data_to_send()
        self.events[side].extend(conn.events())

    def _deliver_eofs(self) -> bool:
        """End-of-stream to the peer of every closed side (once); True when that changed anything."""
        moved = False
        for side, peer in (("client", "server"), ("server", "client")):
            if self.conns[side].state == "closed" and not self._eof_sent[peer]:
                self._eof_sent[peer] = True
                self.conns[peer].receive_data(b"")
                self._collect(peer)
                moved = True
        return moved

    def close(self) -> list[tuple[str, WireEvent]]:
        """Ends the wire: the dissector's closing findings (also appended to `wire_events`)."""
        if self.dissector is None or self._closed_wire:
            return []
        self._closed_wire = True
        out = self.dissector.close()
        self.wire_events.extend(out)
        return out

    # ---------------------------------------------------------------- what the dissector saw

    def wire_kind(self, kind: str, direction: str | None = None) -> list[Any]:
        """Dissector events of one kind (optionally one direction)."""
        return [e for d, e in self.wire_events if e.kind == kind and (direction is None or d == direction)]

    def commands(self, direction: str | None = None) -> list[str]:
        """Names of the commands the dissector saw, in order."""
        return [e.name for e in self.wire_kind("command", direction)]

    def experts(self, severity: str | None = None) -> list[Any]:
        return [e for e in self.wire_kind("expert") if severity is None or e.severity == severity]


def connection_pair(client: Connection, server: Connection, *, one_byte: bool = False,
                    dissect: bool = True) -> ConnectionPair:
    """Starts `client` and `server` against each other and runs the wire until it is quiet."""
    return ConnectionPair(client, server, one_byte=one_byte, dissect=dissect).start()
