"""Illustrated pages of what the web app holds: a stored capture's connection (or a range of its
elements), a playground session, a lesson. The page itself is `zmtplab.illustrate`'s, the same one
`zmtplab illustrate` writes; this module only gathers the events."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.responses import Response

from ..engine.fields import text_or_hex
from ..eventstore import EventStore, public
from ..i18n import text, translate
from ..illustrate import Document, Section, from_events, from_session, render, reproduce_script, topology_script
from ..illustrate.document import LessonStep, SourceError
from ..lessons import markdown
from ..lessons.loader import ExerciseCheck, Lesson
from ..lessons.player import StepScene
from ..sessions import Session

# The most elements one page holds: a page is read, printed and mailed, not a capture's whole archive.
PAGE_MOST = 2000

__all__ = ["CSP", "PAGE_MOST", "SourceError", "capture_document", "filename", "lesson_document", "page", "response",
           "script_of", "script_response", "session_document"]

# The page is served from our own origin: nothing in it may run, load or be framed (it needs neither).
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"


def page(doc: Document, *, lang: str = "en", script: bool = True) -> str:
    """The page in `lang`, with the script that reproduces it (see `script`)."""
    return render(doc, script=script_of(doc) if script else None, lang=lang)


def script_of(doc: Document) -> str:
    """The pyzmq script of a page: a topology's builds the whole topology (its proxies too), any other reproduces
    the first connection (what `zmtplab illustrate` writes beside its page)."""
    if doc.topology is not None:
        return topology_script(doc.topology, doc.topology_events, title=doc.title)
    return reproduce_script(doc.sections[0], title=doc.title)


def script_response(code: str, filename: str) -> Response:
    """A page's script as a download (the `.py` the command line writes beside the page)."""
    return Response(code, media_type="text/x-python; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="{filename}"', "X-Content-Type-Options": "nosniff"})


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
    """A playground session as its export shows it (a topology's with its topology: its script builds it)."""
    name = text("illustrate.session_title", lang, id=session.id[:8])
    data = json.loads(session.export_json())
    doc = from_session(data, name=name)
    topology = (data.get("config") or {}).get("topology")
    if isinstance(topology, dict):
        doc.topology, doc.topology_events = topology, data["events"]
    return doc


def _check_words(check: ExerciseCheck, lang: str) -> str:
    """What a topology exercise's check wants, in words (its answer key)."""
    def shown(messages: list[list[Any]]) -> str:
        return ", ".join(" | ".join(text_or_hex(f.to_bytes()) for f in m) for m in messages)

    wants = [text("illustrate.check.inbox", lang, name=name, messages=shown(messages)) if messages
             else text("illustrate.check.nothing", lang, name=name) for name, messages in check.inbox.items()]
    wants += [text("illustrate.check.received", lang, name=name, count=count) for name, count in check.received.items()
              if name not in check.inbox]
    if check.dropped is not None:
        wants.append(text("illustrate.check.dropped", lang, count=check.dropped) if check.dropped
                     else text("illustrate.check.none_dropped", lang))
    return text("illustrate.check.separator", lang).join(wants)


def _field_words(name: str, lang: str) -> str:
    """A field's name in an answer: the engine's (a wire or ABNF name, the same in every language), but a
    message's "frame N", which is ours, in `lang`."""
    frame = re.fullmatch(r"frame (\d+)", name)
    return text("illustrate.answer_frame", lang, n=int(frame[1])) if frame else name


def lesson_steps(lesson: Lesson, scenes: list[StepScene], lang: str = "en") -> list[LessonStep]:
    """A lesson's steps for its handout (`lesson`: in `lang`): narrations, the socket decisions each points at in
    words, questions with their choices, answers and explanations, and the topology a step opens."""
    out = []
    for step, scene in zip(lesson.steps, scenes, strict=True):
        q = step.question
        item = LessonStep(number=scene.number, title=step.title, narration=markdown.parse(step.narration),
                          decisions=[translate(str(scene.events[i].get("text", "")), lang) for i in scene.decisions],
                          topology=scene.topology if step.topology is not None else None)
        if q is not None:
            item.prompt, item.choices = q.prompt, list(q.choices or [])
            item.answer = (q.answer.choice if q.answer.choice is not None else _field_words(q.answer.field, lang)
                           if q.answer.field is not None else text("illustrate.answer_offset", lang, n=q.answer.byte))
            item.explain = markdown.parse(q.explain) if q.explain else []
        e = step.exercise
        if e is not None:
            item.task = markdown.parse(e.task)
            item.explain = markdown.parse(e.explain) if e.explain else []
            if e.accept is not None:
                item.answer = ", ".join(e.accept)
            elif e.check is not None:
                item.nodes = text("illustrate.exercise_nodes", lang,
                                  nodes=", ".join(f"{name} ({kind})" for name, kind in e.check.nodes.items()))
                item.answer = _check_words(e.check, lang)
        out.append(item)
    return out


def lesson_document(lesson_id: str, title: str, scenes: list[StepScene], *, lang: str = "en",
                    steps: list[LessonStep] | None = None) -> Document:
    """A lesson's handout: its steps as the teacher told them (`steps`: narration, decisions, questions and the
    answer key, in `lang`), then each of its sources as it stands after the last step that shows it, each
    connection captioned with the steps that point at it; a topology lesson's script builds its topology."""
    last: dict[str, StepScene] = {}
    shown: dict[tuple[str, str], list[int]] = {}  # (source, conn) -> the steps whose element or decisions are on it
    for scene in scenes:
        key = json.dumps(scene.source, sort_keys=True, default=str)
        last[key] = scene
        pointed = [scene.element] if scene.element is not None else []
        for i in pointed + list(scene.decisions):
            conn = scene.events[i].get("conn") if 0 <= i < len(scene.events) else None
            if conn is not None and scene.number not in shown.setdefault((key, str(conn)), []):
                shown[(key, str(conn))].append(scene.number)
    sections: list[Section] = []
    topology: StepScene | None = None
    for key, scene in last.items():
        if scene.topology is not None:
            topology = scene
        ends = {str(c["conn"]): (str(c["client"]), str(c["server"]))
                for c in (scene.topology or {}).get("conns", []) if {"conn", "client", "server"} <= c.keys()}
        doc = from_events(scene.events, title=title, source="", endpoints=ends, max_elements=PAGE_MOST)
        for section in doc.sections:
            numbers = shown.get((key, section.conn))
            if numbers:
                section.caption = text("illustrate.caption.steps", lang, steps=", ".join(map(str, numbers)))
            sections.append(section)
    doc = Document(title, ("illustrate.source.lesson", {"id": lesson_id}), sections, lesson=steps or [])
    if topology is not None and topology.topology is not None:
        doc.topology, doc.topology_events = topology.topology, topology.events
    return doc
