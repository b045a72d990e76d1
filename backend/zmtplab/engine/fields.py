"""Fields: the annotated pieces of a protocol element, fine enough to draw the spec's box diagrams."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Field:
    """One field of an element: where it sits in the direction's byte stream and what it means.

    `offset` is absolute within the direction's byte stream, so a hex dump of the whole
    stream can highlight it directly; `rule` is the ABNF rule (or spec term) it comes from.
    """

    name: str
    offset: int
    length: int
    value: Any
    rule: str
    note: str

    def to_dict(self) -> dict[str, Any]:
        """The field as the JSON contract's `{name, offset, length, value, rule, note}`."""
        return {
            "name": self.name,
            "offset": self.offset,
            "length": self.length,
            "value": self.value,
            "rule": self.rule,
            "note": self.note,
        }


def text_or_hex(data: bytes) -> str:
    """Shows bytes as text when they are printable UTF-8, otherwise as hex (the event contract's rule)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data.hex()
    if text.isprintable():
        return text
    return data.hex()
