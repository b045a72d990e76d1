"""Languages: the backend's catalogs (English and Simplified Chinese) and rendering from them.

English is the contract: the engine and the analysis write their English texts as they always
have, and this module renders them in another language on request, at the edges (web routes,
CLI `--lang`, the pipeline's report). See docs/architecture.md#languages.
"""

from __future__ import annotations

import json
import re
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

LANGS = ("en", "zh-CN")
DEFAULT = "en"
CATALOG_DIR = Path(__file__).with_name("catalogs")
PLACEHOLDER = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")
TRANSLATED_PREFIXES = ("engine.", "capture.", "analysis.", "peers.", "lessons.log.", "lessons.play.", "api.",
                       "replay.")
"""Ids whose English is written by code as the contract has it (the engine imports nothing of ours): `translate`
recognises their texts; every other id is rendered by `text` from its id."""


def normalize_lang(value: str | None) -> str | None:
    """`zh-CN` for any Simplified Chinese tag (`zh`, `zh-cn`, `zh-Hans`, `zh-SG`), `en` for English, else None."""
    if not value:
        return None
    tag = value.strip().lower().replace("_", "-")
    if tag == "en" or tag.startswith("en-"):
        return "en"
    if tag in ("zh", "zh-cn", "zh-hans", "zh-sg", "zh-my") or tag.startswith("zh-hans"):
        return "zh-CN"
    return None


def pick_lang(query: str | None = None, accept_language: str | None = None) -> str:
    """The language to answer in: `?lang=` when it names one, then the Accept-Language header, else English."""
    chosen = normalize_lang(query)
    if chosen:
        return chosen
    if accept_language:
        ranked = []
        for i, part in enumerate(accept_language.split(",")):
            tag, _, params = part.strip().partition(";")
            q = 1.0
            for param in params.split(";"):
                key, _, val = param.strip().partition("=")
                if key == "q":
                    try:
                        q = float(val)
                    except ValueError:
                        q = 0.0
            lang = normalize_lang(tag)
            if lang and q > 0:
                ranked.append((-q, i, lang))
        if ranked:
            return min(ranked)[2]
    return DEFAULT


@cache
def catalog(lang: str) -> dict[str, str]:
    """One language's backend catalog, `{id: text}`."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}; one of {', '.join(LANGS)}")
    return json.loads((CATALOG_DIR / f"{lang}.json").read_text(encoding="utf-8"))


def placeholders(template: str) -> set[str]:
    """The placeholder names of a catalog text."""
    return set(PLACEHOLDER.findall(template))


def text(msg_id: str, lang: str = DEFAULT, /, **params: Any) -> str:
    """The text of `msg_id` in `lang` with its placeholders filled (English when `lang` lacks it)."""
    template = catalog(lang).get(msg_id)
    if template is None:
        template = catalog(DEFAULT)[msg_id]
    return template.format(**params) if params or "{" in template else template


NUMBERS = frozenset({
    "count", "size", "offset", "length", "n", "number", "frames", "blen", "incl", "near", "bytes", "start", "end",
    "stop", "missing", "claimed", "present", "expected", "minimum", "maximum", "limit", "seconds", "ttl", "depth",
    "hwm", "pos", "index", "total", "sent", "before", "missed", "held", "quiet", "after", "major", "minor", "code",
    "max", "max_body", "max_bytes", "free", "width", "value", "last", "if_id"})
"""Placeholders that always hold a number: recognising a text, they match only digits (so nested texts split right)."""
HEX = frozenset({"btype", "octet", "flags", "bits"})
"""Placeholders that always hold hex digits."""


def _shape(name: str) -> str:
    if name in NUMBERS:
        return r"-?[\d,.]+(?:e[+-]?\d+)?"
    if name in HEX:
        return "[0-9A-Fa-f]+"
    return ".*?"


def _free_edge(template: str) -> bool:
    """Whether a template starts or ends with a placeholder that matches any text: nested in another text,
    it can swallow the outer text's prefix or suffix."""
    names = PLACEHOLDER.findall(template)
    first = PLACEHOLDER.match(template)
    starts = first is not None and _shape(first.group(1)) == ".*?"
    ends = template.endswith("}") and not template.endswith("}}") and _shape(names[-1]) == ".*?"
    return starts or ends


class _Matcher:
    """Recognises English texts as catalog templates: id and parameters."""

    def __init__(self, english: dict[str, str]) -> None:
        self.fixed: dict[str, str] = {}
        patterns: list[tuple[int, str, re.Pattern[str]]] = []
        for msg_id, template in english.items():
            if not msg_id.startswith(TRANSLATED_PREFIXES):
                continue
            if not placeholders(template):
                self.fixed.setdefault(template.replace("{{", "{").replace("}}", "}"), msg_id)
                continue
            parts, seen, pos = [], set(), 0
            for m in PLACEHOLDER.finditer(template):
                parts.append(re.escape(template[pos:m.start()].replace("{{", "{").replace("}}", "}")))
                name = m.group(1)
                parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>{_shape(name)})")
                seen.add(name)
                pos = m.end()
            parts.append(re.escape(template[pos:].replace("{{", "{").replace("}}", "}")))
            literal = len(PLACEHOLDER.sub("", template))
            loose = _free_edge(template)
            patterns.append((literal, msg_id, re.compile("".join(parts), re.DOTALL), loose))
        # The template with the most fixed text first: "unknown mechanism {name}: ..." before "{text}".
        patterns.sort(key=lambda p: -p[0])
        self.patterns = [(literal, msg_id, pattern, loose) for literal, msg_id, pattern, loose in patterns]

    def match(self, english: str) -> tuple[str, dict[str, str]] | None:
        found = self._best(english)
        return None if found is None else (found[0], found[1])

    def _best(self, english: str) -> tuple[str, dict[str, str], int] | None:
        """The reading of `english` that explains most of it by fixed text, nested texts' included."""
        msg_id = self.fixed.get(english)
        if msg_id is not None:
            return msg_id, {}, len(english)
        candidates = []
        for literal, msg_id, pattern, loose in self.patterns:
            m = pattern.fullmatch(english)
            if m is None:
                continue
            candidates.append((literal, msg_id, m.groupdict()))
            # A template that starts or ends with a free placeholder ("{command} sent by ...") can swallow the
            # prefix or suffix of an outer text that nests it ("not hex: {text_error}"): weigh every reading then.
            if not loose:
                break
        if not candidates:
            return None
        scored = [(literal + sum(self._score(v) for k, v in params.items() if k.startswith("text")), i, msg_id,
                   params) for i, (literal, msg_id, params) in enumerate(candidates)]
        score, _, msg_id, params = max(scored, key=lambda c: (c[0], -c[1]))
        return msg_id, params, score

    def _score(self, nested: str) -> int:
        """How much of a nested text its own best reading explains by fixed text (0 when none). (Not cached here:
        texts carry offsets and counts, so a cache of every one read would grow with a server's uptime;
        `translate`'s bounded cache holds the whole texts.)"""
        found = self._best(nested)
        return 0 if found is None else found[2]


@lru_cache(maxsize=1)
def _matcher() -> _Matcher:
    return _Matcher(catalog(DEFAULT))


def recognise(english: str) -> tuple[str, dict[str, str]] | None:
    """The catalog id and parameters an English engine, capture or analysis text was made from, or None."""
    return _matcher().match(english)


@lru_cache(maxsize=8192)
def translate(english: str, lang: str) -> str:
    """An English text of the engine, the capture reader or the analysis, in `lang` (unchanged when unknown).

    A text made of several sentences joined by the code (a note and its libzmq remark) is
    recognised whole first, then sentence by sentence.
    """
    if lang == DEFAULT or not english:
        return english
    found = recognise(english)
    if found is None:
        if "; " in english:  # findings join their reasons with "; "
            return "\uff1b".join(translate(part, lang) for part in english.split("; "))
        return english
    msg_id, params = found
    params = {k: translate(v, lang) if k.startswith("text") else v for k, v in params.items()}
    return text(msg_id, lang, **params)


def localize_fields(fields: list[dict[str, Any]], lang: str) -> list[dict[str, Any]]:
    """Fields with their notes in `lang` (copies; the list itself when `lang` is English)."""
    if lang == DEFAULT:
        return fields
    return [{**f, "note": translate(f["note"], lang)} if f.get("note") else f for f in fields]


def localize_event(event: dict[str, Any], lang: str) -> dict[str, Any]:
    """An event with its expert `text` and its fields' notes in `lang` (the event itself for English)."""
    if lang == DEFAULT:
        return event
    out = dict(event)
    if isinstance(out.get("text"), str):
        out["text"] = translate(out["text"], lang)
    if isinstance(out.get("fields"), list):
        out["fields"] = localize_fields(out["fields"], lang)
    return out


def localize_events(events: list[dict[str, Any]], lang: str) -> list[dict[str, Any]]:
    """`localize_event` over a list (the list itself for English)."""
    if lang == DEFAULT:
        return events
    return [localize_event(e, lang) for e in events]


def localize_findings(findings: list[dict[str, Any]], lang: str) -> list[dict[str, Any]]:
    """Analysis findings with their `text` in `lang` (the list itself for English)."""
    if lang == DEFAULT:
        return findings
    return [{**f, "text": translate(f["text"], lang)} if isinstance(f.get("text"), str) else f for f in findings]


def localize_analysis(analysis: dict[str, Any], lang: str) -> dict[str, Any]:
    """An analysis (`zmtplab analyze --json`'s object) with its findings, and why an ambiguous flow is, in `lang`
    (itself for English)."""
    if lang == DEFAULT or not isinstance(analysis.get("findings"), list):
        return analysis
    out = {**analysis, "findings": localize_findings(analysis["findings"], lang)}
    if isinstance(analysis.get("flows"), list):
        out["flows"] = [{**f, "why": translate(f["why"], lang)} if isinstance(f.get("why"), str) else f
                        for f in analysis["flows"]]
    return out


def localize_replay(result: dict[str, Any], lang: str) -> dict[str, Any]:
    """A replay (`zmtplab replay --json`'s object) with its notes, the fidelity check's reasons, the diff's summary
    and the findings in `lang` (itself for English)."""
    if lang == DEFAULT:
        return result
    out = {**result}
    out["notes"] = [{**n, "text": translate(n["text"], lang)} for n in result.get("notes", [])]
    if isinstance(result.get("fidelity"), dict):
        rows = [{**r, "why": [translate(w, lang) for w in r["why"]]} if "why" in r else r
                for r in result["fidelity"]["connections"]]
        out["fidelity"] = {**result["fidelity"], "connections": rows}
    if isinstance(result.get("findings"), list):
        out["findings"] = localize_findings(result["findings"], lang)
    if isinstance(result.get("diff"), dict):
        diff = result["diff"]
        found = diff["findings"]
        out["diff"] = {**diff, "summary": [translate(line, lang) for line in diff["summary"]],
                       "findings": {"appear": localize_findings(found["appear"], lang),
                                    "go": localize_findings(found["go"], lang)}}
    return out
