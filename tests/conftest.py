"""What the whole suite shares: Hypothesis's settings."""

from __future__ import annotations

from hypothesis import settings

# Hypothesis times each example against a deadline (200 ms by default): on a loaded machine a slow example is no
# bug, and the suite must pass there. A test that bounds an example's time sets its own deadline.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")
