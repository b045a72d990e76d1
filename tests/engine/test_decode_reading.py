"""`zmtplab decode` and `POST /api/decode`: which reading one direction's bytes get, and the note that says why.

23/ZMTP's detection: a first octet other than %xFF is a ZMTP 1.0 identity frame's length. A bare
1.0 stream is read as 1.0 whatever its identity's length; bytes that do not form a 1.0 stream fall
back to ZMTP 3.x frames without a greeting; `--version` forces a reading.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zmtplab.capture.pcapfile import read_tcp_packets
from zmtplab.capture.tcpstream import StreamData, reassemble
from zmtplab.decode import decode_bytes, decode_to_dicts
from zmtplab.engine.framing import encode_frame, encode_message, v1_stream_problem

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def v1_stream(identity: bytes, messages: list[list[bytes]]) -> bytes:
    """One direction of a 1.0 connection: its identity frame, then the messages in 1.0 framing."""
    return encode_frame(identity, framing="1") + b"".join(encode_message(m, framing="1") for m in messages)


def v3_frames(messages: list[list[bytes]]) -> bytes:
    return b"".join(encode_message(m, framing="3") for m in messages)


def reading(events) -> tuple[str | None, str]:
    """The greeting's version (None: no greeting) and the first note's text."""
    greeting = next((e for e in events if e.kind == "greeting"), None)
    note = next((e.text for e in events if e.kind == "expert" and e.severity == "note"), "")
    return (greeting.version if greeting else None), note


def messages_of(events) -> list[list[bytes]]:
    return [[bytes(f) for f in e.frames] for e in events if e.kind == "message"]


@pytest.mark.parametrize("identity", [b"", b"a", b"abcdef", b"client", b"x" * 200, b"y" * 300])
def test_bare_v1_stream_is_read_as_v1(identity):
    # Identities shorter than 7 octets make a first octet 0x01-0x07, which looked like 3.x flags before.
    messages = [[b"hello"], [b"one", b"two"], [b""]]
    events = decode_bytes(v1_stream(identity, messages))
    version, note = reading(events)
    assert version == "1.0"
    assert "ZMTP 1.0" in note and "23/ZMTP" in note
    assert messages_of(events) == messages
    assert [e for e in events if e.kind == "expert" and e.severity != "note"] == []


def test_v1_stream_from_a_real_capture():
    # downgrade_zmtp10: a hand-made 1.0 PUSH sends `01 00` (anonymous) and then `hello`, [`one`, `two`].
    data = b"".join(e.data for e in reassemble(read_tcp_packets(CAPTURES / "downgrade_zmtp10.pcapng"))
                    if isinstance(e, StreamData) and e.dir == "c2s")
    assert data[:2] == b"\x01\x00"
    events = decode_bytes(data)
    assert reading(events)[0] == "1.0"
    assert messages_of(events) == [[b"hello"], [b"one", b"two"]]


def test_headless_v3_command_falls_back_with_the_reason():
    ready = bytes.fromhex("04 29 05 52 45 41 44 59 0b 53 6f 63 6b 65 74 2d 54 79 70 65 00 00 00 06"
                          " 44 45 41 4c 45 52 08 49 64 65 6e 74 69 74 79 00 00 00 00")
    events = decode_bytes(ready)
    version, note = reading(events)
    assert version is None
    assert note.startswith("no greeting: decoding ZMTP 3.x frames")
    assert "not a ZMTP 1.0 stream: at offset 6" in note
    assert [e.name for e in events if e.kind == "command"] == ["READY"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.binary(max_size=300), min_size=1, max_size=3), min_size=1, max_size=4))
def test_headless_v3_frames_keep_their_reading(messages):
    data = v3_frames(messages)
    events = decode_bytes(data)
    if v1_stream_problem(data) is None:
        return  # also a valid 1.0 stream: 23/ZMTP's rule reads it as 1.0 (checked above)
    assert reading(events)[0] is None
    assert messages_of(events) == messages


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40), st.lists(st.lists(st.binary(max_size=300), min_size=1, max_size=3), max_size=4))
def test_any_v1_stream_round_trips(identity, messages):
    data = v1_stream(identity, messages)
    assert v1_stream_problem(data) is None
    events = decode_bytes(data)
    assert reading(events)[0] == "1.0"
    assert messages_of(events) == messages


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64), st.sampled_from(["auto", "1.0", "2.0", "3"]))
def test_any_bytes_decode_without_raising(data, version):
    for event in decode_bytes(data, version=version):
        event.to_dict()


def test_version_forces_a_reading():
    v1 = v1_stream(b"", [[b"hello"]])
    forced = decode_bytes(v1, version="3")
    assert reading(forced) == (None, "no greeting: decoding ZMTP 3.x frames from the first byte, as asked")
    ready = bytes.fromhex("04 0a 05 52 45 41 44 59 00 00 00 00")
    as_v1 = decode_bytes(ready, version="1.0")
    assert reading(as_v1)[0] == "1.0"
    assert "as asked" in reading(as_v1)[1]
    with pytest.raises(ValueError, match="unknown version"):
        decode_bytes(ready, version="4")


def test_a_greeting_needs_no_note():
    greeting = bytes.fromhex("ff 00 00 00 00 00 00 00 01 7f 03 01") + b"NULL".ljust(20, b"\0") + bytes(32)
    events = decode_bytes(greeting)
    assert reading(events) == ("3.1", "")


def test_cli_decode_reads_v1_and_takes_version():
    hexdump = v1_stream(b"", [[b"hello"]]).hex(" ")
    run = [sys.executable, "-m", "zmtplab.cli", "decode", "--hex", hexdump, "--jsonl", "--no-fields"]
    auto = [json.loads(line) for line in subprocess.run(run, capture_output=True, text=True, check=True).stdout
            .splitlines()]
    assert [e["kind"] for e in auto] == ["expert", "greeting", "frame", "message"]
    assert auto[1]["version"] == "1.0"
    forced = subprocess.run([*run, "--version", "3"], capture_output=True, text=True, check=True).stdout
    assert '"version":"1.0"' not in forced.replace(" ", "")
    bad = subprocess.run([*run, "--version", "9"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--version" in bad.stderr


def test_dicts_carry_the_reading():
    dicts = decode_to_dicts(v1_stream(b"me", [[b"x"]]), with_fields=False)
    assert dicts[0]["kind"] == "expert" and "ZMTP 1.0" in dicts[0]["text"]
    assert dicts[1]["kind"] == "greeting" and dicts[1]["identity"] == b"me".hex()
