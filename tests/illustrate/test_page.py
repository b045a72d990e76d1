"""The illustrated page: what it holds (every element, field, rule), its anchors, that wire bytes stay text,
and `zmtplab illustrate` on captures, session exports and things that are neither."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from synthetic import CLIENT, SERVER, capture
from zmtplab.cli import main
from zmtplab.engine.framing import encode_frame, encode_message
from zmtplab.engine.greeting import encode_greeting
from zmtplab.illustrate import from_capture, from_session, render
from zmtplab.illustrate.grammar import spec_for

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
HOSTILE = b'<script>alert(1)</script></pre><img src=x onerror=alert(2)>"\'&amp;'


class Tags(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


def ready(socket_type: bytes) -> bytes:
    body = b"\x05READY\x0bSocket-Type" + len(socket_type).to_bytes(4, "big") + socket_type
    return encode_frame(body, command=True)


def hostile_capture(path: Path) -> Path:
    """A PUSH/PULL connection whose message carries markup in its body and a frame too long to show whole."""
    def build(writer) -> None:
        conn = writer.add_connection(CLIENT, SERVER)
        conn.handshake(1.0)
        conn.send("c2s", encode_greeting(), 1.1)
        conn.send("s2c", encode_greeting(), 1.1)
        conn.send("c2s", ready(b"PUSH"), 1.2)
        conn.send("s2c", ready(b"PULL"), 1.2)
        conn.send("c2s", encode_message([HOSTILE, bytes(range(256)) * 4]), 1.3)
        conn.close(2.0)
    path.write_bytes(capture(build))
    return path


def test_every_element_and_field_has_its_anchor_and_rule(tmp_path: Path) -> None:
    doc = from_capture(CAPTURES / "dealer_router.pcapng")
    html = render(doc)
    tags = parse(html)
    ids = [a["id"] for _, a in tags.tags if a.get("id")]
    shown = doc.sections[0].shown()
    assert [i for i in ids if re.fullmatch(r"e\d+", i)] == [f"e{n}" for n in range(1, len(shown) + 1)]
    assert len(ids) == len(set(ids)), "anchors are unique"
    # READY of the ROUTER (element 3): each field its own row, a repeated name numbered.
    ready_fields = {"e3.flags", "e3.size", "e3.command-name", "e3.name-size", "e3.name-size-2", "e3.property-value-2"}
    assert ready_fields <= set(ids)
    hrefs = {a["href"][1:] for t, a in tags.tags if t == "a" and (a.get("href") or "").startswith("#")}
    assert hrefs <= set(ids), "every link inside the page lands on an anchor"
    assert "e3.size" in hrefs and "e1" in hrefs
    # The rule behind a field, from the spec this connection speaks (3.1: 37/ZMTP).
    assert "short-size = OCTET" in html and "37/ZMTP, Formal Grammar" in html
    # No script, nothing fetched: the page stands alone.
    assert not [t for t, _ in tags.tags if t in ("script", "link", "img", "iframe", "object")]
    assert "request 1" in "".join(tags.text)


def test_wire_bytes_stay_text(tmp_path: Path) -> None:
    doc = from_capture(hostile_capture(tmp_path / "hostile.pcapng"))
    html = render(doc)
    tags = parse(html)
    assert not [t for t, _ in tags.tags if t in ("script", "img")]
    assert all(not k.startswith("on") for _, attrs in tags.tags for k in attrs)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    text = "".join(tags.text)
    assert "<script>alert(1)</script></pre><img src=x onerror=alert(2)>" in text  # shown, as text
    # A 1024-octet body: one row of its own in the octet table, its first octets shown, the dump cut at 256.
    assert "body: 1024 octets, the first 8 shown" in text
    assert "… 777 more octets" in text  # 9 header octets (a long frame) + 1024 of body - 256 shown


def test_spec_for_follows_the_pages_order() -> None:
    assert spec_for("short-size", version="3.1").spec == "37"
    assert spec_for("short-size", version="3.0").spec == "23"
    assert spec_for("username", version="3.1", mechanism="PLAIN").spec == "24"
    flags = spec_for("flags", version="3.0")
    assert (flags.definition, flags.section, flags.url) == (None, "Framing", "https://rfc.zeromq.org/spec/23/#framing")
    assert spec_for("more", version="1.0").spec == "13"


def test_cli_writes_the_page_and_the_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "page.html"
    assert main(["illustrate", str(CAPTURES / "broker.pcapng"), "--conn", "1", "--from", "2", "--to", "5",
                 "-o", str(out)]) == 0
    doc_html = out.read_text()
    assert (tmp_path / "page.py").read_text().startswith("#!/usr/bin/env python3")
    assert "Reproduce it with pyzmq" in doc_html and "page.py" in doc_html
    tags = parse(doc_html)
    assert [a["id"] for _, a in tags.tags if re.fullmatch(r"e\d+", a.get("id") or "")] == ["e1", "e2", "e3", "e4"]
    assert [a["id"] for _, a in tags.tags if re.fullmatch(r"c\w+", a.get("id") or "")] == ["c1"]
    assert "wrote" in capsys.readouterr().err


def test_cli_refuses_what_is_not_a_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, data in (("x.pcapng", b"not a capture at all"), ("x.json", b'{"no": "events"}'), ("y.json", b"{nope")):
        path = tmp_path / name
        path.write_bytes(data)
        assert main(["illustrate", str(path), "-o", str(tmp_path / "out.html")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("zmtplab illustrate: ") and err.count("\n") == 1
    assert not (tmp_path / "out.html").exists()
    assert main(["illustrate", str(CAPTURES / "pair.pcapng"), "--conn", "9", "-o", str(tmp_path / "o.html")]) == 2
    assert "no ZMTP connection 9" in capsys.readouterr().err


def test_a_session_export_is_illustrated(tmp_path: Path) -> None:
    from zmtplab.capture.dissect import dissect_capture

    events = [dict(e, t=i / 10, seq=i) for i, e in enumerate(dissect_capture(str(CAPTURES / "req_rep.pcapng")))]
    export = {"id": "abc", "mode": "simulated", "config": {"server": {"type": "REP"}, "client": {"type": "REQ"}},
              "events": events}
    doc = from_session(export, name="my session")
    assert (doc.sections[0].client, doc.sections[0].server) == ("client (REQ)", "server (REP)")
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    assert main(["illustrate", str(path), "-o", str(tmp_path / "s.html"), "--no-script"]) == 0
    html = (tmp_path / "s.html").read_text()
    assert "client (REQ)" in html and "t = 0.4 s" in html and "Reproduce it" not in html


def test_the_page_in_chinese(tmp_path: Path) -> None:
    """`--lang zh-CN`: the page's words, the fields' notes and the expert texts in Chinese; wire names as they are."""
    out = tmp_path / "zh.html"
    assert main(["illustrate", str(CAPTURES / "mismatch_push_push.pcapng"), "--lang", "zh-CN", "-o", str(out)]) == 0
    html = out.read_text()
    assert '<html lang="zh-CN">' in html
    assert "ZMTP 图解" in html and ">目录<" in html and "用 pyzmq 重现" in html
    assert "签名的第一个字节：%xFF。" in html  # noqa: RUF001 (a field's note, from the catalogs; Chinese punctuation)
    assert "First octet of the signature" not in html and "Contents" not in html
    assert "READY 命令" in html  # the command's name stays as on the wire
    english = render(from_capture(CAPTURES / "mismatch_push_push.pcapng"))
    assert "First octet of the signature: %xFF." in english and "Contents" in english
