"""A source port holds each element as its declared type does, on Spark and in the simulator
alike (`hydrolite.port_values`): before, an `int` sent to a `float` port stayed an int in the
simulator and became a float on Spark (`repr` gave '3' and '3.0'), a `bool` sent to an `int`
port stayed `True` in one and became `1` in the other. One scenario, run by both backends,
checks what each port holds through `repr()`: a check by `==` cannot see it (`1 == 1.0 == True`)."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.sim import Simulator

pytestmark = pytest.mark.spark


class P:
    """Tag of the process."""


@dataclasses.dataclass(frozen=True)
class Reading:
    name: str
    value: float


DAY = datetime.date(2026, 11, 30)
NOON = datetime.datetime(2026, 11, 30, 12, 30)
#: port: (declared type, sent, what the port holds, by repr)
CASES: dict[str, tuple[Any, list[Any], list[str]]] = {
    "f": (float, [3, True, 2.5], ["3.0", "1.0", "2.5"]),
    "i": (int, [True, 4], ["1", "4"]),
    # one port of every typed structure (each part converted as its own column would be)
    "all": (
        tuple[tuple[str, float], list[float], dict[str, float], float | None, float | None, Reading, datetime.date],
        [(("a", 2), [1, 2.5], {"a": 1}, None, 7, Reading("x", 1), NOON)],
        [f"(('a', 2.0), [1.0, 2.5], {{'a': 1.0}}, None, 7.0, Reading(name='x', value=1.0), {DAY!r})"],
    ),
    "kept": (tuple[float, object], [(3, 4)], ["(3, 4)"]),  # pickled whole on Spark: as sent
    "union": (int | str, [True, "s"], ["True", "'s'"]),  # several types: pickled, as sent
}


def build() -> hl.Flow:
    flow = hl.FlowBuilder("port_values")
    p = flow.process(P)
    for port, (t, _, _) in CASES.items():
        p.source(port, t).map(repr).sink(f"{port}_held")
    keyed = p.source("k", tuple[str, float]).into_keyed()
    keyed.entries().map(repr).sink("k_held")
    return flow.finalize()


def scenario(s: Any) -> None:
    for port, (_, sent, _) in CASES.items():
        s.sender(port).send_many(sent)
    s.sender("k").send_many([("a", 1), ("b", False)])
    for port, (_, _, holds) in CASES.items():
        s.receiver(f"{port}_held").assert_yields(holds)
    s.receiver("k_held").assert_yields(["('a', 1.0)", "('b', 0.0)"])


def test_the_simulator_holds_what_the_port_declares() -> None:
    Simulator(build).run_once(scenario)


def test_spark_holds_the_same(spark: SparkSession, tmp_path: Any) -> None:
    SparkHarness(build(), spark, str(tmp_path)).run(scenario)
