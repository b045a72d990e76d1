"""Helpers several test folders share (on `sys.path` through pytest's `pythonpath`): free ports, a
real uvicorn server in a thread, and uploads and event streams through a test client."""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import spark_cds

T = TypeVar("T")


def upload(client: Any, data: bytes | Path, name: str = "capture.pcapng") -> Any:
    """POSTs a capture to `/api/captures`; returns the response."""
    if isinstance(data, Path):
        with data.open("rb") as f:
            return client.post("/api/captures", files={"file": (name, f, "application/octet-stream")})
    return client.post("/api/captures", files={"file": (name, data, "application/octet-stream")})


def event_stream(client: Any, path: str) -> list[dict[str, Any]]:
    """Every JSON message of a server-sent event stream, until the server ends it."""
    messages = []
    with client.stream("GET", path) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                messages.append(json.loads(line[len("data: "):]))
    return messages


# The JVM options of every Spark the tests start (their sessions live seconds to minutes over small inputs): the
# client compiler only and one GC thread. The JIT's second tier and a parallel GC cost more CPU than they save in runs
# this short: the Spark pipeline module's CPU time falls from 114 s to 65 s with them. And the classes Spark loads at
# start mapped from `make test`'s class archive (spark_cds.py) where a JVM's class path matches it.
SPARK_SHORT_JVM = f"{spark_cds.SHORT_JVM} {spark_cds.jvm_options()}".strip()


def free_port() -> int:
    """A TCP port nothing listens on right now (on 127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """`uvicorn` serving an app on 127.0.0.1 (a free port) in a thread of this process."""

    def __init__(self, app: Any, *, name: str = "test-server", **config: Any) -> None:
        import uvicorn

        self.app = app
        self.port = free_port()
        from zmtplab.web.core.wsprotocol import CommandFrameProtocol
        from zmtplab.web.server import uvicorn_config

        options = {"log_level": "warning", "lifespan": "on", **config}
        settings = getattr(getattr(app, "state", None), "settings", None)
        if settings is not None:  # our app: served as `zmtplab serve` serves it (zmtplab.web.server)
            self.config = uvicorn_config(app, settings, host="127.0.0.1", port=self.port, **options)
        else:
            self.config = uvicorn.Config(app, host="127.0.0.1", port=self.port, ws=CommandFrameProtocol, **options)
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self.server.run, name=name, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_base(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self) -> LiveServer:
        """Starts the server and waits until it accepts connections."""
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Asks the server to exit and waits for its thread (an app's lifespan may stop a Spark session)."""
        self.server.should_exit = True
        self.thread.join(60)

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# Debian's Chromium, as every browser test drives it through Playwright (never `playwright install`).
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1500, "height": 950}


# A page of ours is ready when its entry module has run (main-*.js marks <html data-ready>): its controls listen.
# The browser's load event comes earlier (the module awaits its language catalogs), so a click made as soon as
# `goto` returns could fall on a button with no listener yet: a loaded machine made that happen.
APP_READY = ("() => document.documentElement.dataset.ready !== undefined"
             " || !document.querySelector('script[type=module][src*=\"main-\"]')")


def _then_ready(navigate: Any) -> Any:
    @functools.wraps(navigate)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        response = navigate(self, *args, **kwargs)
        self.wait_for_function(APP_READY)
        return response

    wrapper.waits_for_app = True
    return wrapper


def _pages_wait_for_apps() -> None:
    """`Page.goto` and `Page.reload` return once one of our pages is ready (`APP_READY`), in every test."""
    from playwright.sync_api import Page

    for name in ("goto", "reload"):
        method = getattr(Page, name)
        if not getattr(method, "waits_for_app", False):
            setattr(Page, name, _then_ready(method))


# A page's views have settled on their size after three frames: a resize is observed in one, its redraw queued for
# the next (core/frames.js), and drawn there (the app has no CSS transitions, and no redraw waits on a timer).
SETTLED = ("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() =>"
           " requestAnimationFrame(done))))")


def poll(read: Callable[[], T], done: Callable[[T], bool], timeout: float = 30.0,
         pause: Callable[[], object] | None = None) -> T:
    """`read()` again until `done(value)` holds or `timeout` seconds have passed; the last value, which the caller
    asserts on: a state polled for, never a time waited. `pause` runs between two reads (50 ms of sleep unless
    given: a browser test passes its page's `wait_for_timeout`, which keeps Playwright's events flowing)."""
    deadline = time.monotonic() + timeout
    while not done(value := read()) and time.monotonic() < deadline:
        if pause is None:
            time.sleep(0.05)
        else:
            pause()
    return value


def settle(page: Any) -> None:
    """Until the page's views have redrawn at their new size (`SETTLED`): a state, not a time."""
    page.evaluate(SETTLED)


def launch_chromium(playwright: Any) -> Any:
    """Debian's Chromium, headless, through a started `sync_playwright()`; a clear failure when it is missing.
    Its pages' `goto` and `reload` wait for our apps to be ready."""
    assert CHROMIUM.exists(), f"Debian's chromium is missing at {CHROMIUM}: `make test` installs it (apt chromium)"
    _pages_wait_for_apps()
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium (`launch_chromium`) for the block, Playwright started and both stopped after it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()
