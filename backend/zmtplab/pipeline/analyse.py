"""The capture-wide analysis (`zmtplab.analysis`) as table rows: one task per capture, no Spark needed to run it.

`analysis_rows((name, cap, paths))` analyses one capture from what the events pass's dissect tasks recorded
of it (`pipeline.feed`: the same items `analyze_capture` would get from dissecting the file again, in
capture order) and yields `("topology", row)` for each of its connections and `("findings", row)` for
each finding, in the order of `schemas.TOPOLOGY_SCHEMA` and `schemas.FINDINGS_SCHEMA` (the job turns
them into the `topology` and `findings` Parquet tables). A capture damaged part-way is analysed up to
the damage, as it is dissected.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from ..analysis import Analyzer
from ..capture.dissect import ConnectionInfo
from .feed import capture_feed


def analysis_rows(item: tuple[str, int, list[str]]) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """("topology" | "findings", row) for one capture, given as (its `capture` name, its index in the plan, the
    feed files that hold its items)."""
    name, cap, paths = item
    items, infos = capture_feed(cap, paths)
    found = analyse(items, infos)
    yield from topology_rows(name, found)
    yield from finding_rows(name, found)


def analyse(items: Iterable[Any], infos: list[ConnectionInfo]) -> dict[str, Any]:
    """The `Analyzer`'s result over a capture's dissected items (in capture order) and its connections."""
    ends = {i.conn: (i.client, i.server) for i in infos}
    analyzer = Analyzer(ends.get)
    for item in items:
        analyzer.add(item)
    return analyzer.finish(infos)


def topology_rows(name: str, found: dict[str, Any]) -> Iterator[tuple[str, tuple[Any, ...]]]:
    node_of = {ep: node for node in found["nodes"] for ep in node["endpoints"]}
    for c in found["connections"]:
        server = node_of.get(c["server"], {})
        versions = sorted(set(c["versions"].values()))
        yield "topology", (
            name, c["conn"], c["client"], c["server"], c["client_type"], c["server_type"],
            node_of.get(c["client"], {}).get("id"), server.get("id"), bool(server.get("broker")), c["valid_pair"],
            c["zmtp"], "/".join(versions) or None, c["mechanism"], c["identities"].get("c2s"),
            c["identities"].get("s2c"), c["messages"]["c2s"], c["messages"]["s2c"], c["first_ts"], c["last_ts"],
        )


def finding_rows(name: str, found: dict[str, Any]) -> Iterator[tuple[str, tuple[Any, ...]]]:
    for f in found["findings"]:
        first = f["events"][0] if f["events"] else {}
        yield "findings", (
            name, f["rule"], f["severity"], f["conns"], f["text"], f["ref"], first.get("conn"), first.get("dir"),
            first.get("offset"), first.get("packets"), json.dumps(f.get("details") or {}, separators=(",", ":")),
        )
