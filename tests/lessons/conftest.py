"""Fixtures of the lesson tests: the shipped lessons played once, an app, and a real server on a free port."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's "use httpx2" notice
    from fastapi.testclient import TestClient

from testkit import LiveServer
from zmtplab.lessons import load_lessons, play_lesson
from zmtplab.web import Settings, create_app
from zmtplab.web.classes.registry import ClassLimits

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "lessons"


@pytest.fixture(scope="session")
def lessons():
    return load_lessons()


@pytest.fixture(scope="session")
def played(lessons):
    """Every shipped lesson, played: id -> list of StepScene."""
    logging.getLogger("zmtplab.peers").setLevel(logging.ERROR)  # peers refusing each other on purpose
    return {lesson_id: play_lesson(lesson) for lesson_id, lesson in lessons.items()}


def make_app(data_dir: Path, limits: ClassLimits | None = None):
    # Every class of a test comes from one address: the per-address limit has its own test (test_hostile.py).
    return create_app(Settings(data_dir=data_dir, frontend_dir=REPO / "frontend", reap_interval=0.5),
                      class_limits=limits or ClassLimits(max_classes_per_address=1000))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with TestClient(make_app(tmp_path_factory.mktemp("data"))) as c:
        yield c


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A real server (its class registry: 50 students per class, small messages, 1 s to send `auth`)."""
    app = make_app(tmp_path_factory.mktemp("live"), ClassLimits(max_students=50, max_message=4096, auth_timeout=1.0,
                                                                      max_classes_per_address=1000))
    server = LiveServer(app, name="lesson-test-server", ws_max_size=1 << 20).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
