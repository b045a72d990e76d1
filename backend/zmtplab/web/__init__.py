"""The web app: REST routes, websocket sessions, uploads, and the static frontend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app
    from .core.settings import Settings, get_settings

__all__ = ["Settings", "create_app", "get_settings"]


def __getattr__(name: str) -> Any:
    # Imported when first asked for: the CLI's `session run` reads `web.models` without starting the app, and
    # importing all of FastAPI's routes costs a command close to a second.
    if name == "create_app":
        from .app import create_app

        return create_app
    if name in ("Settings", "get_settings"):
        from .core import settings

        return getattr(settings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
