"""`zmtplab pipeline`: dissect whole collections of captures with Spark into Parquet and a report."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().rstrip("b")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


REPORT_LANGS = {"en": ("en",), "zh-CN": ("zh-CN",), "both": ("en", "zh-CN")}
"""`--lang`: the report's languages, the first in report.html, the others in report.<lang>.html."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="capture files or directories (searched recursively)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output directory: Parquet datasets events/, connections/, errors/, report.html")
    p.add_argument("--master", default=None, metavar="URL",
                   help="Spark master (default: local[*], or what spark-submit was given)")
    p.add_argument("--split-size", type=_size, default=None, metavar="BYTES",
                   help="cut captures into byte ranges of about this size (default 64M)")
    p.add_argument("--partitions", type=int, default=None, metavar="N",
                   help="shuffle partitions for the connection stages (default: 3 per core)")
    p.add_argument("--no-fields", action="store_true", help="leave the fields column empty (smaller tables)")
    p.add_argument("--max-body", type=int, default=None, metavar="N", help="cut bodies to N octets")
    p.add_argument("--no-report", action="store_true", help="skip the HTML report")
    p.add_argument("--lang", choices=REPORT_LANGS, default="en",
                   help="the report's language: en, zh-CN, or both (report.html in English and report.zh-CN.html)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the run summary as JSON")


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `pipeline` subcommand."""
    p = sub.add_parser("pipeline", help="dissect collections of captures with Spark into Parquet tables",
                       description="Read every capture under INPUT... with Spark (local[*] by default, or a "
                                   "cluster with --master / spark-submit), dissect each TCP connection with the "
                                   "same engine as `zmtplab dissect`, and write Parquet datasets events/, "
                                   "connections/ and errors/ plus report.html under --out. Damaged or foreign "
                                   "files are listed in errors/ and the run goes on.")
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Runs the job; returns the exit status."""
    from ..pipeline import spark_problem

    problem = spark_problem()  # (pyspark is an extra: say how to get it rather than fail importing it)
    if problem is not None:
        print(f"zmtplab pipeline: {problem}", file=sys.stderr)
        return 1
    from ..pipeline.failure import explain
    from ..pipeline.job import run_pipeline
    from ..pipeline.plan import DEFAULT_SPLIT_SIZE
    from ..pipeline.progress import ProgressBar

    progress = None if args.quiet else ProgressBar(sys.stderr)
    try:
        summary = run_pipeline(args.inputs, args.out, master=args.master, progress=progress,
                               split_size=args.split_size or DEFAULT_SPLIT_SIZE, partitions=args.partitions,
                               with_fields=not args.no_fields, max_body=args.max_body, report=not args.no_report,
                               stop_session=True, report_langs=REPORT_LANGS[args.lang])
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a Spark or I/O failure: its real cause, not Spark's wrapper or a Java stack trace
        failure = explain(exc, out=args.out)
        where = "a Spark worker failed: " if failure.on_worker else ""
        print(f"zmtplab pipeline: {where}{failure.cause}", file=sys.stderr)
        if failure.hint:
            print(f"zmtplab pipeline: hint: {failure.hint}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        t = summary["timings"]
        print(f"{summary['captures']} captures ({summary['bytes']:,} bytes), {summary['connections']} TCP "
              f"connections ({summary['zmtp_connections']} ZMTP), {summary['events']:,} events, "
              f"{len(summary['errors'])} errors in {t['total']:.1f}s (Spark start {t['session']:.1f}s)")
        for err in summary["errors"]:
            print(f"  error: {err['capture']}: {err['message']}")
        print(f"tables: {summary['out']}/{{events,connections,errors}}"
              + (f"; report: {summary['report']}" if summary.get("report") else ""))
    if summary["captures"] == 0:
        print("zmtplab pipeline: no readable captures among the inputs", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for spark-submit (see pipeline/submit.py)."""
    parser = argparse.ArgumentParser(prog="zmtplab-pipeline")
    add_arguments(parser)
    return run(parser.parse_args(argv))
