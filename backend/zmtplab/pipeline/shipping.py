"""What the driver ships to Spark workers that have nothing of ours, and how the workers find it.

A cluster's workers run Spark's own Python libraries (`pyspark.zip` and py4j, which every
Spark installation puts on its Python workers' path) in an interpreter of the same minor version
as the driver's, with what PySpark's SQL side needs: `pyspark[sql]`'s pyarrow, pandas and numpy
(Arrow carries a Python data source's rows). Everything else the executors import is ours to ship:

* the `zmtplab` package, as a zip added with `SparkContext.addPyFile` (Spark puts it on the path
  of every Python worker it starts from then on, on the executors and on the driver, where the
  data source is planned);
* the runtime dependencies the package imports there beyond those (`WORKER_DISTRIBUTIONS` and
  what they require), as this interpreter has them installed, in one archive
  (`SparkContext.addArchive`) that every node unpacks into its Spark files directory as
  `zmtplab-deps`. They are compiled (orjson, PyNaCl's libsodium, cffi's backend), so a zip on the
  path cannot hold them; `use_shipped_dependencies()` appends the unpacked directory to the path of
  a Python worker when `zmtplab.pipeline` is imported there. Appended, not prepended: a package the
  worker's own interpreter has wins, so a node of another platform with the dependencies installed
  (or a venv shipped with `--archives`, docs/pipeline.md) works too.

Both are made once per process and shipped once per SparkContext, before the data source is
registered: a Python function Spark pickles carries the includes the context had when it was made.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path

__all__ = ["DEPENDENCIES_NAME", "WORKER_BASELINE", "WORKER_DISTRIBUTIONS", "dependencies_archive", "dependency_files",
           "package_zip", "ship", "shipped_distributions", "use_shipped_dependencies", "worker_baseline"]

# What the executors import beyond pyspark[sql]: orjson (capture.dissect, capture.jsonlines), PyNaCl
# (engine.curve, imported by the analysis) and h11 (engine.zws: the HTTP upgrade of a captured ZWS
# connection). tests/pipeline/test_shipping.py holds this list against what the modules the executors
# run import.
WORKER_DISTRIBUTIONS = ("orjson", "PyNaCl", "h11")
# What a PySpark SQL worker has (pyspark[sql]: Arrow carries a Python data source's rows), not shipped.
WORKER_BASELINE = ("pyspark", "pyarrow", "pandas", "numpy")
DEPENDENCIES_NAME = "zmtplab-deps"  # the directory the archive unpacks into on every node

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_shipped: set[str] = set()  # application ids of the contexts shipped to


def ship(sc) -> None:
    """Adds the package and its worker dependencies to `sc` (once per application)."""
    app = sc.applicationId
    if app in _shipped:
        return
    sc.addPyFile(package_zip())
    archive = dependencies_archive()
    if archive is not None:
        sc.addArchive(f"{archive}#{DEPENDENCIES_NAME}")
    _shipped.add(app)


def use_shipped_dependencies() -> None:
    """On a Spark Python worker: puts the unpacked dependency archive (if shipped) at the end of the path."""
    if "pyspark" not in sys.modules:  # not a Spark process: nothing was shipped here
        return
    from pyspark import SparkFiles

    try:
        root = SparkFiles.getRootDirectory()
    except Exception:  # a driver without a SparkContext yet (it has its dependencies installed)
        return
    path = os.path.join(root, DEPENDENCIES_NAME)
    if os.path.isdir(path) and path not in sys.path:
        sys.path.append(path)


def worker_baseline() -> set[str]:
    """Normalised names of the distributions a PySpark SQL worker has: `WORKER_BASELINE` and what they
    require."""
    return _closure(WORKER_BASELINE)


def shipped_distributions() -> set[str]:
    """Normalised names of the distributions shipped: `WORKER_DISTRIBUTIONS` and what they require, less
    the worker baseline."""
    return _closure(WORKER_DISTRIBUTIONS) - worker_baseline()


def dependency_files() -> Iterator[tuple[Path, str]]:
    """(installed file, its path relative to the site directory) for every file of the shipped
    distributions; compiled caches left out."""
    for name in sorted(shipped_distributions()):
        dist = metadata.distribution(name)
        for entry in dist.files or ():  # (no RECORD: installed by a system package manager; not shipped)
            rel = entry.as_posix()
            if rel.startswith("../") or "__pycache__" in entry.parts or rel.endswith(".pyc"):
                continue  # scripts beside the site directory; bytecode the worker makes itself
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                yield path, rel


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _closure(names: Iterable[str]) -> set[str]:
    """Normalised names of the installed distributions among `names` and everything they require (a
    requirement under an extra is left out; one that is not installed is skipped)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = _normal(todo.pop())
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for text in dist.requires or ():
            spec, _, marker = text.partition(";")
            if "extra" not in marker:
                todo.append(_NAME.match(spec.strip()).group(0))
    return seen


@functools.cache
def package_zip() -> str:
    """A zip of the zmtplab package (removed when this process exits: the driver serves it until then)."""
    root = Path(__file__).resolve().parents[1]
    name = _temp_file("zmtplab-", ".zip")
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".yaml", ".json") and "__pycache__" not in path.parts:
                zf.write(path, Path("zmtplab") / path.relative_to(root))
    return name


@functools.cache
def dependencies_archive() -> str | None:
    """A zip of `dependency_files()` laid out as a site directory (None when there is nothing to ship)."""
    files = list(dependency_files())
    if not files:
        return None
    name = _temp_file("zmtplab-deps-", ".zip")
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, rel in files:
            zf.write(path, rel)
    return name


def _temp_file(prefix: str, suffix: str) -> str:
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix)
    os.close(fd)
    atexit.register(_remove, name)
    return name


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)
