"""Makes a big capture of real libzmq traffic: the reference captures' TCP conversations replayed,
segment for segment, as many distinct connections, by the project's own writer (`capture.pcapwriter`).

Every copy keeps its template's payload bytes, segmentation, flags and relative timing; only the
client port and the time change. Most copies are `bulk.pcapng` (200,000 PUSH messages, 14 octets per
element: the dense worst case of the viewer); one copy in ten of each of the others (a 1 MiB frame,
DEALER/ROUTER with identities, PUB/SUB with SUBSCRIBE/CANCEL commands) gives the store greetings,
commands and long frames too.

    .venv/bin/python benchmarks/bigcapture.py OUT [--size 1G]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from zmtplab.capture.pcapfile import read_tcp_packets
from zmtplab.capture.pcapwriter import SYN, PcapngWriter

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
TEMPLATES = ("bulk.pcapng", "large.pcapng", "dealer_router.pcapng", "pub_sub.pcapng", "req_rep.pcapng")

Segment = tuple[str, float, int, bytes]  # direction, seconds after the first packet, TCP flags, payload


def template(path: Path) -> tuple[int, list[Segment]]:
    """The server port and the segments of a capture's one TCP connection, as (direction, relative time, flags,
    payload)."""
    out: list[Segment] = []
    client: tuple[str, int] | None = None
    server = 0
    first = None
    for p in read_tcp_packets(str(path)):
        if client is None:
            syn = p.flags & SYN and not p.flags & 0x10
            client = (p.src, p.sport) if syn else (p.dst, p.dport)
            server = p.dport if syn else p.sport
        if first is None:
            first = p.ts
        direction = "c2s" if (p.src, p.sport) == client else "s2c"
        out.append((direction, p.ts - first, p.flags, p.payload))
    return server, out


def parse_size(text: str) -> int:
    """`1G`, `300M`, `5000000` to octets."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def make(out: Path, size: int) -> dict[str, int]:
    """Writes a capture of about `size` octets to `out`; returns how many copies of each template it holds."""
    templates = {name: template(SHARED / name) for name in TEMPLATES}
    copies = dict.fromkeys(TEMPLATES, 0)
    tmp = out.with_name(out.name + ".part")
    ts = 1_700_000_000.0
    n = 0
    with open(tmp, "wb") as f:
        writer = PcapngWriter(f, mss=65483)
        while f.tell() < size:
            names = ["bulk.pcapng"] if n % 10 else list(TEMPLATES)
            for name in names:
                port = 20000 + n % 40000
                # The template's own server port: tshark knows some ports (5555 is Android's adb) and would
                # spend its time dissecting ZMTP as something else.
                server, segments = templates[name]
                conn = writer.add_connection(("10.0.0.1", port), ("10.0.0.2", server))
                last = 0.0
                for direction, rel, flags, payload in segments:
                    if flags & SYN:
                        conn.segment(direction, ts + rel, flags=flags, seq=conn.isn[direction])
                    else:
                        conn.segment(direction, ts + rel, payload, flags=flags)
                    last = rel
                ts += last + 0.001
                copies[name] += 1
            n += 1
    tmp.replace(out)
    return copies


def ensure(out: Path, size: int) -> Path:
    """`out`, made unless a file of at least `size` octets is there already."""
    if not out.exists() or out.stat().st_size < size:
        out.parent.mkdir(parents=True, exist_ok=True)
        make(out, size)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", default="1G")
    args = parser.parse_args()
    start = time.perf_counter()
    copies = make(args.out, parse_size(args.size))
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - start:.1f} s, copies {copies}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
