"""Batches: runs of ordinary message frames, handed over whole instead of as an event each.

`zmtplab dissect --jsonl --no-fields` on a bulk capture spends its time per element: a `Frame`
and a `Message` per frame, a dict per event, a serializer call per dict. When its owner asks for
it, the decoder hands runs of ordinary frames over in one piece:

* `StreamDecoder(json_batches=True)`: `scan()` writes each frame's and each message's JSON object
  directly, exactly as `event.to_dict(with_fields=False, max_body=...)` would serialize without
  the closing brace (the source appends `conn`, `dir`, `packets`, `ts` and the brace): a
  `JsonBatch`;
* `StreamDecoder(frame_runs=True)`: `scan_run()` only finds where the run ends; the `FrameRun`
  keeps the run's octets, for an owner that lays the events out itself (the Spark pipeline
  builds its Arrow columns from them, see `pipeline/runs.py`).

Both scans take only the plain case -- flags MORE/LONG and nothing else, LONG only for sizes
above 255, whole messages only -- and stop at anything else: a command, a reserved bit, a LONG
size that deserves a note, a frame or message not complete yet. The decoder then goes on with its
own code from there, so it stays the single judge of every rule; a batch is only ever what the
decoder would have reported as `Frame` and `Message` events, and `events()` gives those events
back for any consumer that wants objects. (Tests compare both forms byte for byte.)
"""

from __future__ import annotations

from .events import Frame, Message, make_frame, make_message

# Hex windows grow from this many octets (doubling up to _MAX_SPAN) while a batch keeps going.
_FIRST_SPAN = 2048
_MAX_SPAN = 1 << 20
# The text of short sizes and lengths, and the hex of short headers (flags 0 or 1), made once.
_DEC = [str(k) for k in range(258)]
_HEX0 = [f"00{k:02x}" for k in range(256)]
_HEX1 = [f"01{k:02x}" for k in range(256)]


class FrameRun:
    """Consecutive whole ordinary messages of one direction (their frame and message events), as octets.

    `start`/`end` are the stream offsets the run covers, `fresh` the offset where the data of the
    `receive_data()` call that produced it began: every event of the run lies within [fresh, end)
    except those `spans(before=fresh)` names. `len()` is the number of events (frames and messages);
    `starts`, when the scan kept them, the position of every frame within `data`.
    """

    __slots__ = ("count", "data", "end", "framing", "fresh", "start", "starts")

    kind = "batch"

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

    def _frames(self):  # -> Iterator[tuple[int, int, int, int, int]]
        """(position, header length, flags, size, end) of every frame, positions within `data`."""
        data = self.data
        pos, n = 0, len(data)
        while pos < n:
            flags = data[pos]
            if flags & 2:
                size = int.from_bytes(data[pos + 1:pos + 9], "big")
                hlen = 9
            else:
                size = data[pos + 1]
                hlen = 2
            end = pos + hlen + size
            yield pos, hlen, flags, size, end
            pos = end

    def events(self) -> list[Frame | Message]:
        """The batch as the `Frame` and `Message` events the decoder reports without batching."""
        out: list[Frame | Message] = []
        data, start, framing = bytes(self.data), self.start, self.framing
        parts: list[Frame] = []
        for pos, hlen, flags, size, end in self._frames():
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
        pos, n, k = 0, len(data), 0
        parts: list[bytes] = []
        while pos < n:  # (the walk of `_frames()`, inlined: this runs once per frame of a whole capture)
            flags = data[pos]
            if flags & 2:
                start = pos + 9
                end = start + int.from_bytes(data[pos + 1:start], "big")
            else:
                start = pos + 2
                end = start + data[pos + 1]
            parts.append(data[start:end])
            pos = end
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
        for pos, _hlen, flags, _size, end in self._frames():
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


class JsonBatch(FrameRun):
    """A `FrameRun` with each event's JSON object text: `heads[i]` is the i-th event's object
    without its closing brace."""

    __slots__ = ("heads",)

    def __init__(self, start: int, data: bytes | bytearray, heads: list[str], fresh: int, framing: str) -> None:
        super().__init__(start, data, fresh, framing, len(heads))
        self.heads = heads


def scan_run(buf: bytearray, pos: int) -> tuple[int, int, list[int]]:
    """Where the whole ordinary messages at `buf[pos:]` end, how many events (frames and messages)
    they make, and where each of their frames starts (relative to `pos`). Stops where `scan()` does."""
    n = len(buf)
    count = 0
    done_pos, done = pos, 0  # the end of the last whole message, and the events up to it
    starts: list[int] = []
    kept = 0  # frames up to the end of the last whole message
    origin = pos
    while n - pos >= 2:
        flags = buf[pos]
        if flags < 2:
            end = pos + 2 + buf[pos + 1]
        elif flags < 4:
            if n - pos < 9:
                break
            size = int.from_bytes(buf[pos + 1:pos + 9], "big")
            if size < 256:
                break  # LONG for a short frame: the decoder adds its note
            end = pos + 9 + size
        else:
            break  # COMMAND or a reserved bit: the decoder decides
        if end > n:
            break
        count += 1
        starts.append(pos - origin)
        if not flags & 1:
            count += 1  # the message this frame completes
            done_pos, done, kept = end, count, len(starts)
        pos = end
    del starts[kept:]
    return done_pos, done, starts


def scan(buf: bytearray, pos: int, base: int, max_body: int | None) -> tuple[int, list[str]]:
    """JSON heads of the whole ordinary messages at `buf[pos:]`; returns where they end and the heads.

    `base` is the stream offset of `buf[0]`. Stops at the first frame that is not plain or not
    complete and gives back every frame of a message it could not finish.
    """
    if max_body is not None:
        return _scan_cut(buf, pos, base, max_body)
    n = len(buf)
    heads: list[str] = []
    app = heads.append
    parts: list[str] | None = None  # hex bodies of the message in progress, from its first MORE frame
    msg_off = 0  # stream offset of the message in progress
    h = ""
    hs = he = pos  # `h` is the hex of buf[hs:he], and he <= n
    span = _FIRST_SPAN
    while True:
        try:
            flags = buf[pos]
            size = buf[pos + 1]
        except IndexError:  # fewer than 2 octets left
            break
        if flags < 2:
            end = pos + 2 + size
            if end > he:
                if end > n:
                    break
                if span < _MAX_SPAN:
                    span += span
                hs = pos
                he = max(end, min(n, pos + span))
                h = buf[hs:he].hex()
            i = ((pos - hs) << 1) + 4
            body = h[i:i + size + size]
            if not flags:
                if parts is None:
                    off = str(base + pos)
                    ln = _DEC[size + 2]
                    app(f'{{"kind":"frame","offset":{off},"length":{ln},"more":false,"long":false,'
                        f'"size":{_DEC[size]},"body":"{body}","hex":"{_HEX0[size]}{body}"')
                    app(f'{{"kind":"message","offset":{off},"length":{ln},"frames":["{body}"]')
                else:
                    app(f'{{"kind":"frame","offset":{base + pos},"length":{_DEC[size + 2]},"more":false,"long":false,'
                        f'"size":{_DEC[size]},"body":"{body}","hex":"{_HEX0[size]}{body}"')
                    parts.append(body)
                    frames = '","'.join(parts)
                    app(f'{{"kind":"message","offset":{msg_off},"length":{base + end - msg_off},"frames":["{frames}"]')
                    parts = None
            else:
                app(f'{{"kind":"frame","offset":{base + pos},"length":{_DEC[size + 2]},"more":true,"long":false,'
                    f'"size":{_DEC[size]},"body":"{body}","hex":"{_HEX1[size]}{body}"')
                if parts is None:
                    parts = [body]
                    msg_off = base + pos
                else:
                    parts.append(body)
            pos = end
        elif flags < 4:
            if n - pos < 9:
                break
            size = int.from_bytes(buf[pos + 1:pos + 9], "big")
            if size < 256:
                break  # LONG for a short frame: the decoder adds its note
            end = pos + 9 + size
            if end > n:
                break
            if end > he:
                if span < _MAX_SPAN:
                    span += span
                hs = pos
                he = max(end, min(n, pos + span))
                h = buf[hs:he].hex()
            i = (pos - hs) << 1
            j = (end - hs) << 1
            body = h[i + 18:j]
            off = base + pos
            if flags & 1:
                app(f'{{"kind":"frame","offset":{off},"length":{size + 9},"more":true,"long":true,'
                    f'"size":{size},"body":"{body}","hex":"{h[i:j]}"')
                if parts is None:
                    parts = [body]
                    msg_off = off
                else:
                    parts.append(body)
            else:
                app(f'{{"kind":"frame","offset":{off},"length":{size + 9},"more":false,"long":true,'
                    f'"size":{size},"body":"{body}","hex":"{h[i:j]}"')
                if parts is None:
                    app(f'{{"kind":"message","offset":{off},"length":{size + 9},"frames":["{body}"]')
                else:
                    parts.append(body)
                    frames = '","'.join(parts)
                    app(f'{{"kind":"message","offset":{msg_off},"length":{base + end - msg_off},'
                        f'"frames":["{frames}"]')
                    parts = None
            pos = end
        else:
            break  # COMMAND or a reserved bit: the decoder decides
    if parts is not None:
        # An unfinished message: give its frames back.
        del heads[len(heads) - len(parts):]
        pos = msg_off - base
    return pos, heads


def _scan_cut(buf: bytearray, pos: int, base: int, max_body: int) -> tuple[int, list[str]]:
    """`scan()` with bodies cut to `max_body` octets (then `truncated` is set, as `to_dict` does)."""
    n = len(buf)
    heads: list[str] = []
    app = heads.append
    cut2 = 2 * max_body
    committed = 0  # heads of complete messages
    msg_pos = pos  # where the message in progress starts
    parts: list[str] | None = None  # hex bodies of the message in progress after its first MORE frame
    msg_off = 0
    msg_cut = False
    h = ""
    hs = he = pos  # `h` is the hex of buf[hs:he]
    span = _FIRST_SPAN
    while n - pos >= 2:
        flags = buf[pos]
        if flags < 2:
            size = buf[pos + 1]
            end = pos + 2 + size
            hl = 4
            lg = "false"
        elif flags < 4:
            if n - pos < 9:
                break
            size = int.from_bytes(buf[pos + 1:pos + 9], "big")
            if size < 256:
                break  # LONG for a short frame: the decoder adds its note
            end = pos + 9 + size
            hl = 18
            lg = "true"
        else:
            break  # COMMAND or a reserved bit: the decoder decides
        if end > n:
            break
        if end > he:
            if span < _MAX_SPAN:
                span += span
            hs = pos
            he = max(end, min(n, pos + span))
            h = buf[hs:he].hex()
        i = (pos - hs) << 1
        j = (end - hs) << 1
        off = base + pos
        ln = end - pos
        full = h[i + hl:j]
        if size > max_body:
            body = full[:cut2]
            tail = f'"{body}","hex":"{h[i:i + hl + cut2]}","truncated":true'
            msg_cut = True
        else:
            body = full
            tail = f'"{body}","hex":"{h[i:j]}"'
        if flags & 1:
            app(f'{{"kind":"frame","offset":{off},"length":{ln},"more":true,"long":{lg},"size":{size},"body":{tail}')
            if parts is None:
                parts = [full]
                msg_off = off
            else:
                parts.append(full)
        else:
            app(f'{{"kind":"frame","offset":{off},"length":{ln},"more":false,"long":{lg},"size":{size},"body":{tail}')
            if parts is None:
                if msg_cut:
                    app(f'{{"kind":"message","offset":{off},"length":{ln},"frames":["{body}"],"truncated":true')
                    msg_cut = False
                else:
                    app(f'{{"kind":"message","offset":{off},"length":{ln},"frames":["{body}"]')
            else:
                parts.append(full)
                if msg_cut:
                    frames = '","'.join([p[:cut2] for p in parts])
                    app(f'{{"kind":"message","offset":{msg_off},"length":{base + end - msg_off},'
                        f'"frames":["{frames}"],"truncated":true')
                    msg_cut = False
                else:
                    frames = '","'.join(parts)
                    app(f'{{"kind":"message","offset":{msg_off},"length":{base + end - msg_off},"frames":["{frames}"]')
                parts = None
            committed = len(heads)
            msg_pos = end
        pos = end
    if committed != len(heads):
        del heads[committed:]
    return msg_pos, heads
