"""Two strict `ZwsConnection`s wired together in memory, and the conversation's bytes for the dissector.

`ZwsPair(client, server).run()` starts the client (a server waits for the upgrade request) and shuttles
bytes until nothing more moves, recording every write as (direction, bytes) in order, so a test can give
the same conversation to a `ZwsDissector` in any cut. With `one_byte=True` every write reaches the other
side one octet at a time. A side that raises `RemoteProtocolError` has it in `errors` (and stops reading).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zmtplab.engine import RemoteProtocolError, ZwsConnection, ZwsDissector
from zmtplab.engine.events import Event, WireEvent

C2S, S2C = "c2s", "s2c"
Segments = list[tuple[str, bytes]]


class ZwsPair:
    """A client and a server `ZwsConnection` joined by an in-memory wire (see the module docstring)."""

    def __init__(self, client: ZwsConnection, server: ZwsConnection, *, one_byte: bool = False) -> None:
        self.client = client
        self.server = server
        self.one_byte = one_byte
        self.segments: Segments = []
        self.events: dict[str, list[Event]] = {"client": [], "server": []}
        self.errors: dict[str, RemoteProtocolError | None] = {"client": None, "server": None}

    def run(self) -> ZwsPair:
        """Starts both sides (the client's request) and moves bytes until the wire is quiet."""
        self._write(S2C, self.server.start())  # (nothing: a server waits for the request)
        self._write(C2S, self.client.start())
        self.pump()
        return self

    def pump(self) -> None:
        for _ in range(100):
            moved = False
            for conn, direction in ((self.client, C2S), (self.server, S2C)):
                data = conn.data_to_send()
                if data:
                    self._write(direction, data)
                    moved = True
            if not moved:
                return

    def send(self, side: str, frames: list[bytes]) -> None:
        """`side` sends one message; the wire then runs until quiet."""
        conn = self.client if side == "client" else self.server
        self._write(C2S if side == "client" else S2C, conn.send(frames))
        self.pump()

    def write(self, side: str, data: bytes) -> None:
        """Raw bytes from `side` (a test's own frames), then the wire runs."""
        self._write(C2S if side == "client" else S2C, data)
        self.pump()

    def _write(self, direction: str, data: bytes) -> None:
        if not data:
            return
        self.segments.append((direction, data))
        reader = "server" if direction == C2S else "client"
        conn = self.server if reader == "server" else self.client
        if self.errors[reader] is not None:
            return
        chunks = [data[i:i + 1] for i in range(len(data))] if self.one_byte else [data]
        try:
            for chunk in chunks:
                conn.receive_data(chunk)
        except RemoteProtocolError as exc:
            self.errors[reader] = exc
        self.events[reader].extend(conn.events())

    def stream(self, direction: str) -> bytes:
        """Every byte written in `direction`, in order."""
        return b"".join(data for d, data in self.segments if d == direction)


def dissect(segments: Iterable[tuple[str, bytes]], *, close: bool = True) -> list[tuple[str, WireEvent]]:
    """Runs a `ZwsDissector` over (direction, bytes) writes in order, then closes it."""
    dissector = ZwsDissector()
    out: list[tuple[str, WireEvent]] = []
    for direction, data in segments:
        out.extend(dissector.receive_data(direction, data))
    if close:
        out.extend(dissector.close())
    return out


def per_direction(items: Iterable[tuple[str, WireEvent]], **kwargs: Any) -> dict[str, list[dict[str, Any]]]:
    """Each direction's events as `to_dict()` lists, in the order they came."""
    out: dict[str, list[dict[str, Any]]] = {C2S: [], S2C: []}
    for direction, event in items:
        out[direction].append(event.to_dict(**kwargs))
    return out
