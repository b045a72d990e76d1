"""CURVE MESSAGE in a data frame: libzmq 4.3.5 clears the COMMAND bit where 23/ZMTP says encrypted data SHALL be
sent as commands. It is still decoded as MESSAGE, with an expert note naming the deviation once per direction and a
flags field note that says what the octet actually says."""

from __future__ import annotations

from pathlib import Path

from zmtplab.capture.dissect import dissect_capture
from zmtplab.decode import decode_bytes
from zmtplab.engine.framing import encode_frame

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
CURVE_GREETING = bytes.fromhex("ff 00 00 00 00 00 00 00 01 7f 03 01") + b"CURVE".ljust(20, b"\0") + bytes(32)


def test_libzmq_curve_capture_names_the_deviation_once_per_direction():
    events = list(dissect_capture(CAPTURES / "curve.pcapng"))
    notes = [e for e in events if e["kind"] == "expert" and "data frame" in e["text"]]
    assert sorted(e["dir"] for e in notes) == ["c2s", "s2c"]
    assert all(e["severity"] == "note" and e["rule"] == "flags" and "23/ZMTP" in e["text"] for e in notes)
    messages = [e for e in events if e["kind"] == "command" and e["name"] == "MESSAGE"]
    assert len(messages) >= 4
    for message in messages:
        flags = message["fields"][0]
        assert flags["name"] == "flags" and flags["value"].startswith("0x00")
        assert "COMMAND (bit 2) is clear" in flags["note"] and "libzmq" in flags["note"]
    # Each note sits right after the first MESSAGE of its direction.
    for note in notes:
        first = next(e for e in messages if e["dir"] == note["dir"])
        assert note["offset"] == first["offset"]


def test_message_sent_as_a_command_has_no_note():
    body = b"\x07MESSAGE" + bytes(8) + bytes(17)
    as_command = decode_bytes(CURVE_GREETING + encode_frame(body, command=True))
    as_data = decode_bytes(CURVE_GREETING + encode_frame(body) + encode_frame(body))
    commands = [e for e in as_command if e.kind == "command"]
    assert [c.name for c in commands] == ["MESSAGE"]
    assert "COMMAND (bit 2) is clear" not in commands[0].field_list[0].note
    assert not any(e.kind == "expert" and "data frame" in e.text for e in as_command)
    data_notes = [e for e in as_data if e.kind == "expert" and "data frame" in e.text]
    assert len(data_notes) == 1  # once per direction, not per message
    assert [e.name for e in as_data if e.kind == "command"] == ["MESSAGE", "MESSAGE"]
