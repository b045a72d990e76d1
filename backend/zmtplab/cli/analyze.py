"""`zmtplab analyze`: a capture as a whole: its topology, message flows across connections, and a diagnosis."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import orjson

from ..analysis import analyze_capture
from ..capture.dissect import DissectResult
from ..capture.errors import CaptureFormatError
from ..engine.curve import key_from_text
from ..engine.fields import text_or_hex
from ..i18n import DEFAULT, localize_analysis, text
from .output import add_lang_option


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `analyze` subcommand."""
    p = sub.add_parser("analyze", help="a capture as a whole: nodes, connections, flows through brokers, findings",
                       description="Analyse a pcap/pcapng capture across its connections: who talks to whom, the "
                                   "path of each message through a broker or proxy, and what is wrong (each finding "
                                   "with a rule id, the connections and events it is about, and the spec behind it).")
    p.add_argument("capture", metavar="CAPTURE", help="a pcap or pcapng file")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: nodes, connections, flows, findings (and curve)")
    add_lang_option(p)
    p.add_argument("--script", type=int, default=0, metavar="N",
                   help="also print who sent which message when: the capture's first N application messages (--json's "
                        "`script`: connection, direction, time, endpoints, frames cut to 256 octets)")
    p.add_argument("--curve-secret-file", action="append", default=[], metavar="FILE",
                   help="a file of CURVE server secret keys (Z85 or hex), one a line ('#' starts a comment line): the "
                        "safe way to give one, out of the shell's history and the process list (repeatable)")
    p.add_argument("--curve-secret", action="append", default=[], metavar="KEY",
                   help="a CURVE server's long-term secret key (Z85, 40 characters, or 64 hex digits) to check each "
                        f"HELLO against (repeatable; it may begin with '-'); used for this run only, never stored or "
                        f"printed. A key on the command line shows in shell history and in ps: prefer "
                        f"--curve-secret-file or the {SECRET_ENV} variable (keys separated by spaces or commas)")
    p.set_defaults(func=run)


SECRET_ENV = "ZMTPLAB_CURVE_SECRET"


def curve_secrets(args: argparse.Namespace, environ: dict[str, str]) -> list[bytes]:
    """The server secret keys given on the command line, in files and in `SECRET_ENV`; ValueError naming where a
    bad one came from (never the key itself)."""
    found: list[tuple[str, str]] = [("--curve-secret", k) for k in args.curve_secret]
    for name in args.curve_secret_file:
        try:
            with open(name, encoding="ascii", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError as exc:
            raise ValueError(f"--curve-secret-file: {exc.strerror or exc}: {name}") from exc
        for n, line in enumerate(lines, 1):
            text = line.strip()
            # A comment starts with '#', but so may a Z85 key (it is one of Z85's characters): a key is 40 or 64.
            if text and not (text.startswith("#") and len(text) not in (40, 64)):
                found.append((f"--curve-secret-file {name}, line {n}", text))
    found += [(SECRET_ENV, k) for k in environ.get(SECRET_ENV, "").replace(",", " ").split()]
    keys = []
    for where, text in found:
        try:
            keys.append(key_from_text(text))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
    return keys


def run(args: argparse.Namespace) -> int:
    """Analyses and prints."""
    try:
        secrets = curve_secrets(args, dict(os.environ))
    except ValueError as exc:
        print(f"zmtplab analyze: {exc}", file=sys.stderr)
        return 2
    result = DissectResult()
    try:
        with open(args.capture, "rb") as handle:
            analysis = analyze_capture(handle, curve_secrets=secrets, result=result, script=max(0, args.script))
    except CaptureFormatError as exc:
        print(f"zmtplab analyze: {args.capture}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"zmtplab analyze: {exc.strerror or exc}: {args.capture}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(analysis, option=orjson.OPT_APPEND_NEWLINE))
    else:
        write_text(analysis if args.lang is None else localize_analysis(analysis, args.lang), sys.stdout,
                   args.lang or DEFAULT)
    sys.stdout.flush()
    if result.error:
        print(f"zmtplab analyze: warning: {args.capture}: {result.error}", file=sys.stderr)
    return 0


def write_text(analysis: dict[str, Any], out: Any, lang: str = DEFAULT) -> None:
    """The analysis for a reader, its headings and words in `lang` (the findings are the caller's to localize):
    nodes, connections, flows, findings."""

    def say(msg_id: str, **params: Any) -> str:
        return text(msg_id, lang, **params)

    out.write(say("cli.analyze.nodes", count=len(analysis["nodes"])) + "\n")
    for node in analysis["nodes"]:
        sockets = ", ".join(f"{ep} {'/'.join(types) or '?'}" for ep, types in node["sockets"].items())
        mark = "  " + say("cli.analyze.broker") if node["broker"] else ""
        out.write(f"  {sockets}{mark}\n")
    out.write("\n" + say("cli.analyze.connections", count=len(analysis["connections"]),
                          tcp=analysis["tcp_connections"]) + "\n")
    for c in analysis["connections"]:
        if not c["zmtp"]:
            out.write(f"  {c['conn']:>3} {c['client']} -> {c['server']}  {say('cli.analyze.not_zmtp')}\n")
            continue
        pair = f"{c['client_type'] or '?'} -> {c['server_type'] or '?'}"
        if c["valid_pair"] is False:
            pair += " " + say("cli.analyze.invalid_pair")
        version = "/".join(sorted(set(c["versions"].values()))) or "?"
        idents = "".join("  " + say("cli.analyze.identity", who=say(f"analysis.role.{who}"),
                                    identity=repr(c["identities"][d]))
                         for d, who in (("c2s", "client"), ("s2c", "server")) if c["identities"].get(d))
        m = c["messages"]
        counted = say("cli.analyze.encrypted" if any(c["encrypted"].values()) else "cli.analyze.messages",
                      c2s=m["c2s"], s2c=m["s2c"])
        close = c["close"]
        closed = ("  " + say("cli.analyze.closed", who=say(f"analysis.role.{close['by']}"), how=close["how"].upper())
                  if close["by"] else "")
        out.write(f"  {c['conn']:>3} {c['client']} -> {c['server']}  {pair}  ZMTP {version} {c['mechanism'] or ''}"
                  f"{idents}  {counted}{closed}\n")
    for g in analysis.get("refused", []):
        clients = ", ".join(g["clients"][:3]) + (" ..." if len(g["clients"]) > 3 else "")
        out.write("      " + say("cli.analyze.refused", count=g["count"], server=g["server"],
                                 span=f"{g['last_ts'] - g['first_ts']:.2f}", clients=clients) + "\n")
    flows = analysis["flows"]
    out.write("\n" + say("cli.analyze.flows", count=analysis["flows_total"]) + "\n")
    for flow in flows[:20]:
        path = " -> ".join(f"#{h['conn']} {h['from']}>{h['to']}" for h in flow["hops"])
        steps = "; ".join(f"{s['envelope']} {s['frames']} in {s['latency'] * 1e3:.2f} ms" for s in flow["steps"])
        out.write(f"  {flow['message']!r}: {path}  ({steps})"
                  f"{'  ' + say('cli.analyze.ambiguous', why=flow.get('why', '')) if flow['ambiguous'] else ''}\n")
    if len(flows) > 20:
        out.write("  " + say("cli.analyze.more_flows", count=analysis["flows_total"] - 20) + "\n")
    for conn, found in analysis["curve"].items():
        out.write(f"\nCURVE check, connection {conn}: HELLO {found['hello']}"
                  + (f", WELCOME {found['welcome']}" if "welcome" in found else "")
                  + (f", server short-term key {found['server_short_key']}" if "server_short_key" in found else "")
                  + "\n")
    if "script" in analysis:
        out.write("\n" + say("cli.analyze.script", count=len(analysis["script"])) + "\n")
        start = analysis["script"][0]["ts"] if analysis["script"] else 0.0
        for m in analysis["script"]:
            frames = ", ".join(text_or_hex(bytes.fromhex(f)) for f in m["frames"])
            out.write(f"  {m['ts'] - start:9.6f} #{m['conn']} {m.get('from', '?')} > {m.get('to', '?')}  [{frames}]"
                      f"{' ...' if m.get('truncated') else ''}\n")
    findings = analysis["findings"]
    out.write("\n" + say("cli.analyze.findings", count=len(findings)) + "\n")
    if not findings:
        out.write(f"  {say('cli.analyze.none')}\n")
    for f in findings:
        out.write(f"  {f['severity'].upper():5} {f['rule']} [conn {', '.join(f['conns'])}]: {f['text']}\n")
        if f["ref"]:
            out.write(f"        ({f['ref']})\n")
