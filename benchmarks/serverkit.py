"""A real `zmtplab serve` for the benchmarks and `docs/screenshots.py`: a process of its own (so that its RSS
and CPU time are its own, as on a server), on a free port of 127.0.0.1, started until its health route
answers, and its shut-down with the client processes that ran against it.

    server = start_server({"ZMTPLAB_MAX_SESSIONS": "100"})   # ServerDidNotStart when it never answers
    try:
        ... server.url, server.address, server.pid ...
    finally:
        shut_down(server, client_processes)

(The tests' servers run in a thread of the test process instead: `tests/testkit.py`'s `LiveServer`.)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class ServerDidNotStart(RuntimeError):
    """`zmtplab serve` exited, or did not answer, before its health route did (it is stopped)."""


def free_port() -> int:
    """A TCP port nothing listens on right now (on 127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Server:
    """A started `zmtplab serve`."""

    process: subprocess.Popen
    port: int
    temp_dir: str | None = None  # the data directory `start_server` made (removed by `shut_down`)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def address(self) -> str:
        """`127.0.0.1:PORT`, for `ws://` and `http://` URLs alike."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"


def start_server(env: Mapping[str, str | None] | None = None, *, backend: str | Path = REPO / "backend",
                 quiet: bool = False, timeout: float = 30.0) -> Server:
    """Starts `zmtplab serve --log-level warning` on a free port and waits until `GET /api/health` answers 200.

    The server's environment is this one with `env` over it (None unsets a name); ZMTPLAB_DATA_DIR is a new
    temporary directory (removed by `shut_down`) unless `env` names one, and `backend` comes first on
    PYTHONPATH (another checkout's, to compare). `quiet` sends its output to /dev/null. Raises
    `ServerDidNotStart` when it exits, or has not answered after `timeout` seconds (it is stopped then)."""
    port = free_port()
    temp_dir = None if env and env.get("ZMTPLAB_DATA_DIR") else tempfile.mkdtemp(prefix="zmtplab-bench-")
    full = {**os.environ, "PYTHONPATH": str(backend) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if temp_dir is not None:
        full["ZMTPLAB_DATA_DIR"] = temp_dir
    for name, value in (env or {}).items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    output = subprocess.DEVNULL if quiet else None
    process = subprocess.Popen([sys.executable, "-m", "zmtplab.cli", "serve", "--host", "127.0.0.1", "--port",
                                str(port), "--log-level", "warning"], env=full, stdout=output, stderr=output)
    server = Server(process, port, temp_dir)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{server.url}/api/health", timeout=2) as res:
                if res.status == 200:
                    return server
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            shut_down(server)
            raise ServerDidNotStart(f"zmtplab serve did not answer on {server.address} within {timeout:g} s"
                                    + (f" (it exited with status {process.returncode})"
                                       if process.returncode is not None else ""))
        time.sleep(0.1)


def shut_down(server: Server | None, workers: Iterable[BaseProcess] = (), *, wait: float = 10.0) -> None:
    """Gives each worker process 5 s to end (then terminates it), then stops the server (killed when it has not
    ended `wait` seconds after it was asked to) and removes the data directory `start_server` made for it."""
    for worker in workers:
        worker.join(5)
        if worker.is_alive():
            worker.terminate()
    if server is None:
        return
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(wait)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
    if server.temp_dir is not None:
        shutil.rmtree(server.temp_dir, ignore_errors=True)
