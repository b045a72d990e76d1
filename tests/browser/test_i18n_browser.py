"""Issue 21 in Chromium: the playground, the capture viewer and a lesson end to end in Simplified Chinese and
in English (labels, a field's explanation after a click, an expert text, a lesson question answered), the
header's switch changing a page in place (the session and the selection stay), and the Chinese layouts at
1280x720, 1500x950 and in large-text mode without clipped labels in the octet table, the details tree and
the lesson panel. Screenshots go to test-artifacts/i18n/."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = pytest.mark.browser

CJK = re.compile(r"[\u4e00-\u9fff]")

# What each language says where the tests look (the catalogs' words, and the server's notes).
WORDS = {
    "zh-CN": {"nav": "演练场", "start": "开始会话", "greeting": "问候语", "rule": "ABNF 规则", "details": "详细信息",
              "check": "检查我的答案", "elements": "个元素", "expert": "专家信息", "lessons": "全部课程"},
    "en": {"nav": "Playground", "start": "Start session", "greeting": "Greeting", "rule": "ABNF rule",
           "details": "Details", "check": "Check my answer", "elements": "elements", "expert": "Expert info",
           "lessons": "All lessons"},
}

# Every label of these containers whose box clips what it holds (overflow hidden or an ellipsis, or a
# single line that runs past its box) or that runs out of its panel sideways.
CLIPPED_JS = """(selectors) => {
  const out = [];
  for (const sel of selectors) {
    const root = document.querySelector(sel);
    if (!root || !root.offsetParent) continue;
    const edge = root.getBoundingClientRect();
    for (const el of root.querySelectorAll('*')) {
      if (!el.offsetParent || !el.textContent.trim() || el.closest('pre, code, .hex-lines, .narration')) continue;
      const shut = el.closest('details:not([open])');
      if (shut && !el.closest('summary')) continue; // (a closed box's contents are not drawn)
      const cs = getComputedStyle(el);
      const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      if (!own) continue;
      const clips = cs.overflowX !== 'visible' || cs.textOverflow === 'ellipsis';
      const box = el.getBoundingClientRect();
      if (clips && el.scrollWidth > el.clientWidth + 1 && cs.overflowX !== 'auto' && cs.overflowX !== 'scroll')
        out.push(`${sel}: "${el.textContent.trim().slice(0, 40)}" clipped (${el.scrollWidth} > ${el.clientWidth})`);
      else if (box.width > 0 && box.right > edge.right + 1 && getComputedStyle(root).overflowX === 'visible')
        out.push(`${sel}: "${el.textContent.trim().slice(0, 40)}" runs out of its panel`);
    }
  }
  return out;
}"""


def page_text(page: Any) -> str:
    """What the page shows, but the language switch's own names (中文 is Chinese on every page)."""
    return page.evaluate("() => document.body.innerText.replace('中文', '')")


# The greeting's first and last signature octets as the octet table names them: all ten are the signature.
TABLE_NAMES = {"signature": {"en": "signature: %xFF", "zh-CN": "签名\uff1a%xFF"},
               "signature-end": {"en": "signature: %x7F", "zh-CN": "签名\uff1a%x7F"}}


def field_box(page: Any, field: str) -> Any:
    """The octet table's first box of field `field` (the names row says which field a box holds, by the name the
    table gives it in the page's language)."""
    lang = page.evaluate("() => document.documentElement.lang")
    name = TABLE_NAMES.get(field, {}).get(lang, field)
    page.wait_for_function("(n) => [...document.querySelectorAll('#octets .oct-name')]"
                           ".some((td) => td.textContent === n)", arg=name)
    index = page.evaluate("(n) => [...document.querySelectorAll('#octets .oct-name')]"
                          ".find((td) => td.textContent === n)?.dataset.field", name)
    assert index is not None, f"no field {name} in the octet table"
    return page.locator(f"#octets .oct-box[data-field='{index}']").first


def select_row(page: Any, label_start: str) -> None:
    """Clicks the first sequence row whose label starts with `label_start`."""
    label = page.locator(f".seq-label:text-matches('^{label_start}')")
    page.locator("#sequence .seq-row", has=label).first.click()


def explanation(page: Any) -> str:
    page.wait_for_selector("#explain .explain-note")
    return page.locator("#explain .panel-body").inner_text()


@pytest.mark.parametrize("lang", ["zh-CN", "en"])
def test_playground_session_in_each_language(page, live_server, artifacts, lang):
    words = WORDS[lang]
    shots = artifacts("i18n")
    page.goto(f"{live_server.base}/index.html?lang={lang}")
    page.wait_for_selector(f"html[lang='{lang}']", state="attached")  # (set once the catalog is in)
    page.wait_for_selector(f".nav a[aria-current='page']:text-is('{words['nav']}')")
    assert page.locator("#lang-switch").input_value() == lang
    # PUSH against PUSH: 23/ZMTP's table refuses the pair, so the session has an expert text.
    for side in ("server", "client"):
        page.locator(f"fieldset.peer-{side} select").first.select_option("PUSH")
    page.check("input[name='autoplay']")
    page.click(f"button:text-is('{words['start']}')")
    page.wait_for_selector("#expert .expert-item")
    expert = page.locator("#expert .expert-item .expert-msg").first.inner_text()
    count = page.locator("#sequence .seq-count").inner_text()
    assert words["elements"] in count, count
    select_row(page, words["greeting"])
    field_box(page, "signature").click()
    text = explanation(page)
    note = page.locator("#explain .explain-note").inner_text()
    assert words["rule"] in text, text
    assert page.locator("#tree .panel-head h2").inner_text() == words["details"]
    if lang == "zh-CN":
        assert CJK.search(note), f"the signature's note is not in Chinese: {note}"
        assert CJK.search(expert), f"the expert text is not in Chinese: {expert}"
        page.screenshot(path=str(shots / "playground-zh-CN.png"))
    else:
        assert not CJK.search(page_text(page)), "Chinese on the English page"
        assert "PUSH" in expert, expert


def test_switch_changes_the_running_session_in_place(page, live_server):
    page.goto(f"{live_server.base}/index.html?lang=en")
    page.check("input[name='autoplay']")
    page.click("button:text-is('Start session')")
    page.wait_for_selector("#sequence .seq-row:not(.loading)")
    session = page.locator("#session-id").inner_text()
    select_row(page, "Greeting")
    field_box(page, "signature").click()
    page.evaluate("() => { window.__kept = true; }")  # gone if the page reloads
    page.select_option("#lang-switch", "zh-CN")
    page.wait_for_selector(".nav a[aria-current='page']:text-is('演练场')")
    assert page.evaluate("() => window.__kept === true"), "the switch reloaded the page"
    assert page.locator("#session-id").inner_text() == session.replace("Session", "会话")
    # The note comes again from the server, in Chinese (the socket was opened again in the new language).
    page.wait_for_function("() => /[\u4e00-\u9fff]/"
                           ".test(document.querySelector('#explain .explain-note')?.textContent)")
    assert page.locator("#explain .explain-name").inner_text().strip() == "signature", "the selected field was lost"
    assert "ABNF 规则" in page.locator("#explain .panel-body").inner_text()
    assert page.locator("#sequence .seq-row .seq-label:text-matches('^问候语')").count() >= 1
    assert page.locator("button:text-is('开始会话')").count() == 1
    assert page.evaluate("() => localStorage.getItem('zmtplab.lang')") == "zh-CN"
    page.goto(f"{live_server.base}/corpus.html")  # remembered: another page opens in Chinese
    page.wait_for_selector(".nav a[aria-current='page']:text-is('语料库')")


@pytest.mark.parametrize("lang", ["zh-CN", "en"])
def test_capture_viewer_in_each_language(page, live_server, artifacts, sample, lang):
    page.goto(f"{live_server.base}/capture.html?lang={lang}")
    page.wait_for_selector(f"h1:text-is('{'抓包查看器' if lang == 'zh-CN' else 'Capture viewer'}')")
    page.set_input_files("#capture-file", str(sample("mismatch_push_push.pcapng")))
    page.wait_for_selector("#sequence .seq-row:not(.loading)", timeout=30_000)
    page.wait_for_selector("#expert .expert-item")
    expert = page.locator("#expert .expert-item .expert-msg").first.inner_text()
    heads = page.locator("table.connections thead th").all_inner_texts()
    select_row(page, WORDS[lang]["greeting"])
    page.wait_for_selector("#octets .oct-name")
    field_box(page, "signature").click()
    note = page.locator("#explain .explain-note").inner_text()
    if lang == "zh-CN":
        assert "客户端" in heads and "机制" in heads, heads
        assert CJK.search(note) and CJK.search(expert), (note, expert)
        page.screenshot(path=str(artifacts("i18n") / "capture-zh-CN.png"))
    else:
        assert "Client" in heads and "Mechanism" in heads, heads
        assert not CJK.search(note) and not CJK.search(expert), (note, expert)
        assert not CJK.search(page_text(page)), "Chinese on the English page"


@pytest.mark.parametrize(("lang", "shape"), [("zh-CN", "元素 1\u2013\\d+\uff08共 420,005 个\uff09"),
                                           ("en", "elements 1\u2013\\d+ of 420,005")])
def test_the_follow_stream_says_which_elements_it_shows_in_each_language(page, live_server, sample, lang, shape):
    # A connection longer than the hex view's window: its note counts the elements shown (it was English only).
    page.goto(f"{live_server.base}/capture.html?lang={lang}")
    page.set_input_files("#capture-file", str(sample("bulk.pcapng")))
    try:
        page.wait_for_selector("#sequence .seq-row:not(.loading)", timeout=30_000)
        page.locator("#sequence .seq-row").nth(2).click()
        page.wait_for_function("() => /420,005/.test(document.querySelector('#hex .panel-note')?.textContent || '')",
                               timeout=30_000)
        note = page.locator("#hex .panel-note").inner_text()
        assert re.fullmatch(shape, note), note
    finally:  # (the browser tests share one server and its per-address capture limit)
        for capture in page.request.get(f"{live_server.base}/api/corpus/captures").json()["captures"]:
            if capture["name"] == "bulk.pcapng":
                page.request.delete(f"{live_server.base}/api/captures/{capture['id']}")


@pytest.mark.parametrize("lang", ["zh-CN", "en"])
def test_lesson_question_answered_in_each_language(page, live_server, artifacts, lang):
    words = WORDS[lang]
    page.goto(f"{live_server.base}/lessons.html?lang={lang}&lesson=greeting&step=2")
    page.wait_for_selector(f"button:text-is('{words['check']}')")
    prompt = page.locator("#lesson-panel .question .prompt").inner_text()
    field_box(page, "signature-end").click()
    page.click(f"button:text-is('{words['check']}')")
    page.wait_for_selector("#lesson-panel .answer-result.right")
    verdict = page.locator("#lesson-panel .answer-result .verdict").inner_text()
    assert page.locator("#lesson-panel button:text-is('☰ " + words["lessons"] + "')").count() == 1
    if lang == "zh-CN":
        assert CJK.search(prompt) and CJK.search(verdict), (prompt, verdict)
        page.screenshot(path=str(artifacts("i18n") / "lesson-zh-CN.png"))
    else:
        assert not CJK.search(prompt + verdict), (prompt, verdict)
        assert not CJK.search(page_text(page)), "Chinese on the English page"


@pytest.mark.parametrize(("width", "height", "large"), [(1280, 720, False), (1500, 950, False), (1280, 720, True)])
def test_chinese_layouts_clip_no_label(browser, live_server, artifacts, width, height, large):
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        if large:
            page.add_init_script("localStorage.setItem('zmtplab.large', '1')")
        page.goto(f"{live_server.base}/lessons.html?lang=zh-CN&lesson=greeting&step=2")
        page.wait_for_selector("#lesson-panel .question .prompt")
        page.wait_for_selector("#octets .oct-name")
        field_box(page, "signature").click()
        page.wait_for_selector("#tree .tree-field.selected")
        assert page.evaluate("() => document.documentElement.classList.contains('large')") == large
        page.screenshot(path=str(artifacts("i18n") / f"lesson-zh-CN-{width}x{height}{'-large' if large else ''}.png"))
        clipped = page.evaluate(CLIPPED_JS, ["#octets .panel-body", "#tree .panel-body", "#lesson-panel"])
        assert clipped == [], "\n".join(clipped)
    finally:
        context.close()


def test_a_chinese_student_follows_an_english_teacher(browser, live_server, artifacts):
    """Presenter mode: the class follows the teacher's lesson, step and field, each student in their own language."""
    contexts = [browser.new_context(viewport={"width": 1500, "height": 950}) for _ in range(2)]
    try:
        teacher, student = (c.new_page() for c in contexts)
        teacher.goto(f"{live_server.base}/lessons.html?lang=en&lesson=greeting&step=1")
        teacher.wait_for_selector(".step-counter:text-is('Step 1 of 9')")
        teacher.click("#present-button")
        teacher.wait_for_selector(".conn-state:text-is('live')")
        code = teacher.text_content("#join-code").strip()
        student.goto(f"{live_server.base}/lessons.html?lang=zh-CN&join={code}")
        student.wait_for_selector("#follow-state:text-is('正在跟随教师')")
        student.wait_for_selector(".step-counter:text-is('第 1 步，共 9 步')")  # noqa: RUF001 (Chinese punctuation)
        teacher.wait_for_selector("#student-count:text-is('1 student · 1 following')")
        teacher.click("button:text-is('Next ▶')")
        student.wait_for_selector(".step-counter:text-is('第 2 步，共 9 步')")  # noqa: RUF001 (Chinese punctuation)
        field_box(teacher, "signature-end").click()  # the teacher focuses "%x7F" (the question's answer: no chip)
        student.wait_for_selector(".explain-name:text-is('signature-end')")
        title = student.locator("#lesson-panel .step-title").inner_text()
        note = student.locator("#explain .explain-note").inner_text()
        assert CJK.search(title) and CJK.search(note), (title, note)
        assert not CJK.search(teacher.locator("#lesson-panel .step-title").inner_text())
        student.screenshot(path=str(artifacts("i18n") / "student-zh-CN.png"))
    finally:
        for c in contexts:
            c.close()
