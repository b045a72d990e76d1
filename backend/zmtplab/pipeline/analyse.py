"""The capture-wide analysis (`zmtplab.analysis`) as table rows: one task per capture, no Spark needed to run it.

`analysis_rows(name, path)` analyses one capture file and yields `("topology", row)` for each of its
connections and `("findings", row)` for each finding, in the order of `schemas.TOPOLOGY_SCHEMA` and
`schemas.FINDINGS_SCHEMA` (the job turns them into the `topology` and `findings` Parquet tables). A
capture damaged part-way is analysed up to the damage, as it is dissected; one that cannot be
read at all yields nothing (the `errors` table already names it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..analysis import analyze_capture
from ..capture.dissect import DissectResult
from ..capture.errors import CaptureFormatError


def analysis_rows(item: tuple[str, str]) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """("topology" | "findings", row) for one capture, given as (its `capture` name, its path)."""
    name, path = item
    try:
        found = analyze_capture(path, result=DissectResult())
    except (CaptureFormatError, OSError):
        return
    yield from topology_rows(name, found)
    yield from finding_rows(name, found)


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
            first.get("offset"), first.get("packets"),
        )
