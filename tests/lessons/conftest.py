"""Fixtures of the lesson tests: the shipped lessons played once, an app, and a real server on a free port."""

from __future__ import annotations

import logging
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's "use httpx2" notice
    from fastapi.testclient import TestClient

from zmtplab.lessons import load_lessons, play_lesson
from zmtplab.web import Settings, create_app
from zmtplab.web.classrooms import ClassLimits, ClassRegistry

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
    app = create_app(Settings(data_dir=data_dir, frontend_dir=REPO / "frontend", reap_interval=0.5))
    app.state.classrooms = ClassRegistry(limits or ClassLimits())
    return app


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with TestClient(make_app(tmp_path_factory.mktemp("data"))) as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """uvicorn serving an app on 127.0.0.1 in a thread of this process."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.app = app
        self.port = free_port()
        self.config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on",
                                     ws_max_size=1 << 20)
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self.server.run, name="lesson-test-server", daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_base(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A real server (its class registry: 50 students per class, small messages, 1 s to send `auth`)."""
    app = make_app(tmp_path_factory.mktemp("live"), ClassLimits(max_students=50, max_message=4096, auth_timeout=1.0))
    server = LiveServer(app).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
