"""Both directions of a ZWS connection (45/ZWS: ZeroMQ over WebSocket), read leniently: `ZwsDissector`.

It reports the event contract's elements, as `ConnectionDissector` does for ZMTP over TCP (docs/zws.md
maps them out):

- each HTTP upgrade, the client's request and the server's response, is a `greeting` (a `ZwsGreeting`:
  `transport: "zws"`, the subprotocol chosen as `protocol`, the request's offer as `protocols`, the
  response's `status`; `version` "3.0" with a mechanism, "2.0" without); the request's greeting waits for
  the response, which says what the connection speaks;
- without a mechanism (ZWS2.0, ZWS1.0), each side's first message, its routing id, is a second `greeting`
  with its `identity`;
- each binary WebSocket message is one ZWS frame: a `command` when its flag octet has COMMAND (decoded as
  23/ZMTP's commands for the mechanism), else a `frame` (a `ZwsFrame`) and, on the last frame, a
  `message`; the WebSocket control frames are commands named `WS-PING`, `WS-PONG` and `WS-CLOSE`;
- every problem is an `expert` event, and reading goes on wherever the frame boundaries are certain.

Given a budget, `max_held` (a live capture's), it holds no more than that for one element, as
`StreamDecoder` does: a WebSocket frame larger than it is reported when its header comes (an `expert`,
rule `budget`) and skipped as it streams, with the rest of its message; so is a message whose fragments, or a
multipart message whose frames, outgrow it.

Offsets are stream offsets of each direction, as for ZMTP; a client's frames are masked, and values (the
fields', `body`, `frames`) are shown unmasked while `hex` keeps the octets as they crossed the wire.
"""

from __future__ import annotations

from enum import Enum

import h11

from .buffer import Buffered, StreamBuffer
from .commands import decode_command
from .dissector import PairCheck
from .events import Command, Expert, Gap, Message, WireEvent, ZwsFrame, ZwsGreeting
from .fields import Field, text_or_hex
from .framing import body_field
from .websocket import (
    MAX_CONTROL_PAYLOAD,
    OP_BINARY,
    OP_CLOSE,
    OP_CONTINUATION,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    WsHeader,
    accept_token,
    close_payload,
    head_fields,
    header_fields,
    read_header,
    unmask,
)
from .zws import (
    FLAG_COMMAND,
    FLAG_MORE,
    MAX_HEAD,
    PROTOCOLS,
    RESERVED_FLAGS,
    ZWS1,
    Upgrade,
    head_length,
    mechanism_of,
    parse_request,
    parse_response,
    routing_ids,
    version_of,
)

C2S, S2C = "c2s", "s2c"
OTHER = {C2S: S2C, S2C: C2S}
Item = tuple[str, WireEvent]

FLAGS_NOTE = ("ZWS flag octet: %x00 the last frame of a message, %x01 MORE (more frames follow), %x02 COMMAND "
              "(45/ZWS Framing).")
ROUTING_ID_NOTE = "The sender's routing id (identity), its first message without a mechanism; empty means anonymous."
CONTROL_NOTES = {
    OP_PING: "Ping data: the other side answers with a pong that carries it back (RFC 6455 5.5.2); libzmq pings "
             "as its heartbeat.",
    OP_PONG: "Pong data: what the ping carried (RFC 6455 5.5.3); libzmq 4.3 answers with none.",
}
CONTROL_NAMES = {OP_PING: "WS-PING", OP_PONG: "WS-PONG", OP_CLOSE: "WS-CLOSE"}


class _State(Enum):
    HEAD = "head"  # reading the HTTP upgrade
    WAIT = "wait"  # the request is read; its meaning waits for the response
    FRAMES = "frames"
    LOST = "lost"  # frame boundaries lost (a gap, an unreadable head): nothing more is read
    DONE = "done"  # the upgrade was refused: what follows is not WebSocket
    CLOSED = "closed"


_HEAD, _WAIT, _FRAMES, _LOST, _DONE, _CLOSED = _State


class _Side(Buffered):
    """One direction: its bytes, where its reading is, and what it has said so far."""

    def __init__(self, direction: str) -> None:
        self.direction = direction
        self.client = direction == C2S
        self.buffer = StreamBuffer()
        self.state = _HEAD
        self.head: Upgrade | None = None
        self.held: list[WireEvent] = []  # the request's greeting and its findings, until the response
        self.head_raw = b""
        self.fragments: list[tuple[int, WsHeader, int]] = []  # (offset, header, payload offset) of a message
        self.fragment_wire: list[bytes] = []
        self.fragment_plain: list[bytes] = []  # the same with the masking undone
        self.fragment_payload = bytearray()
        self.pending: list[ZwsFrame] = []  # the frames of an unfinished multipart message
        self.routing_id: bytes | None = None
        self.ready = False
        self.closing = False  # this side sent its close frame
        self.lost_since = 0
        self.discard = 0  # octets of an over-budget frame still to skip as they arrive
        self.dropping = False  # the rest of an over-budget message's fragments are skipped too
        self.pending_held = 0  # octets the frames of `pending` hold (against the budget)

    @property
    def pending_start(self) -> int | None:
        """Stream offset of the first element still being read (a held greeting, a fragment, a message's frame)."""
        if self.held:
            return self.held[0].offset
        if self.fragments:
            return self.fragments[0][0]
        return self.pending[0].offset if self.pending else None


class ZwsDissector:
    """Reads a whole ZWS connection (both directions) and never raises on bad input (module docstring)."""

    def __init__(self, max_held: int | None = None) -> None:
        self.max_held = max_held  # (the module docstring)
        self.sides = {C2S: _Side(C2S), S2C: _Side(S2C)}
        self.decoders = self.sides  # (what a capture reader asks of each direction: offset, pending_start)
        self.protocol: str | None = None  # what the connection is read as: the subprotocol chosen, or offered first
        self.chosen: str | None = None  # the subprotocol the server's response names
        self.refused = False
        self.socket_types: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self._pair_check = PairCheck()
        self._closed = False

    @property
    def mechanism(self) -> str | None:
        """The mechanism of the subprotocol chosen (None before the response, and without one)."""
        return mechanism_of(self.protocol)

    @property
    def routing_ids(self) -> bool:
        return routing_ids(self.protocol)

    def receive_data(self, direction: str, data: bytes, *, boundary: bool = True) -> list[Item]:
        """Feeds one direction's bytes; returns the (direction, event) pairs now decoded, of either direction
        (the response lets the request's greeting and frames be read)."""
        side = self.sides[direction]
        out: list[Item] = []
        if side.state is _CLOSED:
            return out
        side.buffer.feed(data)
        self._read(side, out)
        return out

    def gap(self, direction: str, length: int) -> list[Item]:
        """Says `length` bytes of one direction are missing (capture loss): frame boundaries are lost."""
        side = self.sides[direction]
        out: list[Item] = [(direction, Gap(side.received, length))]
        if side.state in (_HEAD, _WAIT, _FRAMES):
            self._lose(side, out, side.received,
                       f"{length} bytes missing from the capture; frame boundaries are no longer certain")
        side.buffer.skip(length)
        if side.state in (_LOST, _DONE):
            side.lost_since = max(side.lost_since, side.buffer.offset)  # (what is counted: bytes seen, not missing)
        return out

    def close(self) -> list[Item]:
        """Says the connection ended; returns the findings about what was left unfinished."""
        if self._closed:
            return []
        self._closed = True
        out: list[Item] = []
        c2s = self.sides[C2S]
        if c2s.state is _WAIT:  # the response never came: the request's greeting as far as it goes
            self._release(c2s, out)
            out.append((C2S, Expert(c2s.offset, 0, severity="warn",
                                    text="the server never answered the HTTP upgrade", rule="upgrade")))
        for side in (c2s, self.sides[S2C]):
            d = side.direction
            left = side.buffer.available
            if side.state is _HEAD and left:
                out.append((d, Expert(side.offset, left, severity="error",
                                      text="stream ended before the HTTP upgrade was complete", rule="upgrade")))
            elif side.state is _FRAMES and (left or side.fragments or side.pending):
                start = side.pending_start if side.pending_start is not None else side.offset
                out.append((d, Expert(start, side.received - start, severity="error",
                                      text="connection closed in the middle of a message", rule="message")))
            elif side.state is _LOST and side.received > side.lost_since:
                skipped = side.received - side.lost_since
                out.append((d, Expert(side.lost_since, skipped, severity="warn",
                                      text=f"{skipped} bytes could not be decoded: no certain frame boundary found",
                                      rule="frame")))
            elif side.state is _DONE and side.received > side.lost_since:
                n = side.received - side.lost_since
                out.append((d, Expert(side.lost_since, n, severity="note",
                                      text=f"{n} bytes after the refused upgrade: not WebSocket", rule="upgrade")))
            side.state = _CLOSED
        if not self.refused and not self.errors and c2s.head is not None and self.protocol is not None:
            undone = [s for s in (c2s, self.sides[S2C]) if not self._handshake_done(s)]
            if undone:
                d = undone[0].direction
                out.append((d, Expert(self.sides[d].received, 0, severity="warn",
                                      text="handshake never completed: connection ended before both sides were ready",
                                      rule="handshake")))
        return out

    # ------------------------------------------------------------------ reading

    def _read(self, side: _Side, out: list[Item]) -> None:
        while True:
            state = side.state
            if state is _HEAD:
                if not self._read_head(side, out):
                    return
            elif state is _FRAMES:
                if side.discard:
                    buffer = side.buffer
                    take = min(buffer.available, side.discard)
                    buffer.pos += take
                    side.discard -= take
                    if side.discard:
                        buffer.skip()
                        return
                    continue
                if not self._read_frame(side, out):
                    if not side.fragments and side.buffer.pos > 65536:
                        side.buffer.commit()
                    return
            else:
                if state in (_LOST, _DONE):  # nothing more is read: forget it (close() counts it)
                    side.buffer.skip()
                return

    def _lose(self, side: _Side, out: list[Item], at: int, text: str, severity: str = "warn") -> None:
        d = side.direction
        if side.pending or side.fragments:
            frames = len(side.pending) + (1 if side.fragments else 0)
            out.append((d, Expert(side.pending_start or at, 0, severity="warn",
                                  text=f"a {frames}-frame partial message was lost with the gap", rule="message")))
        side.pending, side.fragments, side.fragment_wire, side.fragment_plain = [], [], [], []
        side.fragment_payload = bytearray()
        side.pending_held, side.discard, side.dropping = 0, 0, False
        if side.held:
            self._release(side, out)
        out.append((d, Expert(at, 0, severity=severity, text=text, rule="frame")))
        side.state = _LOST
        side.lost_since = at

    # ---- the HTTP upgrade

    def _read_head(self, side: _Side, out: list[Item]) -> bool:
        buffer = side.buffer
        size = head_length(buffer.data, buffer.pos)
        if size is None:
            if buffer.available > MAX_HEAD:
                self._lose(side, out, buffer.offset, f"no end of the HTTP upgrade in its first {MAX_HEAD} octets",
                           severity="error")
            return False
        offset = buffer.offset
        raw = buffer.consume(size)
        d = side.direction
        try:
            head = parse_request(raw) if side.client else parse_response(raw)
        except h11.RemoteProtocolError as exc:
            text = (f"the HTTP upgrade request is not valid HTTP/1.1: {exc}" if side.client
                    else f"the HTTP upgrade response is not valid HTTP/1.1: {exc}")
            out.append((d, Expert(offset, size, severity="error", text=text, rule="upgrade")))
            side.state = _LOST
            side.lost_since = buffer.offset
            return True
        side.head = head
        side.head_raw = raw
        if side.client:
            side.held = [ZwsGreeting(offset, size, raw=raw)]  # made whole once the response says what was chosen
            side.held.extend(self._request_problems(head, offset, size))
            side.state = _WAIT
            if self.sides[S2C].head is not None:
                self._answered(out)
            return True
        self._on_response(head, offset, size, raw, out)
        return True

    def _request_problems(self, request: Upgrade, offset: int, size: int) -> list[WireEvent]:
        found: list[WireEvent] = []

        def problem(severity: str, text: str) -> None:
            found.append(Expert(offset, size, severity=severity, text=text, rule="upgrade"))

        if not request.upgrades_to_websocket:
            problem("error", "the request does not ask to upgrade to WebSocket (Upgrade: websocket, Connection: "
                             "Upgrade)")
        if request.header("sec-websocket-version") != "13":
            problem("warn", "Sec-WebSocket-Version is not 13 (RFC 6455)")
        if request.header("sec-websocket-key") is None:
            problem("error", "the request has no Sec-WebSocket-Key (RFC 6455 4.1)")
        offered = request.protocols
        if not offered:
            problem("error", "the request offers no subprotocol: 45/ZWS requires at least one")
        unknown = [p for p in offered if p not in PROTOCOLS and p != ZWS1]
        if unknown:
            problem("note", f"subprotocols this dissector does not know: {', '.join(unknown)}")
        return found

    def _on_response(self, response: Upgrade, offset: int, size: int, raw: bytes, out: list[Item]) -> None:
        side = self.sides[S2C]
        request = self.sides[C2S].head
        offered = request.protocols if request is not None else []
        protocol = response.header("sec-websocket-protocol")
        problems: list[Expert] = []

        def problem(severity: str, text: str) -> None:
            problems.append(Expert(offset, size, severity=severity, text=text, rule="upgrade"))

        if response.status != 101:
            self.refused = True
            problem("error", f"the server refused the WebSocket upgrade: HTTP {response.status}")
        else:
            if not response.upgrades_to_websocket:
                problem("error", "the response does not confirm the upgrade (Upgrade: websocket, Connection: "
                                 "Upgrade)")
            key = request.header("sec-websocket-key") if request is not None else None
            accept = response.header("sec-websocket-accept")
            if key is not None and accept != accept_token(key):
                problem("warn", "Sec-WebSocket-Accept does not answer the client's Sec-WebSocket-Key (RFC 6455 4.2.2)")
            if protocol is None:
                problem("error", "the server chose no subprotocol: without one the connection is not ZWS "
                                 "(45/ZWS: the server must choose one of the client's)")
            elif request is not None and protocol not in offered:
                problem("error", f"the server chose {protocol}, which the client did not offer")
            if response.header("sec-websocket-extensions"):
                problem("warn", "the server accepted a WebSocket extension: compressed payloads are shown as they "
                                "are, not decoded")
        self.chosen = protocol
        self.protocol = protocol if protocol is not None else (offered[0] if offered else None)
        self._answered(out)
        out.append((S2C, self._greeting(offset, size, raw, response)))
        out.extend((S2C, e) for e in problems)
        side.state = _DONE if self.refused else _FRAMES
        side.lost_since = side.buffer.offset
        c2s = self.sides[C2S]
        if c2s.state is _FRAMES or c2s.state is _DONE:  # what the client sent after its request
            self._read(c2s, out)

    def _answered(self, out: list[Item]) -> None:
        """The response is read: the request's greeting is made whole and the client's frames can be read."""
        c2s = self.sides[C2S]
        if c2s.state is not _WAIT:
            return
        self._release(c2s, out)
        c2s.state = _DONE if self.refused else _FRAMES
        c2s.lost_since = c2s.buffer.offset

    def _release(self, c2s: _Side, out: list[Item]) -> None:
        held, c2s.held = c2s.held, []
        if not held or c2s.head is None:
            return
        first = held[0]
        out.append((C2S, self._greeting(first.offset, first.length, c2s.head_raw, c2s.head)))
        out.extend((C2S, e) for e in held[1:])

    def _greeting(self, offset: int, size: int, raw: bytes, head: Upgrade) -> ZwsGreeting:
        protocol = self.protocol
        if protocol is None and head.target is not None and head.protocols:
            protocol = head.protocols[0]
        mechanism = mechanism_of(protocol)
        socket_type = None
        if protocol == ZWS1 and head.target is not None and "type=" in head.target:  # 39/ZWS: ?type=DEALER
            query = head.target.partition("?")[2]
            for pair in query.split("&"):
                key, _, value = pair.partition("=")
                if key == "type" and value:
                    socket_type = value.upper()
        return ZwsGreeting(offset, size, version=version_of(protocol), mechanism=mechanism,
                           as_server=False if mechanism == "NULL" else None, socket_type=socket_type, raw=raw,
                           field_list=tuple(head_fields(offset, raw)), protocol=self.chosen,
                           offered=tuple(head.protocols) if head.target is not None else (),
                           target=head.target, status=head.status)

    # ---- WebSocket frames

    def _read_frame(self, side: _Side, out: list[Item]) -> bool:
        buffer = side.buffer
        data, pos = buffer.data, buffer.pos
        header = read_header(data, pos)
        if header is None:
            return False
        end = pos + header.size + header.length
        limit = self.max_held
        if limit is not None and not header.control and (side.dropping or header.size + header.length > limit):
            self._skip_frame(side, header, limit, out)
            return True
        if end > len(data):
            return False
        offset = buffer.offset
        raw = bytes(data[pos:end])
        buffer.pos = end
        d = side.direction
        fields = header_fields(offset, raw, header)
        payload = unmask(raw[header.size:], header.mask)
        plain = raw[:header.size] + payload if header.masked else b""  # (what the fields describe)
        problems = self._frame_problems(side, header, offset)
        opcode = header.opcode
        if opcode in (OP_PING, OP_PONG, OP_CLOSE):
            out.append((d, self._control(side, offset, raw, fields, header, payload, plain)))
        elif opcode == OP_TEXT:
            problems.append(Expert(offset, len(raw), severity="error", rule="frame-opcode",
                                   text="a text message (opcode 0x1): ZWS messages are binary (45/ZWS)"))
        elif opcode in (OP_BINARY, OP_CONTINUATION):
            if side.closing:
                problems.append(Expert(offset, len(raw), severity="warn", rule="close",
                                       text="a data frame after this side's close frame (RFC 6455 5.5.1)"))
            if opcode == OP_CONTINUATION and not side.fragments:
                problems.append(Expert(offset, len(raw), severity="warn", rule="frame-opcode",
                                       text="a continuation frame with no message to continue (RFC 6455 5.4)"))
            else:
                if opcode == OP_BINARY and side.fragments:
                    problems.append(Expert(offset, 0, severity="warn", rule="frame-opcode",
                                           text="a new message began before the last one's final frame (RFC 6455 5.4)"))
                    side.fragments, side.fragment_wire, side.fragment_payload = [], [], bytearray()
                    side.fragment_plain = []
                side.fragments.append((offset, header, offset + header.size))
                side.fragment_wire.append(raw)
                side.fragment_plain.append(plain or raw)
                side.fragment_payload += payload
                if limit is not None and len(side.fragment_payload) > limit:
                    self._drop_message(side, header, limit, out)
                elif header.fin:
                    out.extend((d, e) for e in problems)
                    problems = []
                    self._message(side, out)
        else:
            problems.append(Expert(offset, len(raw), severity="error", rule="frame-opcode",
                                   text=f"reserved WebSocket opcode 0x{opcode:x} (RFC 6455 5.2)"))
        out.extend((d, e) for e in problems)
        return side.state is _FRAMES

    def _frame_problems(self, side: _Side, header: WsHeader, offset: int) -> list[WireEvent]:
        found: list[WireEvent] = []
        if header.masked != side.client:
            text = ("a client's frame must be masked (RFC 6455 5.1)" if side.client
                    else "a server's frame must not be masked (RFC 6455 5.1)")
            found.append(Expert(offset + 1, 1, severity="warn", text=text, rule="frame-masked"))
        if header.rsv:
            found.append(Expert(offset, 1, severity="warn", rule="frame-rsv",
                                text=f"reserved bits set (RSV 0x{header.rsv:x}): compressed or extended by an "
                                     "extension ZWS does not use"))
        if not header.minimal:
            found.append(Expert(offset + 1, 1 + header.length_octets, severity="note", rule="frame-payload-length",
                                text=f"a payload length of {header.length} written in {header.length_octets} octets "
                                     "where fewer do (RFC 6455 5.2 wants the fewest)"))
        if header.control and (not header.fin or header.length > MAX_CONTROL_PAYLOAD):
            found.append(Expert(offset, header.size, severity="warn", rule="frame-opcode",
                                text="a control frame must be final and carry at most 125 octets (RFC 6455 5.5)"))
        if header.length_octets == 8 and header.length >> 63:
            found.append(Expert(offset + 2, 8, severity="warn", rule="frame-payload-length",
                                text="the most significant bit of a 64-bit payload length must be 0 (RFC 6455 5.2)"))
        return found

    def _control(self, side: _Side, offset: int, raw: bytes, fields: list[Field], header: WsHeader,
                 payload: bytes, plain: bytes) -> Command:
        at = offset + header.size
        details: dict[str, object] = {"transport": "zws"}
        if plain:
            details["unmasked"] = plain.hex()
        fields = list(fields)
        if header.opcode == OP_CLOSE:
            side.closing = True
            code, reason = close_payload(payload)
            details["code"] = code
            details["reason"] = reason
            if code is not None:
                fields.append(Field("status-code", at, 2, code, "close-status",
                                    "Why the sender closes: 1000 normal, 1001 going away, 1002 protocol error, 1008 "
                                    "policy, 1009 too big (RFC 6455 7.4.1)."))
                fields.append(Field("reason", at + 2, len(payload) - 2, reason, "close-reason",
                                    "The reason in UTF-8, for people (RFC 6455 5.5.1)."))
            elif payload:
                fields.append(body_field(at, payload, name="application-data", rule="close-status"))
        else:
            details["data"] = payload.hex()
            fields.append(Field("application-data", at, len(payload), text_or_hex(payload), "application-data",
                                CONTROL_NOTES[header.opcode]))
        return Command(offset, len(raw), name=CONTROL_NAMES[header.opcode], raw=raw, details=details,
                       field_list=tuple(fields))

    # ---- the budget

    def _skip_frame(self, side: _Side, header: WsHeader, limit: int, out: list[Item]) -> None:
        """A data frame larger than the budget (or of a message being dropped) at the cursor: reported now (when
        it is the first of its message to go over), then skipped as it arrives with the rest of its message."""
        buffer = side.buffer
        if not side.dropping:
            size = header.size + header.length
            out.append((side.direction, Expert(buffer.offset, size, severity="warn", rule="budget",
                                               text=f"WebSocket frame of {header.length} octets is larger than the "
                                                    f"{limit} octets the dissector holds for one element: skipped as "
                                                    "it arrives, with the rest of its message")))
            self._forget_message(side)
        side.dropping = not header.fin
        buffer.pos += header.size
        side.discard = header.length

    def _drop_message(self, side: _Side, header: WsHeader, limit: int, out: list[Item]) -> None:
        """The fragments of the message being read outgrew the budget: reported, the rest skipped."""
        out.append((side.direction, Expert(side.fragments[0][0], 0, severity="warn", rule="budget",
                                           text=f"a WebSocket message of more than {limit} octets in "
                                                f"{len(side.fragments)} fragments, larger than the dissector holds "
                                                "for one element: skipped as it arrives")))
        self._forget_message(side)
        side.dropping = not header.fin

    @staticmethod
    def _forget_message(side: _Side) -> None:
        side.fragments, side.fragment_wire, side.fragment_plain = [], [], []
        side.fragment_payload = bytearray()

    # ---- ZWS frames

    def _message(self, side: _Side, out: list[Item]) -> None:
        """A whole WebSocket message (one or more frames) is one ZWS frame."""
        fragments, wire, payload = side.fragments, b"".join(side.fragment_wire), bytes(side.fragment_payload)
        plain = b"".join(side.fragment_plain)
        plain = b"" if plain == wire else plain  # (unmasked frames need no second copy)
        side.fragments, side.fragment_wire, side.fragment_payload, side.fragment_plain = [], [], bytearray(), []
        d = side.direction
        offset = fragments[0][0]
        last_at, last_header = fragments[-1][2], fragments[-1][1]
        length = last_at + last_header.length - offset  # (a control frame between fragments lies within)
        fields: list[Field] = []
        spans: list[tuple[int, int]] = []  # (stream offset, length) of each fragment's payload
        for frag_offset, header, payload_at in fragments:
            start = frag_offset - offset
            fields.extend(header_fields(frag_offset, wire[start:start + header.size], header))
            spans.append((payload_at, header.length))
        if len(fragments) > 1:
            out.append((d, Expert(offset, length, severity="note", rule="frame-fin",
                                  text=f"one ZWS frame in {len(fragments)} WebSocket frames (fragmented); libzmq 4.3 "
                                       "refuses fragmented messages")))
        if not payload:
            out.append((d, Expert(offset, length, severity="error", rule="flags",
                                  text="an empty WebSocket message: a ZWS frame starts with its flag octet "
                                       "(45/ZWS Framing)")))
            return
        flags, body = payload[0], payload[1:]
        flag_at, body_at = _position(spans, 0), _position(spans, 1)
        names = "|".join(n for bit, n in ((FLAG_MORE, "MORE"), (FLAG_COMMAND, "COMMAND")) if flags & bit) or "final"
        fields.append(Field("flags", flag_at, 1, f"0x{flags:02x} ({names})", "flags", FLAGS_NOTE))
        if flags & RESERVED_FLAGS:
            out.append((d, Expert(flag_at, 1, severity="warn", rule="flags",
                                  text=f"reserved flag bits set: 0x{flags & RESERVED_FLAGS:02x}")))
        extended = fragments[0][1].length_octets > 0
        if self.routing_ids and side.routing_id is None:
            self._routing_id(side, offset, length, wire, plain, fields, flags, body, body_at, out)
            return
        mechanism = self.mechanism
        if flags & FLAG_COMMAND or (mechanism == "CURVE" and body.startswith(b"\x07MESSAGE")):
            self._command(side, offset, length, wire, plain, fields, flags, body, body_at, out)
            return
        fields.append(body_field(body_at, body))
        frame = ZwsFrame(offset, length, flags=flags, size=len(body), header=wire[:body_at - offset], body=body,
                         framing="zws", wire=wire, field_list=tuple(fields), extended=extended, unmasked=plain)
        out.append((d, frame))
        if flags & FLAG_MORE:
            side.pending.append(frame)
            side.pending_held += length
            if self.max_held is not None and side.pending_held > self.max_held:
                out.append((d, Expert(side.pending[0].offset, 0, severity="warn", rule="budget",
                                      text=f"a message of more than {self.max_held} octets held in "
                                           f"{len(side.pending)} frames, larger than the dissector holds for one "
                                           "element: its frames are reported, the message as a whole is not")))
                side.pending, side.pending_held = [], 0
            return
        parts = (*side.pending, frame)
        side.pending, side.pending_held = [], 0
        first = parts[0].offset
        message = Message(first, offset + length - first, parts=parts)
        out.append((d, message))
        self._on_message(side, message, out)

    def _routing_id(self, side: _Side, offset: int, length: int, wire: bytes, plain: bytes, fields: list[Field],
                    flags: int, body: bytes, body_at: int, out: list[Item]) -> None:
        d = side.direction
        side.routing_id = body
        side.ready = True
        fields.append(Field("routing-id", body_at, len(body), text_or_hex(body), "identity", ROUTING_ID_NOTE))
        out.append((d, ZwsGreeting(offset, length, version="2.0", mechanism="NULL", identity=body, raw=wire,
                                   field_list=tuple(fields), protocol=self.chosen, routing_id=True,
                                   unmasked=plain)))
        if flags:
            out.append((d, Expert(offset, length, severity="warn", rule="identity",
                                  text=f"a routing id is one final message frame; its flags are 0x{flags:02x}")))

    def _command(self, side: _Side, offset: int, length: int, wire: bytes, plain: bytes, fields: list[Field],
                 flags: int, body: bytes, body_at: int, out: list[Item]) -> None:
        d = side.direction
        decoded = decode_command(body, body_at, self.mechanism)
        details: dict[str, object] = {"transport": "zws", **({"unmasked": plain.hex()} if plain else {}),
                                      **decoded.details}
        command = Command(offset, length, name=decoded.name, raw=wire, details=details,
                          field_list=(*fields, *decoded.fields), metadata=decoded.metadata)
        out.append((d, command))
        if flags & FLAG_MORE:
            out.append((d, Expert(offset, length, severity="warn", text="MORE flag set on a command frame",
                                  rule="flags")))
        if side.pending:
            out.append((d, Expert(offset, length, severity="warn", text="command inside a multipart message",
                                  rule="traffic")))
        if self.routing_ids:
            out.append((d, Expert(offset, length, severity="warn", rule="traffic",
                                  text="a command on a connection without mechanism, whose traffic is messages only "
                                       "(45/ZWS)")))
        if decoded.name == "ERROR":
            reason = decoded.details.get("reason", "")
            self.errors[d] = reason
            out.append((d, Expert(offset, length, severity="error", text=f"ERROR received: {reason!r}",
                                  rule="error")))
        for severity, text, rule, at, size in decoded.problems:
            out.append((d, Expert(at, size, severity=severity, text=text, rule=rule)))
        mechanism = (self.mechanism or "NULL").upper()
        # The metadata: READY's (sealed in a box with CURVE), and a PLAIN or CURVE client's INITIATE.
        if (decoded.name == "READY" and mechanism != "CURVE") or (decoded.name == "INITIATE" and mechanism != "NULL"):
            props = {k.lower(): v for k, v in command.properties.items()}
            if "socket-type" in props:
                self.socket_types[d] = props["socket-type"].upper()
            elif decoded.name == "READY":
                out.append((d, Expert(offset, length, severity="note", text="READY has no Socket-Type property",
                                      rule="socket-type")))
            self._check_pair(d, out)
        if decoded.name == "READY" or (decoded.name == "INITIATE" and mechanism in ("PLAIN", "CURVE")):
            side.ready = True

    def _on_message(self, side: _Side, message: Message, out: list[Item]) -> None:
        d = side.direction
        if not self._handshake_done(side):
            out.append((d, Expert(message.offset, message.length, severity="warn",
                                  text="message sent before the handshake completed", rule="traffic")))
        if self.socket_types.get(d) in ("SUB", "XSUB") and len(message.parts) == 1:
            body = message.parts[0].body
            if body[:1] in (b"\x00", b"\x01"):
                what = "subscribe" if body[0] == 1 else "cancel"
                out.append((d, Expert(message.offset, message.length, severity="note", rule="subscribe",
                                      text=f"{what} {text_or_hex(body[1:])!r} as a prefixed message (ZWS)")))

    def _handshake_done(self, side: _Side) -> bool:
        return side.ready

    def _check_pair(self, direction: str, out: list[Item]) -> None:
        expert = self._pair_check(self.socket_types, self.sides[direction].offset)
        if expert is not None:
            out.append((direction, expert))


def _position(spans: list[tuple[int, int]], index: int) -> int:
    """The stream offset of payload octet `index` of a message whose fragments' payloads are `spans`."""
    for start, length in spans:
        if index < length:
            return start + index
        index -= length
    start, length = spans[-1]
    return start + length
