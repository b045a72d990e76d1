"""`zmtplab lessons check [DIR]`: checks a directory of lessons (a teacher's own, `ZMTPLAB_LESSONS_DIR`) as the
server would load and play them, and says what is wrong where."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..i18n import LANGS
from ..lessons import default_lessons_dir, load_lesson_dirs, play_lesson
from ..lessons.loader import LessonError
from ..lessons.player import LessonPlayError
from ..lessons.translations import localize_lesson, translation_path


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `lessons` subcommand."""
    p = sub.add_parser("lessons", help="check a directory of lessons",
                       description="Loads every lesson of DIR (YAML, the format of "
                                   "backend/zmtplab/lessons/README.md) and its translations (DIR/zh-CN/), and "
                                   "plays every step through the engine, as the server does: each problem is named "
                                   "with its file and step. Exit 0 when every lesson "
                                   "holds, 1 otherwise.")
    # `check` is a subcommand of its own, so that options go before or after DIR alike
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="check the lessons of DIR as the server would load and play them")
    check.add_argument("directory", type=Path, nargs="?", default=None,
                       help="the lessons' directory (default: the shipped lessons)")
    check.add_argument("--lang", choices=LANGS, default="en", help="say the problems in this language (en or zh-CN)")
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Checks the lessons; returns the exit status."""
    directory = args.directory or default_lessons_dir()
    loaded = load_lesson_dirs([directory])
    problems = [error.render(args.lang) for _, error in loaded.problems]
    for lesson_id, lesson in loaded.lessons.items():
        try:
            play_lesson(lesson, own_dir=directory)
        except LessonPlayError as exc:
            problems.append(exc.render(args.lang))
            continue
        languages = [lang for lang in LANGS if lang != "en" and translation_path(lesson_id, lang, directory).exists()]
        for lang in languages:
            try:
                localize_lesson(lesson, lang, directory)
            except LessonError as exc:
                problems.append(exc.render(args.lang))
        print(f"ok    {lesson_id}: {len(lesson.steps)} steps" + (f", in {', '.join(['en', *languages])}"
                                                                  if languages else ""))
    for problem in problems:
        print(f"error {problem}")
    print(f"{len(loaded.lessons)} lesson(s) in {directory}, {len(problems)} problem(s)")
    return 1 if problems else 0
