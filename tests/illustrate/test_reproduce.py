"""The reproducing script round-trips: run against libzmq through a dissecting tap, it makes the same
elements as the capture it was written from (kinds, commands, socket types, frame sizes and flags;
CURVE keys, generated identities and timestamps aside)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testkit import free_port
from zmtplab.capture.tap import TapProxy
from zmtplab.illustrate import from_capture, reproduce_script
from zmtplab.illustrate.reproduce import conversation

pytestmark = pytest.mark.interop
CAPTURES = Path(__file__).resolve().parents[2] / "captures"

# Every sample where the capture shows what the applications sent (not encrypted, no heartbeats).
ROUND_TRIPS = ["push_pull", "dealer_router", "req_rep", "router_router", "dealer_dealer", "dealer_rep",
               "req_router", "pub_sub", "multipart", "empty_frames", "plain_ok", "broker"]


def signature(events: list[dict[str, Any]], direction: str) -> list[tuple]:
    """What must be the same, element by element, in one direction."""
    out: list[tuple] = []
    for e in events:
        if e.get("dir") != direction:
            continue
        kind = e.get("kind")
        if kind == "greeting":
            out.append(("greeting", e.get("version"), e.get("mechanism"), e.get("as_server")))
        elif kind == "command":
            props = e.get("properties") or {}
            out.append(("command", e.get("name"), props.get("Socket-Type"), props.get("Identity")))
        elif kind == "frame":
            out.append(("frame", e.get("size"), e.get("more"), e.get("body") if e.get("size", 0) <= 64 else None))
    return out


async def through_tap(script: Path, expected: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Runs the script with its client connecting through a tap; the tap's events and the script's output, once
    the tap has reported as many elements each way as `expected` holds (it reports the last bytes after the
    script has closed; 30 s bound that wait, on a loaded machine)."""
    events: list[dict[str, Any]] = []
    target = free_port()
    tap = TapProxy(("127.0.0.1", 0), ("127.0.0.1", target), events.append)
    await tap.start()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(script), "--bind", f"tcp://127.0.0.1:{target}",
            "--connect", f"tcp://127.0.0.1:{tap.port}", stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, out.decode()
        deadline = asyncio.get_running_loop().time() + 30
        while any(len(signature(events, d)) < len(signature(expected, d)) for d in ("c2s", "s2c")):
            if asyncio.get_running_loop().time() > deadline:
                break  # (the comparison says what is missing)
            await asyncio.sleep(0.02)
    finally:
        await tap.close()
    return events, out.decode()


@pytest.mark.parametrize("name", ROUND_TRIPS)
def test_the_script_makes_the_same_elements(name: str, tmp_path: Path) -> None:
    doc = from_capture(CAPTURES / f"{name}.pcapng")
    section = doc.sections[0]  # (the broker capture: its first connection, a REQ and the ROUTER frontend)
    script = tmp_path / "repro.py"
    script.write_text(reproduce_script(section, title=name))
    events, output = asyncio.run(through_tap(script, section.events))
    assert output.count("received") == len(conversation(section).messages) > 0
    for direction in ("c2s", "s2c"):
        assert signature(events, direction) == signature(section.events, direction), (direction, output)


def test_the_comparison_sees_a_changed_message(tmp_path: Path) -> None:
    """The round trip would notice a script that sent other bytes: change one message and compare."""
    section = from_capture(CAPTURES / "req_rep.pcapng").sections[0]
    script = tmp_path / "repro.py"
    script.write_text(reproduce_script(section).replace("b'Hello'", "b'Hello!'", 1))
    events, _ = asyncio.run(through_tap(script, section.events))
    assert signature(events, "c2s") != signature(section.events, "c2s")


def test_what_the_script_knows_of_each_side() -> None:
    conv = conversation(from_capture(CAPTURES / "plain_ok.pcapng").sections[0])
    assert (conv.client.socket_type, conv.server.socket_type) == ("REQ", "REP")
    assert (conv.client.mechanism, conv.client.username, conv.client.password) == ("PLAIN", b"admin", b"secret")
    assert conv.server.as_server
    # REQ's delimiter and REP's envelope are the sockets' own: the applications sent one frame each.
    assert conv.messages == [("client", [b"Hello"]), ("server", [b"World"])]
    pub = conversation(from_capture(CAPTURES / "pub_sub.pcapng").sections[0])
    assert sorted(pub.client.subscriptions) == [b"", b"weather"]
    assert [(side, topic, on) for _, side, topic, on in pub.later] == [("client", b"weather", False)]


def test_encrypted_messages_are_said_not_invented() -> None:
    conv = conversation(from_capture(CAPTURES / "curve.pcapng").sections[0])
    assert conv.messages == []
    assert any("encrypted" in n for n in conv.notes)
    assert "CURVE_SERVER" in reproduce_script(from_capture(CAPTURES / "curve.pcapng").sections[0])


def test_the_script_is_valid_python_whatever_the_payload() -> None:
    """Payload bytes become Python literals: quotes, newlines and backslashes cannot break out."""
    from zmtplab.illustrate import from_events

    hostile = b'"""\\\n\'); import os; os.system("x")#'
    doc = from_events([{"conn": "0", "dir": "c2s", "kind": "message", "frames": [hostile.hex()]}],
                      title='t"""\n', source="test")
    text = reproduce_script(doc.sections[0], title='a """ title\\')
    compile(text, "repro.py", "exec")
    assert repr(hostile) in text
    assert "os.system" not in text.replace(repr(hostile), "")
