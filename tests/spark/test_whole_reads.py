"""Keyed state on the executors that the query reads whole (`placement.ExecutorState.whole`).

A keyed fold read whole in its own query (`entries()`, `values()`, a lookup whose requests
are no chain) keeps its state in Spark's state store like one read per key; each batch's
updated keys are applied to a copy of the table the executors keep as Parquet, and the tick
reads that. These tests pin the answers (equal to the driver path's and to the simulator's
replay of the run), a crash inside a batch (exactly once), and the plan's reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from examples import bank
from hydrolite import nondet
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import json_batches, run_once

pytestmark = pytest.mark.spark


class Ledger:
    """Tag of the ledger process."""


def build() -> hl.Flow:
    """Per-account balances (a fold no native aggregation computes: it keeps the newest
    three amounts too), read whole each tick: every account, the sum of the balances, and
    the accounts a request names after a lookup whose requests pass through a batch."""
    flow = hl.FlowBuilder("ledger")
    p = flow.process(Ledger)
    moves = p.source("move", tuple[str, int])
    asks = p.source("ask", str)
    books = moves.into_keyed().fold(
        (0, ()),
        lambda acc, x: (acc[0] + x, (*acc[1], x)[-3:]),  # (balance, the newest three moves)
        acc_type=tuple[int, tuple[int, ...]],
    )
    tick = p.tick()
    snap = books.snapshot(tick, nondet("any prefix of the moves"))
    snap.entries().map(lambda e: (e[0], e[1][0], list(e[1][1]))).all_ticks().sink("books")
    snap.values().map(lambda b: b[0]).fold_commutative(0, lambda s, b: s + b).into_stream().all_ticks().sink("total")
    who = asks.batch(tick, nondet("any grouping")).map(lambda a: (a, len(a))).into_keyed()
    who.lookup_keyed_singleton(snap).entries().map(lambda e: (e[0], e[1][1][0] if e[1][1] else None)).all_ticks().sink(
        "asked"
    )
    return flow.finalize()


MOVES = [[("a", 5), ("b", 1), ("a", 2)], [("c", 7)], [], [("a", -1), ("b", 3), ("a", 4)]]
ASKS = [["a", "z"], ["b"], ["c", "a"], ["a"]]


def _feeds(d: Path) -> dict[str, str]:
    if not (d / "move").exists():
        move = FeedWriter(str(d / "move"), from_python(tuple[str, int]))
        ask = FeedWriter(str(d / "ask"), from_python(str))
        for m, a in zip(MOVES, ASKS):
            move.send_many(m)
            ask.send_many(a)
    cap = "?maxEntriesPerTrigger=1"  # one entry per micro-batch: batch ids are deterministic
    return {"move": f"feed:{d / 'move'}{cap}", "ask": f"feed:{d / 'ask'}{cap}"}


def _run(spark: SparkSession, d: Path, keyed_state: str, fault: Any = None) -> FlowRunner:
    outs = {s: f"json:{d / s}" for s in ("books", "total", "asked")}
    runner = FlowRunner(
        build(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=_feeds(d),
        outputs=outs,
        keyed_state=keyed_state,
        fault=fault,
    )
    return run_once(runner)


def _outputs(d: Path) -> dict[str, dict[int, list[Any]]]:
    return {
        s: {b: sorted(rows, key=repr) for b, rows in json_batches(d / s).items()} for s in ("books", "total", "asked")
    }


#: what every batch must see (one entry of each feed per batch)
EXPECTED_BOOKS = {
    0: [("a", 7, (5, 2)), ("b", 1, (1,))],
    1: [("a", 7, (5, 2)), ("b", 1, (1,)), ("c", 7, (7,))],
    2: [("a", 7, (5, 2)), ("b", 1, (1,)), ("c", 7, (7,))],
    3: [("a", 10, (2, -1, 4)), ("b", 4, (1, 3)), ("c", 7, (7,))],
}


def test_a_fold_read_whole_stays_on_the_executors_and_answers_like_the_driver(
    spark: SparkSession, tmp_path: Path
) -> None:
    runner = _run(spark, tmp_path / "exec", "executors")
    placement = runner.plan.stages[0].placement
    assert placement is not None and placement.region is not None
    (p,) = placement.placements
    assert p.executors and "read whole by entries()" in p.why and "values()" in p.why, p.why
    assert "lookup_keyed_singleton()" in p.why, p.why  # (its requests pass through batch() of a map: no chain)
    got = _outputs(tmp_path / "exec")
    assert got["books"] == EXPECTED_BOOKS
    assert got["total"] == {0: [8], 1: [15], 2: [15], 3: [21]}
    # (a missing value: Spark leaves the null field out of the JSON)
    assert got["asked"] == {0: [("a", 7), ("z",)], 1: [("b", 1)], 2: [("a", 7), ("c", 7)], 3: [("a", 10)]}
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    _run(spark, tmp_path / "driver", "driver")
    assert _outputs(tmp_path / "driver") == got


@pytest.mark.parametrize("point", ["before_outputs", "after_sinks"])
def test_a_crash_inside_a_batch_replays_the_whole_table_exactly_once(
    spark: SparkSession, tmp_path: Path, point: str
) -> None:
    fault = CrashOnce(point, 3)
    with pytest.raises(Exception, match="crash at"):
        _run(spark, tmp_path, "executors", fault)
    assert fault.fired == [3]
    _run(spark, tmp_path, "executors")  # batch 3 again: its keys must not be applied twice
    assert _outputs(tmp_path)["books"] == EXPECTED_BOOKS


DEPOSITS = [[("a", 10), ("b", 5)], [], [("c", 1)], [("a", 2)]]
TRANSFERS = [[("a", "b", 3)], [("b", "c", 8)], [], [("c", "a", 4), ("a", "d", 1)]]
AUDITS = [["x"], ["y"], [], ["z", "w"]]


def test_a_merge_of_chains_feeds_executor_state(spark: SparkSession, tmp_path: Path) -> None:
    """The bank: balances folded from `merge_unordered()` of deposits and transfers (a
    flat_map of each), read whole by the audit's sum: on the executors, with the same
    reports as the driver path and the simulator's replay."""
    feeds = {"deposit": DEPOSITS, "transfer": TRANSFERS, "audit": AUDITS}
    types = {"deposit": tuple[str, int], "transfer": tuple[str, str, int], "audit": str}
    inputs = {}
    for port, entries in feeds.items():
        w = FeedWriter(str(tmp_path / port), from_python(types[port]))
        for e in entries:
            w.send_many(e)
        inputs[port] = f"feed:{tmp_path / port}?maxEntriesPerTrigger=1"
    got = {}
    for mode in ("executors", "driver"):
        out = tmp_path / f"report-{mode}"
        runner = FlowRunner(
            bank.build(),
            spark=spark,
            checkpoint=str(tmp_path / f"ck-{mode}"),
            inputs=inputs,
            outputs={"audit_report": f"json:{out}"},
            keyed_state=mode,
        )
        run_once(runner)
        placement = runner.plan.stages[0].placement
        assert placement is not None
        balances = placement.placements[0]
        assert balances.executors == (mode == "executors"), balances.why
        if mode == "executors":
            assert "read whole by values()" in balances.why, balances.why
            report = verify_runner(runner)
            assert report.identical and report.outputs > 0, str(report)
        got[mode] = {b: sorted(rows) for b, rows in json_batches(out).items()}
    assert got["executors"] == got["driver"]
    assert got["executors"] == {0: [("x", (15, 15))], 1: [("y", (15, 15))], 3: [("w", (18, 18)), ("z", (18, 18))]}


def _tally() -> hl.Flow:
    """A keyed count (algebraic: Spark's native aggregation keeps it) read whole each tick,
    and looked up by requests that are not its own input's keys."""
    flow = hl.FlowBuilder("tally")
    p = flow.process(Ledger)
    counts = p.source("move", tuple[str, int]).into_keyed().count()
    tick = p.tick()
    snap = counts.snapshot(tick, nondet("any prefix of the moves"))
    snap.entries().all_ticks().sink("books")
    snap.values().fold_commutative(0, lambda s, c: s + c).into_stream().all_ticks().sink("total")
    who = p.source("ask", str).batch(tick, nondet("any grouping")).map(lambda a: (a, 0)).into_keyed()
    who.lookup_keyed_singleton(snap).entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("asked")
    return flow.finalize()


def test_an_algebraic_count_read_whole_is_native_and_answers_like_the_driver(
    spark: SparkSession, tmp_path: Path
) -> None:
    got = {}
    for mode in ("executors", "driver"):
        d = tmp_path / mode
        outs = {s: f"json:{d / s}" for s in ("books", "total", "asked")}
        runner = FlowRunner(
            _tally(), spark=spark, checkpoint=str(d / "ck"), inputs=_feeds(d), outputs=outs, keyed_state=mode
        )
        run_once(runner)
        placement = runner.plan.stages[0].placement
        assert placement is not None
        (p,) = placement.placements
        assert p.native == (mode == "executors"), p.describe()
        if mode == "executors":
            assert "read whole by" in p.why and "Parquet" in p.why, p.why
            report = verify_runner(runner)
            assert report.identical and report.outputs > 0, str(report)
        got[mode] = _outputs(d)
    assert got["executors"] == got["driver"]
    assert got["executors"]["books"][3] == [("a", 4), ("b", 2), ("c", 1)]
    assert got["executors"]["total"] == {0: [3], 1: [4], 2: [4], 3: [7]}
    assert got["executors"]["asked"] == {0: [("a", 2), ("z",)], 1: [("b", 1)], 2: [("a", 2), ("c", 1)], 3: [("a", 4)]}


def test_which_tables_a_batch_updated_is_one_job(spark: SparkSession) -> None:
    """`updated_tables`: one job answers for every state read whole (one emptiness check per
    state was one job each); a condition no row meets, and a batch without rows, are False."""
    from pyspark.sql import functions as F

    from hydrolite.planner.spark.channel_versions import updated_tables

    sc = spark.sparkContext
    df = spark.range(10).withColumn("tag", F.col("id") % 3)
    conditions = {"whole:a": F.col("tag") == 1, "whole:b": F.col("id") > 100, "whole:c": F.lit(True)}
    sc.setJobGroup("hl-updated-tables", "updated_tables")
    try:
        assert updated_tables(df, conditions) == {"whole:a": True, "whole:b": False, "whole:c": True}
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert len(sc.statusTracker().getJobIdsForGroup("hl-updated-tables")) == 1
    assert updated_tables(df.filter("id < 0"), {"whole:a": F.lit(True)}) == {"whole:a": False}
    assert updated_tables(df, {}) == {}


def _two_tables() -> hl.Flow:
    """Two states read whole in one query, each fed by its own input: a Python fold (the
    `transformWithState` processor) and a count (Spark's native aggregation). A batch with
    only one input's elements updates one of them; the other's copy is read as kept."""
    flow = hl.FlowBuilder("two_tables")
    p = flow.process(Ledger)
    books = p.source("move", tuple[str, int]).into_keyed().fold(0, lambda acc, x: acc * 10 + x)
    asked = p.source("ask", str).map(lambda a: (a, 1)).into_keyed().count()
    tick = p.tick()
    b = books.snapshot(tick, nondet("any prefix of the moves"))
    a = asked.snapshot(tick, nondet("any prefix of the asks"))
    b.entries().cross_singleton(a.values().fold_commutative(0, lambda s, c: s + c)).all_ticks().sink("books")
    a.entries().cross_singleton(b.values().fold_commutative(0, lambda s, v: s + v)).all_ticks().sink("asked")
    return flow.finalize()


def test_two_tables_read_whole_where_a_batch_updates_one(spark: SparkSession, tmp_path: Path) -> None:
    """The expected tables, and the simulator's replay of the run (the driver path is the
    other tests' business)."""
    moves = [[("a", 1), ("b", 2)], [], [("a", 3)], []]
    asks = [[], ["x", "y", "x"], [], ["y"]]
    inputs = {}
    for port, entries, t in (("move", moves, tuple[str, int]), ("ask", asks, str)):
        w = FeedWriter(str(tmp_path / port), from_python(t))
        for e in entries:
            w.send_many(e)
        inputs[port] = f"feed:{tmp_path / port}?maxEntriesPerTrigger=1"
    outs = {s: f"json:{tmp_path / s}" for s in ("books", "asked")}
    runner = FlowRunner(
        _two_tables(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs=inputs,
        outputs=outs,
        keyed_state="executors",
    )
    run_once(runner)
    placement = runner.plan.stages[0].placement
    assert placement is not None
    fold, count = placement.placements
    assert fold.executors and not fold.native and "read whole by" in fold.why, fold.describe()
    assert count.native and "read whole by" in count.why, count.describe()
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    got = {s: {i: sorted(r, key=repr) for i, r in json_batches(tmp_path / s).items()} for s in outs}
    # (each row: (the key and its value), the other table's sum of values)
    assert got["books"] == {
        0: [(("a", 1), 0), (("b", 2), 0)],
        1: [(("a", 1), 3), (("b", 2), 3)],
        2: [(("a", 13), 3), (("b", 2), 3)],
        3: [(("a", 13), 4), (("b", 2), 4)],
    }
    assert got["asked"] == {
        1: [(("x", 2), 3), (("y", 1), 3)],
        2: [(("x", 2), 15), (("y", 1), 15)],
        3: [(("x", 2), 15), (("y", 2), 15)],
    }
