"""The Spark pipeline: whole collections of captures -> Parquet tables and an HTML report.

`run_pipeline(inputs, out, master=None, progress=None) -> summary` is the entry point (see
`job.py`); `zmtplab pipeline` and `spark-submit backend/zmtplab/pipeline/submit.py` call it.
The capture-level pieces (`ranges`, `stages`, `rows`) need no Spark and are tested on their own.
"""

from __future__ import annotations

from typing import Any

from .shipping import use_shipped_dependencies

__all__ = ["run_pipeline"]

# On a Spark worker this package is the first of ours imported (a task's functions and the data source
# live in its modules): the dependencies the driver shipped join the path before they are needed.
use_shipped_dependencies()


def run_pipeline(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """See `zmtplab.pipeline.job.run_pipeline` (imported lazily: pyspark is heavy)."""
    from .job import run_pipeline as run

    return run(*args, **kwargs)
