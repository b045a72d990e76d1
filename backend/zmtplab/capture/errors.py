"""Errors raised while reading capture files.

Every problem a capture file can have surfaces as a `CaptureFormatError`, so a caller that
wants to survive any input catches exactly one exception type.
"""

from __future__ import annotations


class CaptureFormatError(ValueError):
    """The bytes are not a readable pcap/pcapng capture (or stop being one part-way through).

    `offset` is the byte position in the file where the problem was found and `frame` the
    number of frames read successfully before it, when known.
    """

    def __init__(self, message: str, *, offset: int | None = None, frame: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.frame = frame


class TruncatedCaptureError(CaptureFormatError):
    """The capture ends in the middle of a block or record; everything before it was delivered."""


class ExpansionLimit(Exception):
    """A compressed capture decompressed to more than the reader was allowed to expand it into (`limit` octets);
    everything before was delivered. Not a format error: the capture may be fine, just more than the budget."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the compressed capture expands past {limit} octets")
        self.limit = limit
