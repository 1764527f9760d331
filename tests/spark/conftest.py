"""One SparkSession for the whole test session (local mode, 2 shuffle partitions, no UI)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from hydrolite.planner.spark.session import spark_session

    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}, app_name="hydrolite-tests")
    yield session
    session.stop()
