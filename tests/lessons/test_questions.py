"""Questions keep their answers to themselves (issue 32.4): a step that asks the student to click a field or an
octet neither selects nor highlights it, its hint and its narration (in every language) do not say where it is,
and once answered right the answer's fields come back to light up."""

from __future__ import annotations

import re

import pytest

from zmtplab.lessons.player import answer_fields, check_answer
from zmtplab.lessons.translations import localize_lesson


def click_questions(lessons, played):
    for lesson_id, scenes in played.items():
        for scene in scenes:
            q = scene.question
            if q is not None and q.answer.kind != "choice":
                yield lessons[lesson_id], scene


def test_there_are_click_questions(lessons, played):
    assert len(list(click_questions(lessons, played))) >= 12


def test_a_click_question_does_not_show_its_answer(lessons, played):
    for lesson, scene in click_questions(lessons, played):
        where = f"{lesson.id} step {scene.number}"
        answer = answer_fields(scene)
        assert answer, where
        assert scene.field not in answer, f"{where}: the answer is selected"
        lit = [h["field"] for h in scene.highlights]
        assert not set(lit) & set(answer), f"{where}: the answer is highlighted"
        public = scene.public()
        assert public["field"] not in answer and not {h["field"] for h in public["highlights"]} & set(answer)


def hint_gives_away(hint: str, scene) -> str | None:
    """What in `hint` names the answer: the answer field's name, or its offset in the element."""
    ev = scene.events[scene.element]
    for i in answer_fields(scene):
        f = ev["fields"][i]
        if f["name"] in hint:
            return f["name"]
        offset = f["offset"] - ev["offset"]
        for n in range(offset, offset + f["length"]):
            if re.search(rf"(?<![\d.]){n}(?![\d.])", hint):
                return str(n)
    return None


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_hint_does_not_state_the_answer(lessons, played, lang):
    for lesson, scene in click_questions(lessons, played):
        step = (localize_lesson(lesson, lang) if lang != "en" else lesson).steps[scene.number - 1]
        hint = step.question.hint or ""
        found = hint_gives_away(hint, scene)
        assert found is None, f"{lesson.id} step {scene.number} ({lang}): the hint {hint!r} says {found!r}"


# Where a narration says where to click: "offset 9", "offsets 10 and 11", "偏移量 9"; a message's "first frame".
OFFSETS = re.compile(r"(?:[Oo]ffsets?|偏移量)\s*(\d+)(?:\s*(?:and|to|和|到|至|-|\u2013)\s*(\d+))?")
ORDINALS = {1: ("first frame", "第一帧"), 2: ("second frame", "第二帧"), 3: ("third frame", "第三帧")}


def narration_gives_away(narration: str, scene) -> str | None:
    """What in a click question's narration says where its answer is: the answer's offset, or its frame."""
    ev = scene.events[scene.element]
    octets: set[int] = set()
    for i in answer_fields(scene):
        f = ev["fields"][i]
        octets |= set(range(f["offset"] - ev["offset"], f["offset"] - ev["offset"] + max(f["length"], 1)))
        frame = re.fullmatch(r"frame (\d+)", f["name"])
        if frame:
            n = int(frame[1])
            for said in (f"frame {n}", f"第 {n} 帧", *ORDINALS.get(n, ())):
                if said in narration:
                    return said
    for m in OFFSETS.finditer(narration):
        if octets & set(range(int(m[1]), int(m[2] or m[1]) + 1)):
            return m[0]
    return None


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_click_questions_narration_does_not_say_where_to_click(lessons, played, lang):
    for lesson, scene in click_questions(lessons, played):
        step = (localize_lesson(lesson, lang) if lang != "en" else lesson).steps[scene.number - 1]
        found = narration_gives_away(step.narration, scene)
        assert found is None, f"{lesson.id} step {scene.number} ({lang}): the narration says {found!r}"


def test_the_right_answer_lights_its_fields(lessons, played):
    for lesson, scene in click_questions(lessons, played):
        answer = answer_fields(scene)
        ev = scene.events[scene.element]
        given = ({"field": answer[0]} if scene.question.answer.kind == "field"
                 else {"offset": ev["offset"] + scene.question.answer.byte})
        result = check_answer(scene, {"index": scene.element, **given})
        assert result["correct"] and result["fields"] == answer, f"{lesson.id} step {scene.number}"
        wrong = next(i for i in range(len(scene.events[scene.element]["fields"])) if i not in answer)
        result = check_answer(scene, {"index": scene.element, "field": wrong})
        if not result["correct"]:  # (a byte question's field of several octets may hold the answer byte)
            assert result["fields"] == []


# A choice whose answer is a quantity or a phrase ("255", "2 s", "at the publisher"), not a name the step is about
# anyway (REQ, w1, World): the step's narration and its highlights' labels must leave it to the student.
def stated(answer: str, text: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(answer)}(?![\w.])", text.replace("*", "")) is not None


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_choice_question_is_not_answered_by_its_step(lessons, lang):
    asked = 0
    for lesson in lessons.values():
        told = localize_lesson(lesson, lang) if lang != "en" else lesson
        for number, step in enumerate(told.steps, 1):
            q = step.question
            if q is None or q.answer.choice is None:
                continue
            answer = q.answer.choice
            if not (answer[0].isdigit() or " " in answer or not answer.isascii()):
                continue
            asked += 1
            labels = " ".join(h.label or "" for h in step.highlight)
            where = f"{lesson.id} step {number} ({lang})"
            assert not stated(answer, step.narration), f"{where}: the narration says {answer!r}"
            assert not stated(answer, labels), f"{where}: a label says {answer!r}"
    assert asked >= 6


# How a lesson counts octets (issue 32.6): by offset from 0, "offset 9" and "偏移量 9", never "octet 9" beside
# "the 10th octet", nor "第 9 个字节" for what "第 10 个字节" also names.
ORDINAL = re.compile(r"\b[Oo]ctets? \d|\d+(st|nd|rd|th) octet|第 ?\d+(-\d+)? ?个?字节")


def lesson_texts(lesson):
    yield lesson.title
    yield lesson.summary
    for step in lesson.steps:
        yield step.narration
        if step.question is not None:
            yield from (t for t in (step.question.prompt, step.question.hint, step.question.explain) if t)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_octets_are_counted_by_offset(lessons, lang):
    for lesson in lessons.values():
        for text in lesson_texts(localize_lesson(lesson, lang) if lang != "en" else lesson):
            found = ORDINAL.search(text)
            assert found is None, f"{lesson.id} ({lang}): {found.group(0)!r} in {text[:120]!r}"
