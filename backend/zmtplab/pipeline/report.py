"""The run's report: one self-contained HTML page with inline SVG plots (no plotting library).

Plots: ZMTP versions and mechanisms, socket-type pairs, message-size distribution, messages
over time and expert events by kind; tables: the run's numbers, captures, errors. Every text
that comes from a capture is escaped: payload bytes are data, never markup.
"""

from __future__ import annotations

import datetime as dt
import html
import os
from collections.abc import Sequence
from typing import Any

from . import transform as T

_W = 640
_COLORS = ["#3b6ea8", "#d9822b", "#3a9a5b", "#b8434c", "#7d5ba6", "#8c6d31", "#4b9fb5", "#c25ba0"]


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def hbar_chart(title: str, items: Sequence[tuple[str, float]], *, unit: str = "") -> str:
    """Horizontal bars, one per (label, value)."""
    if not items:
        return f"<figure><figcaption>{_esc(title)}</figcaption><p class='none'>none</p></figure>"
    items = list(items)[:25]
    row, label_w = 22, 220
    height = row * len(items) + 10
    top = max(v for _l, v in items) or 1
    parts = [f"<svg viewBox='0 0 {_W} {height}' width='{_W}' height='{height}' role='img'>"]
    for i, (label, value) in enumerate(items):
        y = 5 + i * row
        w = (_W - label_w - 70) * (value / top)
        parts.append(f"<text x='{label_w - 6}' y='{y + 15}' text-anchor='end'>{_esc(label)}</text>")
        parts.append(f"<rect x='{label_w}' y='{y + 3}' width='{w:.1f}' height='{row - 6}' "
                     f"fill='{_COLORS[i % len(_COLORS)]}'><title>{_esc(label)}: {value:g}</title></rect>")
        parts.append(f"<text x='{label_w + w + 4:.1f}' y='{y + 15}'>{value:,.0f}{_esc(unit)}</text>")
    parts.append("</svg>")
    return f"<figure><figcaption>{_esc(title)}</figcaption>{''.join(parts)}</figure>"


def column_chart(title: str, items: Sequence[tuple[str, float]], *, xlabel: str = "", line: bool = False) -> str:
    """Vertical columns (or a line) over ordered categories."""
    if not items:
        return f"<figure><figcaption>{_esc(title)}</figcaption><p class='none'>none</p></figure>"
    items = list(items)
    height, left, bottom, top_pad = 240, 60, 50, 10
    plot_w, plot_h = _W - left - 10, height - bottom - top_pad
    top = max(v for _l, v in items) or 1
    n = len(items)
    step = plot_w / n
    parts = [f"<svg viewBox='0 0 {_W} {height}' width='{_W}' height='{height}' role='img'>"]
    for frac in (0, 0.5, 1):
        y = top_pad + plot_h * (1 - frac)
        parts.append(f"<line x1='{left}' x2='{_W - 10}' y1='{y:.1f}' y2='{y:.1f}' stroke='#ddd'/>")
        parts.append(f"<text x='{left - 4}' y='{y + 4:.1f}' text-anchor='end'>{top * frac:,.0f}</text>")
    points = []
    label_every = max(1, n // 12)
    for i, (label, value) in enumerate(items):
        x = left + i * step
        h = plot_h * value / top
        if line:
            points.append(f"{x + step / 2:.1f},{top_pad + plot_h - h:.1f}")
        else:
            parts.append(f"<rect x='{x + 1:.1f}' y='{top_pad + plot_h - h:.1f}' width='{max(step - 2, 1):.1f}' "
                         f"height='{h:.1f}' fill='{_COLORS[0]}'><title>{_esc(label)}: {value:,.0f}</title></rect>")
        if i % label_every == 0:
            parts.append(f"<text x='{x + step / 2:.1f}' y='{top_pad + plot_h + 14}' text-anchor='middle' "
                         f"class='tick'>{_esc(label)}</text>")
    if line and points:
        parts.append(f"<polyline points='{' '.join(points)}' fill='none' stroke='{_COLORS[0]}' stroke-width='2'/>")
    parts.append(f"<text x='{left + plot_w / 2:.1f}' y='{height - 8}' text-anchor='middle'>{_esc(xlabel)}</text>")
    parts.append("</svg>")
    return f"<figure><figcaption>{_esc(title)}</figcaption>{''.join(parts)}</figure>"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    if not rows:
        return "<p class='none'>none</p>"
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_esc(_fmt(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _fmt(v: Any) -> Any:
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return v


def _size_label(bucket: int) -> str:
    if bucket == 0:
        return "0"
    lo = 1 << (bucket - 1)
    hi = (1 << bucket) - 1

    def h(n: int) -> str:
        for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
            if n >= div:
                return f"{n / div:g}{unit}"
        return str(n)

    return h(lo) if lo == hi else f"{h(lo)}-{h(hi)}"


def _timeline(per_second: list[tuple[int, int]], bins: int = 60) -> tuple[list[tuple[str, int]], float]:
    """Message counts per second folded into at most `bins` equal bins: (labelled counts, bin width)."""
    if not per_second:
        return [], 1.0
    lo = min(s for s, _n in per_second)
    hi = max(s for s, _n in per_second) + 1
    width = max(1.0, (hi - lo) / bins)
    n = max(1, min(bins, int((hi - lo) / width + 0.999)))
    counts = [0] * n
    for second, count in per_second:
        counts[min(n - 1, int((second - lo) / width))] += count
    labels = [dt.datetime.fromtimestamp(lo + i * width, dt.UTC).strftime("%m-%d %H:%M:%S") for i in range(n)]
    return list(zip(labels, counts, strict=True)), width


def _findings_section(findings) -> list[str]:
    if findings is None:
        return []
    rows = findings.orderBy("severity", "rule", "capture").limit(200).collect()
    by_rule = findings.groupBy("severity", "rule").count().orderBy("severity", "rule").collect()
    return [
        "<h2>Findings</h2>",
        hbar_chart("Findings by severity and rule (zmtplab analyze)",
                   [(f"{r['severity']}: {r['rule']}", r["count"]) for r in by_rule]),
        table(["severity", "rule", "capture", "connections", "what"],
              [(r["severity"], r["rule"], r["capture"], ", ".join(r["conns"]), r["text"]) for r in rows]),
    ]


def write_report(events, connections, summary: dict[str, Any], out_dir: str, *, findings=None) -> str:
    """Computes the report's aggregates with Spark and writes `out_dir/report.html`; returns its path.
    `findings` is the `findings` table (`zmtplab analyze`'s diagnosis of each capture), if there is one."""
    vm = [(f"{r['version']} {r['mechanism']}", r["count"]) for r in T.versions_mechanisms(connections).collect()]
    pairs = [(f"{r['client']} \u2192 {r['server']}", r["count"]) for r in T.socket_pairs(connections).collect()]
    hist = T.message_histogram(events).collect()
    by_size: dict[int, int] = {}
    for r in hist:
        by_size[r["bucket"]] = by_size.get(r["bucket"], 0) + r["count"]
    sizes = [(_size_label(b), n) for b, n in sorted(by_size.items())]
    timeline, width = _timeline([(r["second"], r["count"]) for r in hist])
    experts = T.expert_kinds(events).collect()
    per_capture = T.capture_summary(connections).limit(50).collect()
    numbers = [
        ("inputs", summary["inputs"]), ("captures read", summary["captures"]),
        ("bytes", summary["bytes"]), ("frames", summary["frames"]),
        ("TCP connections", summary["connections"]), ("ZMTP connections", summary["zmtp_connections"]),
        ("events", summary["events"]), ("errors", len(summary["errors"])),
    ]
    kinds = sorted(summary["events_by_kind"].items(), key=lambda kv: -kv[1])
    sections = [
        "<h2>Run</h2>", table(["", "value"], numbers),
        hbar_chart("Events by kind", kinds),
        "<h2>Connections</h2>",
        hbar_chart("ZMTP versions and mechanisms (connections)", vm),
        hbar_chart("Socket-type pairs, client \u2192 server (connections)", pairs),
        "<h2>Messages</h2>",
        column_chart("Message-size distribution (body octets, log2 buckets)", sizes, xlabel="octets"),
        column_chart(f"Messages over time (bins of {width:.3g} s, UTC)", timeline, xlabel="time", line=True),
        "<h2>Expert events</h2>",
        hbar_chart("Expert events by severity and rule",
                   [(f"{r['severity']}: {r['rule']}", r["count"]) for r in experts]),
        table(["severity", "rule", "count", "example"],
              [(r["severity"], r["rule"], r["count"], r["example"]) for r in experts[:50]]),
        *_findings_section(findings),
        "<h2>Captures</h2>",
        table(["capture", "connections", "ZMTP", "events", "messages", "experts"],
              [(r["capture"], r["connections"], r["zmtp"], r["events"], r["messages"], r["experts"])
               for r in per_capture]),
        "<h2>Errors</h2>",
        table(["capture", "kind", "message"], [(e["capture"], e["kind"], e["message"]) for e in summary["errors"]]),
        "<h2>Tables</h2>",
        table(["table", "path"], sorted(summary["tables"].items())),
    ]
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ZMTP Lab pipeline report</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 980px; color: #222; }}
h1 {{ font-size: 1.5em; }} h2 {{ border-bottom: 1px solid #ccc; margin-top: 2em; }}
figure {{ margin: 1em 0; }} figcaption {{ font-weight: 600; margin-bottom: .3em; }}
svg text {{ font: 12px system-ui, sans-serif; fill: #333; }} svg text.tick {{ font-size: 10px; }}
table {{ border-collapse: collapse; margin: .5em 0; }}
td, th {{ border: 1px solid #ddd; padding: 2px 8px; text-align: left; vertical-align: top; }}
.none {{ color: #888; font-style: italic; }}
</style></head><body>
<h1>ZMTP Lab pipeline report</h1>
<p>{summary['captures']} captures, {summary['bytes']:,} bytes, {summary['events']:,} events.</p>
{''.join(sections)}
</body></html>
"""
    path = os.path.join(out_dir, "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path
