"""Lessons of one's own (issue 32.11): a lessons directory beside the shipped one (`ZMTPLAB_LESSONS_DIR`), its
files checked with errors that name the file and the step (in the lesson list, in a step that cannot be played,
and by `zmtplab lessons check`), and a playground session saved as a lesson step that loads and plays back."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from zmtplab.lessons import load_lesson_file, play_lesson
from zmtplab.web import Settings, create_app

REPO = Path(__file__).resolve().parents[2]

GOOD = """title: My first lesson
summary: A PUSH and a PULL say hello.
order: 1
steps:
  - title: Hello
    session:
      server: {type: PUSH}
      client: {type: PULL}
    element: {dir: c2s, kind: greeting}
    highlight: [signature]
    narration: The client's greeting.
"""
UNPLAYABLE = GOOD.replace("my first", "my second").replace("[signature]", "[signaturex]")


@pytest.fixture
def own(tmp_path: Path) -> Path:
    directory = tmp_path / "lessons"
    (directory / "zh-CN").mkdir(parents=True)
    (directory / "my-first.yaml").write_text(GOOD, encoding="utf-8")
    (directory / "zh-CN" / "my-first.yaml").write_text(
        "title: 我的第一课\nsummary: PUSH 和 PULL 互相问候。\nsteps:\n- title: 问候\n  narration: 客户端的问候语。\n",
        encoding="utf-8")
    (directory / "broken.yaml").write_text("title: Broken\nsummary: x\nsteps:\n  - title: no narration\n",
                                           encoding="utf-8")
    (directory / "unplayable.yaml").write_text(UNPLAYABLE, encoding="utf-8")
    return directory


def test_a_lessons_directory_beside_the_shipped_lessons(tmp_path: Path, own: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", frontend_dir=REPO / "frontend", lessons_dir=own))
    with TestClient(app) as client:
        listed = client.get("/api/lessons").json()
        ids = [lesson["id"] for lesson in listed["lessons"]]
        assert ids[0] == "my-first" and "greeting" in ids and "unplayable" in ids
        assert listed["problems"] == [{"file": "broken.yaml", "error": "broken.yaml: step 1 ('no narration'): "
                                                                       "narration: Field required"}]
        scene = client.get("/api/lessons/my-first/steps/1").json()
        assert scene["events"][scene["element"]]["kind"] == "greeting"
        assert client.get("/api/lessons/my-first", params={"lang": "zh-CN"}).json()["title"] == "我的第一课"
        refused = client.get("/api/lessons/unplayable/steps/1")
        assert refused.status_code == 422
        assert "step 1 ('Hello'): field 'signaturex' is not in the greeting element" in refused.json()["detail"]


def test_lessons_check_names_the_file_and_the_step(own: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "zmtplab.cli", "lessons", "check", str(own)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1
    assert "ok    my-first: 1 steps, in en, zh-CN" in run.stdout
    assert "error broken.yaml: step 1 ('no narration'): narration: Field required" in run.stdout
    assert "error lesson unplayable: step 1 ('Hello'): field 'signaturex'" in run.stdout
    (own / "broken.yaml").unlink()
    (own / "unplayable.yaml").unlink()
    run = subprocess.run([sys.executable, "-m", "zmtplab.cli", "lessons", "check", str(own)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout


OWN_CAPTURE = """title: Our lab's capture
summary: A capture we made in the lab.
steps:
  - title: The router's greeting
    capture: {file: our-lab.pcapng}
    element: {dir: s2c, kind: greeting}
    narration: The ROUTER's greeting, as we captured it.
"""


def test_a_teachers_captures_beside_the_lessons(tmp_path: Path) -> None:
    """A step's capture is looked up in the lesson's own directory, then among the samples; one in neither is
    named with both places, over HTTP and by the command."""
    own = tmp_path / "lessons"
    own.mkdir()
    shutil.copy(REPO / "captures" / "dealer_router.pcapng", own / "our-lab.pcapng")
    (own / "our-lab.yaml").write_text(OWN_CAPTURE, encoding="utf-8")
    (own / "lost.yaml").write_text(OWN_CAPTURE.replace("our-lab.pcapng", "lost.pcapng"), encoding="utf-8")
    app = create_app(Settings(data_dir=tmp_path / "data", frontend_dir=REPO / "frontend", lessons_dir=own))
    with TestClient(app) as client:
        scene = client.get("/api/lessons/our-lab/steps/1").json()
        greeting = scene["events"][scene["element"]]
        assert greeting["kind"] == "greeting" and greeting["dir"] == "s2c"
        refused = client.get("/api/lessons/lost/steps/1")
        assert refused.status_code == 422
        assert f"capture lost.pcapng not found in {own} or " in refused.json()["detail"]
    run = subprocess.run([sys.executable, "-m", "zmtplab.cli", "lessons", "check", str(own)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1 and "ok    our-lab: 1 steps" in run.stdout, run.stdout
    assert f'error lesson lost: step 1 ("The router\'s greeting"): capture lost.pcapng not found in {own} or ' \
        in run.stdout, run.stdout


def test_a_session_saved_as_a_lesson_step_plays_back(tmp_path: Path) -> None:
    """The load-balancing preset, played, saved as a lesson step: the file loads as a lesson and, played, its
    workers get the same tasks as in the session."""
    app = create_app(Settings(data_dir=tmp_path / "data", frontend_dir=REPO / "frontend"))
    with TestClient(app) as client:
        session_id = client.post("/api/sessions", json={"preset": "load-balancing"}).json()["id"]
        with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
            reads = 0
            while reads < 6:
                m = ws.receive_json()
                reads += m["type"] == "event" and m["event"]["kind"] == "peer" and m["event"]["what"] == "recv"
        got = client.get(f"/api/sessions/{session_id}/lesson.yaml")
        assert got.status_code == 200 and got.headers["content-type"].startswith("application/yaml")
    path = tmp_path / f"session-{session_id[:8]}.yaml"
    path.write_bytes(got.content)
    lesson = load_lesson_file(path)
    step = yaml.safe_load(got.text)["steps"][0]
    assert [n["name"] for n in step["topology"]["nodes"]] == ["vent", "w1", "w2", "w3"]
    scene = play_lesson(lesson)[-1]
    inbox = {}
    for e in scene.events:
        if e.get("kind") == "peer" and e.get("what") == "recv":
            inbox.setdefault(e["peer"], []).append(bytes.fromhex(e["frames"][0]).decode())
    assert inbox == {"w1": ["task 1", "task 4"], "w2": ["task 2", "task 5"], "w3": ["task 3", "task 6"]}
