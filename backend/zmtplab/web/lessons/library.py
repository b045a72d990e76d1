"""The lessons of one app as a service: loaded once (the shipped ones and a teacher's own), translated on demand,
each played once and kept; what a client asks of a lesson that is not there is a domain error (`core.errors`)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from ...lessons.loader import Lesson, LessonError, LoadedLessons, Step, default_lessons_dir, load_lesson_dirs
from ...lessons.player import LessonPlayError, StepScene, answer_key, check_answer, play_lesson
from ...lessons.problems import MissingTranslation
from ...lessons.translations import english_submission, localize_lesson
from ..core.errors import NotFound, Unprocessable

log = logging.getLogger(__name__)


class LessonNotFound(NotFound):
    """No lesson has this id."""


class StepNotFound(NotFound):
    """The lesson has no step of this number."""


class LessonUnplayable(Unprocessable):
    """A lesson that loads but cannot be played (a teacher's own): the text says why."""


class LessonLibrary:
    """The lessons of one app, loaded on first use, each played on first use and then kept: the shipped ones (or
    `directory`'s), then those of `extra` (a teacher's own, `ZMTPLAB_LESSONS_DIR`). A file that is not a valid
    lesson is left out and listed in `problems`."""

    def __init__(self, directory: Path | None = None, captures_dir: Path | None = None,
                 extra: Path | None = None) -> None:
        self.directory = directory
        self.extra = extra
        self.captures_dir = captures_dir
        self._loaded: LoadedLessons | None = None
        self._localized: dict[tuple[str, str], Lesson] = {}
        self._untranslated: dict[tuple[str, str], LessonError] = {}  # (lesson, lang): why it shows in English
        self._scenes: dict[str, list[StepScene]] = {}
        self._lock = threading.RLock()  # (reentrant: a lesson in another language loads the lessons first)

    def _load(self) -> LoadedLessons:
        with self._lock:
            if self._loaded is None:
                dirs = [self.directory or default_lessons_dir(), *([self.extra] if self.extra else [])]
                self._loaded = load_lesson_dirs(dirs)
                for path, problem in self._loaded.problems:
                    log.warning("lesson %s left out: %s", path, problem)
            return self._loaded

    @property
    def lessons(self) -> dict[str, Lesson]:
        return self._load().lessons

    @property
    def problems(self) -> list[tuple[Path, LessonError]]:
        """The lesson files that could not be loaded, each with what is wrong (the file, the step)."""
        return self._load().problems

    def untranslated(self, lang: str) -> list[tuple[str, LessonError]]:
        """The lessons shown in English on a `lang` page because their translation would not load (those asked
        for so far), each with what is wrong in it."""
        with self._lock:
            return [(lesson_id, error) for (lesson_id, in_lang), error in self._untranslated.items()
                    if in_lang == lang]

    def lesson(self, lesson_id: str, lang: str = "en") -> Lesson:
        """The lesson, with its texts in `lang` (English where a translation is missing or broken: logged)."""
        lesson = self.lessons.get(lesson_id)
        if lesson is None:
            raise LessonNotFound(f"no lesson {lesson_id!r}")
        if lang == "en":
            return lesson
        key = (lesson_id, lang)
        with self._lock:
            localized = self._localized.get(key)
            if localized is None:
                try:
                    localized = localize_lesson(lesson, lang, self._load().directories.get(lesson_id))
                except MissingTranslation:
                    localized = lesson
                except LessonError as exc:
                    log.warning("lesson %s in %s: %s", lesson_id, lang, exc)
                    self._untranslated[key] = exc
                    localized = lesson
                self._localized[key] = localized
        return localized

    def step(self, lesson_id: str, number: int, lang: str = "en") -> Step:
        """Step `number` (from 1) of the lesson, its texts in `lang`."""
        steps = self.lesson(lesson_id, lang).steps
        if not 1 <= number <= len(steps):
            raise StepNotFound(f"lesson {lesson_id!r} has steps 1 to {len(steps)}, not {number}")
        return steps[number - 1]

    def scene(self, lesson_id: str, number: int, lang: str = "en") -> StepScene:
        """Step `number` played (the lesson is played whole on first use, then kept); `LessonUnplayable` says in
        `lang` why a lesson cannot be played, naming the step."""
        lesson = self.lesson(lesson_id)
        self.step(lesson_id, number)
        with self._lock:
            scenes = self._scenes.get(lesson_id)
            if scenes is None:
                try:
                    scenes = self._scenes[lesson_id] = play_lesson(
                        lesson, captures_dir=self.captures_dir, own_dir=self._load().directories.get(lesson_id))
                except LessonPlayError as exc:  # (a teacher's lesson that loads but cannot be played: say why)
                    raise LessonUnplayable(exc.render(lang)) from None
        return scenes[number - 1]

    def class_answer(self, lesson_id: str, number: int, given: dict[str, Any],
                     lang: str) -> tuple[dict[str, Any], bool]:
        """A student's answer in presenter mode, checked as `POST /api/lessons/{id}/steps/{n}/answer` does: what it
        answered (the tally's key) and whether it is right. LookupError: no such lesson or step, no question, or
        an answer that names nothing of the question."""
        try:
            scene = self.scene(lesson_id, number)
        except LessonUnplayable as exc:
            raise LookupError(str(exc)) from None
        submission = english_submission(given, self.step(lesson_id, number), self.step(lesson_id, number, lang))
        result = check_answer(scene, submission)  # (LookupError: the step asks no question)
        key = answer_key(scene, submission)
        if key is None:
            raise LookupError("the answer names nothing of this step's question")
        return key, bool(result["correct"])
