"""What the services' domain errors mean to a client, in one place: each service raises errors of its own, each a
kind of `Refused` (`NotFound`, `Conflict`, `Unprocessable`, `TooMany`, `NoRoom`, `Unavailable`, `TooLarge`,
`Unsupported`), and the app answers them all with one handler, `refused_response`: the kind's status and
`{"detail": the error's text}`, in the request's language as every HTTP error. A service says what went wrong and
never speaks HTTP. The layers below web (the sessions) raise errors of their own, which know nothing of web:
`DOMAIN` says which kind of refusal each is, and the same handler answers them."""

from __future__ import annotations

from fastapi import status
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ...sessions import EventNotFound, SessionConfigError, SessionNotFound, TooManySessions
from .languages import localized_http_exception


class Refused(Exception):
    """A request a service will not carry out; its text says why, to the client. `headers`: what the answer
    carries besides (an upload refused mid-body closes the connection)."""

    headers: dict[str, str] | None = None


class NotFound(Refused, LookupError):
    """What was asked for does not exist (or no longer does)."""

    def __str__(self) -> str:  # (its text as given, where a KeyError would quote it)
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class Conflict(Refused):
    """What was asked for exists but cannot be done in its present state."""


class Unprocessable(Refused, ValueError):
    """The request names something that cannot be done as given."""


class TooMany(Refused):
    """The client already holds as much of something as the server lets one client hold."""


class NoRoom(Refused):
    """The server has no room for it (its disk)."""


class Unavailable(Refused):
    """The server cannot do it at all here (a component it needs is missing)."""


class TooLarge(Refused):
    """What the client sent is larger than the server takes."""


class Unsupported(Refused):
    """What the client sent is not of a kind the server reads."""


STATUS: dict[type[Refused], int] = {
    NotFound: status.HTTP_404_NOT_FOUND,
    Conflict: status.HTTP_409_CONFLICT,
    Unprocessable: status.HTTP_422_UNPROCESSABLE_CONTENT,
    TooMany: status.HTTP_429_TOO_MANY_REQUESTS,
    NoRoom: status.HTTP_507_INSUFFICIENT_STORAGE,
    Unavailable: status.HTTP_503_SERVICE_UNAVAILABLE,
    TooLarge: status.HTTP_413_CONTENT_TOO_LARGE,
    Unsupported: status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
}

DOMAIN: dict[type[Exception], type[Refused]] = {  # errors of the layers below web, by kind
    SessionNotFound: NotFound,
    EventNotFound: NotFound,
    SessionConfigError: Unprocessable,
    TooManySessions: TooMany,
}
"""`refused_response` answers these too (`app.py` hands it every one)."""


def status_of(exc: Exception) -> int:
    """The HTTP status of a refusal, or of an error `DOMAIN` names: its kind's (400 for a kind the table does not
    name, 500 for any other error)."""
    for cls in type(exc).__mro__:
        kind = DOMAIN.get(cls, cls)
        if kind in STATUS:
            return STATUS[kind]
    return status.HTTP_400_BAD_REQUEST if isinstance(exc, Refused) else status.HTTP_500_INTERNAL_SERVER_ERROR


async def refused_response(request: Request, exc: Exception) -> Response:
    """The answer to a `Refused` or an error `DOMAIN` names (typed for any handler's signature)."""
    headers = exc.headers if isinstance(exc, Refused) else None
    return await localized_http_exception(request, HTTPException(status_of(exc), str(exc), headers=headers))
