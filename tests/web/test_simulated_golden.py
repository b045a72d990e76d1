"""Simulated sessions show exactly what they showed when the reference was recorded (see sim_scenarios.py):
every event and log message byte for byte, the JSON export and the pcapng export."""

from __future__ import annotations

import asyncio
import gzip
import json

import pytest
from sim_scenarios import GOLDEN, SCENARIOS, run_scenario

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(gzip.decompress(GOLDEN.read_bytes()))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_session_output_is_unchanged(golden, name):
    got = asyncio.run(run_scenario(name))
    want = golden[name]
    for i, (a, b) in enumerate(zip(got["messages"], want["messages"], strict=False)):
        assert a == b, f"message {i} differs"
    assert len(got["messages"]) == len(want["messages"])
    assert got["export_json"] == want["export_json"]
    assert got["pcapng"] == want["pcapng"]
