"""The examples' simulator scenarios, unchanged, against real Spark (local mode); each run is
then replayed in the simulator from its offset log and must match it batch by batch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from scenarios import CASE_IDS, CASES, EXAMPLE_SCENARIOS

from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.planner.spark.verify import verify_runner

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("name", "scenario"), CASES, ids=CASE_IDS)
def test_example_scenario_on_spark(
    name: str, scenario: Callable[[Any], None], spark: SparkSession, tmp_path: Path
) -> None:
    build, _ = EXAMPLE_SCENARIOS[name]
    h = SparkHarness(build(), spark, str(tmp_path))
    h.run(scenario)
    report = verify_runner(h.runner)
    assert report.identical and report.ticks > 0 and report.outputs > 0, str(report)
    assert str(report).startswith(f"{report.ticks} ticks, {report.outputs} outputs, identical")
