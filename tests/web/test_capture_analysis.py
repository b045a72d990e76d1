"""`GET /api/captures/{id}/analysis`: the capture's analysis, made in the same pass as its dissection, the
events its findings cite numbered like the viewer's."""

from __future__ import annotations

from pathlib import Path

import pytest
from webkit import dissected, open_client

from zmtplab.analysis import analyze_capture

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with open_client(tmp_path_factory.mktemp("data")) as c:
        yield c


@pytest.mark.parametrize("name", ["pub_late_sub", "broker", "push_late_pull", "push_3pull"])
def test_analysis_is_zmtplab_analyze(client, name):
    capture_id, summary = dissected(client, CAPTURES / f"{name}.pcapng")
    assert summary["state"] == "done"
    got = client.get(f"/api/captures/{capture_id}/analysis")
    assert got.status_code == 200
    found = got.json()
    want = analyze_capture(str(CAPTURES / f"{name}.pcapng"))
    strip = [{k: v for k, v in e.items() if k != "index"} for f in found["findings"] for e in f["events"]]
    assert strip == [e for f in want["findings"] for e in f["events"]]
    assert [(f["rule"], f["text"]) for f in found["findings"]] == [(f["rule"], f["text"]) for f in want["findings"]]
    assert found["connections"] == want["connections"] and found["nodes"] == want["nodes"]
    assert len(found["flows"]) == len(want["flows"])


def test_cited_events_open_by_index(client):
    capture_id, _ = dissected(client, CAPTURES / "pub_late_sub.pcapng")
    [finding] = client.get(f"/api/captures/{capture_id}/analysis").json()["findings"]
    [cited] = finding["events"]
    event = client.get(f"/api/captures/{capture_id}/events/{cited['index']}", params={"conn": cited["conn"]}).json()
    assert (event["kind"], event["name"], event["offset"]) == ("command", "SUBSCRIBE", cited["offset"])


def test_unknown_capture(client):
    assert client.get("/api/captures/0123456789abcdef0123456789abcdef/analysis").status_code in (404, 422)


def test_curve_check_with_the_server_key(client):
    import json

    keys = json.loads((CAPTURES / "curve.keys.json").read_text())
    wrong_id, _ = dissected(client, CAPTURES / "curve_wrong_key.pcapng")
    good_id, _ = dissected(client, CAPTURES / "curve.pcapng")
    secret = keys["server"]["secret"]
    wrong = client.post(f"/api/captures/{wrong_id}/curve-check", json={"secrets": [secret]})
    assert wrong.status_code == 200
    assert [f["rule"] for f in wrong.json()["findings"]] == ["curve-wrong-server-key"]
    assert wrong.json()["findings"][0]["events"][0]["index"] >= 0  # the HELLO, openable in the viewer
    good = client.post(f"/api/captures/{good_id}/curve-check", json={"secrets": [secret]}).json()
    assert good["findings"] == [] and good["curve"]["0"]["welcome"] == "opens"
    # The key is not echoed back, whatever is wrong with the request.
    for body in ({"secrets": ["~" * 40]}, {"secrets": [secret + "!" * 100]}, {"secrets": []}):
        bad = client.post(f"/api/captures/{good_id}/curve-check", json=body)
        assert bad.status_code == 422 and secret not in bad.text and "~" * 40 not in bad.text
