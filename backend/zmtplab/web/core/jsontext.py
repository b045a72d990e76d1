"""Compact JSON as the routes and websockets answer it: UTF-8 text, no spaces, non-ASCII kept as is."""

from __future__ import annotations

import json
from typing import Any

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def json_text(obj: Any) -> str:
    """`obj` as compact JSON text (a websocket text message)."""
    return _encode(obj)


def json_bytes(obj: Any) -> bytes:
    """`obj` as compact UTF-8 JSON (an HTTP body)."""
    return _encode(obj).encode()
