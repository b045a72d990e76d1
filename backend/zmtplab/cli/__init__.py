"""The `zmtplab` command: one subcommand per module in this package.

Each subcommand module offers `register(subparsers)`, which adds its parser and sets
`func` (a callable taking the parsed arguments and returning the exit status).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib import metadata

# Subcommand name -> module in this package. Only the module of the command being run is
# imported, so `zmtplab dissect` does not pay for asyncio, FastAPI or PySpark.
SUBCOMMANDS = {
    "decode": "decode",
    "dissect": "dissect",
    "analyze": "analyze",
    "replay": "replay",
    "session": "session",
    "illustrate": "illustrate",
    "lessons": "lessons",
    "tap": "tap",
    "live": "live",
    "serve": "serve",
    "peer": "peer",
    "pipeline": "pipeline",
}


# Options whose value may begin with `-` (a Z85 key does, one in 85): `--curve-secret -abc...` reaches argparse as
# `--curve-secret=-abc...`, which it reads as the value rather than as an unknown option.
DASH_VALUES = frozenset({"--curve-secret", "--curve-serverkey", "--curve-publickey", "--curve-secretkey"})


def join_dash_values(argv: list[str]) -> list[str]:
    """`argv` with each `DASH_VALUES` option and a value beginning with `-` joined as `--option=value`."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in DASH_VALUES and i + 1 < len(argv) and argv[i + 1].startswith("-") and argv[i + 1] != "--":
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def installed_version() -> str:
    """The version of the installed distribution (its metadata: a wheel's or an editable install's)."""
    try:
        return metadata.version("zmtplab")
    except metadata.PackageNotFoundError:  # (imported from a source tree that was never installed)
        return "unknown (not installed)"


def build_parser(only: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand (or just those in `only`) registered."""
    parser = argparse.ArgumentParser(prog="zmtplab", description="ZMTP Lab: every byte of ZMTP, explained.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in only or SUBCOMMANDS:
        importlib.import_module(f".{SUBCOMMANDS[name]}", __name__).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    argv = join_dash_values(list(sys.argv[1:] if argv is None else argv))
    command = argv[0] if argv else None
    args = build_parser([command] if command in SUBCOMMANDS else None).parse_args(argv)
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
