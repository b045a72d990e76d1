"""The whole capture at once: its topology, message flows across connections, and a diagnosis.

Pure functions over the events (`zmtplab dissect`'s, without fields), usable from the CLI, the web
app and Spark alike: an `Analyzer` takes what `CaptureDissector.feed_runs()` gives, in capture order,
and `finish()` returns one dict:

* `nodes`: `ip:port` endpoints, grouped where flows show one process forwarding (a broker candidate) and
  where one socket listens on the loopback's IPv4 and IPv6 addresses;
* `connections`: per TCP connection its endpoints, socket types, identities, versions, mechanism,
  message counts per direction (CURVE: MESSAGE boxes, also as `encrypted`), subscriptions, whether the
  socket pair is valid (23/ZMTP), and when it was connected, handshaken and closed, by whom and how;
* `refused`: connects a server refused (SYN answered by RST), per endpoint;
* `flows`: application messages followed through a broker, proxy or forwarder hop (`flows.py`);
* `findings`: the diagnosis (`findings.py`), each with a rule id, severity, connections, the events it
  cites, a plain-language text, the spec or issue behind it and its numbers as `details`;
* `curve`: per CURVE connection what its HELLO and WELCOME said, when the server's secret key was given;
  `curve_handshakes`: those HELLO and WELCOME commands as on the wire, for `check_curve` with a key given later;
* `script`, when asked for: who sent which message when (`script.py`), the first N of the capture.

Where the analysis judges what a socket should have done (routing by identity, subscription filtering, round
robin) it runs the simulator's own socket rules (`peers.sockets`). `analyze_capture()` runs the dissection and the
analysis over one capture file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, BinaryIO

from ..capture.dissect import CaptureDissector, ConnectionInfo, DissectResult, SourcedRun, dissect_capture_runs
from .facts import Collector, ConnFacts, Endpoints
from .findings import Context, Publications, Sends, check_curve, curve_handshakes, diagnose
from .flows import RelayLog
from .script import MAX_BODY, Script
from .topology import connection_row, nodes, refused, refused_groups

__all__ = ["Analyzer", "analyze_capture", "analyze_with_facts", "check_curve"]


class Analyzer:
    """One capture's analysis, fed event by event; `endpoints(conn)` gives a connection's (client, server)."""

    def __init__(self, endpoints: Endpoints, *, curve_secrets: list[bytes] | None = None,
                 flow_window: float = 1.0, script: int = 0, script_body: int = MAX_BODY) -> None:
        self.relays = RelayLog(window=flow_window)
        self.publications = Publications()
        self.sends = Sends()
        self.script = Script(script, script_body) if script > 0 else None
        handlers = [self.relays, self.publications, *([self.script] if self.script is not None else [])]
        self.collector = Collector(endpoints, on_message=handlers,
                                   on_subscription=[self.publications.subscribed], on_count=[self.sends],
                                   on_ready=[self.relays.sockets_seen])
        self.curve_secrets = list(curve_secrets or [])

    def add(self, item: dict[str, Any] | SourcedRun) -> None:
        """Takes one item of `CaptureDissector.feed_runs()` (an event dict without fields, or a run)."""
        self.collector.add(item)

    def finish(self, infos: list[ConnectionInfo]) -> dict[str, Any]:
        """The analysis, once every event was added; `infos` are the capture's TCP connections."""
        facts = self.collector.conns
        connections = [connection_row(info, facts.get(info.conn)) for info in infos
                       if (info.zmtp or info.conn in facts) and not refused(info)]
        flows, total = self.relays.flows()
        ctx = Context(facts, {i.conn: i for i in infos}, self.publications, self.sends, self.curve_secrets)
        findings = diagnose(ctx)
        self.curve_secrets.clear()  # never kept beyond the analysis
        extra = {"script": self.script.entries} if self.script is not None else {}
        return {
            "nodes": nodes(connections, flows),
            "connections": connections,
            "refused": refused_groups(infos),
            "flows": flows,
            "flows_total": total,
            "flows_partial": self.relays.partial,
            "findings": findings,
            "curve": ctx.curve,
            "curve_handshakes": curve_handshakes(ctx),
            "tcp_connections": len(infos),
            **extra,
        }


def analyze_capture(source: str | bytes | BinaryIO, *, curve_secrets: list[bytes] | None = None,
                    result: DissectResult | None = None, script: int = 0) -> dict[str, Any]:
    """Dissects a capture file and analyses it (`Analyzer`). Raises like `dissect_capture()`."""
    return analyze_with_facts(source, curve_secrets=curve_secrets, result=result, script=script)[0]


def analyze_with_facts(source: str | bytes | BinaryIO, *, curve_secrets: list[bytes] | None = None,
                       result: DissectResult | None = None, script: int = 0,
                       script_body: int = MAX_BODY, curve_keys: Mapping[bytes, bytes] | None = None
                       ) -> tuple[dict[str, Any], dict[str, ConnFacts]]:
    """`analyze_capture`, and beside it each connection's `ConnFacts` (its PINGs and PONGs among them): what a
    replay of the capture reads besides the analysis; `script_body`, how many octets of each frame the script
    keeps; `curve_keys`, a CURVE key log (`engine.curve.parse_keylog`): the connections it opens show their
    socket types, and their messages are in the script."""
    dissector = CaptureDissector(with_fields=False, runs=True, curve_keys=curve_keys)

    def endpoints(conn: str) -> tuple[tuple[str, int], tuple[str, int]] | None:
        info = dissector.info(conn)
        return (info.client, info.server) if info is not None else None

    analyzer = Analyzer(endpoints, curve_secrets=curve_secrets, script=script, script_body=script_body)
    result = result if result is not None else DissectResult()
    for item in dissect_capture_runs(source, dissector=dissector, result=result):
        analyzer.add(item)
    return analyzer.finish(result.connections), analyzer.collector.conns
