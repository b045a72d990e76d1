"""Compact JSON as the routes and websockets answer it (`engine.notation`'s one encoder)."""

from __future__ import annotations

from ...engine.notation import compact_json as json_text
from ...engine.notation import json_bytes

__all__ = ["json_bytes", "json_text"]
