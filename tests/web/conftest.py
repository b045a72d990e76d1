"""Fixtures of the web tests (their helpers are in webkit.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from webkit import TestClient, open_client


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app per test module (its dissection workers are shared by the module's tests)."""
    with open_client(tmp_path_factory.mktemp("data")) as c:
        yield c
