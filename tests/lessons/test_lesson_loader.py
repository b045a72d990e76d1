"""Loading lesson files: what is accepted, and errors that name the file and the step; the narration subset."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from zmtplab.lessons import LessonError, LessonPlayError, load_lesson_file, load_lessons, markdown, play_lesson

GOOD = """
title: A tiny lesson
summary: Just enough to load.
steps:
  - title: Hello
    session:
      server: {type: PUSH}
      client: {type: PULL}
    element: {dir: c2s, kind: greeting}
    highlight: [signature, {field: padding, value: "0000000000000001"}]
    narration: Two greetings.
  - title: Second step
    narration: More.
    question:
      prompt: Which?
      choices: ["a", "b"]
      answer: {choice: "b"}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_good_file_loads_with_its_id_from_the_file_name(tmp_path):
    lesson = load_lesson_file(write(tmp_path, "tiny.yaml", GOOD))
    assert lesson.id == "tiny"
    assert lesson.steps[0].highlight[0].field == "signature"  # a bare string is a field name
    assert lesson.summary_dict() == {"id": "tiny", "title": "A tiny lesson", "summary": "Just enough to load.",
                                     "level": "beginner", "step_count": 2}
    scenes = play_lesson(lesson)
    assert [s.number for s in scenes] == [1, 2]
    assert scenes[1].events == scenes[0].events  # a step without a source continues the previous one


def test_the_directory_loader_orders_by_order_then_id(tmp_path):
    write(tmp_path, "b.yaml", GOOD.replace("title: A tiny lesson", "title: B\norder: 1"))
    write(tmp_path, "a.yaml", GOOD.replace("title: A tiny lesson", "title: A\norder: 2"))
    write(tmp_path, "c.yaml", GOOD.replace("title: A tiny lesson", "title: C\norder: 1"))
    assert list(load_lessons(tmp_path)) == ["b", "c", "a"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # A typo in a step's key: named by file, step number and title, and the key.
        (("    narration: More.", "    narration: More.\n    narator: typo"), "step 2 ('Second step'): narator"),
        (("answer: {choice: \"b\"}", "answer: {choice: \"c\"}"), "step 2 ('Second step'): question"),
        (("server: {type: PUSH}", "server: {type: PUSHY}"), "step 1 ('Hello'): session.server.type"),
        (("highlight: [signature", "highlight: [signature, {field: x, vaule: 1}"), "step 1 ('Hello'): highlight"),
        (("    element: {dir: c2s, kind: greeting}\n", ""), "step 1 ('Hello'): `highlight` needs an `element`"),
        (("client: {type: PULL}", "client: {type: PULL, version: \"4.0\"}"),
         "step 1 ('Hello'): session.client.version"),
        (("    narration: More.", "    narration: More.\n    do: [{bytes: {from: client, hex: \"zz\"}}]"),
         "step 2 ('Second step'): do.0"),
        (("    narration: More.", "    narration: More.\n    do: [{run: true, wait: 1}]"), "exactly one key"),
    ],
)
def test_errors_name_the_file_and_the_step(tmp_path, change, expected):
    old, new = change
    assert old in GOOD
    path = write(tmp_path, "broken.yaml", GOOD.replace(old, new))
    with pytest.raises(LessonError) as err:
        load_lesson_file(path)
    text = str(err.value)
    assert text.startswith("broken.yaml: "), text
    assert expected in text, text


def test_lesson_level_errors(tmp_path):
    no_source = GOOD.replace("    session:\n      server: {type: PUSH}\n      client: {type: PULL}\n", "")
    with pytest.raises(LessonError, match="first step needs a source"):
        load_lesson_file(write(tmp_path, "nosource.yaml", no_source))
    with pytest.raises(LessonError, match="does not match the file name"):
        load_lesson_file(write(tmp_path, "named.yaml", "id: other\n" + GOOD))
    with pytest.raises(LessonError, match="cannot read"):
        load_lesson_file(write(tmp_path, "bad.yaml", "title: [unclosed\n"))
    with pytest.raises(LessonError, match="a mapping"):
        load_lesson_file(write(tmp_path, "list.yaml", "- 1\n- 2\n"))
    capture_actions = GOOD.replace("    session:\n      server: {type: PUSH}\n      client: {type: PULL}\n",
                                   "    capture: {file: push_pull.pcapng}\n").replace(
        "    narration: More.", "    narration: More.\n    do: [run]")
    with pytest.raises(LessonError, match="step 2: a capture takes no actions"):
        load_lesson_file(write(tmp_path, "cap.yaml", capture_actions))
    with pytest.raises(LessonError, match="not a capture file name"):
        load_lesson_file(write(tmp_path, "path.yaml", GOOD.replace(
            "    session:\n      server: {type: PUSH}\n      client: {type: PULL}\n",
            "    capture: {file: ../../etc/passwd}\n")))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # The element, the field or the value a step names does not exist: named by lesson, step and what.
        (("kind: greeting}", "kind: command, name: READY, index: 5}"), "step 1 ('Hello'): no element"),
        (("highlight: [signature,", "highlight: [signatur,"), "field 'signatur' is not in the greeting element"),
        (("value: \"0000000000000001\"", "value: \"0000000000000002\""), "with value '0000000000000002'"),
        (("client: {type: PULL}", "client: {type: PUSH}"), "a peer failed"),
        (("    narration: More.", "    narration: More.\n    expect: {log: [never said]}"), "expected 'never said'"),
        (("    narration: More.", "    narration: More.\n    do: [{send: {from: client, frames: [x]}}]"),
         "send from client: a PULL socket cannot send"),
    ],
)
def test_play_errors_name_the_lesson_and_the_step(tmp_path, change, expected):
    old, new = change
    lesson = load_lesson_file(write(tmp_path, "play.yaml", GOOD.replace(old, new)))
    with pytest.raises(LessonPlayError) as err:
        play_lesson(lesson)
    text = str(err.value)
    assert text.startswith("lesson play: step "), text
    assert expected in text, text


def test_a_missing_sample_capture_is_a_play_error(tmp_path):
    lesson = load_lesson_file(write(tmp_path, "cap.yaml", GOOD.replace(
        "    session:\n      server: {type: PUSH}\n      client: {type: PULL}\n",
        "    capture: {file: nowhere.pcapng}\n")))
    with pytest.raises(LessonPlayError, match=r"nowhere\.pcapng not found"):
        play_lesson(lesson)


# ---------------------------------------------------------------- the narration subset


def test_markdown_subset():
    tree = markdown.parse(textwrap.dedent("""\
        A **bold** and *em* word with `code`, and a [spec](https://rfc.zeromq.org/spec/23/).

        - one
        - two with **more**
          continued

        1. first
        2. second

        ```
        greeting = signature version
        ```
        """))
    assert [b["type"] for b in tree] == ["p", "ul", "ol", "pre"]
    p = tree[0]["children"]
    assert {"t": "strong", "children": [{"t": "text", "v": "bold"}]} in p
    assert {"t": "em", "children": [{"t": "text", "v": "em"}]} in p
    assert {"t": "code", "v": "code"} in p
    assert {"t": "link", "href": "https://rfc.zeromq.org/spec/23/", "children": [{"t": "text", "v": "spec"}]} in p
    assert markdown.plain_text([tree[1]]) == "one\ntwo with more continued"
    assert tree[3]["text"] == "greeting = signature version"


@pytest.mark.parametrize(
    "evil",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "[click](javascript:alert(1))",
        "[phish](https://evil.example/rfc.zeromq.org/)",
        "[sneaky](https://rfc.zeromq.org.evil.example/spec/23/)",
        "[creds](https://user@rfc.zeromq.org/)",
        "**<b>not bold html</b>**",
    ],
)
def test_markdown_never_lets_markup_or_foreign_links_through(evil):
    tree = markdown.parse(evil)
    nodes = list(_walk(tree))
    assert not any(n.get("t") == "link" for n in nodes), tree
    text = markdown.plain_text(tree)
    for fragment in ("<script>", "<img", "<b>"):
        if fragment in evil:
            assert fragment in text  # kept, as text
    assert set().union(*(n.keys() for n in nodes)) <= {"t", "v", "children", "type", "href", "items", "text"}


def _walk(nodes):
    for n in nodes:
        yield n
        yield from _walk(n.get("children", []))
        for item in n.get("items", []):
            yield from _walk(item)
