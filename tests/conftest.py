"""What the whole suite shares: Hypothesis's settings, and how pytest-xdist shares the tests out.

`make test` runs the suite on three pytest-xdist workers for two cores (`-n 3 --dist loadgroup`, the Makefile's
TEST_WORKERS). Each test module is
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
# `benchmarks/suite_time.py --weights -n 2 --dist loadgroup` prints them (2 cores, load 7-16 from other work: the
# figures are relative); a unit not named (each took under 15 s) counts WEIGHT_UNNAMED. Only the order comes from
# these: a stale figure costs minutes, never a check.
WEIGHT_UNNAMED = 5.0
WEIGHTS: dict[str, float] = {
    "spark": 555,
    "tests/web/test_crash_recovery.py": 271,
    "tests/capture/test_damaged_captures.py": 232,
    "tests/web/test_web_corpus.py": 135,
    "tests/web/test_event_store.py": 85,
    "tests/sessions/test_session_driver.py": 81,
    "tests/browser/test_projector_browser.py": 79,
    "tests/browser/test_accessibility_browser.py": 75,
    "tests/browser/test_topology_browser.py": 58,
    "tests/browser/test_playground_teacher_browser.py": 50,
    "tests/install/test_wheel.py": 48,
    "tests/capture/test_dissect_output.py": 48,
    "tests/browser/test_replay_browser.py": 43,
    "tests/browser/test_i18n_browser.py": 41,
    "tests/browser/test_teaching_browser.py": 40,
    "tests/web/test_search_safety.py": 38,
    "tests/web/test_hostile_budgets.py": 38,
    "tests/lessons/test_teaching_lessons_browser.py": 35,
    "tests/browser/test_capture_viewer_issue16.py": 35,
    "tests/browser/test_class_network_browser.py": 33,
    "tests/web/test_topology_libzmq.py": 31,
    "tests/lessons/test_lessons_browser.py": 30,
    "tests/browser/test_corpus_browser.py": 30,
    "tests/browser/test_illustrate_browser.py": 30,
    "tests/lessons/test_lesson_problems.py": 28,
    "tests/peers/test_cli_peer.py": 28,
    "tests/web/test_web_captures.py": 28,
    "tests/replay/test_replay.py": 27,
    "tests/pipeline/test_ranges.py": 27,
    "tests/browser/test_capture_browser.py": 27,
    "tests/web/test_illustrated_routes.py": 26,
    "tests/browser/test_capture_overview_browser.py": 25,
    "tests/analysis/test_incidents.py": 25,
    "tests/browser/test_topology_busy_browser.py": 24,
    "tests/lessons/test_presenter.py": 23,
    "tests/browser/test_keyboard_browser.py": 22,
    "tests/browser/test_playground_browser.py": 22,
    "tests/engine/test_libzmq_captures.py": 21,
    "tests/browser/test_external_nodes_browser.py": 20,
    "tests/browser/test_screenreader_browser.py": 19,
    "tests/lessons/test_exercises_browser.py": 18,
    "tests/capture/test_pcapfile.py": 18,
    "tests/web/test_limits.py": 17,
    "tests/analysis/test_analyze.py": 17,
    "tests/lessons/test_own_lessons.py": 17,
    "tests/lessons/test_topology_lessons_browser.py": 16,
    "tests/test_layers.py": 16,
    "tests/web/test_hostile.py": 16,
    "tests/web/test_web_live.py": 16,
    "tests/pipeline/test_stages.py": 15,
    "tests/engine/test_zws.py": 15,
    "tests/test_sample_captures.py": 15,
    "tests/capture/test_pcapwriter.py": 15,
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
