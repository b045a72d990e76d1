"""Takes the README's screenshots: a real `zmtplab serve`, Debian's Chromium through Playwright.

    .venv/bin/python docs/screenshots.py            # writes docs/img/*.png
    .venv/bin/python docs/screenshots.py topology   # only the topology sessions' (docs/img/topology-*.png)
    .venv/bin/python docs/screenshots.py zh-CN      # only the Chinese lesson (docs/img/lessons-zh-CN.png)
    .venv/bin/python docs/screenshots.py handouts   # only the illustrated page and the projector view
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "img"
sys.path.insert(0, str(ROOT / "benchmarks"))

from serverkit import shut_down, start_server  # noqa: E402  (a real `zmtplab serve`, as the benchmarks start it)

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def main() -> int:
    """Starts the server, visits each main view, saves a PNG of each (`topology` or `zh-CN`: only those)."""
    server = start_server()
    base = server.url
    try:
        OUT.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 950})
            if sys.argv[1:] == ["topology"]:
                topology_shots(page, base)
                browser.close()
                return 0
            if sys.argv[1:] == ["zh-CN"]:
                chinese_shot(page, base)
                browser.close()
                return 0
            if sys.argv[1:] == ["handouts"]:
                handout_shots(browser, base)
                browser.close()
                return 0
            # Playground: a DEALER/ROUTER session played to its first message.
            page.goto(f"{base}/index.html")
            for side, kind in (("server", "ROUTER"), ("client", "DEALER")):
                page.locator(f"fieldset.peer-{side} label.field",
                             has=page.locator(".field-label:text-is('Socket')")).locator("select").select_option(kind)
            page.check("input[name='autoplay']")  # (new sessions wait at t = 0 otherwise)
            page.click("button:text-is('Start session')")
            page.wait_for_selector("#sequence .seq-row[data-index='3']", timeout=20000)
            page.locator(".composer select").first.select_option("client")  # a DEALER may send first
            page.fill("textarea[aria-label='Frame 1']", "Hello, class!")
            page.click("button:text-is('Send message')")
            page.wait_for_selector("#sequence .seq-row[data-index='5']", timeout=20000)
            page.click("#sequence .seq-row[data-index='3']")
            page.wait_for_timeout(400)
            page.screenshot(path=str(OUT / "playground.png"))
            # Capture viewer: dealer_router with the DEALER's READY selected.
            page.goto(f"{base}/capture.html")
            page.set_input_files("input[type=file]", str(ROOT / "captures" / "dealer_router.pcapng"))
            page.wait_for_selector("#sequence .seq-row[data-index='3']", timeout=30000)
            page.click("#sequence .seq-row[data-index='3']")
            page.wait_for_timeout(600)
            page.screenshot(path=str(OUT / "capture-viewer.png"))
            # Overview: the broker capture, the first request's path through the broker picked.
            page.goto(f"{base}/capture.html")
            page.set_input_files("input[type=file]", str(ROOT / "captures" / "broker.pcapng"))
            page.wait_for_selector("#sequence .seq-row[data-index='3']", timeout=30000)
            page.click("#view-overview")
            page.wait_for_selector("#overview .flow-row", timeout=30000)
            page.locator("#overview .flow-row").first.click()
            page.wait_for_timeout(400)
            page.screenshot(path=str(OUT / "capture-overview.png"))
            # Lessons: the greeting lesson at its padding step.
            page.goto(f"{base}/lessons.html?lesson=greeting&step=3")
            page.wait_for_timeout(2500)
            page.screenshot(path=str(OUT / "lessons.png"))
            topology_shots(page, base)
            chinese_shot(page, base)
            handout_shots(browser, base)
            browser.close()
    finally:
        shut_down(server)
    print(f"screenshots in {OUT}")
    return 0


def chinese_shot(page: Any, base: str) -> None:
    """The greeting lesson in Simplified Chinese (issue 21) at its step 2, the signature's last octet clicked
    and the question answered: the page's words, the narration, a field's note and the verdict in Chinese."""
    page.goto(f"{base}/lessons.html?lang=zh-CN&lesson=greeting&step=2")
    name = page.locator("#octets .oct-name:text-is('signature-end')")
    name.wait_for(timeout=20000)
    page.click(f"#octets .oct-box[data-field='{name.get_attribute('data-field')}']")
    page.click("button:text-is('检查我的答案')")
    page.wait_for_selector("#lesson-panel .answer-result.right", timeout=20000)
    page.wait_for_timeout(400)
    page.screenshot(path=str(OUT / "lessons-zh-CN.png"))


def handout_shots(browser: Any, base: str) -> None:
    """The illustrated page of dealer_router's connection (issue 23.1), opened from disk with scripts off at its
    first READY, and the projector view of a lesson at 1280x720 (issue 23.4)."""
    page = browser.new_page(viewport={"width": 1100, "height": 950}, java_script_enabled=False)
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "dealer_router.html"
        capture = ROOT / "captures" / "dealer_router.pcapng"
        subprocess.run([sys.executable, "-m", "zmtplab.cli", "illustrate", str(capture), "-o", str(html)], check=True)
        page.goto(html.as_uri() + "#e3")
        page.screenshot(path=str(OUT / "illustrated.png"))
    page.close()
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{base}/lessons.html?projector=1&lesson=broker&step=3")
    page.wait_for_selector("#sequence .seq-row", timeout=20000)
    page.wait_for_timeout(1500)
    page.screenshot(path=str(OUT / "projector.png"))
    page.evaluate("() => localStorage.removeItem('zmtplab.projector')")
    page.close()


def play_preset(page: Any, base: str, preset: str) -> None:
    """Opens the playground and plays `preset` from its menu at 16x."""
    page.goto(f"{base}/index.html")
    page.wait_for_selector(f"#preset-menu option[value='{preset}']", state="attached", timeout=20000)
    page.select_option("#preset-menu", preset)
    page.click("#start-preset")
    page.wait_for_selector("#topology:not([hidden]) .topo-node", timeout=20000)
    page.evaluate("""() => { const r = document.querySelector('#player input[type=range]');
      r.value = String(r.max); r.dispatchEvent(new Event('input')); r.dispatchEvent(new Event('change')); }""")


# Twelve nodes (the body of benchmarks/topology_sessions.py): 4 PUSH, 8 PULL, 16 links, opened from a share link.
TWELVE = {"mode": "simulated",
          "nodes": [*({"name": f"p{i}", "type": "PUSH"} for i in range(4)),
                    *({"name": f"q{i}", "type": "PULL"} for i in range(8))],
          "links": [{"connect": f"q{j}", "bind": f"p{i}"}
                    for i in range(4) for j in (2 * i, (2 * i + 1) % 8, (2 * i + 3) % 8, (2 * i + 5) % 8)]}


def topology_shots(page: Any, base: str) -> None:
    """Topology sessions (issue 19): the extended request-reply with a reply's path picked, PUB drops, and twelve
    nodes opened from a share link, a few messages sent from the composer."""
    play_preset(page, base, "extended-reqrep")
    page.wait_for_function("() => document.querySelector(\"#topology .topo-got-row[data-node='c2']\")"
                           ".dataset.count === '1'", timeout=30000)
    page.wait_for_timeout(1500)
    page.click("#player button:text-is('❚❚ Pause')")
    page.evaluate("""() => { document.querySelector("#topology .topo-got-row[data-node='c2'] .topo-msg").click();
      document.querySelector('#topology').scrollTop = 0; }""")
    page.wait_for_timeout(500)
    page.screenshot(path=str(OUT / "topology-broker.png"))
    play_preset(page, base, "pub-drops")
    page.wait_for_function("() => /dropped/.test(document.querySelector(\"#topology .topo-node[data-node='pub']\")"
                           ".textContent)", timeout=30000)
    page.click("#player button:text-is('❚❚ Pause')")
    page.wait_for_timeout(800)
    page.screenshot(path=str(OUT / "topology-drops.png"))
    link = base64.urlsafe_b64encode(json.dumps(TWELVE).encode()).decode().rstrip("=")
    page.goto(f"{base}/index.html#topology={link}")
    page.click("#start-topology", timeout=20000)
    page.wait_for_function("() => [...document.querySelectorAll('#topology .topo-edge')]"
                           ".filter((e) => e.getAttribute('data-conn')).length === 16", timeout=30000)
    page.evaluate("""() => { const r = document.querySelector('#player input[type=range]');
      r.value = String(r.max); r.dispatchEvent(new Event('input')); r.dispatchEvent(new Event('change')); }""")
    for i in range(8):
        page.locator("#composer select").first.select_option(f"p{i % 4}")
        page.fill("textarea[aria-label='Frame 1']", f"job {i + 1}")
        page.click("button:text-is('Send message')")
        page.wait_for_timeout(150)
    page.wait_for_timeout(2500)
    page.evaluate("""() => { [...document.querySelectorAll('#topology .topo-msg')].pop().click();
      document.querySelector('#topology').scrollTop = 0; }""")
    page.wait_for_timeout(500)
    page.screenshot(path=str(OUT / "topology-12-nodes.png"))


if __name__ == "__main__":
    sys.exit(main())
