"""Fixtures of the engine tests: the reference captures of real libzmq traffic, one byte stream per direction."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CAPTURES = Path(__file__).resolve().parents[3] / "shared" / "captures"  # shared/ sits beside the repository

# The server (bind) port of each scenario, from the captures' README table.
SERVER_PORTS = {
    "push_pull": 15556,
    "push_pull_multipart": 15557,
    "dealer_router": 15558,
    "req_rep": 15559,
    "pub_sub": 15560,
    "large": 15560,
    "bulk": 15561,
}


@dataclass
class CaptureStreams:
    """One capture's TCP payload: the segments in capture order, and each direction's reassembled stream."""

    name: str
    segments: list[tuple[str, bytes]] = field(default_factory=list)  # (direction, new bytes), in capture order
    retransmitted: int = 0  # payload octets dropped because an earlier segment already carried them

    def stream(self, direction: str) -> bytes:
        return b"".join(data for d, data in self.segments if d == direction)

    def chunks(self, direction: str) -> list[bytes]:
        return [data for d, data in self.segments if d == direction]


def extract(name: str) -> CaptureStreams:
    """Reads a capture with tshark; the client is the side that does not use the scenario's server port.

    Loopback captures hold the odd retransmission: octets a segment repeats are dropped by
    sequence number, as TCP's receiver would (a hole would be a capture loss: none expected).
    """
    port = SERVER_PORTS[name]
    out = subprocess.run(
        ["tshark", "-r", str(CAPTURES / f"{name}.pcapng"), "-T", "fields",
         "-e", "tcp.srcport", "-e", "tcp.seq", "-e", "tcp.payload", "-Y", "tcp.len>0"],
        capture_output=True, text=True, check=True,
    ).stdout
    result = CaptureStreams(name)
    next_seq: dict[str, int] = {}
    for line in out.splitlines():
        srcport, seq_text, payload = line.split("\t")
        direction = "s2c" if int(srcport) == port else "c2s"
        data = bytes.fromhex(payload.replace(":", ""))
        seq = int(seq_text)
        expected = next_seq.get(direction, seq)
        assert seq <= expected, f"{name}: {seq - expected} octets missing in {direction}"
        skip = expected - seq
        result.retransmitted += min(skip, len(data))
        data = data[skip:]
        if data:
            result.segments.append((direction, data))
            next_seq[direction] = expected + len(data)
    return result


@pytest.fixture(scope="session")
def captures() -> dict[str, CaptureStreams]:
    """Every reference capture, extracted once per session."""
    assert shutil.which("tshark"), "tshark is needed to read the reference captures"
    return {name: extract(name) for name in SERVER_PORTS}
