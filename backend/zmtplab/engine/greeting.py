"""Greetings of ZMTP 3.x, 2.0 and 1.0: encoding them, and the fields that explain each octet."""

from __future__ import annotations

from .constants import MECHANISMS, SOCKET_TYPE_CODES_V2, SOCKET_TYPE_NAMES_V2
from .fields import Field, text_or_hex
from .framing import U64, encode_frame

MECHANISM_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+")


def signature(identity_length: int | None = None) -> bytes:
    """The 10-octet signature; with `identity_length`, the pseudo-signature that doubles as a 1.0 frame.

    libzmq always sends the pseudo-signature with `identity length + 1` as padding, so a
    ZMTP 1.0 peer reads it as the header of a long identity frame (23/ZMTP "Detecting
    ZMTP 1.0 and 2.0 Peers"). Without it the padding is zeros, as the full-greeting
    strategy recommends.
    """
    padding = U64.pack(identity_length + 1) if identity_length is not None else bytes(8)
    return b"\xff" + padding + b"\x7f"


def greeting_rest(*, minor: int = 1, mechanism: str = "NULL", as_server: bool = False) -> bytes:
    """Octets 11-63 of a 3.x greeting: minor version, mechanism, as-server and filler."""
    mech = mechanism.encode("ascii")
    if len(mech) > 20:
        raise ValueError("a mechanism name has at most 20 octets")
    return bytes((minor,)) + mech.ljust(20, b"\0") + (b"\x01" if as_server else b"\x00") + bytes(31)


def encode_greeting(*, major: int = 3, minor: int = 1, mechanism: str = "NULL", as_server: bool = False,
                    identity_length: int | None = None) -> bytes:
    """A complete 64-octet 3.x greeting."""
    return signature(identity_length) + bytes((major,)) + greeting_rest(
        minor=minor, mechanism=mechanism, as_server=as_server)


def encode_v2_tail(socket_type: str, identity: bytes) -> bytes:
    """What follows the revision octet in a 2.0 greeting: socket type, then the identity frame."""
    return bytes((SOCKET_TYPE_CODES_V2[socket_type.upper()],)) + encode_frame(identity, framing="2")


def encode_v1_identity(identity: bytes) -> bytes:
    """A 1.0 greeting: the identity as one 13/ZMTP frame (anonymous when empty)."""
    return encode_frame(identity, framing="1")


def _signature_fields(offset: int, raw: bytes) -> list[Field]:
    padding = raw[1:9]
    pad_value = U64.unpack(padding)[0]
    pad_note = ("Not significant (23/ZMTP: never interpreted)."
                + (f" libzmq puts identity length + 1 = {pad_value} here so a 1.0 peer reads a frame header."
                   if pad_value else ""))
    return [
        Field("signature", offset, 1, "0xff", "signature", "First octet of the signature: %xFF."),
        Field("padding", offset + 1, 8, padding.hex(), "padding", pad_note),
        Field("signature-end", offset + 9, 1, f"0x{raw[9]:02x}", "signature",
              "Last octet of the signature: %x7F; its low bit set says this is not a 1.0 length."),
    ]


def v3_fields(offset: int, raw: bytes) -> list[Field]:
    """Fields of a 64-octet 3.x greeting starting at stream `offset`."""
    mech = raw[12:32]
    mech_name = mech.rstrip(b"\0").decode("ascii", "replace")
    return [
        *_signature_fields(offset, raw),
        Field("version-major", offset + 10, 1, raw[10], "version-major",
              "Major version: 3 for ZMTP 3.x; peers accept any higher version."),
        Field("version-minor", offset + 11, 1, raw[11], "version-minor",
              "Minor version: 0 for 23/ZMTP (3.0), 1 for 37/ZMTP (3.1)."),
        Field("mechanism", offset + 12, 20, mech_name, "mechanism",
              "Security mechanism, ASCII padded with zero octets to 20 octets."),
        Field("as-server", offset + 32, 1, raw[32], "as-server",
              "1 when this peer is the server of the mechanism (PLAIN, CURVE); 0 for NULL."),
        Field("filler", offset + 33, 31, raw[33:64].hex(), "filler", "31 zero octets that pad the greeting to 64."),
    ]


def v2_fields(offset: int, raw: bytes) -> list[Field]:
    """Fields of a 2.0 greeting (signature, revision, socket type, identity frame)."""
    code = raw[11]
    name = SOCKET_TYPE_NAMES_V2.get(code, f"unknown ({code})")
    ident_flags, ident_size = raw[12], raw[13]
    identity = raw[14:14 + ident_size]
    return [
        *_signature_fields(offset, raw),
        Field("revision", offset + 10, 1, raw[10], "revision",
              "Protocol revision: 1 for ZMTP 2.0 (a 3.x peer downgrading sends 3 here)."),
        Field("socket-type", offset + 11, 1, f"{code} ({name})", "socket-type",
              "The sender's socket type as one octet (15/ZMTP)."),
        Field("identity-flags", offset + 12, 1, f"0x{ident_flags:02x}", "final-short",
              "Flags of the identity frame: a final short frame."),
        Field("identity-size", offset + 13, 1, ident_size, "final-short", "Size of the identity body."),
        Field("identity", offset + 14, len(identity), text_or_hex(identity), "body",
              "The sender's identity; empty means anonymous."),
    ]


def v1_fields(offset: int, raw: bytes) -> list[Field]:
    """Fields of a 1.0 greeting: one identity frame in 13/ZMTP framing."""
    if raw[0] == 0xFF:
        length = U64.unpack_from(raw, 1)[0]
        head = [
            Field("length-escape", offset, 1, 255, "length",
                  "0xFF: a 64-bit length follows (or a later peer's signature read as one)."),
            Field("length", offset + 1, 8, length, "length", "Identity frame length including its flags octet."),
            Field("idflags", offset + 9, 1, f"0x{raw[9]:02x}", "idflags",
                  "Identity flags octet: not validated (13/ZMTP); a later peer's %x7F lands here."),
        ]
        start = 10
    else:
        head = [
            Field("length", offset, 1, raw[0], "length", "Identity frame length including its flags octet."),
            Field("idflags", offset + 1, 1, f"0x{raw[1]:02x}", "idflags", "Identity flags octet, should be zero."),
        ]
        start = 2
    identity = raw[start:]
    return [*head, Field("identity", offset + start, len(identity), text_or_hex(identity), "identity",
                         "The sender's identity; empty means an anonymous connection.")]


def v3_problems(raw: bytes) -> list[tuple[str, str, str, int, int]]:
    """Spec violations in a 3.x greeting, as (severity, text, rule, relative offset, length)."""
    problems: list[tuple[str, str, str, int, int]] = []
    if raw[9] != 0x7F:
        problems.append(("warn", f"signature ends with 0x{raw[9]:02x}, not 0x7f", "signature", 9, 1))
    mech = raw[12:32]
    name = mech.rstrip(b"\0")
    if not name or any(c not in MECHANISM_CHARS for c in name) or b"\0" in name:
        problems.append(("error", f"mechanism {mech!r} is not a null-padded name of A-Z, 0-9, -_.+",
                         "mechanism", 12, 20))
    elif name.decode("ascii") not in MECHANISMS:
        problems.append(("note", f"unknown mechanism {name.decode('ascii')}: its handshake commands are shown "
                                 "without mechanism-specific decoding", "mechanism", 12, 20))
    if raw[32] not in (0, 1):
        problems.append(("warn", f"as-server is {raw[32]}, not 0 or 1", "as-server", 32, 1))
    if any(raw[33:64]):
        problems.append(("note", "greeting filler is not all zeros", "filler", 33, 31))
    return problems


def mechanism_of(raw: bytes) -> str:
    """The mechanism name in a 3.x greeting."""
    return raw[12:32].rstrip(b"\0").decode("ascii", "replace")

