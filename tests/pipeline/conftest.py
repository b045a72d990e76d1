"""One Spark session for the whole pipeline suite: local[2], no UI, 4 shuffle partitions, a JVM for short runs.

Spark needs Java 17+; without it the Spark tests fail with a message saying so (they are never
skipped silently). Workers run this interpreter (PYSPARK_PYTHON)."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from testkit import SPARK_SHORT_JVM


@pytest.fixture(scope="session")
def spark():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("the Spark tests need a Java runtime (17+): install one (make setup does) or set JAVA_HOME")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from zmtplab.pipeline.job import get_session

    session = get_session("local[2]", conf={
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.memory": "2g",
        "spark.driver.extraJavaOptions": SPARK_SHORT_JVM,
    })
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
