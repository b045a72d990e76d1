"""`zmtplab session run`: a playground session on the command line, the web's own simulated session
(`zmtplab.sessions`) driven synchronously, printing what its websocket would carry."""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any

import orjson
from pydantic import ValidationError

from ..engine.fields import text_or_hex
from ..i18n import localize_event
from ..sessions import SessionConfigError, SessionSetup
from ..sessions.driver import SessionDriver
from ..web.models import SessionCreate
from .output import add_lang_option, summary


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `session` subcommand (`session run`)."""
    p = sub.add_parser("session", help="run a playground session here (simulated)",
                       description="Run a playground session on the simulator, as the web app runs it.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    run_p = actions.add_parser(
        "run", help="run a topology (or two-peer) session on the simulator and print its stream",
        description="Run the session FILE describes (the body POST /api/sessions takes: a topology file saved by "
                    "the playground, {\"preset\": ID}, or a two-peer body) on the simulator, element by element, "
                    "until nothing more happens, and print each element, socket decision and application read "
                    "as the session's websocket carries them. Only simulated sessions run here.")
    run_p.add_argument("file", metavar="FILE", help="the session as JSON (a topology file); - reads standard input")
    run_p.add_argument("--json", action="store_true",
                       help="print every websocket message as one JSON line: topology, event, log, state, error "
                            "(what /ws/sessions/{id}?topology=1 carries)")
    run_p.add_argument("--steps", type=int, default=None, metavar="N",
                       help="stop after N steps, each as the websocket's step command (the next element, or the "
                            "elements that come at once); default: when nothing more happens, or at the session's "
                            "limit of events")
    run_p.add_argument("--no-fields", action="store_true", help="events without their fields (as ?fields=0)")
    run_p.add_argument("--no-log", action="store_true", help="leave the log messages out (as ?log=0)")
    add_lang_option(run_p)
    run_p.set_defaults(func=run)


def read_setup(source: str) -> SessionSetup:
    """The session a file (or standard input) describes; ValueError saying what is wrong."""
    try:
        text = sys.stdin.read() if source == "-" else open(source, encoding="utf-8").read()  # noqa: SIM115
    except OSError as exc:
        raise ValueError(f"{exc.strerror or exc}: {source}") from None
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source} is not JSON: {exc}") from None
    try:
        return SessionCreate.model_validate(body).setup()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ValueError(f"{source}: {where + ': ' if where else ''}"
                         f"{first['msg'].removeprefix('Value error, ')}") from None


def run(args: argparse.Namespace) -> int:
    """Runs the session and prints its stream."""
    if args.steps is not None and args.steps < 0:
        print("zmtplab session: --steps is a number of steps, 0 or more", file=sys.stderr)
        return 2
    try:
        setup = read_setup(args.file)
        driver = SessionDriver(setup)
    except (ValueError, SessionConfigError) as exc:
        print(f"zmtplab session: {exc}", file=sys.stderr)
        return 2
    out = sys.stdout
    write = (lambda text: out.write(text + "\n")) if args.json else Readable(out, args.lang).write
    driver.subscribe(write, logs=not args.no_log, topology=True, fields=not args.no_fields)
    try:
        driver.start()
    except SessionConfigError as exc:
        print(f"zmtplab session: {exc}", file=sys.stderr)
        return 2
    limit = driver.session.limits.session_max_events
    added = driver.run(min(args.steps, limit) if args.steps is not None else limit)
    more = not driver.at_end()
    driver.close()
    out.flush()
    if more and args.steps is None:
        print(f"zmtplab session: stopped at the session's limit of {limit} events; more would happen",
              file=sys.stderr)
    elif not args.json:
        print(f"{added} element(s){'; more would happen' if more else ', then nothing more happens'}",
              file=sys.stderr)
    return 0


class Readable:
    """The stream as lines: each wire element (time, connection, direction, offset, summary), socket decision
    and application read; a connection opened or closed and a fault; errors."""

    def __init__(self, out: IO[str], lang: str | None) -> None:
        self.out = out
        self.lang = lang

    def write(self, text: str) -> None:
        message = orjson.loads(text)
        kind = message.get("type")
        if kind == "event":
            event = message["event"]
            self.line(event, self.event_text(event if self.lang is None else localize_event(event, self.lang)))
        elif kind == "log" and message["entry"].get("kind") == "link" and message["entry"].get("what") != "bytes":
            entry = message["entry"]
            detail = " ".join(f"{k}={entry[k]}" for k in ("client", "server", "side", "reason", "fault")
                              if entry.get(k) not in (None, ""))
            self.line(entry, f"link {entry['what']}" + (f" {detail}" if detail else ""))
        elif kind == "error":
            self.out.write(f"error: {message['detail']}\n")

    def line(self, item: dict[str, Any], what: str) -> None:
        conn = item.get("conn")
        self.out.write(f"{item.get('t', 0.0):10.6f} {conn if conn is not None else '-':>3} {what}\n")

    @staticmethod
    def event_text(event: dict[str, Any]) -> str:
        kind = event.get("kind")
        if kind == "socket":
            return f"{event.get('node')}: {event.get('text')}"
        if kind == "peer":  # (an application's read)
            frames = [repr(text_or_hex(bytes.fromhex(f))) for f in event.get("frames", [])]
            return f"{event.get('peer')} read [{', '.join(frames)}]"
        direction = {"c2s": "C->S", "s2c": "S->C"}.get(event.get("dir", ""), "    ")
        return f"{direction} {event.get('offset', 0):>8} +{event.get('length', 0):<6} {summary(event)}"
