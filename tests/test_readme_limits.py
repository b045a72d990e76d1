"""The README's tables of settings say what the server does: every row whose first cell names `ZMTPLAB_*`
settings gives, in its second cell and in the same order, each one's default as `web.settings.Settings` has it
(the limits table once said 200 MB for an upload whose limit was 1.25 GiB)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from zmtplab.web.settings import Settings

README = Path(__file__).resolve().parents[1] / "README.md"
NAME = re.compile(r"`ZMTPLAB_([A-Z0-9_]+)`")
VALUE = re.compile(r"^([0-9][0-9,]*(?:\.[0-9]+)?)\s*(KiB|MiB|GiB|kB|MB|GB|ms|s|min|h|/s|\u00d7)?(?![0-9A-Za-z])")
UNITS = {None: 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "kB": 10**3, "MB": 10**6, "GB": 10**9,
         "ms": 0.001, "s": 1, "min": 60, "h": 3600, "/s": 1, "\u00d7": 1}  # (the multiplication sign: a ratio)


def rows() -> list[tuple[str, list[str], str]]:
    """(the row's text, the settings its first cell names, its second cell) for every such table row."""
    out = []
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2 and NAME.search(cells[0]):
            out.append((line, [n.lower() for n in NAME.findall(cells[0])], cells[1]))
    return out


def parse(text: str) -> float | str:
    """A default as the README writes it: a number with its unit ("1.25 GiB", "30 min", "5,000/s") as a number
    of octets, seconds or things; anything else as it is written."""
    m = VALUE.match(text)
    if m is None:
        return text
    return float(m.group(1).replace(",", "")) * UNITS[m.group(2)]


def test_the_readme_names_settings_in_its_tables() -> None:
    named = {n for _, names, _ in rows() for n in names}
    assert len(named) > 40, named
    assert {"max_upload_bytes", "session_max_queue_bytes", "live_max_held", "max_expand_ratio"} <= named


@pytest.mark.parametrize(("line", "names", "defaults"), rows(), ids=lambda v: v[0] if isinstance(v, list) else "")
def test_each_default_is_the_settings_default(line: str, names: list[str], defaults: str) -> None:
    values = re.split(r",\s+|;\s+", defaults)
    assert len(values) >= len(names), f"fewer defaults than settings in: {line}"
    for name, text in zip(names, values, strict=False):
        assert name in Settings.model_fields, f"no setting {name} ({line})"
        actual = Settings.model_fields[name].get_default(call_default_factory=True)
        said = parse(text)
        if isinstance(actual, bool) or not isinstance(actual, (int, float, str)):
            continue  # (a path, a list: the README words it, e.g. "loopback only")
        if isinstance(actual, str):
            assert text.strip("`") == actual, f"{name}: the README says {text!r}, the setting is {actual!r}"
            continue
        assert isinstance(said, float), f"{name}: the README says {text!r}, not a number"
        assert math.isclose(said, actual, rel_tol=1e-9), f"{name}: the README says {text!r}, the setting is {actual}"
