"""A teacher's broken lesson files, said in the reader's language (issue 32.11): the loader's and the translations'
problems, pydantic's own (a missing key, a wrong value) and a topology's, in the lesson list of the Chinese page,
over HTTP and by `zmtplab lessons check --lang zh-CN`; English stays the text it was."""
# ruff: noqa: RUF001  (the Chinese texts use full-width punctuation, as Chinese does)

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from test_lessons_browser import browser, open_page  # noqa: F401 (browser: the module's Chromium)

from zmtplab.lessons import load_lesson_dirs
from zmtplab.web import Settings, create_app

REPO = Path(__file__).resolve().parents[2]
FILES = {
    # pydantic's missing key, and our check of a peer's socket type
    "a.yaml": "title: A\nsummary: s\nsteps:\n  - title: no narration\n"
              "    session: {server: {type: PUSH}, client: {type: PULLX}}\n",
    # pydantic's literal, and a topology's own error (peers.topology)
    "b.yaml": "title: B\nsummary: s\nlevel: expert\nsteps:\n  - title: T\n"
              "    topology: {nodes: [{name: a, type: PUSH}], links: [{connect: a, bind: zz}]}\n    narration: x\n",
    # a lesson-wide check that names the step
    "c.yaml": "title: C\nsummary: s\nsteps:\n  - title: Hello\n"
              "    session: {server: {type: PUSH}, client: {type: PULL}}\n    narration: x\n"
              "  - title: There\n    narration: y\n    do: [{recv: {node: w1}}]\n",
    # a good lesson whose Chinese file has one step too many
    "d.yaml": "title: D\nsummary: s\nsteps:\n  - title: Hello\n"
              "    session: {server: {type: PUSH}, client: {type: PULL}}\n    narration: x\n",
    # a good lesson in English only: it shows in English on the Chinese page, and that is no problem
    "h.yaml": "title: H\nsummary: s\nsteps:\n  - title: Hi\n    session: {server: {type: PUB}, client: {type: SUB}}\n"
              "    narration: x\n",
    "zh-CN/d.yaml": "title: 丁\nsummary: 简\nsteps:\n  - title: 你好\n    narration: x\n"
                    "  - title: 多\n    narration: y\n",
}
ENGLISH = [
    "a.yaml: step 1 ('no narration'): narration: Field required\n"
    "a.yaml: step 1 ('no narration'): session.client.type: unknown socket type 'PULLX'; one of REQ, REP, DEALER, "
    "ROUTER, PUB, XPUB, SUB, XSUB, PUSH, PULL, PAIR",
    "b.yaml: level: Input should be 'beginner', 'intermediate' or 'advanced'\n"
    "b.yaml: step 1 ('T'): topology: link 0 (a -> zz): no node named 'zz'",
    "c.yaml: step 2 ('There'): `recv` acts on a topology's nodes; this step's source is a session",
]
CHINESE = [
    "a.yaml：第 1 步（“no narration”）：narration：缺少这个键\n"
    "a.yaml：第 1 步（“no narration”）：session.client.type：未知的套接字类型 'PULLX'；应为以下之一：REQ, REP, DEALER, "
    "ROUTER, PUB, XPUB, SUB, XSUB, PUSH, PULL, PAIR",
    "b.yaml：level：应为以下之一：'beginner', 'intermediate', 'advanced'\n"
    "b.yaml：第 1 步（“T”）：topology：链路 0（a -> zz）：没有名为 'zz' 的节点",
    "c.yaml：第 2 步（“There”）：`recv` 作用于拓扑的节点；这一步的来源是 session",
]
TRANSLATION = ("zh-CN/d.yaml: the lesson has 1 steps, this file 2", "zh-CN/d.yaml：课程有 1 个步骤，这个文件有 2 个")


@pytest.fixture
def own(tmp_path: Path) -> Path:
    directory = tmp_path / "lessons"
    for name, content in FILES.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(content, encoding="utf-8")
    return directory


def test_each_problem_in_english_and_in_chinese(own: Path) -> None:
    loaded = load_lesson_dirs([own])
    assert list(loaded.lessons) == ["d", "h"]
    assert [error.render() for _, error in loaded.problems] == ENGLISH
    assert [str(error) for _, error in loaded.problems] == ENGLISH  # (English is what the error says)
    assert [error.render("zh-CN") for _, error in loaded.problems] == CHINESE


def test_a_missing_directory_is_a_problem_in_both_languages(tmp_path: Path) -> None:
    loaded = load_lesson_dirs([tmp_path / "nowhere"])
    [(_, error)] = loaded.problems
    assert error.render() == f"{tmp_path / 'nowhere'}: no such directory of lessons"
    assert error.render("zh-CN") == f"{tmp_path / 'nowhere'}：没有这个课程目录"


def test_the_lesson_list_says_them_in_the_pages_language(tmp_path: Path, own: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", frontend_dir=REPO / "frontend", lessons_dir=own))
    with TestClient(app) as client:
        listed = client.get("/api/lessons", params={"lang": "zh-CN"}).json()["lessons"]
        # (d: its Chinese file has a step too many, so it shows in English too, and is listed below)
        assert [(lesson["id"], lesson["title"]) for lesson in listed[-2:]] == [("d", "D"), ("h", "H")]
        english = client.get("/api/lessons").json()["problems"]
        chinese = client.get("/api/lessons", params={"lang": "zh-CN"}).json()["problems"]
        by_header = client.get("/api/lessons", headers={"Accept-Language": "zh-CN,zh;q=0.9"}).json()["problems"]
    assert english == [{"file": f"{n}.yaml", "error": e} for n, e in zip("abc", ENGLISH, strict=True)]
    # the Chinese page also names the translation it could not use (lesson d shows in English there)
    assert chinese == by_header == [{"file": f"{n}.yaml", "error": e} for n, e in zip("abc", CHINESE, strict=True)] + [
        {"file": "zh-CN/d.yaml", "error": TRANSLATION[1]}]


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_lessons_check_says_them_in_the_language_asked(own: Path, lang: str) -> None:
    run = subprocess.run([sys.executable, "-m", "zmtplab.cli", "lessons", "check", "--lang", lang, str(own)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    expected = (CHINESE if lang == "zh-CN" else ENGLISH) + [TRANSLATION[lang == "zh-CN"]]
    assert all(f"error {e}\n" in run.stdout for e in expected), run.stdout
    assert run.stdout.endswith(f"2 lesson(s) in {own}, 4 problem(s)\n")


@pytest.mark.browser
def test_the_chinese_lessons_page_lists_them_in_chinese(browser, tmp_path: Path, own: Path) -> None:  # noqa: F811
    from testkit import LiveServer

    app = create_app(Settings(data_dir=tmp_path / "data", frontend_dir=REPO / "frontend", lessons_dir=own))
    errors: list[str] = []
    with LiveServer(app, name="lesson-problems-server") as server:
        context, page = open_page(browser, errors)
        try:
            page.goto(f"{server.base}/lessons.html?lang=zh-CN")
            page.wait_for_selector(".lesson-problems pre.problem")
            shown = page.locator(".lesson-problems pre.problem").all_text_contents()
            assert shown == [*CHINESE, TRANSLATION[1]]
            assert page.locator(".lesson-problems strong").all_text_contents() == [
                "a.yaml", "b.yaml", "c.yaml", "zh-CN/d.yaml"]
            page.goto(f"{server.base}/lessons.html?lang=en")
            page.wait_for_selector(".lesson-problems pre.problem")
            assert page.locator(".lesson-problems pre.problem").all_text_contents() == ENGLISH
        finally:
            context.close()
    assert not errors, errors


UNPLAYABLE = {
    "e.yaml": "title: E\nsummary: s\nsteps:\n  - title: Hello\n"
              "    session: {server: {type: PUSH}, client: {type: PULL}}\n"
              "    element: {dir: c2s, kind: greeting}\n    highlight: [signaturex]\n    narration: x\n",
    "f.yaml": "title: F\nsummary: s\nsteps:\n  - title: Lost\n    capture: {file: lost.pcapng}\n    narration: x\n",
    "g.yaml": "title: G\nsummary: s\nsteps:\n  - title: Read\n"
              "    topology: {nodes: [{name: p, type: PUSH}, {name: q, type: PULL}], links: [{connect: q, bind: p}]}\n"
              "    do: [{recv: {node: q, count: 2}}]\n    narration: x\n",
}


def test_a_lesson_that_cannot_be_played_says_why_in_chinese(tmp_path: Path) -> None:
    directory = tmp_path / "lessons"
    directory.mkdir()
    for name, content in UNPLAYABLE.items():
        (directory / name).write_text(content, encoding="utf-8")
    fields = "as-server, filler, mechanism, padding, signature, signature-end, version-major, version-minor"
    expected = {
        "e": ("lesson e: step 1 ('Hello'): field 'signaturex' is not in the greeting element; its fields: " + fields,
              "课程 e：第 1 步（'Hello'）：greeting 元素中没有字段 'signaturex'；它的字段：" + fields),
        "g": ("lesson g: step 1 ('Read'): recv: q had only 0 of 2 messages to read",
              "课程 g：第 1 步（'Read'）：recv：q 只有 0 条消息可读，而不是 2 条"),
    }
    app = create_app(Settings(data_dir=tmp_path / "data", frontend_dir=REPO / "frontend", lessons_dir=directory))
    with TestClient(app) as client:
        for lesson_id, (english, chinese) in expected.items():
            assert client.get(f"/api/lessons/{lesson_id}/steps/1").json() == {"detail": english}
            refused = client.get(f"/api/lessons/{lesson_id}/steps/1", params={"lang": "zh-CN"})
            assert refused.status_code == 422 and refused.json() == {"detail": chinese}
        lost = client.get("/api/lessons/f/steps/1", params={"lang": "zh-CN"}).json()["detail"]
        assert lost.startswith(f"课程 f：第 1 步（'Lost'）：在 {directory} or ")
        assert lost.endswith(" 中找不到抓包 lost.pcapng")
    run = subprocess.run([sys.executable, "-m", "zmtplab.cli", "lessons", "check", str(directory), "--lang", "zh-CN"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert all(f"error {chinese}\n" in run.stdout for _, chinese in expected.values()), run.stdout
