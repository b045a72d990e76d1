"""What an illustrated page shows: connections (sections), each with its events, from any source.

Sources: a capture file (`from_capture`), a playground session's `export.json` (`from_session`),
or event dicts a caller already has (`from_events`: the web app's capture store, a lesson scene).
Events are the event contract's dicts (docs/architecture.md) with their fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..capture.dissect import DissectResult, dissect_capture
from ..engine.notation import format_address

# Elements drawn with octets; `expert` and `gap` are drawn as notes between them. `message` events
# repeat their frames' bytes: the page leaves them out of the element list (the script uses them).
OCTET_KINDS = frozenset({"greeting", "command", "frame"})
SHOWN_KINDS = OCTET_KINDS | {"expert", "gap"}
DEFAULT_MAX_ELEMENTS = 2000


class SourceError(ValueError):
    """The source cannot be illustrated (not a capture or session export, or nothing to show)."""


@dataclass
class Section:
    """One connection: who talked to whom, and its events in order (every kind)."""

    conn: str
    client: str = "client"
    server: str = "server"
    events: list[dict[str, Any]] = field(default_factory=list)
    caption: str = ""  # where it comes from, when the page has several sources (a lesson's steps)
    cut: int = 0  # elements left out after `max_elements`
    drawn: int = 0  # elements kept that the page draws

    def shown(self) -> list[dict[str, Any]]:
        """The events the page draws, in order."""
        return [e for e in self.events if e.get("kind") in SHOWN_KINDS]

    def context(self, direction: str) -> dict[str, str]:
        """The version and mechanism a direction uses (from its greeting), for finding a rule's spec."""
        for e in self.events:
            if e.get("kind") == "greeting" and e.get("dir") == direction:
                return {"version": str(e.get("version", "")), "mechanism": str(e.get("mechanism", ""))}
        return {}


# Where a page's content came from: an `illustrate.source.*` catalog id and its parameters (a page says it in
# its language), or plain text.
Source = tuple[str, dict[str, Any]] | str


@dataclass
class LessonStep:
    """A lesson's step as its handout tells it: its narration (the safe Markdown tree of `lessons.markdown`), its
    socket decisions in words, its question (prompt and choices) or exercise (task), and, for the answer key, its
    answer and its explanation; a step that opens a topology carries it (nodes, links, proxies) for the diagram."""

    number: int
    title: str
    narration: list[dict[str, Any]]
    decisions: list[str] = field(default_factory=list)
    prompt: str | None = None
    choices: list[str] = field(default_factory=list)
    answer: str | None = None
    explain: list[dict[str, Any]] = field(default_factory=list)
    topology: dict[str, Any] | None = None
    task: list[dict[str, Any]] | None = None  # an exercise's task (its answer and explanation go to the key too)
    nodes: str | None = None  # a topology exercise's nodes, in words


@dataclass
class Document:
    """A page's content: a title, where it came from, and its sections; a lesson's handout has its steps too."""

    title: str
    source: Source
    sections: list[Section]
    lesson: list[LessonStep] = field(default_factory=list)
    # A topology's (a topology session's or lesson's): its nodes, links, proxies and conns, and every event (socket
    # decisions and the applications' reads too): its script builds the whole topology.
    topology: dict[str, Any] | None = None
    topology_events: list[dict[str, Any]] = field(default_factory=list)


def from_events(events: Iterable[Mapping[str, Any]], *, title: str, source: Source,
                endpoints: Mapping[str, tuple[str, str]] | None = None,
                first: int | None = None, last: int | None = None,
                max_elements: int = DEFAULT_MAX_ELEMENTS) -> Document:
    """A document of these events, one section per connection in order of first appearance.

    `first`/`last` keep the events whose position within their connection (the capture viewer's
    `index`) lies in that range, inclusive; `endpoints` names each connection's client and server."""
    sections: dict[str, Section] = {}
    positions: dict[str, int] = {}
    for event in events:
        conn = str(event.get("conn", "0"))
        pos = positions.get(conn, 0)
        positions[conn] = pos + 1
        if (first is not None and pos < first) or (last is not None and pos > last):
            continue
        section = sections.get(conn)
        if section is None:
            client, server = (endpoints or {}).get(conn, ("client", "server"))
            section = sections[conn] = Section(conn, client, server)
        drawn = event.get("kind") in SHOWN_KINDS
        if drawn and section.drawn >= max_elements:
            section.cut += 1
            continue
        section.drawn += drawn
        section.events.append(dict(event))
    if not sections:
        raise SourceError("nothing to illustrate: no ZMTP element in this selection")
    return Document(title, source, list(sections.values()))


def from_capture(path: Path, *, conns: Iterable[str] | None = None, first: int | None = None,
                 last: int | None = None, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Document:
    """A capture file's ZMTP connections (or only `conns`), read by the dissector with every field.

    Raises `capture.errors.CaptureFormatError` for a file that is not a capture."""
    wanted = {str(c) for c in conns} if conns else None
    result = DissectResult()
    with open(path, "rb") as handle:
        events = [e for e in dissect_capture(handle, result=result) if wanted is None or e.get("conn") in wanted]
    endpoints = {info.conn: (format_address(*info.client), format_address(*info.server)) for info in result.connections}
    if wanted and not events:
        raise SourceError(f"no ZMTP connection {', '.join(sorted(wanted))} in {path.name}")
    source = ("illustrate.source.capture", {"name": path.name})
    return from_events(events, title=path.name, source=source, endpoints=endpoints, first=first, last=last,
                       max_elements=max_elements)


# A session's source line, its mode in words of the page's language ("simulated" is ours, not a wire name).
SESSION_SOURCES = {"simulated": "illustrate.source.session_simulated", "tcp": "illustrate.source.session_tcp"}


def from_session(data: Mapping[str, Any], *, name: str = "session", conns: Iterable[str] | None = None,
                 max_elements: int = DEFAULT_MAX_ELEMENTS) -> Document:
    """A playground session's `export.json` (its `config` and `events`)."""
    events = data.get("events")
    if not isinstance(events, list):
        raise SourceError("not a session export: no `events` list")
    wanted = {str(c) for c in conns} if conns else None
    config = data.get("config") or {}
    names = _session_names(config)
    endpoints = {str(e.get("conn")): names for e in events if isinstance(e, dict)}
    kept = [e for e in events if isinstance(e, dict) and e.get("kind") in SHOWN_KINDS | {"message"}
            and (wanted is None or str(e.get("conn")) in wanted)]
    mode = str(data.get("mode", "simulated"))
    source = (SESSION_SOURCES[mode], {}) if mode in SESSION_SOURCES else ("illustrate.source.session", {"mode": mode})
    return from_events(kept, title=name, source=source, endpoints=endpoints, max_elements=max_elements)


def load(path: Path, *, conns: Iterable[str] | None = None, first: int | None = None, last: int | None = None,
         max_elements: int = DEFAULT_MAX_ELEMENTS) -> Document:
    """A capture or a session export, told apart by their first octets."""
    with open(path, "rb") as handle:
        head = handle.read(1).lstrip()
    if head == b"{":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SourceError(f"{path.name}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise SourceError(f"{path.name}: not a session export")
        return from_session(data, name=path.stem, conns=conns, max_elements=max_elements)
    return from_capture(path, conns=conns, first=first, last=last, max_elements=max_elements)




def _session_names(config: Mapping[str, Any]) -> tuple[str, str]:
    """'client (DEALER)', 'server (ROUTER)' from a two-peer session's configuration."""
    def name(side: str) -> str:
        peer = config.get(side) or {}
        kind = peer.get("type") if isinstance(peer, dict) else None
        return f"{side} ({kind})" if kind else side
    return name("client"), name("server")
