"""Keyed state the tick folds, kept as a Parquet table on the executors (`tick_table.py`).

A carried keyed aggregate whose input is no chain of the query's inputs — here, a join's
pairs re-keyed by city — cannot be a second stateful operator after the join's
`transformWithState` (SPARK-47960). Under `keyed_state='executors'` it is no longer kept in
the driver's store: the tick folds each batch's touched keys on the executors and rewrites
the table as Parquet under the checkpoint. These tests pin the answers (worked by hand,
equal to the driver path's and to the simulator's replay), a crash inside a batch (exactly
once), the plan's home and reason, a resume of a driver checkpoint, keys equal in Python in
two forms, and a failing function.
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
from tests.spark.runs import feeds, json_batches, run_once

pytestmark = pytest.mark.spark


class Shop:
    """Tag of the shop process."""


def build(divide: bool = False) -> hl.Flow:
    """Orders joined with the cities customers registered (both unbounded), re-keyed by city:
    each city's revenue (a fold, read whole), number of pairs (a count, looked up by the
    asks) and largest doubled amount (a reduce, looked up too). With `divide`, the revenue
    fold divides by the amount (fails on 0)."""
    flow = hl.FlowBuilder("cities")
    p = flow.process(Shop)
    pairs = p.source("order", tuple[str, int]).join(p.source("home", tuple[str, str]))  # (who, (amount, city))
    tick = p.tick()
    per_city = pairs.map(lambda kv: (kv[1][1], kv[1][0])).into_keyed()
    if divide:
        revenue = per_city.fold_commutative(0, lambda s, a: s + 100 // a, name="revenue")
    else:
        revenue = per_city.fold_commutative(0, lambda s, a: s + a, name="revenue")
    matches = per_city.count(name="matches")
    largest = per_city.map(lambda a: a * 2).reduce_commutative(lambda a, b: max(a, b), name="largest")
    revenue.snapshot(tick, nondet("any prefix of the pairs")).entries().all_ticks().sink("revenue")
    asks = p.source("ask", str).batch(tick, nondet("any grouping")).map(lambda a: (a, 0)).into_keyed()
    seen = matches.snapshot(tick, nondet("any prefix of the pairs"))
    asks.lookup_keyed_singleton(seen).entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("matches")
    top = largest.snapshot(tick, nondet("any prefix of the pairs"))
    asks.lookup_keyed_singleton(top).entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("largest")
    return flow.finalize()


ORDERS = [[("ann", 5), ("bob", 3)], [("ann", 2)], [], [("cid", 4), ("bob", -1), ("ann", 1)]]
HOMES = [[("ann", "oslo")], [("bob", "oslo")], [("cid", "nice"), ("ann", "rome")], []]
ASKS = [["oslo", "rome"], ["oslo"], ["rome", "nice"], ["oslo", "nice", "rome"]]
SINKS = ("revenue", "matches", "largest")

#: every batch's answers, one entry of each feed per batch (worked by hand from the data)
EXPECTED = {
    "revenue": {
        0: [("oslo", 5)],
        1: [("oslo", 10)],  # ann's 2 in oslo, bob's 3 meets bob's oslo
        2: [("oslo", 10), ("rome", 7)],  # rome pairs with both of ann's orders
        3: [("nice", 4), ("oslo", 10), ("rome", 8)],  # bob's -1 and ann's 1 in oslo, ann's 1 in rome
    },
    # (a city without pairs: Spark leaves the null out of the JSON)
    "matches": {
        0: [("oslo", 1), ("rome",)],
        1: [("oslo", 3)],
        2: [("nice",), ("rome", 2)],
        3: [("nice", 1), ("oslo", 5), ("rome", 3)],
    },
    "largest": {
        0: [("oslo", 10), ("rome",)],
        1: [("oslo", 10)],
        2: [("nice",), ("rome", 10)],
        3: [("nice", 8), ("oslo", 10), ("rome", 10)],
    },
}


def _feeds(d: Path, upto: int = len(ORDERS)) -> dict[str, str]:
    """The feeds' first `upto` entries (those not written yet), and the inputs reading them."""
    types = {"order": tuple[str, int], "home": tuple[str, str], "ask": str}
    given = {"order": ORDERS, "home": HOMES, "ask": ASKS}
    return feeds(d, {p: (t, None, given[p][feed_end(str(d / p)) : upto]) for p, t in types.items()})


def _run(spark: SparkSession, d: Path, keyed_state: str, **kw: Any) -> FlowRunner:
    runner = FlowRunner(
        build(kw.pop("divide", False)),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=kw.pop("inputs"),
        outputs={s: f"json:{d / s}" for s in SINKS},
        keyed_state=keyed_state,
        **kw,
    )
    return run_once(runner)


def _outputs(d: Path) -> dict[str, dict[int, list[Any]]]:
    return {s: {b: sorted(rows, key=repr) for b, rows in json_batches(d / s).items()} for s in SINKS}


def test_a_fold_of_what_the_tick_computes_lives_on_the_executors(spark: SparkSession, tmp_path: Path) -> None:
    runner = _run(spark, tmp_path / "exec", "executors", inputs=_feeds(tmp_path))
    placement = runner.plan.stages[0].placement
    assert placement is not None
    by_op = {p.node.op: p for p in placement.placements}
    for op in ("fold", "count", "reduce"):
        p = by_op[op]
        assert p.executors and p.tick_table, p.describe()
        assert "Parquet table under the query's checkpoint, folded by the tick" in p.describe()
        assert "may change the join's key" in p.why  # (why it is no executor region's)
    assert _outputs(tmp_path / "exec") == EXPECTED
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    _run(spark, tmp_path / "driver", "driver", inputs=_feeds(tmp_path))
    assert _outputs(tmp_path / "driver") == EXPECTED
    blobs = tmp_path / "exec" / "ck" / runner.plan.stages[0].name / "state" / "blobs"
    assert blobs.is_dir() and any(blobs.iterdir())  # (the tables: Parquet the executors wrote)


def test_a_crash_inside_a_batch_folds_its_elements_exactly_once(spark: SparkSession, tmp_path: Path) -> None:
    for point, batch in (("after_sinks", 2), ("before_outputs", 3)):
        fault = CrashOnce(point, batch)
        with pytest.raises(Exception, match="crash at"):
            _run(spark, tmp_path, "executors", inputs=_feeds(tmp_path), fault=fault)
        assert fault.fired == [batch]
    _run(spark, tmp_path, "executors", inputs=_feeds(tmp_path))
    assert _outputs(tmp_path) == EXPECTED


def test_a_checkpoint_keeps_such_state_where_it_is(spark: SparkSession, tmp_path: Path) -> None:
    """A checkpoint written with the state on the driver: `auto` keeps it there, `executors`
    refuses to start it empty elsewhere; one written here resumes here under `auto`."""
    _run(spark, tmp_path / "d", "driver", inputs=_feeds(tmp_path / "d", upto=2))
    with pytest.raises(PlanChangedError, match="as a Parquet table under the checkpoint"):
        _run(spark, tmp_path / "d", "executors", inputs=_feeds(tmp_path / "d"))
    runner = _run(spark, tmp_path / "d", "auto", inputs=_feeds(tmp_path / "d"))
    assert not any(p.tick_table for p in runner.plan.stages[0].placement.placements)  # type: ignore[union-attr]
    assert _outputs(tmp_path / "d") == EXPECTED
    _run(spark, tmp_path / "e", "executors", inputs=_feeds(tmp_path / "e", upto=2))
    runner = _run(spark, tmp_path / "e", "auto", inputs=_feeds(tmp_path / "e"))
    placement = runner.plan.stages[0].placement
    assert placement is not None and all(p.tick_table for p in placement.placements if p.node.op == "count")
    assert _outputs(tmp_path / "e") == EXPECTED


def test_a_failing_fold_names_operator_element_and_batch(spark: SparkSession, tmp_path: Path) -> None:
    inputs = _feeds(tmp_path)
    FeedWriter(str(tmp_path / "order"), from_python(tuple[str, int])).send_many([("bob", 0)])  # batch 4
    for port, t in (("home", tuple[str, str]), ("ask", str)):
        FeedWriter(str(tmp_path / port), from_python(t)).send_many([])
    with pytest.raises(UserFunctionError) as err:
        _run(spark, tmp_path, "executors", inputs=inputs, divide=True)
    text = str(err.value)
    assert "fold() failed on element ('oslo', 0) in batch 4" in text, text
    assert "ZeroDivisionError" in text and "test_tick_tables.py" in text and err.value.batch_id == 4


def test_keys_equal_in_python_are_one_key_in_their_first_form(spark: SparkSession, tmp_path: Path) -> None:
    """Keys of an undeclared type in several forms (1, 1.0, True), over batches and within
    one: one key, kept in the form it first came in, as the simulator's dict keeps it; and a
    key's value that becomes None is its value from then on."""
    flow = hl.FlowBuilder("forms")
    p = flow.process(Shop)
    tick = p.tick()
    xs = p.source("x", int)
    numbered = xs.enumerate()  # (its output is no chain: the count is the driver's, the pairs the tick's)

    def form(iv: tuple[int, int]) -> tuple[object, int]:
        return ((1, 1.0, True)[iv[1] % 3] if iv[1] > 0 else 0, iv[1])

    counts = numbered.map(form).into_keyed().count(name="forms")
    counts.snapshot(tick, nondet("any prefix")).entries().map(lambda kv: (repr(kv[0]), kv[1])).all_ticks().sink("out")
    # (a value that becomes None is the key's new value, not a missing one)
    newest = numbered.map(lambda iv: (iv[1] % 2, None if iv[1] == 7 else iv[1])).into_keyed().last(name="newest")
    newest.snapshot(tick, nondet("any prefix")).entries().map(lambda kv: (kv[0], repr(kv[1]))).all_ticks().sink("last")
    program = flow.finalize()
    batches = [[5, 6], [7, 0], [8]]
    w = FeedWriter(str(tmp_path / "x"), from_python(int))
    for b in batches:
        w.send_many(b)
    got: dict[str, dict[int, list[Any]]] = {}
    for ks in ("executors", "driver"):
        runner = FlowRunner(
            program,
            spark=spark,
            checkpoint=str(tmp_path / ks / "ck"),
            inputs={"x": f"feed:{tmp_path / 'x'}?maxEntriesPerTrigger=1"},
            outputs={"out": f"json:{tmp_path / ks / 'out'}", "last": f"json:{tmp_path / ks / 'last'}"},
            keyed_state=ks,
        )
        run_once(runner)
        placement = runner.plan.stages[0].placement
        assert placement is not None
        assert any(p.tick_table for p in placement.placements) == (ks == "executors")
        got[ks] = {b: sorted(rows) for b, rows in json_batches(tmp_path / ks / "out").items()}
        got[f"{ks}_last"] = {b: sorted(rows) for b, rows in json_batches(tmp_path / ks / "last").items()}
        report = verify_runner(runner)
        assert report.identical and report.outputs > 0, str(report)
    assert got["executors"] == got["driver"]
    # 5 -> True first, 6 -> 1, 7 -> 1.0, 0 -> 0, 8 -> True: one key, in the form it first came in
    assert got["executors"] == {0: [("True", 2)], 1: [("0", 1), ("True", 3)], 2: [("0", 1), ("True", 4)]}
    assert got["executors_last"] == got["driver_last"]
    assert got["executors_last"] == {0: [(0, "6"), (1, "5")], 1: [(0, "0"), (1, "None")], 2: [(0, "8"), (1, "None")]}
