"""The run's report: one self-contained HTML page with inline SVG plots (no plotting library).

Plots: ZMTP versions and mechanisms, socket-type pairs, message-size distribution, messages
over time and expert events by kind; tables: the run's numbers, captures, errors. Every text
that comes from a capture is escaped: payload bytes are data, never markup. Its words are the
`report.*` ids of the catalogs (`zmtplab.i18n`), so the same aggregates make the page in each
language asked for: `report.html` in the first, `report.<lang>.html` in the others.
"""

from __future__ import annotations

import datetime as dt
import html
import os
from collections.abc import Sequence
from typing import Any

from ..i18n import text, translate
from . import transform as T

_W = 640
_COLORS = ["#3b6ea8", "#d9822b", "#3a9a5b", "#b8434c", "#7d5ba6", "#8c6d31", "#4b9fb5", "#c25ba0"]


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _empty_figure(title: str, lang: str) -> str:
    none = _esc(text("report.none", lang))
    return f"<figure><figcaption>{_esc(title)}</figcaption><p class='none'>{none}</p></figure>"


def hbar_chart(title: str, items: Sequence[tuple[str, float]], *, unit: str = "", lang: str = "en") -> str:
    """Horizontal bars, one per (label, value)."""
    if not items:
        return _empty_figure(title, lang)
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


def column_chart(title: str, items: Sequence[tuple[str, float]], *, xlabel: str = "", line: bool = False,
                 lang: str = "en") -> str:
    """Vertical columns (or a line) over ordered categories."""
    if not items:
        return _empty_figure(title, lang)
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


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], lang: str = "en") -> str:
    if not rows:
        return f"<p class='none'>{_esc(text('report.none', lang))}</p>"
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


def _findings_section(rows, by_rule, lang: str) -> list[str]:
    if rows is None:
        return []
    return [
        f"<h2>{text('report.findings', lang)}</h2>",
        hbar_chart(text("report.findings_chart", lang),
                   [(f"{r['severity']}: {r['rule']}", r["count"]) for r in by_rule], lang=lang),
        table([text(c, lang) for c in ("report.col.severity", "report.col.rule", "report.col.capture",
                                        "report.col.connections", "report.col.what")],
              [(r["severity"], r["rule"], r["capture"], ", ".join(r["conns"]), translate(r["text"], lang))
               for r in rows], lang),
    ]


def write_report(events, connections, summary: dict[str, Any], out_dir: str, *, findings=None,
                 langs: Sequence[str] = ("en",)) -> str:
    """Computes the report's aggregates with Spark and writes `out_dir/report.html` (in `langs[0]`, and
    `report.<lang>.html` for each other language); returns the path of the first.
    `findings` is the `findings` table (`zmtplab analyze`'s diagnosis of each capture), if there is one."""
    agg = {
        "vm": [(f"{r['version']} {r['mechanism']}", r["count"])
               for r in T.versions_mechanisms(connections).collect()],
        "pairs": [(f"{r['client']} \u2192 {r['server']}", r["count"])
                  for r in T.socket_pairs(connections).collect()],
        "hist": T.message_histogram(events).collect(),
        "experts": T.expert_kinds(events).collect(),
        "per_capture": T.capture_summary(connections).limit(50).collect(),
        "findings": None if findings is None else findings.orderBy("severity", "rule", "capture").limit(200).collect(),
        "by_rule": None if findings is None else
        findings.groupBy("severity", "rule").count().orderBy("severity", "rule").collect(),
    }
    first = None
    for lang in langs:
        name = "report.html" if first is None else f"report.{lang}.html"
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(render_report(agg, summary, lang))
        first = first or path
    return first or os.path.join(out_dir, "report.html")


def render_report(agg: dict[str, Any], summary: dict[str, Any], lang: str = "en") -> str:
    """The report's page in `lang` from the aggregates `write_report` computed."""
    def t(msg_id: str, **params: Any) -> str:
        return text(msg_id, lang, **params)

    by_size: dict[int, int] = {}
    for r in agg["hist"]:
        by_size[r["bucket"]] = by_size.get(r["bucket"], 0) + r["count"]
    sizes = [(_size_label(b), n) for b, n in sorted(by_size.items())]
    timeline, width = _timeline([(r["second"], r["count"]) for r in agg["hist"]])
    experts, per_capture = agg["experts"], agg["per_capture"]
    numbers = [
        (t("report.n.inputs"), summary["inputs"]), (t("report.n.captures"), summary["captures"]),
        (t("report.n.bytes"), summary["bytes"]), (t("report.n.frames"), summary["frames"]),
        (t("report.n.tcp"), summary["connections"]), (t("report.n.zmtp"), summary["zmtp_connections"]),
        (t("report.n.events"), summary["events"]), (t("report.n.errors"), len(summary["errors"])),
    ]
    kinds = sorted(summary["events_by_kind"].items(), key=lambda kv: -kv[1])
    sections = [
        f"<h2>{t('report.run')}</h2>", table(["", t("report.col.value")], numbers, lang),
        hbar_chart(t("report.events_by_kind"), kinds, lang=lang),
        f"<h2>{t('report.connections')}</h2>",
        hbar_chart(t("report.versions_chart"), agg["vm"], lang=lang),
        hbar_chart(t("report.pairs_chart"), agg["pairs"], lang=lang),
        f"<h2>{t('report.messages')}</h2>",
        column_chart(t("report.sizes_chart"), sizes, xlabel=t("report.octets"), lang=lang),
        column_chart(t("report.timeline_chart", width=f"{width:.3g}"), timeline, xlabel=t("report.time"), line=True,
                     lang=lang),
        f"<h2>{t('report.experts')}</h2>",
        hbar_chart(t("report.experts_chart"), [(f"{r['severity']}: {r['rule']}", r["count"]) for r in experts],
                   lang=lang),
        table([t("report.col.severity"), t("report.col.rule"), t("report.col.count"), t("report.col.example")],
              [(r["severity"], r["rule"], r["count"], translate(r["example"], lang)) for r in experts[:50]], lang),
        *_findings_section(agg["findings"], agg["by_rule"], lang),
        f"<h2>{t('report.captures')}</h2>",
        table([t("report.col.capture"), t("report.col.connections"), "ZMTP", t("report.col.events"),
               t("report.col.messages"), t("report.col.experts")],
              [(r["capture"], r["connections"], r["zmtp"], r["events"], r["messages"], r["experts"])
               for r in per_capture], lang),
        f"<h2>{t('report.errors')}</h2>",
        table([t("report.col.capture"), t("report.col.kind"), t("report.col.message")],
              [(e["capture"], e["kind"], e["message"]) for e in summary["errors"]], lang),
        f"<h2>{t('report.tables')}</h2>",
        table([t("report.col.table"), t("report.col.path")], sorted(summary["tables"].items()), lang),
    ]
    title = t("report.title")
    intro = t("report.intro", captures=summary["captures"], bytes=f"{summary['bytes']:,}",
              events=f"{summary['events']:,}")
    return f"""<!doctype html>
<html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 980px; color: #222; }}
h1 {{ font-size: 1.5em; }} h2 {{ border-bottom: 1px solid #ccc; margin-top: 2em; }}
figure {{ margin: 1em 0; }} figcaption {{ font-weight: 600; margin-bottom: .3em; }}
svg text {{ font: 12px system-ui, sans-serif; fill: #333; }} svg text.tick {{ font-size: 10px; }}
table {{ border-collapse: collapse; margin: .5em 0; }}
td, th {{ border: 1px solid #ddd; padding: 2px 8px; text-align: left; vertical-align: top; }}
.none {{ color: #888; font-style: italic; }}
</style></head><body>
<h1>{title}</h1>
<p>{intro}</p>
{''.join(sections)}
</body></html>
"""
