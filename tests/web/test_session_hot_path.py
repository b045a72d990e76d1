"""What makes busy simulated sessions cheap, and stays correct: the event log's count, a live session that
plays a command's traffic within the command, records a busy session keeps without burdening the garbage
collector, `log` messages only for sockets that want them, and batched websocket messages that carry exactly
the messages an unbatched socket gets."""

from __future__ import annotations

import asyncio
import gc
import json
import uuid
from typing import Any

import pytest
from pydantic import TypeAdapter
from webkit import open_client

from zmtplab.sessions import EventLog, Session, WireChunk
from zmtplab.sessions.commands import Command
from zmtplab.sessions.simulated import SimulatedRuntime
from zmtplab.web.core.settings import Settings
from zmtplab.web.models import SessionCreate
from zmtplab.web.session_socket import SESSION_OUTBOX

pytestmark = pytest.mark.timeout(60)

COMMANDS: TypeAdapter[Any] = TypeAdapter(Command)
PUSH_PULL = {"mode": "simulated", "server": {"type": "PUSH"}, "client": {"type": "PULL"}}


def command(raw: dict[str, Any]) -> Any:
    return COMMANDS.validate_python(raw)


async def started_session(**settings: Any) -> Session:
    setup = SessionCreate.model_validate(PUSH_PULL).setup()
    session = Session("test", setup, Settings(**settings).session_limits(), SimulatedRuntime)
    await session.start()
    return session


async def settle(session: Session) -> None:
    runtime = session.runtime
    assert isinstance(runtime, SimulatedRuntime)
    for _ in range(1000):
        await asyncio.sleep(0)
        if runtime.sim.idle() and runtime._parked:
            return
    raise AssertionError("the session did not settle")


@pytest.mark.parametrize("first_block", [EventLog.BLOCK, 1, 37, EventLog.BLOCK - 1])
def test_event_log_counts_across_blocks(first_block):
    log = EventLog(first_block=first_block)
    texts = [json.dumps({"n": i}) for i in range(3 * EventLog.BLOCK + 17)]
    for i, text in enumerate(texts, 1):
        log.append(text)
        assert len(log) == i
    assert len(log.blocks) == 1 + (len(texts) - first_block) // EventLog.BLOCK  # the first one is shorter
    assert list(log) == texts
    keeps = {3 * EventLog.BLOCK + 5, 2 * EventLog.BLOCK, EventLog.BLOCK + 1, first_block + 1, first_block,
             first_block - 1, 7, 0}
    for keep in sorted(keeps, reverse=True):
        log.truncate(keep)
        assert len(log) == keep and list(log) == texts[:keep]
        for text in texts[keep:keep + 300]:  # and it grows again from there, block by block
            log.append(text)
        assert len(log) == min(keep + 300, len(texts)) and list(log) == texts[:len(log)]
        log.truncate(keep)
    log.append(texts[0])
    assert len(log) == 1
    log.clear()
    assert len(log) == 0 and list(log) == []
    for text in texts[:first_block]:
        log.append(text)
    assert len(log.blocks) == 1 and log.tail == []  # after a clear, the first block is short again


def test_sessions_started_together_compress_at_different_events():
    setup = SessionCreate.model_validate(PUSH_PULL).setup()
    sizes = {Session(uuid.uuid4().hex, setup, Settings().session_limits(), lambda sess: None).events.first_block
             for _ in range(50)}
    assert len(sizes) > 30 and all(1 <= n <= EventLog.BLOCK for n in sizes)


def test_a_live_session_plays_a_send_within_the_command():
    async def run() -> None:
        session = await started_session()
        sub = session.subscribe(SESSION_OUTBOX, logs=False).out
        await session.command(command({"type": "speed", "value": 1000}))
        await settle(session)
        before = len(session.events)
        await session.command(command({"type": "send", "from": "server", "frames": ["now"]}))
        # No turn of the event loop in between: the waiting player was not needed.
        kinds = [json.loads(t)["event"]["kind"] for t in sub.items if t.startswith('{"type":"event"')]
        assert len(session.events) == before + 2 and kinds[-2:] == ["frame", "message"]
        await settle(session)
        assert len(session.events) == before + 2
        # At speed 1 the player keeps its pace: nothing shows before its next step is due.
        await session.command(command({"type": "speed", "value": 1}))
        await settle(session)
        await session.command(command({"type": "send", "from": "server", "frames": ["later"]}))
        assert len(session.events) == before + 2
        await session.close()

    asyncio.run(run())


def test_what_a_busy_session_keeps_is_not_tracked_by_the_garbage_collector():
    """One wire chunk and one script entry per message, thousands per session: plain tuples of atoms,
    which the first collection of the youngest generation stops tracking (each tracked object lengthens
    the collections of the older generations, pauses of the whole server)."""

    async def run() -> None:
        session = await started_session()
        await session.command(command({"type": "speed", "value": 1000}))
        await settle(session)
        for i in range(20):
            await session.command(command({"type": "send", "from": "server", "frames": [f"m{i}", "x"]}))
        await settle(session)
        runtime = session.runtime
        assert isinstance(runtime, SimulatedRuntime)
        gc.collect(0)
        sends = [e for e in runtime.sim.actions() if e.op == "send"]
        assert [e.args for e in sends[-2:]] == [(("peer_name", "server"), ("frames", (b"m18", b"x"))),
                                                (("peer_name", "server"), ("frames", (b"m19", b"x")))]
        assert len(runtime.sim.script) >= 20 and not any(gc.is_tracked(e) for e in runtime.sim.script)
        assert len(session.wire) > 20 and not any(gc.is_tracked(c) for c in session.wire)
        chunk = WireChunk._make(session.wire[-1])
        assert chunk.conn == "0" and chunk.dir == "s2c" and chunk.data.endswith(b"x")
        await session.close()

    asyncio.run(run())


def test_log_messages_go_only_to_sockets_that_want_them():
    async def run() -> None:
        session = await started_session()
        quiet = session.subscribe(SESSION_OUTBOX, logs=False)
        chatty = session.subscribe(SESSION_OUTBOX, logs=True)
        assert session.log_subscribers == 1
        await session.command(command({"type": "speed", "value": 1000}))
        await settle(session)
        assert not any(t.startswith('{"type":"log"') for t in quiet.out.items)
        assert any(t.startswith('{"type":"log"') for t in chatty.out.items)
        session.unsubscribe(chatty)
        assert session.log_subscribers == 0
        await session.close()

    asyncio.run(run())


def test_batched_socket_gets_exactly_the_messages_of_an_unbatched_one(tmp_path):
    with open_client(tmp_path, sim_step_interval=0.005) as client:
        r = client.post("/api/sessions", json=PUSH_PULL)
        session_id = r.json()["id"]
        with client.websocket_connect(f"/ws/sessions/{session_id}?log=0") as plain, \
                client.websocket_connect(f"/ws/sessions/{session_id}?batch=1&log=0") as batched:
            for sock in (plain, batched):
                sock.send_json({"type": "speed", "value": 1000})
            for i in range(30):
                plain.send_json({"type": "send", "from": "server", "frames": [f"{i}", "two"]})

            def events(sock: Any, batch: bool) -> list[str]:
                out: list[str] = []
                while len(out) < 4 + 2 * 30 + 30:
                    data = json.loads(sock.receive_text())
                    # A batching socket sends an array when it has several messages, one object otherwise.
                    assert batch or not isinstance(data, list)
                    for m in (data if isinstance(data, list) else [data]):
                        if m["type"] == "event":
                            out.append(json.dumps(m["event"], sort_keys=True))
                return out

            got_plain, got_batched = events(plain, False), events(batched, True)
        assert got_plain == got_batched
        assert [json.loads(e)["seq"] for e in got_batched] == list(range(len(got_batched)))


def test_batch_clock_wakes_every_waiting_socket_at_one_tick():
    from zmtplab.web.wspump import BatchClock

    async def run() -> None:
        loop = asyncio.get_running_loop()
        clock = BatchClock(loop, 0.02)
        woken: list[float] = []

        async def wait() -> None:
            await clock.tick()
            woken.append(loop.time())

        # Two sockets that start waiting at different moments of one period (ticks fall on multiples of
        # the period): the second a little after the first, before the first's tick. A loaded machine may
        # oversleep past the tick; then the pair is tried again in a later period.
        for _attempt in range(50):
            woken.clear()
            first = asyncio.create_task(wait())
            await asyncio.sleep(0)
            assert clock.timer is not None
            due = clock.timer.when()
            assert abs(due / 0.02 - round(due / 0.02)) < 1e-6  # on the period's grid
            await asyncio.sleep(0.002)
            second = asyncio.create_task(wait())
            cancelled = asyncio.create_task(wait())
            await asyncio.sleep(0)
            cancelled.cancel()
            if first.done():  # the tick came before the second waiter: not the case under test
                await second
                continue
            await first
            # One tick for both: the tick that resumed `first` made `second` ready in the same loop pass,
            # so it is done by the time this task (resumed by `first`'s completion, a pass later) looks.
            assert second.done() and len(woken) == 2
            break
        else:
            raise AssertionError("never got a second waiter in before the first one's tick")
        assert clock.timer is None and clock.waiters == []
        await asyncio.wait_for(wait(), 1)  # and ticks again when asked
        assert len(woken) == 3

    asyncio.run(run())


def test_a_busy_session_sends_one_state_after_the_events_it_counts():
    """Every command changes the state; a subscriber gets one state message for all the changes until it
    sends, computed then (its position counts every event queued before it), not one per command."""

    async def run() -> None:
        session = await started_session()
        await session.command(command({"type": "speed", "value": 1000}))
        await settle(session)
        sub = session.subscribe(SESSION_OUTBOX, logs=False).out
        sub.items.clear()
        assert sub.take_due() is None  # nothing changed since subscribing
        for i in range(20):
            await session.command(command({"type": "send", "from": "server", "frames": [f"m{i}"]}))
        assert len(sub.items) == 40 and not any(t.startswith('{"type":"state"') for t in sub.items)
        assert sub.take_due() is None  # not before the events it counts
        await asyncio.sleep(0)  # (the subscribers are told the state is due once, at the end of the loop's turn)
        assert await sub.take(512) is not None and not sub.items
        state = json.loads(sub.take_due() or "null")
        assert state["type"] == "state" and state["position"] == len(session.events) == state["total"]
        assert sub.take_due() is None  # one for all twenty commands
        await session.close()

    asyncio.run(run())
