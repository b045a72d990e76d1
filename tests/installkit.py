"""Checks of a ZMTP Lab server as its users install it (`tests/install/`: the wheel in a fresh virtual
environment, the container image), made over HTTP at its base URL like any client: its health, the pages in
Chromium, every step of every lesson, an upload dissected, a corpus run.

    wait_healthy(base, alive=process.poll)   # until GET /api/health answers 200 (or the server died)
    check_pages(base)                         # {page: title}; fails naming the request or error
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testkit import VIEWPORT, chromium

REPO = Path(__file__).resolve().parents[1]
# The pages and the catalog ids of their titles, which the page's modules set: a title shows that the page's
# scripts and its language's catalog loaded.
PAGES = {"/": "ui.title.playground", "/capture.html": "ui.title.capture", "/lessons.html": "ui.title.lessons",
         "/corpus.html": "ui.title.corpus", "/glossary.html": "ui.title.glossary"}
LANGS = ("en", "zh-CN")
TERMINAL_CAPTURE = ("done", "error")
TERMINAL_RUN = ("done", "error", "cancelled")


class ServerGone(AssertionError):
    """The server exited while a check waited for it."""


def request(base: str, method: str, path: str, body: Any = None, *, timeout: float = 60) -> tuple[int, Any]:
    """(status, decoded JSON or text) of one request; JSON `body` sent as JSON. Error statuses are answers too."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            status, raw, kind = response.status, response.read(), response.headers.get("content-type", "")
    except urllib.error.HTTPError as exc:
        status, raw, kind = exc.code, exc.read(), exc.headers.get("content-type", "")
    return status, json.loads(raw) if kind.startswith("application/json") and raw else raw.decode("utf-8", "replace")


def get_json(base: str, path: str) -> Any:
    """The JSON of a GET that must answer 200."""
    status, answer = request(base, "GET", path)
    assert status == 200, f"GET {path}: {status} {answer}"
    return answer


def wait_for(what: str, check: Callable[[], Any], within: float, alive: Callable[[], Any] | None = None) -> Any:
    """`check()`'s first true answer, polled until `within` seconds pass; `alive()` returning not-None means the
    server exited (a `Popen.poll`): fails at once then."""
    deadline = time.monotonic() + within
    while True:
        gone = None if alive is None else alive()
        if gone is not None:
            raise ServerGone(f"the server exited ({gone}) while waiting for {what}")
        answer = check()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within:.0f} s")
        time.sleep(0.1)


def wait_healthy(base: str, within: float = 120, alive: Callable[[], Any] | None = None) -> None:
    """Until `GET /api/health` answers 200 `{"status": "ok"}`."""

    def healthy() -> bool:
        try:
            return request(base, "GET", "/api/health", timeout=5) == (200, {"status": "ok"})
        except OSError:
            return False

    wait_for(f"{base}/api/health", healthy, within, alive)


def check_pages(base: str, *, screenshots: Path | None = None) -> dict[str, dict[str, Any]]:
    """Each page in Chromium (in English, and the Corpus page in Chinese too: the other catalog): every request
    it makes answers below 400, no script error, and its modules set its title. Returns per page and language
    (`/corpus.html?lang=zh-CN`) its title, for the Corpus page its note on Spark (`unavailable`: the text, or None
    when runs can start) and for the glossary the number of its terms (`terms`)."""
    catalogs = {lang: json.loads((REPO / "frontend" / "i18n" / f"{lang}.json").read_text("utf-8")) for lang in LANGS}
    seen: dict[str, dict[str, Any]] = {}
    with chromium() as browser:
        for path, title_id in PAGES.items():
            for lang in LANGS if path == "/corpus.html" else LANGS[:1]:
                title = catalogs[lang][title_id]
                context = browser.new_context(viewport=VIEWPORT, locale=lang)
                page = context.new_page()
                failed: list[str] = []
                errors: list[str] = []
                page.on("response", lambda r, failed=failed: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
                page.on("requestfailed", lambda r, failed=failed: failed.append(f"{r.failure} {r.url}"))
                page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
                page.on("console", lambda m, errors=errors: m.type == "error" and errors.append(m.text))
                response = page.goto(f"{base}{path}?lang={lang}", wait_until="networkidle", timeout=60_000)
                assert response is not None and response.status == 200 and not failed and not errors, \
                    f"{path}?lang={lang}: {response and response.status}; failed: {failed}; errors: {errors}"
                page.wait_for_function("t => document.title === t", arg=title, timeout=30_000)
                entry: dict[str, Any] = {"title": page.title()}
                if path == "/corpus.html":  # (its note on Spark comes from GET /api/corpus/status)
                    page.wait_for_load_state("networkidle")
                    note = page.locator("#corpus-unavailable")
                    entry["unavailable"] = note.inner_text() if note.is_visible() else None
                if path == "/glossary.html":  # (its terms come from i18n/glossary.json)
                    page.wait_for_function("() => document.querySelectorAll('#glossary-terms tr').length > 0",
                                           timeout=30_000)
                    entry["terms"] = page.locator("#glossary-terms tr").count()
                if screenshots is not None:
                    page.screenshot(path=str(screenshots / f"{path.strip('/').replace('.html', '') or 'index'}-"
                                                          f"{lang}.png"))
                context.close()
                assert failed == [], f"{path}?lang={lang}: requests that failed: {failed}"
                assert errors == [], f"{path}?lang={lang}: errors in the page: {errors}"
                seen[path if lang == "en" else f"{path}?lang={lang}"] = entry
    return seen


def check_lessons(base: str) -> int:
    """Every step of every lesson answers 200 with its scene, and every lesson comes in Chinese; returns the
    number of steps."""
    lessons = get_json(base, "/api/lessons")["lessons"]
    assert len(lessons) >= 15, lessons
    steps = 0
    for lesson in lessons:
        full = get_json(base, f"/api/lessons/{lesson['id']}")
        chinese = get_json(base, f"/api/lessons/{lesson['id']}?lang=zh-CN")
        assert chinese["title"] != full["title"], f"lesson {lesson['id']} has no Chinese text"
        for number in range(1, lesson["step_count"] + 1):
            status, scene = request(base, "GET", f"/api/lessons/{lesson['id']}/steps/{number}")
            assert status == 200, f"lesson {lesson['id']} step {number}: {status} {scene}"
            assert scene["number"] == number and scene["events"], scene
            steps += 1
    return steps


def upload(base: str, path: Path) -> str:
    """POSTs a capture as a multipart upload (as the capture viewer does); returns its id."""
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path.name}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + path.read_bytes() + \
        f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(base + "/api/captures", data=body, method="POST",
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=60) as response:
        assert response.status == 201, response.status
        return json.loads(response.read())["id"]


def dissected(base: str, capture_id: str, within: float = 120) -> dict[str, Any]:
    """The capture's summary once its dissection ended (it must end `done`)."""
    summary = wait_for(f"capture {capture_id} dissected",
                       lambda: (s := get_json(base, f"/api/captures/{capture_id}"))["state"] in TERMINAL_CAPTURE
                       and s, within)
    assert summary["state"] == "done", summary
    return summary


def corpus_run(base: str, capture_ids: list[str], within: float = 600) -> dict[str, Any]:
    """Starts a corpus run over these captures and returns the run once it ended (it must end `done`)."""
    status, answer = request(base, "POST", "/api/corpus/runs", {"captures": capture_ids})
    assert status == 202, f"POST /api/corpus/runs: {status} {answer}"
    run_id = answer["id"]
    run = wait_for(f"corpus run {run_id}",
                   lambda: (r := get_json(base, f"/api/corpus/runs/{run_id}"))["state"] in TERMINAL_RUN and r, within)
    assert run["state"] == "done", run
    return run
