"""Our nodes' socket decisions in a real session: `peers.sockets`' observer of each of our peers' sockets, whose
decisions become `socket` events, worded by `peers.decisions` (libzmq keeps its decisions to itself), each naming
the node at the far end of the pipe and the session's connection it runs on (mapped by port, `peer_event`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...peers import decisions
from ...peers.simulation import RECV_DECISIONS
from ...peers.sockets import SUBSCRIBERS, Pipe, Socket, never_subscribed
from ...peers.tcp import TcpPeer
from .messages import MessageIds
from .nodes import LabSide, RealNode
from .state import TcpState


class Decisions:
    """Our sockets' decisions as events (see the module docstring); `map_ports` maps a node's connections to the
    taps' (`taps.Taps.map_ports`)."""

    def __init__(self, state: TcpState, messages: MessageIds, map_ports: Callable[[RealNode], None]) -> None:
        self.state = state
        self.messages = messages
        self.map_ports = map_ports

    def _never_subscribed(self, name: str) -> bool:
        """Whether node `name` is a SUB/XSUB that subscribed to nothing (ours: its socket says; libzmq's: its
        node's subscriptions, the only ones it makes)."""
        node = self.state.nodes.get(name)
        if node is None or node.spec.type not in SUBSCRIBERS:
            return False
        if isinstance(node.side, LabSide):
            return never_subscribed(node.side.peer.core.socket)
        return not node.spec.subscribe

    def watch(self, node: RealNode, peer: TcpPeer) -> None:
        """Our socket's decisions (`peers.sockets`' observer) become `socket` events, worded by `peers.decisions`."""
        socket = peer.core.socket
        socket.observer = lambda what, rule, pipe, frames, detail: self._decision(
            node, socket, what, rule, pipe, frames, detail)

    def _decision(self, node: RealNode, socket: Socket, what: str, rule: str, pipe: Pipe | None,
                  frames: tuple[bytes, ...] | None, detail: bytes | int | None) -> None:
        if what == "block" and rule != "rcvhwm":
            if node.blocked:
                return  # (TcpPeer.send tries again whenever a pipe moves: one block until the send goes)
            node.blocked = True
        elif node.blocked and what in ("route", "queue"):
            node.blocked = False
            self._decision(node, socket, "unblock", "send", None, None, None)
        inbound = rule in ("rcvhwm", "fair-queue", "delimiter", "local-prefix-match") or (what, rule) in RECV_DECISIONS
        msg = None
        if what in ("unblock", "subscribe") or rule == "rcvhwm":
            pass
        elif inbound and frames:
            msg = self.messages.known(node, list(frames))
        else:
            msg = node.sending
        args: dict[str, Any] = {"type": socket.type}
        far, conn = self._pipe_end(node, pipe)
        if far is not None:
            args["peer"] = far
            if what == "filter" and rule == "slow-joiner" and self._never_subscribed(far):
                rule = "no-subscription"
        if frames:
            body = frames[1] if socket.type == "ROUTER" and what in ("route", "drop") and len(frames) > 1 else frames[0]
            args["msg"] = decisions.shown(body)
        if isinstance(detail, bytes):
            key = "identity" if rule in ("identity-routing", "router-mandatory-off", "sndhwm") else "topic"
            args[key] = decisions.shown(detail)
        elif isinstance(detail, int):
            args["frames" if what in ("strip", "route", "drop") else "depth"] = detail
        hwm = node.spec.rcvhwm if inbound else node.spec.sndhwm
        args["hwm"] = hwm
        if pipe is not None:
            args.setdefault("depth", len(pipe.inq) if inbound else len(pipe.out))
            if rule in ("prefix-match", "subscribe"):
                args["subs"] = decisions.subs(pipe.topics)
        if rule == "local-prefix-match":
            args["subs"] = decisions.subs(socket.subscriptions)
        event: dict[str, Any] = {"kind": "socket", "node": node.spec.name, "what": what,
                                 "text": decisions.text(what, rule, args), "rule": rule}
        if far is not None:
            event["peer"] = far
        if conn is not None:
            event["conn"] = conn
        if msg is not None:
            self.messages.with_id(event, msg)
        if pipe is not None or what == "block":
            event["depth"] = args.get("depth", 0)
            event["hwm"] = hwm
        event["args"] = args
        event["t"] = round(self.state.now(), 6)
        self.state.session.add_event(event)

    def _pipe_end(self, node: RealNode, pipe: Pipe | None) -> tuple[str | None, str | None]:
        """The node at the far end of our peer's pipe, and the session's id of the connection it runs on now."""
        if pipe is None:
            return None, None
        pc_id = node.pipe_conns.get(pipe.id, pipe.id)  # (a bind-side pipe is named after its connection)
        conn = node.conns.get(pc_id)
        far = node.pipes.get(pipe.id)
        if far is None and conn is not None:
            far = next((c["server"] if c["client"] == node.spec.name else c["client"]
                        for c in self.state.conns if c["conn"] == conn), None)
        return far, conn

    def peer_event(self, node: RealNode, event: dict[str, Any]) -> None:
        """Notes the port of each new connection of our peer (its own as a client, the tap's as a server)."""
        what = event.get("what")
        if what not in ("connected", "accepted"):
            return
        if what == "connected" and isinstance(node.side, LabSide):
            pc = node.side.peer.connections.get(str(event.get("conn")))
            if pc is not None and pc.pipe is not None:
                node.pipe_conns[pc.pipe.id] = pc.id
        address = event.get("local" if what == "connected" else "remote") or ""
        port = address.rsplit(":", 1)[-1]
        if port.isdigit():
            node.ports[int(port)] = str(event.get("conn"))
            self.map_ports(node)
