"""One direction of a ZMTP connection: bytes in, protocol elements out.

`StreamDecoder` reads a direction from its first byte: it detects the version the way
23/ZMTP describes (1.0 identity frame, 2.0 revision, 3.x greeting, a 3.x peer
downgrading), then reads frames, commands and whole messages. In lenient mode (the
dissector) every problem becomes an `Expert` event and decoding goes on wherever frame
boundaries are still certain; after a gap in a capture it resynchronises only on a
chain of frames that ends exactly where the data ends. In strict mode (a peer) the
first problem raises `RemoteProtocolError`, naming the offset and the rule.

A lenient decoder may be given a budget, `max_held`: the most octets it holds for one element. An
element larger than that (a frame or command declaring 2^63 octets, a 1.0 identity that never ends, a
message of a million parts) is reported when its header arrives, and its body is skipped as it streams
(a frame keeps its first `OVERSIZE_PREFIX` octets and ends `truncated`); nothing a peer declares makes
the decoder hold more than the budget for the element in progress and as much for the message it belongs
to (`held`).

The decoder is split by job, sans-IO as h11's: the states and their rules (`TRANSITIONS`, moved through only by
`_to`) and the reading of frames, commands and messages are here; the greeting and version detection are
`detection.GreetingReader`'s, finding frame boundaries again after a gap `resync.Resync`'s, a frame header's layout
`framing.frame_head`'s, and both say problems through one `errors.Reports` (raised when strict, noted when lenient).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from enum import Enum

from .batch import FrameRun, RunScanner
from .buffer import Buffered, StreamBuffer
from .commands import decode_command
from .constants import FLAG_COMMAND, FLAG_MORE, RESERVED_V2, RESERVED_V3
from .detection import FRAMINGS, GreetingReader
from .errors import RemoteProtocolError, Reports
from .events import Command, Frame, Gap, Greeting, WireEvent, make_frame, make_message
from .framing import SHORT_HEADERS, frame_head
from .resync import Resync


class DecoderState(Enum):
    """Where a decoder is: in the greeting, in frames, lost (after a gap, until frame boundaries are
    certain again) or closed."""

    GREETING = "greeting"
    FRAMES = "frames"
    LOST = "lost"
    CLOSED = "closed"


_GREETING, _FRAMES, _LOST, _CLOSED = DecoderState

TRANSITIONS: dict[DecoderState, frozenset[DecoderState]] = {
    # The state machine's rules, in one place: where each state may go (and on what).
    _GREETING: frozenset({
        _FRAMES,  # the greeting was read (or the stream is known to start in frames: mid-stream, a given framing)
        _LOST,  # a lenient decoder could not read the greeting, or bytes are missing
        _CLOSED,  # the stream ended
    }),
    _FRAMES: frozenset({_LOST, _CLOSED}),  # bytes missing where no frame boundary is certain; the end
    _LOST: frozenset({_FRAMES, _LOST, _CLOSED}),  # a certain boundary again; another gap; the end
    _CLOSED: frozenset({_LOST}),  # (bytes a capture says are missing after the end still lose the place)
}

CURVE_DATA_FRAME_TEXT = (
    "CURVE MESSAGE sent in a data frame (flags 0x00 or 0x02: COMMAND clear), as libzmq 4.3 does; 23/ZMTP says "
    "encrypted data SHALL be sent as commands. Read as MESSAGE commands because their body starts with "
    "\\x07MESSAGE (noted once per direction)")
CURVE_DATA_FRAME_FLAGS_NOTE = (
    "On the wire these flags say a message frame: COMMAND (bit 2) is clear, and MORE (bit 0) is clear whatever "
    "the application message (CURVE carries MORE inside the box). The body starts with \\x07MESSAGE, so this is "
    "read as CURVE's MESSAGE command; 23/ZMTP wants COMMAND set here, libzmq 4.3 leaves it clear.")
OVERSIZE_PREFIX = 4096  # octets of an over-budget frame's body its event keeps (a quarter of the budget at most)
FRAME_OVERHEAD = 128  # what a held frame costs beyond its octets (its object), counted against `max_held`


class StreamDecoder(Buffered):
    """Decodes one direction's byte stream into `WireEvent`s (see the module docstring)."""

    def __init__(
        self,
        *,
        strict: bool = False,
        peer_family: Callable[[], str | None] | None = None,
        max_frame_size: int | None = None,
        mid_stream: bool = False,
        framing: str | None = None,
        mechanism: str | None = None,
        runs: RunScanner | None = None,
        max_held: int | None = None,
    ) -> None:
        self.strict = strict
        self.max_held = None if strict else max_held  # (a strict peer has `max_frame_size`)
        self.max_frame_size = max_frame_size
        self.buffer = StreamBuffer()  # what was received and not yet forgotten, with its stream offsets
        self._reports = Reports(strict=strict)  # how a problem is said (raised when strict)
        self._events = self._reports.events
        self._greeting_reader = GreetingReader(self.buffer, self._reports, peer_family or (lambda: None),
                                               max_held=self.max_held, max_frame_size=max_frame_size)
        self.greeting: Greeting | None = None
        self.framing: str | None = framing
        self.mechanism: str | None = mechanism
        self._pending: list[Frame] = []
        # A frame whose body is being skipped: offset, header, the body's prefix, flags, and why (None: a gap)
        self._truncated_frame: tuple[int, bytes, bytearray, int, int | None] | None = None
        self._discard = 0
        self._prefix_wanted = 0  # octets of the skipped body still wanted for its prefix (over-budget frames)
        self._pending_held = 0  # octets (and FRAME_OVERHEAD per frame) `_pending` holds, with `max_held`
        self._dropped_message = False  # an over-budget message is going by: its frames, no message event
        self._resync = Resync()  # where a lost decoder may resume
        self._curve_data_frame_noted = False
        self._state = _GREETING  # (changed only through `_to`, by the rules of `TRANSITIONS`)
        # Runs (see batch.py): only for a lenient decoder whose owner lays the events out itself.
        self.runs = runs if not strict and max_frame_size is None else None
        self.batching = self.runs is not None
        self.batch_ok = True  # the owner's say: none of its checks needs these messages one by one
        self._fresh = 0  # stream offset where the data of the current receive_data() call begins
        if mid_stream or framing is not None:
            self.framing = framing or "3"
            self._to(_FRAMES)
        if mid_stream:
            self._lose(0, "capture starts in the middle of this stream: waiting for certain frame boundaries",
                       severity="note")

    # ------------------------------------------------------------------ public API

    @property
    def family(self) -> str | None:
        """The version family the greeting showed so far (`detection.FAMILY_V1`, `_V2`, `_V3`), or None."""
        return self._greeting_reader.family

    @property
    def pending_start(self) -> int | None:
        """Stream offset of the first frame of an unfinished message, if one is held."""
        return self._pending[0].offset if self._pending else None

    @property
    def held(self) -> int:
        """Octets held for elements not yet complete: unread bytes, an unfinished message's frames, the prefix of
        a body being skipped (what `max_held` bounds)."""
        prefix = len(self._truncated_frame[2]) if self._truncated_frame is not None else 0
        return self.buffer.available + sum(len(f.header) + len(f.body) for f in self._pending) + prefix

    @property
    def in_message(self) -> bool:
        """True while frames of an unfinished message (MORE set) are held."""
        return bool(self._pending)

    @property
    def idle(self) -> bool:
        """True between frames with nothing held: every byte received was consumed and no message or
        skipped body is in progress, so the next byte starts a frame (an owner may then read whole
        frames itself and `buffer.skip()` them, as `fastpath.FastPath` does)."""
        return (self._state is _FRAMES and not self.buffer.available and not self._pending and not self._discard
                and not self._dropped_message)

    def receive_data(self, data: bytes, *, boundary: bool = True) -> None:
        """Feeds bytes; `boundary` says a new write/segment starts here (a resync candidate)."""
        if self._state == _CLOSED:
            return
        if self._state == _LOST and boundary:
            self._resync.candidate(self.received)
        self._fresh = self.buffer.feed(data)
        self._parse()

    def gap(self, length: int) -> None:
        """Says `length` bytes of the stream are missing (capture loss); lenient mode only."""
        if self.strict:
            raise RemoteProtocolError("bytes missing from the stream", offset=self.received, rule="gap")
        start = self.received
        self._events.append(Gap(start, length))
        if self._discard and length <= self._discard:
            # Another gap inside the body already being skipped (the buffer is empty meanwhile).
            self._discard -= length
            self.buffer.skip(length)
            self._expert(start, length, "warn", f"{length} bytes of a frame body are missing from the capture",
                         "message-body")
            self._finish_truncated_frame()
            return
        frame_start = self._frame_in_progress()
        if frame_start is not None:
            header, flags, size = frame_start
            have = self.buffer.available - len(header)
            remaining = size - have
            if length <= remaining:
                # The gap falls inside a body whose size we know: the next boundary is still certain.
                offset = self.offset
                prefix = bytearray(self.buffer.data[self.buffer.pos + len(header):])
                self._truncated_frame = (offset, header, prefix, flags, None)
                self._prefix_wanted = 0
                self._discard = remaining - length
                self.buffer.skip(length)
                self._expert(start, length, "warn", f"{length} bytes of a frame body are missing from the capture",
                             "message-body")
                self._finish_truncated_frame()
                return
        self._lose(start, f"{length} bytes missing from the capture; frame boundaries are no longer certain")
        self.buffer.skip(length)
        self._resync.lost_since = self.buffer.base

    def close(self) -> None:
        """Says the stream ended: reports what was left unfinished."""
        if self._state == _CLOSED:
            return
        left = self.buffer.available
        if self._state == _GREETING:
            self._problem(self.offset, left, "error", "stream ended before the greeting was complete", "greeting")
        elif self._state == _LOST:
            skipped = self.received - self._resync.lost_since
            if skipped:
                self._expert(self._resync.lost_since, skipped, "warn",
                             f"{skipped} bytes could not be decoded: no certain frame boundary found", "frame")
        elif left or self._pending or self._discard or self._dropped_message:
            self._problem(self.offset, left, "error", "connection closed in the middle of a message", "message")
        self._to(_CLOSED)

    def next_event(self) -> WireEvent | None:
        """The next decoded element, or None when more data is needed."""
        if not self._events:
            return None
        event = self._events.popleft()
        if isinstance(event, FrameRun):
            self._events.extendleft(reversed(event.events()))
            event = self._events.popleft()
        return event

    def events(self) -> list[WireEvent]:
        """Every element decoded so far and not yet taken."""
        out = list(self._events)
        self._events.clear()
        if self.batching and any(isinstance(e, FrameRun) for e in out):
            return [x for e in out for x in (e.events() if isinstance(e, FrameRun) else (e,))]
        return out

    def take(self) -> list[WireEvent | FrameRun]:
        """Like `events()`, but runs of ordinary frames stay whole: the `FrameRun`s the `runs` scanner made."""
        out = list(self._events)
        self._events.clear()
        return out

    # ------------------------------------------------------------------ internals

    def _to(self, state: DecoderState) -> None:
        """Moves to `state`, as `TRANSITIONS` allows (anything else is a bug of the decoder's own)."""
        if state not in TRANSITIONS[self._state]:
            raise AssertionError(f"a decoder does not go from {self._state.value} to {state.value}")
        self._state = state

    def _problem(self, offset: int, length: int, severity: str, text: str, rule: str) -> None:
        self._reports.problem(offset, length, severity, text, rule)

    def _expert(self, offset: int, length: int, severity: str, text: str, rule: str) -> None:
        self._reports.expert(offset, length, severity, text, rule)

    def _lose(self, offset: int, text: str, severity: str = "warn") -> None:
        if self._pending:
            self._expert(self._pending[0].offset, 0, "warn",
                         f"a {len(self._pending)}-frame partial message was lost with the gap", "message")
            self._pending = []
        self._pending_held = 0
        self._dropped_message = False
        self._discard = 0
        self._truncated_frame = None
        self._expert(offset, 0, severity, text, "frame")
        self._to(_LOST)
        self._resync.lose(offset)

    def _frame_in_progress(self) -> tuple[bytes, int, int] | None:
        """Header, flags and size of a frame whose header is buffered but whose body is not complete."""
        if self._state != _FRAMES or self._discard:
            return None
        buf, pos = self.buffer.data, self.buffer.pos
        head = frame_head(buf, pos, self.framing or "3")
        if head is None:
            return None
        hlen, flags, size = head
        return bytes(buf[pos:pos + hlen]), flags, max(size, 0)

    def _parse(self) -> None:
        while True:
            state = self._state
            if state == _FRAMES:
                if self._discard:
                    if not self._skip_discard():
                        return
                    continue
                if self.framing == "1":
                    self._parse_v1_frames()
                elif (self.runs is not None and self.batch_ok and self.mechanism != "CURVE"
                      and self.framing in ("2", "3")):
                    self._parse_frames_batched(self.runs)
                else:
                    self._parse_frames()
                if self._discard:  # an over-budget element began: skip its body
                    continue
                buffer = self.buffer
                if buffer.pos > 65536 and buffer.pos * 2 > len(buffer.data):  # once they dominate the buffer
                    buffer.commit()
                return
            if state == _GREETING:
                if not self._parse_greeting():
                    return
                continue
            if state == _LOST:
                if not self._try_resync():
                    return
                continue
            return

    def _skip_discard(self) -> bool:
        buffer = self.buffer
        take = min(buffer.available, self._discard)
        if self._prefix_wanted and self._truncated_frame is not None:
            grab = min(take, self._prefix_wanted)
            self._truncated_frame[2].extend(buffer.data[buffer.pos:buffer.pos + grab])
            self._prefix_wanted -= grab
        buffer.pos += take
        self._discard -= take
        if self._discard:
            buffer.skip()
            return False
        self._finish_truncated_frame()
        return True

    def _finish_truncated_frame(self) -> None:
        if self._discard or self._truncated_frame is None:
            return
        offset, header, prefix, flags, budget = self._truncated_frame
        self._truncated_frame = None
        self._prefix_wanted = 0
        _hlen, _flags, size = frame_head(header, 0, self.framing or "3") or (0, 0, 0)
        end = self.offset
        if self.framing != "1" and flags & FLAG_COMMAND:
            if budget is None:
                self._expert(offset, end - offset, "warn", "a command was cut by a capture gap", "command")
            return  # (an over-budget command was reported when its header came)
        frame = Frame(offset, end - offset, flags=flags, size=size, header=header, body=bytes(prefix),
                      framing=self.framing or "3", truncated=True)
        self._deliver_frame(frame)

    def _oversize(self, offset: int, hlen: int, flags: int, size: int, command: bool) -> None:
        """Starts skipping an element larger than `max_held` whose header is at the cursor: reports it now, keeps
        (for a frame) the first `OVERSIZE_PREFIX` octets of its body, and forgets the rest as it streams."""
        buffer = self.buffer
        limit = self.max_held
        header = bytes(buffer.data[buffer.pos:buffer.pos + hlen])
        if command:
            self._expert(offset, hlen + size, "warn", f"command of {size} octets is larger than the {limit} octets "
                         "the dissector holds for one element: skipped as it arrives, not decoded", "budget")
            wanted = 0
        else:
            wanted = min(size, OVERSIZE_PREFIX, (limit or 0) // 4)
            self._expert(offset, hlen + size, "warn", f"frame of {size} octets is larger than the {limit} octets "
                         f"the dissector holds for one element: its body is skipped as it arrives (the event keeps "
                         f"its first {wanted} octets)", "budget")
        self._truncated_frame = (offset, header, bytearray(), flags, limit)
        self._prefix_wanted = wanted
        buffer.pos += hlen
        self._discard = size

    # ---- greeting

    def _parse_greeting(self) -> bool:
        """Reads as much of the greeting as the data allows; True when it is complete."""
        reader = self._greeting_reader
        try:
            if not reader.read():
                return False
        finally:
            # (Also when a strict reader raises after the greeting: its framing is the one the connection refuses in.)
            if reader.greeting is not None and self.greeting is None:
                self.greeting = reader.greeting
                self.framing = FRAMINGS.get(self.greeting.version, "3")
                self.mechanism = self.greeting.mechanism
        if reader.lost:
            self._lose(self.offset, "greeting could not be read")
        elif self.greeting is not None:
            self._to(_FRAMES)
        return True

    # ---- frames

    def _parse_frames_batched(self, scanner: RunScanner) -> None:
        """`_parse_frames`, with runs of whole ordinary messages taken by the `runs` scanner."""
        buffer = self.buffer
        framing = self.framing or "3"
        while True:
            if not self._pending and not self._dropped_message:
                run = scanner(buffer.data, buffer.pos, buffer.base, self._fresh, framing)
                if run is not None:
                    self._events.append(run)
                    buffer.pos = run.end - buffer.base
            # What the scanner left: an unusual frame, the frames of an unfinished message, or too few bytes.
            if not self._parse_frames(resume=True):
                return

    def _parse_frames(self, *, resume: bool = False) -> bool:
        """Reads frames; with `resume`, returns True at the end of a message that a run may follow.

        A command ends any resumption for the rest of this data: it can change what the owner's
        checks need to see (a READY announcing a SUB socket, say).
        """
        buffer = self.buffer
        buf = buffer.data
        pos = buffer.pos
        n = len(buf)
        base = buffer.base
        framing = self.framing or "3"
        reserved = RESERVED_V3 if framing == "3" else RESERVED_V2
        max_size = self.max_frame_size
        held = self.max_held
        commands = framing == "3"  # 2.0 framing has no COMMAND bit
        curve = commands and self.mechanism == "CURVE"
        while (head := frame_head(buf, pos, framing)) is not None:
            hlen, flags, size = head
            if max_size is not None and size > max_size:
                buffer.pos = pos
                raise RemoteProtocolError(f"frame of {size} octets exceeds the maximum of {max_size}",
                                          offset=base + pos, rule="long-size" if hlen == 9 else "short-size")
            end = pos + hlen + size
            if held is not None and hlen + size > held:
                buffer.pos = pos
                self._oversize(base + pos, hlen, flags, size, commands and bool(flags & FLAG_COMMAND))
                return False
            if end > n:
                break
            # The usual headers are shared objects (cheaper than a copy, and their hash is computed once).
            header = SHORT_HEADERS[flags][size] if flags < 2 else bytes(buf[pos:pos + hlen])
            body = bytes(buf[pos + hlen:end])
            buffer.pos = end
            if flags & reserved:
                self._problem(base + pos, 1, "warn", f"reserved flag bits set: 0x{flags & reserved:02x}", "flags")
            # libzmq sends CURVE's MESSAGE as a data frame (COMMAND clear): it is still a MESSAGE command.
            if commands and (flags & FLAG_COMMAND or (curve and body[:8] == b"\x07MESSAGE")):
                self._command(base + pos, end - pos, flags, header, body)
                resume = False
            else:
                if hlen == 9 and size <= 255:
                    self._expert(base + pos, 9, "note", f"LONG size used for a {size}-octet frame", "long-size")
                self._deliver_frame(make_frame(base + pos, end - pos, flags, size, header, body, framing))
                if resume and not self._pending and not self._dropped_message and self._state == _FRAMES:
                    return True
            if self._state != _FRAMES:
                return False
            pos = end
        buffer.pos = pos
        return False

    def _parse_v1_frames(self) -> None:
        buffer = self.buffer
        buf = buffer.data
        pos = buffer.pos
        n = len(buf)
        base = buffer.base
        while (head := frame_head(buf, pos, "1")) is not None:
            hlen, flags, size = head
            if size < 0:
                # 13/ZMTP: a zero length is invalid and such frames are discarded.
                self._problem(base + pos, 1, "warn", "1.0 frame with length 0 discarded", "length")
                pos += 1
                buffer.pos = pos
                continue
            if self.max_frame_size is not None and size > self.max_frame_size:
                raise RemoteProtocolError(f"frame of {size} octets exceeds the maximum of {self.max_frame_size}",
                                          offset=base + pos, rule="length")
            if self.max_held is not None and hlen + size > self.max_held:
                buffer.pos = pos
                self._oversize(base + pos, hlen, flags, size, False)
                return
            end = pos + hlen + size
            if end > n:
                break
            header = bytes(buf[pos:pos + hlen])
            body = bytes(buf[pos + hlen:end])
            buffer.pos = end
            if flags & 0xFE:
                self._problem(base + pos + hlen - 1, 1, "note", f"reserved 1.0 flag bits set: 0x{flags & 0xFE:02x}",
                              "flags")
            self._deliver_frame(make_frame(base + pos, end - pos, flags, size, header, body, "1"))
            if self._state != _FRAMES:
                return
            pos = end
        buffer.pos = pos

    def _deliver_frame(self, frame: Frame) -> None:
        events = self._events
        events.append(frame)
        if frame.flags & FLAG_MORE:
            if self._dropped_message:
                return
            self._pending.append(frame)
            if self.max_held is not None:
                self._pending_held += len(frame.header) + len(frame.body) + FRAME_OVERHEAD
                if self._pending_held > self.max_held:
                    self._drop_message()
            return
        if self._dropped_message:  # its last frame: no message event
            self._dropped_message = False
            return
        if self._pending:
            parts = (*self._pending, frame)
            self._pending = []
            self._pending_held = 0
            first = parts[0].offset
            events.append(make_message(first, frame.offset + frame.length - first, parts))
        else:
            events.append(make_message(frame.offset, frame.length, (frame,)))

    def _drop_message(self) -> None:
        """The unfinished message outgrew `max_held`: its frames go on as events, the message is not kept."""
        pending = self._pending
        self._expert(pending[0].offset, 0, "warn", f"a message of more than {self.max_held} octets held in "
                     f"{len(pending)} frames, larger than the dissector holds for one element: its frames are "
                     "reported, the message as a whole is not", "budget")
        self._pending = []
        self._pending_held = 0
        self._dropped_message = True

    def _command(self, offset: int, length: int, flags: int, header: bytes, body: bytes) -> None:
        if flags & FLAG_MORE:
            self._problem(offset, 1, "warn", "MORE flag set on a command frame", "flags")
        if self._pending:
            self._problem(offset, length, "warn", "command inside a multipart message", "traffic")
        decoded = decode_command(body, offset + len(header), self.mechanism)
        fields = [*_command_header_fields(offset, header), *decoded.fields]
        curve_data_frame = not flags & FLAG_COMMAND  # a CURVE MESSAGE in a data frame (see _parse_frames)
        if curve_data_frame:
            fields[0] = replace(fields[0], note=CURVE_DATA_FRAME_FLAGS_NOTE)
        if len(header) == 9 and len(body) <= 255:
            decoded.problems.append(("note", f"LONG size used for a {len(body)}-octet command", "command-size",
                                     offset, 9))
        self._events.append(Command(offset, length, name=decoded.name, raw=header + body, details=decoded.details,
                                    field_list=tuple(fields), metadata=decoded.metadata))
        if curve_data_frame and not self._curve_data_frame_noted:
            self._curve_data_frame_noted = True
            self._expert(offset, 1, "note", CURVE_DATA_FRAME_TEXT, "flags")
        if decoded.name == "ERROR":
            # An ERROR is a fact of the stream, not a decoding problem: never raise for it here.
            self._expert(offset, length, "error", f"ERROR received: {decoded.details.get('reason', '')!r}", "error")
        for severity, text, rule, at, size in decoded.problems:
            if severity == "error" or (self.strict and severity == "warn"):
                self._problem(at, size, severity, text, rule)
            else:
                self._expert(at, size, severity, text, rule)

    # ---- resynchronisation

    def _try_resync(self) -> bool:
        """Looks for a certain frame boundary among the candidates; True when decoding resumed."""
        resync = self._resync
        cand = resync.find(self.buffer, self.framing or "3", self.max_held)
        if cand is None:
            return False
        skipped = cand - resync.lost_since
        if skipped:
            self._expert(resync.lost_since, skipped, "warn",
                         f"{skipped} bytes skipped: no certain frame boundary in them", "frame")
        self._expert(cand, 0, "note", "frame boundaries certain again: decoding resumes here", "frame")
        self.buffer.pos = cand - self.buffer.base
        self._to(_FRAMES)
        return True


def _command_header_fields(offset: int, header: bytes) -> list:
    from .framing import header_fields

    fields = header_fields(offset, header, "3", command=True)
    return fields
