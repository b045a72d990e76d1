"""The synchronous driver of a simulated session (`sessions.driver`) and `zmtplab session run`: the web's own
session run without an event loop, whose stream is what the websocket carries, element for element."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from zmtplab.peers.topology import preset
from zmtplab.sessions import SessionError, SessionSetup
from zmtplab.sessions.commands import Command
from zmtplab.sessions.driver import SessionDriver, run_now
from zmtplab.web import create_app
from zmtplab.web.core.settings import Settings

pytestmark = pytest.mark.timeout(120)
COMMAND = TypeAdapter(Command)


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zmtplab.cli", "session", "run", *args], capture_output=True,
                          text=True, input=stdin, timeout=60, check=False)


def websocket_stream(body: dict[str, Any], tmp_path: Path) -> list[dict[str, Any]]:
    """The events a browser gets from the web app for the session `body` describes, stepped to its end."""
    events: list[dict[str, Any]] = []
    with TestClient(create_app(Settings(data_dir=tmp_path, dissect_executor="thread"))) as client:
        session = client.post("/api/sessions", json={**body, "autoplay": False}).json()["id"]
        with client.websocket_connect(f"/ws/sessions/{session}?topology=1") as ws:
            while ws.receive_json()["type"] != "state":  # (what the socket sends first)
                pass
            done = False
            while not done:
                ws.send_json({"type": "step"})
                while True:
                    message = ws.receive_json()
                    if message["type"] == "event":
                        events.append(message["event"])
                    elif message["type"] == "error":
                        assert message == {"type": "error", "severity": "info",
                                           "detail": "nothing more happens: send a message or inject a fault"}
                        done = True
                        break
                    elif message["type"] == "state":
                        break
    return events


@pytest.mark.parametrize("body", [{"preset": "load-balancing"}, {"preset": "pub-sub-topics"},
                                  {"mode": "simulated", "server": {"type": "REP"}, "client": {"type": "REQ"}}])
def test_session_run_prints_what_the_websocket_carries(body: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text(json.dumps(body))
    run = cli(str(path), "--json")
    assert run.returncode == 0, run.stderr
    messages = [json.loads(line) for line in run.stdout.splitlines()]
    printed = [m["event"] for m in messages if m["type"] == "event"]
    assert printed and printed == websocket_stream(body, tmp_path)
    assert messages[0]["type"] == "topology"  # (as the socket opened with ?topology=1 begins)
    assert [e["seq"] for e in printed] == list(range(len(printed)))
    if "preset" in body:  # a topology's socket decisions and reads are in its stream
        assert {"socket", "peer", "message"} <= {e["kind"] for e in printed}
    last_state = [m for m in messages if m["type"] == "state"][-1]
    assert last_state["at_end"] and last_state["position"] == len(printed) and not last_state["playing"]


def test_session_run_reads_a_topology_file_and_stops_where_asked(tmp_path: Path) -> None:
    topology = {"mode": "simulated", "nodes": [{"name": "src", "type": "PUSH"}, {"name": "sink", "type": "PULL"}],
                "links": [{"connect": "sink", "bind": "src"}], "proxies": [],
                "script": [{"from": "src", "frames": ["hello", "world"], "at": 0.1}]}
    run = cli("-", stdin=json.dumps(topology))
    assert run.returncode == 0, run.stderr
    assert "sink read ['hello', 'world']" in run.stdout  # the application's read, in words
    assert "src: PUSH chose the pipe to sink" in run.stdout and "C->S        0 +64     Greeting ZMTP 3.1 NULL" \
        in run.stdout
    assert "then nothing more happens" in run.stderr
    whole = cli("-", "--json", stdin=json.dumps(topology)).stdout.count('"type":"event"')
    two = cli("-", "--json", "--steps", "2", stdin=json.dumps(topology))
    assert two.returncode == 0 and 2 <= two.stdout.count('"type":"event"') < whole
    assert two.stdout.count('"type":"state"') == 3  # (on subscribing, then after each step)


@pytest.mark.parametrize(("body", "says"), [
    ({"mode": "tcp", "preset": "load-balancing"}, "only a simulated session runs here"),
    ({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "b", "type": "PUB"}], "links": [{"connect": "a",
                                                                                           "bind": "b"}]},
     "a PUSH cannot talk to a PUB"),
    ({"preset": "nope"}, "preset"),
    ({"server": {"type": "REP", "libzmq": True}, "client": {"type": "REQ"}}, "libzmq peers need a real session"),
])
def test_session_run_refuses_what_cannot_run(body: dict[str, Any], says: str) -> None:
    run = cli("-", stdin=json.dumps(body))
    assert run.returncode == 2 and run.stdout == "" and says in run.stderr, run.stderr
    assert run.stderr.startswith("zmtplab session: ") and run.stderr.count("\n") == 1


def test_session_run_refuses_a_file_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("nodes: [")
    run = cli(str(path))
    assert run.returncode == 2 and "is not JSON" in run.stderr
    run = cli(str(tmp_path / "missing.json"))
    assert run.returncode == 2 and "missing.json" in run.stderr


def test_the_driver_carries_commands_out_as_the_websocket_does() -> None:
    setup = SessionSetup("simulated", preset("load-balancing").topology)
    driver = SessionDriver(setup)
    texts: list[str] = []
    driver.subscribe(texts.append, logs=False, fields=False)
    driver.start()
    driver.run()
    assert driver.at_end()
    before = len(driver.session.events)
    driver.command(COMMAND.validate_python({"type": "send", "from": "vent", "frames": ["more"]}))
    driver.run()
    reads = [json.loads(t)["event"] for t in texts if '"what":"recv"' in t]
    assert reads[-1]["frames"] == [b"more".hex()] and len(driver.session.events) > before
    with pytest.raises(SessionError, match="no node named 'nobody'"):
        driver.command(COMMAND.validate_python({"type": "recv", "node": "nobody"}))
    driver.command(COMMAND.validate_python({"type": "step_back"}))
    assert len(driver.session.events) < len([t for t in texts if '"type":"event"' in t])
    driver.command(COMMAND.validate_python({"type": "reset"}))  # (a new runtime, started without an event loop)
    assert '{"type":"reset"}' in texts and len(driver.session.events) == 0
    after = len(texts)
    assert driver.run() > 0 and driver.at_end() and not json.loads(texts[-1])["playing"]
    again = [json.loads(t)["event"] for t in texts[after:] if '"type":"event"' in t]
    assert again[0]["seq"] == 0 and again[-1]["seq"] == len(driver.session.events) - 1
    driver.close()
    assert driver.session.ended


def test_run_now_refuses_work_that_waits() -> None:
    import asyncio

    async def waits() -> None:
        await asyncio.sleep(0)

    async def done() -> int:
        return 7

    assert run_now(done()) == 7
    with pytest.raises(RuntimeError, match="only the asyncio driver"):
        run_now(waits())
