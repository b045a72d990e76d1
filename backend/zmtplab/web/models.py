"""The models of the session routes and the session websocket (requests, answers, messages both ways).

Events are the event contract of docs/architecture.md (`core.models.Event`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, model_validator

from ..peers.topology import MAX_LINKS, MAX_NODES, Topology, preset, two_peer
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


class SessionCreate(BaseModel):
    """Either two peers (`server`, `client`), a topology (`nodes`, `links`, optional `proxies` and `script`; see
    `peers.topology`), or a preset (`preset`: an id of `GET /api/sessions/presets`)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["simulated", "tcp"] = "simulated"
    server: PeerConfig | None = None
    client: PeerConfig | None = None
    nodes: list[dict[str, Any]] | None = Field(None, max_length=MAX_NODES, description="a topology's nodes: name, "
                                               "type and the options of peers.topology.Node")
    links: list[dict[str, Any]] | None = Field(None, max_length=MAX_LINKS, description="a topology's links: "
                                               "{connect, bind, at}")
    proxies: list[dict[str, Any]] | None = Field(None, max_length=64, description="zmq_proxy steps: "
                                                 "{frontend, backend}")
    script: list[dict[str, Any]] | None = Field(None, max_length=1024, description="sends played with the "
                                                "session: {from, frames, at}")
    preset: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="a preset's id (GET /api/sessions/presets)")
    autoplay: bool = Field(True, description="play at once; false: the session waits at t=0 for play or step")
    _topology: Topology | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _one_shape(self) -> SessionCreate:
        topo_keys = [k for k in ("nodes", "links", "proxies", "script") if getattr(self, k) is not None]
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

    def as_topology(self) -> Topology:
        """The session as a topology: the two-peer body is nodes `server` and `client` and one link."""
        if self._topology is not None:
            return self._topology
        assert self.server is not None and self.client is not None
        return two_peer(self.server.model_dump(), self.client.model_dump())

    def mechanisms(self) -> set[str]:
        """The security mechanisms the session's peers use."""
        if self._topology is None and self.server is not None and self.client is not None:
            return {self.server.mechanism, self.client.mechanism}
        return {node.mechanism for node in self.as_topology().nodes}


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


class _Command(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SendCommand(_Command):
    """Send one message from one node (`server` or `client` in a two-peer session): frames as text (UTF-8) or,
    with `hex`, as hex."""

    type: Literal["send"]
    from_: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,32}$")] = Field(..., alias="from")
    frames: list[str] = Field(..., min_length=1)
    hex: bool = False


class RecvCommand(_Command):
    """The application of a topology node whose `recv` is "manual" reads one message (a `peer recv` event);
    an error when none is waiting."""

    type: Literal["recv"]
    node: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,32}$")]


class PlayCommand(_Command):
    type: Literal["play"]


class PauseCommand(_Command):
    type: Literal["pause"]


class StepCommand(_Command):
    type: Literal["step"]


class StepBackCommand(_Command):
    type: Literal["step_back"]


class SpeedCommand(_Command):
    type: Literal["speed"]
    value: float = Field(..., gt=0, le=1000)


class ResetCommand(_Command):
    type: Literal["reset"]


class FaultCommand(_Command):
    type: Literal["fault"]
    fault: str = Field(..., max_length=64)
    args: dict[str, Any] = Field(default_factory=dict)


WsCommand = Annotated[
    SendCommand | PlayCommand | PauseCommand | StepCommand | StepBackCommand | SpeedCommand | ResetCommand
    | FaultCommand | RecvCommand,
    Field(discriminator="type"),
]
