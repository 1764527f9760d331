"""Differential test of cluster programs (`progen_cluster.py`, `harness_cluster.py`).

* Without Spark: generated cluster programs replayed batch by batch in the simulator, once
  as written (each member its own place) and once lifted onto a member-keyed process
  (`hydrolite/planner/spark/cluster.py`), give the same outputs per member.
* On Spark: a generated cluster program runs on local Spark; every batch equals its replay
  in the simulator both on the lifted flow and on the original cluster program.
  `HYDROLITE_DIFF_CLUSTER_EXAMPLES` (default 3) sets the budget.
"""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from hydrolite.planner.spark.stages import plan_flow
from hydrolite.sim.recorded import ReplayBatch
from tests.differential.harness import load
from tests.differential.harness_cluster import _same, replay_members
from tests.differential.progen import HypothesisDraw, RandomDraw
from tests.differential.progen_cluster import CLUSTER_PORTS, PROCESS_PORTS, cluster_inputs, generate_cluster

EXAMPLES = int(os.environ.get("HYDROLITE_DIFF_CLUSTER_EXAMPLES", "3"))
PORTS = [*CLUSTER_PORTS, *PROCESS_PORTS]


@pytest.mark.parametrize("seed", range(0, 300, 50))
def test_lifted_cluster_programs_match_the_simulator(seed: int) -> None:
    for s in range(seed, seed + 50):
        d = RandomDraw(random.Random(s))
        cp = generate_cluster(d, max_ops=8)
        flow = load(cp.source())
        sizes = {"W": cp.members}
        plan = plan_flow(flow, sizes)
        steps = cluster_inputs(d, PORTS, cp.members, steps=4)
        batches = [ReplayBatch(i, {p: v for p, v in step.items() if p in flow.sources}) for i, step in enumerate(steps)]
        (tick,) = plan.flow.ticks
        sinks = list(flow.sinks)
        original = replay_members(flow, sizes)(plan.flow, tick, batches, sinks=sinks)
        lifted = replay_members(plan.flow, {})(plan.flow, tick, batches, sinks=sinks)
        for a, b in zip(original, lifted):
            for port in sinks:
                assert _same(b.outputs[port], a.outputs[port], flow.sinks[port].meta.ordered), (
                    f"seed {s}, batch {a.batch_id}, sink {port}: cluster program {a.outputs[port]}, "
                    f"lifted {b.outputs[port]}\n{cp.source()}\nSTEPS = {steps!r}"
                )


@pytest.mark.spark
@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None
)
@given(st.data())
def test_generated_cluster_programs_on_spark_match_the_simulator(spark: object, data: st.DataObject) -> None:
    from tests.differential.harness_cluster import run_cluster_case

    d = HypothesisDraw(data)
    cp = generate_cluster(d, max_ops=5)
    source = cp.source()
    steps = cluster_inputs(d, PORTS, cp.members)
    note(source)
    note(f"MEMBERS = {cp.members}\nSTEPS = {steps!r}")
    out = run_cluster_case(spark, source, steps, {"W": cp.members})  # type: ignore[arg-type]
    assert out.status == "identical", out.detail
