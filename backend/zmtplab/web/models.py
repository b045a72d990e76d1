"""The models of the session routes and the session websocket (requests, answers, messages both ways).

Events are the event contract of docs/architecture.md (`core.models.Event`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, ValidationError, model_validator

from ..peers.node import MAX_LINKS, MAX_NODES, MAX_PROXIES, MAX_SCRIPT, Node
from ..peers.topology import Topology, TopologyError, preset, two_peer
from ..sessions import SessionConfigError, SessionSetup
from .core.models import Event

SocketType = Literal["REQ", "REP", "DEALER", "ROUTER", "PUB", "XPUB", "SUB", "XSUB", "PUSH", "PULL", "PAIR"]
Version = Literal["3.1", "3.0", "2.0", "1.0"]
MechanismName = Literal["NULL", "PLAIN", "CURVE"]

Short = Annotated[str, StringConstraints(max_length=255)]


class PeerConfig(BaseModel):
    """One side of a session."""

    model_config = ConfigDict(extra="forbid")

    type: SocketType = "PAIR"
    version: Version = "3.1"
    mechanism: MechanismName = "NULL"
    identity: Short = ""
    username: Short = ""
    password: Short = ""
    libzmq: bool = Field(False, description="a real libzmq socket (pyzmq) plays this side; tcp mode only")
    greeting: Literal["libzmq", "full"] = Field(
        "libzmq", description="how our peer writes its 3.x greeting: `libzmq` (10 + 1 + 53 octets, the signature's "
        "padding = identity length + 1, so a 1.0 peer reads it as a frame header) or `full` (the 64 octets at "
        "once, padding zeros: 23/ZMTP's full-greeting strategy)")
    subscribe: Short | None = Field("", description="a SUB's subscription: a topic prefix (empty: the empty prefix, "
                                    "every message); null: none, so it receives nothing, as a libzmq SUB that "
                                    "never subscribed")

    def node(self, name: str) -> Node:
        """This side as the node spec, named `name` (`ValueError` for what no node may be, such as PLAIN on
        ZMTP 2.0; the runtimes' checks say it first, naming the side)."""
        return Node.model_validate({**self.model_dump(), "name": name})


class SessionCreate(BaseModel):
    """Either two peers (`server`, `client`), a topology (`nodes`, `links`, optional `proxies`, `script` and
    `subscriptions`; see
    `peers.topology`), or a preset (`preset`: an id of `GET /api/sessions/presets`)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["simulated", "tcp"] = "simulated"
    server: PeerConfig | None = None
    client: PeerConfig | None = None
    nodes: list[Node] | None = Field(None, max_length=MAX_NODES, description="a topology's nodes: name, type and "
                                     "the options of peers.node.Node")
    links: list[dict[str, Any]] | None = Field(None, max_length=MAX_LINKS, description="a topology's links: "
                                               "{connect, bind, at}")
    proxies: list[dict[str, Any]] | None = Field(None, max_length=MAX_PROXIES, description="zmq_proxy steps: "
                                                 "{frontend, backend}")
    script: list[dict[str, Any]] | None = Field(None, max_length=MAX_SCRIPT, description="sends played with the "
                                                "session: {from, frames, at}")
    subscriptions: list[dict[str, Any]] | None = Field(None, max_length=MAX_SCRIPT, description="subscriptions "
                                                       "a SUB or XSUB makes later: {node, topic, at, cancel}")
    preset: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="a preset's id (GET /api/sessions/presets)")
    autoplay: bool = Field(True, description="play at once; false: the session waits at t=0 for play or step")
    _topology: Topology | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _one_shape(self) -> SessionCreate:
        topo_keys = [k for k in ("nodes", "links", "proxies", "script", "subscriptions")
                     if getattr(self, k) is not None]
        shapes = [name for name, given in (("server/client", self.server is not None or self.client is not None),
                                           ("nodes/links", bool(topo_keys)), ("preset", self.preset is not None))
                  if given]
        if len(shapes) != 1:
            raise ValueError("give either 'server' and 'client', or 'nodes' and 'links', or 'preset'"
                             + (f" (not {' and '.join(shapes)})" if shapes else ""))
        if shapes[0] == "server/client":
            if self.server is None or self.client is None:
                raise ValueError("a two-peer session needs both 'server' and 'client'")
        elif shapes[0] == "preset":
            self._topology = preset(self.preset or "").topology
        else:
            self._topology = Topology.from_dict({k: getattr(self, k) for k in topo_keys})
        return self

    @property
    def topology(self) -> Topology | None:
        """The topology of a `nodes`/`links` or `preset` body (checked); None for the two-peer body."""
        return self._topology

    def setup(self) -> SessionSetup:
        """What the session runs (`sessions.SessionSetup`): the two-peer body turned into its topology here, once
        (nodes `server` and `client` and one link); `SessionConfigError` (422), naming the side, for a peer no node
        may be or a pair no topology can hold."""
        if self._topology is not None:
            return SessionSetup(self.mode, self._topology, autoplay=self.autoplay, preset=self.preset)
        assert self.server is not None and self.client is not None
        nodes = []
        for side, peer in (("server", self.server), ("client", self.client)):
            try:
                nodes.append(peer.node(side))
            except ValidationError as exc:  # (what no node may be, e.g. PLAIN on ZMTP 2.0: named by its side)
                raise SessionConfigError(f"{side}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
        try:
            topology = two_peer(*nodes)
        except TopologyError as exc:  # (named as the two-peer body names its sides: "server: ...")
            raise SessionConfigError(re.sub(r"^node '(server|client)'", r"\1", str(exc))) from None
        return SessionSetup(self.mode, topology, two_peer=True, autoplay=self.autoplay,
                            request=self.model_dump(by_alias=True, exclude_none=True))


class SessionPreset(BaseModel):
    id: str
    title: str
    description: str
    topology: dict[str, Any]
    script: list[dict[str, Any]]


class SessionPresets(BaseModel):
    presets: list[SessionPreset]


class SessionCreated(BaseModel):
    id: str


class SessionFaultInfo(BaseModel):
    fault: str = Field(description="the name a `fault` command gives")
    modes: list[Literal["simulated", "tcp"]] = Field(description="the session modes that can inject it")


class SessionFaults(BaseModel):
    faults: list[SessionFaultInfo]


# ---- websocket: server -> browser


class WsEvent(BaseModel):
    type: Literal["event"] = "event"
    event: Event


class WsState(BaseModel):
    type: Literal["state"] = "state"
    playing: bool
    speed: float
    position: int
    total: int
    closed: bool
    mode: Literal["simulated", "tcp"] = "simulated"


class WsError(BaseModel):
    type: Literal["error"] = "error"
    detail: str


class WsReset(BaseModel):
    type: Literal["reset"] = "reset"


class WsLog(BaseModel):
    """What else happened in a simulated session: bytes delivered, handshakes, messages received, faults."""

    type: Literal["log"] = "log"
    entry: dict[str, Any]


# ---- websocket: browser -> server


# The commands are the session's own: `sessions.commands` (`Command`, one class each).
