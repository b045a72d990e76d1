"""`zmtplab analyze --json` against the facts of every recorded incident (captures/incidents/).

Each incident's facts file was written by `captures/record.py` from what the applications did and saw (their
sends, receives, monitor events and options), never from our output; one test per fact checks the analysis
of the committed capture against it. The fact kinds are described in `captures/incidents.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
INCIDENTS = REPO / "captures" / "incidents"
FACT_FILES = sorted(INCIDENTS.glob("*.facts.json"))

# Facts the analysis gets wrong (an expected failure each, until fixed): none since the CURVE key options.
TODAY_WRONG: set[str] = set()


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def params() -> list:
    out = []
    for path in FACT_FILES:
        name = path.name.removesuffix(".facts.json")
        for i, fact in enumerate(load(path)["facts"]):
            fid = f"{name}/{i}-{fact['fact']}"
            marks = [pytest.mark.xfail(strict=True, reason="today's analysis")] if fid in TODAY_WRONG else []
            out.append(pytest.param(name, fact, id=fid, marks=marks))
    return out


def analyze(name: str, *args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "zmtplab.cli", "analyze", "--json", *args,
                          str(INCIDENTS / f"{name}.pcapng")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def analyses() -> dict[str, dict[str, Any]]:
    """Every incident's `analyze --json`, made once (in parallel: each is a process of its own)."""
    names = [p.name.removesuffix(".facts.json") for p in FACT_FILES]
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(names, pool.map(analyze, names), strict=True))


# --------------------------------------------------------------------------- what a fact names


def rows(found: dict[str, Any], fact: dict[str, Any]) -> list[dict[str, Any]]:
    """The connections a fact is about: by its server endpoint and, when it names one, its client's."""
    return [c for c in found["connections"] if c["zmtp"] and c["server"] == fact["server"]
            and (fact.get("client") is None or c["client"] == fact["client"])]


def one_row(found: dict[str, Any], fact: dict[str, Any], which: int = 0) -> dict[str, Any]:
    matching = rows(found, fact)
    assert len(matching) > which, f"no connection {fact.get('client')} -> {fact['server']}"
    return matching[which]


def close_enough(got: Any, want: Any, tolerance: float | None) -> bool:
    if tolerance is not None and isinstance(want, int | float) and isinstance(got, int | float):
        return abs(got - want) <= tolerance
    return got == want


def flows_from(found: dict[str, Any], conn: str, d: str, *, last: bool = False) -> list[dict[str, Any]]:
    hop = -1 if last else 0
    return [f for f in found["flows"] if (f["hops"][hop]["conn"], f["hops"][hop]["dir"]) == (conn, d)]


# --------------------------------------------------------------------------- the checks, one per fact kind


def check_connection(found, fact, name):
    matching = rows(found, fact)
    assert len(matching) == fact.get("count", 1), [(c["client"], c["server"]) for c in matching]
    for c in matching:
        for key in ("client_type", "server_type", "mechanism"):
            if key in fact:
                assert c[key] == fact[key], (key, c[key])
        if "handshake" in fact:
            assert c["handshake"] is fact["handshake"]
        for d, ident in fact.get("identities", {}).items():
            assert c["identities"].get(d) == ident, c["identities"]


def check_messages(found, fact, name):
    matching = rows(found, fact)
    assert matching
    for d in ("c2s", "s2c"):
        got = sum(c["messages"][d] for c in matching)
        if fact.get("at_most"):
            assert got <= fact[d], (d, got)
        else:
            assert got == fact[d], (d, got)
        if fact.get("encrypted"):
            assert sum(c["encrypted"][d] for c in matching) == fact[d]


def check_subscriptions(found, fact, name):
    c = one_row(found, fact)
    got = [[s["what"], s["topic"]] for s in c["subscriptions"] if s.get("dir", fact["dir"]) == fact["dir"]]
    assert got == fact["topics"]


def check_requests(found, fact, name):
    front = one_row(found, {"client": fact["client"], "server": fact["broker"][0]})
    backend = {c["conn"] for c in found["connections"] if c["server"] == fact["broker"][1]}
    asked = flows_from(found, front["conn"], "c2s")
    answered = flows_from(found, front["conn"], "s2c", last=True)
    assert len(asked) == fact["count"] and len(answered) == fact["replies"]
    for flow in asked + answered:
        assert not flow["ambiguous"], flow.get("why")
    assert all(f["hops"][-1]["conn"] in backend for f in asked)
    assert all(f["hops"][0]["conn"] in backend for f in answered)
    # The routing id the ROUTER gave this client's connection: the same on every request and every reply.
    ids = {tuple(f["steps"][0]["frames"]) for f in asked} | {tuple(f["steps"][-1]["frames"]) for f in answered}
    assert len(ids) == 1, ids


def check_served(found, fact, name):
    worker = one_row(found, {"client": fact["worker"], "server": fact["broker"]})
    served = flows_from(found, worker["conn"], "s2c", last=True)
    assert len(served) == fact["count"]


def check_flows(found, fact, name):
    assert found["flows_total"] == fact["count"]
    assert sum(1 for f in found["flows"] if f["ambiguous"]) == fact["ambiguous"]


def check_node(found, fact, name):
    assert any(set(fact["endpoints"]) <= set(n["endpoints"]) for n in found["nodes"]), \
        [n["endpoints"] for n in found["nodes"]]


def check_findings(found, fact, name):
    assert sorted({f["rule"] for f in found["findings"]}) == sorted(fact["rules"]), \
        [(f["rule"], f["text"]) for f in found["findings"]]


def check_finding_absent(found, fact, name):
    assert fact["rule"] not in {f["rule"] for f in found["findings"]}


def check_finding(found, fact, name):
    conns = {c["conn"] for c in rows(found, fact)} if "server" in fact else set()
    candidates = [f for f in found["findings"] if f["rule"] == fact["rule"]
                  and (not conns or conns & set(f["conns"]) or f.get("details", {}).get("server") == fact["server"])]
    assert candidates, [(f["rule"], f["conns"]) for f in found["findings"]]
    tolerance = fact.get("tolerance", {})
    for f in candidates:
        details = f.get("details", {})
        if all(close_enough(details.get(k), v, tolerance.get(k)) for k, v in fact.get("details", {}).items()):
            return
    pytest.fail(f"details {[f.get('details') for f in candidates]} are not {fact.get('details')}")


def check_closed(found, fact, name):
    c = one_row(found, fact, fact.get("which", 0))
    assert c["close"]["by"] == fact["first"] and c["close"]["how"] == fact["how"], c["close"]


def check_refused(found, fact, name):
    groups = [g for g in found["refused"] if g["server"] == fact["server"]]
    assert len(groups) == 1, found["refused"]
    assert abs(groups[0]["count"] - fact["count"]) <= fact.get("tolerance", 0), groups[0]


def check_curve_check(found, fact, name, tmp_path_factory=None):
    secret = curve_secret_file(fact["secret"])
    checked = analyze(name, "--curve-secret-file", str(secret))
    [conn] = checked["curve"]
    assert checked["curve"][conn]["hello"] == fact["hello"]
    if "welcome" in fact:
        assert checked["curve"][conn]["welcome"] == fact["welcome"]
    without = {f["rule"] for f in found["findings"]}
    added = {f["rule"] for f in checked["findings"]} - without
    assert sorted(added) == sorted(fact["rules"])


@cache
def curve_secret_file(secret: str) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="zmtplab-test-")) / "server.key"
    path.write_text(secret + "\n")
    path.chmod(0o600)
    return path


CHECKS = {
    "connection": check_connection, "messages": check_messages, "subscriptions": check_subscriptions,
    "requests": check_requests, "served": check_served, "flows": check_flows, "node": check_node,
    "findings": check_findings, "finding": check_finding, "finding-absent": check_finding_absent,
    "closed": check_closed, "refused": check_refused, "curve-check": check_curve_check,
}


@pytest.mark.parametrize(("name", "fact"), params())
def test_fact(analyses, name, fact):
    CHECKS[fact["fact"]](analyses[name], fact, name)


def test_the_corpus():
    """At least 20 incidents, each with its capture, every fact of a kind the checks know, and small files."""
    names = {p.name.removesuffix(".facts.json") for p in FACT_FILES}
    assert len(names) >= 20
    assert names == {p.stem for p in INCIDENTS.glob("*.pcapng")}
    for path in FACT_FILES:
        doc = load(path)
        assert doc["apps"] or doc.get("other"), path.name
        assert {f["fact"] for f in doc["facts"]} <= set(CHECKS), path.name
        assert any(f["fact"] == "findings" for f in doc["facts"]), f"{path.name}: no statement of what went wrong"
    sizes = {p.name: p.stat().st_size for p in INCIDENTS.iterdir()}
    assert all(size < 3_000_000 for size in sizes.values()), sizes
    assert sum(sizes.values()) < 6_000_000


def test_the_recorder_knows_every_incident():
    from test_sample_captures import load_record_module  # (tests/ is on the path: a sibling module)

    record = load_record_module()
    recorded = {name for name, sc in record.SCENARIOS.items() if sc.folder == "incidents"}
    assert recorded == {p.name.removesuffix(".facts.json") for p in FACT_FILES}
