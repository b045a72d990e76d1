"""Real sessions over loopback TCP: nodes that are ours (`peers.tcp.TcpPeer`) or libzmq's (pyzmq), and taps.

`runtime.TcpRuntime` drives one (its module docstring says how); its parts, one job each, import one way:
`plan` (the nodes and links to run) <- `nodes` (real nodes: our peers and libzmq's sockets) <- `state` (what the
parts share) <- `messages` (message ids, followed by body across hops) <- `socket_decisions` (our sockets'
decisions as events) and `external` (external nodes: where their links go, what ends their connections) <- `taps`
(the links: taps, the wire, its faults and dissection) <- `applications` (a
topology's bring-up, applications, proxies and script) <- `runtime` (the commands and the state).
"""

from __future__ import annotations

from .plan import LinkSpec, NodeSpec, Plan
from .runtime import TcpRuntime

__all__ = ["LinkSpec", "NodeSpec", "Plan", "TcpRuntime"]
