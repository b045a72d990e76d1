"""A failed Spark run in the user's terms: the real exception, where it happened, and a hint.

Spark reports a failure on an executor as its own exception around the worker's: the first line
is "An exception was thrown from the Python worker:" or "Job aborted due to stage failure", and the
exception that matters (a `FileNotFoundError` and its path) is at the end of a traceback or a Java
stack trace. `explain(exc)` digs it out; the hint names the usual reason on a cluster: storage the
workers do not see as the driver does, a module or an interpreter the workers lack.

    failure = explain(exc, out="/shared/out")
    failure.cause  # "FileNotFoundError: [Errno 2] No such file or directory: '/data/a.pcapng'"
    failure.hint   # "/data/a.pcapng is there on the driver but not on the worker that ..."
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = ["Failure", "explain"]

_EXCEPTION_LINE = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?::\s(?P<message>.*))?$")
# Spark's words for a failure in a Python worker process (an executor's, or the driver's data source planner)
# or in an executor's task
_IN_WORKER = re.compile(r"Python worker|Python data source|most recent failure: Lost task")
_LOST_TASK = re.compile(r"most recent failure: Lost task [^:]*\):\s*(?P<cause>.+)")
_JAVA_EXCEPTION = re.compile(r"^(?::|Caused by:)\s+([\w.$]+(?:Exception|Error)\b.*)$", re.MULTILINE)
_QUOTED_PATH = re.compile(r"""['"](?P<path>(?:[A-Za-z][\w+.-]*:)?/[^'"]*)['"]""")
_UNQUOTED_PATH = re.compile(r"(?:Path does not exist|No such file or directory):\s*(?P<path>\S+?)\.?(?:\s|$)")
_STORAGE_ERRORS = ("FileNotFoundError", "NotADirectoryError", "IsADirectoryError", "PermissionError",
                   "FileNotFoundException", "PATH_NOT_FOUND")


@dataclass(frozen=True)
class Failure:
    """What `explain` found: `cause` is one line, `path` the file it is about (if any), `hint` a sentence or None."""

    cause: str
    on_worker: bool
    path: str | None = None
    hint: str | None = None


def explain(exc: BaseException, *, out: str | os.PathLike[str] | None = None) -> Failure:
    """The real cause of `exc` (raised by a Spark run whose output directory is `out`) and a hint."""
    worker_tb = _worker_traceback(exc)
    text = worker_tb or str(exc)
    on_worker = worker_tb is not None or _IN_WORKER.search(text) is not None
    cause = _last_exception(text) or _lost_task(text) or _java_exception(text) or _first_line(exc, text)
    path = _path_in(cause)
    return Failure(cause, on_worker, path, _hint(cause, on_worker, path, out))


def _worker_traceback(exc: BaseException) -> str | None:
    """The Python worker's traceback PySpark keeps apart (PYTHON_EXCEPTION's `traceback` parameter)."""
    params = getattr(exc, "getMessageParameters", None)
    try:
        found = params() if callable(params) else None
    except Exception:  # (a Java-side exception without parameters)
        return None
    tb = (found or {}).get("traceback")
    return str(tb) if tb else None


def _last_exception(text: str) -> str | None:
    """The exception line ("Name: message") that ends the last Python traceback in `text`."""
    start = text.rfind("Traceback (most recent call last):")
    if start < 0:
        return None
    for line in text[start:].splitlines()[1:]:
        if not line.strip() or line[0].isspace():
            continue  # a frame, its source line, a caret line
        if _EXCEPTION_LINE.match(line.strip()):
            return line.strip()
    return None


def _lost_task(text: str) -> str | None:
    """The exception of an executor's failed task as a Java stack trace reports it."""
    found = _LOST_TASK.search(text)
    return found.group("cause").strip() if found else None


def _java_exception(text: str) -> str | None:
    """The innermost exception of a Java stack trace in `text` (py4j's "An error occurred while calling ...")."""
    found = _JAVA_EXCEPTION.findall(text)
    return found[-1].strip() if found else None


def _first_line(exc: BaseException, text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    name = type(exc).__name__
    if not first:
        return name
    return first if first.startswith(name) else f"{name}: {first}"


def _path_in(cause: str) -> str | None:
    found = _QUOTED_PATH.search(cause) or _UNQUOTED_PATH.search(cause)
    if not found:
        return None
    path = found.group("path")
    return path[len("file:"):] if path.startswith("file:") else path


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _hint(cause: str, on_worker: bool, path: str | None, out: str | os.PathLike[str] | None) -> str | None:
    name = cause.split(":", 1)[0].rsplit(".", 1)[-1]
    out_dir = os.path.abspath(os.fspath(out)) if out is not None else None
    if path and (name in _STORAGE_ERRORS or "PATH_NOT_FOUND" in cause):
        if out_dir and _under(path, out_dir):
            side = "the driver does not see what the workers wrote there" if not on_worker \
                else "a worker cannot write there"
            return (f"{out_dir} is --out, and {side}: on a cluster --out must be storage the driver and every "
                    f"worker share (the same path on each, or a URI such as hdfs://).")
        if on_worker and os.path.exists(path):
            return (f"{path} is there on the driver but not on the worker that read it: on a cluster every "
                    f"worker needs the inputs at the same path (a shared file system) or as a URI they all reach.")
        if on_worker:
            return (f"a worker could not open {path}: on a cluster every worker needs the inputs at the same path "
                    f"as the driver, and --out on storage they all share.")
    if on_worker and name in ("ModuleNotFoundError", "ImportError"):
        return ("the workers' Python lacks a module the pipeline needs: they need pyspark[sql]'s pyarrow, pandas and "
                "numpy (the driver ships zmtplab and its other dependencies), or a venv shipped with --archives "
                "(docs/pipeline.md, On a cluster).")
    if "Cannot run program" in cause:
        return ("no Python at that path: PYSPARK_PYTHON must name the Python the workers have (the same minor "
                "version as the driver's), and the driver runs it too, to plan the data source; a path inside an "
                "--archives venv (./environment/bin/python) must be unpacked in the driver's working directory "
                "as well (docs/pipeline.md, On a cluster).")
    return None
