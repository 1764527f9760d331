"""Every example scenario passes on every schedule the simulator explores (Spark: tests/spark)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from scenarios import CASE_IDS, CASES, EXAMPLE_SCENARIOS

from hydrolite.sim import Simulator


@pytest.mark.parametrize(("name", "scenario"), CASES, ids=CASE_IDS)
def test_example_scenario_on_every_schedule(name: str, scenario: Callable[[Any], None]) -> None:
    build, _ = EXAMPLE_SCENARIOS[name]
    assert Simulator(build).exhaustive(scenario) >= 1
