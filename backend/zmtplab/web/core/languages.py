"""The web app's answers in another language: the session and live websockets (`LocalizedSockets`, pure ASGI
middleware) and the `detail` of HTTP errors (`localized_http_exception`).

A session (or a live source) serializes each message once for all its sockets (English, the contract). A
socket opened with `?lang=zh-CN` (or, without `lang`, an Accept-Language that asks for Chinese) gets every
message rewritten on its way out: events' expert texts and field notes, `error` and `status` details and `log`
entries' reasons, through `zmtplab.i18n`. Other sockets and every HTTP request pass through untouched (one look
at the scope).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import orjson
from fastapi.exception_handlers import http_exception_handler
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...i18n import DEFAULT, localize_event, pick_lang, text, translate

LOCALIZED_PREFIXES = ("/ws/sessions/", "/ws/live/")
LOG_TEXTS = ("reason", "text")
"""The keys of a session's `log` entry a page shows as sentences (why a connection closed, a peer's error)."""


def scope_lang(scope: Scope) -> str:
    """The language a request or a websocket asked for (`?lang=`, then Accept-Language)."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("lang", [None])[0]
    accept = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"accept-language"), None)
    return pick_lang(query, accept)


def _localize(message: Any, lang: str) -> Any:
    if isinstance(message, list):
        return [_localize(m, lang) for m in message]
    if not isinstance(message, dict):
        return message
    kind = message.get("type")
    if kind == "event" and isinstance(message.get("event"), dict):
        return {**message, "event": localize_event(message["event"], lang)}
    if kind in ("error", "status") and isinstance(message.get("detail"), str):
        return {**message, "detail": translate(message["detail"], lang)}
    if kind == "log" and isinstance(message.get("entry"), dict):
        entry = message["entry"]
        texts = {k: translate(entry[k], lang) for k in LOG_TEXTS if isinstance(entry.get(k), str)}
        return {**message, "entry": {**entry, **texts}} if texts else message
    return message


def localize_text(text: str, lang: str) -> str:
    """One websocket text (a message or a JSON array of them) in `lang`."""
    try:
        message = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    return orjson.dumps(_localize(message, lang)).decode()


class LocalizedSockets:
    """Rewrites what the session websockets send for sockets that asked for another language than English."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket" or not scope["path"].startswith(LOCALIZED_PREFIXES):
            await self.app(scope, receive, send)
            return
        lang = scope_lang(scope)
        if lang == DEFAULT:
            await self.app(scope, receive, send)
            return

        async def localized_send(message: Message) -> None:
            if message["type"] == "websocket.send" and message.get("text") is not None:
                message = {**message, "text": localize_text(message["text"], lang)}
            await send(message)

        await self.app(scope, receive, localized_send)


# pydantic's error types -> the catalog's words for them (pydantic writes English only).
VALIDATION = {
    "missing": "validation.missing", "extra_forbidden": "validation.extra_forbidden",
    "string_too_long": "validation.string_too_long", "string_too_short": "validation.string_too_short",
    "too_long": "validation.too_long", "too_short": "validation.too_short",
    "int_parsing": "validation.int", "int_type": "validation.int", "int_from_float": "validation.int",
    "float_parsing": "validation.number", "float_type": "validation.number",
    "bool_parsing": "validation.bool", "bool_type": "validation.bool", "string_type": "validation.string",
    "list_type": "validation.list", "dict_type": "validation.object", "model_type": "validation.object",
    "model_attributes_type": "validation.object",
    "greater_than_equal": "validation.greater_than_equal", "less_than_equal": "validation.less_than_equal",
    "greater_than": "validation.greater_than", "less_than": "validation.less_than",
    "literal_error": "validation.one_of", "enum": "validation.one_of", "json_invalid": "validation.json",
}


def localize_validation(errors: list[dict[str, Any]], lang: str) -> list[dict[str, Any]]:
    """A 422's problems (pydantic's `errors()`) with each `msg` in `lang`: by the error's type and its context
    where the catalog knows the type, a `value_error`'s own text through `translate`, else as pydantic wrote it."""
    out = []
    for error in errors:
        ctx = error.get("ctx") or {}
        msg_id = VALIDATION.get(str(error.get("type")))
        msg = error.get("msg", "")
        if msg_id is not None:
            params = {k: ctx.get(k, "") for k in ("max_length", "min_length", "ge", "le", "gt", "lt", "expected")}
            if lang != DEFAULT:
                params["expected"] = str(params["expected"]).replace("' or '", "'、'").replace("', '", "'、'")
            msg = text(msg_id, lang, **params)
        elif error.get("type") == "value_error" and ctx.get("error") is not None:
            msg = translate(str(ctx["error"]), lang)
        out.append({**error, "msg": msg})
    return out


async def localized_http_exception(request: Request, exc: StarletteHTTPException) -> Response:
    """FastAPI's answer to an `HTTPException`, its `detail` in the request's language (`?lang=`, Accept-Language):
    what a page shows its reader. English answers are FastAPI's own, unchanged."""
    lang = pick_lang(request.query_params.get("lang"), request.headers.get("accept-language"))
    if lang != DEFAULT and isinstance(exc.detail, str):
        exc = StarletteHTTPException(exc.status_code, translate(exc.detail, lang), headers=exc.headers)
    return await http_exception_handler(request, exc)
