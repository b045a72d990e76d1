"""`zmtplab live IFACE PORT`: capture ZMTP on an interface (through pyshark) and print its events."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

from ..capture.live import LiveCapture, list_interfaces
from .output import write_jsonl, write_line


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `live` subcommand."""
    p = sub.add_parser("live", help="capture and dissect ZMTP on a network interface",
                       description="Capture `tcp port PORT` on IFACE with tshark (through pyshark) and print the "
                                   "ZMTP events as traffic arrives. Needs capture privileges (root or NET_RAW).")
    p.add_argument("interface", help=f"one of: {', '.join(list_interfaces())}")
    p.add_argument("port", type=int, help="the TCP port to capture")
    p.add_argument("--jsonl", action="store_true", help="print JSON lines (the event contract)")
    p.add_argument("--no-fields", action="store_true", help="leave out the fields of each event")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="stop after S seconds")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Captures until interrupted (or --timeout) and prints events."""
    write = write_jsonl if args.jsonl else write_line
    lock = threading.Lock()

    def sink(event: dict) -> None:
        with lock:
            write(sys.stdout, event)
            sys.stdout.flush()

    try:
        capture = LiveCapture(args.interface, args.port, sink, with_fields=not args.no_fields)
    except ValueError as exc:
        print(f"zmtplab live: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    # SIGTERM (kill, a service manager, a container stop) and SIGHUP stop the capture as Ctrl-C does, so dumpcap
    # and tshark are ended and the open connections flushed. (SIGKILL: dumpcap dies with this process anyway.)
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        capture.start()
        print(f"zmtplab live: capturing tcp port {args.port} on {args.interface}", file=sys.stderr)
        wait_for_stop(stop, args.timeout)
    except KeyboardInterrupt:
        pass
    finally:
        capture.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if capture.error:
        print(f"zmtplab live: {capture.error}", file=sys.stderr)
        return 1
    return 0


def wait_for_stop(stop: threading.Event, timeout: float | None, tick: float = 0.25) -> None:
    """Until `stop` is set or `timeout` seconds pass, waking every `tick` seconds: the kernel may deliver a
    signal to any thread (the capture's, asyncio's waitpid threads), and Python runs its handler (Ctrl-C's
    KeyboardInterrupt, SIGTERM's `stop.set()`) only once the main thread wakes; an untimed wait never would."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not stop.is_set():
        left = tick if deadline is None else min(tick, deadline - time.monotonic())
        if left <= 0:
            return
        stop.wait(left)
