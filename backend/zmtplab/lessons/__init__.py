"""Classroom walkthroughs: lessons as YAML data files, their loader, and a player that runs them.

- `loader`: pydantic models (`Lesson`, `Step`, `Highlight`, `Question`, ...), `load_lessons()`, whose errors
  name the file and the step, and `load_lesson_dirs()`: the shipped lessons and a teacher's own directory.
- `player`: plays a lesson's steps deterministically (simulated peers through the engine, hand-written
  bytes checked by strict engine peers, or a sample capture) and resolves each step's element, its
  highlighted fields and its question.
- `markdown`: the small, safe Markdown subset of narrations, parsed into a tree the browser builds
  with text nodes only.
"""

from .loader import (
    Lesson,
    LessonError,
    LoadedLessons,
    Step,
    default_lessons_dir,
    load_lesson_dirs,
    load_lesson_file,
    load_lessons,
)
from .player import LessonPlayError, StepScene, check_answer, play_lesson

__all__ = [
    "Lesson", "LessonError", "LessonPlayError", "LoadedLessons", "Step", "StepScene", "check_answer",
    "default_lessons_dir", "load_lesson_dirs", "load_lesson_file", "load_lessons", "play_lesson",
]
