"""`SessionSetup`: what a session runs, as its runtimes take it: always a topology (`peers.topology.Topology`).

The web app makes it from the request at the edge, once (`web.models.SessionCreate.setup`): a two-peer body becomes
the topology of nodes `server` and `client` and one link (`peers.topology.two_peer`), marked `two_peer` so that it
runs, streams and exports exactly as the two-peer body always has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..peers.topology import Topology

Mode = Literal["simulated", "tcp"]


@dataclass(frozen=True)
class SessionSetup:
    """A session's mode (simulated or real TCP), topology, and how it was asked for.

    `two_peer`: the topology is the two-peer body's, whose configuration as given (`request`: the body's JSON,
    without unset keys) is what its export shows. `preset`: the preset a topology came from. `autoplay`: it plays
    at once (else it waits at t = 0 for play or step). `origin`: the app's address as the request named it, where
    an external node's `zws` URL points (and whose host its `endpoint` names when the lab listens on every
    interface)."""

    mode: Mode
    topology: Topology
    two_peer: bool = False
    autoplay: bool = True
    preset: str | None = None
    request: dict[str, Any] = field(default_factory=dict)
    origin: str = ""  # the app's address as the request named it (`http://host:port`): where ZWS URLs point

    def mechanisms(self) -> set[str]:
        """The security mechanisms the session's peers use."""
        return {node.mechanism for node in self.topology.nodes}
