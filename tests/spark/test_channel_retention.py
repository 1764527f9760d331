"""A checkpoint keeps the channel entries of the newest batches only (`retention.py`), as
Spark keeps its own logs: two queries joined by a channel run, are stopped, resume, and
answer every element once; `verify` says what it can no longer replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hydrolite.planner.spark.feed import FeedWriter, list_entries
from hydrolite.planner.spark.retention import SPARK_RETAIN, removed_below
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import Prim
from hydrolite.planner.spark.verify import VerifyError, verify_runner
from tests.spark.runs import channel_entries, json_batches
from tests.spark.test_plan import two_ticks

pytestmark = pytest.mark.spark

ROUNDS = ([1, 2], [3], [4, 5, 6], [7], [8, 9], [10])


def _runner(spark: SparkSession, d: Path, history: Any) -> FlowRunner:
    outs = {"counts": f"json:{d / 'counts'}", "doubled": f"json:{d / 'doubled'}"}
    return FlowRunner(
        two_ticks(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs={"x": f"feed:{d / 'x'}"},
        outputs=outs,
        channel_history=history,
    )


def _run(spark: SparkSession, d: Path, history: Any, rounds: Any) -> FlowRunner:
    """A runner on `d`'s checkpoint that gets each round's elements and processes them."""
    x = FeedWriter(str(d / "x"), Prim(int))
    runner = _runner(spark, d, history).start()
    try:
        for values in rounds:
            x.send_many(values)
            runner.process_all_available()
    finally:
        runner.stop()
    return runner


def _answers(d: Path) -> tuple[list[Any], list[Any]]:
    counts = [r for rows in json_batches(d / "counts").values() for r in rows]
    doubled = sorted(r for rows in json_batches(d / "doubled").values() for r in rows)
    return counts, doubled


def test_old_channel_entries_go_and_the_answers_stay(spark: SparkSession, tmp_path: Path) -> None:
    """Four rounds, a restart, two more, keeping the newest 2 batches' entries: every
    element doubled once, each round counted in its own batch of the consumer (a round is one
    producer batch, one channel entry), and only the newest entries left."""
    _run(spark, tmp_path, 2, ROUNDS[:4])
    resumed = _run(spark, tmp_path, 2, ROUNDS[4:])  # a new runner learns the readers' batches anew
    counts, doubled = _answers(tmp_path)
    assert counts == [len(r) for r in ROUNDS]
    assert doubled == [2 * v for r in ROUNDS for v in r]  # nothing lost, nothing twice
    (channel,) = (tmp_path / "ck" / "channels").iterdir()
    left = sorted(list_entries(str(channel)))
    written = channel_entries(str(tmp_path / "ck"))  # (a producer batch without elements writes none)
    assert len(written) == len(ROUNDS) and left == written[-2:], (left, written)
    assert removed_below(str(channel)) == written[-2]
    with pytest.raises(VerifyError, match=r"(?s)entries 0\.\.\d+ a batch read were removed.*channel_history='all'"):
        verify_runner(resumed)


def test_by_default_a_runner_keeps_as_many_batches_as_spark_keeps_logs(spark: SparkSession, tmp_path: Path) -> None:
    runner = _runner(spark, tmp_path, None)
    try:
        assert runner.retention.keep == int(spark.conf.get(SPARK_RETAIN, "100"))
    finally:
        runner.stop()
