"""The FastAPI application: `create_app(settings)` wires routers, the static frontend and the background tasks.

The lifespan owns every background task: the capture store (its dissection workers and
progress pollers), the session manager, the corpus runs (the Spark pipeline's worker thread
and session), the classes of presenter mode (`DATA_DIR/classes.json`: they survive a restart), and the reaper
that expires old captures and idle sessions and saves the classes. Every HTTP
response carries a strict Content-Security-Policy (no inline script anywhere but the one
hashed script of `/docs`), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..eventstore import StoreClosed
from ..i18n import DEFAULT, pick_lang, translate
from ..sessions import SessionManager
from .captures import routes as captures_routes
from .captures.packets import PacketDecoder
from .captures.store import CaptureStore
from .classes import routes as classes_routes
from .classes.registry import ClassLimits, ClassRegistry
from .core import routes as core_routes
from .core.errors import DOMAIN, Refused, refused_response
from .core.languages import LocalizedSockets, localize_validation, localized_http_exception, scope_lang
from .core.memory import release_soon
from .core.settings import Settings, get_settings
from .corpus import routes as corpus_routes
from .corpus.runs import CorpusRuns
from .decode import routes as decode_routes
from .lessons import routes as lessons_routes
from .lessons.library import LessonLibrary
from .live import routes as live_routes
from .live.sources import LiveSources
from .routes import sessions as sessions_routes

log = logging.getLogger(__name__)

try:
    __version__ = metadata.version("zmtplab")
except metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0"

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
CDN = "https://cdn.jsdelivr.net"
UPLOAD_PATH = "/api/captures"
SWITCH_INTERVAL = 0.001  # seconds a busy thread holds the interpreter while the event loop waits for it
CATCH_ALL = "/api/{rest:path}"
ROUTERS = [core_routes.router, decode_routes.router, captures_routes.router, sessions_routes.router,
           lessons_routes.router, classes_routes.router, live_routes.router, corpus_routes.router]


def _docs_page(openapi_url: str, title: str) -> tuple[bytes, str]:
    """Swagger UI's page and a CSP that allows exactly its CDN files and its one inline script."""
    html = get_swagger_ui_html(openapi_url=openapi_url, title=title).body
    scripts = re.findall(rb"<script>(.*?)</script>", html, re.S)
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s).digest()).decode()}'" for s in scripts)
    csp = (f"default-src 'self'; script-src 'self' {CDN} {hashes}; style-src 'self' {CDN} 'unsafe-inline'; "
           "img-src 'self' data: https://fastapi.tiangolo.com; connect-src 'self'; object-src 'none'; "
           "base-uri 'none'; frame-ancestors 'none'")
    return bytes(html), csp


class _BodyTooLarge(HTTPException):
    pass


class _BodyStalled(HTTPException):
    pass


class SecurityHeaders:
    """Pure ASGI middleware around the whole app (error pages included).

    Adds the security headers to every HTTP response that does not set its own CSP, refuses
    request bodies over `max_body` on every route but the capture upload (which streams to disk
    and enforces its own, larger limit), and ends a request whose body stalls for `body_idle`
    seconds with 408 (a client that declares more than it sends would otherwise hold its request,
    and an upload slot, forever).
    """

    def __init__(self, app: ASGIApp, max_body: int, body_idle: float = 30.0) -> None:
        self.app = app
        self.max_body = max_body
        self.body_idle = body_idle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", CSP.encode()))
                for name, value in ((b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
                                    (b"x-frame-options", b"DENY")):
                    if name not in names:
                        headers.append((name, value))
                message = {**message, "headers": headers}
            await send(message)

        if scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send_with_headers)
            return
        max_body = None if scope["path"].rstrip("/") == UPLOAD_PATH else self.max_body
        if max_body is not None:
            for name, value in scope.get("headers", []):
                if name == b"content-length" and value.isdigit() and int(value) > max_body:
                    response = JSONResponse({"detail": f"the request body is larger than {max_body} bytes"}, 413)
                    await response(scope, receive, send_with_headers)
                    return
        seen = 0
        body_done = False

        async def limited_receive() -> Message:
            nonlocal seen, body_done
            if body_done:  # (now it waits for the client to leave, e.g. under a stream: no deadline)
                return await receive()
            try:
                async with asyncio.timeout(self.body_idle):
                    message = await receive()
            except TimeoutError:
                raise _BodyStalled(408, f"the request body stalled: no octets for {self.body_idle:g} s",
                                   headers={"Connection": "close"}) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            if message["type"] == "http.request" and max_body is not None:
                seen += len(message.get("body", b""))
                if seen > max_body:
                    raise _BodyTooLarge(413, f"the request body is larger than {max_body} bytes")
            return message

        await self.app(scope, limited_receive, send_with_headers)


class ZmtpLabApp(FastAPI):
    """FastAPI with `SecurityHeaders` outside every other middleware (so 500 pages get the headers too), and the
    session websockets in the language they ask for (`LocalizedSockets`)."""

    zmtplab_max_body: int = 1 << 20
    zmtplab_body_idle: float = 30.0

    def build_middleware_stack(self) -> ASGIApp:
        return SecurityHeaders(LocalizedSockets(super().build_middleware_stack()), self.zmtplab_max_body,
                               self.zmtplab_body_idle)


def create_app(settings: Settings | None = None, *, class_limits: ClassLimits | None = None) -> FastAPI:
    """The web app for these settings (the environment's when None); `class_limits` replaces presenter mode's
    (the settings' `class_max_students`, the other limits `ClassLimits`'s own)."""
    settings = settings or get_settings()
    class_limits = class_limits or ClassLimits(max_students=settings.class_max_students)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # The threads that dissect taps and live captures, search stores and read tables share the interpreter
        # with the event loop: a thread busy with Python code gives it up every switch interval (5 ms by default)
        # and every request waits that long for each of its turns. A shorter interval keeps one busy tap from
        # making every other client wait.
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
        captures = CaptureStore(settings)
        # What an ended session held goes back to the system (a moment later, once for sessions ending together):
        # freed objects stay in CPython's arenas and glibc's heap otherwise, and rounds of sessions took the server
        # from 83 MB to 2 GB.
        sessions = SessionManager(settings.session_limits(), on_end=release_soon)
        app.state.settings = settings
        app.state.captures = captures
        app.state.sessions = sessions
        app.state.packets = PacketDecoder(cache_size=settings.packet_cache_size, timeout=settings.packet_timeout,
                                          tshark_path=settings.tshark_path)
        live = LiveSources(settings)
        app.state.live = live
        corpus = CorpusRuns(settings)
        app.state.corpus = corpus
        classrooms = ClassRegistry(class_limits, path=settings.data_dir / "classes.json")
        app.state.classrooms = classrooms
        app.state.lessons = LessonLibrary(captures_dir=settings.sample_captures_dir, extra=settings.lessons_dir)
        await captures.start()
        await sessions.start()
        await live.start()
        await corpus.start()
        reaper = asyncio.create_task(_reap(captures, sessions, settings.reap_interval, classrooms),
                                     name="zmtplab-reaper")
        try:
            yield
        finally:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper
            classrooms.save()  # (the classes survive the restart)
            await corpus.stop()
            await live.stop()
            await sessions.stop()
            await captures.stop()

    app = ZmtpLabApp(
        title="ZMTP Lab",
        version=__version__,
        description="Every byte of ZMTP, explained: decode bytes, dissect captures, watch live sessions.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.zmtplab_max_body = settings.max_json_body
    app.zmtplab_body_idle = settings.body_idle_timeout
    app.state.settings = settings

    app.exception_handler(StarletteHTTPException)(localized_http_exception)  # (typed for any handler's signature)
    for refusal in (Refused, *DOMAIN):  # (the services' domain errors, and the sessions')
        app.exception_handler(refusal)(refused_response)

    @app.exception_handler(StoreClosed)
    async def store_closed(request: Request, exc: StoreClosed) -> JSONResponse:
        # A capture's events read while the capture was deleted (or evicted), or its preview replaced by the whole
        # dissection: what the client gets then is not a 500.
        capture_id = str(request.path_params.get("capture_id", ""))
        lang = scope_lang(request.scope)
        if capture_id and capture_id in request.app.state.captures.records:
            return JSONResponse({"detail": translate("the capture's events changed while they were read; ask again",
                                                     lang)}, status_code=503, headers={"Retry-After": "1"})
        return JSONResponse({"detail": translate(f"no capture with id {capture_id!r}", lang)}, status_code=404)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own shape (a list of problems), without echoing the input back; its words in the request's
        # language (English answers are pydantic's own, unchanged).
        lang = pick_lang(request.query_params.get("lang"), request.headers.get("accept-language"))
        problems = list(exc.errors()) if lang == DEFAULT else localize_validation(list(exc.errors()), lang)
        errors = [{k: v for k, v in e.items() if k not in ("input", "ctx", "url")} for e in problems]
        return JSONResponse({"detail": errors}, status_code=422)

    for router in ROUTERS:
        app.include_router(router)

    docs_html, docs_csp = _docs_page(app.openapi_url or "/openapi.json", f"{app.title} - API")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(docs_html, headers={"Content-Security-Policy": docs_csp})

    @app.api_route(CATCH_ALL, methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
    async def no_such_route(rest: str, request: Request) -> JSONResponse:
        # Without this the static mount at / would answer unknown API paths with a plain-text 404. (It also
        # matches an existing path with another method, which the router would have answered with 405.)
        allowed = _allowed_methods(request)
        if allowed:
            detail = f"{request.method} is not allowed on /api/{rest}: use {', '.join(allowed)}"
            return JSONResponse({"detail": translate(detail, scope_lang(request.scope))},
                                status_code=405, headers={"Allow": ", ".join(allowed)})
        return JSONResponse({"detail": translate(f"no API route /api/{rest}", scope_lang(request.scope))},
                            status_code=404)

    frontend = settings.frontend_dir
    if frontend is not None and frontend.is_dir():
        app.mount("/", StaticFiles(directory=frontend, html=True), name="frontend")
    else:
        log.warning("no frontend directory at %s; serving the API only", frontend)
    return app


def _allowed_methods(request: Request) -> list[str]:
    """The methods the app's routes take on this request's path (empty when no route has the path)."""
    routes = [r for r in request.app.router.routes if getattr(r, "path", None) != CATCH_ALL]
    allowed = []
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] is Match.FULL for route in routes if not isinstance(route, Mount)):
            allowed.append(method)
    return allowed


async def _reap(captures: CaptureStore, sessions: SessionManager, interval: float,
                classrooms: ClassRegistry) -> None:
    """Expires old captures and ends idle or abandoned sessions, every `interval` seconds; saves the classes when
    they changed."""
    while True:
        await asyncio.sleep(interval)
        try:
            await captures.expire()
            await sessions.reap()
            classrooms.save_if_dirty()
        except Exception:  # the reaper must survive anything
            log.exception("reaper pass failed")
