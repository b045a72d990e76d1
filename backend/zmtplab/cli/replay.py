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
from ..i18n import DEFAULT, localize_replay, text, translate
from ..replay import OPTIONS, ReplayError, ReplayModel, apply_changes, parse_change, replay
from .output import add_lang_option, read_curve_keylog


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
    keys = read_curve_keylog(args.curve_keylog, "replay")
    if keys is False:
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
        lang = args.lang or DEFAULT
        write_text(localize_replay(result, lang), sys.stdout, lang)
    sys.stdout.flush()
    return 0


def _message(m: Any) -> str:
    return m if isinstance(m, str) else "[" + ", ".join(m) + "]"


def write_text(result: dict[str, Any], out: Any, lang: str = DEFAULT) -> None:
    """The replay for a reader, its headings and words in `lang` (its notes, reasons and findings are the
    caller's to localize): its sockets, the fidelity check, the diff, what each socket read, the findings."""

    def say(msg_id: str, **params: Any) -> str:
        return text(msg_id, lang, **params)

    out.write(say("cli.replay.sockets", count=len(result["nodes"])) + "\n")
    for n in result["nodes"]:
        extra = "".join(f"  {k} {n[k]}" for k in ("identity", "subscribe", "heartbeat_ivl", "heartbeat_ttl")
                        if k in n)
        out.write(f"  {n['name']:<10} {n['type']:<7} {', '.join(n['endpoints'])}  ZMTP {n['version']} {n['mechanism']}"
                  f"{'  ' + say('cli.replay.a_proxy') if n.get('proxy') else ''}{extra}\n")
    out.write("\n" + say("cli.replay.links", count=len(result["links"]), sends=result["sends"]) + "\n")
    for lk in result["links"]:
        out.write("  " + say("cli.replay.link", connect=lk["connect"], bind=lk["bind"], at=f"{lk['at']:.3f}",
                             conns=", ".join(lk["conns"])) + "\n")
    for p in result["proxies"]:
        out.write("  " + say("cli.replay.proxy", frontend=p["frontend"], backend=p["backend"]) + "\n")
    for n in result["notes"]:
        out.write("  " + say("cli.replay.note", text=n["text"]) + "\n")
    fid = result["fidelity"]
    out.write("\n" + say("cli.replay.fidelity", same=fid["same_directions"], total=fid["directions"]) + "\n")
    for row in fid["connections"]:
        out.write("  " + say("cli.replay.row", sender=row["from"], receiver=row["to"], conns=", ".join(row["conns"]),
                             dir=row["dir"], captured=row["captured"], replayed=row["replayed"],
                             mark=say("cli.replay.same" if row["same"] else "cli.replay.different")) + "\n")
        if not row["same"]:
            out.write("      " + say("cli.replay.first_difference", n=row["first_difference"] + 1,
                                     captured=_message(row.get("captured_message", "-")),
                                     replayed=_message(row.get("replayed_message", "-"))) + "\n")
            for why in row["why"]:
                out.write(f"      {why}\n")
    speeds = fid.get("read_speed") or {}
    slow = [say("cli.replay.reads_every", socket=name, every=f"{every:g}") for name, every in speeds.items() if every]
    if slow:  # (a capture whose readers all kept up says nothing of their speed)
        if len(slow) < len(speeds):
            slow.append(say("cli.replay.others_fast"))
        out.write("  " + say("cli.replay.read_speed", speeds="; ".join(slow)) + "\n")
    rules = fid["findings"]
    none = say("cli.replay.none")
    out.write("  " + say("cli.replay.findings_compared", captured=", ".join(rules["captured"]) or none,
                         replayed=", ".join(rules["replayed"]) or none) + "\n")
    if "diff" in result:
        diff = result["diff"]
        out.write("\n" + say("cli.replay.with", changes=", ".join(diff["changes"])) + "\n")
        for line in diff["summary"]:
            out.write(f"  {line}\n")
    for e in result.get("errors", []):
        reason = translate(e["reason"], lang)
        out.write("  " + say("cli.replay.error", socket=e["socket"], action=e["action"], reason=reason) + "\n")
    out.write("\n" + say("cli.replay.delivered") + "\n")
    for name, msgs in result["delivered"].items():
        shown = ", ".join(_clip(_message(m)) for m in msgs[:8]) + (" ..." if len(msgs) > 8 else "")
        out.write(f"  {name}: {len(msgs)}  {shown}\n")
    findings = result["findings"]
    out.write("\n" + say("cli.replay.findings", count=len(findings)) + "\n")
    if not findings:
        out.write(f"  {none}\n")
    for f in findings:
        out.write(f"  {f['severity'].upper():5} {f['rule']}: {f['text']}\n")


SHOWN = 60  # characters of a delivered message the text shows (--json has them whole)


def _clip(shown: str) -> str:
    return shown if len(shown) <= SHOWN else shown[:SHOWN] + "..."
