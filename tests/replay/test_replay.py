"""`zmtplab replay` on the recorded libzmq captures: the replay matches what the capture shows, and one change
makes the difference libzmq would (issue 35's "done when")."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from zmtplab.replay import ReplayError, ReplayModel, parse_change, replay

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "captures"
INCIDENTS = CAPTURES / "incidents"


def cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zmtplab.cli", "replay", str(path), *args], capture_output=True,
                          text=True, timeout=300)


@cache
def model(path: Path) -> ReplayModel:
    return ReplayModel.from_capture(str(path))


def run(path: Path, *changes: str) -> dict[str, Any]:
    return replay(model(path), [parse_change(c) for c in changes])


def counts(result: dict[str, Any]) -> dict[str, int]:
    return {name: len(msgs) for name, msgs in result["delivered"].items()}


def test_push_to_three_pulls_replays_as_captured() -> None:
    out = cli(CAPTURES / "push_3pull.pcapng", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert [(n["name"], n["type"]) for n in result["nodes"]] == [("push", "PUSH"), ("pull1", "PULL"),
                                                                  ("pull2", "PULL"), ("pull3", "PULL")]
    assert counts(result) == {"pull1": 10, "pull2": 10, "pull3": 10}
    assert result["delivered"]["pull1"][:3] == ["task 0", "task 3", "task 6"]  # round robin, as captured
    assert result["fidelity"]["same"] and result["fidelity"]["directions"] == 3
    assert "diff" not in result


def test_late_pull_moved_to_the_start_gets_its_share() -> None:
    path = CAPTURES / "push_late_pull.pcapng"
    base = run(path)
    assert counts(base) == {"pull1": 14, "pull2": 14, "pull3": 4}
    assert base["fidelity"]["same"], base["fidelity"]  # even the order after the third PULL joined
    assert [f["rule"] for f in base["findings"]] == ["round-robin-skew"]
    changed = run(path, "pull3.connect_at=0")
    assert sorted(counts(changed).values()) == [10, 11, 11]  # 32 tasks dealt over three pipes from the start
    diff = changed["diff"]
    assert diff["changes"] == ["pull3.connect_at=0"]
    row = next(n for n in diff["nodes"] if n["name"] == "pull3")
    assert (row["before"], row["after"], row["of"]) == (4, counts(changed)["pull3"], 32)
    assert [f["rule"] for f in diff["findings"]["go"]] == ["round-robin-skew"]
    assert not changed["findings"]
    assert f"pull3 receives {counts(changed)['pull3']} of 32 messages instead of 4" in diff["summary"]


def test_late_subscriber_misses_what_it_missed_and_connected_first_gets_everything() -> None:
    path = CAPTURES / "pub_late_sub.pcapng"
    base = run(path)
    assert base["fidelity"]["same"]
    assert counts(base) == {"sub1": 15, "sub2": 5}
    assert base["delivered"]["sub2"][0] == ["weather.10", "20 C"]  # what it got: only the last five
    assert [f["rule"] for f in base["findings"]] == ["late-subscriber"]
    changed = run(path, "sub2.connect_at=0")
    assert counts(changed) == {"sub1": 15, "sub2": 15}
    assert changed["delivered"]["sub2"] == changed["delivered"]["sub1"]
    assert "sub2 receives 15 of 15 messages instead of 5" in changed["diff"]["summary"]
    assert [f["rule"] for f in changed["diff"]["findings"]["go"]] == ["late-subscriber"]


def test_broker_replays_requests_and_replies_through_the_proxy() -> None:
    result = run(CAPTURES / "broker.pcapng")
    assert result["proxies"] == [{"frontend": "router", "backend": "dealer"}]
    types = {n["name"]: n["type"] for n in result["nodes"]}
    assert sorted(types.values()) == ["DEALER", "REP", "REP", "REQ", "REQ", "REQ", "ROUTER"]
    assert result["fidelity"]["same"] and result["fidelity"]["directions"] == 10
    reqs = [n for n, t in types.items() if t == "REQ"]
    for req in reqs:  # each client gets the replies to its own requests back through the proxy
        got = result["delivered"][req]
        assert got and all(isinstance(m, str) and m.startswith("reply") for m in got), got
    m = model(CAPTURES / "broker.pcapng")
    for req in reqs:
        asked = [s.frames[0].decode() for s in m.sends if s.sender == req]
        assert [r.removeprefix("reply") for r in result["delivered"][req]] == [q.removeprefix("request") for q in asked]
    reps = [n for n, t in types.items() if t == "REP"]
    assert sum(len(result["delivered"][r]) for r in reps) == sum(len(result["delivered"][q]) for q in reqs)


def test_ping_ttl_under_65_6_seconds_has_no_finding() -> None:
    path = CAPTURES / "ping_ttl_long.pcapng"
    base = run(path)
    dealer = next(n for n in base["nodes"] if n["type"] == "DEALER")
    assert dealer["heartbeat_ttl"] == 70.0
    assert "ping-ttl-over-65s" in [f["rule"] for f in base["findings"]]
    changed = run(path, f"{dealer['name']}.heartbeat_ttl=60")
    assert "ping-ttl-over-65s" not in [f["rule"] for f in changed["findings"]]
    assert [f["rule"] for f in changed["diff"]["findings"]["go"]] == ["ping-ttl-over-65s"]


def _endpoint(uri: str) -> str:
    """An application's endpoint as the capture shows it: `tcp://SRC;DST` connects from SRC, `tcp://A` binds A."""
    return uri.removeprefix("tcp://").split(";")[0]


REPLAYED_INCIDENTS = ["broker_anonymous", "broker_router_router", "dual_stack", "never_subscribed",
                      "push_worker_leaves", "router_identities", "xpub_xsub_proxy"]


@pytest.mark.parametrize("name", REPLAYED_INCIDENTS)
def test_incident_replay_delivers_what_the_applications_received(name: str) -> None:
    """The facts' applications (recorded from their side, never from our output) received what the replay's
    sockets read: the same messages, in order (a ROUTER's generated routing ids aside)."""
    facts = json.loads((INCIDENTS / f"{name}.facts.json").read_text())
    result = run(INCIDENTS / f"{name}.pcapng")
    by_endpoint = {ep: n for n in result["nodes"] for ep in n["endpoints"]}
    checked = 0
    for app in facts["apps"].values():
        uris = app.get("connect") or app.get("bind") or []
        node = next((by_endpoint[_endpoint(u)] for u in uris if _endpoint(u) in by_endpoint), None)
        if node is None or node.get("proxy") or "received" not in app:
            continue
        got = result["delivered"].get(node["name"], [])
        want = [[f.removeprefix("0x") for f in m["frames"]] for m in app["received"]]  # (the facts mark hex)
        got = [g if isinstance(g, list) else [g] for g in got]
        if app["socket"] == "ROUTER":  # (its first frame: the routing id libzmq made up, or the replay's name)
            got, want = [g[1:] for g in got], [w[1:] for w in want]
        assert got == want, node["name"]
        checked += 1
    assert checked


def test_bad_changes_exit_2_and_say_why() -> None:
    path = CAPTURES / "push_3pull.pcapng"
    for change, words in (("pull9.sndhwm=1", "no socket named 'pull9'"), ("pull1.colour=red", "unknown option"),
                          ("pull1.sndhwm=lots", "whole number"), ("nodot=1", "NODE.OPTION=VALUE"),
                          ("push.subscribe_at=1", "not a SUB")):
        out = cli(path, "--set", change)
        assert out.returncode == 2 and words in out.stderr, (change, out.stderr)
    out = cli(CAPTURES / "README.md")
    assert out.returncode == 2 and "zmtplab replay" in out.stderr


def test_a_capture_without_zeromq_cannot_be_replayed(tmp_path: Path) -> None:
    with pytest.raises(ReplayError):
        ReplayModel.from_capture(str(CAPTURES / "incidents" / "reconnect_storm.pcapng"))


def test_readable_output() -> None:
    out = cli(CAPTURES / "pub_late_sub.pcapng", "--set", "sub2.connect_at=0")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Fidelity: 2 of 2 directions replay as captured" in text
    assert ("With sub2.connect_at=0\n  sub2 receives 15 of 15 messages instead of 5\n"
            "  finding goes: late-subscriber") in text


def test_readable_output_in_chinese() -> None:
    out = cli(CAPTURES / "pub_late_sub.pcapng", "--set", "sub2.connect_at=0", "--lang", "zh-CN")
    assert out.returncode == 0, out.stderr
    assert "sub2 收到 15 条消息中的 15 条，而不是 5 条" in out.stdout  # noqa: RUF001 (Chinese punctuation)
    assert "发现消失：late-subscriber" in out.stdout  # noqa: RUF001
    notes = cli(INCIDENTS / "broker_router_router.pcapng", "--lang", "zh-CN").stdout
    assert "没有身份标识：回放把各自的名字作为身份标识" in notes  # noqa: RUF001


def test_the_playground_offers_the_cli_options() -> None:
    """The replay box's option menu (frontend/js/app/playground/replay-panel.js) names what `--set` takes, no more,
    no less."""
    import re

    from zmtplab.replay import OPTIONS

    text = (REPO / "frontend" / "js" / "app" / "playground" / "replay-panel.js").read_text()
    listed = re.search(r"REPLAY_OPTIONS = \[(.*?)\];", text, re.S)
    assert listed is not None
    assert re.findall(r"'([a-z_]+)'", listed.group(1)) == list(OPTIONS)


def test_what_the_capture_lost_is_said() -> None:
    """capture_loss: dumpcap dropped packets the applications exchanged (facts: 45 sent, 45 received); the replay
    sends what the capture holds and says what it lacks."""
    facts = json.loads((INCIDENTS / "capture_loss.facts.json").read_text())
    sent = sum(len(app.get("sent", [])) for app in facts["apps"].values())
    result = run(INCIDENTS / "capture_loss.pcapng")
    [lost] = [n for n in result["notes"] if n["what"] == "capture-loss"]
    assert lost["details"]["octets"] > 1_000_000 and lost["details"]["dir"] == "c2s"
    assert "not in the capture, so the replay does not send them" in lost["text"]
    assert 0 < result["sends"] < sent


def test_topology_file_is_the_playgrounds(tmp_path: Path) -> None:
    """--topology writes the replay with its changes as the playground's topology file: `Topology.from_dict` (what
    `POST /api/sessions` and Load check) takes it, proxies and sends included."""
    from zmtplab.peers.topology import Topology

    out = cli(CAPTURES / "broker.pcapng", "--topology", str(tmp_path / "t.json"), "--set", "rep2.connect_at=0")
    assert out.returncode == 0, out.stderr
    topo = Topology.from_dict(json.loads((tmp_path / "t.json").read_text()))
    assert [(p.frontend, p.backend) for p in topo.proxies] == [("router", "dealer")]
    assert len(topo.script) == 12 and {s.sender for s in topo.script} == {"req1", "req2", "req3", "rep1", "rep2"}
    assert next(lk for lk in topo.links if lk.connect == "rep2").at == 0
    bad = cli(CAPTURES / "broker.pcapng", "--topology", str(tmp_path / "no" / "t.json"))
    assert bad.returncode == 2 and "--topology" in bad.stderr


def test_any_change_text_is_applied_or_refused_with_replay_error() -> None:
    """Whatever a user types after --set (or a page sends), the replay takes it or says why: never another error."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from zmtplab.replay import apply_changes

    m = model(CAPTURES / "pub_late_sub.pcapng")
    names = st.sampled_from([*m.sockets, "nobody", ""])
    options = st.sampled_from(["connect_at", "subscribe_at", "subscribe", "sndhwm", "rcvhwm", "heartbeat_ivl",
                               "heartbeat_ttl", "heartbeat_timeout", "version", "mechanism", "recv_every", "identity",
                               "colour"])
    values = st.one_of(st.text(max_size=300), st.floats(allow_nan=True).map(str), st.integers().map(str))

    @settings(max_examples=100, deadline=None)
    @given(st.one_of(st.text(max_size=60), st.tuples(names, options, values).map(lambda t: f"{t[0]}.{t[1]}={t[2]}")))
    def check(text: str) -> None:
        with contextlib.suppress(ReplayError):
            apply_changes(m, [parse_change(text)])

    check()


@pytest.mark.parametrize(("name", "rounds"), [("curve.pcapng", 1), ("incidents/curve_messages.pcapng", 3)])
def test_curve_without_keys_replays_as_null_with_what_the_boxes_tell(name: str, rounds: int) -> None:
    """Issue 35: the socket types and messages are in the boxes; who connected, when, and each box's size and
    time are not. REQ/REP from the strict turns and the empty first frame, stand-ins of the captured sizes."""
    result = run(CAPTURES / name)
    assert [(n["type"], n["mechanism"]) for n in result["nodes"]] == [("REP", "NULL"), ("REQ", "NULL")]
    assert [n["what"] for n in result["notes"]] == ["curve", "curve-types"]
    assert "REQ and REP" in result["notes"][1]["text"]
    assert result["fidelity"]["same"] and result["fidelity"]["directions"] == 2
    # "Hello" and "World" are five octets each: so are their stand-ins
    assert result["delivered"] == {"rep": [f"m{k} .." for k in range(1, rounds + 1)],
                                   "req": [f"m{k} .." for k in range(1, rounds + 1)]}


def test_curve_that_never_carried_a_message_says_nothing_tells_its_types() -> None:
    result = run(CAPTURES / "curve_wrong_key.pcapng")
    assert [n["type"] for n in result["nodes"]] == ["ROUTER", "DEALER"]
    assert "no message crossed" in result["notes"][1]["text"]
    assert result["fidelity"]["directions"] == 0


@pytest.mark.parametrize(("name", "reader"), [("push_slow_pull.pcapng", "pull"), ("incidents/slow_reader.pcapng",
                                                                                    "pull")])
def test_a_reader_whose_window_closed_reads_at_its_captured_pace(name: str, reader: str) -> None:
    """Issue 35: how fast each node reads comes from the capture: the back-pressure (zero windows) and the
    deliveries' span give the slow reader's pace, the default `recv_every`; the fidelity check shows it."""
    result = run(CAPTURES / name)
    every = result["fidelity"]["read_speed"][reader]
    assert 0.02 < every < 0.06
    assert next(n for n in result["nodes"] if n["name"] == reader)["recv_every"] == every
    assert next(n for n in result["notes"] if n["what"] == "read-speed")["details"] == {"socket": reader,
                                                                                        "recv_every": every}
    assert result["fidelity"]["same"]
    fast = run(CAPTURES / "push_3pull.pcapng")
    assert fast["fidelity"]["read_speed"] == {"pull1": None, "pull2": None, "pull3": None}
    assert not [n for n in fast["notes"] if n["what"] == "read-speed"]


def test_replies_follow_their_requests_when_a_change_moves_them() -> None:
    """Issue 35: a REP's reply (and a REQ's next request) is sent in reaction to what its application read, after
    the captured think time: connected 2 s late, the REQ still gets both replies, where replies replayed at their
    captured times came before their requests (the REP refused them)."""
    late = run(CAPTURES / "req_rep.pcapng", "req.connect_at=2")
    assert counts(late) == {"rep": 2, "req": 2} and "errors" not in late
    assert late["diff"]["summary"] == ["nothing changes: every socket reads the same messages and the findings are "
                                       "the same"]
    # Through the broker: the second worker joins late, so the first answers every request, and every reply
    # goes back through the proxy to the client that asked.
    broker = run(CAPTURES / "broker.pcapng", "rep2.connect_at=5")
    assert counts(broker) == {"rep1": 6, "rep2": 0, "req1": 2, "req2": 2, "req3": 2} and "errors" not in broker
    assert broker["delivered"]["req2"] == ["reply c-1.0", "reply c-1.1"]
    assert "rep1 receives 6 of 6 messages instead of 3" in broker["diff"]["summary"]


def test_the_text_is_all_in_chinese_under_lang_zh_cn() -> None:
    """Issue 35: the CLI's headings and notes follow --lang, not only the findings and the diff."""
    out = cli(CAPTURES / "push_late_pull.pcapng", "--lang", "zh-CN", "--set", "pull3.connect_at=0")
    assert out.returncode == 0, out.stderr
    headings = ("套接字（4）", "链路（3）；应用程序发送 32 次", "保真度：3 个方向中有 3 个与抓包一致",  # noqa: RUF001
                "抓到 4 条，回放 4 条  一致", "改为 pull3.connect_at=0 时", "送达", "发现（0）", "  无")  # noqa: RUF001
    for heading in headings:
        assert heading in out.stdout
    for english in ("Sockets", "Links", "Fidelity", "captured", "replayed", "With ", "Delivered", "Findings",
                    "none", "note:", "receives"):
        assert english not in out.stdout, english
    slow = cli(CAPTURES / "incidents" / "slow_reader.pcapng", "--lang", "zh-CN")
    assert "注：pull 大约每 0.041 秒读取一条消息" in slow.stdout  # noqa: RUF001
    assert "读取速度：pull 每 0.041 秒读取一条消息" in slow.stdout  # noqa: RUF001
    assert "note:" not in slow.stdout and "read speed" not in slow.stdout
