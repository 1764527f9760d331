"""Shared fixtures: the simulator's pytest plugin, and one SparkSession for the whole test
session (local mode, 2 shuffle partitions, no UI), created only when a test asks for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytest_plugins = ["hydrolite.sim.pytest_plugin", "pytester"]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from hydrolite.planner.spark.session import spark_session

    session = spark_session(
        "local[2]", {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}, app_name="hydrolite-tests"
    )
    yield session
    session.stop()
