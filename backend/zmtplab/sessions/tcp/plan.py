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
    serves: bool = False  # it listens for an external node's programs (whichever end of the link binds)

    @classmethod
    def of(cls, node: Node, binds: bool, serves: bool = False) -> NodeSpec:
        return cls(**dict(node), binds=binds, serves=serves)

    @property
    def listens(self) -> bool:
        """A lab node with a port of its own: it binds, or external programs connect to it."""
        return (self.binds or self.serves) and not self.external

    @property
    def every(self) -> float | None:
        """The slow consumer's interval between reads, or None."""
        return None if isinstance(self.recv, str) else float(self.recv)


@dataclass
class LinkSpec:
    """One link: `connect` opens a TCP connection to `bind`, `delay` seconds after the others are up. A link with
    an external node (`external`, its name) is a TCP connection the other way when the lab listens for it: the
    external program connects (`client`), the lab's node accepts (`server`); the lab's node connects out when
    the external node has an `endpoint` (`outbound`)."""

    index: int
    connect: str
    bind: str
    delay: float = 0.0
    external: str | None = None
    outbound: bool = False

    @property
    def lab(self) -> str:
        """The lab's end of a link with an external node (else its bound end)."""
        return self.connect if self.external == self.bind else self.bind

    @property
    def client(self) -> str:
        """The node whose side opens the TCP connection (`c2s` is what it writes)."""
        if self.external is None:
            return self.connect
        return self.lab if self.outbound else self.external

    @property
    def server(self) -> str:
        """The node whose side accepts the TCP connection."""
        return self.bind if self.client == self.connect else self.connect


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
        external = {n.name: n for n in topo.nodes if n.external}
        links = []
        for i, lk in enumerate(topo.links):
            ext = next((external[end] for end in (lk.connect, lk.bind) if end in external), None)
            links.append(LinkSpec(i, lk.connect, lk.bind, lk.at, ext.name if ext else None,
                                  bool(ext and ext.endpoint)))
        serving = {lk.lab for lk in links if lk.external and not lk.outbound}
        nodes = [NodeSpec.of(n, topo.binds(n.name), n.name in serving) for n in topo.nodes]
        script = [(s.at, s.sender, list(s.frame_bytes())) for s in topo.script]
        return cls(nodes, links, [(p.frontend, p.backend) for p in topo.proxies], script, topology=not two_peer)
