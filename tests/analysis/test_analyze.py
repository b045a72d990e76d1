"""`zmtplab analyze` on recorded libzmq captures: each finding shows on the capture that has it and on no
healthy one; the broker's flows, the nodes, the CURVE doctor and the CLI's JSON contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from synthetic import capture, middle_of_a_frame
from zmtplab.analysis import analyze_capture
from zmtplab.engine.curve import z85_decode

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "captures"
SHARED = REPO.parent / "shared" / "captures"
KEYS = json.loads((CAPTURES / "curve.keys.json").read_text())
SERVER_SECRET = KEYS["server"]["secret"]

# The findings each recorded capture must show; every other sample capture is healthy and must show none.
SICK = {
    "push_late_pull": {"round-robin-skew"},
    "pub_late_sub": {"late-subscriber"},
    "ping_ttl_long": {"ping-ttl-over-65s"},
    "identity_collision": {"identity-collision"},
    "push_slow_pull": {"back-pressure"},
    "heartbeat_ttl_expiry": {"heartbeat-timeout"},
    "mechanism_mismatch": {"mechanism-mismatch"},
    "mismatch_push_push": {"invalid-socket-pair"},
    "null_denied": {"handshake-incomplete"},
    "plain_denied": {"handshake-incomplete"},
    "curve_denied": {"handshake-incomplete"},
    "curve_wrong_key": {"handshake-incomplete"},
}
ALL = sorted(CAPTURES.glob("*.pcapng")) + sorted(SHARED.glob("*.pcapng"))


def analysis(name: str, **kwargs):
    return analyze_capture(str(CAPTURES / f"{name}.pcapng"), **kwargs)


def rules(found) -> set[str]:
    return {f["rule"] for f in found["findings"]}


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_findings_show_on_sick_captures_and_never_on_healthy_ones(path):
    expected = SICK.get(path.stem, set()) if path.parent == CAPTURES else set()
    assert rules(analyze_capture(str(path))) == expected


def test_every_rule_is_covered_by_a_recorded_capture():
    incidents = set()
    for path in (CAPTURES / "incidents").glob("*.facts.json"):
        for fact in json.loads(path.read_text())["facts"]:
            incidents |= set(fact.get("rules", [])) | ({fact["rule"]} if fact["fact"] == "finding" else set())
    assert set().union(*SICK.values()) | {"curve-wrong-server-key"} | incidents == {
        "round-robin-skew", "late-subscriber", "ping-ttl-over-65s", "identity-collision", "back-pressure",
        "heartbeat-timeout", "mechanism-mismatch", "invalid-socket-pair", "handshake-incomplete",
        "curve-wrong-server-key", "curve-not-this-server", "never-subscribed", "version-mismatch",
        "refused-connects", "capture-loss"}


def test_late_subscriber_counts_what_it_missed():
    [f] = analysis("pub_late_sub")["findings"]
    assert f["severity"] == "warn" and f["conns"] == ["0", "1"]
    assert "connection 1 subscribed to 'weather.'" in f["text"]
    assert "10 matching message(s) on connection 0" in f["text"]
    [where] = f["events"]
    assert where["conn"] == "1" and where["kind"] == "command" and where["packets"]


def test_round_robin_skew_says_who_connected_late():
    found = analysis("push_late_pull")
    [f] = found["findings"]
    counts = {c["conn"]: c["messages"]["s2c"] for c in found["connections"]}
    assert counts == {"0": 14, "1": 14, "2": 4}
    assert "(0: 14, 1: 14, 2: 4)" in f["text"] and "connection 2 got its first message only after" in f["text"]
    assert "connected late" in f["text"]
    # What round robin gives the PULLs up at the time, as the simulator's PUSH shares them: exactly what they got.
    assert f["details"]["expected"] == counts and f["details"]["why"] == ["late"]
    even = analysis("push_3pull")
    assert {c["conn"]: c["messages"]["s2c"] for c in even["connections"]} == {"0": 10, "1": 10, "2": 10}


def test_round_robin_is_the_simulators_over_the_pipes_up_at_the_time():
    from zmtplab.analysis.findings import round_robin

    # a and b up; 10 messages; c comes up, b closes; 6 more between a and c.
    got, before, after = round_robin("PUSH", [(1.0, "a", 6), (2.0, "b", 4), (4.0, "a", 6)],
                                     up={"a": 0.5, "b": 0.6, "c": 3.0}, down={"b": 3.5})
    assert got == {"a": 8, "b": 5, "c": 3} and before == {"a": 0, "b": 0, "c": 10} and after == {"b": 6}
    # Odd shares go where the simulator's PUSH sends them: the next pipe in turn.
    got, _, _ = round_robin("DEALER", [(1.0, "x", 1), (2.0, "x", 1), (3.0, "x", 1)], up={"x": 0.1, "y": 0.2},
                            down={})
    assert got == {"x": 2, "y": 1}


def test_identity_collision_names_both_connections():
    [f] = analysis("identity_collision")["findings"]
    assert f["severity"] == "error" and f["conns"] == ["0", "1"] and "'dup'" in f["text"]
    assert [(e["conn"], e["kind"]) for e in f["events"]] == [("0", "command"), ("1", "command")]


def test_ping_ttl_and_heartbeat_timeout():
    [ttl] = analysis("ping_ttl_long")["findings"]
    assert "700 deciseconds" in ttl["text"] and "#4226" in ttl["ref"]
    [hb] = analysis("heartbeat_ttl_expiry")["findings"]
    assert "TTL of 0.3 s" in hb["text"] and hb["events"][0]["kind"] == "command"


def test_back_pressure_cites_the_zero_window():
    [f] = analysis("push_slow_pull")["findings"]
    assert "the PULL (client) stopped reading: its TCP window stayed at zero for 0.40 s" in f["text"]
    assert "until its window update" in f["text"] and "the PUSH (server) had messages for it" in f["text"]
    assert f["events"][0]["kind"] == "expert"
    assert f["details"] | {"held": 0} == {"reader": "client", "held": 0, "until": "window-update", "stalls": 1}


def test_broker_flows_and_nodes():
    found = analysis("broker")
    assert found["flows_total"] == len(found["flows"]) == 12
    types = {c["conn"]: (c["client_type"], c["server_type"]) for c in found["connections"]}
    for flow in found["flows"]:
        assert len(flow["hops"]) == 2 and not flow["ambiguous"]
        first, second = (types[h["conn"]] for h in flow["hops"])
        [step] = flow["steps"]
        if flow["message"].startswith("request"):
            # REQ -> ROUTER frontend, then DEALER backend -> REP: the client's identity is added in front.
            assert first == ("REQ", "ROUTER") and second == ("REP", "DEALER")
            assert [h["dir"] for h in flow["hops"]] == ["c2s", "s2c"]
            assert step["envelope"] == "added" and step["frames"] == [flow["message"].split()[1][:3]]
        else:
            assert first == ("REP", "DEALER") and second == ("REQ", "ROUTER")
            assert step["envelope"] == "removed"
        assert 0 <= step["latency"] < 0.1
    brokers = [n for n in found["nodes"] if n["broker"]]
    assert [n["id"] for n in brokers] == ["127.0.0.1:15643+127.0.0.1:15644"]
    assert brokers[0]["sockets"] == {"127.0.0.1:15643": ["ROUTER"], "127.0.0.1:15644": ["DEALER"]}
    assert len(found["nodes"]) == 6  # the broker, three REQ clients, two REP workers


def test_a_moment_of_zero_window_is_not_back_pressure():
    # large.pcapng: one 1 MiB frame; the PULL's window is zero for 0.15 ms once (tshark flags it too).
    assert rules(analyze_capture(str(SHARED / "large.pcapng"))) == set()


def test_fan_out_is_not_a_flow():
    # A PUB sending the same message to two SUBs, and a PUSH's round robin, forward nothing.
    for name in ("pub_late_sub", "push_3pull", "xpub_xsub"):
        assert analysis(name)["flows_total"] == 0


def test_curve_doctor_with_the_server_key():
    secret = z85_decode(SERVER_SECRET)
    wrong = analysis("curve_wrong_key", curve_secrets=[secret])
    assert rules(wrong) == {"curve-wrong-server-key", "handshake-incomplete"}
    assert wrong["curve"]["0"]["hello"] == "does not open"
    good = analysis("curve", curve_secrets=[secret])
    assert rules(good) == set()
    assert good["curve"]["0"]["hello"] == "opens" and good["curve"]["0"]["welcome"] == "opens"
    assert len(good["curve"]["0"]["server_short_key"]) == 40
    # Another key opens nothing; the server answered HELLO with WELCOME, so that key is not this server's (the
    # client had the right one): the doctor says so rather than blaming the client.
    other = z85_decode(KEYS["client"]["secret"])
    [f] = analysis("curve", curve_secrets=[other])["findings"]
    assert f["rule"] == "curve-not-this-server" and "is not this server's" in f["text"]
    assert [e["kind"] for e in f["events"]] == ["command", "command"]


def test_unreadable_connection_is_listed():
    found = analyze_capture(capture(middle_of_a_frame))
    assert [(c["conn"], c["zmtp"]) for c in found["connections"]] == [("0", False)]
    assert found["findings"] == []


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zmtplab.cli", "analyze", *args], capture_output=True, text=True,
                          timeout=120)


def test_cli_json_contract():
    out = run_cli(str(CAPTURES / "broker.pcapng"), "--json")
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert all("id" in n for n in found["nodes"])
    for c in found["connections"]:
        assert {"conn", "client", "server", "client_type", "server_type"} <= set(c)
        assert set(c["messages"]) == {"c2s", "s2c"}
    assert all({"conn", "dir"} <= set(h) for f in found["flows"] for h in f["hops"])
    sick = json.loads(run_cli(str(CAPTURES / "pub_late_sub.pcapng"), "--json").stdout)
    assert all({"rule", "severity", "conns", "text"} <= set(f) for f in sick["findings"])


def test_cli_text_and_curve_secret_never_printed():
    out = run_cli(str(CAPTURES / "curve_wrong_key.pcapng"), "--curve-secret", SERVER_SECRET)
    assert out.returncode == 0, out.stderr
    assert "ERROR curve-wrong-server-key [conn 0]" in out.stdout and "HELLO does not open" in out.stdout
    hexed = z85_decode(SERVER_SECRET).hex()
    as_json = run_cli(str(CAPTURES / "curve_wrong_key.pcapng"), "--curve-secret", hexed, "--json")
    for text in (out.stdout + out.stderr, as_json.stdout + as_json.stderr):
        assert SERVER_SECRET not in text and hexed not in text


@pytest.mark.parametrize(("args", "message"), [
    (["--curve-secret", "short"], "40 Z85 characters or 64 hex digits"),
])
def test_cli_bad_key(args, message):
    out = run_cli(str(CAPTURES / "curve.pcapng"), *args)
    assert out.returncode == 2 and message in out.stderr


def test_cli_not_a_capture(tmp_path):
    path = tmp_path / "notes.pcap"
    path.write_text("<script>alert(1)</script> not a capture")
    out = run_cli(str(path))
    assert out.returncode == 2 and out.stderr.startswith("zmtplab analyze: ") and out.stdout == ""


@pytest.mark.parametrize("name", ["broker", "pub_late_sub"])
def test_frontend_fixtures_are_todays_analysis(name):
    # tests/frontend/overview.test.mjs draws these: they must be what analyze says now.
    fixture = REPO / "tests" / "frontend" / "data" / f"{name}.analysis.json"
    assert json.loads(fixture.read_text()) == json.loads(json.dumps(analysis(name)))


INCIDENT_KEYS = json.loads((CAPTURES / "incidents" / "curve_messages.facts.json").read_text())["other"]["keys"]


def test_a_key_beginning_with_a_dash_on_the_command_line_in_a_file_and_in_the_environment(tmp_path):
    secret = INCIDENT_KEYS["server"]["secret"]
    assert secret.startswith("-")
    capture = str(CAPTURES / "incidents" / "curve_messages.pcapng")
    keyfile = tmp_path / "server.key"
    keyfile.write_text(f"# the server's key\n\n  {secret}\n")
    env = {**os.environ, "ZMTPLAB_CURVE_SECRET": f"{INCIDENT_KEYS['other_server']['secret']}, {secret}"}
    for args, environ in ((["--curve-secret", secret], None), ([f"--curve-secret={secret}"], None),
                          (["--curve-secret-file", str(keyfile)], None), ([], env)):
        out = subprocess.run([sys.executable, "-m", "zmtplab.cli", "analyze", "--json", *args, capture],
                             capture_output=True, text=True, timeout=120, env=environ)
        assert out.returncode == 0, out.stderr
        found = json.loads(out.stdout)
        assert found["curve"]["0"]["hello"] == "opens" and found["curve"]["0"]["welcome"] == "opens", args
        assert secret not in out.stdout + out.stderr


def test_a_bad_key_in_a_file_names_the_line_never_the_key(tmp_path):
    keyfile = tmp_path / "keys"
    keyfile.write_text(INCIDENT_KEYS["server"]["secret"] + "\nnot-a-key-at-all\n")
    out = run_cli(str(CAPTURES / "curve.pcapng"), "--curve-secret-file", str(keyfile))
    assert out.returncode == 2 and f"--curve-secret-file {keyfile}, line 2" in out.stderr
    assert "not-a-key-at-all" not in out.stderr and INCIDENT_KEYS["server"]["secret"] not in out.stderr
    missing = run_cli(str(CAPTURES / "curve.pcapng"), "--curve-secret-file", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "No such file" in missing.stderr


def test_dissect_conn_names_the_connections_there_are():
    def dissect(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "zmtplab.cli", "dissect", str(CAPTURES / "broker.pcapng"), *args],
                              capture_output=True, text=True, timeout=120)

    unknown = dissect("--conn", "99")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.strip().endswith("no connection 99; its connections are 0 (ZMTP), 1 (ZMTP), 2 (ZMTP), "
                                           "3 (ZMTP), 4 (ZMTP)")
    known = dissect("--conn", "2", "--jsonl", "--no-fields")
    assert known.returncode == 0 and {json.loads(line)["conn"] for line in known.stdout.splitlines()} == {"2"}
    both = dissect("--conn", "2", "--conn", "7", "--kind", "greeting")
    assert both.returncode == 2 and "Greeting" in both.stdout and "no connection 7;" in both.stderr


def test_the_text_says_both_identities_who_closed_and_the_refused_connects():
    text = run_cli(str(CAPTURES / "router_router.pcapng")).stdout
    assert "ROUTER -> ROUTER  ZMTP 3.1 NULL  client identity 'client'  server identity 'server'" in text
    assert "closed by the client (FIN)" in text
    restart = run_cli(str(CAPTURES / "incidents" / "server_restart.pcapng")).stdout
    assert "closed by the server (FIN)" in restart
    assert "3 refused connect(s) to 127.0.0.1:15708 (SYN, RST) over 0.14 s from 127.0.0.1:17600" in restart
    curve = run_cli(str(CAPTURES / "incidents" / "curve_messages.pcapng")).stdout
    assert "encrypted messages 6/6 (MESSAGE boxes)" in curve and "messages 0/0" not in curve


def test_the_script_says_who_sent_which_message_when():
    found = analysis("broker", script=5)
    assert len(found["script"]) == 5 and [m["ts"] for m in found["script"]] == sorted(m["ts"] for m in found["script"])
    first = found["script"][0]
    assert first["from"].endswith(("15643", "15644")) or first["to"].endswith(("15643", "15644"))
    assert {"conn", "dir", "ts", "packets", "frames"} <= set(first)
    assert "script" not in analysis("broker")  # only when asked for
    text = run_cli(str(CAPTURES / "broker.pcapng"), "--script", "3").stdout
    assert "Script (the first 3 messages)" in text and "request c-0.0" in text


def test_every_key_option_takes_a_value_beginning_with_a_dash():
    from zmtplab.cli import build_parser, join_dash_values

    key = "-" + "a" * 39  # (one Z85 key in 85 begins with '-')
    peer = build_parser(["peer"]).parse_args(join_dash_values(
        ["peer", "DEALER", "tcp://127.0.0.1:5555", "--connect", "--curve-serverkey", key, "--curve-publickey", key,
         "--curve-secretkey", key, "--send", "x"]))
    assert peer.curve_serverkey == peer.curve_publickey == peer.curve_secretkey == key and peer.send == ["x"]
    analyze = build_parser(["analyze"]).parse_args(join_dash_values(["analyze", "x.pcap", "--curve-secret", key]))
    assert analyze.curve_secret == [key]
    assert join_dash_values(["analyze", "x", "--json", "--lang", "en"]) == ["analyze", "x", "--json", "--lang", "en"]
