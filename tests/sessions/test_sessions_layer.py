"""The sessions layer on its own: a session, simulated or real, runs and streams without the web app (its subscriber
writes to any `Output`), and its commands carry themselves out, dispatched by class."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import get_args

import pytest
from pydantic import TypeAdapter, ValidationError

from zmtplab.sessions.commands import COMMAND_TYPES, COMMANDS, Command

pytestmark = pytest.mark.timeout(120)

# Run in a fresh interpreter, so that nothing of the web app is loaded (other tests of this process load it).
SCRIPT = r'''
import asyncio, json, sys
from zmtplab.peers.topology import preset, two_peer
from zmtplab.sessions import Session, SessionLimits, SessionSetup, runtime_factory
from zmtplab.sessions.commands import Command
from pydantic import TypeAdapter

COMMANDS = TypeAdapter(Command)


class Lines:
    """An `Output` that keeps what it is given (a CLI would print it)."""

    def __init__(self, limit, *, max_bytes, due, control, backlog):
        self.texts, self.due, self.ended = list(control), due, False

    def put_text(self, text):
        self.texts.append(text)

    def mark_due(self):
        self.texts.append(self.due())

    def end(self):
        self.ended = True


async def run(setup, commands, until):
    session = Session("layer", setup, SessionLimits(sim_step_interval=0.001), runtime_factory(setup))
    sub = session.subscribe(Lines, logs=False)
    await session.start()
    for command in commands:
        await session.command(COMMANDS.validate_python(command))
    events = []
    for _ in range(12000):  # (a minute at most on a loaded machine; what is awaited usually comes at once)
        events = [json.loads(t)["event"] for t in sub.out.texts if t.startswith('{"type":"event"')]
        if until(events):
            break
        await asyncio.sleep(0.005)
    await session.close()
    return {"events": events, "ended": sub.out.ended, "export": json.loads(session.export_json())["config"]}


def bodies(events):
    return [bytes.fromhex(f) for e in events if e["kind"] == "message" for f in e["frames"]]


push_pull = two_peer({"type": "PUSH"}, {"type": "PULL"})
request = {"mode": "MODE", "server": {"type": "PUSH"}, "client": {"type": "PULL"}}
out = {}
for mode in ("simulated", "tcp"):
    setup = SessionSetup(mode, push_pull, two_peer=True, request={**request, "mode": mode})
    out[mode] = asyncio.run(run(setup, [{"type": "send", "from": "server", "frames": ["hello"]}],
                                lambda events: b"hello" in bodies(events)))
setup = SessionSetup("simulated", preset("load-balancing").topology, preset="load-balancing")
out["topology"] = asyncio.run(run(setup, [], lambda events: any(e["kind"] == "socket" for e in events)))
out["web_loaded"] = sorted(m for m in sys.modules if m.startswith("zmtplab.web"))
print(json.dumps(out))
'''


def run_script() -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_sessions_run_and_stream_without_the_web_app():
    out = run_script()
    assert out["web_loaded"] == []
    for mode in ("simulated", "tcp"):
        events = out[mode]["events"]
        kinds = [e["kind"] for e in events]
        assert kinds[:2] == ["greeting", "greeting"] and "command" in kinds, (mode, kinds)
        message = next(e for e in events if e["kind"] == "message")
        assert [bytes.fromhex(f) for f in message["frames"]] == [b"hello"] and message["dir"] == "s2c"
        assert out[mode]["ended"]  # (closing the session ends its subscribers' outputs)
        assert out[mode]["export"] == {"mode": mode, "server": {"type": "PUSH"}, "client": {"type": "PULL"}}
    decisions = [e for e in out["topology"]["events"] if e["kind"] == "socket"]
    assert decisions and decisions[0]["node"] in {"vent", "w1", "w2", "w3"}
    assert out["topology"]["export"]["preset"] == "load-balancing"


def test_commands_are_classes_dispatched_by_type():
    union = get_args(get_args(Command)[0])
    assert union == COMMANDS
    assert COMMAND_TYPES == ("send", "play", "pause", "step", "step_back", "speed", "reset", "fault", "recv")
    adapter = TypeAdapter(Command)
    for cls, kind in zip(COMMANDS, COMMAND_TYPES, strict=True):
        assert "apply" in vars(cls)  # (each carries itself out)
        body = {"type": kind, **({"from": "server", "frames": ["x"]} if kind == "send" else {}),
                **({"node": "w1"} if kind == "recv" else {}), **({"value": 2} if kind == "speed" else {}),
                **({"fault": "close"} if kind == "fault" else {})}
        assert type(adapter.validate_python(body)) is cls
    with pytest.raises(ValidationError):
        adapter.validate_python({"type": "shutdown"})
