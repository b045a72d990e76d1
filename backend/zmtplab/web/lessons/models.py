"""The models of the lesson routes: lessons, steps, scenes, answers and exercises as the API shows them (never an
answer before it is given)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
