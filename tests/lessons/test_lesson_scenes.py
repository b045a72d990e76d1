"""Every lesson step shows what it showed when this file's record was made: the same elements in the same
order (every key but the time), the same element pointed at, the same highlights, question, writes,
received messages and peer log.

The record (`data/scenes.json`) keeps, per lesson and step, a digest of the scene as the browser gets it
with every `t` left out, and a few readable facts so that a failure says what moved. Times are left out:
they are the simulator's clock, not what a step shows. A change that is meant to change what a lesson
shows records the scenes anew: `.venv/bin/python tests/lessons/test_lesson_scenes.py --write`.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

RECORD = Path(__file__).with_name("data") / "scenes.json"


def _timeless(value: Any) -> Any:
    """`value` without any `t` key, at any depth."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k != "t"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def scene_record(scene) -> dict[str, Any]:
    """What the record keeps of one played step."""
    shown = _timeless({**scene.public(), "answer_fields": scene.answer_fields})
    text = json.dumps(shown, sort_keys=True, separators=(",", ":"), default=str)
    element = scene.events[scene.element] if scene.element is not None else None
    return {
        "digest": hashlib.sha256(text.encode()).hexdigest(),
        "events": len(scene.events),
        "kinds": "".join(ev["kind"][0] for ev in scene.events),
        "element": scene.element,
        "element_kind": element["kind"] if element else None,
        "writes": [(w["dir"], w["length"]) for w in scene.writes],
        "log": [e["text"] for e in scene.log],
        "received": len(scene.received),
    }


def records(played) -> dict[str, list[dict[str, Any]]]:
    return {lesson_id: [json.loads(json.dumps(scene_record(s))) for s in scenes]
            for lesson_id, scenes in sorted(played.items())}


def test_every_step_shows_what_the_record_says(played):
    recorded = json.loads(RECORD.read_text())
    now = records(played)
    assert sorted(now) == sorted(recorded), "lessons came or went: record the scenes anew"
    for lesson_id, steps in recorded.items():
        assert len(now[lesson_id]) == len(steps), f"{lesson_id}: the number of steps changed"
        for number, (want, got) in enumerate(zip(steps, now[lesson_id], strict=True), 1):
            if want["digest"] == got["digest"]:
                continue
            facts = {k: (want[k], got[k]) for k in want if k != "digest" and want[k] != got[k]}
            pytest.fail(f"{lesson_id} step {number} shows something else: {facts or 'keys or values changed'}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: test_lesson_scenes.py --write   (records the scenes the lessons show now)")
    from zmtplab.lessons import load_lessons, play_lesson

    scenes = {lesson_id: play_lesson(lesson) for lesson_id, lesson in load_lessons().items()}
    RECORD.parent.mkdir(exist_ok=True)
    RECORD.write_text(json.dumps(records(scenes), indent=1, sort_keys=True) + "\n")
    print(f"recorded {sum(len(s) for s in scenes.values())} steps of {len(scenes)} lessons in {RECORD}")
