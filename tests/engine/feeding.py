"""Feeding byte streams to decoders in different cuts: whole, one byte at a time, and split at every offset.

A decoder must report the same elements however the bytes arrive. `decode()` runs one
direction through a fresh `StreamDecoder`; `assert_cut_invariant()` checks that every cut
gives exactly the `to_dict()` list of the whole stream and returns that list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from zmtplab.engine import ConnectionDissector, StreamDecoder
from zmtplab.engine.events import WireEvent

DecoderFactory = Callable[[], StreamDecoder]


def run_decoder(decoder: StreamDecoder, chunks: Iterable[bytes], *, close: bool = True) -> list[WireEvent]:
    """Feeds `chunks` in order (then ends the stream) and returns every element decoded."""
    out: list[WireEvent] = []
    for chunk in chunks:
        decoder.receive_data(chunk)
        out.extend(decoder.events())
    if close:
        decoder.close()
        out.extend(decoder.events())
    return out


def decode(data: bytes, factory: DecoderFactory = StreamDecoder, *, close: bool = True) -> list[WireEvent]:
    """Decodes one whole direction with a fresh decoder."""
    return run_decoder(factory(), [data], close=close)


def dicts(events: Iterable[WireEvent], **kwargs: Any) -> list[dict[str, Any]]:
    return [e.to_dict(**kwargs) for e in events]


def one_byte_chunks(data: bytes) -> list[bytes]:
    return [data[i:i + 1] for i in range(len(data))]


def cuts(data: bytes, *, every_split: bool = True) -> Iterable[tuple[str, list[bytes]]]:
    """The ways to cut `data`: one byte at a time, then two chunks split at each inner offset."""
    yield "one byte at a time", one_byte_chunks(data)
    if every_split:
        for i in range(1, len(data)):
            yield f"split at {i}", [data[:i], data[i:]]


def assert_cut_invariant(data: bytes, factory: DecoderFactory = StreamDecoder, *, every_split: bool = True,
                         close: bool = True) -> list[dict[str, Any]]:
    """Decodes `data` whole and in every cut; all must give the same `to_dict()` list, which is returned."""
    whole = dicts(decode(data, factory, close=close))
    for label, chunks in cuts(data, every_split=every_split):
        got = dicts(run_decoder(factory(), chunks, close=close))
        assert got == whole, f"{label}: events differ from feeding the stream whole"
    return whole


# ---------------------------------------------------------------- both directions


def dissect(segments: Iterable[tuple[str, bytes]], *, mid_stream: bool = False) -> list[tuple[str, WireEvent]]:
    """Runs a `ConnectionDissector` over (direction, bytes) writes in order, then closes it."""
    dissector = ConnectionDissector(mid_stream=mid_stream)
    out: list[tuple[str, WireEvent]] = []
    for direction, data in segments:
        out.extend(dissector.receive_data(direction, data))
    out.extend(dissector.close())
    return out


def per_direction(events: Iterable[tuple[str, WireEvent]], **kwargs: Any) -> dict[str, list[dict[str, Any]]]:
    """Each direction's elements as `to_dict()` lists, in stream order."""
    out: dict[str, list[dict[str, Any]]] = {"c2s": [], "s2c": []}
    for direction, event in events:
        out[direction].append(event.to_dict(**kwargs))
    return out


def one_byte_segments(segments: Iterable[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """The same writes, in the same order, each cut into 1-octet writes."""
    return [(d, data[i:i + 1]) for d, data in segments for i in range(len(data))]


def interleaved(c2s: bytes, s2c: bytes, size: int) -> list[tuple[str, bytes]]:
    """Both directions cut into `size`-octet writes that alternate c2s, s2c, c2s, ..."""
    out: list[tuple[str, bytes]] = []
    for i in range(0, max(len(c2s), len(s2c)), size):
        if c2s[i:i + size]:
            out.append(("c2s", c2s[i:i + size]))
        if s2c[i:i + size]:
            out.append(("s2c", s2c[i:i + size]))
    return out
