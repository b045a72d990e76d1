"""CURVE (25/ZMTP-CURVE, 26/CurveZMQ) with real cryptography through PyNaCl, interoperable with libzmq 4.3.

The client sends HELLO, opens WELCOME, sends INITIATE (its long-term key, the vouch and its
metadata) and is done on READY. The server answers HELLO with WELCOME and keeps nothing of the
client but what the cookie carries (C' and s', sealed with a cookie key only this server object
knows); INITIATE brings everything back, and READY finishes. Afterwards every message frame and
every command (PING, PONG, SUBSCRIBE, CANCEL) travels in a MESSAGE box.

What libzmq 4.3.5 does that the specifications do not say (checked on the wire):

- MESSAGE goes in an ordinary *data* frame: flags 0x00 (0x02 when long), never COMMAND, never
  MORE. The MORE of the application frame is inside the box.
- The flags octet inside the box uses bit 0 for MORE and bit 1 for COMMAND (a command such as
  PING or SUBSCRIBE carried in the box); 26/CurveZMQ says bits 7-1 are reserved.
- Short nonces start at 1 in both directions: the client's HELLO is 1, INITIATE 2, its first
  MESSAGE 3; the server's READY is 1, its first MESSAGE 2. A receiver accepts any nonce greater
  than the last one (gaps are allowed), not only the next integer.
- The cookie box is a `crypto_secretbox` under a random 32-octet cookie key.
- HELLO padding is 72 octets (the grammar; the prose says 70), HELLO must be 200 octets and
  WELCOME 168. A server that cannot open HELLO closes silently; a ZAP refusal after INITIATE is
  an ERROR whose reason is the 3-digit status code ("400").
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from nacl.bindings import (
    crypto_box,
    crypto_box_afternm,
    crypto_box_beforenm,
    crypto_box_open,
    crypto_box_open_afternm,
    crypto_scalarmult_base,
    crypto_secretbox,
    crypto_secretbox_open,
)
from nacl.exceptions import CryptoError
from nacl.utils import random as random_bytes

from .commands import decode_command, encode_metadata
from .errors import LocalProtocolError, RemoteProtocolError
from .events import Command, Expert, Frame, Message, WireEvent
from .fields import Field, text_or_hex
from .framing import body_value, encode_frame
from .mechanisms import MESSAGE_FLAG_COMMAND, MESSAGE_FLAG_MORE, Mechanism, Step

__all__ = [
    "MESSAGE_FLAG_COMMAND", "MESSAGE_FLAG_MORE", "CurveClient", "CurveDecryptor", "CurveServer", "DecryptedFrame",
    "DecryptedMessage", "Random", "generate_keypair", "hello_problem", "key_from_text", "keylog_line", "keylog_text",
    "open_box", "open_welcome", "parse_keylog", "z85_decode", "z85_encode",
]

KEY_SIZE = 32
MAC_SIZE = 16
MAX_NONCE = (1 << 64) - 1
U64 = struct.Struct(">Q")
U32 = struct.Struct(">I")

HELLO_PREFIX = b"CurveZMQHELLO---"
WELCOME_PREFIX = b"WELCOME-"
COOKIE_PREFIX = b"COOKIE--"
INITIATE_PREFIX = b"CurveZMQINITIATE"
VOUCH_PREFIX = b"VOUCH---"
READY_PREFIX = b"CurveZMQREADY---"
MESSAGE_C_PREFIX = b"CurveZMQMESSAGEC"
MESSAGE_S_PREFIX = b"CurveZMQMESSAGES"

HELLO_NAME = b"\x05HELLO"
WELCOME_NAME = b"\x07WELCOME"
INITIATE_NAME = b"\x08INITIATE"
READY_NAME = b"\x05READY"
MESSAGE_NAME = b"\x07MESSAGE"

HELLO_SIZE = 200
WELCOME_SIZE = 168
INITIATE_MIN_SIZE = 257
READY_MIN_SIZE = 30
MESSAGE_MIN_SIZE = 8 + 8 + MAC_SIZE + 1  # name, short nonce, MAC, flags octet
ZAP_REFUSED = "400"  # what libzmq's server sends when ZAP refuses the client: the status code alone

# ---------------------------------------------------------------- Z85 (ZeroMQ RFC 32) and keys

Z85_CHARS = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUES = {c: i for i, c in enumerate(Z85_CHARS)}


def z85_encode(data: bytes) -> bytes:
    """Z85 text of `data` (RFC 32): 5 characters per 4 octets; the length must be a multiple of 4."""
    if len(data) % 4:
        raise ValueError(f"Z85 encodes a multiple of 4 octets, not {len(data)}")
    out = bytearray()
    for (value,) in struct.iter_unpack(">I", data):
        chunk = bytearray(5)
        for i in range(4, -1, -1):
            value, digit = divmod(value, 85)
            chunk[i] = Z85_CHARS[digit]
        out += chunk
    return bytes(out)


def z85_decode(text: bytes | str) -> bytes:
    """The octets of Z85 `text` (RFC 32); the length must be a multiple of 5."""
    if isinstance(text, str):
        text = text.encode("ascii")
    if len(text) % 5:
        raise ValueError(f"Z85 text has a multiple of 5 characters, not {len(text)}")
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for c in text[start:start + 5]:
            digit = _Z85_VALUES.get(c)
            if digit is None:
                raise ValueError(f"{chr(c)!r} is not a Z85 character")
            value = value * 85 + digit
        if value > 0xFFFFFFFF:
            raise ValueError(f"Z85 group {text[start:start + 5]!r} exceeds 32 bits")
        out += value.to_bytes(4, "big")
    return bytes(out)


Random = Callable[[int], bytes]
"""Where a CURVE mechanism draws its randomness (keys, nonces, the cookie key): the OS by default; a
simulation injects a seeded generator so that its sessions replay byte for byte."""


def generate_keypair(random: Random | None = None) -> tuple[bytes, bytes]:
    """A new Curve25519 keypair as raw 32-octet (public, secret); `z85_encode` gives libzmq's text.

    Like libsodium's crypto_box_keypair: a random secret and its public point."""
    secret = (random or random_bytes)(32)
    return crypto_scalarmult_base(secret), secret


def keylog_line(client_short_public: bytes, session_key: bytes) -> str:
    """One line of a CURVE key log (the idea of TLS's SSLKEYLOGFILE): the client's short-term public key, as
    HELLO shows it on the wire, and the precomputed key of the connection's short-term keys, which opens
    its INITIATE, READY and MESSAGE boxes. Whoever holds the line can read that connection."""
    return f"CURVE_SESSION_KEY {client_short_public.hex()} {session_key.hex()}"


def keylog_text(keys: Iterable[tuple[bytes, bytes]]) -> str:
    """A key log of (client short-term public key, session key) pairs: one `keylog_line` each, the first of
    each connection only."""
    seen: dict[bytes, bytes] = {}
    for client_short, key in keys:
        seen.setdefault(client_short, key)
    return "".join(keylog_line(c, k) + "\n" for c, k in seen.items())


def parse_keylog(text: str) -> dict[bytes, bytes]:
    """The session keys of a key log (`keylog_line`'s lines; other lines, blank or `#`, are skipped), by the
    client's short-term public key; ValueError names a malformed line."""
    keys: dict[bytes, bytes] = {}
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#") or parts[0] != "CURVE_SESSION_KEY":
            continue
        try:
            client_short, key = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
        except (IndexError, ValueError):
            raise ValueError(f"key log line {number}: expected CURVE_SESSION_KEY <64 hex> <64 hex>") from None
        if len(client_short) != KEY_SIZE or len(key) != KEY_SIZE:
            raise ValueError(f"key log line {number}: keys are 32 octets (64 hex digits)")
        keys[client_short] = key
    return keys


def open_box(kind: str, nonce: bytes, box: bytes, session_key: bytes, *, from_server: bool = False) -> bytes | None:
    """The plaintext of an INITIATE, READY or MESSAGE box (its short nonce and box as on the wire) under a
    connection's session key; None when it does not open."""
    prefix = {"INITIATE": INITIATE_PREFIX, "READY": READY_PREFIX,
              "MESSAGE": MESSAGE_S_PREFIX if from_server else MESSAGE_C_PREFIX}[kind]
    try:
        return crypto_box_open_afternm(box, prefix + nonce, session_key)
    except CryptoError:
        return None


def _key(value: bytes | str, what: str) -> bytes:
    """A key given as 32 raw octets or as 40 Z85 characters (bytes or str)."""
    if isinstance(value, str):
        value = value.encode("ascii")
    if len(value) == 40:
        value = z85_decode(value)
    if len(value) != KEY_SIZE:
        raise ValueError(f"{what} must be 32 octets (or 40 Z85 characters), not {len(value)}")
    return bytes(value)


def key_from_text(text: str) -> bytes:
    """A 32-octet key written as 40 Z85 characters or 64 hex digits; ValueError (naming no key) otherwise."""
    text = text.strip()
    if len(text) == 64:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    if len(text) == 40:
        try:
            return z85_decode(text)
        except ValueError:
            pass
    raise ValueError("a CURVE key is 40 Z85 characters or 64 hex digits")


def _body(command: Command) -> bytes:
    """The command frame's body: `raw` less its 2- or 9-octet header."""
    raw = command.raw
    if not raw:
        return b""
    return raw[9:] if raw[0] & 0x02 else raw[2:]


def _header_size(command: Command) -> int:
    return 9 if command.raw and command.raw[0] & 0x02 else 2


def parse_metadata(data: bytes) -> dict[str, bytes]:
    """Metadata properties from a decrypted INITIATE/READY box; raises ValueError when malformed."""
    props: dict[str, bytes] = {}
    pos = 0
    while pos < len(data):
        size = data[pos]
        if size == 0:
            raise ValueError("metadata property with a zero-sized name")
        name = data[pos + 1:pos + 1 + size]
        if len(name) < size or pos + 1 + size + 4 > len(data):
            raise ValueError("metadata cut short")
        value_size = U32.unpack_from(data, pos + 1 + size)[0]
        start = pos + 1 + size + 4
        if value_size > 0x7FFFFFFF or start + value_size > len(data):
            raise ValueError(f"metadata property {name.decode('ascii', 'replace')} claims {value_size} octets")
        props[name.decode("ascii", "replace")] = data[start:start + value_size]
        pos = start + value_size
    return props


# ---------------------------------------------------------------- reading a connection with its session keys


class _Decrypted(WireEvent):
    """What a decrypted view adds to its event (mixed in before it): fields over the box, and `decrypted` in
    its dict."""

    __slots__ = ()

    def field_dicts(self) -> list[dict[str, Any]]:
        return WireEvent.field_dicts(self)  # (from `fields` above: not a frame's own fast dicts of the box)

    def to_dict(self, *, with_fields: bool = True, max_body: int | None = None) -> dict[str, Any]:
        out = super().to_dict(with_fields=with_fields, max_body=max_body)
        out["decrypted"] = True
        return out


@dataclass(frozen=True, slots=True)
class DecryptedFrame(_Decrypted, Frame):
    """A frame as the application sent it, opened from a MESSAGE box; it sits where the box is on the wire."""

    @property
    def fields(self) -> list[Field]:
        return [Field("decrypted frame", self.offset, self.length, body_value(self.body), "message-box",
                      f"Opened with the connection's session key: flags 0x{self.flags:02x} "
                      f"({'MORE' if self.flags & MESSAGE_FLAG_MORE else 'final'}) and the frame's {len(self.body)} "
                      "octets, which the wire only shows encrypted.")]


@dataclass(frozen=True, slots=True)
class DecryptedMessage(_Decrypted, Message):
    """A whole application message opened from MESSAGE boxes (its frames are `DecryptedFrame`s)."""

    @property
    def fields(self) -> list[Field]:
        return [Field(f"frame {i}", p.offset, p.length, body_value(p.body), "message-box",
                      "Decrypted: the frame as the application sent it.") for i, p in enumerate(self.parts, 1)]


class CurveDecryptor:
    """Opens one CURVE connection's boxes with its session key (from a key log), for whoever reads a dissector.

    `feed(direction, event)` takes the dissector's events in order and returns the decrypted views to show
    after each: READY and INITIATE as `Command`s with their properties, each MESSAGE box as a
    `DecryptedFrame` (a `DecryptedMessage` once the frame without MORE arrives), and a command CURVE
    carried in a box (PING, SUBSCRIBE, ...) as a `Command`; all with `decrypted` true, at the box's place
    in the stream, so the octet table shows the plaintext under the box. `keys(client_short_public)` gives
    the session key, or None. Never raises: a box that does not open is said once, as an expert note.
    """

    def __init__(self, keys: Callable[[bytes], bytes | None]) -> None:
        self.keys = keys
        self.client_dir: str | None = None
        self.client_short: bytes | None = None
        self.key: bytes | None = None  # asked for at each box until known (a peer knows it only mid-handshake)
        self._parts: dict[str, list[DecryptedFrame]] = {"c2s": [], "s2c": []}
        self._failed = False

    def feed(self, direction: str, event: WireEvent) -> list[tuple[str, WireEvent]]:
        if not isinstance(event, Command):
            return []
        body = _body(event)
        head = _header_size(event)
        if event.name == "HELLO" and len(body) == HELLO_SIZE:
            self.client_dir, self.client_short = direction, body[80:112]
            return []
        if self.client_short is None or event.name not in ("INITIATE", "READY", "MESSAGE"):
            return []
        if self.key is None:
            self.key = self.keys(self.client_short)
            if self.key is None:
                return []
        from_server = direction != self.client_dir
        nonce_at = {"INITIATE": 105, "READY": 6, "MESSAGE": 8}[event.name]
        box_at = nonce_at + 8
        if len(body) <= box_at:
            return []
        plain = open_box(event.name, body[nonce_at:box_at], body[box_at:], self.key, from_server=from_server)
        where = event.offset + head + box_at
        size = len(body) - box_at
        if plain is None:
            if self._failed:
                return []
            self._failed = True
            return [(direction, Expert(where, size, severity="warn", rule="curve-keylog",
                                       text=f"the {event.name} box does not open with the key log's session key for "
                                            "this connection: a key of another connection, or altered traffic"))]
        if event.name == "MESSAGE":
            return self._message(direction, where, size, plain)
        data = plain[128:] if event.name == "INITIATE" else plain
        try:
            metadata = parse_metadata(data)
        except ValueError:
            metadata = {}
        props = {k: text_or_hex(v) for k, v in metadata.items()}
        shown = " ".join(f"{k}={v}" for k, v in props.items()) or "(none)"
        field = Field("decrypted metadata", where, size, shown, "metadata",
                      f"The {event.name} box opened with the connection's session key: its metadata properties.")
        return [(direction, Command(where, size, name=event.name, raw=plain, field_list=(field,), metadata=metadata,
                                    details={"properties": props, "decrypted": True}))]

    def _message(self, direction: str, where: int, size: int, plain: bytes) -> list[tuple[str, WireEvent]]:
        flags, data = plain[0], plain[1:]
        if flags & MESSAGE_FLAG_COMMAND:
            decoded = decode_command(data, where, "NULL")
            field = Field("decrypted command", where, size, decoded.name, "command",
                          "A command CURVE carried inside a MESSAGE box (flags bit 1), opened with the session key.")
            return [(direction, Command(where, size, name=decoded.name, raw=data, field_list=(field,),
                                        details={**decoded.details, "decrypted": True}))]
        frame = DecryptedFrame(where, size, flags=flags & MESSAGE_FLAG_MORE, size=len(data), body=data)
        out: list[tuple[str, WireEvent]] = [(direction, frame)]
        parts = self._parts[direction]
        parts.append(frame)
        if not flags & MESSAGE_FLAG_MORE:
            first = parts[0]
            out.append((direction, DecryptedMessage(first.offset, where + size - first.offset, parts=tuple(parts))))
            self._parts[direction] = []
        return out


# ---------------------------------------------------------------- the mechanisms


def hello_problem(body: bytes, server_secret: bytes) -> str | None:
    """Why a server whose long-term secret key is `server_secret` refuses this HELLO (its command body, from the
    name), or None when the HELLO is well formed and its signature box opens to 64 zero octets."""
    if len(body) != HELLO_SIZE:
        return f"malformed CURVE HELLO: {len(body)} octets, not {HELLO_SIZE}"
    if body[6:8] != b"\x01\x00":
        return f"CURVE HELLO version {body[6]}.{body[7]}; this server speaks 1.0"
    if any(body[8:80]):
        return "CURVE HELLO padding is not all zero"
    client_short, nonce, signature = body[80:112], body[112:120], body[120:200]
    try:
        plain = crypto_box_open(signature, HELLO_PREFIX + nonce, client_short, server_secret)
    except CryptoError:
        return "cannot open the CURVE HELLO signature box: the client holds another server key"
    if plain != bytes(64):
        return "CURVE HELLO signature box does not hold 64 zero octets"
    return None


def open_welcome(body: bytes, server_secret: bytes, client_short: bytes) -> bytes | None:
    """The server's short-term public key S' from a WELCOME (its command body, from the name), opened with the
    server's long-term secret key and the client's short-term public key from HELLO; None when it does not open."""
    if len(body) != WELCOME_SIZE:
        return None
    try:
        plain = crypto_box_open(body[24:], WELCOME_PREFIX + body[8:24], client_short, server_secret)
    except CryptoError:
        return None
    return plain[:32]


def _silent(reason: str) -> Step:
    """A failure that closes the connection without ERROR (what libzmq does for a bad handshake command)."""
    return Step(error=reason, reply_error=False)


class _Curve(Mechanism):
    """What client and server share: short nonces and MESSAGE boxes once the handshake is done."""

    name = "CURVE"
    _send_prefix = b""
    _recv_prefix = b""

    def __init__(self, random: Random | None = None) -> None:
        self._random: Random = random or random_bytes
        self._nonce = 1  # the next short nonce we send (libzmq starts at 1)
        self._peer_nonce = 0  # the last short nonce the peer used; the next must be greater
        self._precom: bytes | None = None  # crypto_box_beforenm of the two short-term keys
        self._client_short: bytes | None = None  # the client's short-term public key, as HELLO carries it

    def session_keys(self) -> tuple[bytes, bytes] | None:
        """(the client's short-term public key, the connection's session key) once the handshake has made them:
        a `keylog_line` for tools that decrypt what this connection sends (a playground session's own)."""
        if self._precom is None or self._client_short is None:
            return None
        return self._client_short, self._precom

    def _next_nonce(self) -> bytes:
        if self._nonce > MAX_NONCE:
            raise LocalProtocolError("CURVE short nonces are exhausted (2^64-1 commands sent)")
        nonce = U64.pack(self._nonce)
        self._nonce += 1
        return nonce

    # ---- traffic

    def encode_message(self, frames: list[bytes] | tuple[bytes, ...]) -> bytes:
        """One MESSAGE per frame; MORE goes in the flags octet inside the box."""
        last = len(frames) - 1
        return b"".join(self._box(MESSAGE_FLAG_MORE if i < last else 0, bytes(f)) for i, f in enumerate(frames))

    def encode_command(self, body: bytes) -> bytes:
        """A command sent after the handshake (PING, PONG, SUBSCRIBE, CANCEL) in a MESSAGE box, flags bit 1."""
        return self._box(MESSAGE_FLAG_COMMAND, body)

    def _box(self, flags: int, data: bytes) -> bytes:
        if self._precom is None:
            raise LocalProtocolError("CURVE cannot box traffic before the handshake completes")
        nonce = self._next_nonce()
        box = crypto_box_afternm(bytes((flags,)) + data, self._send_prefix + nonce, self._precom)
        # libzmq sends MESSAGE as a data frame (COMMAND and MORE clear), and so do we.
        return encode_frame(MESSAGE_NAME + nonce + box)

    def decode_message_command(self, command: Command) -> tuple[int, bytes]:
        """(flags, body) of a MESSAGE; raises `RemoteProtocolError` for a bad, replayed or forged one."""
        body = _body(command)
        at = command.offset + _header_size(command)
        if not body.startswith(MESSAGE_NAME):
            raise RemoteProtocolError("CURVE traffic that is not a MESSAGE command", offset=at, rule="message")
        if len(body) < MESSAGE_MIN_SIZE:
            raise RemoteProtocolError(f"CURVE MESSAGE of {len(body)} octets; at least {MESSAGE_MIN_SIZE}",
                                      offset=at, rule="message-box")
        if self._precom is None:
            raise RemoteProtocolError("CURVE MESSAGE before the handshake completed", offset=at, rule="message")
        nonce = body[8:16]
        value = U64.unpack(nonce)[0]
        if value <= self._peer_nonce:
            raise RemoteProtocolError(f"CURVE MESSAGE short nonce {value} is not greater than the last one "
                                      f"({self._peer_nonce}): a replayed or reordered MESSAGE", offset=at + 8,
                                      rule="message-nonce")
        try:
            plain = crypto_box_open_afternm(body[16:], self._recv_prefix + nonce, self._precom)
        except CryptoError:
            raise RemoteProtocolError("CURVE MESSAGE box does not open: altered, forged or wrong keys",
                                      offset=at + 16, rule="message-box") from None
        self._peer_nonce = value
        flags = plain[0]
        if flags & ~(MESSAGE_FLAG_MORE | MESSAGE_FLAG_COMMAND):
            raise RemoteProtocolError(f"reserved bits set in the MESSAGE payload flags: 0x{flags:02x}",
                                      offset=at + 16, rule="payload-flags")
        return flags, plain[1:]


class CurveClient(_Curve):
    """CURVE client: HELLO, INITIATE after WELCOME, done on READY. Needs the server's long-term public key.

    A client never sends ERROR (26/CurveZMQ): every failure closes the connection silently.
    """

    as_server = False
    _send_prefix = MESSAGE_C_PREFIX
    _recv_prefix = MESSAGE_S_PREFIX

    def __init__(self, server_public: bytes | str, public: bytes | str | None = None,
                 secret: bytes | str | None = None, *, random: Random | None = None) -> None:
        super().__init__(random)
        self.server_public = _key(server_public, "the server public key")
        if secret is None:
            if public is not None:
                raise ValueError("a public key without its secret key")
            public, secret = generate_keypair(self._random)
        self.secret = _key(secret, "the client secret key")
        self.public = crypto_scalarmult_base(self.secret)
        if public is not None and _key(public, "the client public key") != self.public:
            raise ValueError("the client public key does not belong to the secret key")
        self._short_public, self._short_secret = generate_keypair(self._random)
        self._client_short = self._short_public
        self._state = "hello"
        self.server_short_public: bytes | None = None

    def start(self, metadata: dict[str, bytes]) -> Step:
        nonce = self._next_nonce()
        signature = crypto_box(bytes(64), HELLO_PREFIX + nonce, self.server_public, self._short_secret)
        self._state = "welcome"
        return Step(send=[HELLO_NAME + b"\x01\x00" + bytes(72) + self._short_public + nonce + signature])

    def on_command(self, command: Command, metadata: dict[str, bytes]) -> Step:
        name = command.name
        if name == "ERROR" and self._state in ("welcome", "ready"):
            reason = command.details.get("reason", "")
            if len(reason) == 3 and reason.isdigit():
                return _silent(f"server refused the client (ZAP status {reason})")
            return _silent(f"server refused: {reason}")
        if self._state == "welcome" and name == "WELCOME":
            return self._on_welcome(_body(command), metadata)
        if self._state == "ready" and name == "READY":
            return self._on_ready(_body(command))
        return _silent(f"unexpected {name} command in CURVE client state {self._state}")

    def _on_welcome(self, body: bytes, metadata: dict[str, bytes]) -> Step:
        if len(body) != WELCOME_SIZE:
            return _silent(f"malformed CURVE WELCOME: {len(body)} octets, not {WELCOME_SIZE}")
        try:
            plain = crypto_box_open(body[24:], WELCOME_PREFIX + body[8:24], self.server_public, self._short_secret)
        except CryptoError:
            return _silent("cannot open the CURVE WELCOME box: the server is not the one whose key we hold")
        server_short, cookie = plain[:32], plain[32:128]
        self.server_short_public = server_short
        self._precom = crypto_box_beforenm(server_short, self._short_secret)
        vouch_nonce = self._random(16)
        vouch = crypto_box(self._short_public + self.server_public, VOUCH_PREFIX + vouch_nonce, server_short,
                           self.secret)
        nonce = self._next_nonce()
        box = crypto_box_afternm(self.public + vouch_nonce + vouch + encode_metadata(metadata),
                                 INITIATE_PREFIX + nonce, self._precom)
        self._short_secret = b""  # the precomputed key is all the traffic needs
        self._state = "ready"
        return Step(send=[INITIATE_NAME + cookie + nonce + box])

    def _on_ready(self, body: bytes) -> Step:
        if len(body) < READY_MIN_SIZE:
            return _silent(f"malformed CURVE READY: {len(body)} octets, at least {READY_MIN_SIZE}")
        nonce = body[6:14]
        assert self._precom is not None
        try:
            plain = crypto_box_open_afternm(body[14:], READY_PREFIX + nonce, self._precom)
        except CryptoError:
            return _silent("cannot open the CURVE READY box: altered or forged")
        try:
            properties = parse_metadata(plain)
        except ValueError as exc:
            return _silent(f"malformed CURVE READY metadata: {exc}")
        self._peer_nonce = U64.unpack(nonce)[0]
        self._state = "done"
        return Step(done=True, peer_metadata=properties)


class CurveServer(_Curve):
    """CURVE server: WELCOME after HELLO, READY after INITIATE; `authenticate` maps the client's long-term
    public key to a user id, or None to refuse it with ERROR (default: accept every client, user id = Z85 key)."""

    as_server = True
    _send_prefix = MESSAGE_S_PREFIX
    _recv_prefix = MESSAGE_C_PREFIX

    def __init__(self, public: bytes | str, secret: bytes | str,
                 authenticate: Callable[[bytes], str | None] | None = None, *, random: Random | None = None) -> None:
        super().__init__(random)
        self.secret = _key(secret, "the server secret key")
        self.public = _key(public, "the server public key")
        if crypto_scalarmult_base(self.secret) != self.public:
            raise ValueError("the server public key does not belong to the secret key")
        self.authenticate = authenticate or (lambda key: z85_encode(key).decode("ascii"))
        self._cookie_key: bytes | None = self._random(32)
        self._state = "hello"
        self.client_public: bytes | None = None  # the client's long-term key, known after INITIATE
        self.user_id: str | None = None

    def start(self, metadata: dict[str, bytes]) -> Step:
        return Step()

    def on_command(self, command: Command, metadata: dict[str, bytes]) -> Step:
        name = command.name
        if name == "ERROR":
            return _silent(f"client sent ERROR (26/CurveZMQ forbids it): {command.details.get('reason', '')}")
        if self._state == "hello" and name == "HELLO":
            return self._on_hello(_body(command))
        if self._state == "initiate" and name == "INITIATE":
            return self._on_initiate(_body(command), metadata)
        return Step(error=f"unexpected {name} command in CURVE server state {self._state}")

    def _on_hello(self, body: bytes) -> Step:
        # libzmq closes without ERROR on a bad HELLO; so do we.
        problem = hello_problem(body, self.secret)
        if problem is not None:
            return _silent(problem)
        client_short = body[80:112]
        assert self._cookie_key is not None
        short_public, short_secret = generate_keypair(self._random)
        cookie_nonce = self._random(16)
        cookie = cookie_nonce + crypto_secretbox(client_short + short_secret, COOKIE_PREFIX + cookie_nonce,
                                                 self._cookie_key)
        welcome_nonce = self._random(16)
        box = crypto_box(short_public + cookie, WELCOME_PREFIX + welcome_nonce, client_short, self.secret)
        # From here on the server remembers nothing of this client: C' and s' live only in the cookie.
        self._state = "initiate"
        return Step(send=[WELCOME_NAME + welcome_nonce + box])

    def _on_initiate(self, body: bytes, metadata: dict[str, bytes]) -> Step:
        if len(body) < INITIATE_MIN_SIZE:
            return _silent(f"malformed CURVE INITIATE: {len(body)} octets, at least {INITIATE_MIN_SIZE}")
        if self._cookie_key is None:
            return _silent("CURVE cookie key already discarded")
        try:
            cookie = crypto_secretbox_open(body[25:105], COOKIE_PREFIX + body[9:25], self._cookie_key)
        except CryptoError:
            return _silent("CURVE INITIATE cookie does not open: not one of this server's cookies")
        client_short, short_secret = cookie[:32], cookie[32:64]
        nonce = body[105:113]
        precom = crypto_box_beforenm(client_short, short_secret)
        self._client_short = client_short
        try:
            plain = crypto_box_open_afternm(body[113:], INITIATE_PREFIX + nonce, precom)
        except CryptoError:
            return _silent("cannot open the CURVE INITIATE box: altered or forged")
        client_key, vouch_nonce, vouch_box = plain[:32], plain[32:48], plain[48:128]
        try:
            vouch = crypto_box_open(vouch_box, VOUCH_PREFIX + vouch_nonce, client_key, short_secret)
        except CryptoError:
            return _silent("CURVE vouch does not open: the client does not hold the secret of its key")
        if vouch[:32] != client_short or vouch[32:64] != self.public:
            return _silent("CURVE vouch does not name this connection's C' and this server's key")
        try:
            properties = parse_metadata(plain[128:])
        except ValueError as exc:
            return _silent(f"malformed CURVE INITIATE metadata: {exc}")
        self._cookie_key = None  # 26/CurveZMQ: discard the cookie key once a valid INITIATE arrived
        self.client_public = client_key
        user_id = self.authenticate(client_key)
        if user_id is None:
            return Step(error=ZAP_REFUSED)
        self.user_id = user_id
        self._precom = precom
        self._peer_nonce = U64.unpack(nonce)[0]
        ready_nonce = self._next_nonce()
        ready = READY_NAME + ready_nonce + crypto_box_afternm(encode_metadata(metadata), READY_PREFIX + ready_nonce,
                                                              precom)
        self._state = "done"
        return Step(send=[ready], done=True, peer_metadata=properties, user_id=user_id)
