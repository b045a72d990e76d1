"""The one body cutter (`engine.events.cut_bodies`): every output that shortens events cuts them alike."""

from __future__ import annotations

import json

from zmtplab.engine.events import cut_bodies, make_frame, make_message
from zmtplab.eventstore import public


def test_a_frame_cut_by_to_dict_and_by_the_cutter_is_the_same_json() -> None:
    body = bytes(range(40))
    frame = make_frame(0, 42, 0, 40, b"\x00\x28", body, "3")
    cut = frame.to_dict(max_body=8, with_fields=False)
    assert cut["body"] == body[:8].hex() and cut["hex"] == "0028" + body[:8].hex() and cut["truncated"] is True
    # What a live viewer and the event store do to the whole event gives the same keys in the same order.
    assert json.dumps(cut_bodies(frame.to_dict(with_fields=False), 8)) == json.dumps(cut)
    assert json.dumps(public(frame.to_dict(with_fields=False), 8)) == json.dumps(cut)
    assert frame.to_dict(max_body=40) == frame.to_dict()  # (nothing to cut: no `truncated`)


def test_message_frames_are_cut_each_and_non_text_left_alone() -> None:
    parts = (make_frame(0, 12, 1, 10, b"\x01\x0a", b"a" * 10, "3"), make_frame(12, 3, 0, 1, b"\x00\x01", b"b", "3"))
    msg = make_message(0, 15, parts)
    assert msg.to_dict(max_body=4, with_fields=False) == {"kind": "message", "offset": 0, "length": 15,
                                                          "frames": ["61" * 4, "62"], "truncated": True}
    odd = {"kind": "message", "frames": ["ab" * 9, None]}
    assert cut_bodies(odd, 4) == {"kind": "message", "frames": ["ab" * 4, None], "truncated": True}


def test_a_long_hex_without_a_body_is_cut_only_with_slack() -> None:
    command = {"kind": "command", "name": "READY", "hex": "ab" * 100}
    assert cut_bodies(dict(command), 10) == command
    assert cut_bodies(dict(command), 10, hex_slack=32) == {**command, "hex": "ab" * 42, "truncated": True}
    assert cut_bodies(dict(command), 70, hex_slack=32) == command


def test_to_dict_makes_hex_of_the_kept_octets_only_and_the_same_dict() -> None:
    # (A 1 MB body's 2 MB of hex, twice, then cut, cost a fan-out session more than the rest of the frame.)
    body = bytes(range(256)) * 4096
    frame = make_frame(3, 9 + len(body), 2, len(body), b"\x02" + len(body).to_bytes(8, "big"), body, "3")
    for max_body in (0, 1, 64, 65536):
        for with_fields in (True, False):
            whole = frame.to_dict(with_fields=with_fields)
            cut = frame.to_dict(with_fields=with_fields, max_body=max_body)
            assert json.dumps(cut) == json.dumps(cut_bodies({k: v for k, v in whole.items() if k != "fields"},
                                                            max_body) | ({"fields": whole["fields"]}
                                                                         if with_fields else {}))
            msg = make_message(3, frame.length, (frame,))
            assert msg.to_dict(with_fields=with_fields, max_body=max_body)["frames"] == [body[:max_body].hex()]
