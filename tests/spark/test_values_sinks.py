"""Memory, callback and console sinks of one batch are read by one Spark job together
(`port_api.collect_many`): the values each gets are those it got from a job of its own, in
its stream's order, and the batch runs one job for all of them instead of one each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.port_api import batch_arrow, collect_many, collect_values
from hydrolite.planner.spark.pyfn import map_in_arrow
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import Prim, TupleT
from hydrolite.planner.spark.values import SFrame, frame_of

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


def _tasks(spark: SparkSession, group: str) -> list[int]:
    """The number of tasks of each stage the group's jobs ran."""
    tracker = spark.sparkContext.statusTracker()
    jobs = [info for j in tracker.getJobIdsForGroup(group) if (info := tracker.getJobInfo(j)) is not None]
    stages = [tracker.getStageInfo(s) for info in jobs for s in info.stageIds]
    return [info.numTasks for info in stages if info is not None]


def test_a_collect_of_many_partitions_runs_one_task_per_core_in_the_streams_order(spark: SparkSession) -> None:
    """Twelve partitions, one row each, positions from `monotonically_increasing_id` taken on
    them and a Python function on each: read by at most one task per core (not twelve), every
    value in its position's order."""
    from pyspark.sql import functions as F

    def _negate(batches: Any) -> Any:  # a Python function on every partition
        import pyarrow.compute as pc

        for rb in batches:
            yield rb.set_column(
                rb.schema.get_field_index("v"), "v", pc.negate(rb.column(rb.schema.get_field_index("v")))
            )

    rows = spark.range(0, 12, numPartitions=12).select(
        F.monotonically_increasing_id().alias("_o0"), (F.col("id") * 7 % 12).alias("v")
    )
    sf = SFrame(map_in_arrow(rows, _negate, rows.schema), Prim(int), None, ("_o0",))
    tens = SFrame(rows.select("_o0", (F.col("v") * 10).alias("v")), Prim(int), None, ("_o0",))
    want = [-(i * 7 % 12) for i in range(12)]
    cores = spark.sparkContext.defaultParallelism
    runs: list[tuple[str, Callable[[], list[list[Any]]]]] = [
        ("hl-one-task-per-core", lambda: [collect_values(sf)]),
        ("hl-many-per-core", lambda: collect_many([sf, tens])),
    ]
    for group, run in runs:
        spark.sparkContext.setJobGroup(group, group)
        try:
            got = run()
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        assert got[0] == want
        tasks = _tasks(spark, group)
        assert tasks and max(tasks) <= cores, tasks
    assert got[1] == [-10 * v for v in want]


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


def test_batch_arrow_is_in_the_streams_order_without_its_order_columns(spark: SparkSession) -> None:
    """Delta Lake's sink (`batch_arrow`) and PostgreSQL's sort the batch on the driver: rows
    spread over partitions in reverse order come back in the stream's order, in the external
    layout only, and a keyed frame keeps its key column."""
    from pyspark.sql import functions as F

    rows = spark.range(0, 8, numPartitions=4).select(
        (100 - F.col("id")).alias("_o0"), (F.col("id") * 3).alias("v"), (F.col("id") % 2).cast("string").alias("k")
    )
    table = batch_arrow(SFrame(rows.select("_o0", "v"), Prim(int), None, ("_o0",)))
    assert table.column_names == ["value"] and table.column("value").to_pylist() == [21, 18, 15, 12, 9, 6, 3, 0]
    keyed = batch_arrow(SFrame(rows, Prim(int), Prim(str), ("_o0",)))
    assert keyed.column_names == ["key", "value"]
    assert keyed.column("key").to_pylist() == ["1", "0"] * 4 and keyed.column("value").to_pylist()[0] == 21
    unordered = batch_arrow(SFrame(rows.select("v"), Prim(int), None, ()))
    assert sorted(unordered.column("value").to_pylist()) == [0, 3, 6, 9, 12, 15, 18, 21]


def test_a_frame_without_order_columns_comes_back_in_the_order_of_its_partitions(spark: SparkSession) -> None:
    """A stream read in no particular order has no order columns: its rows reach the driver in
    the order of the batch's partitions (a file in file order). Grouping the partitions into
    fewer tasks would regroup a cached batch's by location, so such a frame keeps them."""
    from pyspark.sql import functions as F

    cached = spark.range(0, 24, numPartitions=12).select((F.col("id") * 2).alias("v")).persist()
    try:
        assert cached.count() == 24  # the cache's blocks (and their locations) are there
        bare = SFrame(cached, Prim(int), None, ())
        assert collect_values(bare) == [2 * i for i in range(24)]
        assert collect_many([bare, bare]) == [[2 * i for i in range(24)]] * 2
    finally:
        cached.unpersist()
