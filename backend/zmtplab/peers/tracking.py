"""What a simulation with decisions follows of each message (`Tracker`): its sockets' decisions as `socket`
events, and message ids (`msg`) from the application's send through every pipe, wire and proxy to its read.

A real wire carries no id: the tracker keeps, per pipe, the ids of the messages sent and not yet on the wire
(out) and of those received and not yet read (in), in order, as the pipe keeps the messages themselves. An
echo's reply carries `reply_to`, the id of the message it answers.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

from . import decisions as words
from .simpeer import SimPeer
from .sockets import Again, Pipe, SocketStateError, never_subscribed
from .timeline import Timeline
from .wire import C2S, READER, SIDES, Link, Wire

# Decisions about a message the socket received (the others are about one being sent, or about no message).
RECV_DECISIONS = frozenset({("deliver", "fair-queue"), ("envelope", "identity-routing"), ("strip", "envelope"),
                            ("strip", "delimiter"), ("drop", "req-reply-peer"), ("drop", "req-delimiter"),
                            ("drop", "rep-delimiter"), ("filter", "local-prefix-match")})
NO_MESSAGE = frozenset({"subscribe", "unblock"})


class Tracker:
    """Socket decisions as `socket` events and message ids along a simulation's pipes (see the module
    docstring): `decision` is every socket's observer, the wire tells it of each message that crosses a link
    (`tag_message`) and of each link that closed (`trim_ids`)."""

    def __init__(self, timeline: Timeline, wire: Wire, peers: dict[str, SimPeer]) -> None:
        self.log = timeline.log
        self.wire = wire
        self.peers = peers
        self._msg_ids = itertools.count(1)
        self._out_ids: dict[tuple[str, str], deque[int]] = {}  # (node, pipe) -> sent, not yet on the wire
        self._in_ids: dict[tuple[str, str], deque[int]] = {}  # (node, pipe) -> received, not yet read
        self._sending: int | None = None  # the id of the message being sent
        self._retrying = False
        self._received: int | None = None  # the id of the message just read
        self.reply_to: dict[int, int] = {}  # an echo's message id -> the id of the one it answers
        self._said: dict[tuple[str, str, str, str | None], tuple[bool, str | None]] = {}  # (`_socket_event`)
        self.blocked_peers: set[SimPeer] = set()  # peers with sends waiting

    def new_id(self) -> int:
        """The id of a new message."""
        return next(self._msg_ids)

    # ---- the applications' sends and reads

    def send(self, peer: SimPeer, msg: tuple[bytes, ...], msg_id: int | None) -> bool:
        """Sends with decisions on: the message carries `msg_id` through its socket's decisions; one that
        would block waits in `peer.blocked` (True when it went now)."""
        if peer.blocked:
            peer.blocked.append(msg)
            peer.blocked_ids.append(msg_id)
            self._socket_event(peer, "queue", "blocked", None, msg, len(peer.blocked) - 1, msg_id)
            return False
        self.blocked_peers.discard(peer)
        self._sending = msg_id
        try:
            peer.core.send(msg)
        except Again:
            peer.blocked.append(msg)
            peer.blocked_ids.append(msg_id)
            self.blocked_peers.add(peer)
            return False
        except SocketStateError as exc:
            raise ValueError(str(exc)) from None
        finally:
            self._sending = None
        return True

    def retry_blocked(self, peer: SimPeer) -> bool:
        """Sends what waits in `peer.blocked` as far as the socket takes it; True when something went."""
        core = peer.core
        blocked = peer.blocked
        sent = False
        while blocked:
            self._sending = peer.blocked_ids[0] if peer.blocked_ids else None
            self._retrying = True  # (a send that still blocks was reported when it first did)
            try:
                core.send(blocked[0])
            except (Again, SocketStateError):
                break
            finally:
                self._sending = None
                self._retrying = False
            msg = blocked.popleft()
            msg_id = peer.blocked_ids.popleft() if peer.blocked_ids else None
            self._socket_event(peer, "unblock", "send", None, msg, None, msg_id)
            sent = True
        if not blocked:
            self.blocked_peers.discard(peer)
        return sent

    def read(self, peer: SimPeer, msg: tuple[bytes, ...], entry: dict[str, Any]) -> None:
        """The application read `msg`: its `recv` entry gets the message's id, then an echo sends it back."""
        received, self._received = self._received, None
        if received is not None:
            entry["msg"] = received
            reply_to = self.reply_to.get(received)
            if reply_to is not None:
                entry["reply_to"] = reply_to
        self.log(entry)
        if peer.echo:
            reply = next(self._msg_ids)
            if received is not None:
                self.reply_to[reply] = received
            try:
                self.send(peer, msg, reply)
            except ValueError as exc:
                self.log({"kind": "peer", "peer": peer.name, "what": "error", "action": "echo", "reason": str(exc)})

    def pump(self, src: SimPeer, dst: SimPeer) -> bool:
        """One proxy direction: what `src` has goes out of `dst` (zmq_proxy stalls while `dst` cannot send),
        each message keeping its id."""
        moved = False
        socket = src.socket
        while not dst.blocked and socket.readable:
            msg = src.read()
            if msg is None:
                break
            msg_id, self._received = self._received, None
            self.send(dst, msg, msg_id)
            moved = True
        return moved

    # ---- the wire's messages

    def tag_message(self, link: Link, dname: str, entry: dict[str, Any]) -> None:
        """A message crossed the wire: it is the next one its writer's pipe sent; it joins the reader's pipe."""
        writer = "client" if dname == C2S else "server"
        wpc = link.pcs[writer]
        if wpc.pipe is None:
            return
        ids = self._out_ids.get((link.peers[writer].name, wpc.pipe.id))
        if not ids:
            return
        msg = ids.popleft()
        entry["msg"] = msg
        reply_to = self.reply_to.get(msg)
        if reply_to is not None:
            entry["reply_to"] = reply_to
        reader = READER[dname]
        rpc = link.pcs[reader]
        if rpc.pipe is not None and not rpc.ignored:
            self._in_ids.setdefault((link.peers[reader].name, rpc.pipe.id), deque()).append(msg)

    def trim_ids(self, link: Link) -> None:
        """A closed link lost the messages it carried unread: their ids leave the writers' pipes."""
        for side in SIDES:
            pipe = link.pcs[side].pipe
            if pipe is None:
                continue
            key = (link.peers[side].name, pipe.id)
            ids = self._out_ids.get(key)
            if not ids:
                continue
            if not pipe.connect_side:
                del self._out_ids[key]
                continue
            queued = sum(1 for item in pipe.out if type(item) is tuple)
            while len(ids) > queued:
                ids.popleft()

    # ---- the sockets' decisions

    def decision(self, peer: SimPeer, what: str, rule: str, pipe: Pipe | None, frames: tuple[bytes, ...] | None,
                 detail: bytes | int | None) -> None:
        """A socket's decision (peers.sockets' observer) becomes a `socket` event, with the message's id."""
        msg: int | None = None
        if what == "route" or what == "queue":  # (a message sent: the common case first)
            msg = self._sending
            if msg is not None and pipe is not None:
                key = (peer.name, pipe.id)
                ids = self._out_ids.get(key)
                if ids is None:
                    ids = self._out_ids[key] = deque()
                ids.append(msg)
        elif what == "block" and self._retrying:
            return
        elif (what, rule) in RECV_DECISIONS:
            ids = self._in_ids.get((peer.name, pipe.id)) if pipe is not None else None
            msg = ids.popleft() if ids else None
            if what != "drop" and what != "filter":
                self._received = msg
        elif what not in NO_MESSAGE and not (what == "block" and rule == "rcvhwm"):
            msg = self._sending
            if rule == "slow-joiner" and what == "filter":
                far = self.peers.get(self._pipe_end(peer, pipe)[0] or "")
                if far is not None and never_subscribed(far.socket):
                    rule = "no-subscription"
        self._socket_event(peer, what, rule, pipe, frames, detail, msg)

    def _socket_event(self, peer: SimPeer, what: str, rule: str, pipe: Pipe | None,
                      frames: tuple[bytes, ...] | None, detail: bytes | int | None, msg: int | None) -> None:
        """Logs a `socket` event; its `args` are the sentence's values that the event does not already carry
        (`peer`, `depth` and `hwm` are keys of their own)."""
        socket = peer.socket
        opts = peer.options
        if detail is None and pipe is not None and frames and (rule == "round-robin" or rule == "fair-queue"):
            # (The common case, a message routed or read, without the general case's questions.)
            far, conn = self._pipe_end(peer, pipe)
            if rule == "fair-queue":
                depth, hwm = len(pipe.inq), opts.rcvhwm
            else:
                depth, hwm = len(pipe.out), opts.sndhwm
            said = self._said.get((what, rule, peer.name, far))
            if said is None:  # (the sentence and whether it quotes the message, once per pipe and decision)
                quotes = "msg" in words.FIELDS.get(what + "/" + rule, ("msg",))
                said = self._said[(what, rule, peer.name, far)] = (
                    quotes, None if quotes else words.text(what, rule, {"type": socket.type, "peer": far}))
            if said[0]:
                args = {"type": socket.type, "msg": words.shown(_body(frames))}
                text = words.text(what, rule, {**args, "peer": far})
            else:
                args = {"type": socket.type}
                text = said[1]
            event = self._event_head(peer, what, text, rule, far, conn, msg)
            event["depth"] = depth
            event["hwm"] = hwm
            event["args"] = args
            self.log(event)
            return
        inbound = rule in ("rcvhwm", "fair-queue", "delimiter", "local-prefix-match") or (what, rule) in RECV_DECISIONS
        args: dict[str, Any] = {"type": socket.type}
        far, conn = self._pipe_end(peer, pipe)
        if far is not None:
            args["peer"] = far
        if frames:
            args["msg"] = words.shown(_body(frames[1:] if socket.type == "ROUTER" and what in ("route", "drop")
                                            and len(frames) > 1 else frames))
        if isinstance(detail, bytes):
            args["identity" if rule in ("identity-routing", "router-mandatory-off", "sndhwm") else "topic"] = (
                words.shown(detail))
        elif isinstance(detail, int):
            args["frames" if what in ("strip", "route", "drop") else "depth"] = detail
        if what == "queue" and rule == "blocked":
            args["depth"] = detail
        hwm = opts.rcvhwm if inbound else opts.sndhwm
        args["hwm"] = hwm
        if pipe is not None:
            args.setdefault("depth", len(pipe.inq) if inbound else len(pipe.out))
            if rule in ("prefix-match",) or rule == "subscribe":
                args["subs"] = words.subs(pipe.topics)
        if rule == "local-prefix-match":
            args["subs"] = words.subs(socket.subscriptions)
        event = self._event_head(peer, what, words.text(what, rule, args), rule, far, conn, msg)
        if pipe is not None:
            event["depth"] = args["depth"]
            event["hwm"] = hwm
        elif what == "block":
            event["hwm"] = hwm
        for key in ("peer", "depth", "hwm"):
            if key in event:
                args.pop(key, None)
        event["args"] = args
        self.log(event)

    def _event_head(self, peer: SimPeer, what: str, text: str, rule: str, far: str | None, conn: str | None,
                    msg: int | None) -> dict[str, Any]:
        """A socket event's common keys, in the contract's order: the node, the decision, the pipe's far end and
        connection, the message and what it answers."""
        event: dict[str, Any] = {"kind": "socket", "node": peer.name, "what": what, "text": text, "rule": rule}
        if far is not None:
            event["peer"] = far
        if conn is not None:
            event["conn"] = conn
        if msg is not None:
            event["msg"] = msg
            reply_to = self.reply_to.get(msg)
            if reply_to is not None:
                event["reply_to"] = reply_to
        return event

    def _pipe_end(self, peer: SimPeer, pipe: Pipe | None) -> tuple[str | None, str | None]:
        """The node at the far end of `peer`'s pipe, and the connection it runs on now (if any)."""
        if pipe is None:
            return None, None
        pid = pipe.id
        if pid.startswith("connect-"):
            connecter = self.wire.connecters[int(pid[8:]) - 1]
            link = connecter.link
            return connecter.server.name, (link.id if link is not None and not link.closed else None)
        link = self.wire.links.get(pid)
        if link is None:
            return None, None
        return link.partner_of(peer).name, link.id


def _body(frames: tuple[bytes, ...]) -> bytes:
    """The frame a decision's text quotes: the first after an envelope's empty delimiter, else the first."""
    if b"" in frames:
        i = frames.index(b"")
        if i + 1 < len(frames):
            return frames[i + 1]
    return frames[0]


__all__ = ["NO_MESSAGE", "RECV_DECISIONS", "Tracker"]
