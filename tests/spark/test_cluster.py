"""Cluster programs on Spark (`hydrolite/planner/spark/cluster.py`): each shared cluster
program's scenario (`tests/cluster_programs.py`) passes in the simulator and, unchanged, on
Spark through `SparkHarness(..., cluster_sizes=...)`, and every batch of the Spark run
equals its replay in the simulator (lifted flow and cluster program); a failing demux fails the run with the
simulator's message; refusals are tested without Spark in `test_cluster_lift.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cluster_programs import CASES, Case, Server, Workers
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import MemberId
from hydrolite.ir import nodes as n
from hydrolite.planner.spark.errors import UserFunctionError
from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.sim import Simulator
from tests.differential.harness_cluster import verify_cluster_run

pytestmark = pytest.mark.spark


ON_SPARK = [c for c in CASES if c.on_spark]


@pytest.mark.parametrize("case", ON_SPARK, ids=[c.name for c in ON_SPARK])
def test_cluster_program_on_spark(case: Case, spark: SparkSession, tmp_path: Path) -> None:
    case.simulate(Simulator(case.build(), cluster_sizes=case.sizes), case.scenario)  # the reference
    h = SparkHarness(case.build(), spark, str(tmp_path), cluster_sizes=case.sizes)
    h.run(case.scenario)
    # demux_by_key() of int / str keys routes as a Spark expression (planner/spark/routing.py)
    paths = {k: v for s in h.runner.stages for k, v in s.progress.fn_paths.items()}
    routes = {k: v for k, v in paths.items() if k.startswith("demux_by_key()")}
    by_key = any(isinstance(x, n.Send) and x.mode is n.SendMode.BY_KEY for x in case.build().nodes())
    assert bool(routes) == by_key and set(routes.values()) <= {"native"}, paths
    # every batch of the run, replayed in the simulator: on the lifted flow and on the cluster
    # program itself (each member its own place, all members running in every batch)
    lifted, original = verify_cluster_run(h, h.flow, case.sizes)
    assert lifted.identical and lifted.ticks > 0, str(lifted)
    assert original.identical and original.outputs > 0, str(original)


def test_demux_to_a_missing_member_fails_the_batch(spark: SparkSession, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "demux_gather")

    def scenario(s: Any) -> None:
        s.sender("in").send((MemberId(5), 1))
        s.receiver("replies").collect()

    with pytest.raises(
        UserFunctionError, match=r"demux\(\) to member MemberId\(raw=5\), but the cluster has 2 members"
    ):
        SparkHarness(case.build(), spark, str(tmp_path), cluster_sizes={"Workers": 2}).run(scenario)


def test_demux_by_key_of_a_key_without_a_stable_encoding_fails_the_batch(spark: SparkSession, tmp_path: Path) -> None:
    flow = hl.FlowBuilder("bad-key")
    p = flow.process(Server)
    p.keyed_source("in", object, int).demux_by_key(flow.cluster(Workers)).entries().sink("out")

    def scenario(s: Any) -> None:
        s.sender("in").send((frozenset({1}), 1))
        s.receiver("out", member=0).collect()

    with pytest.raises(UserFunctionError, match=r"demux_by_key\(\) cannot route a key of type frozenset") as info:
        SparkHarness(flow.finalize(), spark, str(tmp_path), cluster_sizes={"Workers": 2}).run(scenario)
    assert "demux_by_key" in str(info.value) and "map() the key" in str(info.value)
