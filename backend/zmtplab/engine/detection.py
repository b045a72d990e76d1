"""Version detection: reading one direction's greeting from its first byte, as 23/ZMTP describes.

A 1.0 peer starts with an identity frame, a 2.0 peer with a signature and revision 1, a 3.x peer with a signature
and major version 3 or more, and a 3.x peer that meets a 2.0 peer downgrades (revision 3, then a 2.0 socket type
and identity); which one a stream is may depend on what the other direction said (`peer_family`). The
`GreetingReader` reads the greeting at its buffer's cursor and reports through the decoder's `Reports`, so a
strict reader raises at the first problem and a lenient one notes it.
"""

from __future__ import annotations

from collections.abc import Callable

from .buffer import StreamBuffer
from .constants import FLAG_LONG, SOCKET_TYPE_NAMES_V2
from .errors import RemoteProtocolError, Reports
from .events import Greeting
from .framing import frame_head
from .greeting import mechanism_of, v1_fields, v2_fields, v3_fields, v3_problems

# Version families a direction can be detected as; the other direction's family decides
# how an ambiguous greeting continues (see `peer_family`).
FAMILY_V1 = "1.0"
FAMILY_V2 = "2.0"
FAMILY_V3 = "3"

FRAMINGS = {"1.0": "1", "2.0": "2"}
"""The framing that follows a greeting of each version (any other: "3")."""


class GreetingReader:
    """Reads the greeting at `buffer`'s cursor: `family` once the version family is known, then `greeting`, or
    `lost` when a lenient reader cannot read it (frame boundaries are then uncertain)."""

    def __init__(self, buffer: StreamBuffer, reports: Reports, peer_family: Callable[[], str | None], *,
                 max_held: int | None = None, max_frame_size: int | None = None) -> None:
        self.buffer = buffer
        self.reports = reports
        self.peer_family = peer_family
        self.max_held = max_held
        self.max_frame_size = max_frame_size
        self.family: str | None = None
        self.greeting: Greeting | None = None
        self.lost = False

    def read(self) -> bool:
        """Reads as much of the greeting as the data allows: True when it is complete (`greeting`) or could not be
        read (`lost`), or when octets were consumed and reading goes on; False when more data is needed."""
        buf, pos = self.buffer.data, self.buffer.pos
        avail = len(buf) - pos
        if avail < 1:
            return False
        peer = self.peer_family()
        if buf[pos] != 0xFF or peer == FAMILY_V1:
            self.family = self.family or FAMILY_V1
            return self._greeting_v1(peer)
        if avail < 10:
            return False
        if not buf[pos + 9] & 1:
            self.family = FAMILY_V1
            return self._greeting_v1(peer)
        if avail < 11:
            return False
        major = buf[pos + 10]
        if major in (1, 2):
            self.family = FAMILY_V2
            return self._greeting_v2(downgraded=False)
        if major == 0:
            self.family = FAMILY_V2
            return self._greeting_v2(downgraded=False)
        self.family = FAMILY_V3
        if peer == FAMILY_V2:
            return self._greeting_v2(downgraded=True)
        if peer is None:
            # No word from the other direction (one direction decoded alone): a downgrading
            # 3.x peer sends a socket-type octet then a %x00 identity flags octet, where a
            # 3.x greeting has its minor version then a mechanism letter.
            if avail < 13:
                return False
            if buf[pos + 12] == 0 and buf[pos + 11] <= 8:
                return self._greeting_v2(downgraded=True)
        if avail < 64:
            return False
        offset = self.buffer.offset
        raw = self.buffer.consume(64)
        version = f"{raw[10]}.{raw[11]}"
        mechanism = mechanism_of(raw)
        self.greeting = Greeting(offset, 64, version=version, mechanism=mechanism, as_server=bool(raw[32]),
                                 raw=raw, field_list=tuple(v3_fields(offset, raw)))
        self.reports.events.append(self.greeting)
        for severity, text, rule, rel, length in v3_problems(raw):
            if severity == "note" or (not self.reports.strict and severity != "error"):
                self.reports.expert(offset + rel, length, severity, text, rule)
            else:
                self.reports.problem(offset + rel, length, severity, text, rule)
        if raw[10] > 3:
            self.reports.expert(offset + 10, 1, "note", f"peer announces ZMTP {version}; accepted as 3.x", "version")
        return True

    def _greeting_v2(self, *, downgraded: bool) -> bool:
        buf, pos = self.buffer.data, self.buffer.pos
        if len(buf) - pos < 14:
            return False
        if buf[pos + 12] & FLAG_LONG:
            self.reports.problem(self.buffer.offset + 12, 1, "error", "2.0 identity frame must be a final short frame",
                                 "final-short")
            if not self.reports.strict:
                self.lost = True
                return True
        size = buf[pos + 13]
        if len(buf) - pos < 14 + size:
            return False
        offset = self.buffer.offset
        raw = self.buffer.consume(14 + size)
        code = raw[11]
        socket_type = SOCKET_TYPE_NAMES_V2.get(code)
        self.greeting = Greeting(offset, len(raw), version="2.0", socket_type=socket_type, identity=raw[14:],
                                 mechanism="NULL", raw=raw, field_list=tuple(v2_fields(offset, raw)))
        self.reports.events.append(self.greeting)
        if downgraded:
            self.reports.expert(offset + 10, 1, "note",
                                "a 3.x peer downgraded to ZMTP 2.0: revision 3, then 2.0 socket type and identity",
                                "revision")
        if socket_type is None:
            self.reports.problem(offset + 11, 1, "error", f"unknown 2.0 socket type octet {code}", "socket-type")
        if raw[9] != 0x7F:
            self.reports.expert(offset + 9, 1, "warn", f"signature ends with 0x{raw[9]:02x}, not 0x7f", "signature")
        return True

    def _greeting_v1(self, peer: str | None) -> bool:
        buf, pos = self.buffer.data, self.buffer.pos
        read = frame_head(buf, pos, "1")
        if read is None:
            return False
        head, _flags, body_size = read
        avail = len(buf) - pos
        if body_size < 0:
            # (A strict reader raises here.)
            self.reports.problem(self.buffer.offset, 1, "error", "1.0 identity frame with length 0", "length")
            self.buffer.consume(1)
            return True
        if self.max_held is not None and head + body_size > self.max_held:
            self.reports.expert(self.buffer.offset, head + body_size, "warn", f"1.0 identity of {body_size} octets is "
                                f"larger than the {self.max_held} octets the dissector holds for one element", "budget")
            self.lost = True
            return True
        if self.reports.strict and self.max_frame_size is not None and body_size > min(self.max_frame_size, 255):
            raise RemoteProtocolError(f"1.0 identity of {body_size} octets exceeds 255", offset=self.buffer.offset,
                                      rule="identity")
        if avail < head + body_size:
            return False
        offset = self.buffer.offset
        raw = self.buffer.consume(head + body_size)
        self.greeting = Greeting(offset, len(raw), version="1.0", identity=raw[head:], mechanism="NULL", raw=raw,
                                 field_list=tuple(v1_fields(offset, raw)))
        self.reports.events.append(self.greeting)
        if head == 10 and raw[9] == 0x7F and peer == FAMILY_V1:
            self.reports.expert(offset, 10, "note",
                                "a 2.0/3.x peer's pseudo-signature read as a 1.0 identity frame header (23/ZMTP)",
                                "signature")
        return True

