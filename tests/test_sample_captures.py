"""Checks on the sample captures committed in ``captures/`` (and one real recording).

The fast tests only read the committed files with tshark: each must be a readable
capture of one TCP connection on its scenario's port whose byte streams start with
the greeting libzmq (or the hand-made peer) sends. The test marked ``capture`` runs
``captures/record.py`` for real, which needs dumpcap and permission to capture on lo.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
CAPTURES = REPO / "captures"
RECORD = CAPTURES / "record.py"


def signature(padding: int = 1) -> bytes:
    """Return a ZMTP 3.x signature; libzmq pads with routing id length + 1."""
    return b"\xff" + padding.to_bytes(8, "big") + b"\x7f"


def zmtp3(mechanism: bytes = b"NULL", minor: int = 1, padding: int = 1) -> bytes:
    """Return the first 32 greeting bytes: signature, version, mechanism (20 bytes)."""
    return signature(padding) + bytes([3, minor]) + mechanism.ljust(20, b"\x00")


#: The signature libzmq sends when its socket has no routing id.
LIBZMQ_SIGNATURE = bytes.fromhex("ff 00 00 00 00 00 00 00 01 7f")
ZWS_101 = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
NULL31 = zmtp3()
PLAIN31 = zmtp3(b"PLAIN")
CURVE31 = zmtp3(b"CURVE")


@dataclass(frozen=True)
class Expected:
    """What a committed capture must contain.

    ``c2s``/``s2c`` are the expected first bytes of the client's (connecting side's)
    and the server's byte streams; ``signature`` is the libzmq signature that must
    appear somewhere in the payloads (over WebSocket, octets only libzmq writes so).
    """

    port: int
    c2s: bytes = NULL31
    s2c: bytes = NULL31
    signature: bytes = LIBZMQ_SIGNATURE
    mechanism: bytes | None = None
    connections: int = 1  # a topology (`zmtplab analyze`'s captures) has several; c2s/s2c are the first one's
    ports: int = 1  # and may bind several consecutive ports

    @property
    def port_range(self) -> range:
        return range(self.port, self.port + self.ports)


EXPECTED: dict[str, Expected] = {
    "push_pull": Expected(15601),
    "dealer_router": Expected(15602, c2s=zmtp3(padding=len(b"client-1") + 1)),
    "req_rep": Expected(15603),
    "router_router": Expected(15604, c2s=zmtp3(padding=7), s2c=zmtp3(padding=7), signature=signature(7)),
    "dealer_dealer": Expected(15605),
    "dealer_rep": Expected(15606),
    "req_router": Expected(15607),
    "pub_sub": Expected(15608),
    "xpub_xsub": Expected(15609),
    "pair": Expected(15610),
    "multipart": Expected(15611),
    "empty_frames": Expected(15612),
    "plain_ok": Expected(15613, c2s=PLAIN31, s2c=PLAIN31, mechanism=b"PLAIN"),
    "plain_denied": Expected(15614, c2s=PLAIN31, s2c=PLAIN31, mechanism=b"PLAIN"),
    "curve": Expected(15615, c2s=CURVE31, s2c=CURVE31, mechanism=b"CURVE"),
    "curve_denied": Expected(15616, c2s=CURVE31, s2c=CURVE31, mechanism=b"CURVE"),
    "null_denied": Expected(15617),
    "mismatch_push_push": Expected(15618),
    "mechanism_mismatch": Expected(15619, c2s=NULL31, s2c=PLAIN31),
    "heartbeat_ttl": Expected(15620, c2s=zmtp3(padding=len(b"hb") + 1)),
    # The hand-made peers pad their signature with zeros.
    "heartbeat_ttl_expiry": Expected(15621, c2s=zmtp3(padding=0)),
    "sub_zmtp30": Expected(15622, s2c=zmtp3(minor=0, padding=0)),
    "downgrade_zmtp20": Expected(15623, c2s=signature(0) + b"\x01\x08\x00\x00", s2c=LIBZMQ_SIGNATURE + b"\x03\x07"),
    "downgrade_zmtp10": Expected(15624, c2s=b"\x01\x00\x06\x00hello", s2c=LIBZMQ_SIGNATURE),
    # Topologies: several connections (the first one's streams are checked), for `zmtplab analyze`.
    "push_3pull": Expected(15640, connections=3),
    "push_late_pull": Expected(15641, connections=3),
    "pub_late_sub": Expected(15642, connections=2),
    "broker": Expected(15643, ports=2, connections=5),
    "ping_ttl_long": Expected(15645, c2s=zmtp3(padding=len(b"hb") + 1)),
    "curve_wrong_key": Expected(15646, c2s=CURVE31, s2c=CURVE31, mechanism=b"CURVE"),
    "identity_collision": Expected(15647, c2s=zmtp3(padding=len(b"dup") + 1), connections=2),
    "push_slow_pull": Expected(15648),
    # ZeroMQ over WebSocket (45/ZWS): HTTP upgrades, no ZMTP signature. What shows libzmq's side: its ROUTER's
    # READY as a server writes it (unmasked), and its client's offer as it writes it (no space after the comma).
    "zws_dealer_router": Expected(15650, c2s=b"GET /zmq HTTP/1.1\r\n", s2c=ZWS_101,
                                  signature=b"\x02\x05READY\x0bSocket-Type\x00\x00\x00\x06ROUTER"),
    "zws_routing_ids": Expected(15651, c2s=b"GET /zmq HTTP/1.1\r\n", s2c=ZWS_101,
                                signature=b"Sec-WebSocket-Protocol: ZWS2.0/NULL,ZWS2.0\r\n"),
}

MECHANISM_CAPTURES = sorted(name for name, exp in EXPECTED.items() if exp.mechanism)


@dataclass(frozen=True)
class Capture:
    """What tshark read from one capture file."""

    packets: int
    ports: set[tuple[int, int]]
    tcp_streams: set[int]
    payloads: list[bytes]
    c2s: bytes
    s2c: bytes


def tshark_path() -> str:
    """Return tshark's path or fail the test run with a hint (never skip)."""
    path = shutil.which("tshark")
    if path is None:
        pytest.fail("tshark not found on PATH: run `make setup` (Debian package tshark)")
    return path


def read_capture(path: Path, server_ports: range) -> Capture:
    """Read a capture with tshark and split the first TCP connection's payload into the two directions.

    The client-to-server direction is the one whose destination is one of ``server_ports``.
    Concatenating payloads in frame order is a valid reassembly here: loopback
    captures have no loss, reordering or retransmission.
    """
    result = subprocess.run(
        [
            tshark_path(), "-n", "-r", str(path), "-T", "fields", "-E", "separator=\t",
            "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.payload",
        ],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"tshark cannot read {path.name}: {result.stderr.strip()}"
    ports: set[tuple[int, int]] = set()
    streams: set[int] = set()
    payloads: list[bytes] = []
    c2s, s2c = bytearray(), bytearray()
    lines = result.stdout.splitlines()
    for line in lines:
        stream, src, dst, payload_hex = [*line.split("\t"), "", "", ""][:4]
        ports.add((int(src), int(dst)))
        streams.add(int(stream))
        payload = bytes.fromhex(payload_hex.replace(":", ""))
        payloads.append(payload)
        if int(stream) == 0:
            (c2s if int(dst) in server_ports else s2c).extend(payload)
    return Capture(len(lines), ports, streams, payloads, bytes(c2s), bytes(s2c))


@pytest.fixture(scope="module")
def captures() -> dict[str, Capture]:
    """Read every expected committed capture once, in parallel (tshark starts slowly)."""
    missing = [name for name in EXPECTED if not (CAPTURES / f"{name}.pcapng").is_file()]
    assert not missing, f"captures missing from captures/: {missing}"
    tshark_path()
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = {
            name: pool.submit(read_capture, CAPTURES / f"{name}.pcapng", exp.port_range)
            for name, exp in EXPECTED.items()
        }
        return {name: future.result() for name, future in futures.items()}


def load_record_module() -> ModuleType:
    """Import captures/record.py (not a package) to compare its scenario table."""
    spec = importlib.util.spec_from_file_location("captures_record", RECORD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve the module through sys.modules while the class is created.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_committed_captures_match_the_recorder() -> None:
    """Every scenario of record.py has a committed capture, the expected port, and no extras."""
    record = load_record_module()
    committed = {p.stem for p in CAPTURES.glob("*.pcapng")}
    samples = {name: sc for name, sc in record.SCENARIOS.items() if not sc.folder}  # (incidents: test_incidents)
    assert committed == set(samples) == set(EXPECTED)
    for name, sc in samples.items():
        assert (sc.port, sc.ports) == (EXPECTED[name].port, EXPECTED[name].ports), name


def test_captures_are_small() -> None:
    """The committed captures stay small enough to live in git (< 200 KB in all)."""
    total = sum(p.stat().st_size for p in CAPTURES.glob("*.pcapng"))
    assert total < 200_000, f"captures/*.pcapng total {total} bytes"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture_is_readable_and_not_empty(name: str, captures: dict[str, Capture]) -> None:
    """tshark reads the file and it carries ZMTP bytes in both directions."""
    cap = captures[name]
    assert cap.packets > 0
    assert any(cap.payloads), "no TCP payload at all"
    assert cap.c2s and cap.s2c, "a direction carries no bytes"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture_holds_its_connections_on_its_ports(name: str, captures: dict[str, Capture]) -> None:
    """Every packet has one of the scenario's ports on one side, and there are as many TCP streams as it makes."""
    cap, exp = captures[name], EXPECTED[name]
    assert all(set(pair) & set(exp.port_range) for pair in cap.ports), f"ports seen: {cap.ports}"
    assert cap.tcp_streams == set(range(exp.connections))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_greeting_signature_in_payloads(name: str, captures: dict[str, Capture]) -> None:
    """libzmq's 10-byte signature (ff, padding, 7f) appears in the TCP payloads."""
    assert EXPECTED[name].signature in b"".join(captures[name].payloads)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_streams_start_with_the_expected_greeting(name: str, captures: dict[str, Capture]) -> None:
    """Each direction starts with the greeting (or 1.0/2.0 opening) of its scenario."""
    cap, exp = captures[name], EXPECTED[name]
    assert cap.c2s.startswith(exp.c2s), f"client stream starts {cap.c2s[: len(exp.c2s)].hex(' ')}"
    assert cap.s2c.startswith(exp.s2c), f"server stream starts {cap.s2c[: len(exp.s2c)].hex(' ')}"


@pytest.mark.parametrize("name", MECHANISM_CAPTURES)
def test_mechanism_name_at_greeting_offset_12(name: str, captures: dict[str, Capture]) -> None:
    """PLAIN and CURVE captures name their mechanism at greeting offset 12, NUL padded."""
    mechanism = EXPECTED[name].mechanism
    assert mechanism is not None
    for stream in (captures[name].c2s, captures[name].s2c):
        assert stream[12:32] == mechanism.ljust(20, b"\x00")


@pytest.mark.parametrize(
    ("name", "error"),
    [
        # libzmq 4.3.5 bug: "\x05ERROR" in C is the byte 5e followed by "RROR".
        ("plain_denied", bytes.fromhex("04 09 5e") + b"RROR\x03400"),
        ("curve_denied", bytes.fromhex("04 0a 05") + b"ERROR\x03400"),
        ("null_denied", bytes.fromhex("04 0a 05") + b"ERROR\x03400"),
    ],
)
def test_refused_handshakes_end_with_error(name: str, error: bytes, captures: dict[str, Capture]) -> None:
    """The server's last bytes after a ZAP 400 are the ERROR command, exactly as libzmq sends it."""
    assert captures[name].s2c.endswith(error)


@pytest.mark.parametrize("name", ["mismatch_push_push", "mechanism_mismatch"])
def test_mismatches_close_without_error(name: str, captures: dict[str, Capture]) -> None:
    """A socket-type or mechanism mismatch closes the connection with no ERROR command."""
    for stream in (captures[name].c2s, captures[name].s2c):
        assert b"ERROR" not in stream and b"RROR" not in stream


def test_readme_lists_every_capture() -> None:
    """captures/README.md has a table row naming each file and its port."""
    rows = [line for line in (CAPTURES / "README.md").read_text().splitlines() if line.startswith("| ")]
    for name, exp in EXPECTED.items():
        matching = [row for row in rows if row.startswith(f"| {name}.pcapng |")]
        assert len(matching) == 1, name
        assert matching[0].rstrip().endswith(f"| {exp.port} |"), matching[0]


def test_curve_keys_belong_together() -> None:
    """curve.keys.json holds matching Z85 key pairs for the server and the client."""
    import zmq

    keys = json.loads((CAPTURES / "curve.keys.json").read_text())
    for side in ("server", "client"):
        pair = keys[side]
        assert zmq.curve_public(pair["secret"].encode()) == pair["public"].encode(), side


@pytest.mark.capture
def test_a_recording_waits_for_dumpcap_to_write_every_connections_end(tmp_path: Path) -> None:
    """A dumpcap that has read nothing yet when the scenario ends (stopped here, as a busy machine's scheduler may
    leave it) writes the whole connection before it is stopped: nothing the kernel buffered is lost."""
    load_record_module()  # (puts captures/ on sys.path)
    recording = importlib.import_module("recording")
    out = tmp_path / "paused.pcapng"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with recording.Dumpcap(port, out) as cap:
            cap.pause()
            with socket.create_connection(("127.0.0.1", port)) as client:
                accepted, _ = listener.accept()
                with accepted:
                    client.sendall(b"one connection, whole")
                    assert accepted.recv(100) == b"one connection, whole"
                    client.shutdown(socket.SHUT_WR)
                    assert accepted.recv(100) == b""
            assert not recording.connections_ended(out)  # all of it still in the kernel's buffer
            cap.resume()
            assert cap.wait_for_ends()
    result = subprocess.run(
        [tshark_path(), "-n", "-r", str(out), "-T", "fields", "-E", "separator=,",
         "-e", "tcp.srcport", "-e", "tcp.flags.syn", "-e", "tcp.flags.fin", "-e", "tcp.payload"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    packets = [line.split(",") for line in result.stdout.splitlines()]
    assert [syn for _, syn, _, _ in packets[:2]] == ["1", "1"]  # SYN, SYN/ACK
    client_port = packets[0][0]
    assert {src for src, _, fin, _ in packets if fin == "1"} == {str(port), client_port}  # a FIN from each side
    assert bytes.fromhex("".join(payload for *_, payload in packets)) == b"one connection, whole"


@pytest.mark.capture
def test_record_push_pull_for_real(tmp_path: Path) -> None:
    """record.py captures push_pull with dumpcap; fails (never skips) if it cannot capture."""
    record_out = tmp_path / "captures"  # record.py creates it
    result = subprocess.run(
        [sys.executable, str(RECORD), "--only", "push_pull", "--out", str(record_out)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, (
        f"captures/record.py exited {result.returncode}; dumpcap must be installed and allowed to "
        f"capture on lo (root, or the 'wireshark' group).\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    )
    assert "push_pull" in result.stdout
    out = record_out / "push_pull.pcapng"
    assert out.is_file(), f"no capture written; files: {sorted(p.name for p in record_out.iterdir())}"
    cap = read_capture(out, EXPECTED["push_pull"].port_range)
    assert cap.c2s.startswith(NULL31)
    assert cap.s2c.startswith(NULL31)
    assert LIBZMQ_SIGNATURE in b"".join(cap.payloads)
    assert b"My Message" in cap.s2c
    assert not list(record_out.glob(".*.part")), "temporary capture left behind"
