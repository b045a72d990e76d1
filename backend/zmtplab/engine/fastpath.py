"""A bulk path for the common case: a READY connection with clear-text ZMTP 3.x framing (NULL, PLAIN).

A real peer receives tens of thousands of small frames per second; building a `Frame`, a
`Message` and a `MessageReceived` for each costs more than the bytes do. `FastPath` reads
message frames straight into tuples of bodies and encodes many messages in one go. It takes
only the plain case -- flags MORE/LONG and nothing else, sizes within `max_frame_size` -- and
hands everything else (a command, a reserved bit, an oversized frame, a partial frame too
large to keep aside) to the connection's own `receive_data()`, from the start of the message
in progress, so the strict decoder stays the single judge of every rule: a `PING` or a bad
flag goes through exactly the code it would have gone through without the fast path. Once the
decoder has no partial frame or message left, the fast path takes over again.

It shares the decoder's stream position through the decoder's public buffer: the fast path
reads only while the decoder is `idle`, and `buffer.skip()`s what it consumed, so the decoder's
offset moves on and offsets in later errors stay exact.
"""

from __future__ import annotations

from collections import deque

from .connection import READY, Connection
from .errors import RemoteProtocolError
from .framing import SHORT_HEADERS, U64

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
        return dec.idle and dec.framing == "3"

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
        messages: list[tuple[bytes, ...]] = []
        append = messages.append
        n = len(data)
        pos = 0
        msg_start = 0
        parts: list[bytes] | None = None
        max_size = self._max
        unusual = False
        while n - pos >= 2:
            flags = data[pos]
            if flags < 2:
                size = data[pos + 1]
                start = pos + 2
            elif flags < 4:
                if n - pos < 9:
                    break
                size = int.from_bytes(data[pos + 1:pos + 9], "big")
                start = pos + 9
            else:
                unusual = True  # COMMAND or a reserved bit: the decoder decides
                break
            if size > max_size:
                unusual = True
                break
            end = start + size
            if end > n:
                break
            body = data[start:end]
            pos = end
            if flags & 1:
                if parts is None:
                    parts = [body]
                else:
                    parts.append(body)
            else:
                if parts is None:
                    append((body,))
                else:
                    parts.append(body)
                    append(tuple(parts))
                    parts = None
                msg_start = pos
        if msg_start:
            # (The decoder is idle: what it still holds it consumed before the fast path took over.)
            self._dec.buffer.skip(msg_start)
        if unusual or n - msg_start > TAIL_LIMIT:
            self._to_slow(data[msg_start:])
        elif msg_start < n:
            self._tail = data[msg_start:]
        return messages

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
