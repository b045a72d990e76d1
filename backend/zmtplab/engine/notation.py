"""Written forms every layer shares: endpoints (`ip:port`, `tcp://host:port`), typed hex, compact JSON.

One grammar each, so a user types the same spelling everywhere (the websocket's sends, a topology's
scripted sends, `zmtplab decode`, a lesson's chunks, a search) and every layer writes an address the
same way. Standard library only: the engine imports nothing of ours, and every layer imports the engine.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# ---------------------------------------------------------------- endpoints

SCHEMES = ("tcp", "ws")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A parsed endpoint: `scheme` ("" when the text named none), `host` (IPv6 without brackets), `port`
    (0: any, when binding) and `path` (a ws:// endpoint's resource, "/" when it names none; "" otherwise)."""

    scheme: str
    host: str
    port: int
    path: str = ""


def format_address(host: str, port: int) -> str:
    """`host:port`, an IPv6 host in brackets (`[::1]:5555`): how captures, taps and peers write an address."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_endpoint(text: str, *, bind: bool, default_host: str | None = None) -> Endpoint:
    """The endpoint in `text`: `tcp://host:port`, `ws://host:port/path`, or (no scheme) `host:port`.

    `[v6]` hosts lose their brackets; `*` as host is every interface (binding only), `*` or 0 as port is
    any (binding only). With `default_host`, a bare `port` (or `:port`) means that host. Raises
    `ValueError` with a readable message."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    elif scheme not in SCHEMES:
        raise ValueError(f"only tcp:// and ws:// endpoints are supported, not {text!r}")
    path = ""
    if scheme == "ws":
        rest, _, resource = rest.partition("/")
        path = "/" + resource
    host, sep, port_text = rest.rpartition(":")
    if not sep:
        host, port_text = "", rest
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        if default_host is None:
            raise ValueError(f"endpoint {text!r} has no host:port")
        host = default_host
    if host == "*":
        if not bind:
            raise ValueError("connect needs a host, not *")
        host = "0.0.0.0"
    port = 0 if port_text == "*" else int(port_text) if port_text.isdigit() else -1
    if not 0 <= port <= 65535 or (port == 0 and not bind):
        raise ValueError(f"bad port in {text!r}")
    return Endpoint(scheme, host, port, path)


# ---------------------------------------------------------------- typed hex

# What a typed hex text may hold besides its digits: 0x and \x prefixes, white space and the separators
# people paste from dumps, Wireshark and C arrays (`:` `,` `.` `_` `-`).
HEX_NOISE = re.compile(r"(0x|\\x|[\s:,._-])", re.IGNORECASE)
_HEX_DIGITS = re.compile(r"[0-9A-Fa-f]*")


def parse_hex(text: str) -> bytes:
    """Bytes from typed hex: digits with any of spaces, colons, commas, dots, underscores, dashes and 0x/\\x
    prefixes between them. Raises `ValueError` (with a readable message) when the text is not hex."""
    cleaned = HEX_NOISE.sub("", text)
    if not _HEX_DIGITS.fullmatch(cleaned):
        bad = next(c for c in cleaned if c not in "0123456789abcdefABCDEF")
        raise ValueError(f"{bad!r} is not a hex digit")
    if len(cleaned) % 2:
        raise ValueError("odd number of hex digits")
    return bytes.fromhex(cleaned)


# ---------------------------------------------------------------- compact JSON

_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_compact_str = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


def compact_json(obj: Any) -> str:
    """`obj` as compact JSON text: no spaces, non-ASCII kept as is (what routes, websockets, the event store
    and the pipeline write)."""
    return _compact(obj)


def compact_json_any(obj: Any) -> str:
    """`compact_json`, anything JSON has no type for written as its `str` (a value of any type)."""
    return _compact_str(obj)


def json_bytes(obj: Any) -> bytes:
    """`obj` as compact UTF-8 JSON (an HTTP body)."""
    return _compact(obj).encode()


__all__ = ["HEX_NOISE", "SCHEMES", "Endpoint", "compact_json", "compact_json_any", "format_address", "json_bytes",
           "parse_endpoint", "parse_hex"]
