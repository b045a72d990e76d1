"""What the services' domain errors mean to a client, in one place: each service raises errors of its own, each a
kind of `Refused` (`NotFound`, `Conflict`, `Unprocessable`, `TooMany`, `NoRoom`, `Unavailable`), and the app
answers them all with one handler, `refused_response`: the kind's status and `{"detail": the error's text}`, in the
request's language as every HTTP error. A service says what went wrong and never speaks HTTP."""

from __future__ import annotations

from fastapi import status
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from .languages import localized_http_exception


class Refused(Exception):
    """A request a service will not carry out; its text says why, to the client."""


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


STATUS: dict[type[Refused], int] = {
    NotFound: status.HTTP_404_NOT_FOUND,
    Conflict: status.HTTP_409_CONFLICT,
    Unprocessable: status.HTTP_422_UNPROCESSABLE_CONTENT,
    TooMany: status.HTTP_429_TOO_MANY_REQUESTS,
    NoRoom: status.HTTP_507_INSUFFICIENT_STORAGE,
    Unavailable: status.HTTP_503_SERVICE_UNAVAILABLE,
}


def status_of(exc: Refused) -> int:
    """The HTTP status of a refusal: its kind's (400 for a kind the table does not name)."""
    return next((STATUS[kind] for kind in type(exc).__mro__ if kind in STATUS), status.HTTP_400_BAD_REQUEST)


async def refused_response(request: Request, exc: Exception) -> Response:
    """The answer to a `Refused` (typed for any handler's signature)."""
    code = status_of(exc) if isinstance(exc, Refused) else status.HTTP_500_INTERNAL_SERVER_ERROR
    return await localized_http_exception(request, HTTPException(code, str(exc)))
