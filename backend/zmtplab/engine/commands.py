"""Command bodies: encoding them, and decoding them into contract keys, fields and spec findings.

A command body is `name-size name data` (23/ZMTP "command-body"); what the data means
depends on the command and on the mechanism the greeting announced.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from .constants import MAX_PING_CONTEXT
from .fields import Field, text_or_hex

U16 = struct.Struct(">H")
U32 = struct.Struct(">I")
NAME_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+")
ALPHA = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

# ---------------------------------------------------------------- encoding


def command_body(name: str, data: bytes = b"") -> bytes:
    """`name-size name data`: the body of a command frame."""
    raw = name.encode("ascii")
    return bytes((len(raw),)) + raw + data


def encode_metadata(properties: dict[str, bytes]) -> bytes:
    """Metadata properties: 1-octet name size, name, 4-octet value size, value."""
    out = bytearray()
    for name, value in properties.items():
        raw = name.encode("ascii")
        out += bytes((len(raw),)) + raw + U32.pack(len(value)) + value
    return bytes(out)


def ready_body(properties: dict[str, bytes]) -> bytes:
    """The body of a NULL/PLAIN READY command."""
    return command_body("READY", encode_metadata(properties))


def error_body(reason: str) -> bytes:
    """The body of an ERROR command (the reason is cut to 255 octets)."""
    raw = reason.encode("utf-8", "replace")[:255]
    return command_body("ERROR", bytes((len(raw),)) + raw)


def ping_body(ttl_ds: int, context: bytes = b"") -> bytes:
    """The body of a PING command: TTL in deciseconds and up to 16 octets of context."""
    return command_body("PING", U16.pack(ttl_ds) + context)


def pong_body(context: bytes) -> bytes:
    """The body of a PONG command, echoing a PING's context."""
    return command_body("PONG", context)


def subscribe_body(topic: bytes) -> bytes:
    """The body of a 3.1 SUBSCRIBE command."""
    return command_body("SUBSCRIBE", topic)


def cancel_body(topic: bytes) -> bytes:
    """The body of a 3.1 CANCEL command."""
    return command_body("CANCEL", topic)


def plain_hello_body(username: bytes, password: bytes) -> bytes:
    """The body of a PLAIN HELLO: username and password as size-prefixed strings."""
    return command_body("HELLO", bytes((len(username),)) + username + bytes((len(password),)) + password)


def plain_welcome_body() -> bytes:
    """The body of a PLAIN WELCOME (no data)."""
    return command_body("WELCOME")


def initiate_body(properties: dict[str, bytes]) -> bytes:
    """The body of a PLAIN INITIATE: the client's metadata."""
    return command_body("INITIATE", encode_metadata(properties))


# ---------------------------------------------------------------- decoding


@dataclass
class DecodedCommand:
    """What one command body says: its name, the contract keys, fields and findings."""

    name: str
    details: dict[str, Any] = field(default_factory=dict)
    fields: list[Field] = field(default_factory=list)
    # (severity, text, rule, absolute offset, length)
    problems: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    metadata: dict[str, bytes] = field(default_factory=dict)


def decode_command(body: bytes, offset: int, mechanism: str | None) -> DecodedCommand:
    """Decodes a command body that starts at stream `offset`, never raising on bad input."""
    if not body:
        out = DecodedCommand("")
        out.problems.append(("error", "command frame has an empty body: no command name", "command-name",
                             offset, 0))
        return out
    if body.startswith(LIBZMQ_PLAIN_ERROR):
        return _libzmq_plain_error(body, offset)
    name_size = body[0]
    raw_name = body[1:1 + name_size]
    name = raw_name.decode("ascii", "replace")
    out = DecodedCommand(name)
    out.fields.append(Field("name-size", offset, 1, name_size, "command-name", "Length of the command name."))
    out.fields.append(Field("command-name", offset + 1, len(raw_name), name, "command-name",
                            "The command's printable name."))
    if name_size == 0:
        out.problems.append(("error", "command name size is 0", "command-name", offset, 1))
    if len(raw_name) < name_size:
        out.problems.append(("error", f"command name claims {name_size} octets, only {len(raw_name)} present",
                             "command-name", offset, len(body)))
        return out
    if any(c not in ALPHA for c in raw_name):
        out.problems.append(("warn", f"command name {name!r} has characters other than ALPHA",
                             "command-name-char", offset + 1, name_size))
    data = body[1 + name_size:]
    start = offset + 1 + name_size
    mech = (mechanism or "NULL").upper()
    decoder = _DECODERS.get((name, mech)) or _DECODERS.get((name, "*"))
    if decoder is None:
        if data:
            out.fields.append(Field("command-data", start, len(data), data.hex(), "command-data",
                                    f"Data of a {name} command, which this mechanism does not define."))
        if name in ("JOIN", "LEAVE"):
            out.details["group"] = text_or_hex(data)
        return out
    decoder(out, data, start)
    return out


# libzmq 4.3's PLAIN mechanism writes its ERROR name as the C string "\x05ERROR", where the
# hex escape swallows the E: the wire gets name-size 0x5e followed by "RROR".
LIBZMQ_PLAIN_ERROR = b"\x5eRROR"


def _libzmq_plain_error(body: bytes, offset: int) -> DecodedCommand:
    out = DecodedCommand("ERROR")
    out.fields.append(Field("name-size", offset, 1, body[0], "command-name",
                            "0x5e where 5 belongs: libzmq's PLAIN ERROR bug (its \\x05E escape eats the E)."))
    out.fields.append(Field("command-name", offset + 1, 4, "RROR", "command-name",
                            "What is left of ERROR after libzmq's escape bug."))
    out.problems.append(("warn", "malformed ERROR name (0x5e 'RROR'): libzmq 4.3's PLAIN bug; read as ERROR",
                         "command-name", offset, 5))
    _error(out, body[5:], offset + 5)
    return out


def _metadata(out: DecodedCommand, data: bytes, start: int, what: str) -> None:
    """Decodes `metadata = *property` into fields, `properties` and findings."""
    props: dict[str, str] = {}
    pos = 0
    seen: set[str] = set()
    while pos < len(data):
        at = start + pos
        name_size = data[pos]
        if name_size == 0:
            out.problems.append(("error", "metadata property with a zero-sized name", "name", at, 1))
        name_raw = data[pos + 1:pos + 1 + name_size]
        if len(name_raw) < name_size or pos + 1 + name_size + 4 > len(data):
            out.problems.append(("error", f"{what} metadata cut short at property {len(props) + 1}", "property",
                                 at, len(data) - pos))
            out.fields.append(Field("truncated-property", at, len(data) - pos, data[pos:].hex(), "property",
                                    "Bytes that do not make a whole property."))
            break
        name = name_raw.decode("ascii", "replace")
        if any(c not in NAME_CHARS for c in name_raw):
            out.problems.append(("warn", f"property name {name!r} has characters outside name-char", "name-char",
                                 at + 1, name_size))
        value_size = U32.unpack_from(data, pos + 1 + name_size)[0]
        vstart = pos + 1 + name_size + 4
        value = data[vstart:vstart + value_size]
        out.fields.append(Field("name-size", at, 1, name_size, "name", "Length of the property name."))
        out.fields.append(Field("property-name", at + 1, name_size, name, "name",
                                "Property name; case is not significant."))
        out.fields.append(Field("value-size", at + 1 + name_size, 4, value_size, "value",
                                "Length of the value, 4 octets in network byte order."))
        if value_size > 0x7FFFFFFF:
            out.problems.append(("error", f"property {name} value size {value_size} exceeds 2^31-1", "value",
                                 at + 1 + name_size, 4))
        if len(value) < value_size:
            out.problems.append(("error", f"property {name} claims {value_size} octets, {len(value)} present",
                                 "value", at + 1 + name_size, 4))
        out.fields.append(Field("property-value", start + vstart, len(value), text_or_hex(value), "value",
                                _property_note(name)))
        if name.lower() in seen:
            out.problems.append(("note", f"property {name} appears more than once", "name", at, 1))
        seen.add(name.lower())
        props[name] = text_or_hex(value)
        out.metadata[name] = value
        pos = vstart + len(value)
    out.details["properties"] = props


def _property_note(name: str) -> str:
    lower = name.lower()
    if lower == "socket-type":
        return "The sender's socket type; the receiver checks it against the table of valid pairs."
    if lower == "identity":
        return "The sender's identity, used by a ROUTER to address replies; empty means none."
    if lower == "resource":
        return "The resource (endpoint path) the client asks for (37/ZMTP)."
    if lower == "user-id":
        return "The user id the server's authenticator assigned (libzmq metadata)."
    if lower.startswith("x-"):
        return "An application property: names starting with X- are reserved for applications."
    return "Property value: opaque octets whose meaning depends on the property."


def _ready(out: DecodedCommand, data: bytes, start: int) -> None:
    _metadata(out, data, start, "READY")


def _initiate_plain(out: DecodedCommand, data: bytes, start: int) -> None:
    _metadata(out, data, start, "INITIATE")


def _error(out: DecodedCommand, data: bytes, start: int) -> None:
    if not data:
        out.problems.append(("warn", "ERROR without a reason size octet", "error-reason", start, 0))
        out.details["reason"] = ""
        return
    size = data[0]
    reason = data[1:1 + size]
    out.fields.append(Field("reason-size", start, 1, size, "error-reason", "Length of the error reason."))
    out.fields.append(Field("error-reason", start + 1, len(reason), reason.decode("utf-8", "replace"),
                            "error-reason", "Why the peer refuses the connection; meant for logs."))
    if len(reason) < size:
        out.problems.append(("error", "ERROR reason cut short", "error-reason", start, len(data)))
    out.details["reason"] = reason.decode("utf-8", "replace")


def _ping(out: DecodedCommand, data: bytes, start: int) -> None:
    if len(data) < 2:
        out.problems.append(("error", "PING shorter than its 2-octet TTL", "ping-ttl", start, len(data)))
        out.details.update(ttl=0, context="")
        return
    ttl = U16.unpack_from(data)[0]
    context = data[2:]
    out.fields.append(Field("ping-ttl", start, 2, ttl, "ping-ttl",
                            f"Time to live in tenths of a second ({ttl / 10:g} s); 0 means none."))
    out.fields.append(Field("ping-context", start + 2, len(context), context.hex(), "ping-context",
                            "Opaque context the PONG must echo; at most 16 octets."))
    if len(context) > MAX_PING_CONTEXT:
        out.problems.append(("warn", f"PING context is {len(context)} octets, more than 16", "ping-context",
                             start + 2, len(context)))
    out.details.update(ttl=ttl, context=context.hex())


def _pong(out: DecodedCommand, data: bytes, start: int) -> None:
    out.fields.append(Field("ping-context", start, len(data), data.hex(), "ping-context",
                            "The context of the PING being answered."))
    if len(data) > MAX_PING_CONTEXT:
        out.problems.append(("warn", f"PONG context is {len(data)} octets, more than 16", "ping-context",
                             start, len(data)))
    out.details["context"] = data.hex()


def _topic(out: DecodedCommand, data: bytes, start: int) -> None:
    out.fields.append(Field("subscription", start, len(data), text_or_hex(data), "subscription",
                            "Prefix of the messages wanted; empty matches every message."))
    out.details["topic"] = data.hex()


def _plain_hello(out: DecodedCommand, data: bytes, start: int) -> None:
    pos = 0
    values = []
    for part in ("username", "password"):
        if pos >= len(data):
            out.problems.append(("error", f"PLAIN HELLO has no {part}", part, start + pos, 0))
            values.append("")
            continue
        size = data[pos]
        value = data[pos + 1:pos + 1 + size]
        out.fields.append(Field(f"{part}-size", start + pos, 1, size, part, f"Length of the {part}."))
        out.fields.append(Field(part, start + pos + 1, len(value), value.decode("utf-8", "replace"), part,
                                f"The {part}, in clear text: PLAIN offers no confidentiality."))
        if len(value) < size:
            out.problems.append(("error", f"PLAIN {part} cut short", part, start + pos, len(data) - pos))
        values.append(value.decode("utf-8", "replace"))
        pos = min(pos + 1 + size, len(data))  # (a part cut short ends the body: what follows lies within it)
    if pos < len(data):
        out.problems.append(("warn", "PLAIN HELLO has octets after the password", "hello", start + pos,
                             len(data) - pos))
    out.details.update(username=values[0], password=values[1])


def _plain_welcome(out: DecodedCommand, data: bytes, start: int) -> None:
    if data:
        out.problems.append(("warn", "PLAIN WELCOME carries data", "welcome", start, len(data)))


def _opaque(name: str, note: str, rule: str):
    def decode(out: DecodedCommand, data: bytes, start: int) -> None:
        out.fields.append(Field(name, start, len(data), data.hex(), rule, note))
    return decode


def _curve_layout(parts: list[tuple[str, int, str, str]], *, rest: tuple[str, str, str] | None,
                  command: str):
    """A decoder for a CURVE command made of fixed-size public parts and an optional trailing box."""

    def decode(out: DecodedCommand, data: bytes, start: int) -> None:
        pos = 0
        for name, size, rule, note in parts:
            piece = data[pos:pos + size]
            out.fields.append(Field(name, start + pos, len(piece), piece.hex(), rule, note))
            if len(piece) < size:
                out.problems.append(("error", f"CURVE {command} cut short in {name}", rule, start + pos,
                                     len(piece)))
                return
            out.details[name.replace("-", "_")] = piece.hex()
            pos += size
        if rest is not None:
            name, rule, note = rest
            box = data[pos:]
            out.fields.append(Field(name, start + pos, len(box), f"{len(box)} encrypted octets", rule, note))
            out.details["box_size"] = len(box)
        elif pos < len(data):
            out.problems.append(("warn", f"CURVE {command} has {len(data) - pos} extra octets", command.lower(),
                                 start + pos, len(data) - pos))
        out.details["encrypted"] = True

    return decode


_BOX_NOTE = "Encrypted with crypto_box; a dissector without the keys cannot read it, and says so."

_DECODERS = {
    ("READY", "NULL"): _ready,
    ("READY", "PLAIN"): _ready,
    ("INITIATE", "PLAIN"): _initiate_plain,
    ("HELLO", "PLAIN"): _plain_hello,
    ("WELCOME", "PLAIN"): _plain_welcome,
    ("ERROR", "*"): _error,
    ("PING", "*"): _ping,
    ("PONG", "*"): _pong,
    ("SUBSCRIBE", "*"): _topic,
    ("CANCEL", "*"): _topic,
    ("HELLO", "CURVE"): _curve_layout([
        ("version", 2, "version", "CurveZMQ version, 1.0."),
        ("padding", 72, "padding", "Anti-amplification padding: HELLO is as long as WELCOME."),
        ("client-short-key", 32, "hello-client", "The client's short-term public key C'."),
        ("nonce", 8, "hello-nonce", "Short nonce; the full nonce is 'CurveZMQHELLO---' + these 8 octets."),
        ("signature-box", 80, "hello-box", "Box of 64 zero octets from C' to S: proves C' knows S."),
    ], rest=None, command="HELLO"),
    ("WELCOME", "CURVE"): _curve_layout([
        ("nonce", 16, "welcome-nonce", "Long nonce; the full nonce is 'WELCOME-' + these 16 octets."),
        ("welcome-box", 144, "welcome-box", "Box from S to C' holding S' and the cookie. " + _BOX_NOTE),
    ], rest=None, command="WELCOME"),
    ("INITIATE", "CURVE"): _curve_layout([
        ("cookie", 96, "initiate-cookie", "The server's cookie, returned as-is so the server keeps no state."),
        ("nonce", 8, "initiate-nonce", "Short nonce; the full nonce is 'CurveZMQINITIATE' + these 8 octets."),
    ], rest=("initiate-box", "initiate-box", "Box from C' to S': C, the vouch and metadata. " + _BOX_NOTE),
        command="INITIATE"),
    ("READY", "CURVE"): _curve_layout([
        ("nonce", 8, "ready-nonce", "Short nonce; the full nonce is 'CurveZMQREADY---' + these 8 octets."),
    ], rest=("ready-box", "ready-box", "Box from S' to C' holding the server's metadata. " + _BOX_NOTE),
        command="READY"),
    ("MESSAGE", "CURVE"): _curve_layout([
        ("nonce", 8, "message-nonce", "Short nonce, incremented per message; prefix 'CurveZMQMESSAGEC' or 'S'."),
    ], rest=("message-box", "message-box", "Box holding a flags octet and one message frame. " + _BOX_NOTE),
        command="MESSAGE"),
}
