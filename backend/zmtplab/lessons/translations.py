"""Lessons in other languages: `zh-CN/greeting.yaml` holds the Chinese texts of lesson `greeting`.

A translation file mirrors its lesson's texts and nothing else (sessions, actions, selectors and
answers stay in the English file, so both languages play the same scene):

```yaml
title: 逐字节读懂问候语
summary: 一句话简介。
steps:                      # as many as the lesson has, in the same order
  - title: 两个对等方打招呼
    narration: |
      Markdown, as in the lesson.
    labels: ["flags %x04"]  # the step's highlight labels, in order (only those the lesson labels)
    question:               # when the step asks one
      prompt: ...
      choices: [...]        # a choice question: the same choices, in the same order
      hint: ...
      explain: ...
    exercise:               # when the step sets one
      task: ...
      accept: [...]         # more answers accepted in this language (a typed answer), beside the lesson's
      hint: ...
      explain: ...
```

`localize_lesson` gives the lesson with these texts in place; `localize_scene` and
`localize_answer` do the same for what the player computed (a step's scene, an answer's check).
A file that does not mirror its lesson is a `LessonError` naming the file and the step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..i18n import DEFAULT, localize_events, text, translate
from . import markdown
from .loader import Lesson, Step, default_lessons_dir
from .problems import LessonError, MissingTranslation, Problem


def translation_path(lesson_id: str, lang: str, directory: Path | None = None) -> Path:
    """Where lesson `lesson_id`'s texts in `lang` live."""
    return (directory or default_lessons_dir()) / lang / f"{lesson_id}.yaml"


@dataclass(frozen=True)
class _Where:
    """Where in a translation file a text is: the file, and the step (from 1, with the lesson's title)."""

    file: str
    step: int | None = None
    title: str | None = None

    def error(self, msg_id: str, key: str = "", **params: Any) -> LessonError:
        return LessonError(Problem(self.file, msg_id, params, step=self.step, title=self.title, key=key))


def _str(value: Any, where: _Where, key: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise where.error("lessons.error.text_needed", key)
    return value


def _localize_step(step: Step, data: Any, where: _Where) -> Step:
    if not isinstance(data, dict):
        raise where.error("lessons.error.step_mapping")
    unknown = set(data) - {"title", "narration", "labels", "question", "exercise"}
    if unknown:
        raise where.error("lessons.error.unknown_keys", keys=str(sorted(unknown)))
    update: dict[str, Any] = {"title": _str(data.get("title"), where, "title"),
                              "narration": _str(data.get("narration"), where, "narration")}
    labelled = [i for i, h in enumerate(step.highlight) if h.label]
    labels = data.get("labels") or []
    if len(labels) != len(labelled):
        raise where.error("lessons.error.labels", count=len(labelled), given=len(labels))
    if labelled:
        highlight = list(step.highlight)
        for i, label in zip(labelled, labels, strict=True):
            highlight[i] = highlight[i].model_copy(update={"label": _str(label, where, "labels")})
        update["highlight"] = highlight
    q, tq = step.question, data.get("question")
    if (q is None) != (tq is None):
        raise where.error("lessons.error.question_one_language")
    if q is not None:
        if not isinstance(tq, dict) or set(tq) - {"prompt", "choices", "hint", "explain"}:
            raise where.error("lessons.error.question_keys")
        qu: dict[str, Any] = {"prompt": _str(tq.get("prompt"), where, "question.prompt")}
        for key, english in (("hint", q.hint), ("explain", q.explain)):
            if (english is None) != (tq.get(key) is None):
                raise where.error("lessons.error.question_part_one_language", part=key)
            qu[key] = _str(tq.get(key), where, f"question.{key}", optional=True)
        choices = tq.get("choices")
        if (q.choices is None) != (choices is None) or (choices is not None and len(choices) != len(q.choices or [])):
            raise where.error("lessons.error.choices_differ", count=len(q.choices or []))
        if choices is not None:
            qu["choices"] = [_str(c, where, "question.choices") for c in choices]
            answer = choices[(q.choices or []).index(q.answer.choice)]
            qu["answer"] = q.answer.model_copy(update={"choice": answer})
        update["question"] = q.model_copy(update=qu)
    e, te = step.exercise, data.get("exercise")
    if (e is None) != (te is None):
        raise where.error("lessons.error.exercise_one_language")
    if e is not None:
        if not isinstance(te, dict) or set(te) - {"task", "accept", "hint", "explain"}:
            raise where.error("lessons.error.exercise_keys")
        eu: dict[str, Any] = {"task": _str(te.get("task"), where, "exercise.task")}
        for key, english in (("hint", e.hint), ("explain", e.explain)):
            if (english is None) != (te.get(key) is None):
                raise where.error("lessons.error.exercise_part_one_language", part=key)
            eu[key] = _str(te.get(key), where, f"exercise.{key}", optional=True)
        accept = te.get("accept")
        if accept is not None:
            if e.accept is None or not isinstance(accept, list):
                raise where.error("lessons.error.accept_list")
            eu["accept"] = [*e.accept, *(_str(a, where, "exercise.accept") for a in accept)]
        update["exercise"] = e.model_copy(update=eu)
    return step.model_copy(update=update)


def localize_lesson(lesson: Lesson, lang: str, directory: Path | None = None) -> Lesson:
    """The lesson with its texts in `lang` (the lesson itself for English); `MissingTranslation` when it has no
    file in `lang`, `LessonError` when that file does not mirror the lesson."""
    if lang == DEFAULT:
        return lesson
    path = translation_path(lesson.id, lang, directory)
    where = _Where(f"{lang}/{path.name}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MissingTranslation(Problem(where.file, "lessons.error.no_translation",
                                         {"lesson": repr(lesson.id), "lang": lang})) from None
    except yaml.YAMLError as exc:
        raise where.error("lessons.error.not_yaml", text_error=str(exc)) from None
    if not isinstance(data, dict) or set(data) - {"title", "summary", "steps"}:
        raise where.error("lessons.error.translation_keys")
    steps = data.get("steps")
    if not isinstance(steps, list) or len(steps) != len(lesson.steps):
        raise where.error("lessons.error.step_count", count=len(lesson.steps),
                          given=len(steps) if isinstance(steps, list) else 0)
    localized = [_localize_step(step, tstep, _Where(where.file, n, step.title))
                 for n, (step, tstep) in enumerate(zip(lesson.steps, steps, strict=True), 1)]
    return lesson.model_copy(update={"title": _str(data.get("title"), where, "title"),
                                     "summary": _str(data.get("summary"), where, "summary"),
                                     "steps": localized})


def localize_scene(scene: dict[str, Any], step: Step, lang: str) -> dict[str, Any]:
    """A played step's JSON (`StepScene.public()`) with the texts of `step` (a localized step) and its events' notes
    and log lines in `lang`."""
    if lang == DEFAULT:
        return scene
    out = dict(scene)
    out["title"] = step.title
    out["events"] = localize_events(scene["events"], lang)
    out["log"] = [{**e, "text": translate(e["text"], lang)} if isinstance(e.get("text"), str) else e
                  for e in scene["log"]]
    labels = [h.label for h in step.highlight]
    out["highlights"] = [{**h, "label": labels[n] or h["label"]} if (n := h.get("highlight", i)) < len(labels) else h
                         for i, h in enumerate(scene["highlights"])]
    if scene.get("question") is not None and step.question is not None:
        out["question"] = {**scene["question"], "prompt": step.question.prompt, "choices": step.question.choices}
    out["narration_tree"] = markdown.parse(step.narration)
    return out


def english_submission(submission: dict[str, Any], english: Step, step: Step) -> dict[str, Any]:
    """An answer given in a localized step's words, as the English step's check reads it (a choice by its place)."""
    choice = submission.get("choice")
    q, eq = step.question, english.question
    if not isinstance(choice, str) or q is None or eq is None or not q.choices or not eq.choices:
        return submission
    for i, c in enumerate(q.choices):
        if c.strip().casefold() == choice.strip().casefold():
            return {**submission, "choice": eq.choices[i]}
    return submission


def localize_answer(result: dict[str, Any], step: Step, lang: str) -> dict[str, Any]:
    """The player's `{correct, message, explain}` in `lang`: the localized hint and explanation."""
    if lang == DEFAULT or step.question is None:
        return result
    q = step.question
    if result["correct"]:
        return {**result, "message": text("lessons.answer.correct", lang),
                "explain": markdown.parse(q.explain) if q.explain else []}
    return {**result, "message": q.hint or text("lessons.answer.not_quite", lang)}
