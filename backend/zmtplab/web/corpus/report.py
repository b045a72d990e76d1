"""The pipeline's `report.html` made fit for the web app: server paths out, a CSP of its own.

The report is one self-contained page with an inline `<style>` block and inline SVG (no script).
The app's policy (`style-src 'self'`) would drop that style, so the report is served with its own
policy: nothing may load, the style blocks are allowed by their hashes, the page is sandboxed
(no script, an origin of its own) and may be framed by the app's pages only.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Iterable
from pathlib import Path

_STYLE = re.compile(rb"<style[^>]*>(.*?)</style>", re.S | re.I)


def report_csp(page: bytes) -> str:
    """The Content-Security-Policy of one report page: its style blocks by hash, nothing else."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s).digest()).decode()}'"
                      for s in _STYLE.findall(page))
    styles = hashes or "'none'"
    return (f"default-src 'none'; style-src {styles}; img-src data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'self'; sandbox")


REPORT_LANGS = ("en", "zh-CN")
"""The languages a corpus run's report is written in: `report.html` (English) and `report.zh-CN.html`."""


def report_name(lang: str) -> str:
    """The file of a run's report in `lang` (see `zmtplab.pipeline.report`)."""
    return "report.html" if lang == REPORT_LANGS[0] else f"report.{lang}.html"


def relabel(path: Path, labels: Iterable[tuple[str, str]], out_dir: str) -> None:
    """Rewrites the report in place: each input path shows as its label (the capture's display name),
    and the run's output directory disappears from the table paths ("events", not a server path).

    The report escapes every text with `html.escape`, so the escaped forms are what is replaced.
    """
    text = path.read_text(encoding="utf-8")
    for raw, label in sorted(labels, key=lambda pair: -len(pair[0])):  # longest first: no prefix clashes
        text = text.replace(html.escape(raw, quote=True), html.escape(label, quote=True))
    prefix = out_dir.rstrip("/") + "/"
    text = text.replace(html.escape(prefix, quote=True), "")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
