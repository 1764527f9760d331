"""Spark's Python workers run the driver's interpreter and import the installed pyspark."""

from __future__ import annotations

import os
import sys

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _where() -> tuple[str, str]:
    import pyspark

    return sys.executable, pyspark.__file__ or ""


def test_workers_run_this_interpreter_and_the_compiled_pyspark(spark: SparkSession) -> None:
    """The session (tests/conftest.py, through `spark_session`) starts its workers with the
    launcher of `worker_python`: the same interpreter, and pyspark from the installation
    rather than from SPARK_HOME's zip (which Python compiles again at every start)."""
    import pyspark
    from pyspark.cloudpickle import register_pickle_by_value

    register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests/ modules
    (python, module), *_ = spark.sparkContext.parallelize([0], 1).map(lambda _: _where()).collect()
    assert os.path.realpath(python) == os.path.realpath(sys.executable)
    assert ".zip" not in module, module
    assert os.path.dirname(module) == os.path.dirname(pyspark.__file__ or "")
