"""A stored capture replayed as a topology (`zmtplab.replay`), for the playground's *Open in playground*.

`replay_capture` is what `POST /api/captures/{id}/replay` answers: `zmtplab replay --json`'s object (in the
language asked for) and, for the playground, `topology` (the replay with its changes as the body
`POST /api/sessions` takes: a normal topology session, not a fork of the session machinery), `topology_notes`
(what that topology leaves out) and `playground` (why it is too large for a session, empty when it is not).
The work reads the capture again and runs the simulator twice: it runs in a worker thread, a few at a time
(`REPLAY_SLOTS`), on captures of at most `MAX_REPLAY_BYTES` and their first `MAX_MESSAGES` messages.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ...i18n import localize_replay, translate
from ...replay import ReplayModel, apply_changes, fits_topology, parse_change, replay
from ..core.errors import TooMany

MAX_REPLAY_BYTES = 64 << 20  # a larger capture is for `zmtplab replay`, not a request
MAX_CHANGES = 16
MAX_MESSAGES = 2_000  # messages a replay here takes (a session's script takes 256 sends; the CLI takes 20,000)
REPLAY_SLOTS = 2  # replays running at once in one server


class ReplayRequest(BaseModel):
    """The body of `POST /api/captures/{id}/replay`: the changes, as `zmtplab replay --set` takes them."""

    set: list[str] = Field(default_factory=list, max_length=MAX_CHANGES,
                           description="NODE.OPTION=VALUE changes (zmtplab replay --set)")


class ReplayBusy(TooMany):
    """As many replays run as the server allows."""


class ReplayTooLarge(Exception):
    """The capture is larger than a replay here may read."""


_slots = threading.BoundedSemaphore(REPLAY_SLOTS)


def replay_capture(path: Path, changes: list[str], lang: str) -> dict[str, Any]:
    """The replay of the capture at `path` with `changes` (see the module); raises `ReplayBusy`, `ReplayTooLarge`,
    and `replay.ReplayError` (a bad change, a capture nothing of which can be replayed)."""
    if path.stat().st_size > MAX_REPLAY_BYTES:
        raise ReplayTooLarge(f"the capture is larger than {MAX_REPLAY_BYTES >> 20} MB: replay it with zmtplab replay")
    if not _slots.acquire(blocking=False):
        raise ReplayBusy("the server is replaying as many captures as it may: try again in a moment")
    try:
        parsed = [parse_change(text) for text in changes]
        with path.open("rb") as handle:
            model = ReplayModel.from_capture(handle, max_messages=MAX_MESSAGES)
        result = localize_replay(replay(model, parsed), lang)
        changed = apply_changes(model, parsed) if parsed else model
        result["topology"] = changed.topology().to_dict()
        result["topology_notes"] = [{**n, "text": translate(n["text"], lang)} for n in changed.topology_notes()]
        result["playground"] = [translate(p, lang) for p in fits_topology(changed)]
        return result
    finally:
        _slots.release()
