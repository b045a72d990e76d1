"""Pydantic models of every request, response and websocket message of the web API.

Events are the event contract of docs/architecture.md: the models name the required keys and
let the kind-specific ones through (`extra="allow"`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, ValidationError, model_validator

from ..engine.fields import Field as EventField  # (an element's annotated field: the engine's own)
from ..peers.node import MAX_LINKS, MAX_NODES, MAX_PROXIES, MAX_SCRIPT, Node
from ..peers.topology import Topology, TopologyError, preset, two_peer
from ..sessions import SessionConfigError, SessionSetup

Direction = Literal["c2s", "s2c"]
Kind = Literal["greeting", "command", "frame", "message", "expert", "gap"]
SocketType = Literal["REQ", "REP", "DEALER", "ROUTER", "PUB", "XPUB", "SUB", "XSUB", "PUSH", "PULL", "PAIR"]
Version = Literal["3.1", "3.0", "2.0", "1.0"]
MechanismName = Literal["NULL", "PLAIN", "CURVE"]
CaptureState = Literal["uploaded", "dissecting", "done", "error"]


class ErrorResponse(BaseModel):
    """Every error answer: a human-readable `detail` (a list of problems for validation errors)."""

    detail: str | list[Any]


class HealthResponse(BaseModel):
    status: Literal["ok"] = "ok"


# ---------------------------------------------------------------------------- events


class Event(BaseModel):
    """One protocol element (the event contract); kind-specific keys pass through."""

    model_config = ConfigDict(extra="allow")

    conn: str
    dir: Direction
    kind: Kind
    offset: int
    length: int
    fields: list[EventField] | None = None
    index: int | None = Field(None, description="position within its connection (captures)")
    packets: list[int] | None = Field(None, description="capture frames that carried the element (captures)")
    ts: float | None = Field(None, description="capture time in seconds (captures)")
    t: float | None = Field(None, description="session time in seconds (sessions)")
    seq: int | None = Field(None, description="position within the session (sessions)")


# ---------------------------------------------------------------------------- decode


class DecodeRequest(BaseModel):
    """Bytes of one direction as hex (spaces, colons, commas and 0x prefixes allowed)."""

    hex: str = Field(..., examples=["ff00000000000000017f 03 01 4e554c4c"])
    version: Literal["auto", "1.0", "2.0", "3"] = Field(
        "auto", description="auto: 23/ZMTP's detection; 1.0, 2.0 or 3 force that reading (like `zmtplab decode`)")


class DecodeResponse(BaseModel):
    events: list[Event]


# ---------------------------------------------------------------------------- captures


class CaptureCreated(BaseModel):
    id: str


class Progress(BaseModel):
    """One server-sent event of `GET /api/captures/{id}/progress`."""

    state: CaptureState
    percent: float
    detail: str = ""


class DirPair(BaseModel):
    c2s: Any = None
    s2c: Any = None


class ExpertCounts(BaseModel):
    note: int = 0
    warn: int = 0
    error: int = 0


class ConnectionSummary(BaseModel):
    conn: str
    client: str | None
    server: str | None
    versions: DirPair
    mechanism: str | None
    socket_types: DirPair
    identities: DirPair
    messages: DirPair
    bytes: DirPair
    expert: ExpertCounts
    first_ts: float | None
    last_ts: float | None
    events: int = 0
    zmtp: bool = Field(True, description="false: nothing of it could be read as ZMTP; its only events are the "
                                         "`unreadable` expert notes that say why")


class CaptureSummary(BaseModel):
    id: str
    name: str
    size: int
    created: float
    state: CaptureState
    error: str | None
    percent: float
    connections: list[ConnectionSummary]
    expert_total: ExpertCounts
    events: int


class CurveCheck(BaseModel):
    """The CURVE server's long-term secret key(s), each 40 Z85 characters or 64 hex digits: used for this request
    only, never stored or logged."""

    secrets: list[Annotated[str, StringConstraints(max_length=128)]] = Field(..., min_length=1, max_length=8)


class EventPage(BaseModel):
    events: list[Event]
    total: int
    searched: int | None = Field(None, description="a text search: the elements it looked at")
    elements: int | None = Field(None, description="a text search: the elements a complete search looks at")
    partial: bool | None = Field(None, description="a text search the time limit stopped: `total` counts the "
                                                   "matches in the `searched` elements; `more=1` searches on")


class PacketField(BaseModel):
    name: str
    value: str
    field: str = Field(..., description="tshark's field name, e.g. tcp.seq")


class PacketLayer(BaseModel):
    name: Literal["frame", "eth", "sll", "ip", "ipv6", "tcp"]
    fields: list[PacketField]


class PacketResponse(BaseModel):
    number: int
    layers: list[PacketLayer]


# ---------------------------------------------------------------------------- sessions

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
    """Either two peers (`server`, `client`), a topology (`nodes`, `links`, optional `proxies` and `script`; see
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
        return two_peer(self.server.node("server"), self.client.node("client"))

    def setup(self) -> SessionSetup:
        """What the session runs (`sessions.SessionSetup`): the two-peer body turned into its topology here, once;
        `SessionConfigError` (422) for a pair no topology can hold."""
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


# ---------------------------------------------------------------------------- live sources

Port = Annotated[int, Field(strict=True, ge=1, le=65535)]
PortOrAny = Annotated[int, Field(strict=True, ge=0, le=65535, description="0: any free port")]
LiveState = Literal["starting", "capturing", "stopped", "error"]


class LiveInterfaces(BaseModel):
    interfaces: list[str]


class LiveCaptureCreate(BaseModel):
    """Capture `tcp port PORT` on an interface of the server (tshark; needs capture privileges)."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["capture"]
    interface: str = Field(..., min_length=1, max_length=64, examples=["lo"])
    port: Port = Field(..., examples=[5555])


class LiveTapCreate(BaseModel):
    """A forwarding proxy on the server: point clients at `listen`; it connects them to `target`."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["tap"]
    target: str = Field(..., min_length=1, max_length=300, examples=["127.0.0.1:5555"])
    listen_port: PortOrAny = 0


LiveCreate = Annotated[LiveCaptureCreate | LiveTapCreate, Field(discriminator="source")]


class LiveCreated(BaseModel):
    id: str
    state: LiveState
    listen: str | None = Field(None, description="where the tap listens (host:port); tap sources only")


class LiveStatus(BaseModel):
    """`GET /api/live/{id}`, and the websocket's `status` message."""

    type: Literal["status"] = "status"
    state: LiveState
    detail: str
    packets: int | None = Field(None, description="packets tshark captured (capture sources)")
    events: int
    connections: int
    dropped: int = Field(..., description="events lost: the server or this websocket fell behind")
    source: dict[str, Any]


class WsLiveConnection(BaseModel):
    """A new TCP connection of a live source."""

    type: Literal["connection"] = "connection"
    conn: str
    client: str
    server: str
