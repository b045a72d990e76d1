"""The decoder's fast constructors (`make_frame`, `make_message`) build exactly what the dataclass
constructors build: equal objects of the same type, still frozen, with every field set."""

from __future__ import annotations

import dataclasses

import pytest

from zmtplab.engine.events import Frame, Message, make_frame, make_message
from zmtplab.engine.framing import header_field_dicts


def _all_fields(event: object) -> dict[str, object]:
    return {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}  # type: ignore[arg-type]


@pytest.mark.parametrize("truncated", [False, True])
def test_make_frame_equals_the_constructor(truncated: bool) -> None:
    args = dict(flags=1, size=3, header=b"\x01\x03", body=b"abc", framing="3", truncated=truncated)
    made = make_frame(10, 5, 1, 3, b"\x01\x03", b"abc", "3", truncated)
    built = Frame(10, 5, **args)  # type: ignore[arg-type]
    assert type(made) is Frame
    assert made == built
    assert _all_fields(made) == _all_fields(built)
    assert made.to_dict() == built.to_dict()
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.size = 4  # type: ignore[misc]


def test_make_message_equals_the_constructor() -> None:
    parts = (make_frame(0, 3, 1, 1, b"\x01\x01", b"a", "3"), make_frame(3, 3, 0, 1, b"\x00\x01", b"b", "3"))
    made = make_message(0, 6, parts)
    built = Message(0, 6, parts=parts)
    assert type(made) is Message
    assert made == built
    assert _all_fields(made) == _all_fields(built)
    assert made.to_dict() == built.to_dict()
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.parts = ()  # type: ignore[misc]


def test_header_field_dicts_leave_their_templates_alone() -> None:
    first = header_field_dicts(100, b"\x00\x05", "3")
    first[0]["offset"] = -1  # a caller may change what it was given
    again = header_field_dicts(7, b"\x00\x05", "3")
    assert [d["offset"] for d in again] == [7, 8]
