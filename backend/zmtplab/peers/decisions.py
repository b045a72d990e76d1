"""The words of socket decisions: one template per (what, rule), filled from the event's `args`.

A socket (`peers.sockets.Socket`) reports each decision as `(what, rule, pipe, frames, detail)`;
the simulation turns it into a `{"kind": "socket", ...}` event whose `text` comes from
`TEMPLATES[f"{what}/{rule}"]` and whose `args` are the template's values, so a catalog in
another language can word the same event by its id (`what`/`rule`) and `args`.

Template values: `type` (the socket type), `peer` (the node at the far end of the pipe),
`msg` (the message's first frame, shortened), `identity`, `topic`, `subs` (the pipe's or the
socket's subscriptions), `hwm`, `depth`, `frames` (a count).
"""

from __future__ import annotations

import string
from typing import Any

TEMPLATES: dict[str, str] = {
    "route/round-robin": "{type} chose the pipe to {peer} (round robin: next in turn)",
    "queue/round-robin": "{type} queued {msg} in the pipe to {peer}: message queued before the connection is up",
    "route/pair": "PAIR sent {msg} to its one peer, {peer}",
    "queue/pair": "PAIR queued {msg}: message queued before the connection is up",
    "route/identity-routing": "ROUTER routed to identity {identity} ({peer}) and took the identity frame off",
    "route/prefix-match": "{type} sent {msg} to {peer} (it subscribed to {subs})",
    "route/envelope": "REP put the {frames}-frame envelope back and sent the reply to {peer}",
    "route/fan-out": "XSUB sent {msg} to {peer} (XSUB sends every message to every publisher)",
    "drop/router-mandatory-off": "ROUTER dropped: no peer with identity {identity} (ROUTER_MANDATORY off)",
    "drop/sndhwm": "{type} dropped for {peer}: its pipe is at SNDHWM {hwm}",
    "drop/slow-joiner": "{type} dropped {msg}: no subscriber is connected yet (the slow joiner misses it)",
    "drop/rep-peer-gone": "REP dropped the reply: the requester's pipe is gone or full",
    "drop/req-reply-peer": "REQ dropped a reply from {peer}: it only takes the reply from the peer it asked",
    "drop/req-delimiter": "REQ dropped a reply without the empty delimiter frame",
    "drop/rep-delimiter": "REP dropped a request from {peer} without an envelope delimiter (or without a body)",
    "filter/prefix-match": "{type} filtered out {msg} for {peer} (subscribed to {subs})",
    "filter/slow-joiner": "{type} did not send {msg} to {peer}: no subscription from it yet (the slow joiner)",
    "filter/no-subscription": "{type} did not send {msg} to {peer}: {peer} subscribed to nothing (a SUB receives "
                              "nothing until it subscribes)",
    "filter/local-prefix-match": "{type} filtered out {msg} (subscribed to {subs})",
    "queue/blocked": "{type} queued {msg} behind {depth} waiting send(s): its application is blocked",
    "block/sndhwm": "send blocked: every pipe full ({type} waits at SNDHWM {hwm}, it never drops)",
    "block/no-peer": "send blocked: {type} has no pipe to send on yet",
    "block/rcvhwm": "{type} stops reading from {peer}: {depth} messages are waiting (RCVHWM {hwm})",
    "unblock/rcvhwm": "{type} reads from {peer} again: {depth} waiting, at its low-water mark",
    "unblock/send": "send unblocked: {type} sent the message that waited",
    "deliver/fair-queue": "{type} took the next message from {peer} (fair queue: one pipe after the other)",
    "envelope/identity-routing": "ROUTER added the identity frame {identity} of {peer} (fair queue)",
    "strip/envelope": "REP stripped a {frames}-frame envelope from the request of {peer}",
    "strip/delimiter": "REQ took the reply from {peer} and stripped the empty delimiter",
    "subscribe/subscribe": "{type}: {peer} subscribed to {topic}",
    "subscribe/cancel": "{type}: {peer} cancelled its subscription to {topic}",
    "deliver/proxy": "proxy: {peer} passed {msg} on to {type}",
}


# Each template's fields, and sentences already made (a busy topology says the same few things again and again:
# "PUSH chose the pipe to w1 ..."), up to a bound.
FIELDS: dict[str, tuple[str, ...]] = {
    key: tuple(name for _, name, _, _ in string.Formatter().parse(template) if name)
    for key, template in TEMPLATES.items()
}
_MADE: dict[tuple[str, tuple[Any, ...]], str] = {}
_SHOWN: dict[bytes, str] = {}
_LAST_BIG: list[tuple[bytes, int, str] | None] = [None]  # the last big frame quoted (it keeps it alive: one)
CACHE_LIMIT = 4096


def text(what: str, rule: str, args: dict[str, Any]) -> str:
    """The plain-language sentence of a decision."""
    key = what + "/" + rule
    fields = FIELDS.get(key)
    if fields is None:
        return f"{args.get('type', 'socket')}: {what} ({rule})"
    values = tuple([args.get(name, "?") for name in fields])
    made = _MADE.get((key, values))
    if made is None:
        made = TEMPLATES[key].format(**dict(zip(fields, values, strict=True)))
        if len(_MADE) < CACHE_LIMIT:
            _MADE[(key, values)] = made
    return made


def shown(data: bytes, limit: int = 24) -> str:
    """A frame as the texts quote it: 'text' when printable, else hex; shortened."""
    if len(data) > 64:
        # A big frame is quoted by every decision about its message (a PUB's 23 routes): read it once. (Looked up
        # by identity: hashing or decoding a megabyte for each of them held the event loop.)
        last = _LAST_BIG[0]
        if last is not None and last[0] is data and last[1] == limit:
            return last[2]
        made = _shown(data, limit)
        _LAST_BIG[0] = (data, limit, made)
        return made
    made = _SHOWN.get(data)
    if made is None:
        made = _shown(data, limit)
        if len(_SHOWN) < CACHE_LIMIT:
            _SHOWN[data] = made
    return made


def _shown(data: bytes, limit: int) -> str:
    if not data:
        return "''"
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError:
        s = ""
    if s and s.isprintable():
        return repr(s if len(s) <= limit else s[:limit] + "...")
    h = data.hex()
    return "0x" + (h if len(h) <= limit else h[:limit] + "...")


def subs(topics: Any) -> str:
    """Subscriptions as the texts quote them."""
    items = sorted(topics)
    if not items:
        return "nothing"
    return ", ".join("everything ('')" if not t else shown(t) for t in items)


__all__ = ["TEMPLATES", "shown", "subs", "text"]
