"""`zmtplab serve`: the web app under uvicorn."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the `serve` subcommand."""
    p = sub.add_parser("serve", help="run the web app (API, websocket sessions and the frontend)",
                       description="Serve ZMTP Lab over HTTP. Settings come from ZMTPLAB_* environment "
                                   "variables (ZMTPLAB_DATA_DIR, ZMTPLAB_MAX_UPLOAD_BYTES, ...); "
                                   "--host and --port override theirs.")
    p.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port to listen on (default 8000)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn's log level")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Starts uvicorn; returns when the server stops."""
    import uvicorn

    from ..web import create_app, get_settings
    from ..web.server import uvicorn_config

    settings = get_settings()
    updates = {}
    if args.host is not None:
        updates["host"] = args.host
    if args.port is not None:
        updates["port"] = args.port
    if updates:
        settings = settings.model_copy(update=updates)
    app = create_app(settings)
    tune_gc()
    uvicorn.Server(uvicorn_config(app, settings, log_level=args.log_level)).run()
    return 0


def tune_gc() -> None:
    """Fewer, cheaper garbage collections for a long-running server.

    A busy server holds many long-lived objects (sessions, their simulations); with the default
    thresholds, collections of the older generations walk all of them often, and each such pause
    delays every websocket at once (the p99 of benchmarks/load_sessions.py fell from about 200 ms
    to under 100 ms with this). Objects from start-up are frozen out of the collector's sight.
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
