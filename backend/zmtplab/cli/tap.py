"""`zmtplab tap LISTEN TARGET`: a forwarding proxy that dissects the ZMTP passing through it."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from ..capture.tap import TapProxy, parse_endpoint
from .output import write_jsonl, write_line


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `tap` subcommand."""
    p = sub.add_parser("tap", help="forward TCP to an endpoint and dissect both directions live",
                       description="Listen on LISTEN, forward every connection to TARGET, and print the ZMTP "
                                   "events of both directions as they pass. Needs no capture privileges.")
    p.add_argument("listen", help="where to listen, e.g. 127.0.0.1:6000")
    p.add_argument("target", help="the real endpoint, e.g. 127.0.0.1:5555")
    p.add_argument("--jsonl", action="store_true", help="print JSON lines (the event contract)")
    p.add_argument("--no-fields", action="store_true", help="leave out the fields of each event")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="stop after S seconds")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Runs the proxy until interrupted (or until --timeout)."""
    try:
        listen = parse_endpoint(args.listen)
        target = parse_endpoint(args.target)
    except ValueError as exc:
        print(f"zmtplab tap: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="zmtplab tap: %(message)s", stream=sys.stderr)
    write = write_jsonl if args.jsonl else write_line

    def sink(event: dict) -> None:
        write(sys.stdout, event)
        sys.stdout.flush()

    async def main() -> None:
        proxy = TapProxy(listen, target, sink, with_fields=not args.no_fields)
        try:
            await proxy.start()
        except OSError as exc:
            raise SystemExit(f"zmtplab tap: cannot listen on {args.listen}: {exc.strerror or exc}") from exc
        print(f"zmtplab tap: listening on {listen[0]}:{proxy.port}, forwarding to {target[0]}:{target[1]}",
              file=sys.stderr)
        try:
            if args.timeout is not None:
                await asyncio.sleep(args.timeout)
            else:
                await proxy.serve_forever()
        finally:
            await proxy.close()

    asyncio.run(main())
    return 0
