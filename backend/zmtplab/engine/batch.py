"""Runs: consecutive ordinary message frames, handed over whole instead of as an event each.

`zmtplab dissect --jsonl` and the Spark pipeline spend their time per element: a
`Frame` and a `Message` per frame, a dict per event. An owner that lays such events out itself
gives its decoder a run scanner (`StreamDecoder(runs=...)`); the decoder then hands runs of
ordinary frames over in one piece, each a `FrameRun` (or a subclass the scanner makes):

* `frame_run` (here) only finds where the run ends; the `FrameRun` keeps the run's octets and
  where each frame starts, for the pipeline's Arrow columns (`pipeline/runs.py`);
* `capture.jsonlines.json_runs` also writes each event's JSON text from those frame starts, for
  `zmtplab dissect --jsonl` with or without fields.

Both find the run with `scan_run`, the frame-header scan of the project's hot paths (the layout
`framing.frame_head` reads, in one loop: a call per frame would cost more than the frame). It takes
only the plain case -- flags MORE/LONG and nothing else, LONG only for sizes
above 255, whole messages only -- and stops at anything else: a command, a reserved bit, a LONG
size that deserves a note, a frame or message not complete yet. The decoder then goes on with its
own code from there, so it stays the single judge of every rule; a run is only ever what the
decoder would have reported as `Frame` and `Message` events, and `events()` gives those events
back for any consumer that wants objects. (Tests compare both forms byte for byte.)
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator

from .events import Frame, Message, make_frame, make_message
from .framing import frame_head

RunScanner = Callable[[bytearray, int, int, int, str], "FrameRun | None"]
"""`scanner(data, pos, base, fresh, framing)`: the run of whole ordinary messages at `data[pos:]`, or None.

`base` is the stream offset of `data[0]`, `fresh` where the data of the current `receive_data()`
began, `framing` `"3"` or `"2"`; the run ends at stream offset `run.end`."""


class FrameRun:
    """Consecutive whole ordinary messages of one direction (their frame and message events), as octets.

    `start`/`end` are the stream offsets the run covers, `fresh` the offset where the data of the
    `receive_data()` call that produced it began: every event of the run lies within [fresh, end)
    except those `spans(before=fresh)` names. `len()` is the number of events (frames and messages);
    `starts`, when the scan kept them, the position of every frame within `data`.
    """

    __slots__ = ("count", "data", "end", "framing", "fresh", "start", "starts")

    def __init__(self, start: int, data: bytes | bytearray, fresh: int, framing: str, count: int,
                 starts: list[int] | None = None) -> None:
        self.start = start
        self.end = start + len(data)
        self.data = data
        self.fresh = fresh
        self.framing = framing
        self.count = count
        self.starts = starts

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"{type(self).__name__}(start={self.start}, end={self.end}, events={self.count})"

    def frames(self) -> Iterator[tuple[int, int, int, int, int]]:
        """(position, header length, flags, size, end) of every frame, positions within `data`."""
        return frame_heads(self.data)

    def events(self) -> list[Frame | Message]:
        """The batch as the `Frame` and `Message` events the decoder reports without batching."""
        out: list[Frame | Message] = []
        data, start, framing = bytes(self.data), self.start, self.framing
        parts: list[Frame] = []
        for pos, hlen, flags, size, end in self.frames():
            frame = make_frame(start + pos, end - pos, flags, size, data[pos:pos + hlen], data[pos + hlen:end], framing)
            out.append(frame)
            parts.append(frame)
            if not flags & 1:
                first = parts[0].offset
                out.append(make_message(first, frame.offset + frame.length - first, tuple(parts)))
                parts = []
        return out

    def messages(self) -> list[tuple[int, list[bytes]]]:
        """(index of the message event among the events, its frame bodies) of every message of the run."""
        out: list[tuple[int, list[bytes]]] = []
        data = bytes(self.data)
        starts = self.starts if self.starts is not None else [pos for pos, *_rest in self.frames()]
        ends = starts[1:]
        ends.append(len(data))
        k = 0
        parts: list[bytes] = []
        for pos, end in zip(starts, ends, strict=True):  # (this runs once per frame of a whole capture)
            flags = data[pos]
            parts.append(data[pos + (9 if flags & 2 else 2):end])  # (a run's LONG headers are 9 octets, others 2)
            k += 1
            if not flags & 1:
                out.append((k, parts))
                parts = []
                k += 1
        return out

    def spans(self, before: int | None = None) -> list[tuple[int, int, int]]:
        """(index among the events, offset, length) of every event, or only of those starting before `before`."""
        out: list[tuple[int, int, int]] = []
        start = self.start
        k = 0
        first = None
        for pos, _hlen, flags, _size, end in self.frames():
            offset = start + pos
            if first is None:
                if before is not None and offset >= before:
                    break  # this message and every later event start at or after `before`
                first = offset
            if before is None or offset < before:
                out.append((k, offset, end - pos))
            k += 1
            if not flags & 1:
                if before is None or first < before:
                    out.append((k, first, start + end - first))
                k += 1
                first = None
        return out


def frame_heads(data: bytes | bytearray) -> Iterator[tuple[int, int, int, int, int]]:
    """(position, header length, flags, size, end) of every frame of a run's octets (what `scan_run` found): the
    walk of a run's frame headers, for `FrameRun` and the event store's stored runs)."""
    pos, n = 0, len(data)
    while pos < n:
        head = frame_head(data, pos)
        if head is None:
            raise ValueError(f"a run's octets end inside a frame header at {pos}")
        hlen, flags, size = head
        end = pos + hlen + size
        yield pos, hlen, flags, size, end
        pos = end


def scan_run(buf: bytes | bytearray | memoryview, pos: int, max_size: int = 1 << 64) -> tuple[int, int, list[int]]:
    """Where the whole ordinary messages at `buf[pos:]` end, how many events (frames and messages)
    they make, and where each of their frames starts (relative to `pos`): the plain case of the
    module docstring, the stop rule every run scanner keeps; a LONG size over `max_size` stops it too.

    The frame-header scan of the hot paths (the run scanners: `frame_run` here,
    `capture.jsonlines.scan_json_run` for JSON text; the event store's search; `fastpath.FastPath` keeps a loop of
    its own that also slices the bodies): the
    layout `framing.frame_head` reads, read here in one loop for the plain case, since a call per frame
    would cost more than the frame (tests hold the two readings together)."""
    n = len(buf)
    origin = done_pos = pos  # where the scan began, the end of the last whole message
    messages = done = 0  # messages seen, and up to the end of the last whole one
    starts: list[int] = []
    keep = starts.append
    while n - pos >= 2:  # (a test per frame costs less than the exception a scan to the end would raise)
        flags = buf[pos]
        if flags < 2:
            end = pos + 2 + buf[pos + 1]
        elif flags < 4 and n - pos >= 9 and 256 <= (size := int.from_bytes(buf[pos + 1:pos + 9], "big")) \
                <= max_size:
            end = pos + 9 + size
        else:
            break  # COMMAND, a reserved bit, a LONG header not all here, LONG for a short frame (noted), too large
        if end > n:
            break
        keep(pos - origin)
        if not flags & 1:
            messages += 1
            done_pos, done = end, messages
        pos = end
    if not done:
        return origin, 0, []
    if done_pos != pos:
        del starts[bisect_left(starts, done_pos - origin):]  # the frames of an unfinished message
    return done_pos, len(starts) + done, starts


def frame_run(buf: bytearray, pos: int, base: int, fresh: int, framing: str) -> FrameRun | None:
    """The `RunScanner` of plain `FrameRun`s (octets and frame positions, no text)."""
    end, count, starts = scan_run(buf, pos)
    if not count:
        return None
    return FrameRun(base + pos, bytes(buf[pos:end]), fresh, framing, count, starts)
