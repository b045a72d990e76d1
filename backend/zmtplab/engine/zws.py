"""45/ZWS, ZeroMQ over WebSocket 2.0: its subprotocols and their negotiation, the flag octet, and the HTTP
upgrade as the dissector and the peer read it.

A ZWS connection is a WebSocket connection (RFC 6455) whose subprotocol is one of `PROTOCOLS`. Each
ZeroMQ frame is one binary WebSocket message: a flag octet (%x00 final, %x01 MORE, %x02 COMMAND) and the
frame's body. With a mechanism (`ZWS2.0/NULL`, `ZWS2.0/PLAIN`, and libzmq's `ZWS2.0/CURVE`) the traffic
follows 23/ZMTP after its greeting: handshake commands (READY ...), then messages; subscriptions are
%x01/%x00-prefixed messages, as in ZMTP 3.0. Without one (`ZWS2.0`) it is ZMTP/2-like: each side's first
message is its routing id, then messages only. The dissector also reads 39/ZWS (`ZWS1.0`), which is the
same without mechanisms and names the client's socket type in the request's `?type=` query.
"""

from __future__ import annotations

from dataclasses import dataclass

import h11

NO_MECHANISM = "ZWS2.0"
PROTOCOLS: dict[str, str | None] = {
    NO_MECHANISM: None, "ZWS2.0/NULL": "NULL", "ZWS2.0/PLAIN": "PLAIN", "ZWS2.0/CURVE": "CURVE",
}
"""The subprotocols and their mechanisms: 45/ZWS defines the first three (and BEARER, not specified yet);
ZWS2.0/CURVE is libzmq's."""
ZWS1 = "ZWS1.0"
"""39/ZWS, read by the dissector only: routing ids like ZWS2.0, the client's socket type in `?type=`."""

FLAG_MORE = 0x01
FLAG_COMMAND = 0x02
RESERVED_FLAGS = 0xFC
MAX_HEAD = 16384  # octets an HTTP upgrade may take (h11's own limit for an incomplete event)


def client_offer(mechanism: str) -> list[str]:
    """What a client offers in Sec-WebSocket-Protocol, as libzmq 4.3 does: `ZWS2.0/NULL,ZWS2.0` for NULL."""
    mechanism = mechanism.upper()
    if mechanism == "NULL":
        return ["ZWS2.0/NULL", NO_MECHANISM]
    return [f"ZWS2.0/{mechanism}"]


def fits(protocol: str, mechanism: str) -> bool:
    """Whether a peer of `mechanism` speaks `protocol` (NULL speaks both ZWS2.0 and ZWS2.0/NULL, as in libzmq)."""
    if protocol not in PROTOCOLS:
        return False
    wanted = PROTOCOLS[protocol]
    return wanted == mechanism.upper() or (wanted is None and mechanism.upper() == "NULL")


def choose(offered: list[str], mechanism: str, accepted: list[str] | None = None) -> str | None:
    """The server's choice: the first offered protocol it speaks (libzmq's rule), within `accepted` when given."""
    for protocol in offered:
        if fits(protocol, mechanism) and (accepted is None or protocol in accepted):
            return protocol
    return None


def mechanism_of(protocol: str | None) -> str | None:
    """The mechanism of a ZWS subprotocol; None for ZWS2.0 (no mechanism) or an unknown one."""
    return PROTOCOLS.get(protocol or "")


def routing_ids(protocol: str | None) -> bool:
    """Whether each side's first message is its routing id (ZWS2.0 without mechanism, and ZWS1.0)."""
    return protocol in (NO_MECHANISM, ZWS1)


def version_of(protocol: str | None) -> str:
    """The ZMTP version whose rules the traffic follows, for the event contract's `version`: "3.0" with a
    mechanism (a 23/ZMTP handshake, 3.0-style subscriptions), "2.0" for routing ids (15/ZMTP-like)."""
    return "2.0" if routing_ids(protocol) else "3.0"


def split_protocols(value: str) -> list[str]:
    """The subprotocols of a Sec-WebSocket-Protocol value (a comma-separated list)."""
    return [p.strip() for p in value.split(",") if p.strip()]


# ---- the HTTP upgrade, read with h11

@dataclass(frozen=True, slots=True)
class Upgrade:
    """What an HTTP upgrade request or response says (names lower-cased, values as text)."""

    headers: tuple[tuple[str, str], ...]
    target: str | None = None  # a request's
    status: int | None = None  # a response's

    def header(self, name: str) -> str | None:
        """The first value of header `name` (None when absent)."""
        for key, value in self.headers:
            if key == name:
                return value
        return None

    def all(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key == name]

    @property
    def protocols(self) -> list[str]:
        """Sec-WebSocket-Protocol, every occurrence, as a list."""
        return [p for value in self.all("sec-websocket-protocol") for p in split_protocols(value)]

    @property
    def upgrades_to_websocket(self) -> bool:
        upgrade = (self.header("upgrade") or "").lower()
        tokens = [t.strip().lower() for value in self.all("connection") for t in value.split(",")]
        return upgrade == "websocket" and "upgrade" in tokens


def _upgrade(event: h11.Request | h11.InformationalResponse | h11.Response) -> Upgrade:
    headers = tuple((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in event.headers.raw_items())
    if isinstance(event, h11.Request):
        return Upgrade(headers, target=event.target.decode("latin-1"))
    return Upgrade(headers, status=event.status_code)


def parse_request(head: bytes) -> Upgrade:
    """An HTTP request head (up to and including its empty line); raises `h11.RemoteProtocolError`."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    conn.receive_data(head)
    event = conn.next_event()
    if not isinstance(event, h11.Request):
        raise h11.RemoteProtocolError("not a whole HTTP request head")
    return _upgrade(event)


def parse_response(head: bytes) -> Upgrade:
    """An HTTP response head to an upgrade request; raises `h11.RemoteProtocolError`."""
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "zws"), ("Upgrade", "websocket"),
                                                            ("Connection", "Upgrade")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(head)
    event = conn.next_event()
    if not isinstance(event, (h11.InformationalResponse, h11.Response)):
        raise h11.RemoteProtocolError("not a whole HTTP response head")
    return _upgrade(event)


def head_length(data: bytes | bytearray, start: int = 0) -> int | None:
    """The length of the HTTP head at `data[start:]` (through its empty line), or None when not all there."""
    end = data.find(b"\r\n\r\n", start)
    return None if end < 0 else end + 4 - start


def starts_like_request(first: bytes | bytearray) -> bool:
    """Whether `first` (one or more octets) could begin an HTTP upgrade request: "GET "."""
    prefix = bytes(first[:4])
    return bool(prefix) and b"GET "[:len(prefix)] == prefix


def sniff_upgrade(first: bytes | bytearray) -> bool | None:
    """Whether a connection whose client sent `first` is ZWS: True for an HTTP upgrade to WebSocket that offers
    a ZWS subprotocol, False when it is anything else, None while the request head is not all there."""
    if not starts_like_request(first):
        return False
    size = head_length(first)
    if size is None:
        return None if len(first) < MAX_HEAD else False
    try:
        request = parse_request(bytes(first[:size]))
    except h11.RemoteProtocolError:
        return False
    return request.upgrades_to_websocket and any(p.startswith(("ZWS2.0", ZWS1)) for p in request.protocols)
