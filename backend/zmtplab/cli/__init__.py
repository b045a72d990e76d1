"""The `zmtplab` command: one subcommand per module in this package.

Each subcommand module offers `register(subparsers)`, which adds its parser and sets
`func` (a callable taking the parsed arguments and returning the exit status).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import decode, dissect, live, peer, pipeline, serve, tap

SUBCOMMANDS = [decode, dissect, tap, live, serve, peer, pipeline]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(prog="zmtplab", description="ZMTP Lab: every byte of ZMTP, explained.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # `zmtplab dissect big.pcap | head` closes the pipe early; that is not an error.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
