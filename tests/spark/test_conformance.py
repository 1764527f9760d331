"""The examples' simulator scenarios, unchanged, against real Spark (local mode)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hydrolite.planner.spark.harness import SparkHarness
from scenarios import CASE_IDS, CASES, EXAMPLE_SCENARIOS

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("name", "scenario"), CASES, ids=CASE_IDS)
def test_example_scenario_on_spark(name: str, scenario: Callable[[Any], None], spark: SparkSession, tmp_path: Path) -> None:
    build, _ = EXAMPLE_SCENARIOS[name]
    SparkHarness(build(), spark, str(tmp_path)).run(scenario)
