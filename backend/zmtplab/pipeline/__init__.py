"""The Spark pipeline: whole collections of captures -> Parquet tables and an HTML report.

`run_pipeline(inputs, out, master=None, progress=None) -> summary` is the entry point (see
`job.py`); `zmtplab pipeline` and `spark-submit backend/zmtplab/pipeline/submit.py` call it.
The capture-level pieces (`ranges`, `stages`, `rows`) need no Spark and are tested on their own.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

from .shipping import use_shipped_dependencies

__all__ = ["run_pipeline", "spark_problem"]

NO_PYSPARK = "the Spark pipeline needs pyspark, which is not installed here: pip install 'zmtplab[spark]'"
NO_JAVA = ("the Spark pipeline needs a Java runtime (17 or later) and there is none here: install one (Debian: "
           "openjdk-17-jre-headless) or set JAVA_HOME")


def spark_problem() -> str | None:
    """Why Spark cannot run here (saying how to get what is missing), or None when it can: pyspark importable
    (the `spark` extra) and a Java runtime found."""
    if importlib.util.find_spec("pyspark") is None:
        return NO_PYSPARK
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return None
    return NO_JAVA if shutil.which("java") is None else None


# On a Spark worker this package is the first of ours imported (a task's functions and the data source
# live in its modules): the dependencies the driver shipped join the path before they are needed.
use_shipped_dependencies()


def run_pipeline(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """See `zmtplab.pipeline.job.run_pipeline` (imported lazily: pyspark is heavy)."""
    from .job import run_pipeline as run

    return run(*args, **kwargs)
