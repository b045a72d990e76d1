"""The events the engine reports: one per protocol element, plus a peer's state changes.

Wire events (`Greeting`, `Command`, `Frame`, `Message`, `Expert`, `Gap`) follow the event
contract of docs/architecture.md; `to_dict()` gives the JSON form without the source keys (`conn`,
`dir`, `packets`, `ts`, `t`), which the source adds. Peer events (`HandshakeComplete`,
`ConnectionClosed`, ...) are what a strict peer tells the code that drives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any, ClassVar

from .fields import Field
from .framing import BODY_NOTE, BODY_RULE, body_field, body_value, encode_frame, header_field_dicts, header_fields


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event."""

    kind: ClassVar[str] = "event"


@dataclass(frozen=True, slots=True)
class WireEvent(Event):
    """A protocol element at `offset` in one direction's byte stream, `length` octets long."""

    offset: int
    length: int

    @property
    def fields(self) -> list[Field]:
        """The element's annotated fields (computed on demand where that is cheaper)."""
        return []

    def info(self) -> dict[str, Any]:
        """The kind-specific keys of the event contract."""
        return {}

    def field_dicts(self) -> list[dict[str, Any]]:
        """The fields as the JSON contract's dicts (`[f.to_dict() for f in self.fields]`)."""
        return [f.to_dict() for f in self.fields]

    def to_dict(self, *, with_fields: bool = True, max_body: int | None = None) -> dict[str, Any]:
        """The event as the JSON contract's object (without conn/dir/packets/ts)."""
        out: dict[str, Any] = {"kind": self.kind, "offset": self.offset, "length": self.length}
        out.update(self.info())
        if max_body is not None:
            cut_bodies(out, max_body)
        if with_fields:
            out["fields"] = self.field_dicts()
        return out


def cut_bodies(event: dict[str, Any], max_body: int, hex_slack: int | None = None) -> dict[str, Any]:
    """Cuts an event dict's octets to `max_body`: `body`, `hex` by as much (it repeats the body) and each of
    `frames`, marking it `truncated`; returns it. With `hex_slack`, a `hex` whose body was not cut (an event
    without one) is cut too when it is longer than `max_body + hex_slack` octets.

    The one body cutter of every output that shortens events (`to_dict`, the event store's API answers, the
    live viewer, `zmtplab peer`)."""
    limit = 2 * max_body
    body = event.get("body")
    if isinstance(body, str) and len(body) > limit:
        extra = len(body) - limit
        event["body"] = body[:limit]
        whole = event.get("hex")
        if isinstance(whole, str) and len(whole) >= extra:
            event["hex"] = whole[: len(whole) - extra]
        event["truncated"] = True
    elif hex_slack is not None:
        whole = event.get("hex")
        if isinstance(whole, str) and len(whole) > limit + 2 * hex_slack:
            event["hex"] = whole[: limit + 2 * hex_slack]
            event["truncated"] = True
    frames = event.get("frames")
    if isinstance(frames, list) and any(isinstance(f, str) and len(f) > limit for f in frames):
        event["frames"] = [f[:limit] if isinstance(f, str) else f for f in frames]
        event["truncated"] = True
    return event


@dataclass(frozen=True, slots=True)
class Greeting(WireEvent):
    """A greeting: 64 octets in 3.x; signature, revision, socket type and identity in 2.0; identity in 1.0."""

    kind: ClassVar[str] = "greeting"
    version: str = "3.0"
    mechanism: str | None = None
    as_server: bool | None = None
    socket_type: str | None = None
    identity: bytes | None = None
    raw: bytes = b""
    field_list: tuple[Field, ...] = ()

    @property
    def fields(self) -> list[Field]:
        return list(self.field_list)

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.version, "hex": self.raw.hex()}
        if self.version.startswith(("1.", "2.")):
            if self.socket_type is not None:
                out["socket_type"] = self.socket_type
            out["identity"] = (self.identity or b"").hex()
        else:
            out["mechanism"] = self.mechanism
            out["as_server"] = self.as_server
        return out


@dataclass(frozen=True, slots=True)
class Command(WireEvent):
    """A command frame: READY, ERROR, HELLO, WELCOME, INITIATE, MESSAGE, PING, PONG, SUBSCRIBE, CANCEL, ..."""

    kind: ClassVar[str] = "command"
    name: str = ""
    raw: bytes = b""
    details: dict[str, Any] = field(default_factory=dict)
    field_list: tuple[Field, ...] = ()
    metadata: dict[str, bytes] = field(default_factory=dict)  # READY/INITIATE properties as raw bytes

    @property
    def fields(self) -> list[Field]:
        return list(self.field_list)

    @property
    def properties(self) -> dict[str, str]:
        """READY/INITIATE metadata (name -> value as text or hex); empty for other commands."""
        return self.details.get("properties", {})

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "hex": self.raw.hex()}
        out.update(self.details)
        return out


@dataclass(frozen=True, slots=True)
class Frame(WireEvent):
    """A message frame (commands are `Command` events)."""

    kind: ClassVar[str] = "frame"
    flags: int = 0
    size: int = 0
    header: bytes = b""
    body: bytes = b""
    framing: str = "3"
    truncated: bool = False

    @property
    def more(self) -> bool:
        return bool(self.flags & 1)

    @property
    def long(self) -> bool:
        return len(self.header) > 2

    @property
    def fields(self) -> list[Field]:
        fields = header_fields(self.offset, self.header, self.framing)
        fields.append(body_field(self.offset + len(self.header), self.body))
        return fields

    def field_dicts(self) -> list[dict[str, Any]]:
        # The same dicts as `[f.to_dict() for f in self.fields]`, built directly: every frame a session
        # streams goes through here.
        offset = self.offset
        header = self.header
        out = header_field_dicts(offset, header, self.framing)
        body = self.body
        out.append({"name": "body", "offset": offset + len(header), "length": len(body),
                    "value": body_value(body), "rule": BODY_RULE, "note": BODY_NOTE})
        return out

    def info(self) -> dict[str, Any]:
        body = self.body.hex()
        out: dict[str, Any] = {
            "more": self.more, "long": self.long, "size": self.size, "body": body, "hex": self.header.hex() + body,
        }
        if self.truncated:
            out["truncated"] = True
        return out

    def to_dict(self, *, with_fields: bool = True, max_body: int | None = None) -> dict[str, Any]:
        """As `WireEvent.to_dict` (`cut_bodies` cuts `hex` like `body`, which it repeats)."""
        if max_body is None:  # the common case in one go (same keys, same order)
            body = self.body.hex()
            header = self.header
            out: dict[str, Any] = {"kind": self.kind, "offset": self.offset, "length": self.length,
                                   "more": bool(self.flags & 1), "long": len(header) > 2, "size": self.size,
                                   "body": body, "hex": header.hex() + body}
            if self.truncated:
                out["truncated"] = True
            if with_fields:
                out["fields"] = self.field_dicts()
            return out
        if len(self.body) > max_body:
            # Only the octets kept are made hex (a 1 MB body's 2 MB of hex, twice, then cut, cost more than the
            # rest of the frame): the same dict `cut_bodies` makes of the whole one.
            body = self.body[:max_body].hex()
            out = {"kind": self.kind, "offset": self.offset, "length": self.length, "more": bool(self.flags & 1),
                   "long": len(self.header) > 2, "size": self.size, "body": body, "hex": self.header.hex() + body,
                   "truncated": True}
            if with_fields:
                out["fields"] = self.field_dicts()
            return out
        return WireEvent.to_dict(self, with_fields=with_fields, max_body=max_body)


@dataclass(frozen=True, slots=True)
class Message(WireEvent):
    """One complete application message: every frame, delivered atomically."""

    kind: ClassVar[str] = "message"
    parts: tuple[Frame, ...] = ()

    @property
    def frames(self) -> list[bytes]:
        return [p.body for p in self.parts]

    @property
    def fields(self) -> list[Field]:
        out: list[Field] = []
        for i, part in enumerate(self.parts, 1):
            out.append(body_field(part.offset + len(part.header), part.body, name=f"frame {i}"))
        return out

    def field_dicts(self) -> list[dict[str, Any]]:
        # A plain loop: cheaper than a comprehension (a function call of its own) for the usual one part.
        out = []
        for i, part in enumerate(self.parts, 1):
            body = part.body
            out.append({"name": f"frame {i}", "offset": part.offset + len(part.header), "length": len(body),
                        "value": body_value(body), "rule": BODY_RULE, "note": BODY_NOTE})
        return out

    def info(self) -> dict[str, Any]:
        return {"frames": [p.body.hex() for p in self.parts]}

    def to_dict(self, *, with_fields: bool = True, max_body: int | None = None) -> dict[str, Any]:
        """As `WireEvent.to_dict` (built in one go when nothing is cut: every message goes through here)."""
        if max_body is not None:
            if any(len(p.body) > max_body for p in self.parts):  # (only the octets kept are made hex)
                out = {"kind": self.kind, "offset": self.offset, "length": self.length,
                       "frames": [p.body[:max_body].hex() for p in self.parts], "truncated": True}
                if with_fields:
                    out["fields"] = self.field_dicts()
                return out
            return WireEvent.to_dict(self, with_fields=with_fields, max_body=max_body)
        out: dict[str, Any] = {"kind": self.kind, "offset": self.offset, "length": self.length,
                               "frames": [p.body.hex() for p in self.parts]}
        if with_fields:
            out["fields"] = self.field_dicts()
        return out


@dataclass(frozen=True, slots=True)
class ZwsGreeting(Greeting):
    """The greeting of a ZWS connection (45/ZWS): its HTTP upgrade, request or response, or, without a
    mechanism, a side's routing-id message (`routing_id`). `raw` is the element's octets as on the wire."""

    protocol: str | None = None  # the subprotocol the server chose (None: none, or not known)
    offered: tuple[str, ...] = ()  # a request's: the subprotocols the client offered
    target: str | None = None  # a request's: the resource asked for
    status: int | None = None  # a response's: the HTTP status
    routing_id: bool = False
    unmasked: bytes = b""  # a masked routing id's octets with the masking undone

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.version, "hex": self.raw.hex(), "transport": "zws",
                               "protocol": self.protocol}
        if self.routing_id:
            out["identity"] = (self.identity or b"").hex()
            if self.unmasked:
                out["unmasked"] = self.unmasked.hex()
            return out
        if self.target is not None:
            out["target"] = self.target
            out["protocols"] = list(self.offered)
        if self.status is not None:
            out["status"] = self.status
        if self.socket_type is not None:
            out["socket_type"] = self.socket_type
        if self.version.startswith("3"):
            out["mechanism"] = self.mechanism
            out["as_server"] = self.as_server
        return out


@dataclass(frozen=True, slots=True)
class ZwsFrame(Frame):
    """A ZWS frame: one binary WebSocket message (45/ZWS Framing). `header` is all of it before the body
    (WebSocket header(s), masking key, flag octet), `body` the body unmasked, `wire` the octets as sent."""

    wire: bytes = b""
    field_list: tuple[Field, ...] = ()
    extended: bool = False  # the WebSocket payload length took 2 or 8 more octets
    unmasked: bytes = b""  # a client's frame: `wire` with the masking undone (what the fields describe)

    @property
    def fields(self) -> list[Field]:
        return list(self.field_list)

    def field_dicts(self) -> list[dict[str, Any]]:
        return [f.to_dict() for f in self.field_list]

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"more": self.more, "long": self.extended, "size": self.size,
                               "body": self.body.hex(), "hex": self.wire.hex(), "transport": "zws"}
        if self.unmasked:
            out["unmasked"] = self.unmasked.hex()
        if self.truncated:
            out["truncated"] = True
        return out

    def to_dict(self, *, with_fields: bool = True, max_body: int | None = None) -> dict[str, Any]:
        out = WireEvent.to_dict(self, with_fields=with_fields, max_body=max_body)
        if "unmasked" in out and len(out["unmasked"]) > len(out["hex"]):  # cut as `hex` was
            out["unmasked"] = out["unmasked"][:len(out["hex"])]
        return out


# ---- the decoder's constructors for Frame and Message ----------------------------------
#
# A frozen dataclass's __init__ sets each field with object.__setattr__, a lookup and a generic call
# per field. The decoder makes a Frame and a Message for every message a session shows, so these two
# set the slots through their descriptors: the same objects (the dataclass has no __post_init__), in
# about half the time. The setters come from `fields()`, so a new field breaks the unpacking below
# loudly rather than leaving a slot unset; tests/engine/test_event_makers.py holds both equal to the
# dataclass constructors.

_FRAME_SETTERS = tuple(getattr(Frame, f.name).__set__ for f in dataclass_fields(Frame))
_MESSAGE_SETTERS = tuple(getattr(Message, f.name).__set__ for f in dataclass_fields(Message))


def make_frame(offset: int, length: int, flags: int, size: int, header: bytes, body: bytes, framing: str,
               truncated: bool = False) -> Frame:
    """`Frame(offset, length, flags=flags, size=size, header=header, body=body, framing=framing, ...)`, faster."""
    frame = object.__new__(Frame)
    set_offset, set_length, set_flags, set_size, set_header, set_body, set_framing, set_truncated = _FRAME_SETTERS
    set_offset(frame, offset)
    set_length(frame, length)
    set_flags(frame, flags)
    set_size(frame, size)
    set_header(frame, header)
    set_body(frame, body)
    set_framing(frame, framing)
    set_truncated(frame, truncated)
    return frame


def make_message(offset: int, length: int, parts: tuple[Frame, ...]) -> Message:
    """`Message(offset, length, parts=parts)`, faster."""
    message = object.__new__(Message)
    set_offset, set_length, set_parts = _MESSAGE_SETTERS
    set_offset(message, offset)
    set_length(message, length)
    set_parts(message, parts)
    return message


def refieldable(event: WireEvent) -> str | None:
    """The framing from which `refield` makes this event's fields again out of its dict without them: a frame's
    (not cut short), or a message's whose frames all have the shortest header for their size (a message's dict
    keeps only the bodies); None for any other event, whose fields must be kept."""
    if type(event) is Frame:
        return None if event.truncated else event.framing
    if type(event) is not Message or not event.parts:
        return None
    framing = event.parts[0].framing
    if framing not in ("1", "2", "3"):  # (a ZWS message: its frames' WebSocket headers are not made again)
        return None
    for part in event.parts:
        size = len(part.body)
        shortest = (2 if size + 1 < 255 else 10) if framing == "1" else (2 if size <= 255 else 9)
        if part.truncated or part.framing != framing or len(part.header) != shortest:
            return None
    return framing


def refield(event: dict[str, Any], framing: str) -> list[dict[str, Any]]:
    """The `fields` of a frame or message event dict made without them (`to_dict(with_fields=False)`), from the
    octets it holds and `framing`, as `refieldable` gave it: the same dicts `to_dict()` would have made."""
    offset = event["offset"]
    if event["kind"] == "frame":
        body = bytes.fromhex(event["body"])
        header = bytes.fromhex(event["hex"][:len(event["hex"]) - len(event["body"])])
        flags = header[-1] if framing == "1" else header[0]
        return make_frame(offset, event["length"], flags, event["size"], header, body, framing).field_dicts()
    bodies = [bytes.fromhex(f) for f in event["frames"]]
    last = len(bodies) - 1
    parts = []
    pos = offset
    for i, body in enumerate(bodies):  # (shortest headers: what `refieldable` checked)
        wire = encode_frame(body, more=i < last, framing=framing)
        header = wire[:len(wire) - len(body)]
        flags = header[-1] if framing == "1" else header[0]
        parts.append(make_frame(pos, len(wire), flags, len(body), header, body, framing))
        pos += len(wire)
    return make_message(offset, pos - offset, tuple(parts)).field_dicts()


@dataclass(frozen=True, slots=True)
class Expert(WireEvent):
    """A finding about the stream, in the spirit of Wireshark's expert info."""

    kind: ClassVar[str] = "expert"
    severity: str = "warn"
    text: str = ""
    rule: str = ""

    @property
    def fields(self) -> list[Field]:
        return []

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"severity": self.severity, "text": self.text}
        if self.rule:
            out["rule"] = self.rule
        return out


@dataclass(frozen=True, slots=True)
class Gap(WireEvent):
    """Bytes missing from a capture: `length` octets at `offset` that were never seen."""

    kind: ClassVar[str] = "gap"


# ---- peer events: what a strict peer reports to the code that drives it ----------------


@dataclass(frozen=True, slots=True)
class HandshakeComplete(Event):
    """The security handshake finished and both READY (or 2.0/1.0 greetings) were exchanged."""

    kind: ClassVar[str] = "handshake"
    version: str = "3.1"
    mechanism: str = "NULL"
    peer_socket_type: str | None = None
    peer_identity: bytes = b""
    peer_properties: dict[str, bytes] = field(default_factory=dict)
    user_id: str | None = None


@dataclass(frozen=True, slots=True)
class MessageReceived(Event):
    """A complete application message from the peer (decrypted, for CURVE)."""

    kind: ClassVar[str] = "received"
    frames: tuple[bytes, ...] = ()


@dataclass(frozen=True, slots=True)
class SubscriptionChanged(Event):
    """The peer subscribed (or cancelled) `topic`, by command (3.1) or prefixed message (3.0/2.0)."""

    kind: ClassVar[str] = "subscription"
    topic: bytes = b""
    subscribe: bool = True


@dataclass(frozen=True, slots=True)
class PingReceived(Event):
    """The peer sent PING; the connection has already queued the PONG."""

    kind: ClassVar[str] = "ping"
    ttl: int = 0
    context: bytes = b""


@dataclass(frozen=True, slots=True)
class PongReceived(Event):
    """The peer answered one of our PINGs."""

    kind: ClassVar[str] = "pong"
    context: bytes = b""


@dataclass(frozen=True, slots=True)
class ConnectionClosed(Event):
    """The connection is over: the peer sent ERROR, we refused it, or the stream ended."""

    kind: ClassVar[str] = "closed"
    reason: str = ""
    error: bool = False


WIRE_KINDS = ("greeting", "command", "frame", "message", "expert", "gap")
