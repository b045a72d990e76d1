"""One router per module; `create_app` includes them all."""

from . import captures, classes, corpus, decode, health, lessons, live, replay, sessions

ROUTERS = [health.router, decode.router, captures.router, sessions.router, lessons.router, classes.router, live.router,
           corpus.router, replay.router]
