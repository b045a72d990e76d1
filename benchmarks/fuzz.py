"""Coverage-guided fuzzing (atheris/libFuzzer) of the engine decoder, the capture reader and the upload endpoint.

Each target runs in its own libFuzzer process with a per-input timeout, seeded with the
sample captures and their ZMTP byte streams. A crash is any exception a target may not
raise (the dissector may raise nothing; a strict peer only `RemoteProtocolError`; the capture
reader only `CaptureFormatError`, and its JSON lines text must be its events' dicts, byte for
byte; the upload endpoint must never answer 5xx; the pipeline's range reader must read exactly
the packets and the error the sequential reader reads).
Prints, per target and in total, inputs run, crashes and hangs; last line:
`fuzz: inputs=N crashes=C hangs=H` (goal: N >= 1,000,000, C = H = 0).

    .venv/bin/python benchmarks/fuzz.py [--engine N] [--capture N] [--upload N] [--ranges N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
SEED_CAPTURES = sorted([*SHARED.glob("*.pcapng"), *(ROOT / "captures").glob("*.pcapng")])
MAX_SEED = 16384

# --------------------------------------------------------------------------- targets (run in a child)


def _engine_target(data: bytes) -> None:
    from zmtplab.engine import Connection, ConnectionDissector, RemoteProtocolError, StreamDecoder

    if not data:
        return
    mode, body = data[0], data[1:]
    # The dissector: both directions, chunked by the input itself, with gaps and a close.
    dissector = ConnectionDissector(mid_stream=bool(mode & 1))
    pos, direction = 0, "c2s"
    while pos < len(body):
        size = 1 + body[pos] % 97
        chunk = body[pos + 1:pos + 1 + size]
        if mode & 2 and chunk[:1] == b"\xee":
            dissector.gap(direction, len(chunk))
        else:
            dissector.receive_data(direction, chunk)
        direction = "s2c" if direction == "c2s" else "c2s"
        pos += 1 + size
    dissector.close()
    for event_list in (dissector.decoders["c2s"].events(), dissector.decoders["s2c"].events()):
        for event in event_list:
            event.to_dict()
    # One direction alone, lenient, with fields.
    decoder = StreamDecoder(framing="3" if mode & 4 else None)
    decoder.receive_data(body)
    decoder.close()
    for event in decoder.events():
        event.to_dict()
    # A strict peer may only refuse with RemoteProtocolError.
    peer = Connection(("PULL", "ROUTER", "SUB", "PAIR")[mode % 4], max_frame_size=1 << 16)
    peer.start()
    with contextlib.suppress(RemoteProtocolError):
        peer.receive_data(body)


def _capture_target(data: bytes) -> None:
    import orjson

    from zmtplab.capture.dissect import DissectResult, dissect_capture, dissect_capture_jsonl
    from zmtplab.capture.errors import CaptureFormatError

    try:
        events = list(dissect_capture(data, with_fields=True, result=DissectResult()))
    except CaptureFormatError:
        return
    # `dissect --jsonl` writes runs of frames, fields and all, from templates: it must say what the dicts say.
    lines = "".join(dissect_capture_jsonl(data, with_fields=True, result=DissectResult()))
    if lines != "".join(orjson.dumps(e, option=orjson.OPT_APPEND_NEWLINE).decode() for e in events):
        raise AssertionError("dissect_capture_jsonl's text differs from orjson.dumps of dissect_capture's events")


def _ranges_target(data: bytes) -> None:
    from dataclasses import astuple

    from zmtplab.capture.errors import CaptureFormatError
    from zmtplab.capture.pcapfile import read_tcp_packets
    from zmtplab.pipeline.ranges import chain_scans, error_message, nominal_ranges, probe, read_range, scan_range

    def outcome(packets) -> tuple[list[tuple], str | None]:
        out = []
        try:
            for packet in packets():
                out.append(astuple(packet))
        except CaptureFormatError as exc:
            return out, str(exc)
        return out, None

    def ranged(split: int):
        header = probe(str(path))
        scans = [scan_range(header, i, s, e) for i, (s, e) in enumerate(nominal_ranges(header, split))]
        planned, err, _rescans = chain_scans(header, scans)
        for r in planned:
            yield from read_range(r)
        if err is not None:
            raise CaptureFormatError(error_message(err))

    global _ranges_dir
    if _ranges_dir is None:
        _ranges_dir = Path(tempfile.mkdtemp(prefix="zmtplab-fuzz-"))
    path = _ranges_dir / "input"
    path.write_bytes(data)
    expected = outcome(lambda: read_tcp_packets(data))
    for split in (64, 1 << 20):
        got = outcome(lambda split=split: ranged(split))
        if got != expected:
            raise AssertionError(f"ranges ({split}) read {got}, the reader {expected}")


_ranges_dir: Path | None = None
_client = None


def _upload_target(data: bytes) -> None:
    global _client
    if _client is None:
        from fastapi.testclient import TestClient

        from zmtplab.web.app import create_app
        from zmtplab.web.core.settings import Settings

        settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="zmtplab-fuzz-")), max_upload_bytes=1 << 20,
                            dissect_executor="thread", max_captures=20)
        _client = TestClient(create_app(settings)).__enter__()
    reply = _client.post("/api/captures", files={"file": ("x.pcap", data, "application/octet-stream")})
    if reply.status_code >= 500 or reply.status_code not in (201, 413, 415, 429):
        raise AssertionError(f"upload answered {reply.status_code}: {reply.text[:200]}")
    if reply.status_code == 201:
        summary = _client.get(f"/api/captures/{reply.json()['id']}")
        if summary.status_code >= 500:
            raise AssertionError(f"summary answered {summary.status_code}")


TARGETS = {"engine": _engine_target, "capture": _capture_target, "upload": _upload_target, "ranges": _ranges_target}


def _seed_corpus(target: str, directory: Path) -> None:
    """Writes seeds: small captures whole (capture/upload) or their ZMTP streams (engine)."""
    for path in SEED_CAPTURES:
        raw = path.read_bytes()
        if len(raw) > MAX_SEED:
            continue
        if target == "engine":
            from zmtplab.capture.pcapfile import read_tcp_packets

            streams: dict[int, bytearray] = {}
            for pkt in read_tcp_packets(raw):
                streams.setdefault(pkt.sport, bytearray()).extend(pkt.payload)
            for i, stream in enumerate(streams.values()):
                (directory / f"{path.stem}-{i}").write_bytes(b"\x00" + bytes(stream[: MAX_SEED - 1]))
        else:
            (directory / path.stem).write_bytes(raw)


def child(target: str, args: list[str]) -> None:
    """Runs libFuzzer on one target (this process is the child)."""
    import atheris

    with atheris.instrument_imports():
        import zmtplab.capture.dissect
        import zmtplab.engine
        import zmtplab.pipeline.ranges  # noqa: F401
    fn = TARGETS[target]
    atheris.Setup([sys.argv[0], *args], fn)
    atheris.Fuzz()


# --------------------------------------------------------------------------- driver


def run_target(target: str, runs: int, timeout: int) -> tuple[int, int, int, str]:
    """Fuzzes one target for `runs` inputs; returns (inputs, crashes, hangs, last lines)."""
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{target}-") as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        _seed_corpus(target, corpus)
        artifacts = Path(tmp) / "artifacts"
        artifacts.mkdir()
        cmd = [sys.executable, __file__, "--child", target, f"-runs={runs}", f"-timeout={timeout}",
               f"-max_len={MAX_SEED}", f"-artifact_prefix={artifacts}/", "-print_final_stats=1", str(corpus)]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        out = proc.stdout + proc.stderr
        done = re.findall(r"stat::number_of_executed_units:\s*(\d+)", out)
        inputs = int(done[-1]) if done else 0
        crashes = len(list(artifacts.glob("crash-*"))) + len(list(artifacts.glob("oom-*")))
        hangs = len(list(artifacts.glob("timeout-*")))
        if proc.returncode != 0 and not crashes and not hangs:
            crashes = 1  # the child died some other way: count it, and show why below
        tail = "\n".join(out.strip().splitlines()[-6:]) if (crashes or hangs) else ""
        for found in sorted(artifacts.iterdir()):
            tail += f"\n  saved input: {found.name} ({found.stat().st_size} bytes)"
            keep = ROOT / "benchmarks" / "out" / f"{target}-{found.name}"
            keep.parent.mkdir(parents=True, exist_ok=True)
            keep.write_bytes(found.read_bytes())
        return inputs, crashes, hangs, tail


def main() -> int:
    """Runs the targets and prints the totals."""
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", type=int, default=700_000, help="inputs for the engine decoder")
    parser.add_argument("--capture", type=int, default=300_000, help="inputs for the capture reader")
    parser.add_argument("--upload", type=int, default=10_000, help="inputs for the upload endpoint")
    parser.add_argument("--ranges", type=int, default=20_000,
                        help="inputs for the range reader, checked against the sequential reader")
    parser.add_argument("--timeout", type=int, default=10, help="seconds one input may take (a hang)")
    args = parser.parse_args()
    total = [0, 0, 0]
    for target, runs in (("engine", args.engine), ("capture", args.capture), ("upload", args.upload),
                         ("ranges", args.ranges)):
        if runs <= 0:
            continue
        inputs, crashes, hangs, tail = run_target(target, runs, args.timeout)
        print(f"{target:8} inputs={inputs} crashes={crashes} hangs={hangs}", flush=True)
        if tail:
            print(tail)
        total = [total[0] + inputs, total[1] + crashes, total[2] + hangs]
    print(f"fuzz: inputs={total[0]} crashes={total[1]} hangs={total[2]}")
    return 1 if total[1] or total[2] else 0


if __name__ == "__main__":
    sys.exit(main())
