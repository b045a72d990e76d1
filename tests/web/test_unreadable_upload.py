"""An uploaded capture whose only TCP connection cannot be read as ZMTP: the summary lists it (`zmtp` false) with
its expert note, and its events are that note, not "no connections"."""

from __future__ import annotations

import pytest
from webkit import dissected, open_client

from synthetic import capture, middle_of_a_frame, not_zmtp


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("data")) as c:
        yield c


@pytest.mark.parametrize(("build", "notes"), [(middle_of_a_frame, 1), (not_zmtp, 2)])
def test_summary_and_events_show_the_connection(client, build, notes):
    capture_id, summary = dissected(client, capture(build))
    assert summary["state"] == "done"
    [conn] = summary["connections"]
    assert conn["zmtp"] is False and conn["expert"]["warn"] == notes
    page = client.get(f"/api/captures/{capture_id}/events", params={"conn": conn["conn"]}).json()
    assert page["total"] == notes
    assert all(e["kind"] == "expert" and e["rule"] == "unreadable" for e in page["events"])
    assert "could not be read as ZMTP" in page["events"][0]["text"]
