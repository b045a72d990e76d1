"""Message ids in a real session. A real wire carries no ids: each application's send gets one, remembered by the
message's body (`body`), and what a node reads, or a tap sees on the wire, takes the id of the oldest send with
that body it has not had yet; so a libzmq hop is followed, and a PUB's one message to several SUBs keeps its one
id. An echo's reply is a new message, `reply_to` the request's id."""

from __future__ import annotations

import itertools
from typing import Any

from .nodes import RealNode


def body(frames: list[bytes]) -> tuple[bytes, ...]:
    """What identifies a message across hops: the frames after its envelope (up to an empty delimiter), the
    last one when there is none (a ROUTER adds, and a DEALER or REQ hop may add, routing frames before it)."""
    if b"" in frames:
        return tuple(frames[frames.index(b"") + 1:])
    return tuple(frames[-1:])


class MessageIds:
    """The ids of a session's messages (see the module docstring)."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.sends: dict[tuple[bytes, ...], list[int]] = {}  # a message's body -> the ids of its sends, oldest first
        self.reply_to: dict[int, int] = {}  # an echo's message id -> the id of the request it answers

    def sent(self, node: RealNode, frames: list[bytes], reply_to: int | None = None) -> int:
        """A new message id for an application's send, remembered by its body (a node never receives its own
        message: an echo's reply is a new one, `reply_to` the request's)."""
        msg = next(self.ids)
        self.sends.setdefault(body(frames), []).append(msg)
        node.read.add(msg)
        node.out.add(msg)
        if reply_to is not None:
            self.reply_to[msg] = reply_to
        return msg

    def known(self, node: RealNode, frames: list[bytes]) -> int | None:
        """The id of the oldest send with this body that `node` has not read yet."""
        return next((m for m in self.sends.get(body(frames), ()) if m not in node.read), None)

    def tag(self, writer: RealNode, seen: set[int], frames: list[bytes], event: dict[str, Any]) -> None:
        """A message on the wire gets the id of the oldest message with its body that its writer sent (or passed
        on) and this direction (which has carried `seen`) has not carried yet."""
        msg = next((m for m in self.sends.get(body(frames), ()) if m in writer.out and m not in seen), None)
        if msg is not None:
            seen.add(msg)
            self.with_id(event, msg)

    def with_id(self, event: dict[str, Any], msg: int) -> None:
        """Gives `event` its message id `msg` (and the request's, when it is an echo's reply)."""
        event["msg"] = msg
        reply_to = self.reply_to.get(msg)
        if reply_to is not None:
            event["reply_to"] = reply_to
