"""A playground session as a lesson of one step (issue 32.11): the YAML file a teacher puts in their lessons
directory (`ZMTPLAB_LESSONS_DIR`) and writes the narration of. A topology session's step is its topology and what its
applications sent (and, for nodes that read by hand, read), in order; a two-peer session's is its two peers and the
messages each sent. The file is checked by the lesson loader before it is handed out."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml

from ..illustrate.reproduce import topology_steps
from ..lessons.loader import LessonError, load_lesson_file
from .core.errors import Unprocessable

NARRATION = ("Write here what this step shows, then point `element` at the element to select "
             "(backend/zmtplab/lessons/README.md).")
NODE_KEYS = ("name", "type", "identity", "subscribe", "sndhwm", "rcvhwm", "recv", "echo", "heartbeat_ivl",
             "heartbeat_ttl", "heartbeat_timeout", "x", "y")
PEER_KEYS = ("type", "identity", "version", "mechanism")


def _frame(data: bytes) -> Any:
    """A frame as a lesson writes it: text when it is printable UTF-8, else hex."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": data.hex()}
    return text if text.isprintable() else {"hex": data.hex()}


def lesson_yaml(export: dict[str, Any], *, lesson_id: str) -> str:
    """The lesson file of a session's `export.json` (its config and events); `NotALesson` when it would not load."""
    config = export.get("config") or {}
    events = export.get("events") or []
    topology = config.get("topology")
    if isinstance(topology, dict):
        nodes = [{k: n[k] for k in NODE_KEYS if k in n and n[k] not in (None, "", 1000, "auto", False)}
                 for n in topology.get("nodes", [])]
        for n, full in zip(nodes, topology.get("nodes", []), strict=True):
            n["name"], n["type"] = full["name"], full["type"]  # (always, whatever the filter above left out)
        manual = {n["name"] for n in nodes if n.get("recv") == "manual"}
        identities = {n["name"]: n.get("identity") or n["name"] for n in nodes}
        do: list[Any] = ["run"]
        for step in topology_steps(topology, events):
            if step.what == "recv":
                if step.node in manual:
                    do.append({"recv": {"node": step.node}})
                continue
            frames = ([identities.get(step.to, step.to).encode()] if step.to else []) + step.frames
            do += [{"send": {"from": step.node, "frames": [_frame(f) for f in frames]}}, "run"]
        source: dict[str, Any] = {"topology": {"nodes": nodes, "links": [
            {k: lk[k] for k in ("connect", "bind") if k in lk} for lk in topology.get("links", [])]}}
        if topology.get("proxies"):
            source["topology"]["proxies"] = [{"frontend": p["frontend"], "backend": p["backend"]}
                                             for p in topology["proxies"]]
    else:
        sides = {side: {k: v for k, v in (config.get(side) or {}).items() if k in PEER_KEYS and v not in ("", None)}
                 for side in ("server", "client")}
        do = ["run"]
        for e in events:
            if e.get("kind") == "message" and e.get("dir") in ("c2s", "s2c"):
                sender = "client" if e["dir"] == "c2s" else "server"
                do += [{"send": {"from": sender, "frames": [_frame(bytes.fromhex(f)) for f in e.get("frames", [])]}},
                       "run"]
        source = {"session": sides}
    step = {"title": f"Session {str(export.get('id', ''))[:8]}", **source, "do": do, "run": False,
            "narration": NARRATION}
    lesson = {"title": f"My lesson: session {str(export.get('id', ''))[:8]}",
              "summary": "A lesson made from a playground session: write its summary here.",
              "order": 1000, "steps": [step]}
    text = yaml.safe_dump(lesson, sort_keys=False, allow_unicode=True, width=100)
    with tempfile.TemporaryDirectory() as tmp:  # (what a teacher gets loads: checked as the server loads it)
        path = Path(tmp) / f"{lesson_id}.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_lesson_file(path)
        except LessonError as exc:
            raise NotALesson(str(exc)) from exc
    return text


class NotALesson(Unprocessable):
    """A session whose lesson file would not load (the loader's problems, each naming the file and the step)."""


__all__ = ["NotALesson", "lesson_yaml"]
