"""`# type: ignore` in backend/zmtplab only where a third-party library's typing is the question (issue 18.5).

Code of ours is typed instead: events dispatched on their classes, Optionals narrowed, no attribute set where
its class does not say so. An ignore that stays names its error code and says why on the line:

    from pyspark.sql import functions as F  # type: ignore[import-untyped]  # (pyspark ships no stubs)
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "backend" / "zmtplab"

IGNORE = re.compile(r"#\s*type:\s*ignore\b")
EXPLAINED = re.compile(r"#\s*type:\s*ignore\[[\w\-, ]+\]\s*#\s*\(.+\)")


def ignores(path: Path) -> list[tuple[int, str]]:
    """(line, comment) of every `type: ignore` comment in the file (comments only: not strings)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [(tok.start[0], tok.line.strip()) for tok in tokens
            if tok.type == tokenize.COMMENT and IGNORE.search(tok.string)]


def test_every_type_ignore_is_explained() -> None:
    bare: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found = [(n, line) for n, line in ignores(path) if not EXPLAINED.search(line)]
        if found:
            bare[path.relative_to(PACKAGE).as_posix()] = found
    assert not bare, ("type the code instead (or, for an untyped library, name the code and say why: "
                      "`# type: ignore[code]  # (why)`): "
                      + "; ".join(f"{name}: {[n for n, _ in found]}" for name, found in bare.items()))


def test_the_check_sees_a_bare_ignore(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('x: int = None  # type: ignore[assignment]\ns = "# type: ignore"\n'
                      'import pyspark  # type: ignore[import-untyped]  # (pyspark ships no stubs)\n')
    found = ignores(module)
    assert [n for n, _ in found] == [1, 3]  # (the string on line 2 is no comment)
    assert [bool(EXPLAINED.search(line)) for _, line in found] == [False, True]
