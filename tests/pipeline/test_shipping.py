"""What the driver ships to workers that have nothing of ours (pipeline/shipping.py), without Spark: the
list of dependencies against what the executors' modules import, and the archive's contents. The
cluster itself is tests/pipeline/test_standalone_cluster.py."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from importlib import metadata

from packaging.requirements import Requirement

from zmtplab.pipeline import shipping

# The modules whose functions and classes Spark runs on the executors (they import the rest of what runs there).
EXECUTOR_MODULES = ("source", "plan", "transform", "sink", "analyse", "feed", "stages", "runs", "rows", "schemas",
                    "ranges")


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def test_the_worker_baseline_is_what_pyspark_sql_requires():
    """WORKER_BASELINE stands for `pyspark[sql]`: every distribution that extra requires is in the baseline."""
    wanted = {_normal(Requirement(r).name) for r in metadata.distribution("pyspark").requires or ()
              if Requirement(r).marker is not None and Requirement(r).marker.evaluate({"extra": "sql"})}
    assert wanted, "pyspark declares no sql extra"
    assert wanted <= shipping.worker_baseline()


def test_executors_import_nothing_outside_the_baseline_and_the_shipped_dependencies():
    def loaded(modules: tuple[str, ...]) -> set[str]:
        code = ("import importlib, json, sys\n"
                f"for m in {modules!r}: importlib.import_module('zmtplab.pipeline.' + m)\n"
                "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules})))")
        return set(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                             check=True).stdout))

    owners = metadata.packages_distributions()
    # (less what the interpreter loads by itself, such as a .pth file's module)
    third_party = {m for m in loaded(EXECUTOR_MODULES) - loaded(())
                   if m not in sys.stdlib_module_names and m != "zmtplab" and m in owners}
    allowed = shipping.worker_baseline() | shipping.shipped_distributions()
    outside = {m: owners[m] for m in third_party if not {_normal(d) for d in owners[m]} & allowed}
    assert not outside, f"executors import modules neither a PySpark worker has nor the driver ships: {outside}"
    # and the list names nothing they do not import
    imported = {_normal(d) for m in third_party for d in owners[m]}
    assert {_normal(d) for d in shipping.WORKER_DISTRIBUTIONS} <= imported


def test_the_dependency_archive_is_a_site_directory_of_the_shipped_distributions():
    files = {rel for _path, rel in shipping.dependency_files()}
    tops = {rel.split("/")[0] for rel in files}
    assert {"orjson", "nacl"} <= tops
    assert any(t.startswith("_cffi_backend") for t in tops)  # PyNaCl's libsodium binding needs cffi's backend
    assert not tops & {"pyarrow", "pandas", "numpy", "pyspark", "py4j"}  # the worker has those
    assert not any(rel.endswith(".pyc") or rel.startswith("../") for rel in files)
    with zipfile.ZipFile(shipping.dependencies_archive()) as zf:
        assert set(zf.namelist()) == files
