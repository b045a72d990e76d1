"""`zmtplab replay`: a capture replayed as a topology on the simulator, checked against the capture, and re-run
with one thing changed (`zmtplab.replay`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import orjson

from ..capture.errors import CaptureFormatError
from ..i18n import localize_replay
from ..replay import OPTIONS, ReplayError, ReplayModel, apply_changes, parse_change, replay
from .output import add_lang_option


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `replay` subcommand."""
    p = sub.add_parser("replay", help="replay a capture as a topology on the simulator, then with one thing changed",
                       description="Build a topology from the capture's analysis (its sockets, connections and "
                                   "each application's sends at their captured times), replay it on the simulator, "
                                   "check it against the capture (per connection and direction the same messages in "
                                   "the same order) and, with --set, show what the changes make different: who "
                                   "receives which messages, which findings appear or go.")
    p.add_argument("capture", metavar="CAPTURE", help="a pcap or pcapng file")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: nodes, links, proxies, notes, fidelity, delivered, findings (and "
                        "diff with --set)")
    p.add_argument("--set", action="append", default=[], metavar="NODE.OPTION=VALUE", dest="changes",
                   help="change one thing (repeatable); NODE is a socket of the replay (see its list), OPTION one "
                        "of: " + "; ".join(f"{k} ({v})" for k, v in OPTIONS.items()))
    p.add_argument("--topology", metavar="FILE", type=Path,
                   help="also write the replay (with the --set changes) as a topology file, the playground's Save/Load "
                        "format (a topology has no heartbeats, later subscriptions or closes: the notes say which)")
    p.add_argument("--curve-keylog", type=Path, metavar="FILE",
                   help="a CURVE key log (CURVE_SESSION_KEY lines, as `zmtplab dissect --curve-keylog` takes): the "
                        "connections it has keys of are replayed with their real socket types and messages (without "
                        "it a CURVE connection is replayed as NULL with stand-ins, the notes say which)")
    add_lang_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Replays and prints."""
    keys = None
    if args.curve_keylog is not None:
        from ..engine.curve import parse_keylog  # (only a replay with a key log loads the cryptography)

        try:
            keys = parse_keylog(args.curve_keylog.read_text(encoding="ascii", errors="replace"))
        except (OSError, ValueError) as exc:
            print(f"zmtplab replay: --curve-keylog: {exc}", file=sys.stderr)
            return 2
    try:
        changes = [parse_change(text) for text in args.changes]
        with open(args.capture, "rb") as handle:
            model = ReplayModel.from_capture(handle, curve_keys=keys)
        result = replay(model, changes)
    except ReplayError as exc:
        print(f"zmtplab replay: {exc}", file=sys.stderr)
        return 2
    except CaptureFormatError as exc:
        print(f"zmtplab replay: {args.capture}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"zmtplab replay: {exc.strerror or exc}: {args.capture}", file=sys.stderr)
        return 2
    if args.topology is not None:
        topology = (apply_changes(model, changes) if changes else model).topology().to_dict()
        try:
            args.topology.write_text(json.dumps(topology, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"zmtplab replay: --topology: {exc.strerror or exc}: {args.topology}", file=sys.stderr)
            return 2
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(result, option=orjson.OPT_APPEND_NEWLINE))
    else:
        write_text(result if args.lang is None else localize_replay(result, args.lang), sys.stdout)
    sys.stdout.flush()
    return 0


def _message(m: Any) -> str:
    return m if isinstance(m, str) else "[" + ", ".join(m) + "]"


def write_text(result: dict[str, Any], out: Any) -> None:
    """The replay for a reader: its sockets, the fidelity check, the diff, what each socket read, the findings."""
    out.write(f"Sockets ({len(result['nodes'])})\n")
    for n in result["nodes"]:
        extra = "".join(f"  {k} {n[k]}" for k in ("identity", "subscribe", "heartbeat_ivl", "heartbeat_ttl")
                        if k in n)
        out.write(f"  {n['name']:<10} {n['type']:<7} {', '.join(n['endpoints'])}  ZMTP {n['version']} {n['mechanism']}"
                  f"{'  (a proxy)' if n.get('proxy') else ''}{extra}\n")
    out.write(f"\nLinks ({len(result['links'])}); {result['sends']} application sends\n")
    for lk in result["links"]:
        out.write(f"  {lk['connect']} -> {lk['bind']} at {lk['at']:.3f} s (connection {', '.join(lk['conns'])})\n")
    for p in result["proxies"]:
        out.write(f"  proxy {p['frontend']} <-> {p['backend']}\n")
    for n in result["notes"]:
        out.write(f"  note: {n['text']}\n")
    fid = result["fidelity"]
    out.write(f"\nFidelity: {fid['same_directions']} of {fid['directions']} directions replay as captured\n")
    for row in fid["connections"]:
        mark = "same" if row["same"] else "DIFFERENT"
        out.write(f"  {row['from']} -> {row['to']} ({', '.join(row['conns'])} {row['dir']}): {row['captured']} "
                  f"captured, {row['replayed']} replayed  {mark}\n")
        if not row["same"]:
            out.write(f"      from message {row['first_difference'] + 1}: captured "
                      f"{_message(row.get('captured_message', '-'))}, replayed "
                      f"{_message(row.get('replayed_message', '-'))}\n")
            for why in row["why"]:
                out.write(f"      {why}\n")
    speeds = fid.get("read_speed") or {}
    slow = [f"{name} one message every {every:g} s" for name, every in speeds.items() if every]
    if slow:  # (a capture whose readers all kept up says nothing of their speed)
        others = "; the others as fast as they can" if len(slow) < len(speeds) else ""
        out.write(f"  read speed: {'; '.join(slow)}{others}\n")
    rules = fid["findings"]
    out.write(f"  findings: captured {', '.join(rules['captured']) or 'none'}; replayed "
              f"{', '.join(rules['replayed']) or 'none'}\n")
    if "diff" in result:
        diff = result["diff"]
        out.write(f"\nWith {', '.join(diff['changes'])}\n")
        for line in diff["summary"]:
            out.write(f"  {line}\n")
    for e in result.get("errors", []):
        out.write(f"  error: {e['socket']} {e['action']}: {e['reason']}\n")
    out.write("\nDelivered\n")
    for name, msgs in result["delivered"].items():
        shown = ", ".join(_message(m) for m in msgs[:8]) + (" ..." if len(msgs) > 8 else "")
        out.write(f"  {name}: {len(msgs)}  {shown}\n")
    findings = result["findings"]
    out.write(f"\nFindings ({len(findings)})\n")
    if not findings:
        out.write("  none\n")
    for f in findings:
        out.write(f"  {f['severity'].upper():5} {f['rule']}: {f['text']}\n")
