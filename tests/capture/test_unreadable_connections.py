"""Every TCP connection with payload appears in the output: as ZMTP, or with an `expert` note (rule `unreadable`)
that says how many bytes were seen, why they could not be read as ZMTP and where the dissector gave up."""

from __future__ import annotations

import json
import subprocess
import sys

from synthetic import CLIENT, SERVER, capture, middle_of_a_frame, not_zmtp
from zmtplab.capture.dissect import DissectResult, dissect_capture, dissect_capture_jsonl
from zmtplab.capture.pcapwriter import PcapngWriter
from zmtplab.engine.framing import encode_frame

GREETING = bytes.fromhex("ff 00 00 00 00 00 00 00 01 7f 03 01") + b"NULL".ljust(20, b"\0") + bytes(32)


def lost_greeting(writer: PcapngWriter) -> None:
    """A SYN-captured connection whose first segment (the greeting) the capture lost, then data mid-frame."""
    conn = writer.add_connection(CLIENT, SERVER, mss=1000)
    conn.handshake(1.0)
    conn.seq["c2s"] = (conn.seq["c2s"] + 64) & 0xFFFFFFFF  # the greeting's 64 bytes are missing
    conn.send("c2s", encode_frame(b"x" * 3000)[:2500], 1.1)  # a long frame cut before its end
    conn.close(2.0)


def zmtp_and_silent(writer: PcapngWriter) -> None:
    good = writer.add_connection(("10.0.0.3", 40001), SERVER)
    good.handshake(1.0)
    good.send("c2s", GREETING, 1.1)
    good.send("s2c", GREETING, 1.2)
    good.close(2.0)
    middle_of_a_frame(writer)


def notes(events):
    return [e for e in events if e["kind"] == "expert" and e["rule"] == "unreadable"]


def test_middle_of_a_frame_prints_a_connection_and_why():
    result = DissectResult()
    events = list(dissect_capture(capture(middle_of_a_frame), result=result))
    assert len(events) == 1
    note = events[0]
    assert note["conn"] == "0" and note["dir"] == "c2s" and note["severity"] == "warn"
    assert note["text"].startswith("20,000 bytes seen (offsets 0-20,000) could not be read as ZMTP")
    assert "capture starts in the middle of this connection" in note["text"]
    assert "no certain chain of frames" in note["text"]
    assert "gave up at offset 20,000, at the end of the capture" in note["text"]
    assert note["packets"] == [1] and note["offset"] == 0 and note["length"] == 0
    assert [c.zmtp for c in result.connections] == [False]


def test_lost_greeting_is_read_mid_stream_and_explained():
    events = list(dissect_capture(capture(lost_greeting)))
    [note] = notes(events)
    assert note["dir"] == "c2s"
    assert "the first 64 bytes are missing from the capture (no greeting captured)" in note["text"]
    assert "2,500 bytes seen (offsets 64-2,564, 64 missing)" in note["text"]
    assert "when the connection ended (FIN)" in note["text"]


def test_lost_greeting_then_frames_resynchronises():
    def build(writer):
        conn = writer.add_connection(CLIENT, SERVER, mss=1000)
        conn.handshake(1.0)
        conn.seq["c2s"] = (conn.seq["c2s"] + 64) & 0xFFFFFFFF
        conn.send("c2s", encode_frame(b"hello") + encode_frame(b"world"), 1.1)
        conn.close(2.0)
    events = list(dissect_capture(capture(build)))
    assert not notes(events)
    assert [e["frames"] for e in events if e["kind"] == "message"] == [[b"hello".hex()], [b"world".hex()]]


def test_not_zmtp_says_what_it_starts_with():
    events = list(dissect_capture(capture(not_zmtp)))
    by_dir = {e["dir"]: e for e in notes(events)}
    assert set(by_dir) == {"c2s", "s2c"} and len(events) == 2
    assert '47 45 54 20 2f 20 48 54 54 50 2f 31 ("GET / HTTP/1")' in by_dir["c2s"]["text"]
    assert "neither a ZMTP signature" in by_dir["c2s"]["text"]
    assert by_dir["s2c"]["text"].startswith("24 bytes seen")
    assert '48 54 54 50 2f 31 2e 31 20 32 30 30 ("HTTP/1.1 200")' in by_dir["s2c"]["text"]


def test_json_lines_match_dicts():
    data = capture(zmtp_and_silent)
    lines = "".join(dissect_capture_jsonl(data, with_fields=False))
    dicts = list(dissect_capture(data, with_fields=False))
    assert [json.loads(line) for line in lines.splitlines()] == json.loads(json.dumps(dicts))
    assert {e["conn"] for e in dicts} == {"0", "1"}
    assert len(notes(dicts)) == 1 and notes(dicts)[0]["conn"] == "1"


def test_cli_prints_the_connection(tmp_path):
    path = tmp_path / "middle.pcapng"
    path.write_bytes(capture(middle_of_a_frame))
    run = subprocess.run([sys.executable, "-m", "zmtplab.cli", "dissect", str(path)], capture_output=True, text=True)
    assert run.returncode == 0
    assert "Expert WARN: 20,000 bytes seen" in run.stdout and "could not be read as ZMTP" in run.stdout
    assert "no ZMTP connections found (1 TCP connections)" in run.stderr
