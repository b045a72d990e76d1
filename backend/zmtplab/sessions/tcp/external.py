"""External nodes of a real topology session: programs outside the lab that are a node of it.

The lab runs no socket for an external node. For its one link, the session listens on an endpoint of its own (the
link's tap, on `session_external_host`, an ephemeral port) and whatever connects there is that node (any ZMTP
1.0-3.1 implementation), up to its `max_connections` at once; its bytes go to the lab's end of the link, which
listens for them whichever end the topology binds (`NodeSpec.serves`). The app bridges a ZWS 2.0 peer in too
(`web.zws_bridge`): a second tap of the link, without a listener, takes each bridged connection to the lab node's
`ws://` listener (ours only: libzmq's wheel has no ws://). With an `endpoint`, the lab connects out instead: its
node connects through the link's tap, which forwards to that address (allowed hosts only: `live_tap_targets`).

Each of these connections is dissected as every link's, and held to more: an element the dissector calls an error,
or one over `session_external_max_held`, from the program's side ends it, as does a handshake not done within
`session_external_handshake_timeout` seconds; its dissection takes at most `session_external_cpu_share` of a core.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ...engine.notation import parse_endpoint
from ..limits import SessionLimits
from ..session import SessionConfigError
from .nodes import RealNode
from .plan import LinkSpec

WILDCARDS = frozenset({"", "0.0.0.0", "::"})
ZWS_PATH = "/zws-{session}-{node}"  # the app's route bridging a ZWS peer in as an external node


def target(spec: LinkSpec, nodes: dict[str, RealNode], limits: SessionLimits) -> tuple[str, int]:
    """Where a link's tap forwards: its bound node's port, the lab's end of an external link (which listens), or
    an external node's `endpoint` (`SessionConfigError` when its host is not an allowed one)."""
    if spec.external is None:
        node = nodes[spec.bind]
        return node.host, node.port
    if not spec.outbound:
        node = nodes[spec.lab]
        return node.host, node.port
    endpoint = nodes[spec.external].spec.endpoint
    parsed = parse_endpoint(endpoint, bind=False)
    if not allowed(parsed.host, limits.live_tap_targets):
        raise SessionConfigError(f"node {spec.external!r}: the lab connects to {', '.join(limits.live_tap_targets)} "
                                 "only (setting ZMTPLAB_LIVE_TAP_TARGETS)")
    return parsed.host, parsed.port


def allowed(host: str, hosts: tuple[str, ...]) -> bool:
    """Whether the lab may connect to `host`: one of `hosts` ('*': any), never a wildcard address."""
    try:
        if ipaddress.ip_address(host).is_unspecified:
            return False
    except ValueError:
        pass
    return "*" in hosts or host.lower() in {h.lower() for h in hosts}


def advertised(limits: SessionLimits, origin_host: str) -> str:
    """The host an external endpoint names: the setting, else the listening host, else (listening on every
    interface) the host the page reached the server by."""
    if limits.session_external_advertise:
        return limits.session_external_advertise
    if limits.session_external_host not in WILDCARDS:
        return limits.session_external_host
    return origin_host or "127.0.0.1"


def refusal(spec: LinkSpec, direction: str, pairs: list[tuple[str, Any]]) -> tuple[str | None, str]:
    """Why an external connection must end, from what its program's side just sent (None: it may go on), and the
    last warning of it (the likely reason if the lab's node ends it)."""
    theirs = "c2s" if spec.client == spec.external else "s2c"
    doubt = ""
    if direction != theirs:
        return None, doubt
    for d, event in pairs:
        if d != theirs or event.kind != "expert":
            continue
        if event.severity == "error" or event.rule == "budget":
            return event.text, doubt
        if event.severity == "warn":
            doubt = event.text
    return None, doubt


def endpoints(session_id: str, taps: list[Any], limits: SessionLimits, origin: str) -> dict[str, dict[str, Any]]:
    """Per external node the lab listens for, where its program connects: `endpoint` (`tcp://HOST:PORT`), `zws` (the
    app's URL bridging a ZWS peer in, when the lab's end of its link can take one) and `listens: true`."""
    scheme, _, hostport = origin.partition("://")
    origin_host = hostport.rsplit(":", 1)[0].strip("[]") if hostport else ""
    host = advertised(limits, origin_host)
    shown = f"[{host}]" if ":" in host else host
    out: dict[str, dict[str, Any]] = {}
    for tap in taps:
        name = tap.external
        if name is None:
            continue
        if tap.spec.outbound:
            continue  # (its endpoint is the node's own)
        entry = out.setdefault(name, {})
        if tap.zws:
            if hostport:
                ws = "wss" if scheme == "https" else "ws"
                entry["zws"] = f"{ws}://{hostport}" + ZWS_PATH.format(session=session_id, node=name)
        else:
            entry["endpoint"] = f"tcp://{shown}:{tap.port}"
            entry["listens"] = True
    return out
