"""Fixtures of the browser tests: Debian's Chromium through Playwright, a real uvicorn server on a free
127.0.0.1 port, pages that record script errors and dialogs, and the screenshot directories."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit import VIEWPORT, LiveServer, chromium
from zmtplab.web import Settings, create_app
from zmtplab.web.classes.registry import ClassLimits

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
SHARED_CAPTURES = Path(__file__).resolve().parents[3] / "shared" / "captures"  # shared/ sits beside the repository
LOCAL_CAPTURES = REPO / "captures"


def capture_path(name: str) -> Path:
    """A sample capture: the shared reference ones first, then the project's own."""
    for directory in (SHARED_CAPTURES, LOCAL_CAPTURES):
        path = directory / name
        if path.is_file():
            return path
    raise AssertionError(f"sample capture {name} is missing from {SHARED_CAPTURES} and {LOCAL_CAPTURES}")


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One real server for the browser tests: the repository's frontend, uploads in a temporary directory."""
    logging.getLogger("zmtplab.peers").setLevel(logging.ERROR)
    settings = Settings(data_dir=tmp_path_factory.mktemp("browser-data"), frontend_dir=REPO / "frontend",
                        progress_interval=0.1, reap_interval=0.5,
                        # (every test's page is one client, 127.0.0.1, and sessions and captures last: how many a
                        # worker's server holds depends on which modules the scheduler gave it, so the per-client
                        # limits are out of the way; a limit's own test has its own server)
                        max_sessions_per_client=64, max_captures_per_client=1000)
    # (The same for classes: a class lives two minutes after its teacher leaves, and a worker given the presenting
    # modules together opened a fifth within them: the default four per address refused it.)
    classes = ClassLimits(max_classes_per_address=1000)
    server = LiveServer(create_app(settings, class_limits=classes), name="browser-test-server").start()
    try:
        yield server
    finally:
        server.stop()


# Module scope on purpose: Playwright's sync API keeps an asyncio loop running in this thread while it is
# open, which would break every later test that calls asyncio.run(); each module closes its own.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


class PageErrors:
    """What went wrong in a page: uncaught exceptions, console errors and dialogs (none are expected)."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.expected: list[str] = []  # substrings of console errors a test provokes on purpose

    def console(self, msg: Any) -> None:
        if msg.type == "error" and not any(s in msg.text for s in self.expected):
            # (A failed resource's message does not name it; its location does.)
            url = (msg.location or {}).get("url")
            self.errors.append(f"{msg.text} ({url})" if url else msg.text)

    def dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (own context) whose errors and dialogs are recorded in `page.problems`; the test fails if
    any happened."""
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    # (Caps on waits for a state, reached only when the state never comes: seconds of a loaded machine's
    # scheduling must not fail a test.)
    pg.set_default_timeout(30_000)
    pg.set_default_navigation_timeout(30_000)
    problems = PageErrors()
    pg.on("pageerror", lambda exc: problems.errors.append(str(exc)))
    pg.on("console", problems.console)
    pg.on("dialog", problems.dialog)
    pg.problems = problems
    try:
        yield pg
    finally:
        context.close()
    assert not problems.dialogs, f"dialogs opened: {problems.dialogs}"
    assert not problems.errors, f"errors in the page: {problems.errors}"


@pytest.fixture(scope="session")
def artifacts() -> Any:
    """`artifacts(name)`: test-artifacts/<name>/ (created), where screenshots go."""

    def make(name: str) -> Path:
        path = ARTIFACTS / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    return make


@pytest.fixture(scope="session")
def sample() -> Any:
    """`sample(name)`: the path of a sample capture (see `capture_path`)."""
    return capture_path
