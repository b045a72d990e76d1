"""The operator documentation says what the code does: every limit in the README's tables once, with the default
the code has; the settings table of docs/operations.md made from the settings; every `ZMTPLAB_*` variable the
docs name exists; and the README's example commands print what the README shows."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from zmtplab.web.classes.registry import ClassLimits
from zmtplab.web.core.settings import Settings

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = {path.name: path.read_text(encoding="utf-8") for path in [REPO / "README.md", *(REPO / "docs").glob("*.md")]}
SETTING = re.compile(r"`(ZMTPLAB_[A-Z0-9_]+|ClassLimits\.[a-z_]+)`")


def _settings_table() -> Any:
    spec = importlib.util.spec_from_file_location("settings_table", REPO / "docs" / "settings_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


settings_table = _settings_table()


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of each body row of the first table after `heading`."""
    rest = text[text.index(heading):]
    lines = rest.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))])
    return rows


def default_of(name: str) -> tuple[str, Any]:
    """(field name, default) of `ZMTPLAB_X` or `ClassLimits.x`."""
    if name.startswith("ClassLimits."):
        field = name.split(".", 1)[1]
        return field, {f.name: f.default for f in dataclasses.fields(ClassLimits)}[field]
    field = name.removeprefix("ZMTPLAB_").lower()
    return field, Settings.model_fields[field].default


def checked_rows() -> list[tuple[str, list[str], list[str]]]:
    """(table, setting names, defaults) of every row of the README's limits and configuration tables."""
    out = []
    for heading, setting_col, default_col in (("### Limits", 1, 2), ("## Configuration", 0, 1)):
        for row in table_rows(README, heading):
            names = SETTING.findall(row[setting_col])
            defaults = [d for d in row[default_col].split(", ")] if names else []
            out.append((heading, names, defaults))
    return out


def test_the_readme_gives_each_limit_once_with_the_codes_default() -> None:
    seen: dict[str, str] = {}
    wrong = []
    for heading, names, defaults in checked_rows():
        if not names:
            continue
        for name in names:
            assert name not in seen, f"{name} is in the README's tables twice ({seen[name]}, {heading})"
            seen[name] = heading
        field, _ = default_of(names[0])
        if field in settings_table.MADE:  # (a path made at start-up: the docs say it in words)
            continue
        assert len(defaults) == len(names), f"{names}: {len(defaults)} defaults for {len(names)} settings"
        for name, written in zip(names, defaults, strict=True):
            field, value = default_of(name)
            if written != settings_table.shown(field, value):
                wrong.append(f"{name}: README says {written!r}, the code {settings_table.shown(field, value)!r}")
    assert wrong == []
    assert "ZMTPLAB_MAX_UPLOAD_BYTES" in seen and "ClassLimits.auth_timeout" in seen


def test_every_class_limit_that_answers_a_client_is_in_the_limits_table() -> None:
    named = {n for _, names, _ in checked_rows() for n in names}
    told = {"max_classes", "max_classes_per_address", "reserve", "teacher_grace", "rate", "burst", "abuse_limit",
            "abuse_window", "auth_timeout", "max_pending_auth"}
    assert {f"ClassLimits.{n}" for n in told} <= named


def test_the_settings_table_is_made_from_the_settings(capsys: pytest.CaptureFixture[str]) -> None:
    assert settings_table.main(["--check"]) == 0, capsys.readouterr().out


def test_every_variable_the_docs_name_exists() -> None:
    known = {f"ZMTPLAB_{name.upper()}" for name in Settings.model_fields}
    named = {(doc, v) for doc, text in DOCS.items() for v in re.findall(r"ZMTPLAB_[A-Z0-9_]*[A-Z0-9]", text)}
    # (the names `zmtplab serve` and the tests use for themselves, and `zmtplab analyze`'s CURVE secret keys: not
    # settings)
    own = {"ZMTPLAB_SERVE_MALLOC_SET", "ZMTPLAB_IMAGE", "ZMTPLAB_IMAGE_ENGINE", "ZMTPLAB_CURVE_SECRET"}
    assert sorted((doc, v) for doc, v in named if v not in known | own) == []


# ---- the README's example commands

def examples() -> list[tuple[str, list[str]]]:
    """(command, the output lines shown) of every `$ zmtplab ...` in the README's code blocks that shows output."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        command, shown = None, []
        for line in [*block.splitlines(), "$"]:
            if line.startswith("$"):
                if command and shown:
                    found.append((command, shown))
                command, shown = line[1:].strip(), []
            elif command:
                shown.append(line)
    return found


def fits(shown: str, real: str) -> bool:
    """A shown line is the real one, or (ending in `...`) its start."""
    return real.startswith(shown[:-3].rstrip()) if shown.endswith("...") else real == shown


def matches(shown: list[str], real: list[str]) -> str | None:
    """None when the real lines hold the shown ones in order (a `...` line: any lines; `...` ending a line: any
    rest of it), else what was not found."""
    at = 0
    skip = False
    for line in shown:
        if line.strip() == "...":
            skip = True
            continue
        while at < len(real) and not fits(line, real[at]):
            if not skip:
                return f"{line!r} where the output has {real[at]!r}"
            at += 1
        if at == len(real):
            return f"{line!r} is not in the output"
        at += 1
        skip = False
    return None


@pytest.mark.parametrize(("command", "shown"), examples(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_readme_examples_print_what_it_shows(command: str, shown: list[str]) -> None:
    args = shlex.split(command)
    assert args[0] == "zmtplab"
    done = subprocess.run([sys.executable, "-m", "zmtplab.cli", *args[1:]], cwd=REPO, capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    problem = matches(shown, done.stdout.splitlines())
    assert problem is None, f"{command}: {problem}"


def test_the_examples_are_found() -> None:
    assert {c.split()[1] for c, _ in examples()} >= {"decode", "dissect", "analyze"}
