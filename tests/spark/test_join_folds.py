"""Keyed folds of a join's output, kept with the join on the executors
(`placement._Finder.joined`, `keyed_processor.Processor._join`).

A commutative fold, reduce or count keyed by the join's key is folded by the join's own
`transformWithState` processor from each batch's new pairs, next to both sides' histories:
no second stateful operator, nothing through the driver. These tests pin the answers
(equal to the driver path's and to the simulator's replay), a crash inside a batch (exactly
once), a fold added to a checkpoint that kept only the join, and the plan's reasons.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.errors import UserFunctionError
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.feed import FeedWriter, feed_end
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.upgrade import PlanChangedError
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import json_batches, run_once

pytestmark = pytest.mark.spark


class Shop:
    """Tag of the shop process."""


def build(folds: bool = True, asked: bool = True) -> hl.Flow:
    """Orders joined with the cities a customer registered (both unbounded): each customer's
    revenue over the pairs (a sum, read whole) and number of pairs (a count, looked up per
    customer by the asks). Without `folds`: the join alone (what an older program kept);
    without `asked`, the tick no longer reads the asks' own rows."""
    flow = hl.FlowBuilder("shop")
    p = flow.process(Shop)
    pairs = p.source("order", tuple[str, int]).join(p.source("home", tuple[str, str]))  # (who, (amount, city))
    tick = p.tick()
    pairs.batch(tick, nondet("any prefix of the pairs")).all_ticks().sink("pairs")  # (all in the tick's query)
    asks = p.source("ask", str).batch(tick, nondet("any grouping"))
    if asked:  # (so the query reads its inputs as the same Spark sources with or without folds)
        asks.all_ticks().sink("asked")
    if not folds:
        return flow.finalize()
    revenue = (
        pairs.filter(lambda kv: kv[1][0] > 0)
        .into_keyed()
        .map(lambda ac: ac[0])
        .fold_commutative(0, lambda s, a: s + a, name="revenue")
    )
    matches = pairs.map(lambda kv: (kv[0], kv[1][1])).into_keyed().count(name="matches")
    revenue.snapshot(tick, nondet("any prefix of the pairs")).entries().all_ticks().sink("revenue")
    who = asks.map(lambda a: (a, 0)).into_keyed()
    seen = matches.snapshot(tick, nondet("any prefix of the pairs"))
    who.lookup_keyed_singleton(seen).entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("matches")
    return flow.finalize()


ORDERS = [[("ann", 5), ("bob", 3)], [("ann", 2)], [], [("cid", 4), ("bob", -1), ("ann", 1)]]
HOMES = [[("ann", "oslo")], [("bob", "rome")], [("cid", "nice"), ("ann", "bergen")], []]
ASKS = [["ann", "zed"], ["bob"], ["ann", "cid"], ["bob", "cid"]]
SINKS = ("revenue", "matches")

#: every batch's answers, one entry of each feed per batch (worked by hand from the data)
EXPECTED = {
    "revenue": {
        0: [("ann", 5)],
        1: [("ann", 7), ("bob", 3)],
        2: [("ann", 14), ("bob", 3)],  # bergen pairs with both earlier orders of ann
        3: [("ann", 16), ("bob", 3), ("cid", 4)],  # bob's -1 is filtered out, ann's 1 pairs twice
    },
    # (a customer without pairs: Spark leaves the null count out of the JSON)
    "matches": {0: [("ann", 1), ("zed",)], 1: [("bob", 1)], 2: [("ann", 4), ("cid",)], 3: [("bob", 2), ("cid", 1)]},
}


def _feeds(d: Path, upto: int = len(ORDERS)) -> dict[str, str]:
    """The feeds' first `upto` entries (those not written yet), and the inputs reading them."""
    types = {"order": tuple[str, int], "home": tuple[str, str], "ask": str}
    for port, entries in (("order", ORDERS), ("home", HOMES), ("ask", ASKS)):
        w = FeedWriter(str(d / port), from_python(types[port]))
        for e in entries[feed_end(str(d / port)) : upto]:
            w.send_many(e)
    cap = "?maxEntriesPerTrigger=1"  # one entry per micro-batch: batch ids are deterministic
    return {port: f"feed:{d / port}{cap}" for port in types}


def _run(spark: SparkSession, d: Path, keyed_state: str, **kw: Any) -> FlowRunner:
    folds, asked = kw.pop("folds", True), kw.pop("asked", True)
    outs = {s: f"json:{d / s}" for s in (*(SINKS if folds else ()), "pairs", *(("asked",) if asked else ()))}
    runner = FlowRunner(
        build(folds, asked),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=kw.pop("inputs"),
        outputs=outs,
        keyed_state=keyed_state,
        **kw,
    )
    return run_once(runner)


def _outputs(d: Path) -> dict[str, dict[int, list[Any]]]:
    return {s: {b: sorted(rows, key=repr) for b, rows in json_batches(d / s).items()} for s in SINKS}


def test_folds_of_a_join_stay_with_the_join_and_answer_like_the_driver(spark: SparkSession, tmp_path: Path) -> None:
    runner = _run(spark, tmp_path / "exec", "executors", inputs=_feeds(tmp_path))
    placement = runner.plan.stages[0].placement
    assert placement is not None and placement.region is not None
    by_op = {p.node.op: p for p in placement.placements}
    assert by_op["join"].executors, by_op["join"].why
    for op in ("fold", "count"):
        assert by_op[op].executors and f"folded by join() {__name__.split('.')[-1]}" in by_op[op].why, by_op[op].why
    assert [s.joined is not None for s in placement.region.states] == [True, True]
    assert _outputs(tmp_path / "exec") == EXPECTED
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    _run(spark, tmp_path / "driver", "driver", inputs=_feeds(tmp_path))
    assert _outputs(tmp_path / "driver") == EXPECTED


def test_a_crash_inside_a_batch_folds_its_pairs_exactly_once(spark: SparkSession, tmp_path: Path) -> None:
    fault = CrashOnce("after_sinks", 2)
    with pytest.raises(Exception, match="crash at"):
        _run(spark, tmp_path, "executors", inputs=_feeds(tmp_path), fault=fault)
    assert fault.fired == [2]
    _run(spark, tmp_path, "executors", inputs=_feeds(tmp_path))  # batch 2 again: its pairs folded once
    assert _outputs(tmp_path) == EXPECTED


def test_a_fold_added_next_to_a_kept_join_starts_empty_where_it_is_reset(spark: SparkSession, tmp_path: Path) -> None:
    """A checkpoint written when the join kept only its sides (its stored value then had no
    folds): resuming with the folds added is refused until they are reset, then they fold the
    pairs of the batches after the resume only, and the join still pairs with all history."""
    _run(spark, tmp_path, "executors", inputs=_feeds(tmp_path, upto=2), folds=False)
    with pytest.raises(Exception, match="reset-state"):
        _run(spark, tmp_path, "executors", inputs=_feeds(tmp_path))
    _run(spark, tmp_path, "executors", inputs=_feeds(tmp_path), reset_state=["fold:revenue", "count:matches"])
    got = _outputs(tmp_path)
    assert got["revenue"] == {2: [("ann", 7)], 3: [("ann", 9), ("cid", 4)]}  # bergen's pairs with older orders, on
    assert got["matches"] == {2: [("ann", 2), ("cid",)], 3: [("bob", 1), ("cid", 1)]}
    pairs = json_batches(tmp_path / "pairs")
    assert sorted(pairs[2]) == [("ann", (2, "bergen")), ("ann", (5, "bergen"))]


def test_a_resume_whose_plan_reads_other_spark_sources_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    """Spark's offset log is positional per source, and the query scans its inputs once per
    state branch plus once for the tick: an edit that drops the tick's own read of the asks
    leaves three sources where the checkpoint has four. Refused before the query starts,
    with what changed (before: Spark's own assertion, after the plan check passed)."""
    runner = _run(spark, tmp_path, "executors", inputs=_feeds(tmp_path, upto=2), folds=False)
    (stage,) = runner.stages
    assert stage.sources == ["ask", "home", "order", "ask"]  # the join's branch reads all, then the tick the asks
    offsets = tmp_path / "ck" / stage.stage.name / "spark" / "offsets"
    last = max((f for f in offsets.iterdir() if f.name.isdigit()), key=lambda f: int(f.name))
    assert len(last.read_text().splitlines()[2:]) == len(stage.sources)  # (v1, metadata, then one per source)
    resets = ["fold:revenue", "count:matches"]
    record = (tmp_path / "ck" / "plan.json").read_bytes()
    with pytest.raises(PlanChangedError, match=r"restores offsets by position") as err:
        _run(spark, tmp_path, "executors", inputs=_feeds(tmp_path), reset_state=resets, asked=False)
    assert "['ask', 'home', 'order', 'ask']" in str(err.value) and "fix: " in str(err.value)
    assert (tmp_path / "ck" / "plan.json").read_bytes() == record  # the refused run changed nothing
    # as it was: it resumes
    _run(spark, tmp_path, "executors", inputs=_feeds(tmp_path), reset_state=resets)
    assert _outputs(tmp_path)["revenue"] == {2: [("ann", 7)], 3: [("ann", 9), ("cid", 4)]}


def test_a_failing_fold_of_the_pairs_names_operator_element_and_batch(spark: SparkSession, tmp_path: Path) -> None:
    flow = hl.FlowBuilder("shop_fails")
    p = flow.process(Shop)
    pairs = p.source("order", tuple[str, int]).join(p.source("home", tuple[str, str]))
    shares = pairs.into_keyed().map(lambda ac: ac[0]).fold_commutative(0, lambda s, a: s + 100 // a)
    tick = p.tick()
    asks = p.source("ask", str).batch(tick, nondet("any grouping")).map(lambda a: (a, 0)).into_keyed()
    asks.lookup_keyed_singleton(shares.snapshot(tick, nondet("any prefix"))).entries().all_ticks().sink("out")
    inputs = _feeds(tmp_path)  # batches 0-3 as above (no amount is 0)
    FeedWriter(str(tmp_path / "order"), from_python(tuple[str, int])).send_many([("bob", 0)])  # batch 4: meets rome
    for port, t in (("home", tuple[str, str]), ("ask", str)):
        FeedWriter(str(tmp_path / port), from_python(t)).send_many([])
    runner = FlowRunner(
        flow.finalize(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs=inputs, keyed_state="executors"
    )
    placement = runner.plan.stages[0].placement
    assert placement is not None and placement.region is not None and placement.region.states[0].joined is not None
    with runner, pytest.raises(UserFunctionError) as err:
        runner.start()
        runner.process_all_available()
    text = str(err.value)
    assert "fold() failed on element ('bob', 0) in batch 4 of query 'tick0'" in text, text
    assert "ZeroDivisionError" in text and "test_join_folds.py" in text and err.value.batch_id == 4
