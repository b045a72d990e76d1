"""The settings reference of docs/operations.md, made from `zmtplab.web.core.settings.Settings`: every `ZMTPLAB_*`
variable, its default and what it does; and `shown`, how a default is written wherever the docs give one (the
README's limits are checked with it: tests/test_docs.py).

    python docs/settings_table.py           # rewrites the table between its markers in docs/operations.md
    python docs/settings_table.py --check   # exits 1 when the table there differs from the settings
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from zmtplab.web.core.settings import Settings

OPERATIONS = Path(__file__).resolve().parent / "operations.md"
BEGIN = "<!-- settings table: made by docs/settings_table.py -->"
END = "<!-- end of the settings table -->"
# Defaults made when the server starts, as the docs say them.
MADE = {
    "data_dir": "`$XDG_CACHE_HOME/zmtplab`, else `~/.cache/zmtplab` (the image: `/var/lib/zmtplab`)",
    "frontend_dir": "the package's own pages",
    "sample_captures_dir": "the package's own sample captures",
    "max_connections": "the soft file limit less 128 (`zmtplab serve` raises it to the hard one)",
}
UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
BYTE_SUFFIXES = ("_bytes", "_body", "_message", "_head", "_disk", "_held")
TIME_SUFFIXES = ("_timeout", "_ttl", "_seconds", "_interval", "_grace", "_lifetime", "_window")


def is_bytes(name: str) -> bool:
    return name.endswith(BYTE_SUFFIXES)


def is_seconds(name: str) -> bool:
    return name.endswith(TIME_SUFFIXES)


def shown(name: str, value: Any) -> str:
    """A setting's value as the docs write it: octets in KiB/MiB/GiB, seconds in s/min/h, counts from 10,000 on
    with commas."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float) and is_bytes(name):
        for unit, size in reversed(UNITS.items()):
            if value >= size and (value * 100) % size == 0:
                return f"{value / size:g} {unit}"
        return f"{value:,} octets"
    if isinstance(value, int | float) and is_seconds(name):
        for unit, size in (("h", 3600), ("min", 60)):
            if value >= size and value % size == 0:
                return f"{value / size:g} {unit}"
        return f"{value:g} s"
    if isinstance(value, int):
        return f"{value:,}" if value >= 10_000 else str(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return " ".join(f"`{v}`" for v in value)
    if isinstance(value, dict):
        return " ".join(f"`{k}={v}`" for k, v in value.items())
    return f"`{value}`"


def table() -> str:
    """The Markdown table of every setting."""
    rows = ["| variable | default | what it does |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = MADE.get(name) or shown(name, field.default)
        what = (field.description or "").replace("|", "\\|")
        rows.append(f"| `ZMTPLAB_{name.upper()}` | {default} | {what} |")
    return "\n".join(rows)


def rewritten(text: str) -> str:
    """`text` (docs/operations.md) with the table between its markers made again."""
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    text = OPERATIONS.read_text(encoding="utf-8")
    wanted = rewritten(text)
    if "--check" in argv:
        if wanted != text:
            print("docs/operations.md: the settings table differs from the settings: run python docs/settings_table.py")
            return 1
        return 0
    OPERATIONS.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
