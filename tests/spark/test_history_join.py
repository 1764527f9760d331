"""Joins and cross products of unbounded streams whose sides are not chains from the query's
inputs (`history.py`): each side's history as Parquet under the query's state, compacted,
exactly once across a crash, on a local directory and on a Hadoop file system. Before, such
a program was refused at plan time."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.ir.graph import Flow
from hydrolite.planner.spark import history
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.placement import place_all
from hydrolite.planner.spark.render import render_text
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.stages import plan_flow
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.upgrade import PlanChangedError
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import json_batches
from tests.spark.test_ckfs import viewfs_mount

pytestmark = pytest.mark.spark

ND = nondet("test: any batching")

STEPS = [([1, 2], [3]), ([4], [5, 6]), ([7], [8]), ([10, 11], [9]), ([13], [12])]


class P:
    """The test's process."""


def program() -> Flow:
    """A tick's output joined with a source (keyed by `% 3`) and crossed with an enumerated
    source (no chain Spark's join state could take: always its history)."""
    fb = hl.FlowBuilder("history-join")
    p = fb.process(P)
    t = p.tick()
    seen = p.source("xs", int).batch(t, ND).map(lambda x: x + 1).all_ticks()
    ys = p.source("ys", int)
    seen.map(lambda x: (x % 3, x)).join(ys.map(lambda y: (y % 3, y * 10))).sink("joined")
    seen.cross_product(ys.enumerate().map(lambda t: t[0] * 100 + t[1])).sink("crossed")
    return fb.finalize()


def expected() -> dict[str, Counter[Any]]:
    xs = [x + 1 for x_step, _ in STEPS for x in x_step]
    ys = [y for _, y_step in STEPS for y in y_step]
    joined = Counter((x % 3, (x, y * 10)) for x in xs for y in ys if x % 3 == y % 3)
    crossed = Counter((x, i * 100 + y) for x in xs for i, y in enumerate(ys))
    return {"joined": joined, "crossed": crossed}


def _runner(d: Path, spark: SparkSession, checkpoint: str, fault: Any = None) -> FlowRunner:
    return FlowRunner(
        program(),
        spark=spark,
        checkpoint=checkpoint,
        inputs={"xs": f"feed:{d / 'xs'}", "ys": f"feed:{d / 'ys'}"},
        outputs={port: f"json:{d / port}" for port in ("joined", "crossed")},
        fault=fault,
    )


def _send(feed: FeedWriter, values: list[int]) -> None:
    if values:
        feed.send_many(values)


def _outputs(d: Path) -> dict[str, Counter[Any]]:
    return {
        port: Counter(r for rows in json_batches(d / port).values() for r in rows) for port in ("joined", "crossed")
    }


@pytest.mark.parametrize("where", ["local", "viewfs"])
def test_history_joins_answer_once_across_a_crash_with_a_bounded_history(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Five steps, a crash after batch 2's state committed and before its outputs, a restart:
    every pair exactly once, the simulator's replay identical, and each side's history kept in
    a bounded number of directories (compacted every 3 here: at batches 2 and 4; the crash is
    in the first compaction)."""
    monkeypatch.setattr(history, "COMPACT_AFTER", 3)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ck").mkdir()
    checkpoint = str(tmp_path / "ck") if where == "local" else viewfs_mount(spark, tmp_path / "ck")
    xs = FeedWriter(str(tmp_path / "xs"), from_python(int))
    ys = FeedWriter(str(tmp_path / "ys"), from_python(int))
    crash = CrashOnce("before_outputs", batch=2)
    runner = _runner(tmp_path, spark, checkpoint, crash).start()
    sent = 0
    try:
        for x_step, y_step in STEPS:
            _send(xs, x_step)
            _send(ys, y_step)
            sent += 1
            runner.process_all_available()
    except Exception as exc:  # the injected crash ends this runner's query; anything else fails the test
        if crash.fired != [2] or "crash at before_outputs of batch 2" not in str(exc):
            raise
    finally:
        runner.stop()
    resumed = _runner(tmp_path, spark, checkpoint).start()
    try:
        resumed.process_all_available()  # the batch that crashed, again
        for x_step, y_step in STEPS[sent:]:
            _send(xs, x_step)
            _send(ys, y_step)
            resumed.process_all_available()
    finally:
        resumed.stop()
    assert crash.fired == [2]
    assert _outputs(tmp_path) == expected()
    report = verify_runner(resumed)
    assert report.identical, str(report)
    for side in ("l", "r"):  # two joins: per side at most COMPACT_AFTER directories, and a compacted one
        dirs = [p for p in tmp_path.glob(f"ck/*/state/blobs/*history_{side}/*") if p.is_dir()]
        assert 0 < len(dirs) <= 2 * (3 + 1), sorted(str(p) for p in dirs)


@pytest.mark.parametrize("keyed_state", ["auto", "driver", "executors"])
def test_plan_says_where_the_history_lives(keyed_state: str) -> None:
    """The cross product's right side is no chain (`enumerate()`): its history on any option,
    saying so. The join's sides are chains (a tick's output through `all_ticks()` is one: the
    tick runs once per micro-batch on its rows), so `executors` keeps it per key; `auto` on a
    local master and `driver` take the history path for it too, saying why."""
    plan = plan_flow(program())
    place_all(plan, keyed_state, "local[2]")
    text = render_text(plan)
    assert "its right side: its input passes through enumerate()" in text, text  # the reason on any option
    placed = {x.node.op: x for st in plan.stages if st.placement for x in st.placement.placements}
    assert placed["cross_product"].rows, text
    if keyed_state == "executors":
        assert placed["join"].executors and not placed["join"].rows, text
        assert text.count("Parquet files under the query's checkpoint") == 1, text
    else:
        assert placed["join"].rows, text
        assert text.count("Parquet files under the query's checkpoint") == 2, text
    assert "history.py" in text, text


def test_auto_on_a_local_master_joins_chains_with_their_history_too() -> None:
    """Where it measured faster (a local master, `auto`), a join whose sides are chains takes
    the history path too and says why; `executors` and a cluster master keep it per key."""
    fb = hl.FlowBuilder("chains")
    p = fb.process(P)
    p.source("xs", tuple[int, int]).join(p.source("ys", tuple[int, int])).sink("out")
    flow = fb.finalize()
    for option, master, history_path in (
        ("auto", "local[2]", True),
        ("executors", "local[2]", False),
        ("auto", "local-cluster[2,1,1024]", False),
    ):
        plan = plan_flow(flow)
        place_all(plan, option, master)
        (placed,) = [x for st in plan.stages if st.placement for x in st.placement.placements]
        assert placed.rows is history_path and placed.executors is not history_path, (option, master, placed)
        if history_path:
            assert "keyed_state='auto' on the local master" in placed.why and "10.4x" in placed.why, placed.why


def test_a_join_kept_per_key_is_not_resumed_as_history(spark: SparkSession, tmp_path: Path) -> None:
    """A checkpoint whose join lives in Spark's per-key state (`executors`) is never resumed
    from an empty history: under `auto` on a local master (where a new join takes the history
    path) it stays per key, where the checkpoint keeps it, and pairs the new elements with
    the earlier run's; under `driver` it is refused before anything runs, with the option that
    keeps it where it is."""
    fb = hl.FlowBuilder("chains")
    p = fb.process(P)
    p.source("xs", tuple[int, int]).join(p.source("ys", tuple[int, int])).sink("out")
    flow = fb.finalize()
    pairs = from_python(tuple[int, int])
    xs, ys = FeedWriter(str(tmp_path / "xs"), pairs), FeedWriter(str(tmp_path / "ys"), pairs)
    xs.send_many([(1, 10)])
    ys.send_many([(1, 20)])

    def runner(keyed_state: str) -> FlowRunner:
        return FlowRunner(
            flow,
            spark=spark,
            checkpoint=str(tmp_path / "ck"),
            inputs={"xs": f"feed:{tmp_path / 'xs'}", "ys": f"feed:{tmp_path / 'ys'}"},
            outputs={"out": f"json:{tmp_path / 'out'}"},
            keyed_state=keyed_state,
        )

    with runner("executors") as first:
        first.start()
        first.process_all_available()
    with pytest.raises(PlanChangedError) as err:
        runner("driver")
    assert "--keyed-state executors" in str(err.value), str(err.value)
    xs.send_many([(1, 11)])
    with runner("auto") as resumed:
        (placed,) = resumed.plan.stages[0].placement.placements  # type: ignore[union-attr]
        assert placed.executors and "where the checkpoint keeps it" in placed.why, placed.why
        resumed.start()
        resumed.process_all_available()
    got = sorted(tuple(r) for rows in json_batches(tmp_path / "out").values() for r in rows)
    assert got == [(1, (10, 20)), (1, (11, 20))], got  # the new x meets the y of the earlier run
