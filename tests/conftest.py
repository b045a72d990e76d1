"""What the whole suite shares: Hypothesis's settings, and how pytest-xdist shares the tests out.

`make test` runs the suite on one pytest-xdist worker per core (`-n auto --dist loadgroup`). Each test module is
one unit of work, so its module fixtures (a server, a browser, a dissected capture) are made once; the modules in
`SHARED_UNITS` go to one worker together, so the session fixture they share (the Spark session: a JVM, seconds to
start and 2 GB of heap) starts once. The units are handed out longest first (`WEIGHTS`), so no long unit starts
last while the other worker idles. (xdist's own loadgroup reads `xdist_group` marks into node ids, which pytest 9
no longer lets a plugin change: the units are made here, from the node ids.)"""

from __future__ import annotations

import os
import warnings
from typing import Any

import pytest
from hypothesis import settings

# Hypothesis times each example against a deadline (200 ms by default): on a loaded machine a slow example is no
# bug, and the suite must pass there. A test that bounds an example's time sets its own deadline.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

# Modules that share an expensive session fixture: one unit of work each fixture (checked at collection).
SHARED_UNITS = {
    "tests/pipeline/test_spark_pipeline.py": "spark",
    "tests/pipeline/test_standalone_cluster.py": "spark",
}
SHARED_FIXTURES = frozenset(SHARED_UNITS.values())

# Wall seconds each unit's tests took (set-up, call and teardown) in one run of the whole suite on two workers, as
# `benchmarks/suite_time.py --weights -n 2 --dist loadgroup` prints them (2 cores, load 13-15 from other work: the
# figures are relative); a unit not named (each took under 15 s) counts WEIGHT_UNNAMED. Only the order comes from
# these: a stale figure costs minutes, never a check.
WEIGHT_UNNAMED = 5.0
WEIGHTS: dict[str, float] = {
    "spark": 450,
    "tests/web/test_crash_recovery.py": 279,
    "tests/capture/test_damaged_captures.py": 119,
    "tests/browser/test_accessibility_browser.py": 109,
    "tests/web/test_event_store.py": 104,
    "tests/web/test_web_corpus.py": 104,
    "tests/sessions/test_session_driver.py": 95,
    "tests/browser/test_projector_browser.py": 90,
    "tests/analysis/test_analyze.py": 83,
    "tests/capture/test_dissect_output.py": 79,
    "tests/pipeline/test_ranges.py": 73,
    "tests/browser/test_corpus_browser.py": 68,
    "tests/browser/test_i18n_browser.py": 60,
    "tests/browser/test_replay_browser.py": 54,
    "tests/install/test_wheel.py": 53,
    "tests/web/test_hostile_budgets.py": 52,
    "tests/browser/test_class_network_browser.py": 50,
    "tests/web/test_search_safety.py": 47,
    "tests/browser/test_playground_teacher_browser.py": 47,
    "tests/test_sample_captures.py": 46,
    "tests/browser/test_teaching_browser.py": 46,
    "tests/browser/test_topology_browser.py": 46,
    "tests/peers/test_cli_peer.py": 45,
    "tests/engine/test_libzmq_captures.py": 44,
    "tests/web/test_web_captures.py": 42,
    "tests/browser/test_capture_viewer_issue16.py": 38,
    "tests/lessons/test_presenter.py": 36,
    "tests/web/test_web_live.py": 36,
    "tests/lessons/test_teaching_lessons_browser.py": 34,
    "tests/analysis/test_incidents.py": 34,
    "tests/web/test_topology_libzmq.py": 33,
    "tests/replay/test_replay.py": 30,
    "tests/browser/test_illustrate_browser.py": 29,
    "tests/browser/test_keyboard_browser.py": 28,
    "tests/test_layers.py": 26,
    "tests/browser/test_capture_browser.py": 26,
    "tests/browser/test_external_nodes_browser.py": 26,
    "tests/web/test_illustrated_routes.py": 25,
    "tests/lessons/test_lesson_problems.py": 24,
    "tests/web/test_capture_replay.py": 24,
    "tests/browser/test_topology_busy_browser.py": 24,
    "tests/browser/test_playground_browser.py": 23,
    "tests/capture/test_pcapwriter.py": 22,
    "tests/browser/test_screenreader_browser.py": 22,
    "tests/lessons/test_own_lessons.py": 21,
    "tests/browser/test_paste_hex_browser.py": 20,
    "tests/lessons/test_exercises_browser.py": 20,
    "tests/browser/test_capture_overview_browser.py": 19,
    "tests/capture/test_json_runs.py": 19,
    "tests/lessons/test_lessons_browser.py": 19,
    "tests/web/test_limits.py": 19,
    "tests/web/test_wsprotocol.py": 18,
    "tests/web/test_hostile.py": 18,
    "tests/engine/test_zws.py": 18,
    "tests/pipeline/test_stages.py": 16,
    "tests/web/test_web_sessions.py": 15,
    "tests/lessons/test_topology_lessons_browser.py": 15,
    "tests/capture/test_pcapfile.py": 15,
}


def unit_of(nodeid: str) -> str:
    """The unit of work of the test `nodeid`: its module, or the shared unit its module belongs to."""
    module = nodeid.split("::", 1)[0]
    return SHARED_UNITS.get(module, module)


def weight(nodeid: str) -> float:
    return WEIGHTS.get(unit_of(nodeid), WEIGHT_UNNAMED)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `--dist loadgroup`: xdist's scope scheduling over this file's units, in the order the workers
    collected them (longest first), rather than by test count."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False
    return UnitScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: the tests ordered by their unit's weight, longest first (each unit's tests kept
    together and in their order), which is the order the units are handed out in."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    unlisted = {item.nodeid.split("::", 1)[0] for item in items
                if SHARED_FIXTURES.intersection(getattr(item, "fixturenames", ())) - {unit_of(item.nodeid)}}
    for module in sorted(unlisted):
        warnings.warn(f"{module} uses a session fixture of {sorted(SHARED_FIXTURES)}: name it in tests/conftest.py's "
                      "SHARED_UNITS, or a second worker starts that session too", stacklevel=1)
    first: dict[str, int] = {}
    for n, item in enumerate(items):
        first.setdefault(unit_of(item.nodeid), n)
    items.sort(key=lambda item: (-weight(item.nodeid), first[unit_of(item.nodeid)]))
