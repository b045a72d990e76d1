"""One capture packet decoded by tshark (through pyshark), on demand, in a worker thread.

Only the validated packet number reaches tshark's command line (as a display filter
`frame.number==N`); the capture path is the server's own file. Results are cached.
pyshark runs its own event loop, so every decode happens in a worker thread and the
capture object is always closed, which also stops tshark once the packet was read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
LAYERS = ("frame", "eth", "sll", "ip", "ipv6", "tcp")
FAILED = "tshark could not decode this packet (the server's log says why)"
_BITS = re.compile(r"^[01. ]+ = ")


class PacketNotFound(LookupError):
    """The capture has no packet with that number."""


class PacketDecodeError(RuntimeError):
    """tshark could not decode the packet (not installed, failed, timed out). Its text is for the client: what
    tshark said (its stderr, a process id, paths) goes to the server's log only."""


def _field_entry(field: Any, abbrev: str) -> dict[str, str]:
    show = getattr(field, "showname", None) or ""
    raw = getattr(field, "show", None)
    raw_text = str(raw) if raw is not None else str(field)
    text = _BITS.sub("", show)
    if ": " in text:
        name, value = text.split(": ", 1)
    elif text:
        name, value = text, raw_text if raw_text != text else ""
    else:
        name, value = abbrev, raw_text
    return {"name": name.strip(), "value": " ".join(value.split()), "field": abbrev}


def _layer(layer: Any, name: str) -> dict[str, Any]:
    fields: list[dict[str, str]] = []
    for field_name in layer.field_names:
        try:
            main = layer.get_field(field_name)
        except Exception:  # pyshark's field access is best effort
            continue
        if main is None:
            continue
        abbrev = f"{name}.{field_name}" if field_name else name
        for f in getattr(main, "all_fields", None) or [main]:
            fields.append(_field_entry(f, abbrev))
    return {"name": name, "fields": fields}


def decode_packet(path: Path, number: int, tshark_path: str | None = None) -> dict[str, Any]:
    """Runs tshark on `path` for packet `number`; blocking (call it in a worker thread)."""
    import pyshark  # imported lazily: it is heavy and only this route needs it

    number = int(number)  # the only value from a request that reaches the command line
    capture = None
    try:
        capture = pyshark.FileCapture(str(path), display_filter=f"frame.number=={number}", keep_packets=False,
                                      disable_protocol="sigcomp", tshark_path=tshark_path)
        for packet in capture:
            layers = [_layer(packet.frame_info, "frame")]
            for layer in packet.layers:
                name = layer.layer_name
                if name in LAYERS and name != "frame":
                    layers.append(_layer(layer, name))
            return {"number": number, "layers": layers}
    except Exception as exc:
        log.warning("tshark failed on packet %d of %s: %s: %s", number, path.name, type(exc).__name__,
                    " ".join(str(exc).split())[:500])
        raise PacketDecodeError(FAILED) from exc
    finally:
        if capture is not None:
            # Closing early (we stop at the first matching packet) can find tshark already gone
            # with an error code, which pyshark raises as a crash; the packet we read is still good.
            with contextlib.suppress(Exception):
                capture.close()
    raise PacketNotFound(number)


class PacketDecoder:
    """Decodes packets with a bounded cache and a bounded number of tshark processes at once."""

    def __init__(self, *, cache_size: int = 512, concurrency: int = 2, timeout: float = 60.0,
                 tshark_path: str | None = None) -> None:
        self.cache: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()
        self.cache_size = cache_size
        self.timeout = timeout
        self.tshark_path = tshark_path
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()

    def forget(self, key: str) -> None:
        """Drops the cached packets of one capture."""
        with self._lock:
            for k in [k for k in self.cache if k[0] == key]:
                del self.cache[k]

    def _cached(self, key: tuple[str, int]) -> dict[str, Any] | None:
        with self._lock:
            hit = self.cache.get(key)
            if hit is not None:
                self.cache.move_to_end(key)
            return hit

    def _store(self, key: tuple[str, int], value: dict[str, Any]) -> None:
        if self.cache_size <= 0:
            return
        with self._lock:
            self.cache[key] = value
            while len(self.cache) > self.cache_size:
                self.cache.popitem(last=False)

    def _decode_blocking(self, path: Path, number: int) -> dict[str, Any]:
        with self._slots:
            return decode_packet(path, number, self.tshark_path)

    async def packet(self, key: str, path: Path, number: int) -> dict[str, Any]:
        """The layers of packet `number` of the capture at `path` (`key` names it in the cache)."""
        hit = self._cached((key, number))
        if hit is not None:
            return hit
        try:
            result = await asyncio.wait_for(asyncio.to_thread(self._decode_blocking, path, number), self.timeout)
        except TimeoutError as exc:
            raise PacketDecodeError(f"tshark took longer than {self.timeout:g} s") from exc
        except FileNotFoundError as exc:
            log.warning("tshark is not available: %s", exc)
            raise PacketDecodeError("tshark is not available on the server") from exc
        self._store((key, number), result)
        return result
