"""No string left behind (issue 21): the catalogs of both languages, the backend's and the frontend's, and the
lessons' translations agree with each other and with the code (docs/architecture.md#languages)."""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path

import pytest

from zmtplab import i18n
from zmtplab.analysis import analyze_capture
from zmtplab.capture.dissect import dissect_capture
from zmtplab.lessons.loader import default_lessons_dir, load_lessons
from zmtplab.lessons.translations import localize_lesson, translation_path

REPO = Path(__file__).resolve().parents[1]
BACKEND = REPO / "backend" / "zmtplab"
FRONTEND = REPO / "frontend"
CATALOGS = {
    "backend": (BACKEND / "i18n" / "catalogs" / "en.json", BACKEND / "i18n" / "catalogs" / "zh-CN.json"),
    "frontend": (FRONTEND / "i18n" / "en.json", FRONTEND / "i18n" / "zh-CN.json"),
}
HAN = re.compile(r"[\u4e00-\u9fff]")
# What stays as on the wire in every language (docs/glossary.md): command, socket type and flag names, octets.
WIRE = re.compile(r"\b(?:READY|ERROR|SUBSCRIBE|CANCEL|PING|PONG|HELLO|WELCOME|INITIATE|MESSAGE|PAIR|PUB|SUB|REQ|REP|"
                  r"DEALER|ROUTER|PULL|PUSH|XPUB|XSUB|NULL|PLAIN|CURVE|MORE|LONG|COMMAND|ZMTP)\b|%x[0-9A-Fa-f]{2}")
# Words the glossary chose against (the seeds' wording wins).
AVOID = ("对等体", "八位组", "套接口", "八位字节")


def load(path: Path) -> dict[str, str]:
    if not path.exists():
        pytest.skip(f"{path.relative_to(REPO)} does not exist yet")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict) and all(isinstance(v, str) for v in data.values()), path
    return data


@pytest.mark.parametrize("side", sorted(CATALOGS))
def test_every_id_has_a_text_in_both_languages_with_the_same_placeholders(side):
    en, zh = (load(p) for p in CATALOGS[side])
    assert sorted(set(en) - set(zh)) == [], f"{side}: ids without a Chinese text"
    assert sorted(set(zh) - set(en)) == [], f"{side}: ids without an English text"
    empty = [k for k in en if not en[k].strip() or not zh[k].strip()]
    assert empty == [], f"{side}: empty texts"
    differ = {k: (sorted(i18n.placeholders(en[k])), sorted(i18n.placeholders(zh[k])))
              for k in en if i18n.placeholders(en[k]) != i18n.placeholders(zh[k])}
    assert differ == {}, f"{side}: placeholders differ between the languages"
    wire = {k: sorted(set(WIRE.findall(en[k])) - set(WIRE.findall(zh[k]))) for k in en}
    assert {k: v for k, v in wire.items() if v} == {}, f"{side}: wire names lost in the Chinese text"
    avoided = {k: [w for w in AVOID if w in zh[k]] for k in zh}
    assert {k: v for k, v in avoided.items() if v} == {}, f"{side}: words docs/glossary.md chose against"


def _source_texts(root: Path, suffixes: tuple[str, ...]) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(root.rglob("*")) if p.suffix in suffixes
                     and "i18n" not in p.parts[-2:] and p.is_file())


@cache
def _python_strings() -> str:
    """Every string constant of the backend's code (f-strings' fixed parts too), one a line."""
    out = []
    for path in sorted(BACKEND.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.append(node.value)
    return "\n".join(out)


def _written(piece: str, strings: str) -> bool:
    """A piece of English is in the code's strings, whole or as two strings the code joins (`f"peer {what}"`)."""
    if piece in strings:
        return True
    cuts = [m.start() for m in re.finditer(" ", piece)]
    return any(piece[:i].strip() in strings and piece[i:].strip() in strings for i in cuts)


def test_no_backend_id_is_unused():
    """An id rendered by id is named in the code; an id `translate` recognises has its English in the code: each
    of its fixed pieces (between placeholders and clauses) is in some string the code writes."""
    en = load(CATALOGS["backend"][0])
    code = _source_texts(BACKEND, (".py",))
    strings = _python_strings()
    unused = []
    for msg_id, template in en.items():
        if not msg_id.startswith(i18n.TRANSLATED_PREFIXES):
            if f'"{msg_id}"' not in code and f"'{msg_id}'" not in code:
                unused.append(msg_id)
            continue
        pieces = [p.strip() for p in re.split(r"\{\w+\}|[,;:()]|\. ", template.replace("{{", "{").replace("}}", "}"))]
        missing = [p for p in pieces if len(p.split()) >= 2 and not _written(p, strings)]
        if missing:
            unused.append(f"{msg_id}: {missing}")
    assert unused == []


def test_no_frontend_id_is_unused():
    """A frontend id is used when its name is in frontend/js or a page; `ui.x.one`/`ui.x.other` when `ui.x` is
    (counted texts, `tn('ui.x', n)`)."""
    en = load(CATALOGS["frontend"][0])
    code = _source_texts(FRONTEND / "js", (".js",)) + _source_texts(FRONTEND, (".html",))
    unused = [k for k in en if k not in code and not (k.rsplit(".", 1)[-1] in ("one", "other")
                                                       and k.rsplit(".", 1)[0] in code)]
    assert unused == []


def test_every_lesson_exists_in_both_languages():
    lessons = load_lessons()
    directory = default_lessons_dir()
    stray = sorted(p.stem for p in (directory / "zh-CN").glob("*.yaml") if p.stem not in lessons)
    assert stray == [], "translations of no lesson"
    problems = {}
    for lesson_id, lesson in lessons.items():
        if not translation_path(lesson_id, "zh-CN").exists():
            problems[lesson_id] = "no zh-CN/ file"
            continue
        try:
            zh = localize_lesson(lesson, "zh-CN")
        except ValueError as exc:  # LessonError: a step in one language only, a question or choice missing ...
            problems[lesson_id] = str(exc)
            continue
        for n, (es, zs) in enumerate(zip(lesson.steps, zh.steps, strict=True), 1):
            for what, e_text, z_text in [("title", es.title, zs.title), ("narration", es.narration, zs.narration)]:
                if not HAN.search(z_text) and re.search(r"[A-Za-z]", WIRE.sub("", z_text)):
                    problems[f"{lesson_id} step {n} {what}"] = "not Chinese"
                lost = set(WIRE.findall(e_text)) - set(WIRE.findall(z_text))
                if lost:
                    problems[f"{lesson_id} step {n} {what}"] = f"wire names lost: {sorted(lost)}"
            if any(w in zs.narration for w in AVOID):
                problems[f"{lesson_id} step {n}"] = "a word docs/glossary.md chose against"
    assert problems == {}


@pytest.fixture(scope="module")
def capture_texts() -> dict[str, str]:
    """Every expert text, field note and finding the sample captures and the recorded incidents give, with the
    capture it came from."""
    texts: dict[str, str] = {}
    incidents = sorted((REPO / "captures" / "incidents").glob("*.pcapng"))
    for path in sorted((REPO / "captures").glob("*.pcapng")) + incidents:
        for ev in dissect_capture(str(path)):
            for text in [ev.get("text"), *(f.get("note") for f in ev.get("fields") or [])]:
                if text:
                    texts.setdefault(text, path.name)
        for finding in analyze_capture(str(path))["findings"]:
            texts.setdefault(finding["text"], path.name)
    return texts


def test_every_text_the_sample_captures_give_is_in_the_catalog(capture_texts):
    assert len(capture_texts) > 60
    unknown = {t: where for t, where in capture_texts.items() if i18n.recognise(t) is None}
    assert unknown == {}
    untranslated = [t for t in capture_texts if not HAN.search(i18n.translate(t, "zh-CN"))]
    assert untranslated == []
