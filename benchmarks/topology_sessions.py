"""Server CPU per message: a 12-node simulated topology session against today's two-peer session (issue 19).

Both run in this process the way the server runs them: a `Session` with its `SimulatedRuntime`, a
subscriber that takes what a websocket would send (`?batch=1&log=0&marks=1&fields=0`, as the page connects),
commands through `Session.command` (what the websocket handler calls), played live (speed 1000). The
two-peer case is PUSH -> PULL; the topology is 4 PUSH and 8 PULL joined by 16 links, each PUSH feeding
four PULLs, messages sent from the four PUSHes in turn. Messages go at `--rate` a second in total
(1,000) for `--seconds`, in 10 ms batches; the process's CPU time (user + system) over the run is
divided by the messages sent. The two cases alternate for `--rounds` rounds and each keeps its best
round (the machine's other work shows in single runs). In the topology every message also makes its
socket decisions (the PUSH's route, the PULL's deliver) and its read event, serialised and queued like
the wire events.

Prints one line per case and then

    topology_sessions: two_peer=...us/msg topology=...us/msg ratio=... goal=1.5 met|FAILED

and exits non-zero when the ratio is over `--goal`.

Usage: python benchmarks/topology_sessions.py [--rate 1000] [--seconds 5] [--rounds 3] [--goal 1.5]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backend"))

from zmtplab.sessions import Session, SessionLimits
from zmtplab.sessions.commands import Command
from zmtplab.sessions.simulated import SimulatedRuntime
from zmtplab.web.models import SessionCreate
from zmtplab.web.session_socket import SESSION_OUTBOX

TWO_PEER = {"server": {"type": "PUSH"}, "client": {"type": "PULL"}}
PUSHES = [f"p{i}" for i in range(4)]
TOPOLOGY = {
    "nodes": [*({"name": p, "type": "PUSH"} for p in PUSHES), *({"name": f"q{i}", "type": "PULL"} for i in range(8))],
    "links": [{"connect": f"q{j}", "bind": f"p{i}"}
              for i in range(4) for j in (2 * i, (2 * i + 1) % 8, (2 * i + 3) % 8, (2 * i + 5) % 8)],
}


def command(raw: dict[str, Any]) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(Command).validate_python(raw)


async def run_case(body: dict[str, Any], senders: list[str], rate: int, seconds: float) -> tuple[float, int, int]:
    """CPU microseconds per message, messages sent, events the session kept."""
    limits = SessionLimits(session_max_messages=10**9, session_max_sent_bytes=10**12, session_max_events=10**7)
    setup = SessionCreate.model_validate({"mode": "simulated", **body}).setup()
    session = Session("bench", setup, limits, SimulatedRuntime)
    sub = session.subscribe(SESSION_OUTBOX, logs=False, marks=True, fields=False).out
    await session.start()
    await session.command(command({"type": "speed", "value": 1000}))
    loop = asyncio.get_running_loop()

    take_due = getattr(sub, "take_due", None) or sub.take_state  # (the state message, computed when sent)

    async def drain() -> None:  # the websocket's pump: takes what it would send
        while True:
            if await sub.take(1 << 20) is None:
                return
            take_due()
            await asyncio.sleep(0.005)  # (a pump sends a batch per turn; a browser reads at its own pace)

    drainer = asyncio.create_task(drain())
    await asyncio.sleep(0.2)  # handshakes
    per_batch = max(1, rate // 100)
    total = int(rate * seconds)
    sends = [command({"type": "send", "from": senders[i % len(senders)], "frames": [f"message {i}"]})
             for i in range(total)]
    cpu0 = time.process_time()
    start = loop.time()
    for n in range(0, total, per_batch):
        for cmd in sends[n:n + per_batch]:
            await session.command(cmd)
        delay = start + (n + per_batch) / rate - loop.time()
        await asyncio.sleep(max(0.0, delay))
    await asyncio.sleep(0.2)  # the last messages cross
    cpu = time.process_time() - cpu0
    kept = len(session.events)
    await session.close()
    drainer.cancel()
    return cpu / total * 1e6, total, kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000, help="messages a second, in total")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--goal", type=float, default=1.5, help="the largest topology/two-peer ratio accepted")
    args = parser.parse_args(argv)
    two = topo = float("inf")
    for _ in range(args.rounds):
        cpu, sent, kept = asyncio.run(run_case(TWO_PEER, ["server"], args.rate, args.seconds))
        print(f"two-peer (PUSH -> PULL): {cpu:.1f} us/msg over {sent} messages ({kept} events)")
        two = min(two, cpu)
        cpu, sent, kept = asyncio.run(run_case(TOPOLOGY, PUSHES, args.rate, args.seconds))
        print(f"topology (12 nodes, 16 links): {cpu:.1f} us/msg over {sent} messages ({kept} events)")
        topo = min(topo, cpu)
    ratio = topo / two
    met = ratio <= args.goal
    print(f"topology_sessions: two_peer={two:.1f}us/msg topology={topo:.1f}us/msg ratio={ratio:.2f} "
          f"goal={args.goal} {'met' if met else 'FAILED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
