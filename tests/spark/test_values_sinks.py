"""Memory, callback and console sinks of one batch are read by one Spark job together
(`port_api.collect_many`): the values each gets are those it got from a job of its own, in
its stream's order, and the batch runs one job for all of them instead of one each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.port_api import collect_many, collect_values
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import Prim, TupleT
from hydrolite.planner.spark.values import frame_of

pytestmark = pytest.mark.spark


def _jobs(spark: SparkSession, group: str) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_frames_of_different_types_come_back_as_each_alone(spark: SparkSession) -> None:
    ints = frame_of(spark, [3, 1, 2], Prim(int))  # ordered: the stream's order, not the rows'
    pairs = frame_of(spark, [2.5, None], Prim(float), keys=["b", "a"], kt=Prim(str))
    tuples = frame_of(spark, [(1, "x")], TupleT((Prim(int), Prim(str))))
    empty = frame_of(spark, [], Prim(int))
    frames = [ints, pairs, tuples, empty]
    alone = [collect_values(sf) for sf in frames]
    assert alone == [[3, 1, 2], [("b", 2.5), ("a", None)], [(1, "x")], []]
    spark.sparkContext.setJobGroup("hl-collect-many", "collect_many")
    try:
        assert collect_many(frames) == alone
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert _jobs(spark, "hl-collect-many") <= 1  # local relations may need no job at all


class Node:
    """Tag."""


def test_a_batch_reads_all_its_value_sinks_with_one_job(spark: SparkSession, tmp_path: Path) -> None:
    flow = hl.FlowBuilder("sinks")
    p = flow.process(Node)
    xs = p.source("xs", int)
    xs.map(lambda x: x * 10).sink("tens")
    xs.flat_map_ordered(lambda x: [x] * x).sink("repeated")  # a Python function on the way
    xs.map(lambda x: (x % 2, x)).into_keyed().entries().sink("pairs")
    t = p.tick()
    xs.batch(t, nondet("any grouping")).count().into_stream().all_ticks().sink("counts")
    got: list[tuple[int, list[Any]]] = []
    runner = FlowRunner(
        flow.finalize(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"xs": f"feed:{tmp_path / 'xs'}"},
        outputs={"tens": "memory", "repeated": "memory", "pairs": "console", "counts": lambda b, v: got.append((b, v))},
    )
    w = FeedWriter(str(tmp_path / "xs"), Prim(int))
    runner.start()
    try:
        for batch in ([1, 2, 3], [4]):
            w.send_many(batch)
            runner.process_all_available()
    finally:
        runner.stop()
    assert runner.memory("tens").values() == [10, 20, 30, 40]
    assert runner.memory("repeated").values() == [1, 2, 2, 3, 3, 3, 4, 4, 4, 4]
    assert [v for _, v in got] == [[3], [1]]
    stages = [s for s in runner.stages if s.query is not None]
    assert max(len(s.stage.sinks) for s in stages) >= 3  # several value sinks in one query
    for st in stages:  # one job a batch for all of its sinks (+ the first batch's emptiness check)
        assert st.query is not None
        assert _jobs(spark, str(st.query.runId)) <= len(st.query.recentProgress) + 1, st.stage.name
