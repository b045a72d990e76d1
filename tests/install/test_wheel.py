"""The package as its users get it (issue 29): `pip wheel` of this checkout, installed with pip into a new virtual
environment outside the checkout, and `zmtplab serve` started from there, in a directory of its own, with none of
the checkout on any path. Every page loads in Chromium (the glossary with its terms), every step of every lesson
answers, a teacher's own lessons directory (`ZMTPLAB_LESSONS_DIR`) is listed with the shipped lessons and checked by
`zmtplab lessons check`, an upload is dissected, and the Spark pipeline, an extra this install leaves out, says how
to get it.

The dependencies' wheels are downloaded by the new environment's pip from the package index the first time
(what `pip install` would take) and kept in the user's cache under a key of the wheel's requirements and this
Python, so later runs install them offline (`--no-index`); the wheel itself is built anew every run."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from installkit import check_lessons, check_pages, dissected, get_json, request, upload, wait_healthy
from testkit import free_port
from zmtplab.lessons import load_lessons

pytestmark = pytest.mark.package

REPO = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
# The interpreter the development environment was made with (Debian's python3 under `make`).
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)
HOW_TO_GET_SPARK = "pip install 'zmtplab[spark]'"
NO_PYSPARK = f"the Spark pipeline needs pyspark, which is not installed here: {HOW_TO_GET_SPARK}"
NO_PYSPARK_ZH = f"Spark 流水线需要 pyspark\uff0c但这里没有安装\uff1a{HOW_TO_GET_SPARK}"
# A teacher's lesson: a step the simulator plays, one of a capture the package ships and one of the teacher's own
# capture beside the lesson; and its Chinese.
OWN_LESSON = """title: Our first lecture
summary: A PUSH and a PULL say hello, then a capture of libzmq.
steps:
  - title: Hello
    session:
      server: {type: PUSH}
      client: {type: PULL}
    element: {dir: c2s, kind: greeting}
    highlight: [signature]
    narration: The client's greeting.
  - title: The same, from libzmq
    capture: {file: push_pull.pcapng}
    element: {dir: s2c, kind: greeting}
    narration: The server's greeting, captured.
  - title: Our lab's capture
    capture: {file: our-lab.pcapng}
    element: {dir: c2s, kind: greeting}
    narration: A capture of our own, beside the lessons.
"""
OWN_LESSON_ZH = """title: 我们的第一堂课
summary: PUSH 和 PULL 互相问候\uff0c然后是 libzmq 的抓包。
steps:
  - title: 问候
    narration: 客户端的问候语。
  - title: 同样的\uff0c来自 libzmq
    narration: 服务器的问候语\uff0c抓包所得。
  - title: 我们实验室的抓包
    narration: 我们自己的抓包\uff0c放在课程旁边。
"""


def run(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """A command that must succeed; its output in the failure."""
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]  # (kwargs are subprocess.run's)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def clean_env(**extra: str) -> dict[str, str]:
    """This environment less what points into the checkout or its virtual environment."""
    keep = ("HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "PIP_FIND_LINKS",
            "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_DEFAULT_TIMEOUT", "JAVA_HOME", "http_proxy", "https_proxy",
            "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env["PATH"] = os.pathsep.join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
                                  if p and not Path(p).resolve().is_relative_to(REPO))
    return {**env, **extra}


def requirements(wheel: Path) -> list[str]:
    """The wheel's own requirements (`Requires-Dist` without an extra)."""
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(f"zmtplab-{VERSION}.dist-info/METADATA").decode()
    return sorted(line for line in meta.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line)


@dataclass(frozen=True)
class Installed:
    venv: Path
    work: Path  # a directory of its own, outside the checkout, where commands run

    @property
    def zmtplab(self) -> Path:
        return self.venv / "bin" / "zmtplab"

    def package_dir(self) -> Path:
        """Where the package is installed (asked of the environment's own Python)."""
        out = run(self.venv / "bin" / "python", "-c", "import zmtplab, os; print(os.path.dirname(zmtplab.__file__))",
                  cwd=self.work, env=clean_env())
        return Path(out.stdout.strip())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel` of the checkout (in pip's isolated build environment, as `pip install .` builds it)."""
    out = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", out, REPO, env=clean_env())
    (path,) = out.glob("zmtplab-*.whl")
    return path


def pip(venv: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """pip (this environment's) working on the virtual environment `venv` (`--python`: the new environment has no
    pip of its own to install first; what it installs and how is the same)."""
    return run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", *args, env=clean_env())


def wheelhouse(wheel: Path, venv: Path) -> Path:
    """The wheels of `wheel`'s dependencies as `pip download` resolves them from the index for `venv`'s Python
    (see the module docstring)."""
    key = hashlib.sha256("\n".join([*requirements(wheel), sys.version, platform.machine()]).encode()).hexdigest()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zmtplab-tests"
    house = cache / f"wheelhouse-{key[:16]}"
    if (house / ".complete").exists():
        return house
    partial = cache / f"{house.name}.{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    pip(venv, "download", "--quiet", "--dest", partial, wheel)
    for ours in partial.glob("zmtplab-*"):
        ours.unlink()
    (partial / ".complete").touch()
    try:
        partial.rename(house)
    except OSError:  # (another run filled it meanwhile)
        shutil.rmtree(partial, ignore_errors=True)
    return house


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A new virtual environment (no system site-packages) with the wheel and its dependencies, as pip installs
    them; nothing of the checkout's."""
    root = tmp_path_factory.mktemp("installed")
    assert not root.resolve().is_relative_to(REPO)
    venv, work = root / "venv", root / "work"
    work.mkdir()
    run(BASE_PYTHON, "-m", "venv", "--without-pip", venv, env=clean_env())
    pip(venv, "install", "--quiet", "--no-compile", "--no-index", "--find-links", wheelhouse(wheel, venv), wheel)
    done = Installed(venv, work)
    assert done.package_dir() == venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages" / "zmtplab"
    return done


@pytest.fixture(scope="module")
def own_lessons(installed: Installed) -> Path:
    """A teacher's lessons directory (one lesson, its Chinese and a capture), outside the checkout and the
    package."""
    directory = installed.work / "our-lessons"
    (directory / "zh-CN").mkdir(parents=True)
    (directory / "our-first.yaml").write_text(OWN_LESSON, encoding="utf-8")
    (directory / "zh-CN" / "our-first.yaml").write_text(OWN_LESSON_ZH, encoding="utf-8")
    shutil.copy(installed.package_dir() / "captures" / "dealer_router.pcapng", directory / "our-lab.pcapng")
    return directory


@pytest.fixture(scope="module")
def server(installed: Installed, own_lessons: Path) -> Iterator[str]:
    """`zmtplab serve` of the installed package, run from its own directory with a teacher's lessons directory;
    its base URL."""
    port = free_port()
    log = (installed.work / "serve.log").open("w")
    process = subprocess.Popen([str(installed.zmtplab), "serve", "--port", str(port)], cwd=installed.work,
                               env=clean_env(ZMTPLAB_DATA_DIR=str(installed.work / "data"),
                                             ZMTPLAB_LESSONS_DIR=str(own_lessons)),
                               stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(base, alive=process.poll)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{(installed.work / 'serve.log').read_text()[-3000:]}") from None
        yield base
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_the_wheel_carries_its_pages_lessons_captures_and_licence(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta = zf.read(f"zmtplab-{VERSION}.dist-info/METADATA").decode()
        licence = zf.read(f"zmtplab-{VERSION}.dist-info/licenses/LICENSE").decode()
    frontend = {f"zmtplab/frontend/{p.relative_to(REPO / 'frontend')}" for p in (REPO / "frontend").rglob("*")
                if p.is_file()}
    assert frontend and frontend <= names, sorted(frontend - names)[:10]
    lesson_files = {f"zmtplab/lessons/{p.relative_to(REPO / 'backend/zmtplab/lessons')}"
                    for p in (REPO / "backend/zmtplab/lessons").rglob("*.yaml")}
    assert len(lesson_files) >= 30 and lesson_files <= names, sorted(lesson_files - names)
    played = {f"zmtplab/captures/{step.capture.file}" for lesson in load_lessons().values() for step in lesson.steps
              if step.capture is not None}
    assert len(played) >= 10 and played <= names, sorted(played - names)
    assert not [n for n in names if n.endswith(".py") and n.startswith("zmtplab/captures/")]  # (scripts stay home)
    assert licence == (REPO / "LICENSE").read_text() and licence.startswith("Mozilla Public License Version 2.0")
    assert "License-Expression: MPL-2.0" in meta and "License-File: LICENSE" in meta
    assert re.search(r"^Project-URL: .+, https://", meta, re.M), "no project URLs"
    assert "Provides-Extra: spark" in meta
    assert [line for line in meta.splitlines() if line.startswith("Requires-Dist: pyspark")] == \
        ["Requires-Dist: pyspark<5,>=4.0; extra == 'dev'", "Requires-Dist: pyspark<5,>=4.0; extra == 'spark'"]
    # The package index shows the description without the repository around it: no image or relative link.
    description = meta.split("\n\n", 1)[1]
    assert "ZMTP Lab" in description and "make test" in description
    assert not re.findall(r"!\[[^\]]*\]\(", description)
    assert not re.findall(r"\]\((?!https?://|#)[^)]*\)", description)


def test_version(installed: Installed) -> None:
    out = run(installed.zmtplab, "--version", cwd=installed.work, env=clean_env())
    assert out.stdout.strip() == f"zmtplab {VERSION}"


def test_the_command_line_reads_the_shipped_captures(installed: Installed) -> None:
    capture = installed.package_dir() / "captures" / "dealer_router.pcapng"
    out = run(installed.zmtplab, "dissect", capture, "--no-fields", cwd=installed.work, env=clean_env())
    assert "READY Socket-Type=DEALER Identity=client-1" in out.stdout


@pytest.mark.browser
def test_every_page_loads(server: str) -> None:
    pages = check_pages(server)
    assert pages["/corpus.html"]["unavailable"] == f"Runs cannot start on this server: {NO_PYSPARK}", pages
    assert pages["/corpus.html?lang=zh-CN"]["unavailable"] == f"这台服务器无法启动运行\uff1a{NO_PYSPARK_ZH}", pages
    glossary = json.loads((REPO / "frontend" / "i18n" / "glossary.json").read_text("utf-8"))
    assert pages["/glossary.html"]["terms"] == len(glossary["terms"]) >= 30, pages


def test_every_lesson_step_answers(server: str) -> None:
    assert check_lessons(server) >= 90


def test_a_teachers_own_lessons(server: str, installed: Installed, own_lessons: Path) -> None:
    listed = get_json(server, "/api/lessons")
    assert listed["problems"] == [] and "our-first" in [lesson["id"] for lesson in listed["lessons"]], listed
    assert get_json(server, "/api/lessons/our-first?lang=zh-CN")["title"] == "我们的第一堂课"
    for number in (2, 3):
        scene = get_json(server, f"/api/lessons/our-first/steps/{number}")
        assert scene["events"][scene["element"]]["kind"] == "greeting", scene
    out = run(installed.zmtplab, "lessons", "check", own_lessons, cwd=installed.work, env=clean_env())
    assert "ok    our-first: 3 steps, in en, zh-CN" in out.stdout, out.stdout


def test_an_upload_is_dissected(server: str, installed: Installed) -> None:
    capture_id = upload(server, installed.package_dir() / "captures" / "broker.pcapng")
    summary = dissected(server, capture_id)
    assert summary["events"] > 0 and len(summary["connections"]) >= 2, summary
    events = get_json(server, f"/api/captures/{capture_id}/events?limit=5")
    assert events["events"][0]["kind"] == "greeting"


def test_without_the_spark_extra_the_pipeline_says_how_to_get_it(server: str, installed: Installed) -> None:
    assert get_json(server, "/api/corpus/status") == {"available": False, "problem": NO_PYSPARK}
    assert get_json(server, "/api/corpus/status?lang=zh-CN") == {"available": False, "problem": NO_PYSPARK_ZH}
    capture_id = upload(server, installed.package_dir() / "captures" / "push_pull.pcapng")
    dissected(server, capture_id)
    code, answer = request(server, "POST", "/api/corpus/runs", {"captures": [capture_id]})
    assert (code, answer) == (503, {"detail": NO_PYSPARK})
    done = subprocess.run([str(installed.zmtplab), "pipeline", "in", "--out", "out"], cwd=installed.work,
                          env=clean_env(), capture_output=True, text=True, check=False)
    assert done.returncode == 1, done
    assert done.stderr.strip() == f"zmtplab pipeline: {NO_PYSPARK}"
