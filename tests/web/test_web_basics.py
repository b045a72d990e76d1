"""Health, decode, security headers, OpenAPI, static files, request limits."""

from __future__ import annotations

from pathlib import Path

import pytest
from webkit import REPO, open_client

from zmtplab.decode import decode_to_dicts
from zmtplab.engine.notation import parse_hex
from zmtplab.web import Settings, get_settings

GREETING = "ff00000000000000017f 03 01 4e554c4c" + "00" * 16 + "00" + "00" * 31
READY = "04 1a 05 5245414459 0b 536f636b65742d54797065 00000004 50555348"


def test_health_and_security_headers(client):
    r = client.get("/api/health")
    assert r.status_code == 200
    assert r.json() == {"status": "ok"}
    csp = r.headers["content-security-policy"]
    assert "script-src 'self';" in csp and "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"


def test_headers_on_errors_too(client):
    r = client.get("/api/captures/0123456789abcdef0123456789abcdef")
    assert r.status_code == 404
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" in r.headers


def test_openapi_and_docs(client):
    spec = client.get("/openapi.json")
    assert spec.status_code == 200
    paths = spec.json()["paths"]
    for path in ("/api/health", "/api/decode", "/api/captures", "/api/captures/{capture_id}/events",
                 "/api/captures/{capture_id}/packets/{number}", "/api/sessions"):
        assert path in paths
    assert "multipart/form-data" in paths["/api/captures"]["post"]["requestBody"]["content"]
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert "swagger" in docs.text.lower()
    # Relaxed only for /docs: the CDN and the hash of its one inline script, never 'unsafe-inline' scripts.
    csp = docs.headers["content-security-policy"]
    script_src = next(part for part in csp.split(";") if part.strip().startswith("script-src"))
    assert "'sha256-" in script_src and "unsafe-inline" not in script_src


def test_frontend_is_served(client):
    index = REPO / "frontend" / "index.html"
    assert index.exists()
    r = client.get("/")
    assert r.status_code == 200
    assert "text/html" in r.headers["content-type"]
    assert r.headers["content-security-policy"].startswith("default-src 'self'")


def test_static_modules_and_unknown_api_paths(client):
    js = next((REPO / "frontend" / "js").glob("*.js"), None)
    if js is not None:
        r = client.get(f"/js/{js.name}")
        assert r.status_code == 200 and "javascript" in r.headers["content-type"]  # nosniff needs a JS type
    r = client.get("/api/nothing/here")
    assert r.status_code == 404 and r.json()["detail"]
    assert client.get("/no-such-page.html").status_code == 404


def test_decode_greeting_and_ready(client):
    r = client.post("/api/decode", json={"hex": GREETING + READY})
    assert r.status_code == 200
    events = r.json()["events"]
    assert [e["kind"] for e in events[:2]] == ["greeting", "command"]
    assert all(e["conn"] == "0" and e["dir"] == "c2s" for e in events)
    assert events[0]["version"] == "3.1" and events[0]["mechanism"] == "NULL"
    assert events[1]["name"] == "READY" and events[1]["properties"] == {"Socket-Type": "PUSH"}
    assert events[0]["fields"] and {"name", "offset", "length", "value", "rule", "note"} <= set(events[0]["fields"][0])
    # The same as the CLI's decoder.
    assert events == decode_to_dicts(parse_hex(GREETING + READY))


def test_decode_bare_frames(client):
    body = bytes(range(256)) + b"!" * 44
    frames = "03" + (300).to_bytes(8, "big").hex() + body.hex() + "0004" + b"tail".hex()
    events = client.post("/api/decode", json={"hex": frames}).json()["events"]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "expert"  # no greeting: decoded as 3.x frames
    frame = next(e for e in events if e["kind"] == "frame")
    assert frame["long"] is True and frame["size"] == 300 and frame["more"] is True
    assert events[-1]["kind"] == "message" and len(events[-1]["frames"]) == 2


def test_decode_bare_v1_stream_and_forced_version(client):
    # An anonymous 1.0 identity frame (01 00), then `hello`: 23/ZMTP's detection says ZMTP 1.0.
    v1 = "01 00 06 00" + b"hello".hex()
    events = client.post("/api/decode", json={"hex": v1}).json()["events"]
    assert events[0]["kind"] == "expert" and "read as ZMTP 1.0" in events[0]["text"]
    assert events[1]["kind"] == "greeting" and events[1]["version"] == "1.0"
    assert events[-1]["kind"] == "message" and events[-1]["frames"] == [b"hello".hex()]
    forced = client.post("/api/decode", json={"hex": v1, "version": "3"}).json()["events"]
    assert not any(e["kind"] == "greeting" for e in forced)
    assert client.post("/api/decode", json={"hex": v1, "version": "4"}).status_code == 422


@pytest.mark.parametrize("bad", ["zz", "abc", "0x0g"])
def test_decode_bad_hex(client, bad):
    r = client.post("/api/decode", json={"hex": bad})
    assert r.status_code == 422
    assert isinstance(r.json()["detail"], str) and "hex" in r.json()["detail"]


def test_decode_validation(client):
    assert client.post("/api/decode", json={}).status_code == 422
    assert client.post("/api/decode", json={"hex": 5}).status_code == 422
    assert client.post("/api/decode", content=b"{not json", headers={"content-type": "application/json"}
                       ).status_code == 422


def test_decode_and_body_limits(tmp_path: Path):
    with open_client(tmp_path, decode_max_bytes=16, max_json_body=4096) as c:
        assert c.post("/api/decode", json={"hex": "00" * 16}).status_code == 200
        r = c.post("/api/decode", json={"hex": "00" * 17})
        assert r.status_code == 413 and "16" in r.json()["detail"]
        r = c.post("/api/decode", json={"hex": "00" * 5000})
        assert r.status_code == 413
        # A body sent in chunks without a Content-Length is counted too.
        r = c.post("/api/decode", content=iter([b'{"hex": "', b"00" * 3000, b'"}']),
                   headers={"content-type": "application/json"})
        assert r.status_code == 413


def test_settings_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ZMTPLAB_PORT", "9123")
    monkeypatch.setenv("ZMTPLAB_MAX_UPLOAD_BYTES", "1234")
    monkeypatch.setenv("ZMTPLAB_DATA_DIR", str(tmp_path))
    s = Settings()
    assert (s.port, s.max_upload_bytes, s.data_dir) == (9123, 1234, tmp_path)
    get_settings.cache_clear()
    try:
        assert get_settings().port == 9123
        assert get_settings() is get_settings()
    finally:
        get_settings.cache_clear()


def test_serve_command_is_registered():
    from zmtplab.cli import build_parser

    args = build_parser().parse_args(["serve", "--port", "8123"])
    assert args.port == 8123 and args.host is None  # None: the settings' host (127.0.0.1 unless configured)
    assert Settings().host == "127.0.0.1" and Settings().port == 8000
