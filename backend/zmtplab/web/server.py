"""How the app is served: uvicorn's configuration for `zmtplab serve` (and the tests that run a real server)."""

from __future__ import annotations

import uvicorn
from fastapi import FastAPI

from .settings import Settings
from .wsprotocol import CommandFrameProtocol


def uvicorn_config(app: FastAPI, settings: Settings, *, log_level: str = "info") -> uvicorn.Config:
    """uvicorn's configuration for `app`: the address from `settings`, websockets read by
    `CommandFrameProtocol`, and a websocket frame limit above the largest command the app accepts (so
    that the app, not the protocol, answers a command that is too long)."""
    return uvicorn.Config(app, host=settings.host, port=settings.port, log_level=log_level, ws=CommandFrameProtocol,
                          ws_max_size=max(settings.ws_max_message * 2, 1 << 20))
