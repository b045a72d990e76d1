"""Lessons in Simplified Chinese: the routes honour `?lang=` and Accept-Language, English stays as it was."""
# ruff: noqa: RUF001  (the Chinese texts use full-width punctuation, as Chinese does)

from __future__ import annotations

import re

HAN = re.compile(r"[\u4e00-\u9fff]")


def test_the_list_in_chinese_by_query_and_by_header(client):
    english = client.get("/api/lessons").json()["lessons"]
    by_query = client.get("/api/lessons?lang=zh-CN").json()["lessons"]
    by_header = client.get("/api/lessons", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"}).json()["lessons"]
    assert by_query == by_header
    assert [e["id"] for e in by_query] == [e["id"] for e in english]
    greeting = next(e for e in by_query if e["id"] == "greeting")
    assert greeting["title"] == "问候语，逐字节解读" and HAN.search(greeting["summary"])
    assert next(e for e in english if e["id"] == "greeting")["title"] == "The greeting, byte by byte"
    # ?lang= wins over the header, and an English header or none keeps English
    assert client.get("/api/lessons?lang=en", headers={"Accept-Language": "zh-CN"}).json()["lessons"] == english
    assert client.get("/api/lessons", headers={"Accept-Language": "en-GB,zh;q=0.5"}).json()["lessons"] == english


def test_one_lesson_in_chinese_keeps_its_structure(client):
    en = client.get("/api/lessons/framing").json()
    zh = client.get("/api/lessons/framing?lang=zh-CN").json()
    assert len(zh["steps"]) == len(en["steps"])
    for ez, ee in zip(zh["steps"], en["steps"], strict=True):
        assert ez["number"] == ee["number"] and ez["source"] == ee["source"]
        assert HAN.search(ez["title"]) and HAN.search(ez["narration"])
        assert (ez["question"] is None) == (ee["question"] is None)
        if ez["question"]:
            assert ez["question"]["kind"] == ee["question"]["kind"] and HAN.search(ez["question"]["prompt"])
    assert zh["steps"][1]["question"]["prompt"] == "哪个字节表明这个帧是 LONG？请点击它。"
    # the ABNF block of the narration is the spec's, untranslated
    code = [n for n in zh["steps"][0]["narration_tree"] if n["type"] == "pre"]
    assert code and "message-last = ( %x00 short-size | %x02 long-size ) message-body" in code[0]["text"]


def test_a_scene_in_chinese_notes_labels_log(client):
    en = client.get("/api/lessons/framing/steps/2").json()
    zh = client.get("/api/lessons/framing/steps/2?lang=zh-CN").json()
    assert zh["events"][zh["element"]]["offset"] == en["events"][en["element"]]["offset"]  # the same scene
    # (the step asks which octet says LONG: it selects and highlights the size, not the flags)
    flags_zh = next(f for f in zh["events"][zh["element"]]["fields"] if f["name"] == "flags")
    flags_en = next(f for f in en["events"][en["element"]]["fields"] if f["name"] == "flags")
    assert flags_en["note"] == "Flags of this message frame: bit 0 MORE, bit 1 LONG, bit 2 COMMAND; bits 7-3 reserved."
    assert flags_zh["note"] == "此消息帧的标志：位 0 为 MORE，位 1 为 LONG，位 2 为 COMMAND；位 7-3 保留。"
    assert {k: v for k, v in flags_zh.items() if k != "note"} == {k: v for k, v in flags_en.items() if k != "note"}
    assert [h["label"] for h in zh["highlights"]] == ["size（8 字节）"]
    assert zh["title"] == "一个长帧：256 个 'a'" and zh["question"]["prompt"].startswith("哪个字节")
    assert any(e["text"].startswith("握手完成：ZMTP 3.1 NULL，对方是 ") for e in zh["log"])
    assert any(e["text"].startswith("handshake complete: ZMTP 3.1 NULL, peer is ") for e in en["log"])
    assert HAN.search(zh["narration_tree"][0]["children"][0]["v"])


def test_answers_in_chinese(client):
    url = "/api/lessons/framing/steps/3/answer"
    right = client.post(url + "?lang=zh-CN", json={"choice": "255"}).json()
    assert right["correct"] is True and right["message"] == "正确。"
    assert HAN.search(right["explain"][0]["children"][0]["v"])
    # a choice given in Chinese words
    url = "/api/lessons/invalid-pair/steps/4/answer"
    assert client.post(url + "?lang=zh-CN", json={"choice": "不会，直接关闭"}).json()["correct"] is True
    assert client.post(url, json={"choice": "No, it just closes"}).json() == {
        "correct": True, "message": "Correct.", "fields": [],
        "explain": client.post(url, json={"choice": "No, it just closes"}).json()["explain"]}
    wrong = client.post(url + "?lang=zh-CN", json={"choice": "会，在关闭之前"}).json()
    assert wrong == {"correct": False, "message": "不太对，再看一看。", "explain": [], "fields": []}
    step = client.get("/api/lessons/framing/steps/2?lang=zh-CN").json()
    hint = client.post("/api/lessons/framing/steps/2/answer?lang=zh-CN",
                       json={"index": step["element"], "offset": step["events"][step["element"]]["offset"] + 1}).json()
    assert hint["message"] == "不是大小本身，而是告诉读取方如何读取大小的那个字节。"


def test_every_text_of_every_scene_is_in_the_catalog(played):
    """Field notes, expert texts, socket decisions and log lines of every step of every lesson have a Chinese text."""
    from zmtplab import i18n

    texts = set()
    for scenes in played.values():
        for scene in scenes:
            public = scene.public()
            for ev in public["events"]:
                texts.update(t for t in [ev.get("text"), *(f.get("note") for f in ev.get("fields") or [])] if t)
            texts.update(e["text"] for e in public["log"] if e.get("text"))
    assert len(texts) > 150
    assert sorted(t for t in texts if i18n.recognise(t) is None) == []
    assert sorted(t for t in texts if not HAN.search(i18n.translate(t, "zh-CN"))) == []


def test_a_teachers_step_and_selection_mean_the_same_in_both_languages(lessons, played):
    """Presenter mode relays the lesson, step number, selection and highlights as indexes: a student reading in
    Chinese shows the same element, field and highlighted fields as the teacher's English (and the reverse)."""
    from zmtplab.lessons.translations import localize_lesson, localize_scene

    for lesson_id, scenes in played.items():
        zh = localize_lesson(lessons[lesson_id], "zh-CN")
        for scene, step in zip(scenes, zh.steps, strict=True):
            en, cn = scene.public(), localize_scene(scene.public(), step, "zh-CN")
            assert (cn["element"], cn["field"], len(cn["events"])) == (en["element"], en["field"], len(en["events"]))
            assert [(h["field"], h["name"], h["offset"]) for h in cn["highlights"]] == \
                [(h["field"], h["name"], h["offset"]) for h in en["highlights"]]
            assert [(e["kind"], e.get("offset"), e.get("length")) for e in cn["events"]] == \
                [(e["kind"], e.get("offset"), e.get("length")) for e in en["events"]]
