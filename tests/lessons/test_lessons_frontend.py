"""The lesson page's JavaScript modules, tested under node (`lessons.test.mjs`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_lesson_modules_under_node():
    node = shutil.which("node")
    assert node is not None, "node is missing: make test installs it"
    result = subprocess.run([node, "--test", str(HERE / "lessons.test.mjs")], capture_output=True, text=True,
                            timeout=120, cwd=HERE.parents[1])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
