"""Exercises (issue 32.11): a lesson step sets a task the server checks, a typed answer (as text or as a number)
or a topology the student built in the playground (its nodes, then the check's messages played on it on the
simulator); the format checked with errors naming the step, in both languages, in the handout with its key."""
# ruff: noqa: RUF001  (the Chinese texts use full-width punctuation, as Chinese does)

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from zmtplab.lessons import load_lesson_file
from zmtplab.lessons.loader import Exercise, LessonError
from zmtplab.lessons.player import check_exercise, exercise_start, same_answer
from zmtplab.lessons.translations import localize_lesson
from zmtplab.web import Settings, create_app

REPO = Path(__file__).resolve().parents[2]
VENT = {"name": "vent", "type": "PUSH"}
W1, W2 = {"name": "w1", "type": "PULL"}, {"name": "w2", "type": "PULL"}
IN_ORDER = {"nodes": [VENT, W1, W2], "links": [{"connect": "w1", "bind": "vent"}, {"connect": "w2", "bind": "vent"}]}
SWAPPED = {**IN_ORDER, "links": IN_ORDER["links"][::-1]}


def test_a_typed_answer_is_one_of_the_accepted_ones_a_number_as_a_number() -> None:
    assert same_answer("27", "27") and same_answer(" 0x1B ", "27") and same_answer("27 octets", "27")
    assert same_answer("27 个字节", "27") and same_answer("Round  Robin", "round robin")
    assert not same_answer("28", "27") and not same_answer("2 7", "27") and not same_answer("twenty-seven", "27")
    # (an accepted text that is not a bare number is compared as words)
    assert not same_answer("27", "27 octets")


def test_the_pub_ready_exercise(lessons) -> None:
    exercise = lessons["null-handshake"].steps[-1].exercise
    assert exercise.kind == "answer"
    right = check_exercise(exercise, {"answer": "27"})
    assert right["correct"] and right["message"] == "Correct." and right["explain"]
    wrong = check_exercise(exercise, {"answer": "28"})
    assert wrong == {"correct": False, "message": exercise.hint, "problems": [], "explain": []}
    assert not check_exercise(exercise, {})["correct"]


def test_a_topology_exercise_checks_what_the_students_nodes_read(lessons) -> None:
    exercise = lessons["load-balancing"].steps[-1].exercise
    assert exercise.kind == "topology" and exercise.check.nodes == {"vent": "PUSH", "w1": "PULL", "w2": "PULL"}
    assert check_exercise(exercise, {"topology": IN_ORDER})["correct"]
    # The links the other way round: w2's pipe comes first, so round robin gives it the odd tasks.
    swapped = check_exercise(exercise, {"topology": SWAPPED})
    assert not swapped["correct"] and swapped["message"] == exercise.hint
    assert swapped["problems"] == ["w1 read task 2, task 4, task 6; the task wants task 1, task 3, task 5.",
                                   "w2 read task 1, task 3, task 5; the task wants task 2, task 4, task 6."]
    # A worker too few, a node of the wrong type, a topology that cannot be built, nothing at all.
    assert check_exercise(exercise, {"topology": {"nodes": [VENT, W1], "links": IN_ORDER["links"][:1]}})[
        "problems"] == ["Your topology has no node named w2: the task asks for a PULL by that name."]
    wrong_type = {"nodes": [VENT, W1, {"name": "w2", "type": "PUSH"}], "links": IN_ORDER["links"][:1]}
    assert check_exercise(exercise, {"topology": wrong_type})["problems"] == [
        "w2 is a PUSH socket; the task asks for a PULL."]
    sub = {**IN_ORDER, "nodes": [VENT, W1, {"name": "w2", "type": "SUB"}]}
    assert check_exercise(exercise, {"topology": sub})["problems"] == [
        "This topology cannot be built: link 1 (w2 -> vent): a SUB cannot talk to a PUSH (23/ZMTP's table of socket "
        "pairs); a SUB talks to PUB or XPUB"]
    bad_link = {**IN_ORDER, "links": [{"connect": "w1", "bind": "nobody"}]}
    assert check_exercise(exercise, {"topology": bad_link})["problems"] == [
        "This topology cannot be built: link 0 (w1 -> nobody): no node named 'nobody'"]
    assert check_exercise(exercise, {"topology": {"nodes": []}})["problems"] == [
        "Nothing to check: build a topology (its nodes and links) first."]
    # The extra nodes and links a student adds are theirs: a fourth worker takes tasks, and it shows.
    extra = {"nodes": [*IN_ORDER["nodes"], {"name": "w3", "type": "PULL"}],
             "links": [*IN_ORDER["links"], {"connect": "w3", "bind": "vent"}]}
    assert check_exercise(exercise, {"topology": extra})["problems"] == [
        "w1 read task 1, task 4; the task wants task 1, task 3, task 5.",
        "w2 read task 2, task 5; the task wants task 2, task 4, task 6."]


def test_in_chinese_the_verdict_the_hint_and_each_problem(lessons) -> None:
    exercise = localize_lesson(lessons["load-balancing"], "zh-CN").steps[-1].exercise
    result = check_exercise(exercise, {"topology": SWAPPED}, "zh-CN")
    assert result["message"] == "轮询按照连接建立的先后顺序依次使用分发器的各个管道。"
    assert result["problems"][0] == "w1 读到的是 task 2, task 4, task 6；任务要求的是 task 1, task 3, task 5。"
    assert check_exercise(exercise, {"topology": IN_ORDER}, "zh-CN")["message"] == "正确。"


def test_a_loop_of_echoes_is_cut_short() -> None:
    """Two PAIRs echoing each other never settle: the check stops after its deliveries and says so."""
    exercise = Exercise.model_validate({"task": "t", "check": {"nodes": {"a": "PAIR", "b": "PAIR"},
                                                              "do": ["run", {"send": {"from": "a", "frames": ["x"]}}]}})
    loop = {"nodes": [{"name": "a", "type": "PAIR", "echo": True}, {"name": "b", "type": "PAIR", "echo": True}],
            "links": [{"connect": "b", "bind": "a"}]}
    result = check_exercise(exercise, {"topology": loop})
    assert not result["correct"] and "never settles" in result["problems"][0]


def test_the_playground_starts_from_the_exercise_with_the_checks_messages(lessons) -> None:
    start = exercise_start(lessons["load-balancing"].steps[-1].exercise)
    assert [n["name"] for n in start["nodes"]] == ["vent", "w1", "w2"] and start["links"] == []
    assert [s["frames"] for s in start["script"]] == [[f"task {i}"] for i in range(1, 7)]
    assert all(s["from"] == "vent" for s in start["script"])


@pytest.mark.parametrize(("exercise", "error"), [
    ({"task": "t"}, "exactly one of `accept` (a typed answer) and `check` (a topology)"),
    ({"task": "t", "accept": ["1"], "check": {"nodes": {"a": "PUSH"}}}, "exactly one of"),
    ({"task": "t", "accept": ["1"], "start": {"preset": "load-balancing"}}, "`start` goes with a topology exercise"),
    ({"task": "t", "check": {"nodes": {"a": "PUSHY"}}}, "node a: unknown socket type 'PUSHY'"),
    ({"task": "t", "check": {"nodes": {"a": "PUSH"}, "do": [{"send": {"from": "b", "frames": ["x"]}}]}},
     "`send` names 'b', which is not one of `nodes` (a)"),
    ({"task": "t", "check": {"nodes": {"a": "PUSH"}, "received": {"b": 1}}}, "'b' is not one of `nodes` (a)"),
    ({"task": "t", "check": {"nodes": {"a": "PUSH"}, "do": [{"ping": {"from": "client"}}]}},
     "a topology takes no `ping` action"),
])
def test_an_exercise_that_is_not_right_says_what(exercise: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error.replace("(", r"\(").replace(")", r"\)")):
        Exercise.model_validate(exercise)


OWN = """title: Count the octets
summary: A typed answer and its Chinese.
steps:
  - title: A frame
    session:
      server: {type: PUSH}
      client: {type: PULL}
    narration: Look at a frame.
    exercise:
      task: How many octets does a one-octet message take on the wire?
      accept: ["3", "three"]
      hint: Flags, size, body.
"""
OWN_ZH = """title: 数一数字节
summary: 一个输入答案的练习。
steps:
- title: 一个帧
  narration: 看一个帧。
  exercise:
    task: 只有一个字节的消息在线路上占多少个字节？
    accept: ["三"]
    hint: 标志、大小、主体。
"""


def test_an_exercise_of_ones_own_in_both_languages_over_http(tmp_path: Path) -> None:
    own = tmp_path / "lessons"
    (own / "zh-CN").mkdir(parents=True)
    (own / "count.yaml").write_text(OWN, encoding="utf-8")
    (own / "zh-CN" / "count.yaml").write_text(OWN_ZH, encoding="utf-8")
    app = create_app(Settings(data_dir=tmp_path / "data", frontend_dir=REPO / "frontend", lessons_dir=own))
    with TestClient(app) as client:
        scene = client.get("/api/lessons/count/steps/1", params={"lang": "zh-CN"}).json()
        assert scene["exercise"]["kind"] == "answer" and scene["exercise"]["task"].startswith("只有一个字节")
        assert "accept" not in scene["exercise"] and "三" not in str(scene["exercise"])  # (no answer given away)
        listed = client.get("/api/lessons/count").json()["steps"][0]["exercise"]
        assert listed["kind"] == "answer" and listed["nodes"] is None
        post = lambda body, lang="en": client.post("/api/lessons/count/steps/1/exercise",  # noqa: E731
                                                   params={"lang": lang}, json=body)
        assert post({"answer": "三"}, "zh-CN").json()["correct"]  # (the translation's own answer)
        assert post({"answer": "3"}, "zh-CN").json() == {"correct": True, "message": "正确。", "problems": [],
                                                         "explain": []}
        assert post({"answer": "4"}, "zh-CN").json()["message"] == "标志、大小、主体。"
        assert post({"answer": "three"}).json()["correct"] and not post({"answer": "三"}).json()["correct"]
        assert post({"topology": IN_ORDER}).status_code == 422
        assert post({"answer": "x" * 201}).status_code == 422
    # A translation must mirror the exercise.
    (own / "zh-CN" / "count.yaml").write_text(OWN_ZH.replace("  exercise:", "  exercisex:"), encoding="utf-8")
    with pytest.raises(LessonError, match="unknown keys"):
        localize_lesson(load_lesson_file(own / "count.yaml"), "zh-CN", own)
    (own / "zh-CN" / "count.yaml").write_text(OWN_ZH.split("  exercise:")[0], encoding="utf-8")
    with pytest.raises(LessonError, match="the exercise is in one language only"):
        localize_lesson(load_lesson_file(own / "count.yaml"), "zh-CN", own)


def test_the_shipped_topology_exercise_over_http(client) -> None:
    scene = client.get("/api/lessons/load-balancing/steps/6").json()
    exercise = scene["exercise"]
    assert exercise["kind"] == "topology" and exercise["nodes"] == {"vent": "PUSH", "w1": "PULL", "w2": "PULL"}
    assert "inbox" not in str(exercise) and exercise["start"]["links"] == []
    url = "/api/lessons/load-balancing/steps/6/exercise"
    assert client.post(url, json={"topology": IN_ORDER}).json()["correct"]
    wrong = client.post(url, params={"lang": "zh-CN"}, json={"topology": SWAPPED}).json()
    assert not wrong["correct"] and len(wrong["problems"]) == 2 and "任务要求" in wrong["problems"][0]
    assert client.post(url, json={"answer": "w1"}).status_code == 422
    assert client.post("/api/lessons/load-balancing/steps/5/exercise", json={"answer": "x"}).status_code == 409
    assert client.post("/api/lessons/load-balancing/steps/60/exercise", json={"answer": "x"}).status_code == 404


@pytest.mark.parametrize(("lang", "words"), [
    ("en", ["Exercise:", "The nodes it needs: vent (PUSH), w1 (PULL), w2 (PULL)",
            "w1 reads task 1, task 3, task 5; w2 reads task 2, task 4, task 6; no message is dropped"]),
    ("zh-CN", ["练习：", "需要的节点：vent (PUSH), w1 (PULL), w2 (PULL)",
               "w1 读到 task 1, task 3, task 5；w2 读到 task 2, task 4, task 6；没有消息被丢弃"]),
])
def test_the_handout_sets_the_exercise_and_keys_its_answer(client, lang: str, words: list[str]) -> None:
    page = client.get("/api/lessons/load-balancing/illustrated", params={"lang": lang}).text
    for w in words:
        assert w in page, w
    key = page[page.index('<section id="answers"'):]
    assert words[2] in key and words[0] not in key  # (the task in the lesson, what it wants in the key)
    typed = client.get("/api/lessons/null-handshake/illustrated", params={"lang": lang}).text
    assert "<strong>27</strong>" in typed[typed.index('<section id="answers"'):]
