"""Lesson routes: the list, one lesson with its steps, one played step (its scene), and answer checks.

Steps are numbered from 1 in every URL and every answer. A step's scene is what the lesson player
shows: the events so far (the event contract of docs/architecture.md, with fields), the element the
step points at, its highlighted fields, the writes, the messages the applications received and the
peers' log. Lessons are played once, deterministically, and kept.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Response, status
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import HTTPConnection

from ...lessons import markdown
from ...lessons.loader import Exercise, Lesson, LessonError, LoadedLessons, default_lessons_dir, load_lesson_dirs
from ...lessons.player import LessonPlayError, StepScene, check_answer, check_exercise, exercise_start, play_lesson
from ...lessons.problems import MissingTranslation
from ...lessons.translations import english_submission, localize_answer, localize_lesson, localize_scene
from .. import illustrated
from ..deps import LangDep
from ..models import ErrorResponse

router = APIRouter(prefix="/api/lessons", tags=["lessons"])
log = logging.getLogger(__name__)

LessonId = Annotated[str, PathParam(description="a lesson id from `GET /api/lessons`", max_length=40,
                                    pattern=r"^[a-z0-9][a-z0-9-]*$")]
StepNumber = Annotated[int, PathParam(description="the step number, from 1", ge=1, le=1000)]
NOT_FOUND = {404: {"model": ErrorResponse, "description": "no such lesson or step"}}


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
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no lesson {lesson_id!r}")
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

    def scene(self, lesson_id: str, number: int, lang: str = "en") -> StepScene:
        """Step `number`'s scene (a 422 in `lang` naming the step when the lesson cannot be played)."""
        lesson = self.lesson(lesson_id)
        if not 1 <= number <= len(lesson.steps):
            raise HTTPException(status.HTTP_404_NOT_FOUND,
                                f"lesson {lesson_id!r} has steps 1 to {len(lesson.steps)}, not {number}")
        with self._lock:
            scenes = self._scenes.get(lesson_id)
            if scenes is None:
                try:
                    scenes = self._scenes[lesson_id] = play_lesson(
                        lesson, captures_dir=self.captures_dir, own_dir=self._load().directories.get(lesson_id))
                except LessonPlayError as exc:  # (a teacher's lesson that loads but cannot be played: say why)
                    raise HTTPException(422, exc.render(lang)) from None
        return scenes[number - 1]


def get_library(conn: HTTPConnection) -> LessonLibrary:
    """The app's lesson library (created on first use, playing the settings' sample captures; tests may set
    `app.state.lesson_library`)."""
    state = conn.app.state
    library = getattr(state, "lesson_library", None)
    if library is None:
        library = state.lesson_library = LessonLibrary(captures_dir=state.settings.sample_captures_dir,
                                                       extra=state.settings.lessons_dir)
    return library


# ---------------------------------------------------------------- models


class LessonSummary(BaseModel):
    id: str
    title: str
    summary: str
    level: str
    step_count: int


class LessonProblem(BaseModel):
    file: str = Field(description="the lesson file's name")
    error: str = Field(description="what is wrong with it: the file, the step, the key")


class LessonList(BaseModel):
    lessons: list[LessonSummary]
    problems: list[LessonProblem] = Field(default_factory=list, description="lesson files that could not be "
                                          "loaded (a teacher's own, `ZMTPLAB_LESSONS_DIR`), and translations in "
                                          "the language asked for that would not (the lesson then shows in "
                                          "English), each with its error in that language")


class ReferenceOut(BaseModel):
    title: str
    url: str
    href: str | None = Field(None, description="the url when it may be linked (rfc.zeromq.org), else null")


class QuestionOut(BaseModel):
    prompt: str
    kind: str = Field(description="`field` or `byte` (answered by clicking the element) or `choice`")
    choices: list[str] | None = None


class ExerciseOut(BaseModel):
    """A step's exercise, without its answer."""

    kind: str = Field(description="`answer` (typed, checked as text or number) or `topology` (built in the "
                      "playground and checked on the simulator)")
    task: str = Field(description="the Markdown source")
    task_tree: list[dict[str, Any]] = Field(description="the safe parse of the task (see lessons.markdown)")
    nodes: dict[str, str] | None = Field(None, description="a topology exercise's nodes the topology must have: "
                                         "name -> socket type")
    start: dict[str, Any] | None = Field(None, description="the topology the playground's editor opens with "
                                         "(nodes, links, proxies, and the messages the check sends as its script)")


class StepOut(BaseModel):
    number: int
    title: str
    narration: str = Field(description="the Markdown source")
    narration_tree: list[dict[str, Any]] = Field(description="the safe parse of the narration (see lessons.markdown)")
    source: str | None = Field(description="`session`, `wire` or `capture` when the step opens a new source")
    highlights: list[str]
    question: QuestionOut | None = None
    exercise: ExerciseOut | None = None


class LessonOut(BaseModel):
    id: str
    title: str
    summary: str
    level: str
    step_count: int
    references: list[ReferenceOut]
    steps: list[StepOut]


class SceneOut(BaseModel):
    """A played step: everything the lesson player shows (events follow the event contract)."""

    model_config = ConfigDict(extra="allow")

    lesson: str
    number: int
    title: str
    source: dict[str, Any]
    events: list[dict[str, Any]]
    element: int | None
    field: int | None
    highlights: list[dict[str, Any]]
    writes: list[dict[str, Any]]
    received: list[dict[str, Any]]
    log: list[dict[str, Any]]
    question: QuestionOut | None
    narration_tree: list[dict[str, Any]]
    exercise: ExerciseOut | None = None


class AnswerIn(BaseModel):
    """A choice, or a click in the step's element: its index in the scene, and a field index or a byte offset."""

    model_config = ConfigDict(extra="forbid")

    choice: str | None = Field(None, max_length=200)
    index: int | None = Field(None, ge=0, le=1_000_000)
    field: int | None = Field(None, ge=0, le=100_000)
    offset: int | None = Field(None, ge=0, le=1 << 62)


class AnswerOut(BaseModel):
    correct: bool
    message: str
    explain: list[dict[str, Any]] = Field(description="the explanation's narration tree, once answered correctly")
    fields: list[int] = Field(default_factory=list, description="the answer's fields in the step's element (indexes), "
                              "once a click question is answered correctly: the page lights them up")


class ExerciseIn(BaseModel):
    """A student's work on an exercise: a typed `answer`, or the `topology` they built (as a topology session's
    body has it, or as the playground's Save writes it)."""

    model_config = ConfigDict(extra="forbid")

    answer: str | None = Field(None, max_length=200)
    topology: dict[str, Any] | None = None


class ExerciseResult(BaseModel):
    correct: bool
    message: str = Field(description="the verdict, or the author's hint")
    problems: list[str] = Field(default_factory=list, description="what the topology does not do that the task "
                                "asks, each in words (the node, what it read, what was wanted)")
    explain: list[dict[str, Any]] = Field(description="the explanation's narration tree, once correct")


def _exercise(exercise: Exercise | None) -> ExerciseOut | None:
    if exercise is None:
        return None
    return ExerciseOut(kind=exercise.kind, task=exercise.task, task_tree=markdown.parse(exercise.task),
                       nodes=dict(exercise.check.nodes) if exercise.check is not None else None,
                       start=exercise_start(exercise))


def _question(step_question) -> QuestionOut | None:
    if step_question is None:
        return None
    return QuestionOut(prompt=step_question.prompt, kind=step_question.answer.kind, choices=step_question.choices)


# ---------------------------------------------------------------- routes


@router.get("", response_model=LessonList, summary="Every lesson")
def list_lessons(conn: HTTPConnection, lang: LangDep) -> LessonList:
    """The lessons in teaching order: id, title, summary, level and step count (`?lang=` or Accept-Language)."""
    library = get_library(conn)
    lessons = [LessonSummary(**library.lesson(lesson_id, lang).summary_dict()) for lesson_id in library.lessons]
    problems = [LessonProblem(file=path.name, error=error.render(lang)) for path, error in library.problems]
    problems += [LessonProblem(file=f"{lang}/{lesson_id}.yaml", error=error.render(lang))
                 for lesson_id, error in library.untranslated(lang)]
    return LessonList(lessons=lessons, problems=problems)


@router.get("/{lesson_id}", response_model=LessonOut, responses=NOT_FOUND, summary="One lesson and its steps")
def get_lesson(lesson_id: LessonId, conn: HTTPConnection, lang: LangDep) -> LessonOut:
    """The lesson with every step's title, narration (source and safe tree) and question (without the answer)."""
    lesson = get_library(conn).lesson(lesson_id, lang)
    steps = [
        StepOut(number=n, title=step.title, narration=step.narration, narration_tree=markdown.parse(step.narration),
                source=step.source_kind, highlights=[h.label or h.field for h in step.highlight],
                question=_question(step.question), exercise=_exercise(step.exercise))
        for n, step in enumerate(lesson.steps, 1)
    ]
    refs = [ReferenceOut(title=r.title, url=r.url, href=r.url if markdown.allowed_link(r.url) else None)
            for r in lesson.references]
    return LessonOut(**lesson.summary_dict(), references=refs, steps=steps)


@router.get("/{lesson_id}/steps/{number}", response_model=SceneOut, responses=NOT_FOUND,
            summary="One step, played")
def get_step(lesson_id: LessonId, number: StepNumber, conn: HTTPConnection, lang: LangDep) -> dict[str, Any]:
    """The step's scene: events (with fields), the element it points at, highlighted fields, writes, log."""
    library = get_library(conn)
    scene = library.scene(lesson_id, number, lang)
    out = scene.public()
    out["narration_tree"] = markdown.parse(library.lesson(lesson_id).steps[number - 1].narration)
    step = library.lesson(lesson_id, lang).steps[number - 1]
    exercise = _exercise(step.exercise)
    out["exercise"] = exercise.model_dump() if exercise is not None else None
    return localize_scene(out, step, lang)


@router.get("/{lesson_id}/illustrated", summary="The lesson as an illustrated page", responses={
    200: {"content": {"text/html": {}}, "description": "one self-contained HTML file"}, **NOT_FOUND})
def lesson_illustrated(lesson_id: LessonId, conn: HTTPConnection, lang: LangDep) -> Response:
    """The lesson as a handout: its steps (narration, the topology's diagram, the socket decisions each points at,
    the questions, and an answer key at the end), then every element the steps show, each with its octet table,
    hex, fields, explanations and ABNF rules, and its pyzmq script; one file that needs no server and runs no
    script (`?lang=`, Accept-Language)."""
    return illustrated.response(illustrated.page(_handout(lesson_id, conn, lang), lang=lang),
                                illustrated.filename(lesson_id, "lesson"))


@router.get("/{lesson_id}/script.py", summary="The lesson's pyzmq script", responses={
    200: {"content": {"text/x-python": {}}, "description": "a Python script"}, **NOT_FOUND})
def lesson_script(lesson_id: LessonId, conn: HTTPConnection, lang: LangDep) -> Response:
    """The script of the lesson's handout, as a file: a topology lesson's builds its whole topology with libzmq
    (its proxies too) and has each application send and read what it did; another lesson's reproduces the first
    connection it shows (what `zmtplab illustrate` writes beside its page)."""
    return illustrated.script_response(illustrated.script_of(_handout(lesson_id, conn, lang)), f"{lesson_id}.py")


def _handout(lesson_id: str, conn: HTTPConnection, lang: str) -> illustrated.Document:
    library = get_library(conn)
    lesson = library.lesson(lesson_id, lang)
    scenes = [library.scene(lesson_id, n) for n in range(1, len(lesson.steps) + 1)]
    return illustrated.lesson_document(lesson_id, lesson.title, scenes, lang=lang,
                                       steps=illustrated.lesson_steps(lesson, scenes, lang))


@router.post("/{lesson_id}/steps/{number}/answer", response_model=AnswerOut,
             responses={**NOT_FOUND, 409: {"model": ErrorResponse, "description": "the step asks no question"}},
             summary="Check an answer")
def answer_step(lesson_id: LessonId, number: StepNumber, answer: AnswerIn, conn: HTTPConnection,
                lang: LangDep) -> AnswerOut:
    """Checks `{choice}` or a click `{index, field}` / `{index, offset}` (offset: the byte's stream offset).

    A choice may be given in the language asked for (`?lang=`, Accept-Language); the answer speaks it too."""
    library = get_library(conn)
    scene = library.scene(lesson_id, number)
    step = library.lesson(lesson_id, lang).steps[number - 1]
    submission = english_submission(answer.model_dump(exclude_none=True), library.lesson(lesson_id).steps[number - 1],
                                    step)
    try:
        result = check_answer(scene, submission)
    except LookupError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    return AnswerOut(**localize_answer(result, step, lang))


@router.post("/{lesson_id}/steps/{number}/exercise", response_model=ExerciseResult,
             responses={**NOT_FOUND, 409: {"model": ErrorResponse, "description": "the step sets no exercise"},
                        422: {"model": ErrorResponse, "description": "not the kind of work the exercise asks for"}},
             summary="Check an exercise")
def exercise_step(lesson_id: LessonId, number: StepNumber, work: ExerciseIn, conn: HTTPConnection,
                  lang: LangDep) -> ExerciseResult:
    """Checks a typed `{answer}` (any of the accepted answers, in either language; a number as a number) or a
    `{topology}`: it must have the nodes the task names, then the check's actions are played on it (on the
    simulator, as a lesson is) and what its nodes read is compared with what the task wants. The verdict, the
    hint and each problem speak the language asked for."""
    library = get_library(conn)
    lesson = library.lesson(lesson_id, lang)
    if not 1 <= number <= len(lesson.steps):
        raise HTTPException(status.HTTP_404_NOT_FOUND,
                            f"lesson {lesson_id!r} has steps 1 to {len(lesson.steps)}, not {number}")
    exercise = lesson.steps[number - 1].exercise
    if exercise is None:
        raise HTTPException(status.HTTP_409_CONFLICT, "this step sets no exercise")
    wanted = "answer" if exercise.kind == "answer" else "topology"
    if getattr(work, wanted) is None:
        raise HTTPException(422, f"this exercise is answered with `{wanted}`")
    return ExerciseResult(**check_exercise(exercise, work.model_dump(exclude_none=True), lang))
