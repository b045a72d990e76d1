"""Scripted simulated sessions whose complete output is compared against a recorded reference.

Each scenario drives a `Session` with a `SimulatedRuntime` through the same commands the websocket
takes (sends, faults, steps, step back, play at full speed) and records what the browser would get:
every `event` and `log` message as the exact JSON text a subscriber receives (state messages are
left out: how many of them there are depends on the event loop's timing, not on the session), the
JSON export and the pcapng export (with a fixed start time). `record()` writes the reference file
(`simulated_golden.json.gz`); `tests/web/test_simulated_golden.py` checks the code against it, so a
change that makes sessions cheaper cannot change a byte of what they show.

Regenerate (only when the output is meant to change): `python tests/web/sim_scenarios.py`.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "backend"))

from zmtplab.sessions import Session, SessionLimits, simulated  # noqa: E402
from zmtplab.sessions.commands import Command  # noqa: E402
from zmtplab.sessions.simulated import SimulatedRuntime  # noqa: E402
from zmtplab.web.models import SessionCreate  # noqa: E402
from zmtplab.web.session_socket import SESSION_OUTBOX  # noqa: E402
from zmtplab.web.wspump import Outbox  # noqa: E402

GOLDEN = HERE / "data" / "simulated_golden.json.gz"
WALL0 = 1_700_000_000.0

PUSH_PULL = {"server": {"type": "PUSH"}, "client": {"type": "PULL"}}
LONG = "L" * 300  # a long frame (8-octet size)

# name -> (config, commands); a command "wait" plays until the session is idle.
SCENARIOS: dict[str, tuple[dict[str, Any], list[Any]]] = {
    "push_pull": (PUSH_PULL, [
        "wait",
        *({"type": "send", "from": "server", "frames": [f"{i}:{i * 7}:xxxxxxxxxxxxxxxx"]} for i in range(40)),
        "wait",
        {"type": "send", "from": "server", "frames": ["a", "", LONG]},
        {"type": "send", "from": "server", "frames": ["ff00fe", "00"], "hex": True},
        {"type": "send", "from": "server", "frames": ["ünïcödé ✓"]},
        "wait",
    ]),
    "push_pull_interleaved": (PUSH_PULL, [
        *({"type": "send", "from": "server", "frames": [f"{i}:x"]} for i in range(5)),
        "wait",
        *(cmd for i in range(20) for cmd in ({"type": "send", "from": "server", "frames": [f"m{i}"]}, "wait")),
    ]),
    "req_rep_plain": ({"server": {"type": "REP", "mechanism": "PLAIN", "username": "admin", "password": "secret"},
                       "client": {"type": "REQ", "mechanism": "PLAIN", "username": "admin", "password": "secret",
                                  "identity": "c1"}}, [
        "wait",
        {"type": "send", "from": "client", "frames": ["hello"]}, "wait",
        {"type": "send", "from": "server", "frames": ["world"]}, "wait",
        {"type": "send", "from": "client", "frames": ["again", "two"]}, "wait",
    ]),
    "dealer_router_curve": ({"server": {"type": "ROUTER", "mechanism": "CURVE"},
                             "client": {"type": "DEALER", "mechanism": "CURVE"}}, [
        "wait",
        *({"type": "send", "from": "client", "frames": [f"curve {i}"]} for i in range(5)), "wait",
    ]),
    "pub_sub_30": ({"server": {"type": "PUB", "version": "3.0"}, "client": {"type": "SUB", "version": "3.0"}}, [
        "wait",
        *({"type": "send", "from": "server", "frames": ["topic", f"p{i}"]} for i in range(5)), "wait",
    ]),
    "pair_20_10": ({"server": {"type": "PAIR", "version": "2.0"}, "client": {"type": "PAIR", "version": "1.0"}}, [
        "wait",
        {"type": "send", "from": "client", "frames": ["old"]}, "wait",
    ]),
    "faults": (PUSH_PULL, [
        "wait",
        {"type": "send", "from": "server", "frames": ["before"]}, "wait",
        {"type": "fault", "fault": "split_writes", "args": {"dir": "s2c", "count": 4}},
        {"type": "send", "from": "server", "frames": ["split"]}, "wait",
        {"type": "fault", "fault": "garbage", "args": {"dir": "s2c", "data": "0105"}},
        {"type": "fault", "fault": "corrupt_byte", "args": {"dir": "s2c"}},
        {"type": "send", "from": "server", "frames": ["corrupted"]}, "wait",
        {"type": "send", "from": "server", "frames": ["after reconnect"]}, "wait",
    ]),
    "stepping": (PUSH_PULL, [
        {"type": "pause"},
        *({"type": "step"} for _ in range(4)),
        {"type": "step_back"}, {"type": "step_back"},
        {"type": "step"},
        {"type": "send", "from": "server", "frames": ["branch"]},
        *({"type": "step"} for _ in range(2)),
        {"type": "play"}, "wait",
        {"type": "send", "from": "server", "frames": ["more"]}, "wait",
    ]),
    "step_back_replays": (PUSH_PULL, [
        "wait",
        *({"type": "send", "from": "server", "frames": [f"r{i}"]} for i in range(4)), "wait",
        {"type": "step_back"}, {"type": "step_back"}, {"type": "step_back"},
        {"type": "step"},
        {"type": "play"}, "wait",
        {"type": "step_back"}, {"type": "play"}, "wait",
        {"type": "send", "from": "server", "frames": ["after"]}, "wait",
    ]),
}


async def _wait_idle(session: Session) -> None:
    runtime = session.runtime
    assert isinstance(runtime, SimulatedRuntime)
    while True:  # (bounded by the test's timeout)
        await asyncio.sleep(0)
        if runtime.sim.idle() and runtime.playing:
            break
    for _ in range(10):  # let the player and the state flush settle
        await asyncio.sleep(0)


async def run_scenario(name: str) -> dict[str, Any]:
    """Runs one scenario; returns `messages` (JSON texts), `export_json` and `pcapng` (base64).

    Only the count limit (MAX_ELEMENTS_PER_TURN) ends the player's turns here, as on the quiet machine the
    reference was recorded on: a turn also ends after TURN_SECONDS of real time, and where a command lands
    among the elements already set going depends on where the turns ended, so on a busy machine the
    interleaving of sends and handshake would come out otherwise."""
    with mock.patch.object(simulated, "TURN_SECONDS", math.inf):
        return await _run_scenario(name)


async def _run_scenario(name: str) -> dict[str, Any]:
    config, commands = SCENARIOS[name]
    setup = SessionCreate.model_validate({"mode": "simulated", **config}).setup()
    session = Session("golden", setup, SessionLimits(sim_step_interval=0.3), SimulatedRuntime)
    session.wall0 = WALL0
    sub: Outbox = session.subscribe(SESSION_OUTBOX, logs=True).out
    await session.start()
    await session.command(_command({"type": "speed", "value": 1000}))
    messages: list[str] = []
    errors: list[str] = []

    def drain() -> None:
        while sub.items:
            text = sub.items.popleft()
            kind = json.loads(text)["type"]
            if kind == "error":
                errors.append(text)
            if kind != "state":
                messages.append(text)

    try:
        for cmd in commands:
            if cmd == "wait":
                await _wait_idle(session)
            else:
                await session.command(_command(cmd))
                await asyncio.sleep(0)
            drain()
        await _wait_idle(session)
        drain()
        export = session.export_json()
        pcap = session.export_pcapng()
    finally:
        await session.close()
    assert not errors, errors
    return {"messages": messages, "export_json": export, "pcapng": base64.b64encode(pcap).decode()}


def _command(raw: dict[str, Any]) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(Command).validate_python(raw)


def run_all() -> dict[str, Any]:
    """Every scenario's output."""
    return {name: asyncio.run(run_scenario(name)) for name in SCENARIOS}


def record() -> None:
    """Writes the reference file from the current code."""
    GOLDEN.parent.mkdir(exist_ok=True)
    out = run_all()
    GOLDEN.write_bytes(gzip.compress(json.dumps(out, indent=0, sort_keys=True).encode(), 9, mtime=0))
    for name, result in out.items():
        digest = hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest()[:16]
        print(f"{name}: {len(result['messages'])} messages, {digest}")


if __name__ == "__main__":
    record()
