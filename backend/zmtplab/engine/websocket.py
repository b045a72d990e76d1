"""WebSocket (RFC 6455) as annotated octets: a frame header and its fields, masking, an HTTP upgrade's lines.

This module reads and annotates; it keeps no protocol state. The strict peer leaves the WebSocket
protocol itself (the opening handshake, framing, masking, ping/pong, the closing handshake) to
wsproto (`zws_connection.py`). The dissector must say where every octet of a captured stream sits
and read on past a broken rule, which wsproto does not do, so it reads frame headers here.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from .fields import Field, text_or_hex

OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
OPCODES = {OP_CONTINUATION: "continuation", OP_TEXT: "text", OP_BINARY: "binary", OP_CLOSE: "close",
           OP_PING: "ping", OP_PONG: "pong"}
MAX_CONTROL_PAYLOAD = 125
ACCEPT_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
HEAD_END = b"\r\n\r\n"


@dataclass(frozen=True, slots=True)
class WsHeader:
    """A frame header as read (RFC 6455 5.2): `size` octets in all, then `length` octets of payload."""

    fin: bool
    rsv: int  # RSV1-3 as bits 2-0
    opcode: int
    masked: bool
    length: int
    size: int
    mask: bytes  # the masking key, b"" when unmasked
    length_octets: int  # 0, 2 or 8: the extended payload length's size

    @property
    def control(self) -> bool:
        return bool(self.opcode & 0x8)

    @property
    def minimal(self) -> bool:
        """Whether the payload length is written in the fewest octets (RFC 6455 5.2 requires it)."""
        if self.length_octets == 2:
            return self.length > 125
        if self.length_octets == 8:
            return self.length > 0xFFFF
        return True


def read_header(buf: bytes | bytearray, pos: int) -> WsHeader | None:
    """The frame header at `buf[pos:]`, or None when it is not all there yet."""
    avail = len(buf) - pos
    if avail < 2:
        return None
    first, second = buf[pos], buf[pos + 1]
    masked = bool(second & 0x80)
    length = second & 0x7F
    ext = 2 if length == 126 else 8 if length == 127 else 0
    size = 2 + ext + (4 if masked else 0)
    if avail < size:
        return None
    if ext:
        length = int.from_bytes(buf[pos + 2:pos + 2 + ext], "big")
    mask = bytes(buf[pos + 2 + ext:pos + size]) if masked else b""
    return WsHeader(bool(first & 0x80), (first >> 4) & 0x7, first & 0xF, masked, length, size, mask, ext)


def unmask(data: bytes | bytearray, mask: bytes, phase: int = 0) -> bytes:
    """`data` XORed with the masking key, starting at key octet `phase` (masking is its own inverse)."""
    if not mask or not data:
        return bytes(data)
    key = (mask[phase % 4:] + mask[:phase % 4]) * (len(data) // 4 + 1)
    n = len(data)
    return (int.from_bytes(data, "big") ^ int.from_bytes(key[:n], "big")).to_bytes(n, "big")


def accept_token(key: str) -> str:
    """The Sec-WebSocket-Accept a server answers to a Sec-WebSocket-Key (RFC 6455 4.2.2)."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii", "replace") + ACCEPT_GUID).digest()).decode("ascii")


def opcode_name(opcode: int) -> str:
    return OPCODES.get(opcode, f"reserved 0x{opcode:x}")


# ---- fields

def header_fields(offset: int, raw: bytes | bytearray, header: WsHeader) -> list[Field]:
    """The fields of a frame header that starts at stream `offset` (`raw`: its octets)."""
    first, second = raw[0], raw[1]
    bits = [name for bit, name in ((0x80, "FIN"), (0x40, "RSV1"), (0x20, "RSV2"), (0x10, "RSV3")) if first & bit]
    what = ", ".join([*bits, opcode_name(header.opcode)])
    out = [
        Field("fin-opcode", offset, 1, f"0x{first:02x} ({what})", "frame-opcode",
              "FIN (bit 7) ends a message; RSV1-3 (bits 6-4) stay 0 without an extension; the opcode (bits 3-0) "
              "says binary (0x2), continuation (0x0), text (0x1), close (0x8), ping (0x9) or pong (0xA) "
              "(RFC 6455 5.2)."),
    ]
    seven = second & 0x7F
    shown = f"0x{second:02x} ({'MASK, ' if header.masked else ''}{seven})"
    if header.length_octets:
        out.append(Field("mask-length", offset + 1, 1, shown, "frame-payload-length",
                         f"MASK (bit 7) says a masking key follows: a client masks every frame, a server none. "
                         f"{seven} in bits 6-0 says the payload length follows in {header.length_octets} octets."))
        out.append(Field("extended-length", offset + 2, header.length_octets, header.length, "frame-payload-length",
                         "Payload length in network byte order (RFC 6455 5.2)."))
    else:
        out.append(Field("mask-length", offset + 1, 1, shown, "frame-payload-length",
                         "MASK (bit 7) says a masking key follows: a client masks every frame, a server none. "
                         "Bits 6-0 are the payload length, 0 to 125."))
    if header.masked:
        out.append(Field("masking-key", offset + header.size - 4, 4, header.mask.hex(), "frame-masking-key",
                         "The client's masking key: each payload octet is XORed with key octet (i mod 4). "
                         "The values shown here are unmasked."))
    return out


def head_fields(offset: int, head: bytes) -> list[Field]:
    """The fields of an HTTP upgrade request or response (`head`: up to and including the empty line)."""
    out: list[Field] = []
    pos = 0
    first = True
    while pos < len(head):
        end = head.find(b"\r\n", pos)
        end = len(head) if end < 0 else end + 2
        line = head[pos:end]
        text = line.rstrip(b"\r\n").decode("latin-1")
        if not text:
            out.append(Field("end-of-head", offset + pos, len(line), "CRLF", "CRLF",
                             "The empty line that ends the HTTP head: WebSocket frames follow."))
        elif first and text.startswith("HTTP/"):
            note = ("101 Switching Protocols: the server agrees, and WebSocket frames follow the empty line (RFC 6455 "
                    "4.2.2)." if text[9:13] == "101 " or text[9:] == "101" else
                    "Any status but 101 refuses the upgrade: what follows is not WebSocket (RFC 6455 4.1).")
            out.append(Field("status-line", offset + pos, len(line), text, "Status-Line", note))
        elif first:
            out.append(Field("request-line", offset + pos, len(line), text, "Request-Line",
                             "GET and the resource the client asked for: the path of the ws:// endpoint (RFC 6455 "
                             "4.1)."))
        else:
            name, _, value = text.partition(":")
            out.append(Field(name.strip() or "header", offset + pos, len(line), value.strip(), "header-field",
                             HEADER_NOTES.get(name.strip().lower(), OTHER_HEADER_NOTE)))
        first = False
        pos = end
    return out


OTHER_HEADER_NOTE = "An HTTP header that neither WebSocket nor ZWS needs."
HEADER_NOTES = {
    "host": "The host (and port) of the ws:// endpoint (RFC 6455 4.1).",
    "upgrade": "websocket: asks to switch this connection to the WebSocket protocol.",
    "connection": "Upgrade: the connection itself changes protocol (RFC 6455 4.1).",
    "sec-websocket-key": "16 random octets in base64; the server proves it read them in Sec-WebSocket-Accept.",
    "sec-websocket-accept": "base64(SHA-1(the client's key + 258EAFA5-E914-47DA-95CA-C5AB0DC85B11)): the server "
                            "read this upgrade (RFC 6455 4.2.2).",
    "sec-websocket-version": "13, the WebSocket version of RFC 6455.",
    "sec-websocket-protocol": "The subprotocols: the client offers ZWS2.0 (no mechanism), ZWS2.0/NULL, "
                              "ZWS2.0/PLAIN or ZWS2.0/CURVE in order of preference; the server answers the one it "
                              "chose (45/ZWS Handshake).",
    "sec-websocket-extensions": "WebSocket extensions (permessage-deflate); ZWS peers leave them out.",
    "origin": "The page that opened the WebSocket (browsers send it).",
}


def close_payload(payload: bytes) -> tuple[int | None, str]:
    """(status code or None, reason) of a close frame's payload (RFC 6455 5.5.1); the reason as text or hex."""
    if len(payload) < 2:
        return None, payload.hex()
    return int.from_bytes(payload[:2], "big"), text_or_hex(payload[2:])
