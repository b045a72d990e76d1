"""The lesson routes: list, one lesson, one played step, answers; and the class routes' REST side."""

from __future__ import annotations

from zmtplab.lessons import load_lessons


def test_list_names_every_lesson_with_its_step_count(client):
    res = client.get("/api/lessons")
    assert res.status_code == 200
    lessons = res.json()["lessons"]
    shipped = load_lessons()
    assert [entry["id"] for entry in lessons] == list(shipped)
    for entry in lessons:
        assert set(entry) == {"id", "title", "summary", "level", "step_count"}
        assert entry["step_count"] == len(shipped[entry["id"]].steps) >= 3
        assert entry["title"] and entry["summary"]


def test_one_lesson_with_its_steps(client):
    res = client.get("/api/lessons/framing")
    assert res.status_code == 200
    lesson = res.json()
    assert lesson["id"] == "framing" and lesson["step_count"] == len(lesson["steps"])
    step = lesson["steps"][1]
    assert step["number"] == 2
    assert step["question"] == {"prompt": "Which byte says this frame is LONG? Click it.", "kind": "field",
                                "choices": None}
    assert "answer" not in str(step["question"])  # the answer stays on the server
    assert step["narration_tree"][0]["type"] == "p"
    assert "LONG" in step["narration"]
    refs = lesson["references"]
    assert refs[0]["href"].startswith("https://rfc.zeromq.org/")
    assert all(r["href"] is None for r in refs if "rfc.zeromq.org" not in r["url"])  # not linked


def test_a_step_scene(client):
    res = client.get("/api/lessons/framing/steps/2")
    assert res.status_code == 200
    scene = res.json()
    assert scene["lesson"] == "framing" and scene["number"] == 2
    assert scene["source"]["type"] == "session"
    element = scene["events"][scene["element"]]
    assert element["kind"] == "frame" and element["long"] is True and element["size"] == 256
    # The question asks which octet says LONG: the flags are neither highlighted nor selected (issue 32.4).
    assert [h["name"] for h in scene["highlights"]] == ["size"]
    assert element["fields"][scene["field"]]["name"] == "size"
    assert scene["question"]["kind"] == "field"
    assert scene["narration_tree"]
    for ev in scene["events"]:
        assert {"conn", "dir", "offset", "length", "kind", "fields", "t", "seq"} <= set(ev)
    assert [w["length"] for w in scene["writes"] if w["dir"] == "c2s"][:3] == [10, 1, 53]
    capture = client.get("/api/lessons/greeting/steps/9").json()
    assert capture["source"] == {"type": "capture", "file": "push_pull.pcapng", "conn": "0"}
    assert capture["events"][capture["element"]]["packets"]


def test_answers(client):
    url = "/api/lessons/framing/steps/2/answer"
    flags = client.get("/api/lessons/framing/steps/2").json()
    element = flags["element"]
    field = next(i for i, f in enumerate(flags["events"][element]["fields"]) if f["name"] == "flags")
    offset = flags["events"][element]["offset"]
    right = client.post(url, json={"index": element, "field": field}).json()
    assert right["correct"] is True and right["explain"] and right["fields"] == [field]
    assert client.post(url, json={"index": element, "offset": offset}).json()["correct"] is True  # a hex click
    wrong = client.post(url, json={"index": element, "offset": offset + 1}).json()
    hint = "Not the size itself, but what tells the reader how to read the size."
    assert wrong == {"correct": False, "message": hint, "explain": [], "fields": []}
    assert client.post(url, json={"index": element - 1, "field": 0}).json()["correct"] is False
    assert client.post("/api/lessons/framing/steps/3/answer", json={"choice": "255"}).json()["correct"] is True
    assert client.post("/api/lessons/framing/steps/3/answer", json={"choice": " 255 "}).json()["correct"] is True
    assert client.post("/api/lessons/framing/steps/3/answer", json={"choice": "256"}).json()["correct"] is False
    byte = client.get("/api/lessons/greeting/steps/5").json()  # "click the octet that holds the minor version"
    assert client.post("/api/lessons/greeting/steps/5/answer", json={"index": byte["element"], "offset": 11}).json()[
        "correct"]
    minor = next(i for i, f in enumerate(byte["events"][byte["element"]]["fields"]) if f["name"] == "version-minor")
    assert client.post("/api/lessons/greeting/steps/5/answer", json={"index": byte["element"], "field": minor}).json()[
        "correct"]  # a 1-octet field is that byte


def test_errors(client):
    assert client.get("/api/lessons/nope").status_code == 404
    assert client.get("/api/lessons/nope").json() == {"detail": "no lesson 'nope'"}
    assert client.get("/api/lessons/greeting/steps/0").status_code == 422
    res = client.get("/api/lessons/greeting/steps/99")
    assert res.status_code == 404 and "steps 1 to 9" in res.json()["detail"]
    assert client.get("/api/lessons/..%2Fetc/steps/1").status_code in (404, 422)
    assert client.post("/api/lessons/greeting/steps/1/answer", json={"choice": "x"}).status_code == 409
    assert client.post("/api/lessons/framing/steps/3/answer", json={"choise": "x"}).status_code == 422
    assert client.post("/api/lessons/framing/steps/3/answer", json={"index": -1}).status_code == 422


def test_class_routes(client):
    made = client.post("/api/classes")
    assert made.status_code == 201
    body = made.json()
    code = body["code"]
    assert len(code) == 6 and set(code) <= set("ABCDEFGHJKMNPQRSTUVWXYZ23456789")
    assert body["join_url"] == f"/lessons.html?join={code}"
    assert len(body["teacher_token"]) >= 24
    info = client.get(f"/api/classes/{code.lower()}")
    assert info.status_code == 200
    assert info.json() == {"code": code, "students": 0, "following": 0, "teacher": False, "lesson": None,
                           "step": None}
    assert client.get("/api/classes/ZZZZZZ").status_code == 404
    second = client.post("/api/classes").json()
    assert second["code"] != code and second["teacher_token"] != body["teacher_token"]


def test_the_lessons_page_is_served_and_linked(client):
    page = client.get("/lessons.html")
    assert page.status_code == 200
    assert "js/main-lessons.js" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    for other in ("/index.html", "/capture.html"):
        assert 'href="lessons.html"' in client.get(other).text
