"""How a replay without CURVE's keys reads the boxes: frames grouped into messages, socket types from the turns
the two sides take (`zmtplab.replay.curve`)."""

from __future__ import annotations

from zmtplab.analysis.facts import Box, ConnFacts
from zmtplab.replay.curve import EITHER, PUB_SUB, PUSH_PULL, REQ_REP, SILENT, TURNS, guess, messages, stand_in


def conn(*boxes: tuple[str, float, int, int]) -> ConnFacts:
    facts = ConnFacts("0")
    facts.boxes = [Box(d, ts, packet, size) for d, ts, packet, size in boxes]
    return facts


def test_an_empty_frame_goes_with_the_next_box_of_its_packet() -> None:
    facts = conn(("c2s", 1.0, 5, 0), ("c2s", 1.0, 5, 5), ("s2c", 1.1, 6, 0), ("s2c", 1.1, 6, 5),
                 ("c2s", 2.0, 7, 3), ("c2s", 2.0, 7, 4), ("c2s", 2.5, 8, 0), ("c2s", 2.6, 9, 2))
    assert messages(facts) == [("c2s", 1.0, (0, 5)), ("s2c", 1.1, (0, 5)), ("c2s", 2.0, (3,)), ("c2s", 2.0, (4,)),
                               ("c2s", 2.5, (0,)), ("c2s", 2.6, (2,))]


def test_the_turns_tell_the_socket_types() -> None:
    req = [("c2s", 1.0, (0, 5)), ("s2c", 1.1, (0, 5)), ("c2s", 2.0, (0, 5))]
    assert guess([req, req]) is REQ_REP
    assert guess([[("c2s", 1.0, (5,)), ("s2c", 1.1, (5,))]]) is TURNS
    assert guess([[("c2s", 1.0, (5,)), ("c2s", 1.1, (5,))]]) is PUSH_PULL
    sub = [("c2s", 1.0, (8,)), ("s2c", 1.5, (5,)), ("s2c", 1.6, (5,))]
    assert guess([sub, [("s2c", 1.5, (5,))]]) is PUB_SUB
    assert guess([[("c2s", 1.0, (5,)), ("c2s", 1.1, (5,)), ("s2c", 1.2, (5,)), ("c2s", 1.3, (5,))]]) is EITHER
    assert guess([[], []]) is SILENT


def test_a_stand_in_has_the_captured_size() -> None:
    assert [bytes.fromhex(stand_in(3, n)) for n in (0, 1, 4, 8)] == [b"", b".", b"m3 .", b"m3 ....."]
