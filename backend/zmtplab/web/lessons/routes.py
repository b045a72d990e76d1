"""Lesson routes: the list, one lesson with its steps, one played step (its scene), and answer checks.

Steps are numbered from 1 in every URL and every answer. A step's scene is what the lesson player
shows: the events so far (the event contract of docs/architecture.md, with fields), the element the
step points at, its highlighted fields, the writes, the messages the applications received and the
peers' log. Lessons are played once, deterministically, and kept.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Response, status
from fastapi import Path as PathParam

from ...lessons import markdown
from ...lessons.loader import Exercise, Question
from ...lessons.player import check_answer, check_exercise, exercise_start
from ...lessons.translations import english_submission, localize_answer, localize_scene
from .. import illustrated
from ..core.models import ErrorResponse
from ..deps import LangDep, LessonLibraryDep
from .library import LessonLibrary
from .models import (
    AnswerIn,
    AnswerOut,
    ExerciseIn,
    ExerciseOut,
    ExerciseResult,
    LessonList,
    LessonOut,
    LessonProblem,
    LessonSummary,
    QuestionOut,
    ReferenceOut,
    SceneOut,
    StepOut,
)

router = APIRouter(prefix="/api/lessons", tags=["lessons"])

LessonId = Annotated[str, PathParam(description="a lesson id from `GET /api/lessons`", max_length=40,
                                    pattern=r"^[a-z0-9][a-z0-9-]*$")]
StepNumber = Annotated[int, PathParam(description="the step number, from 1", ge=1, le=1000)]
NOT_FOUND = {404: {"model": ErrorResponse, "description": "no such lesson or step"}}


def _exercise(exercise: Exercise | None) -> ExerciseOut | None:
    if exercise is None:
        return None
    return ExerciseOut(kind=exercise.kind, task=exercise.task, task_tree=markdown.parse(exercise.task),
                       nodes=dict(exercise.check.nodes) if exercise.check is not None else None,
                       start=exercise_start(exercise))


def _question(step_question: Question | None) -> QuestionOut | None:
    if step_question is None:
        return None
    return QuestionOut(prompt=step_question.prompt, kind=step_question.answer.kind, choices=step_question.choices)


# ---------------------------------------------------------------- routes


@router.get("", response_model=LessonList, summary="Every lesson")
def list_lessons(library: LessonLibraryDep, lang: LangDep) -> LessonList:
    """The lessons in teaching order: id, title, summary, level and step count (`?lang=` or Accept-Language)."""
    lessons = [LessonSummary(**library.lesson(lesson_id, lang).summary_dict()) for lesson_id in library.lessons]
    problems = [LessonProblem(file=path.name, error=error.render(lang)) for path, error in library.problems]
    problems += [LessonProblem(file=f"{lang}/{lesson_id}.yaml", error=error.render(lang))
                 for lesson_id, error in library.untranslated(lang)]
    return LessonList(lessons=lessons, problems=problems)


@router.get("/{lesson_id}", response_model=LessonOut, responses=NOT_FOUND, summary="One lesson and its steps")
def get_lesson(lesson_id: LessonId, library: LessonLibraryDep, lang: LangDep) -> LessonOut:
    """The lesson with every step's title, narration (source and safe tree) and question (without the answer)."""
    lesson = library.lesson(lesson_id, lang)
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
def get_step(lesson_id: LessonId, number: StepNumber, library: LessonLibraryDep, lang: LangDep) -> dict[str, Any]:
    """The step's scene: events (with fields), the element it points at, highlighted fields, writes, log."""
    scene = library.scene(lesson_id, number, lang)
    out = scene.public()
    out["narration_tree"] = markdown.parse(library.step(lesson_id, number).narration)
    step = library.step(lesson_id, number, lang)
    exercise = _exercise(step.exercise)
    out["exercise"] = exercise.model_dump() if exercise is not None else None
    return localize_scene(out, step, lang)


@router.get("/{lesson_id}/illustrated", summary="The lesson as an illustrated page", responses={
    200: {"content": {"text/html": {}}, "description": "one self-contained HTML file"}, **NOT_FOUND})
def lesson_illustrated(lesson_id: LessonId, library: LessonLibraryDep, lang: LangDep) -> Response:
    """The lesson as a handout: its steps (narration, the topology's diagram, the socket decisions each points at,
    the questions, and an answer key at the end), then every element the steps show, each with its octet table,
    hex, fields, explanations and ABNF rules, and its pyzmq script; one file that needs no server and runs no
    script (`?lang=`, Accept-Language)."""
    return illustrated.response(illustrated.page(_handout(library, lesson_id, lang), lang=lang),
                                illustrated.filename(lesson_id, "lesson"))


@router.get("/{lesson_id}/script.py", summary="The lesson's pyzmq script", responses={
    200: {"content": {"text/x-python": {}}, "description": "a Python script"}, **NOT_FOUND})
def lesson_script(lesson_id: LessonId, library: LessonLibraryDep, lang: LangDep) -> Response:
    """The script of the lesson's handout, as a file: a topology lesson's builds its whole topology with libzmq
    (its proxies too) and has each application send and read what it did; another lesson's reproduces the first
    connection it shows (what `zmtplab illustrate` writes beside its page)."""
    return illustrated.script_response(illustrated.script_of(_handout(library, lesson_id, lang)), f"{lesson_id}.py")


def _handout(library: LessonLibrary, lesson_id: str, lang: str) -> illustrated.Document:
    lesson = library.lesson(lesson_id, lang)
    scenes = [library.scene(lesson_id, n) for n in range(1, len(lesson.steps) + 1)]
    return illustrated.lesson_document(lesson_id, lesson.title, scenes, lang=lang,
                                       steps=illustrated.lesson_steps(lesson, scenes, lang))


@router.post("/{lesson_id}/steps/{number}/answer", response_model=AnswerOut,
             responses={**NOT_FOUND, 409: {"model": ErrorResponse, "description": "the step asks no question"}},
             summary="Check an answer")
def answer_step(lesson_id: LessonId, number: StepNumber, answer: AnswerIn, library: LessonLibraryDep,
                lang: LangDep) -> AnswerOut:
    """Checks `{choice}` or a click `{index, field}` / `{index, offset}` (offset: the byte's stream offset).

    A choice may be given in the language asked for (`?lang=`, Accept-Language); the answer speaks it too."""
    scene = library.scene(lesson_id, number)
    step = library.step(lesson_id, number, lang)
    submission = english_submission(answer.model_dump(exclude_none=True), library.step(lesson_id, number), step)
    try:
        result = check_answer(scene, submission)
    except LookupError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    return AnswerOut(**localize_answer(result, step, lang))


@router.post("/{lesson_id}/steps/{number}/exercise", response_model=ExerciseResult,
             responses={**NOT_FOUND, 409: {"model": ErrorResponse, "description": "the step sets no exercise"},
                        422: {"model": ErrorResponse, "description": "not the kind of work the exercise asks for"}},
             summary="Check an exercise")
def exercise_step(lesson_id: LessonId, number: StepNumber, work: ExerciseIn, library: LessonLibraryDep,
                  lang: LangDep) -> ExerciseResult:
    """Checks a typed `{answer}` (any of the accepted answers, in either language; a number as a number) or a
    `{topology}`: it must have the nodes the task names, then the check's actions are played on it (on the
    simulator, as a lesson is) and what its nodes read is compared with what the task wants. The verdict, the
    hint and each problem speak the language asked for."""
    exercise = library.step(lesson_id, number, lang).exercise
    if exercise is None:
        raise HTTPException(status.HTTP_409_CONFLICT, "this step sets no exercise")
    wanted = "answer" if exercise.kind == "answer" else "topology"
    if getattr(work, wanted) is None:
        raise HTTPException(422, f"this exercise is answered with `{wanted}`")
    return ExerciseResult(**check_exercise(exercise, work.model_dump(exclude_none=True), lang))
