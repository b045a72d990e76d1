"""What a real session runs: its nodes (`NodeSpec`: a topology's node and whether it binds), links and script
(`Plan`), from its topology; a two-peer body's plan is nodes server and client and one link."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...peers.topology import Node, Topology


class NodeSpec(Node):
    """A node as a real session runs it (from a topology, or a two-peer body's side): the node spec,
    and whether some link binds it (it is then its mechanism's server). Its kernel buffers (`sndbuf`,
    `rcvbuf`) size the taps of its links too."""

    binds: bool = False

    @classmethod
    def of(cls, node: Node, binds: bool) -> NodeSpec:
        return cls(**dict(node), binds=binds)

    @property
    def every(self) -> float | None:
        """The slow consumer's interval between reads, or None."""
        return None if isinstance(self.recv, str) else float(self.recv)


@dataclass
class LinkSpec:
    """One link: `connect` opens a TCP connection to `bind`, `delay` seconds after the others are up."""

    index: int
    connect: str
    bind: str
    delay: float = 0.0


@dataclass
class Plan:
    """A real session's nodes, links, proxies and script (a two-peer body is nodes server/client, one link)."""

    nodes: list[NodeSpec]
    links: list[LinkSpec]
    proxies: list[tuple[str, str]] = field(default_factory=list)
    script: list[tuple[float, str, list[bytes]]] = field(default_factory=list)  # (at, from, frames)
    topology: bool = False  # False: the two-peer body, run exactly as before topologies

    @classmethod
    def of(cls, topo: Topology, two_peer: bool = False) -> Plan:
        """A topology's plan (`two_peer`: the two-peer body's, nodes server and client and one link)."""
        nodes = [NodeSpec.of(n, topo.binds(n.name)) for n in topo.nodes]
        links = [LinkSpec(i, lk.connect, lk.bind, lk.at) for i, lk in enumerate(topo.links)]
        script = [(s.at, s.sender, list(s.frame_bytes())) for s in topo.script]
        return cls(nodes, links, [(p.frontend, p.backend) for p in topo.proxies], script, topology=not two_peer)
