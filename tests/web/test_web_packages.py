"""The web app's shape (docs/architecture.md, web): a package per concern over a `core` that imports none of them,
every service made by the lifespan and reached through `deps.py`, services that raise domain errors and never
speak HTTP, and those errors answered with the status and body the API has always had."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection
from starlette.websockets import WebSocketDisconnect
from webkit import make_settings

from zmtplab.web import create_app, deps
from zmtplab.web.captures.store import CaptureStore, DiskFull, TooManyCaptures
from zmtplab.web.classes.registry import ClassLimits, ClassRegistry
from zmtplab.web.core.errors import NoRoom, NotFound, Refused, TooMany, Unprocessable, status_of
from zmtplab.web.lessons.library import LessonLibrary, LessonNotFound, LessonUnplayable, StepNotFound

WEB = Path(__file__).resolve().parents[2] / "backend" / "zmtplab" / "web"
CONCERNS = ("captures", "corpus", "classes", "live", "lessons", "decode", "sessions")
EDGES = ("app.py", "deps.py")  # where the concerns meet


def _modules() -> list[Path]:
    return sorted(WEB.rglob("*.py"))


def _route_module(path: Path) -> bool:
    return path.name == "routes.py" or path.parent.name == "routes"


def _imports(path: Path) -> set[str]:
    """The absolute names of what `path` imports of ours (relative imports resolved)."""
    package = ["zmtplab", *path.relative_to(WEB.parent).parent.parts]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_core_imports_none_of_the_concern_packages() -> None:
    for path in sorted((WEB / "core").glob("*.py")):
        above = [name for name in _imports(path) for pkg in (*CONCERNS, "deps", "app", "models")
                 if name.startswith(f"zmtplab.web.{pkg}.") or name == f"zmtplab.web.{pkg}"]
        assert not above, f"{path.name} imports {above}"


def test_only_route_modules_raise_http_errors() -> None:
    # A service raises its domain errors (`core.errors.Refused`); HTTP is the routes' business.
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = getattr(node.exc.func, "id", getattr(node.exc.func, "attr", ""))
                assert name != "HTTPException" or _route_module(path), f"{path.relative_to(WEB)}:{node.lineno}"


def test_services_are_reached_through_deps_only() -> None:
    # No route or service fishes a service out of `app.state` or makes one on first use.
    for path in _modules():
        if path.name in EDGES and path.parent == WEB:
            continue
        assert "app.state" not in path.read_text(), path.relative_to(WEB)


def test_the_lifespan_makes_every_service_and_deps_serve_them(tmp_path: Path) -> None:
    limits = ClassLimits(max_classes=7)
    app = create_app(make_settings(tmp_path, dissect_executor="thread"), class_limits=limits)
    assert not hasattr(app.state, "classrooms") and not hasattr(app.state, "lessons")  # (nothing before it starts)
    with TestClient(app) as client:
        conn = HTTPConnection({"type": "http", "app": app, "headers": []})  # (what a dependency is handed)
        assert isinstance(deps.get_capture_store(conn), CaptureStore)
        registry = deps.get_class_registry(conn)
        assert isinstance(registry, ClassRegistry) and registry.limits is limits
        assert registry.path == tmp_path / "classes.json"
        assert isinstance(deps.get_lesson_library(conn), LessonLibrary)
        code = client.post("/api/classes").json()["code"]
        assert registry.find(code, "testclient") is not None  # the routes use the lifespan's registry


def test_domain_errors_have_the_status_of_their_kind() -> None:
    assert status_of(LessonNotFound("x")) == status_of(StepNotFound("x")) == 404
    assert status_of(LessonUnplayable("x")) == 422
    assert status_of(TooManyCaptures("x")) == 429
    assert status_of(DiskFull("x")) == 507
    for kind in (NotFound, Unprocessable, TooMany, NoRoom):
        assert issubclass(kind, Refused)
    assert isinstance(LessonNotFound("x"), LookupError)  # (what a class's answer check tells its student)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("data"), dissect_executor="thread"))) as c:
        yield c


def test_a_missing_lesson_or_step_is_answered_as_before(client: TestClient) -> None:
    r = client.get("/api/lessons/nope")
    assert (r.status_code, r.json()) == (404, {"detail": "no lesson 'nope'"})
    lesson = client.get("/api/lessons").json()["lessons"][0]
    n = lesson["step_count"]
    for path in (f"/api/lessons/{lesson['id']}/steps/{n + 1}",):
        r = client.get(path)
        assert (r.status_code, r.json()) == (404, {"detail": f"lesson {lesson['id']!r} has steps 1 to {n}, "
                                                             f"not {n + 1}"})
    r = client.post(f"/api/lessons/{lesson['id']}/steps/{n + 1}/exercise", json={"answer": "x"})
    assert (r.status_code, r.json()) == (404, {"detail": f"lesson {lesson['id']!r} has steps 1 to {n}, not {n + 1}"})
    r = client.get("/api/lessons/nope?lang=zh-CN")
    assert r.status_code == 404 and r.json()["detail"] != "no lesson 'nope'"  # (in the language asked for)


@pytest.mark.parametrize(("method", "path", "detail"), [
    ("GET", "/api/captures/nope/events", "no capture with id 'nope'"),
    ("DELETE", "/api/captures/nope", "no capture with id 'nope'"),
    ("GET", "/api/captures/nope/packets/1", "no capture with id 'nope'"),
    ("GET", "/api/corpus/runs/nope/tables/events", "no corpus run with id 'nope'"),
    ("POST", "/api/corpus/runs/nope/cancel", "no corpus run with id 'nope'"),
    ("GET", "/api/live/nope", "no live source with id 'nope'"),
    ("DELETE", "/api/live/nope", "no live source with id 'nope'"),
])
def test_what_a_service_does_not_have_is_a_404_as_before(client: TestClient, method: str, path: str,
                                                          detail: str) -> None:
    r = client.request(method, path)
    assert (r.status_code, r.json()) == (404, {"detail": detail})


def test_a_service_refusal_keeps_its_status_and_words(client: TestClient) -> None:
    r = client.post("/api/corpus/runs", json={"captures": ["0" * 32]})  # (a corpus run takes the captures' store)
    assert (r.status_code, r.json()) == (404, {"detail": f"no capture with id {'0' * 32!r}"})
    r = client.post("/api/live", json={"source": "tap", "target": "0.0.0.0:5555"})
    assert (r.status_code, r.json()) == (422, {"detail": "0.0.0.0 is not an address to connect to"})
    with client.websocket_connect("/ws/live/nope") as ws:
        assert ws.receive_json() == {"type": "error", "detail": "no live source with id 'nope'"}


# ---------------------------------------------------------------- the sessions' and the uploads' refusals (issue 33)


def test_session_routes_and_uploads_raise_domain_errors_not_http() -> None:
    # The sessions layer says what went wrong in its own words; web's one handler answers them by their kind.
    from zmtplab.sessions import EventNotFound, SessionConfigError, SessionNotFound, TooManySessions
    from zmtplab.web.captures.uploads import MalformedForm, NotACapture, UploadProblem, UploadTooLarge

    tree = ast.parse((WEB / "routes" / "sessions.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name | ast.Attribute)
                and getattr(n, "id", getattr(n, "attr", "")) == "HTTPException"]
    assert status_of(SessionNotFound("x")) == status_of(EventNotFound(3)) == 404
    assert status_of(SessionConfigError("x")) == 422 and status_of(TooManySessions("x")) == 429
    assert str(SessionNotFound("x")) == "no session with id 'x'"  # (not a KeyError's quoted repr)
    assert isinstance(SessionNotFound("x"), KeyError) and isinstance(EventNotFound(3), IndexError)
    assert issubclass(UploadProblem, Refused) and not issubclass(UploadProblem, HTTPException)
    assert [status_of(e("x")) for e in (UploadTooLarge, NotACapture, MalformedForm)] == [413, 415, 422]


def test_session_refusals_are_answered_as_before_in_both_languages(client: TestClient) -> None:
    for method, path in (("GET", "/api/sessions/nope/events/0"), ("DELETE", "/api/sessions/nope"),
                         ("GET", "/api/sessions/nope/export.json"), ("GET", "/api/sessions/nope/lesson.yaml")):
        r = client.request(method, path)
        assert (r.status_code, r.json()) == (404, {"detail": "no session with id 'nope'"}), path
        r = client.request(method, path + "?lang=zh-CN")
        assert r.status_code == 404 and r.json()["detail"] != "no session with id 'nope'" and "nope" in r.text
    r = client.post("/api/sessions", json={"mode": "simulated", "server": {"type": "REP", "libzmq": True},
                                           "client": {"type": "REQ"}})
    assert (r.status_code, r.json()) == (422, {"detail": "server: libzmq peers need a real session (mode 'tcp')"})
    session = client.post("/api/sessions", json={"mode": "simulated", "server": {"type": "PUSH"},
                                                 "client": {"type": "PULL"}}).json()["id"]
    try:
        r = client.get(f"/api/sessions/{session}/events/99999")
        assert (r.status_code, r.json()) == (404, {"detail": "the session has no event 99999"})
        r = client.get(f"/api/sessions/{session}/events/99999?lang=zh-CN")
        assert r.status_code == 404 and r.json()["detail"] != "the session has no event 99999"
    finally:
        assert client.delete(f"/api/sessions/{session}").status_code == 204
    with client.websocket_connect("/ws/sessions/nope") as ws:
        assert ws.receive_json() == {"type": "error", "detail": "no session with id 'nope'"}
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 4404


def test_too_many_sessions_is_a_429_as_before(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path, dissect_executor="thread", max_sessions=1, session_reserve=0))
    body = {"mode": "simulated", "server": {"type": "PUSH"}, "client": {"type": "PULL"}}
    with TestClient(app) as c:
        assert c.post("/api/sessions", json=body).status_code == 201
        r = c.post("/api/sessions", json=body)
        assert (r.status_code, r.json()) == (429, {"detail": "the server runs at most 1 sessions at once; "
                                                             "try again later"})


def test_a_refused_upload_closes_the_connection_in_both_languages(client: TestClient) -> None:
    for lang in ("en", "zh-CN"):
        r = client.post(f"/api/captures?lang={lang}", files={"file": ("notes.pcap", b"just some text\n")})
        assert r.status_code == 415 and r.headers["connection"] == "close"
        english = "not a pcap or pcapng capture (the file starts with 6a 75 73 74)"
        assert (r.json()["detail"] == english) is (lang == "en")
        r = client.post(f"/api/captures?lang={lang}", files={"other": ("x.pcap", b"abc")})
        assert r.status_code == 422 and r.headers["connection"] == "close"
