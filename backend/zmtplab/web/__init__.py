"""The web app: REST routes, websocket sessions, uploads, and the static frontend."""

from .app import create_app
from .core.settings import Settings, get_settings

__all__ = ["Settings", "create_app", "get_settings"]
