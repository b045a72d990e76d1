"""A bulk path for the common case: a READY connection with clear-text ZMTP 3.x framing (NULL, PLAIN).

A real peer receives tens of thousands of small frames per second; building a `Frame`, a `Message` and a
`MessageReceived` for each costs more than the bytes do. `FastPath` reads message frames straight into tuples
of bodies and encodes many messages in one go. It takes only the plain case the engine's run scan
(`batch.scan_run`) finds -- flags MORE/LONG and nothing else, LONG only above 255 octets, sizes within
`max_frame_size` -- and hands everything else (a command, a reserved bit, an oversized frame, a partial
message too large to keep aside) to the connection's own `receive_data()`, from the start of the message in
progress, so the strict decoder stays the single judge of every rule: a `PING` or a bad flag goes through
exactly the code it would have gone through without the fast path. Once the decoder has no partial frame or
message left, the fast path takes over again.

It shares the decoder's stream position through the decoder's public buffer: the fast path
reads only while the decoder is `idle`, and `buffer.skip()`s what it consumed, so the decoder's
offset moves on and offsets in later errors stay exact.
"""

from __future__ import annotations

from collections import deque

from .batch import scan_run
from .connection import READY, Connection
from .errors import RemoteProtocolError
from .framing import SHORT_HEADERS, U64, frame_head

TAIL_LIMIT = 65536  # a partial message larger than this goes to the decoder, which buffers in amortised O(n)

_SHORT, _SHORT_MORE = SHORT_HEADERS


class FastPath:
    """Bulk receive/encode for one `Connection` (see the module docstring)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._dec = conn.decoder
        limit = self._dec.max_frame_size
        self._max = limit if limit is not None else (1 << 64)
        self._tail = b""
        self._slow = not self._drained()
        self.fell_back = False  # the last receive() passed bytes to the connection: drain its events
        self.error: RemoteProtocolError | None = None  # what the connection raised for the last receive()

    def _drained(self) -> bool:
        dec = self._dec
        return dec.idle and dec.framing == "3" and self._max >= 255  # (a lower limit: every frame to the decoder)

    def _to_slow(self, data: bytes) -> None:
        self._slow = True
        self.fell_back = True
        conn = self.conn
        try:
            conn.receive_data(data)
        except RemoteProtocolError as exc:  # the connection is closed, exactly as without the fast path
            self.error = exc
            return
        if conn.state == READY and self._drained():
            self._slow = False

    def receive(self, data: bytes) -> list[tuple[bytes, ...]]:
        """Complete messages in `data` (with what came before); anything else went to the connection.

        Never raises: when the connection refuses bytes after the messages returned, its
        `RemoteProtocolError` is in `error` (messages before the bad bytes are still delivered,
        as libzmq delivers them), and `fell_back` says the connection has events to drain.
        """
        self.fell_back = False
        self.error = None
        if self._slow or self.conn.state != READY:
            self._to_slow(data)
            return []
        if type(data) is not bytes:
            data = bytes(data)
        if self._tail:
            data = self._tail + data
            self._tail = b""
        done, _count, starts = scan_run(data, 0, self._max)  # the whole plain messages at the start
        messages: list[tuple[bytes, ...]] = []
        if starts:
            ends = starts[1:]
            ends.append(done)
        if starts and _count == 2 * len(starts):  # every frame a message (a frame and a message event each)
            messages = [(data[pos + (9 if data[pos] & 2 else 2):end],) for pos, end in zip(starts, ends, strict=True)]
            self._dec.buffer.skip(done)
        elif starts:
            append = messages.append
            parts: list[bytes] | None = None
            for pos, end in zip(starts, ends, strict=True):
                flags = data[pos]
                body = data[pos + (9 if flags & 2 else 2):end]  # (LONG headers are 9 octets, others 2)
                if flags & 1:
                    if parts is None:
                        parts = [body]
                    else:
                        parts.append(body)
                elif parts is None:
                    append((body,))
                else:
                    parts.append(body)
                    append(tuple(parts))
                    parts = None
            # (The decoder is idle: what it still holds it consumed before the fast path took over.)
            self._dec.buffer.skip(done)
        rest = len(data) - done
        if rest and (rest > TAIL_LIMIT or self._unusual(data, done)):
            self._to_slow(data[done:])
        elif rest:
            self._tail = data[done:]
        return messages

    def _unusual(self, data: bytes, pos: int) -> bool:
        """Whether the frames at `data[pos:]` (where the scan stopped: an unfinished message's, then what did not
        fit the plain case) hold one that is not plain, or too large: the decoder's to judge."""
        while (head := frame_head(data, pos)) is not None:
            hlen, flags, size = head
            if flags >= 4 or (hlen == 9 and not 256 <= size <= self._max):
                return True
            pos += hlen + size
        return False

    @property
    def buffered(self) -> int:
        """Octets held aside (a partial message)."""
        return len(self._tail)

    def encode(self, messages: list[tuple[bytes, ...]] | list[list[bytes]]) -> bytes:
        """The wire bytes of several messages, exactly as `Connection.send()` would produce them one by one."""
        out: list = []
        append = out.append
        for frames in messages:
            if len(frames) == 1:
                body = frames[0]
                size = len(body)
                append(_SHORT[size] if size < 256 else b"\x02" + U64.pack(size))
                append(body)
                continue
            last = len(frames) - 1
            for i, body in enumerate(frames):
                size = len(body)
                if i < last:
                    append(_SHORT_MORE[size] if size < 256 else b"\x03" + U64.pack(size))
                else:
                    append(_SHORT[size] if size < 256 else b"\x02" + U64.pack(size))
                append(body)
        return b"".join(out)

    def encode_queue(self, items: deque, budget: int) -> tuple[bytes, int]:
        """Encodes messages (tuples of frames) taken from the left of `items` until `budget` octets or an
        item that is not a message; returns (wire bytes, messages taken). Same bytes as `encode`."""
        out: list = []
        append = out.append
        popleft = items.popleft
        size = 0
        taken = 0
        while items and size < budget:
            frames = items[0]
            if type(frames) is not tuple:
                break
            popleft()
            taken += 1
            if len(frames) == 1:
                body = frames[0]
                n = len(body)
                if n < 256:
                    append(_SHORT[n])
                    size += n + 2
                else:
                    append(b"\x02" + U64.pack(n))
                    size += n + 9
                append(body)
                continue
            last = len(frames) - 1
            for i, body in enumerate(frames):
                n = len(body)
                if i < last:
                    append(_SHORT_MORE[n] if n < 256 else b"\x03" + U64.pack(n))
                else:
                    append(_SHORT[n] if n < 256 else b"\x02" + U64.pack(n))
                append(body)
                size += n + 9
        return b"".join(out), taken
