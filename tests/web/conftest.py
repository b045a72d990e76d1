"""Fixtures of the web tests: apps on temporary data directories, uploads, waiting for dissections."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's "use httpx2" notice
    from fastapi.testclient import TestClient

from testkit import event_stream, upload
from zmtplab.web import Settings, create_app

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[3] / "shared" / "captures"  # shared/ sits beside the repository
LOCAL = REPO / "captures"
_THIS = sys.modules[__name__]


def pytest_pycollect_makemodule(module_path: Path, parent: Any) -> None:
    """The test modules here `from conftest import ...` this file. When `pytest tests/web tests/lessons`
    loads another directory's conftest.py after this one, that one holds the name `conftest`: give it back
    to this file before the modules here are imported (collection then goes on as usual)."""
    sys.modules["conftest"] = _THIS


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
                              "max_captures_per_client": 10_000, "max_sessions_per_client": 1000}
    values.update(overrides)
    return Settings(**values)


def open_client(data_dir: Path, **overrides: Any) -> TestClient:
    return TestClient(create_app(make_settings(data_dir, **overrides)))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app per test module (its dissection workers are shared by the module's tests)."""
    with open_client(tmp_path_factory.mktemp("data")) as c:
        yield c


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
