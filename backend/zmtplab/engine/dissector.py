"""Both directions of one connection, read leniently: the dissector behind captures and sessions.

It joins two `StreamDecoder`s (each tells the other which version family it saw, which
decides how an ambiguous greeting continues) and adds the checks that need both sides:
mechanism mismatch, invalid socket pairs, handshakes that never complete, PONGs that do
not echo their PING, 3.1 commands sent to a 3.0 peer.
"""

from __future__ import annotations

from collections import deque

from .batch import FrameRun, RunScanner
from .constants import VALID_PEERS
from .decoder import StreamDecoder
from .events import Command, Expert, Frame, Gap, Greeting, Message, WireEvent
from .fields import text_or_hex

C2S, S2C = "c2s", "s2c"
MAX_PINGS = 64
OTHER = {C2S: S2C, S2C: C2S}

Item = tuple[str, WireEvent | FrameRun]
"""What the dissector reports: (direction, event), or (direction, run) with a run scanner."""


class ConnectionDissector:
    """Reads a whole connection (both directions) and never raises on bad input."""

    def __init__(self, *, mid_stream: bool = False, runs: RunScanner | None = None,
                 max_held: int | None = None) -> None:
        """`runs`: a run scanner (see batch.py), for an owner that lays out events itself: runs of
        ordinary frames then come back as the `FrameRun`s it makes, once no check here needs their
        messages one by one. `max_held`: each direction's budget (see `StreamDecoder`), for traffic whose
        sender nobody bounds (a tap, a live capture)."""
        self.decoders = {
            C2S: StreamDecoder(peer_family=lambda: self.decoders[S2C].family, mid_stream=mid_stream, runs=runs,
                               max_held=max_held),
            S2C: StreamDecoder(peer_family=lambda: self.decoders[C2S].family, mid_stream=mid_stream, runs=runs,
                               max_held=max_held),
        }
        self.batching = self.decoders[C2S].batching
        for decoder in self.decoders.values():
            decoder.batch_ok = False
        self.mid_stream = mid_stream
        self.greetings: dict[str, Greeting] = {}
        self.socket_types: dict[str, str] = {}
        self.identities: dict[str, bytes] = {}
        self.ready: dict[str, bool] = {C2S: False, S2C: False}
        self._done: dict[str, bool] = {C2S: False, S2C: False}  # _handshake_done's answers once True
        self.errors: dict[str, str] = {}
        # PING contexts awaiting their PONG (the latest MAX_PINGS: a peer that never answers cannot grow them)
        self._pings: dict[str, deque[str]] = {C2S: deque(maxlen=MAX_PINGS), S2C: deque(maxlen=MAX_PINGS)}
        self._pair_check = PairCheck()
        self._closed = False

    @property
    def mechanism(self) -> str | None:
        """The mechanism the greetings announced (the client's when they disagree)."""
        for d in (C2S, S2C):
            if d in self.greetings and self.greetings[d].mechanism:
                return self.greetings[d].mechanism
        return None

    def receive_data(self, direction: str, data: bytes, *, boundary: bool = True) -> list[Item]:
        """Feeds one direction's bytes; returns the (direction, event) pairs now decoded.

        With `runs`, an item may also be a `FrameRun` standing for consecutive frame and message
        events (its `events()` gives them).
        """
        decoder = self.decoders[direction]
        decoder.receive_data(data, boundary=boundary)
        return self._collect(direction)

    def gap(self, direction: str, length: int) -> list[Item]:
        """Says `length` bytes of one direction are missing from the capture."""
        self.decoders[direction].gap(length)
        return self._collect(direction)

    def close(self) -> list[Item]:
        """Says the connection ended; returns the findings about what was left unfinished."""
        if self._closed:
            return []
        self._closed = True
        out: list[Item] = []
        for d in (C2S, S2C):
            self.decoders[d].close()
            out.extend(self._collect(d))
        if not self.mid_stream and self.greetings and not self.errors:
            done = all(self._handshake_done(d) for d in (C2S, S2C))
            if not done:
                d = C2S if not self._handshake_done(C2S) else S2C
                out.append((d, Expert(self.decoders[d].received, 0, severity="warn",
                                      text="handshake never completed: connection ended before both sides were ready",
                                      rule="handshake")))
        return out

    def _handshake_done(self, direction: str) -> bool:
        if self._done[direction]:  # once done, always done: asked for every message
            return True
        greeting = self.greetings.get(direction)
        if greeting is None:
            return False
        done = greeting.version in ("1.0", "2.0") or self.ready[direction]
        self._done[direction] = done
        return done

    # ---- cross-direction checks

    def _collect(self, direction: str) -> list[Item]:
        out: list[Item] = []
        decoder = self.decoders[direction]
        for event in decoder.take():
            out.append((direction, event))
            if isinstance(event, _UNCHECKED):
                continue
            if isinstance(event, Message):
                if not self._handshake_done(direction) and not self.mid_stream:
                    out.append((direction, _expert(event, "warn", "message sent before the handshake completed",
                                                   "traffic")))
                if self.socket_types.get(direction) in ("SUB", "XSUB"):  # (asked here: most messages are not)
                    self._subscription_note(direction, event, out)
            elif isinstance(event, Command):
                self._on_command(direction, event, out)
            elif isinstance(event, Greeting):
                self._on_greeting(direction, event, out)
        if self.batching:
            # Messages need no check of ours once this side's handshake is done, unless they may be
            # 3.0-style subscriptions; the decoder batches them only then.
            decoder.batch_ok = ((self.mid_stream or self._handshake_done(direction))
                                and self.socket_types.get(direction) not in ("SUB", "XSUB"))
        return out

    def _on_greeting(self, direction: str, greeting: Greeting, out: list) -> None:
        self.greetings[direction] = greeting
        if greeting.socket_type:
            self.socket_types[direction] = greeting.socket_type
        if greeting.identity is not None:
            self.identities[direction] = greeting.identity
        other = self.greetings.get(OTHER[direction])
        if other is None:
            return
        if greeting.version.startswith("3") and other.version.startswith("3"):
            if (greeting.mechanism or "") != (other.mechanism or ""):
                out.append((direction, _expert(greeting, "error",
                                               f"mechanism mismatch: {other.mechanism} on one side, "
                                               f"{greeting.mechanism} on the other; peers must close", "mechanism",
                                               offset=greeting.offset + 12, length=20)))
            mech = (greeting.mechanism or "").upper()
            servers = [g.as_server for g in (greeting, other)]
            if mech == "NULL" and any(servers):
                out.append((direction, _expert(greeting, "warn", "as-server must be 0 with the NULL mechanism",
                                               "as-server", offset=greeting.offset + 32, length=1)))
            elif mech in ("PLAIN", "CURVE") and all(servers):
                out.append((direction, _expert(greeting, "error", f"both sides claim to be the {mech} server",
                                               "as-server", offset=greeting.offset + 32, length=1)))
            elif mech in ("PLAIN", "CURVE") and not any(servers):
                # libzmq 4.3 leaves as-server at 0 on both sides; the roles show in HELLO/WELCOME.
                out.append((direction, _expert(greeting, "note",
                                               f"as-server is 0 on both sides of a {mech} connection (as libzmq "
                                               "sends it); roles follow from who sends HELLO", "as-server",
                                               offset=greeting.offset + 32, length=1)))
        self._check_pair(direction, out)

    def _on_command(self, direction: str, command: Command, out: list) -> None:
        name = command.name
        mech = (self.mechanism or "NULL").upper()
        if name == "READY":
            if mech != "CURVE":
                props = {k.lower(): v for k, v in command.properties.items()}
                if "socket-type" in props:
                    self.socket_types[direction] = props["socket-type"].upper()
                else:
                    out.append((direction, _expert(command, "note", "READY has no Socket-Type property",
                                                   "socket-type")))
                raw = {k.lower(): v for k, v in command.metadata.items()}
                if "identity" in raw:
                    self.identities[direction] = raw["identity"]
            self.ready[direction] = True
            self._check_pair(direction, out)
        elif name == "INITIATE" and mech in ("PLAIN", "CURVE"):
            props = {k.lower(): v for k, v in command.properties.items()}
            if "socket-type" in props:
                self.socket_types[direction] = props["socket-type"].upper()
            # The client's metadata travels in INITIATE (it sends no READY): its side is done.
            self.ready[direction] = True
        elif name == "ERROR":
            self.errors[direction] = command.details.get("reason", "")
        elif name == "PING":
            self._pings[direction].append(command.details.get("context", ""))
            self._check_31(direction, command, out)
        elif name == "PONG":
            pending = self._pings[OTHER[direction]]
            context = command.details.get("context", "")
            if pending:
                expected = pending.popleft()
                if context != expected:
                    out.append((direction, _expert(command, "warn",
                                                   f"PONG context {context or '(empty)'} does not echo the PING's "
                                                   f"{expected or '(empty)'}", "ping-context")))
            else:
                out.append((direction, _expert(command, "note", "PONG without an outstanding PING", "pong")))
        elif name in ("SUBSCRIBE", "CANCEL"):
            sender = self.socket_types.get(direction)
            if sender and sender not in ("SUB", "XSUB"):
                out.append((direction, _expert(command, "warn", f"{name} sent by a {sender} socket", "subscribe")))
            self._check_31(direction, command, out)

    def _check_31(self, direction: str, command: Command, out: list) -> None:
        other = self.greetings.get(OTHER[direction])
        if other is not None and other.version == "3.0":
            out.append((direction, _expert(command, "warn",
                                           f"{command.name} is a ZMTP 3.1 command but the peer announced 3.0",
                                           "version")))

    def _check_pair(self, direction: str, out: list) -> None:
        expert = self._pair_check(self.socket_types, self.decoders[direction].offset)
        if expert is not None:
            out.append((direction, expert))

    def _subscription_note(self, direction: str, message: Message, out: list) -> None:
        """A note for a message from a SUB/XSUB socket that is a 3.0/2.0-style (un)subscription."""
        greeting = self.greetings.get(direction)
        if greeting is None or len(message.parts) != 1:
            return
        body = message.parts[0].body
        # The connection speaks the lower of the two versions: a 3.1 SUB talking to a 3.0 PUB prefixes too.
        version = greeting.version
        other = self.greetings.get(OTHER[direction])
        if other is not None:
            version = min(version, other.version, key=lambda v: tuple(int(x) for x in v.split(".")))
        if body[:1] in (b"\x00", b"\x01") and version in ("3.0", "2.0", "1.0"):
            what = "subscribe" if body[0] == 1 else "cancel"
            out.append((direction, _expert(message, "note", f"{what} {text_or_hex(body[1:])!r} as a prefixed "
                                                            f"message ({version} style)", "subscribe")))


class PairCheck:
    """23/ZMTP's socket-pair rule, said once a connection: the first time both sides' types are known."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = False

    def __call__(self, socket_types: dict[str, str], offset: int) -> Expert | None:
        """The error at `offset` when the pair announced in `socket_types` (direction -> type) is refused, once."""
        if self.done:
            return None
        client, server = socket_types.get(C2S), socket_types.get(S2C)
        if not client or not server:
            return None
        self.done = True
        problem = pair_problem(client, server)
        return None if problem is None else Expert(offset, 0, severity="error", text=problem, rule="socket-type")


def pair_problem(client: str, server: str) -> str | None:
    """What is wrong with a `client` socket type talking to a `server` one (23/ZMTP's table), or None."""
    if client not in VALID_PEERS or server not in VALID_PEERS:
        return f"unknown socket type {client if client not in VALID_PEERS else server!r}"
    if server not in VALID_PEERS[client]:
        return f"invalid socket pair: client {client} cannot talk to server {server} (23/ZMTP socket-type table)"
    return None


# What needs no check here: frames (their messages are checked), findings, gaps, runs (see `batch_ok`).
_UNCHECKED = (Frame, FrameRun, Expert, Gap)


def _expert(event: WireEvent, severity: str, text: str, rule: str, *, offset: int | None = None,
            length: int | None = None) -> Expert:
    return Expert(event.offset if offset is None else offset, event.length if length is None else length,
                  severity=severity, text=text, rule=rule)
