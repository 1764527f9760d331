"""Which keyed folds of a join's pairs the join's own processor folds
(`placement._Finder.joined`), and what `hydrolite plan` says of the others: pure planning,
no Spark session (the answers on real Spark: tests/spark/test_join_folds.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import hydrolite as hl
from hydrolite import nondet
from hydrolite.ir import nodes as n
from hydrolite.planner.spark.placement import Placement, place_all
from hydrolite.planner.spark.placement_why import keeps_key
from hydrolite.planner.spark.stages import Stage, plan_flow

ND = nondet("any prefix of the pairs")


class P:
    """Tag of the process."""


def _placed(fold: Callable[[Any], Any], keyed_state: str = "executors") -> tuple[Placement, Any]:
    """Where the keyed aggregate `fold(pairs)` of a join of two sources lives, read per key."""
    flow = hl.FlowBuilder("placed")
    p = flow.process(P)
    pairs = p.source("xs", tuple[int, int]).join(p.source("ys", tuple[int, str]))
    tick = p.tick()
    stage = asked_and_placed(flow, p, tick, fold(pairs), keyed_state)
    assert stage.placement is not None
    (found,) = [x for x in stage.placement.placements if x.node.op in ("fold", "reduce", "count", "first")]
    return found, stage.placement.region


def asked_and_placed(flow: hl.FlowBuilder, p: Any, tick: Any, state: Any, keyed_state: str) -> Stage:
    """The one stage of `flow` once the keyed `state` is read per key by the requests of
    another source batched into `tick`, its states placed as `keyed_state` puts them."""
    table = state.snapshot(tick, ND)
    asks = p.source("ask", int).batch(tick, ND).map(lambda a: (a, a)).into_keyed()
    asks.lookup_keyed_singleton(table).entries().all_ticks().sink("out")
    plan = plan_flow(flow.finalize())
    place_all(plan, keyed_state, "local[2]")
    (stage,) = plan.stages
    return stage


@pytest.mark.parametrize(
    "fold",
    [
        lambda j: j.into_keyed().count(),
        lambda j: j.into_keyed().map(lambda v: v[0]).fold_commutative(0, lambda a, x: a + x),
        lambda j: j.filter(lambda kv: kv[1][0] > 0).map(lambda kv: (kv[0], kv[1][1])).into_keyed().count(),
        lambda j: j.into_keyed().filter_map(lambda v: v[0] or None).reduce_commutative(max),
        lambda j: j.into_keyed().flat_map_unordered(lambda v: [v[0], v[0]]).count(),
    ],
    ids=["count", "fold-of-a-map", "filter-then-keeping-map", "reduce-of-a-filter-map", "count-of-a-flat-map"],
)
def test_a_fold_that_keeps_the_join_key_is_folded_by_the_join(fold: Callable[[Any], Any]) -> None:
    placed, region = _placed(fold)
    assert placed.executors and "folded by join()" in placed.why, placed.why
    (state,) = region.states
    assert state.joined is not None and isinstance(state.joined.input, n.Join) and state.chains == ()
    assert [j.node for j in region.joins] == [state.joined.input]
    assert len(region.lookups) == 1  # its lookups are answered from the join's groups too


@pytest.mark.parametrize(
    ("fold", "why"),
    [
        (
            lambda j: j.map(lambda kv: (kv[1][0], kv[0])).into_keyed().count(),
            "may change the join's key: only filter() and a map() returning (kv[0], ...)",
        ),
        (
            lambda j: j.into_keyed().entries().into_keyed().count(),
            "is keyed again by entries()",
        ),
        (
            lambda j: j.into_keyed().assume_ordering(nondet("any order")).fold(0, lambda a, x: a * 2 + x[0]),
            "has no order: only a commutative fold or reduce, a count, unique() or keys()",
        ),
    ],
    ids=["re-keying-map", "entries-then-keyed", "order-sensitive-fold"],
)
def test_other_folds_of_a_join_are_the_ticks_tables_and_say_why(fold: Callable[[Any], Any], why: str) -> None:
    """Not the join's to keep: the tick folds them into a Parquet table on the executors
    (`tick_table.py`; before, they stayed on the driver), saying why the join cannot."""
    placed, _ = _placed(fold)
    assert placed.executors and placed.tick_table and why in placed.why, placed.why
    assert "join()" in placed.why


def test_under_the_driver_option_the_join_keeps_its_history_and_the_fold_stays_on_the_driver() -> None:
    placed, region = _placed(lambda j: j.into_keyed().count(), keyed_state="driver")
    assert not placed.executors and region is None, placed.why


def test_keeps_key_reads_the_one_expression_of_the_function() -> None:
    def named(kv: Any) -> Any:
        return (kv[0], kv[1])

    assert keeps_key(named) and keeps_key(lambda e: (e[0], None))
    assert not keeps_key(lambda kv: (kv[-2], kv[1]))  # (the same key for pairs, but not provably for others)
    assert not keeps_key(lambda kv: [kv[0], kv[1]])  # a list: not read (conservative: it stays on the driver)
    assert not keeps_key(lambda kv, extra=0: (kv[0], extra))  # (two parameters)
    assert not keeps_key(lambda kv: (kv[True], kv[1]))  # kv[True] is kv[1]: not the key
    assert not keeps_key(lambda kv: (kv[0.0], kv[1]))  # (a float index: not read)
    assert not keeps_key(max)  # no source


def test_a_unique_of_the_pairs_is_kept_by_the_join_only_while_its_elements_keep_the_key() -> None:
    """An element that may come from two join keys would be new to each key's group: such a
    `unique()` is not kept by the join (`ExecutorSeen.joined`), and says why; its input is no
    chain, so the tick keeps what it saw in a table on the executors (`tick_seen.py`; before,
    on the driver)."""
    flow = hl.FlowBuilder("seen")
    p = flow.process(P)
    pairs = p.source("xs", tuple[int, int]).join(p.source("ys", tuple[int, str]))
    pairs.unique().sink("kept")
    pairs.into_keyed().keys().sink("keys")
    pairs.map(lambda kv: kv[1]).unique().sink("rekeyed")
    plan = plan_flow(flow.finalize())
    place_all(plan, "executors", "local[2]")
    (stage,) = plan.stages
    assert stage.placement is not None and stage.placement.region is not None
    placed = {(x.node.op, x.node.site.line): x for x in stage.placement.placements if x.node.op in ("unique", "keys")}
    kept, keys, rekeyed = (placed[k] for k in sorted(placed, key=lambda k: k[1]))
    for x in (kept, keys):
        assert x.executors and "kept by join()" in x.why, x.why
    assert rekeyed.tick_table and "may change the join's key" in rekeyed.why, rekeyed.why
    assert sorted(type(s.node).__name__ for s in stage.placement.region.seen if s.joined is not None) == [
        "Keys",
        "Unique",
    ]
