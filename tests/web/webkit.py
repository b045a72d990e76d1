"""Helpers of the web tests (apps on temporary data directories, uploads, waiting for dissections), in a
module with a name of its own: `from conftest import` would pick whichever folder's conftest loaded last."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's "use httpx2" notice
    from fastapi.testclient import TestClient

from testkit import event_stream, upload
from zmtplab.web import Settings, create_app

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[3] / "shared" / "captures"  # shared/ sits beside the repository
LOCAL = REPO / "captures"


def capture_files() -> list[Path]:
    """Every sample capture: the project's and, where present, the shared reference ones."""
    files = sorted(LOCAL.glob("*.pcapng"))
    if SHARED.is_dir():
        files += sorted(SHARED.glob("*.pcapng"))
    return files


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"data_dir": data_dir, "frontend_dir": REPO / "frontend", "dissect_workers": 2,
                              "progress_interval": 0.1, "reap_interval": 0.2,
                              # every upload and session of a test comes from one address: the per-client
                              # limits have their own tests (test_limits.py)
                              "max_captures_per_client": 10_000, "max_sessions_per_client": 1000,
                              # a search answers whole within its time limit, however loaded the runner (the early
                              # answer of a search whose page is full has its own test, test_search_safety.py)
                              "search_first_seconds": 60.0}
    values.update(overrides)
    return Settings(**values)


def open_client(data_dir: Path, **overrides: Any) -> TestClient:
    return TestClient(create_app(make_settings(data_dir, **overrides)))


def progress(client: TestClient, capture_id: str) -> list[dict[str, Any]]:
    """Every message of a capture's progress stream, until it ends."""
    return event_stream(client, f"/api/captures/{capture_id}/progress")


def dissected(client: TestClient, data: bytes | Path, name: str = "capture.pcapng") -> tuple[str, dict[str, Any]]:
    """Uploads, waits for the dissection, returns (id, summary)."""
    response = upload(client, data, name)
    assert response.status_code == 201, response.text
    capture_id = response.json()["id"]
    messages = progress(client, capture_id)
    assert messages[-1]["state"] in ("done", "error"), messages
    summary = client.get(f"/api/captures/{capture_id}")
    assert summary.status_code == 200
    return capture_id, summary.json()


def receive_until(ws: Any, predicate: Callable[[dict[str, Any]], bool], *, limit: int = 5000) -> list[dict[str, Any]]:
    """Messages from a test client's websocket up to and including the first that satisfies `predicate`."""
    seen: list[dict[str, Any]] = []
    for _ in range(limit):
        message = ws.receive_json()
        seen.append(message)
        if predicate(message):
            return seen
    raise AssertionError(f"not seen in {limit} messages: {seen[-5:]}")


def receive_all(ws: Any, *predicates: Callable[[dict[str, Any]], bool], limit: int = 5000) -> list[dict[str, Any]]:
    """Messages until each predicate has matched one of them (in any order)."""
    seen: list[dict[str, Any]] = []
    left = list(predicates)
    for _ in range(limit):
        message = ws.receive_json()
        seen.append(message)
        left = [p for p in left if not p(message)]
        if not left:
            return seen
    raise AssertionError(f"not all seen in {limit} messages: {seen[-5:]}")


def is_event(kind: str, **keys: Any) -> Callable[[dict[str, Any]], bool]:
    """A predicate: a session's `event` message of this kind, with these keys."""
    def check(m: dict[str, Any]) -> bool:
        return m["type"] == "event" and m["event"]["kind"] == kind and all(m["event"].get(k) == v
                                                                          for k, v in keys.items())
    return check


def ready(ws: Any) -> list[dict[str, Any]]:
    """A session's messages until both READY commands went by (in whichever order)."""
    seen: set[str] = set()

    def both(m: dict[str, Any]) -> bool:
        if m["type"] == "event" and m["event"]["kind"] == "command" and m["event"]["name"] == "READY":
            seen.add(m["event"]["dir"])
        return seen == {"c2s", "s2c"}

    return receive_until(ws, both)


def events_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events among a session's messages."""
    return [m["event"] for m in messages if m["type"] == "event"]
