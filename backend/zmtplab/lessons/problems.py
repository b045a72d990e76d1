"""What is wrong in a lesson file, in the reader's language: `LessonError` and the `Problem`s it carries.

Loading a lesson or its translation raises `LessonError`. Each problem names where it is (the file, the step,
the key) and what, as a backend catalog id with its values, so the CLI and the pages can say it in Chinese as
well as English; `str(error)` is the English text, one line a problem. The models' validators raise `invalid`
(pydantic's custom error, typed by the catalog id); pydantic's own errors (a missing key, a wrong type) are
mapped to catalog ids by their type.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from ..i18n import DEFAULT, catalog, text, translate

# pydantic's error types a lesson author meets, and the catalog ids that say them (the English is pydantic's own).
PYDANTIC_TEXTS: dict[str, str] = {
    "missing": "lessons.pydantic.missing",
    "extra_forbidden": "lessons.pydantic.extra_forbidden",
    "string_type": "lessons.pydantic.string_type",
    "int_type": "lessons.pydantic.int_type",
    "int_parsing": "lessons.pydantic.int_parsing",
    "int_from_float": "lessons.pydantic.int_from_float",
    "float_type": "lessons.pydantic.float_type",
    "float_parsing": "lessons.pydantic.float_parsing",
    "bool_type": "lessons.pydantic.bool_type",
    "bool_parsing": "lessons.pydantic.bool_parsing",
    "list_type": "lessons.pydantic.list_type",
    "dict_type": "lessons.pydantic.dict_type",
    "model_type": "lessons.pydantic.model_type",
    "model_attributes_type": "lessons.pydantic.model_type",
    "literal_error": "lessons.pydantic.literal_error",
    "greater_than_equal": "lessons.pydantic.greater_than_equal",
    "less_than_equal": "lessons.pydantic.less_than_equal",
    "string_too_short": "lessons.pydantic.string_too_short",
    "string_too_long": "lessons.pydantic.string_too_long",
    "too_short": "lessons.pydantic.too_short",
    "too_long": "lessons.pydantic.too_long",
    "string_pattern_mismatch": "lessons.pydantic.string_pattern_mismatch",
}
OTHER = "lessons.error.other"  # "{text_error}": an English text of ours (a topology's error) or pydantic's


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a lesson file: where (the file, the step from 1 and its title, the key) and what (a
    catalog id and its values; `english`, when set, is the English text as pydantic wrote it)."""

    file: str
    msg_id: str
    params: Mapping[str, Any] = field(default_factory=dict)
    step: int | None = None
    title: str | None = None
    key: str = ""
    english: str | None = None

    def render(self, lang: str = DEFAULT) -> str:
        """The problem as one line in `lang`: "file: step 2 ('Title'): key: what"."""
        if lang == DEFAULT and self.english is not None:
            what = self.english
        else:
            values = {k: translate(v, lang) if k.startswith("text") and isinstance(v, str) else v
                      for k, v in self.params.items()}
            what = text(self.msg_id, lang, **values)
        where = self.file
        if self.step is not None:
            where = text("lessons.where.step_titled" if self.title else "lessons.where.step", lang,
                         where=where, number=self.step, title=self.title or "")
        if self.key:
            where = text("lessons.where.key", lang, where=where, key=self.key)
        return text("lessons.where.problem", lang, where=where, problem=what)


class LessonError(ValueError):
    """A lesson file that cannot be used: its problems, each naming the file and the step."""

    def __init__(self, *problems: Problem) -> None:
        self.problems = problems
        super().__init__(self.render())

    @classmethod
    def at(cls, file: str, msg_id: str, /, *, step: int | None = None, title: str | None = None, key: str = "",
           **params: Any) -> LessonError:
        """One problem in `file`: the catalog id `msg_id` with its values."""
        return cls(Problem(file, msg_id, params, step=step, title=title, key=key))

    def render(self, lang: str = DEFAULT) -> str:
        """The problems in `lang`, one a line."""
        return "\n".join(p.render(lang) for p in self.problems)


class MissingTranslation(LessonError):
    """A lesson with no file in the language asked for: it shows in English (not a mistake in a file)."""


def invalid(msg_id: str, /, **params: Any) -> PydanticCustomError:
    """The error a lesson model's validator raises: typed by the catalog id, its English the catalog's.

    `step` and `title` among `params` say which step it is about (a lesson-wide check names the step)."""
    return PydanticCustomError(msg_id, catalog(DEFAULT)[msg_id].replace("{{", "{").replace("}}", "}"), params)


def validation_problems(file: str, data: Any, exc: ValidationError) -> Iterable[Problem]:
    """The problems of a lesson file's validation errors: the step (with its title) a location is in, the key
    path within it, and the catalog id of each error."""
    steps = data.get("steps") if isinstance(data, dict) else None
    for err in exc.errors():
        loc = list(err.get("loc", ()))
        step = title = None
        if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
            step = loc[1] + 1
            if isinstance(steps, list) and loc[1] < len(steps) and isinstance(steps[loc[1]], dict):
                title = steps[loc[1]].get("title") or None
            loc = loc[2:]
        key = ".".join(str(x) for x in loc if not str(x).startswith("function-"))
        kind = str(err.get("type", ""))
        ctx = dict(err.get("ctx") or {})
        if kind.startswith("lessons."):
            step = ctx.pop("step", step)
            title = ctx.pop("title", title)
            yield Problem(file, kind, ctx, step=step, title=title, key=key)
        elif kind in PYDANTIC_TEXTS:
            params = {k: str(v) for k, v in ctx.items()}
            if kind == "literal_error":  # pydantic joins the choices with an English "or"
                params["expected"] = ", ".join(re.findall(r"'(?:[^'\\]|\\.)*'|\S+(?=,| or |$)", params["expected"]))
            yield Problem(file, PYDANTIC_TEXTS[kind], params, step=step, title=title, key=key or "lesson",
                          english=str(err.get("msg", "")))
        else:
            message = str(err.get("msg", "")).removeprefix("Value error, ")
            yield Problem(file, OTHER, {"text_error": message}, step=step, title=title, key=key or "lesson")
