#!/usr/bin/env python3
"""Damaged variants of a capture: its frames written out of order, duplicated, dropped or cut.

Usage::

    python captures/variants.py CAPTURE... --out DIR [--count N] [--seed S]

Writes `DIR/<capture>.<n>.<kind>.pcapng` for each capture and prints one line per variant with
what was done to it. The damage is what real captures suffer: frames swapped at several distances
(multi-queue NICs, `-i any`, merged files), a data segment written after the ACK that covers it,
duplicated frames, dropped frames (capture loss) and frames cut short (snaplen). SYN frames stay
where they are and whole: the variants damage a connection's data, not its set-up.

`variants()` gives the same variants as bytes with their ground truth (`Truth`): for every
direction, which stream offsets the variant's frames still hold and where each stream ends as far
as the variant shows it, computed from the frames alone, without any reassembler.
"""

from __future__ import annotations

import argparse
import io
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from zmtplab.capture.pcapfile import CaptureReader, ReaderStats, TcpPacket, decode_tcp
from zmtplab.capture.pcapwriter import PcapngWriter

FIN, SYN, ACK = 0x01, 0x02, 0x10
MASK = 0xFFFFFFFF
KINDS = ("swap", "ack-first", "duplicate", "drop", "snaplen", "mixed")
#: Distances (in frames) a frame is moved by; all well inside the reassembler's reorder window.
DISTANCES = (1, 2, 3, 5, 8, 16, 32)

Key = tuple[str, int, str, int]  # src, sport, dst, dport: one direction


@dataclass(frozen=True, slots=True)
class Original:
    """One frame of the original capture, with the TCP segment it carries (None: not TCP)."""

    index: int
    ts: float
    linktype: int
    data: bytes
    tcp: TcpPacket | None

    @property
    def movable(self) -> bool:
        return self.tcp is not None and not self.tcp.flags & SYN

    @property
    def key(self) -> Key | None:
        t = self.tcp
        return None if t is None else (t.src, t.sport, t.dst, t.dport)


@dataclass(frozen=True, slots=True)
class Placed:
    """A frame of a variant: which original frame, and how many payload bytes a cut kept (None: whole)."""

    index: int
    keep: int | None = None


@dataclass
class Truth:
    """What a variant holds, per direction: covered stream offsets and where each stream ends."""

    covered: dict[Key, bytearray] = field(default_factory=dict)  # 1 where the variant has the byte
    extent: dict[Key, int] = field(default_factory=dict)  # bytes up to the last one (or the FIN) shown

    def missing(self, key: Key) -> list[tuple[int, int]]:
        """The (offset, length) runs of the stream the variant lacks."""
        end = self.extent.get(key, 0)
        mask = bytes(self.covered.get(key, b""))[:end].ljust(end, b"\x00")
        runs, pos = [], 0
        while (start := mask.find(0, pos)) >= 0:
            stop = mask.find(1, start)
            stop = end if stop < 0 else stop
            runs.append((start, stop - start))
            pos = stop
        return runs


@dataclass
class Variant:
    """A damaged copy of a capture: its pcapng bytes, its frames, what was done and its truth."""

    name: str
    kind: str
    what: list[str]
    frames: list[Placed]
    data: bytes
    truth: Truth


def read_original(path: str | Path) -> list[Original]:
    """Every frame of a capture, with its TCP segment."""
    stats = ReaderStats()
    return [Original(i, f.ts, f.linktype, f.data, decode_tcp(f.number, f.ts, f.linktype, f.data, stats))
            for i, f in enumerate(CaptureReader(path).frames())]


def _isns(frames: list[Original]) -> dict[Key, int]:
    """Each direction's ISN, from its SYN (the variants keep SYNs, so offsets stay computable)."""
    out: dict[Key, int] = {}
    for f in frames:
        if f.tcp is not None and f.tcp.flags & SYN:
            out.setdefault(f.key, f.tcp.seq)  # type: ignore[arg-type]
    return out


def truth(frames: list[Original], placed: list[Placed]) -> Truth:
    """The ground truth of a variant, from its frames' sequence numbers and captured lengths."""
    isns = _isns(frames)
    t = Truth()
    for p in placed:
        f = frames[p.index]
        tcp = f.tcp
        if tcp is None or f.key not in isns:
            continue
        key = f.key
        off = (tcp.seq - isns[key] - 1) & MASK if not tcp.flags & SYN else 0  # type: ignore[index]
        size = len(tcp.payload)
        kept = size if p.keep is None else p.keep
        end = off + size  # a FIN sits right after the payload and takes no stream byte
        mask = t.covered.setdefault(key, bytearray())  # type: ignore[arg-type]
        if len(mask) < off + kept:
            mask.extend(bytes(off + kept - len(mask)))
        mask[off:off + kept] = b"\x01" * kept
        if size or tcp.flags & FIN:
            t.extent[key] = max(t.extent.get(key, 0), end)  # type: ignore[index]
    return t


def write(frames: list[Original], placed: list[Placed]) -> bytes:
    """A pcapng of the placed frames (original timestamps, so time runs backwards where they moved)."""
    f = io.BytesIO()
    w = PcapngWriter(f, linktype=frames[0].linktype)
    for p in placed:
        src = frames[p.index]
        data = src.data
        if p.keep is not None:
            data = data[:len(data) - len(src.tcp.payload) + p.keep]  # type: ignore[union-attr]
        w.write_frame(data, src.ts, orig_len=len(src.data))
    return f.getvalue()


# --------------------------------------------------------------------------- damage


def _data_positions(frames: list[Original], order: list[Placed]) -> list[int]:
    return [i for i, p in enumerate(order) if frames[p.index].movable and frames[p.index].tcp.payload]  # type: ignore[union-attr]


def _pair(f: Original) -> frozenset:
    t = f.tcp
    return frozenset({(t.src, t.sport), (t.dst, t.dport)})  # type: ignore[union-attr]


def _after_setup(frames: list[Original], order: list[Placed], frame: Original, position: int) -> bool:
    """Whether `position` comes after every SYN of `frame`'s connection (a connection's data never
    precedes its SYNs: the variants damage data, not set-up)."""
    pair = _pair(frame)
    return all(k < position for k, p in enumerate(order)
               if frames[p.index].tcp is not None and frames[p.index].tcp.flags & SYN  # type: ignore[union-attr]
               and _pair(frames[p.index]) == pair)


def _swap(frames: list[Original], order: list[Placed], rnd: random.Random) -> str | None:
    movable = [i for i, p in enumerate(order) if frames[p.index].movable]
    if len(movable) < 2:
        return None
    d = rnd.choice(DISTANCES)
    i = rnd.randrange(len(movable))
    j = min(i + d, len(movable) - 1)
    if i == j:
        i = max(j - d, 0)
    a, b = movable[i], movable[j]
    if not _after_setup(frames, order, frames[order[b].index], a):
        return None
    order[a], order[b] = order[b], order[a]
    return f"swap frames {order[b].index + 1} and {order[a].index + 1} ({b - a} frames apart)"


def _ack_first(frames: list[Original], order: list[Placed], rnd: random.Random) -> str | None:
    """Move a data segment after the first frame of the other direction that ACKs it."""
    candidates = []
    for i in _data_positions(frames, order):
        tcp = frames[order[i].index].tcp
        end = (tcp.seq + len(tcp.payload)) & MASK  # type: ignore[union-attr]
        for j in range(i + 1, len(order)):
            other = frames[order[j].index].tcp
            if (other is not None and (other.src, other.sport) == (tcp.dst, tcp.dport)  # type: ignore[union-attr]
                    and other.flags & ACK and ((other.ack - end) & MASK) < (1 << 31)):
                candidates.append((i, j))
                break
    if not candidates:
        return None
    i, j = rnd.choice(candidates)
    moved = order.pop(i)
    order.insert(j, moved)  # j shifted down by one: lands right after the ACK
    return f"frame {moved.index + 1} written after the ACK in frame {order[j - 1].index + 1}"


def _duplicate(frames: list[Original], order: list[Placed], rnd: random.Random) -> str | None:
    data = _data_positions(frames, order)
    if not data:
        return None
    i = rnd.choice(data)
    j = min(i + rnd.choice((0, *DISTANCES)), len(order) - 1) + 1
    order.insert(j, Placed(order[i].index))
    return f"frame {order[i].index + 1} written again {j - i} frames later"


def _drop(frames: list[Original], order: list[Placed], rnd: random.Random) -> str | None:
    movable = [i for i, p in enumerate(order) if frames[p.index].movable]
    data = _data_positions(frames, order)
    pool = data if data and rnd.random() < 0.8 else movable
    if not pool:
        return None
    gone = order.pop(rnd.choice(pool))
    return f"frame {gone.index + 1} dropped"


def _snaplen(frames: list[Original], order: list[Placed], rnd: random.Random) -> str | None:
    data = [i for i in _data_positions(frames, order) if order[i].keep is None]
    if not data:
        return None
    i = rnd.choice(data)
    size = len(frames[order[i].index].tcp.payload)  # type: ignore[union-attr]
    keep = rnd.randrange(size)
    order[i] = Placed(order[i].index, keep)
    return f"frame {order[i].index + 1} cut to {keep} of its {size} payload bytes"


_DAMAGE = {"swap": _swap, "ack-first": _ack_first, "duplicate": _duplicate, "drop": _drop, "snaplen": _snaplen}


def damage(frames: list[Original], kind: str, rnd: random.Random) -> tuple[list[Placed], list[str]]:
    """One variant's frame order: 1-3 damages of `kind` ('mixed': of any kind)."""
    order = [Placed(f.index) for f in frames]
    what: list[str] = []
    for _ in range(rnd.randint(1, 3) if kind != "mixed" else rnd.randint(3, 6)):
        op = _DAMAGE[rnd.choice(list(_DAMAGE)) if kind == "mixed" else kind]
        note = op(frames, order, rnd)
        if note:
            what.append(note)
    return order, what


def variants(path: str | Path, count: int, seed: int = 0, frames: list[Original] | None = None) -> Iterator[Variant]:
    """`count` damaged variants of a capture (kinds in turn, 'mixed' first), the same for the same seed."""
    frames = read_original(path) if frames is None else frames
    name = Path(path).stem
    rnd = random.Random(f"{name}:{seed}")
    kinds = ("mixed", *KINDS[:-1])
    for n in range(count):
        kind = kinds[n % len(kinds)]
        order, what = damage(frames, kind, rnd)
        yield Variant(f"{name}.{n}.{kind}", kind, what, order, write(frames, order), truth(frames, order))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("captures", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for path in args.captures:
        for v in variants(path, args.count, args.seed):
            (args.out / f"{v.name}.pcapng").write_bytes(v.data)
            print(f"{v.name}.pcapng: {'; '.join(v.what) or 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
