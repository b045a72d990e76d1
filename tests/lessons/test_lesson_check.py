"""The lesson check: every step of every shipped lesson plays through the engine, every element a step
points at exists, every field it highlights exists in that element (with the stated value), and every
question's answer is the answer the checker accepts."""

from __future__ import annotations

import json

import pytest

from zmtplab.lessons import check_answer, load_lessons, markdown, play_lesson
from zmtplab.lessons.player import same_value

LESSON_IDS = sorted(load_lessons())

# The list of lessons (each at least 3 steps), by id.
REQUIRED = {
    "greeting": "the greeting byte by byte",
    "null-handshake": "the NULL handshake and READY metadata",
    "framing": "framing: short and long frames, MORE, multipart",
    "dealer-router": "DEALER/ROUTER identities and envelopes",
    "req-rep": "REQ/REP envelopes",
    "invalid-pair": "an invalid socket pair and ERROR",
    "versions": "version negotiation and downgrade to 2.0 and 1.0",
    "plain": "PLAIN authentication, success and failure",
    "heartbeats": "heartbeats with PING/PONG",
    "pubsub": "PUB/SUB subscriptions in 3.0 and 3.1",
    "curve": "the CURVE handshake in outline",
}


def test_every_required_lesson_is_there_with_three_steps_or_more(lessons):
    missing = sorted(set(REQUIRED) - set(lessons))
    assert not missing, f"missing lessons: {missing}"
    for lesson_id in REQUIRED:
        assert len(lessons[lesson_id].steps) >= 3, lesson_id


@pytest.mark.parametrize("lesson_id", LESSON_IDS)
def test_every_step_plays_and_every_highlight_exists(lesson_id, lessons, played):
    lesson = lessons[lesson_id]
    scenes = played[lesson_id]
    assert len(scenes) == len(lesson.steps)
    for step, scene in zip(lesson.steps, scenes, strict=True):
        where = f"{lesson_id} step {scene.number} ({step.title})"
        assert scene.events, f"{where}: nothing to show"
        for ev in scene.events:
            if ev["kind"] == "socket":  # a topology's socket decision, in words, with its rule
                assert {"node", "what", "rule", "text"} <= set(ev) and ev["text"], where
            elif ev["kind"] == "peer":  # a topology's application receive
                assert ev["what"] == "recv" and {"peer", "frames"} <= set(ev), where
            else:
                assert {"conn", "dir", "offset", "length", "kind"} <= set(ev), where
        for index in scene.decisions:
            assert scene.events[index]["kind"] == "socket", where
        if step.element is None:
            assert not step.highlight
            continue
        assert scene.element is not None and 0 <= scene.element < len(scene.events), where
        element = scene.events[scene.element]
        fields = element.get("fields") or []
        # Every highlight of the step is in the scene, but the answer of a click question (issue 32.4).
        shown = [hl["highlight"] for hl in scene.highlights]
        assert shown == sorted(shown) and set(shown) <= set(range(len(step.highlight))), where
        hidden = [n for n in range(len(step.highlight)) if n not in shown]
        assert not hidden or (step.question is not None and step.question.answer.kind != "choice"), where
        for hl in scene.highlights:
            spec = step.highlight[hl["highlight"]]
            field = fields[hl["field"]]
            assert field["name"] == spec.field, where
            if spec.value is not None:
                assert same_value(field["value"], spec.value), f"{where}: {spec.field} is {field['value']!r}"
            # The highlighted bytes lie inside the element.
            assert element["offset"] <= field["offset"]
            assert field["offset"] + field["length"] <= element["offset"] + element["length"], where
        if scene.highlights:
            assert scene.field == scene.highlights[0]["field"]


def _right_and_wrong(scene):
    """A submission the checker must accept, and one it must refuse."""
    q = scene.question
    answer = q.answer
    if answer.kind == "choice":
        wrong = next(c for c in q.choices if c != answer.choice)
        return {"choice": answer.choice}, {"choice": wrong}
    element = scene.events[scene.element]
    fields = element["fields"]
    if answer.kind == "field":
        right = {"index": scene.element, "field": scene.answer_fields[0]}
        other = next(i for i in range(len(fields)) if i not in scene.answer_fields)
        return right, {"index": scene.element, "field": other}
    offset = element["offset"] + answer.byte
    wrong_offset = offset + 1 if answer.byte + 1 < element["length"] else offset - 1
    return {"index": scene.element, "offset": offset}, {"index": scene.element, "offset": wrong_offset}


@pytest.mark.parametrize("lesson_id", LESSON_IDS)
def test_every_question_accepts_its_answer_and_refuses_another(lesson_id, played):
    for scene in played[lesson_id]:
        if scene.question is None:
            continue
        right, wrong = _right_and_wrong(scene)
        assert check_answer(scene, right)["correct"], f"{lesson_id} step {scene.number}: {right}"
        assert not check_answer(scene, wrong)["correct"], f"{lesson_id} step {scene.number}: {wrong}"
        if scene.question.answer.kind != "choice":
            # The right click on another element is not the answer.
            other = next(i for i in range(len(scene.events)) if i != scene.element)
            assert not check_answer(scene, {**right, "index": other})["correct"]


def test_lessons_ask_questions_of_every_kind(played):
    kinds = {s.question.answer.kind for scenes in played.values() for s in scenes if s.question}
    assert kinds == {"field", "byte", "choice"}


@pytest.mark.parametrize("lesson_id", LESSON_IDS)
def test_narrations_are_safe_and_link_only_to_the_specs(lesson_id, lessons):
    lesson = lessons[lesson_id]
    texts = [s.narration for s in lesson.steps] + [s.question.explain for s in lesson.steps
                                                    if s.question and s.question.explain]
    for text in texts:
        tree = markdown.parse(text)
        assert tree
        for node in _walk(tree):
            if node.get("t") == "link":
                assert markdown.allowed_link(node["href"]), node["href"]


def _walk(nodes):
    for n in nodes:
        yield n
        yield from _walk(n.get("children", []))
        for item in n.get("items", []):
            yield from _walk(item)


def test_playing_is_deterministic(lessons, played):
    for lesson_id in ("dealer-router", "heartbeats", "versions", "broker", "high-water-marks"):
        again = play_lesson(lessons[lesson_id])
        first = [json.dumps(s.public(), sort_keys=True) for s in played[lesson_id]]
        assert [json.dumps(s.public(), sort_keys=True) for s in again] == first


# ---------------------------------------------------------------- facts the lessons teach


def _scene(played, lesson_id, title_start):
    return next(s for s in played[lesson_id] if s.title.startswith(title_start))


def test_the_greeting_goes_out_in_10_1_53_and_its_padding_is_identity_length_plus_one(played):
    scene = _scene(played, "greeting", "Why libzmq")
    for direction in ("c2s", "s2c"):
        assert [w["length"] for w in scene.writes if w["dir"] == direction][:3] == [10, 1, 53]
    ident = _scene(played, "greeting", "The padding with an identity")
    greeting = ident.events[ident.element]
    assert greeting["hex"][:20] == "ff00000000000000097f"  # identity client-1: 8 octets + 1


def test_the_dealer_router_lesson_shows_the_spec_worked_example_byte_for_byte(played):
    dealer = _scene(played, "dealer-router", "The worked example: the DEALER")
    ready = dealer.events[dealer.element]
    spec_dealer = (b"\x04\x29\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER\x08Identity\x00\x00\x00\x00")
    assert bytes.fromhex(ready["hex"]) == spec_dealer
    router = _scene(played, "dealer-router", "The worked example: the ROUTER")
    ready = router.events[router.element]
    assert bytes.fromhex(ready["hex"]) == b"\x04\x1c\x05READY\x0bSocket-Type\x00\x00\x00\x06ROUTER"
    greetings = [ev for ev in router.events if ev["kind"] == "greeting"]
    spec_greeting = b"\xff" + bytes(8) + b"\x7f\x03\x00" + b"NULL" + bytes(16) + b"\x00" + bytes(31)
    assert [bytes.fromhex(g["hex"]) for g in greetings] == [spec_greeting, spec_greeting]
    assert not any(e.get("error") for e in router.log)  # the strict engine peers accepted every byte


def test_the_framing_lesson_sends_the_article_multipart_message(played):
    scene = _scene(played, "framing", "One message")
    message = scene.events[scene.element]
    assert message["frames"] == [("a" * 256).encode().hex(), b"My Message".hex()]
    long_scene = _scene(played, "framing", "A long frame: 256")
    long_frame = long_scene.events[long_scene.element]
    assert long_frame["hex"][:18] == "030000000000000100"  # MORE|LONG, size 256 in 8 octets
