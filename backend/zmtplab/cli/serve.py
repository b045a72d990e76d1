"""`zmtplab serve`: the web app under uvicorn."""

from __future__ import annotations

import argparse
import os
import sys

# Set when `serve` restarted itself on glibc's allocator (`use_glibc_malloc`); its children do not inherit it.
_REEXEC_MARK = "ZMTPLAB_SERVE_MALLOC_SET"


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
    use_glibc_malloc()
    import uvicorn

    from ..web import create_app, get_settings
    from ..web.server import raise_file_limit, uvicorn_config

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
    raise_file_limit()  # (before the connection table sizes itself by it)
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


def use_glibc_malloc() -> None:
    """Runs the server on glibc's allocator (PYTHONMALLOC=malloc) unless PYTHONMALLOC says otherwise: restarts
    this process (same pid) with it once, and keeps it from the processes the server starts.

    Why: CPython's own allocator keeps a 1 MiB arena while any object in it lives, so after a crowd leaves
    (a class of 1,000 sockets) the survivors scattered through the arenas hold the peak's memory (44 MiB of
    it, measured with benchmarks/load_classes.py); on glibc's heap, the trim `web.core.memory` runs when a big
    class empties gives the free pages back (RSS back within 10 MiB of idle). The server's costs per
    message did not change; the engine's dissection is 10-20% slower on it, so dissection workers (spawned
    processes) keep CPython's allocator.
    """
    if os.environ.pop(_REEXEC_MARK, None) is not None:
        os.environ.pop("PYTHONMALLOC", None)  # (the spawned dissection workers: CPython's allocator)
        return
    if "PYTHONMALLOC" in os.environ or not sys.platform.startswith("linux") or not sys.orig_argv:
        return
    os.environ["PYTHONMALLOC"] = "malloc"
    os.environ[_REEXEC_MARK] = "1"
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
