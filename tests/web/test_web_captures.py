"""Capture uploads: storage, background dissection, summaries, paging, search, fields, tshark packets, damage."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from webkit import SHARED, capture_files, dissected, open_client, progress, upload

from zmtplab.capture.dissect import dissect_capture
from zmtplab.capture.pcapwriter import PcapngWriter
from zmtplab.eventstore import public

LIST_MAX_BODY = 1024  # the default Settings.list_max_body


def truth(path: Path, *, with_fields: bool = False) -> dict[str, list[dict[str, Any]]]:
    """What `zmtplab dissect` says, per connection."""
    out: dict[str, list[dict[str, Any]]] = {}
    for ev in dissect_capture(path, with_fields=with_fields):
        out.setdefault(ev["conn"], []).append(ev)
    return out


def all_events(client, capture_id: str, conn: str, **params: Any) -> tuple[list[dict[str, Any]], int]:
    events: list[dict[str, Any]] = []
    total = None
    while total is None or len(events) < total:
        r = client.get(f"/api/captures/{capture_id}/events",
                       params={"conn": conn, "offset": len(events), "limit": 1000, **params})
        assert r.status_code == 200, r.text
        page = r.json()
        total = page["total"]
        if not page["events"]:
            break
        events.extend(page["events"])
    return events, total


# bulk.pcapng is compared in test_bulk_capture_pages_anywhere_and_keeps_its_searches.
@pytest.mark.parametrize("path", [p for p in capture_files() if p.name != "bulk.pcapng"],
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_sample_capture(client, path: Path):
    capture_id, summary = dissected(client, path, path.name)
    assert summary["state"] == "done", summary
    assert summary["error"] is None
    assert summary["name"] == path.name
    assert summary["connections"], "no ZMTP connection found"
    expected = truth(path)
    assert [c["conn"] for c in summary["connections"]] == list(expected)
    for conn in summary["connections"]:
        assert conn["client"].startswith("127.0.0.1:") and conn["server"].startswith("127.0.0.1:")
        assert set(conn["versions"]) == {"c2s", "s2c"}
        assert conn["first_ts"] <= conn["last_ts"]
        want = expected[conn["conn"]]
        for d in ("c2s", "s2c"):
            assert conn["messages"][d] == sum(1 for e in want if e["kind"] == "message" and e["dir"] == d)
        assert sum(conn["expert"].values()) == sum(1 for e in want if e["kind"] == "expert")
        events, total = all_events(client, capture_id, conn["conn"])
        assert total == len(want) == conn["events"]
        assert [e.pop("index") for e in events] == list(range(total))
        assert events == [public(dict(e), LIST_MAX_BODY) for e in want]


def test_summaries_of_reference_captures(client):
    assert SHARED.is_dir(), f"the shared captures are missing: {SHARED}"
    _, s = dissected(client, SHARED / "dealer_router.pcapng")
    (c,) = s["connections"]
    assert c["socket_types"] == {"c2s": "DEALER", "s2c": "ROUTER"}
    assert c["identities"]["c2s"] == "client-1"
    assert c["messages"] == {"c2s": 3, "s2c": 3}
    assert c["versions"] == {"c2s": "3.1", "s2c": "3.1"} and c["mechanism"] == "NULL"
    assert c["server"] == "127.0.0.1:15558"
    assert s["expert_total"] == c["expert"]
    _, s = dissected(client, SHARED / "pub_sub.pcapng")
    assert s["connections"][0]["socket_types"] == {"c2s": "SUB", "s2c": "PUB"}
    _, s = dissected(client, SHARED / "large.pcapng")
    (c,) = s["connections"]
    assert c["bytes"]["s2c"] > 1 << 20 and c["messages"]["s2c"] == 1


def test_fields_on_demand_match_the_dissector(client):
    for path in [p for p in capture_files() if p.stem in ("dealer_router", "plain_ok", "downgrade_zmtp10",
                                                          "downgrade_zmtp20", "curve", "pub_sub", "multipart")]:
        capture_id, _summary = dissected(client, path)
        expected = truth(path, with_fields=True)
        for conn, want in expected.items():
            listed, _ = all_events(client, capture_id, conn, fields=1)
            for i, ev in enumerate(want):
                one = client.get(f"/api/captures/{capture_id}/events/{i}", params={"conn": conn})
                assert one.status_code == 200
                got = one.json()
                assert got.pop("index") == i
                assert got == ev, (path.name, i)
                assert listed[i]["fields"] == ev["fields"]
        # Without ?fields=1 lists carry no fields.
        r = client.get(f"/api/captures/{capture_id}/events", params={"limit": 5})
        assert all("fields" not in e for e in r.json()["events"])


def test_large_bodies_are_cut_in_lists_not_in_fields(client):
    assert SHARED.is_dir(), f"the shared captures are missing: {SHARED}"
    path = SHARED / "large.pcapng"
    capture_id, _ = dissected(client, path)
    events, _ = all_events(client, capture_id, "0", kind="frame")
    big = next(e for e in events if e["size"] == 1 << 20)
    assert big["truncated"] is True and len(big["body"]) == 2 * LIST_MAX_BODY
    one = client.get(f"/api/captures/{capture_id}/events/{big['index']}", params={"conn": "0"}).json()
    assert len(one["body"]) == 2 << 20  # the single-event limit is 1 MiB by default
    body_field = one["fields"][-1]
    assert body_field["length"] == 1 << 20 and body_field["offset"] == one["offset"] + 9


def test_bulk_capture_pages_anywhere_and_keeps_its_searches(client):
    path = SHARED / "bulk.pcapng"
    assert path.exists(), f"missing {path}"
    r = upload(client, path, "bulk.pcapng")
    capture_id = r.json()["id"]
    # Still being dissected: events are not there yet.
    early = client.get(f"/api/captures/{capture_id}/events")
    assert early.status_code in (200, 409)
    messages = progress(client, capture_id)
    assert messages[-1] == {"state": "done", "percent": 100.0, "detail": ""}
    assert any(0 < m["percent"] < 100 for m in messages), messages
    expected_total = 0
    msg_1999 = 0  # frames whose body holds "msg 1999"
    for ev in dissect_capture(path, with_fields=False):
        expected_total += 1
        msg_1999 += ev["kind"] == "frame" and "6d73672031393939" in ev["body"]
    summary = client.get(f"/api/captures/{capture_id}").json()
    # 4 handshake elements, 220,000 frames, 200,000 messages and the retransmission note of frame 6223
    assert summary["events"] == expected_total == 420_005
    (conn,) = summary["connections"]
    assert conn["messages"]["s2c"] == 200_000

    # Pages anywhere (how fast is benchmarks/viewer_bigcapture.py's to measure: "a page anywhere").
    for offset in (0, 210_000, expected_total - 1000, expected_total - 1):
        r = client.get(f"/api/captures/{capture_id}/events", params={"conn": "0", "offset": offset, "limit": 1000})
        page = r.json()
        assert page["total"] == expected_total
        assert [e["index"] for e in page["events"]] == list(range(offset, min(offset + 1000, expected_total)))
    # The limit is capped; without conn the capture order is used.
    r = client.get(f"/api/captures/{capture_id}/events", params={"offset": 5, "limit": 100_000}).json()
    assert len(r["events"]) == 1000 and r["events"][0]["index"] == 5
    # Filters: by kind (no scan), by text (scan once, cached).
    r = client.get(f"/api/captures/{capture_id}/events", params={"conn": "0", "kind": "message", "limit": 3}).json()
    assert r["total"] == 200_000 and all(e["kind"] == "message" for e in r["events"])
    r = client.get(f"/api/captures/{capture_id}/events", params={"conn": "0", "kind": "message", "q": "topic.3",
                                                                 "limit": 10}).json()
    assert r["total"] == len(range(30, 200_000, 70))  # every 10th message, i % 7 == 3
    assert bytes.fromhex(r["events"][0]["frames"][0]) == b"topic.3"
    # The next page of the same search comes from the kept result: with no time left for searching, a search made
    # anew stops after its first chunk (partial), the kept one answers whole.
    settings = client.app.state.settings
    bound, settings.search_max_seconds = settings.search_max_seconds, 1e-9
    try:
        again = client.get(f"/api/captures/{capture_id}/events", params={"conn": "0", "kind": "message",
                                                                         "q": "topic.3", "offset": 100, "limit": 10})
        anew = client.get(f"/api/captures/{capture_id}/events", params={"conn": "0", "kind": "message",
                                                                        "q": "topic.4", "limit": 10}).json()
    finally:
        settings.search_max_seconds = bound
    assert (again.json()["partial"], again.json()["total"]) == (False, r["total"])
    assert anew["partial"] is True and anew["searched"] < anew["elements"], anew
    r = client.get(f"/api/captures/{capture_id}/events", params={"q": "READY"}).json()
    # Only the two READY commands (the retransmission note's text was worded not to hold "ready").
    assert r["total"] == 2 and {e["dir"] for e in r["events"]} == {"c2s", "s2c"}
    assert [e["kind"] for e in r["events"]] == ["command", "command"]
    r = client.get(f"/api/captures/{capture_id}/events", params={"q": "pull", "kind": "command"}).json()
    assert r["total"] == 1  # socket types match case-insensitively
    r = client.get(f"/api/captures/{capture_id}/events", params={"q": "6d73672031393939", "kind": "frame"}).json()
    assert r["total"] == msg_1999 == 100  # hex for "msg 1999"; also "msg 1999x" and "msg 1999xx"
    r = client.get(f"/api/captures/{capture_id}/events", params={"q": "MSG 1999", "kind": "frame"}).json()
    assert r["total"] == msg_1999  # text, any case
    # One event with fields, deep inside.
    one = client.get(f"/api/captures/{capture_id}/events/400000", params={"conn": "0"}).json()
    assert one["index"] == 400_000 and one["fields"]


def test_query_validation(client):
    path = next(p for p in capture_files() if p.stem == "push_pull")
    capture_id, _ = dissected(client, path)
    base = f"/api/captures/{capture_id}/events"
    assert client.get(base, params={"kind": "bogus"}).status_code == 422
    assert client.get(base, params={"offset": -1}).status_code == 422
    assert client.get(base, params={"limit": 0}).status_code == 422
    assert client.get(base, params={"conn": "99"}).status_code == 404
    assert client.get(base, params={"offset": 10_000}).json()["events"] == []
    assert client.get(f"{base}/99999", params={"conn": "0"}).status_code == 404
    assert client.get(f"{base}/0").status_code == 200  # one connection: conn may be left out
    assert client.get(base, params={"q": "x" * 201}).status_code == 422
    assert client.get("/api/captures/not-an-id").status_code == 404
    assert client.get("/api/captures/not-an-id/progress").status_code == 404
    assert client.get("/api/captures/0123456789abcdef0123456789abcdef/events").status_code == 404


# ---------------------------------------------------------------- damaged and refused uploads


def _pcapng_head() -> bytes:
    out = io.BytesIO()
    PcapngWriter(out)
    return out.getvalue()


def test_refused_uploads(client):
    random_bytes = os.urandom(5000)
    random_bytes = b"\x00" + random_bytes[1:]  # not by chance a gzip or pcap magic
    for data, name in [(b"", "empty.pcap"), (random_bytes, "random.pcapng"),
                       (b"GET / HTTP/1.1\r\nHost: example\r\n\r\n" * 10, "text.pcap"),
                       (b"just some text\n", "notes.pcap")]:
        r = upload(client, data, name)
        assert r.status_code == 415, (name, r.text)
        assert isinstance(r.json()["detail"], str)
    # Not multipart, no `file` field, multipart without a boundary.
    assert client.post("/api/captures", content=b"\xd4\xc3\xb2\xa1", headers={"content-type":
                                                                              "application/octet-stream"}
                       ).status_code == 415
    assert client.post("/api/captures", files={"other": ("x.pcap", b"abc")}).status_code == 422
    assert client.post("/api/captures", content=b"--x--", headers={"content-type": "multipart/form-data"}
                       ).status_code == 415
    # Nothing of the refused uploads stays on disk.
    data_dir = client.app.state.settings.captures_dir
    ids = {p.name for p in data_dir.iterdir()}
    assert ids == set(client.app.state.captures.records)


def test_oversize_upload(tmp_path: Path):
    path = next(p for p in capture_files() if p.stem == "push_pull")
    with open_client(tmp_path, max_upload_bytes=1000) as c:
        r = upload(c, path)
        assert r.status_code == 413 and "1000" in r.json()["detail"]
        assert not any((tmp_path / "captures").iterdir())
        # A streamed body without Content-Length is stopped while streaming too.
        body = path.read_bytes()
        boundary = "zmtplabboundary"
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.pcapng\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode()
        chunks = [head] + [body[i:i + 500] for i in range(0, len(body), 500)] + [f"\r\n--{boundary}--\r\n".encode()]
        r = c.post("/api/captures", content=iter(chunks),
                   headers={"content-type": f"multipart/form-data; boundary={boundary}"})
        assert r.status_code == 413
        small = _pcapng_head()
        assert upload(c, small).status_code == 201


def test_streamed_upload_in_small_chunks(client):
    path = next(p for p in capture_files() if p.stem == "dealer_router")
    body = path.read_bytes()
    boundary = "b0undary"
    windows_name = "C:\\\\x\\\\..\\\\d r.pcapng"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"comment\"\r\n\r\nhello\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{windows_name}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode()
    chunks = [head[:7], head[7:]] + [body[i:i + 7] for i in range(0, len(body), 7)]
    chunks.append(f"\r\n--{boundary}--\r\n".encode())
    r = client.post("/api/captures", content=iter(chunks),
                    headers={"content-type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 201, r.text
    capture_id = r.json()["id"]
    assert len(capture_id) == 32
    assert progress(client, capture_id)[-1]["state"] == "done"
    summary = client.get(f"/api/captures/{capture_id}").json()
    assert summary["name"] == "d r.pcapng"  # display only; the file is stored under the id
    stored = client.app.state.settings.captures_dir / capture_id / "capture"
    assert stored.read_bytes() == body


def test_hostile_file_name_is_only_displayed(client):
    path = next(p for p in capture_files() if p.stem == "push_pull")
    capture_id, summary = dissected(client, path, "../../etc/pass\x00wd\x1b[31m.pcapng")
    name = summary["name"]
    assert name.startswith("pass") and name.endswith(".pcapng")
    assert not any(ch in name for ch in "/\\\x00\x1b") and ".." not in name
    directory = client.app.state.settings.captures_dir / capture_id
    assert sorted(p.name for p in directory.iterdir()) == ["capture", "events.sqlite", "meta.json"]


def test_truncated_capture_gives_partial_results_and_an_error(client):
    path = next(p for p in capture_files() if p.stem == "dealer_router")
    data = path.read_bytes()
    cut = data[: len(data) * 2 // 3]
    capture_id, summary = dissected(client, cut, "cut.pcapng")
    assert summary["state"] == "done"
    assert summary["error"] and "frame" in summary["error"].lower()
    full = truth(path)
    _events, total = all_events(client, capture_id, "0")
    assert 0 < total < len(full["0"])
    messages = progress(client, capture_id)
    assert messages == [{"state": "done", "percent": 100.0, "detail": summary["error"]}]


def test_unreadable_capture_is_an_error_and_others_go_on(client):
    good = next(p for p in capture_files() if p.stem == "req_rep")
    bad = _pcapng_head()[:28] + b"\xff\xff\xff\x7f" + os.urandom(64)  # a block that claims 2 GiB
    responses = {}

    def send(name: str, data: bytes | Path) -> None:
        responses[name] = upload(client, data, name)

    threads = [threading.Thread(target=send, args=(f"good{i}.pcapng", good)) for i in range(3)]
    threads.insert(1, threading.Thread(target=send, args=("bad.pcapng", bad)))
    threads.insert(3, threading.Thread(target=send, args=("bad-text.pcapng", b"no capture at all")))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert responses["bad-text.pcapng"].status_code == 415
    bad_id = responses["bad.pcapng"].json()["id"]
    assert progress(client, bad_id)[-1]["state"] == "error"
    summary = client.get(f"/api/captures/{bad_id}").json()
    assert summary["state"] == "error" and summary["error"]
    assert client.get(f"/api/captures/{bad_id}/events").status_code == 409
    for i in range(3):
        capture_id = responses[f"good{i}.pcapng"].json()["id"]
        assert progress(client, capture_id)[-1]["state"] == "done"
        assert client.get(f"/api/captures/{capture_id}").json()["connections"][0]["messages"] == {"c2s": 2, "s2c": 2}


def test_a_killed_worker_only_fails_its_own_capture(tmp_path: Path):
    path = SHARED / "bulk.pcapng"
    assert path.exists(), f"missing {path}"
    small = next(p for p in capture_files() if p.stem == "push_pull")
    with open_client(tmp_path, dissect_workers=1) as c:
        store = c.app.state.captures
        victim = upload(c, path).json()["id"]
        deadline = time.monotonic() + 20
        while store.records[victim].percent <= 0 and time.monotonic() < deadline:
            time.sleep(0.02)  # until the worker process reports progress
        pool = store._executor
        processes = list(getattr(pool, "_processes", {}).values())
        assert processes
        for p in processes:
            p.kill()
        # The pool is replaced and the victim tried once more; it is not waited for here.
        deadline = time.monotonic() + 10
        while store._executor is pool and time.monotonic() < deadline:
            time.sleep(0.02)
        assert store._executor is not pool
        assert store.records[victim].state in ("dissecting", "done", "error")
        assert c.delete(f"/api/captures/{victim}").status_code == 204
        _capture_id, summary = dissected(c, small)
        assert summary["state"] == "done" and summary["connections"]


def test_delete(client):
    path = next(p for p in capture_files() if p.stem == "push_pull")
    capture_id, _ = dissected(client, path)
    directory = client.app.state.settings.captures_dir / capture_id
    assert directory.exists()
    assert client.delete(f"/api/captures/{capture_id}").status_code == 204
    assert not directory.exists()
    assert client.get(f"/api/captures/{capture_id}").status_code == 404
    assert client.delete(f"/api/captures/{capture_id}").status_code == 404


def test_delete_while_dissecting(client):
    path = SHARED / "bulk.pcapng"
    assert path.exists(), f"missing {path}"
    capture_id = upload(client, path).json()["id"]
    time.sleep(0.3)
    assert client.delete(f"/api/captures/{capture_id}").status_code == 204
    directory = client.app.state.settings.captures_dir / capture_id
    deadline = time.monotonic() + 15
    while directory.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not directory.exists()


def test_captures_survive_a_restart_and_expire(tmp_path: Path):
    path = next(p for p in capture_files() if p.stem == "push_pull")
    with open_client(tmp_path) as c:
        capture_id, first = dissected(c, path)
    with open_client(tmp_path) as c:
        again = c.get(f"/api/captures/{capture_id}").json()
        assert again["connections"] == first["connections"]
    # (A start of its own for the expiry: with a 0.5 s TTL a loaded machine could reap the capture before
    # the survival check above had read it.)
    with open_client(tmp_path, capture_ttl=0.5, reap_interval=0.1) as c:
        deadline = time.monotonic() + 5
        while c.get(f"/api/captures/{capture_id}").status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert c.get(f"/api/captures/{capture_id}").status_code == 404
        # The record goes first (404 at once); the reaper then removes the files, a moment later.
        directory = tmp_path / "captures" / capture_id
        while directory.exists() and time.monotonic() < deadline + 5:
            time.sleep(0.05)
        assert not directory.exists()


# ---------------------------------------------------------------- tshark's view of one packet


def _fields(layer: dict[str, Any]) -> dict[str, str]:
    return {f["field"]: f["value"] for f in layer["fields"]}


def test_packet_layers_from_tshark(client):
    path = next(p for p in capture_files() if p.stem == "dealer_router")
    capture_id, _ = dissected(client, path)
    r = client.get(f"/api/captures/{capture_id}/packets/1")
    assert r.status_code == 200, r.text
    layers = r.json()["layers"]
    assert [layer["name"] for layer in layers] == ["frame", "eth", "ip", "tcp"]
    tcp = _fields(layers[-1])
    assert tcp["tcp.flags_syn"] == "Set" and tcp["tcp.flags_ack"] == "Not set"
    assert "tcp.seq" in tcp and "tcp.ack" in tcp and "tcp.srcport" in tcp
    assert _fields(layers[0])["frame.number"] == "1"
    # Cached: the second answer does not run tshark again (it is the decoder's cached entry, marked here).
    cache = client.app.state.packets.cache
    assert cache[(capture_id, 1)] == r.json()
    cache[(capture_id, 1)] = {**r.json(), "layers": layers[:1]}
    assert client.get(f"/api/captures/{capture_id}/packets/1").json()["layers"] == layers[:1]
    assert client.get(f"/api/captures/{capture_id}/packets/99999").status_code == 404
    assert client.get(f"/api/captures/{capture_id}/packets/0").status_code == 422
    assert client.get(f"/api/captures/{capture_id}/packets/1;rm").status_code == 422


def test_packet_analysis_flags(client):
    out = io.BytesIO()
    writer = PcapngWriter(out)
    tcp = writer.add_connection(client=("10.0.0.1", 40000), server=("10.0.0.2", 15555))
    tcp.handshake(1000.0)
    greeting = b"\xff" + b"\x00" * 7 + b"\x01\x7f\x03\x01NULL" + b"\x00" * 48
    seq = tcp.seq["c2s"]
    tcp.send("c2s", greeting, 1000.1, ack=False)
    tcp.segment("c2s", 1000.5, greeting, seq=seq)  # the same bytes again: a retransmission
    capture_id, _ = dissected(client, out.getvalue(), "retransmission.pcapng")
    layers = client.get(f"/api/captures/{capture_id}/packets/5").json()["layers"]
    tcp_fields = layers[-1]["fields"]
    assert any("retransmission" in f["field"] for f in tcp_fields), [f["field"] for f in tcp_fields]
