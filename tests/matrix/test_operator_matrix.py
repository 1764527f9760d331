"""Every operator case on the simulator (every schedule: the reference) and on Spark (one run).

A case whose Spark run diverges from the simulator is marked `xfail(strict=True)` on the
spark backend with the divergence as its reason: fixing Spark makes it XPASS, which fails
until the mark is removed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hydrolite.ir import nodes as n
from hydrolite.sim import Simulator

from . import Case, Harness, Scenario
from .cases import CASES

#: node classes no case exercises, with the reason (none today). Send's cluster modes
#: (broadcast, demux, demux_by_key, cluster -> process) need a cluster and its member counts,
#: which this matrix's harness does not take: tests/cluster_programs.py holds their cases, run
#: on the simulator and on Spark by tests/spark/test_cluster.py, and generated cluster programs
#: use them in tests/differential/test_cluster_programs.py.
EXCLUDED: dict[type[n.Node], str] = {}


def _params() -> list[Any]:
    out: list[Any] = []
    for c in CASES:
        out.append(pytest.param("sim", c, id=f"sim-{c.id}"))
        marks: list[Any] = [pytest.mark.spark]
        if c.spark_divergence is not None:
            marks.append(
                pytest.mark.xfail(strict=True, raises=c.spark_raises, reason=f"divergence: {c.spark_divergence}")
            )
        out.append(pytest.param("spark", c, id=f"spark-{c.id}", marks=marks))
    return out


def _checked(c: Case, ports: list[str]) -> Scenario:
    """The case's scenario, then: no sink produced anything the scenario did not consume."""

    def scenario(s: Harness) -> None:
        c.scenario(s)
        for port in ports:
            s.receiver(port).assert_no_more()

    return scenario


@pytest.mark.parametrize(("backend", "case"), _params())
def test_operator(backend: str, case: Case, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    flow = case.build()
    scenario = _checked(case, sorted(flow.sinks))
    if backend == "sim":
        assert Simulator(case.build).exhaustive(scenario) >= 1
    else:
        from hydrolite.planner.spark.harness import SparkHarness

        SparkHarness(flow, request.getfixturevalue("spark"), str(tmp_path)).run(scenario)


def _classes_in(c: Case) -> set[type[n.Node]]:
    return {type(node) for node in c.build().nodes()}


def test_every_node_class_is_exercised() -> None:
    covered: set[type[n.Node]] = set()
    for c in CASES:
        present = _classes_in(c)
        assert c.nodes <= present, (
            f"case {c.id!r} declares {sorted(x.__name__ for x in c.nodes - present)} but its program has none"
        )
        covered |= c.nodes
    missing = [cls.__name__ for cls in n.node_classes() if cls not in covered and cls not in EXCLUDED]
    assert not missing, (
        f"node classes no matrix case exercises: {missing} (add a case, or list them in EXCLUDED with a reason)"
    )
    stale = [cls.__name__ for cls in EXCLUDED if cls in covered]
    assert not stale, f"EXCLUDED lists classes a case exercises: {stale}"


def test_case_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
