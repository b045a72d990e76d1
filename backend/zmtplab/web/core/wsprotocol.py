"""The server's websocket protocol: uvicorn's (websockets, sans-I/O), reading the frames that carry commands itself.

A busy session's page sends a command every few milliseconds, each in one small text frame.
uvicorn's protocol reads every frame through websockets' general parser (generator coroutines,
an `Opcode` enum and a `Frame` per frame): about 5 µs a frame, against 1.5 µs here, on a server
that has about 100 µs for each message under `benchmarks/load_sessions.py`. `CommandFrameProtocol`
reads the common frame,
a whole, masked, unfragmented, uncompressed text frame within the size limit, by itself, and
hands every other frame (control frames, fragments, compressed, oversized or malformed ones) to
websockets' parser, one whole frame at a time. The parser therefore always waits at a frame
boundary, and everything it decides (errors and their close codes, pings, the closing
handshake) is unchanged. The ASGI messages are the ones uvicorn's protocol would queue, with
its flow control (reading pauses while the application has messages to take: here once `PAUSE_AT` wait).

It reads frames itself only once it knows the parser waits at a frame boundary with nothing
buffered (after the handshake); when it cannot tell, websockets reads everything, as in uvicorn.
"""

from __future__ import annotations

import contextlib
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import State
from websockets.speedups import apply_mask  # (websockets' C helper)
from websockets.streams import StreamReader

_WAITING_FOR_A_FRAME = StreamReader.at_eof.__code__  # where websockets' parser waits between frames
_FIN_TEXT = 0x81  # FIN, no RSV bits (nothing compressed), opcode 1 (text)
_MASKED = 0x80
_OPCODES = frozenset({0, 1, 2, 8, 9, 10})  # continuation, text, binary, close, ping, pong
# uvicorn pauses reading whenever a message is queued, and resumes once the application has taken it: two
# system calls (the poller's) for every command of a busy page. Here reading pauses once this many commands
# wait (the application still bounds what it has not read: this, and what one read brought).
PAUSE_AT = 16


class CommandFrameProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websockets-sansio protocol that reads whole, masked, uncompressed text frames itself (see the
    module docstring); pass it as uvicorn's `ws`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # websockets refuses an offer whose names are not RFC 7230 tokens (400), and libzmq's ZWS client offers
        # `ZWS2.0/NULL,ZWS2.0`: the app chooses the subprotocol itself (uvicorn splits the offer at commas for the
        # ASGI scope and answers with the one the app accepts), so websockets need not read it at all.
        self.conn.process_subprotocol = lambda headers: None  # type: ignore[method-assign]  # (websockets' own)
        self.direct: bool | None = None  # None until the handshake is over; False: websockets reads everything
        self.pending = b""  # the start of a frame still arriving
        self.frame_limit = 0  # the largest payload read here (websockets refuses larger ones)

    def data_received(self, data: bytes) -> None:
        """Reads the frames in `data` (and what came before it)."""
        direct = self.direct
        if direct is None and self.conn.state is State.OPEN:
            direct = self.direct = self._at_frame_boundary()
            limits = [size for size in (self.conn.max_message_size, self.conn.max_fragment_size) if size is not None]
            self.frame_limit = min(limits) if limits else 1 << 62
        if not direct:
            super().data_received(data)
            return
        self._read_frames(self.pending + data if self.pending else data)

    def _read_frames(self, buf: bytes) -> None:
        size = len(buf)
        limit = self.frame_limit
        queued = False
        pos = 0
        while size - pos >= 2:
            head1 = buf[pos]
            head2 = buf[pos + 1]
            if not head2 & _MASKED or head1 & 0x0F not in _OPCODES:
                # websockets refuses this from its first two octets (close code 1002), without waiting for more.
                self._to_parser(buf[pos:])
                self.direct = False
                pos = size
                break
            length = head2 & 0x7F
            start = pos + 2
            if length == 126:
                if size - pos < 4:
                    break
                length = int.from_bytes(buf[pos + 2:pos + 4], "big")
                start = pos + 4
            elif length == 127:
                if size - pos < 10:
                    break
                length = int.from_bytes(buf[pos + 2:pos + 10], "big")
                start = pos + 10
            if length > limit:
                # Too large: websockets refuses it from its header (close code 1009), without waiting for it.
                self._to_parser(buf[pos:])
                self.direct = False
                pos = size
                break
            start += 4  # (the mask)
            end = start + length
            if end > size:
                break  # the rest is on its way (at most the limit)
            text = None
            if head1 == _FIN_TEXT and self.conn.current_size is None and not self.frames:
                with contextlib.suppress(UnicodeDecodeError):  # (websockets' path closes with 1007)
                    text = apply_mask(buf[start:end], buf[start - 4:start]).decode()
            if text is None:
                self._to_parser(buf[pos:end])
                pos = end
                open_ = self.conn.state is State.OPEN and not self.transport.is_closing()
                if open_ and not self.conn.reader.buffer:
                    continue
                self.direct = False
                if open_:  # (the parser did not take the frame whole: it reads everything from here on)
                    self._to_parser(buf[pos:])
                # else closing, cleanly or after a failure: websockets discards what follows, uvicorn has closed.
                pos = size
                break
            pos = end
            if not self.close_sent:  # (past `websocket.close`, uvicorn drops messages)
                self.queue.put_nowait({"type": "websocket.receive", "text": text})
                queued = True
        self.pending = buf[pos:] if pos < size else b""
        if queued and not self.read_paused and self.queue.qsize() >= PAUSE_AT:
            # uvicorn's flow control: read no more until the application has taken what is queued.
            self.read_paused = True
            self.transport.pause_reading()

    def _to_parser(self, data: bytes) -> None:
        if data:
            super().data_received(data)

    def _at_frame_boundary(self) -> bool:
        """True when websockets' parser has nothing buffered and waits for the first octet of a frame, outside
        any fragmented message."""
        conn = self.conn
        if (conn.state is not State.OPEN or conn.parser_exc is not None or conn.reader.buffer
                or conn.current_size is not None or conn.debug or self.frames):
            return False
        gen = conn.parser
        while (inner := getattr(gen, "gi_yieldfrom", None)) is not None:
            gen = inner
        return getattr(gen, "gi_code", None) is _WAITING_FOR_A_FRAME
