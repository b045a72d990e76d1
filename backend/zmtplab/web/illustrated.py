"""Illustrated pages of what the web app holds: a stored capture's connection (or a range of its
elements), a playground session, a lesson. The page itself is `zmtplab.illustrate`'s, the same one
`zmtplab illustrate` writes; this module only gathers the events."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.responses import Response

from ..eventstore import EventStore, public
from ..i18n import text
from ..illustrate import Document, Section, from_events, from_session, render, reproduce_script
from ..illustrate.document import SourceError
from ..lessons.player import StepScene
from .sessions import Session

# The most elements one page holds: a page is read, printed and mailed, not a capture's whole archive.
PAGE_MOST = 2000

__all__ = ["CSP", "PAGE_MOST", "SourceError", "capture_document", "filename", "lesson_document", "page", "response",
           "session_document"]

# The page is served from our own origin: nothing in it may run, load or be framed (it needs neither).
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"


def page(doc: Document, *, lang: str = "en", script: bool = True) -> str:
    """The page in `lang`, with the script that reproduces its first connection."""
    code = reproduce_script(doc.sections[0], title=doc.title) if script else None
    return render(doc, script=code, lang=lang)


def response(text: str, filename: str) -> Response:
    """The page as a download, under a policy that lets nothing in it run or load."""
    return Response(text, media_type="text/html; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="{filename}"', "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff"})


def filename(name: str, part: str) -> str:
    """A download's file name: the source's name (safe characters only) and the part shown."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name.rsplit(".", 1)[0])[:80] or "zmtplab"
    return f"{stem}-{part}.html"


def capture_document(events: EventStore, *, name: str, conn: str, first: int, last: int | None,
                     connections: list[dict[str, Any]], lang: str = "en") -> Document:
    """One connection of a stored capture, elements `first` to `last` (indexes, inclusive), with fields."""
    limit = PAGE_MOST if last is None else max(1, min(last - first + 1, PAGE_MOST))
    found = events.listing(conn, first, limit)
    events.fields_of(found.events)
    listed = [public(ev, None) for ev in found.events]
    ends = {c["conn"]: (str(c.get("client", "client")), str(c.get("server", "server"))) for c in connections}
    return from_events(listed, title=text("illustrate.capture_title", lang, name=name, conn=conn),
                       source=("illustrate.source.capture", {"name": name}), endpoints=ends, max_elements=PAGE_MOST)


def session_document(session: Session, lang: str = "en") -> Document:
    """A playground session as its export shows it."""
    name = text("illustrate.session_title", lang, id=session.id[:8])
    return from_session(json.loads(session.export_json()), name=name)


def lesson_document(lesson_id: str, title: str, scenes: list[StepScene], *, lang: str = "en",
                    step_titles: list[str] | None = None) -> Document:
    """A lesson: each of its sources as it stands after the last step that shows it, with that step named
    (`step_titles`: the steps' titles in `lang`, else the scenes' own)."""
    last: dict[str, StepScene] = {}
    for scene in scenes:
        last[json.dumps(scene.source, sort_keys=True, default=str)] = scene
    sections: list[Section] = []
    for scene in last.values():
        ends = {str(c["conn"]): (str(c["client"]), str(c["server"]))
                for c in (scene.topology or {}).get("conns", []) if {"conn", "client", "server"} <= c.keys()}
        doc = from_events(scene.events, title=title, source="", endpoints=ends, max_elements=PAGE_MOST)
        step_title = step_titles[scene.number - 1] if step_titles else scene.title
        for section in doc.sections:
            section.caption = text("illustrate.caption.step", lang, number=scene.number, title=step_title)
            sections.append(section)
    return Document(title, ("illustrate.source.lesson", {"id": lesson_id}), sections)
