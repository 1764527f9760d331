"""Which keyed aggregates of a keyed `enumerate()`'s pairs its own processor keeps
(`kept_with.py`), and what `hydrolite plan` says of the others: pure planning, no Spark
session (the answers on real Spark: tests/spark/test_enumerate_folds.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import hydrolite as hl
from hydrolite.ir import nodes as n
from hydrolite.planner.spark.placement import Placement
from tests.core.test_join_fold_placement import asked_and_placed

AGGREGATES = ("fold", "reduce", "count", "first", "last")


class P:
    """Tag of the process."""


def _placed(fold: Callable[[Any], Any], keyed_state: str = "executors") -> tuple[Placement, Placement, Any]:
    """Where the keyed aggregate `fold(numbered)` of a keyed enumerate of a source lives (read
    per key), and where the enumerate lives."""
    flow = hl.FlowBuilder("placed")
    p = flow.process(P)
    numbered = p.source("xs", tuple[int, int]).into_keyed().enumerate()
    tick = p.tick()
    stage = asked_and_placed(flow, p, tick, fold(numbered), keyed_state)
    assert stage.placement is not None
    (found,) = [x for x in stage.placement.placements if x.node.op in AGGREGATES]
    (enumerate_,) = [x for x in stage.placement.placements if x.node.op == "enumerate"]
    return found, enumerate_, stage.placement.region


@pytest.mark.parametrize(
    "fold",
    [
        lambda e: e.count(),
        lambda e: e.map(lambda iv: iv[0] * 10 + iv[1]).fold(0, lambda a, x: a * 3 + x),
        lambda e: e.filter(lambda iv: iv[1] > 0).last(),
        lambda e: e.entries().map(lambda kv: (kv[0], kv[1][1])).into_keyed().reduce_commutative(lambda a, b: a + b),
        lambda e: e.flat_map_ordered(lambda iv: [iv[0], iv[1]]).first(),
    ],
    ids=["count", "order-sensitive-fold", "last-of-a-filter", "entries-keeping-map", "first-of-a-flat-map"],
)
def test_an_aggregate_that_keeps_the_key_is_kept_by_the_enumerate(fold: Callable[[Any], Any]) -> None:
    placed, enumerate_, region = _placed(fold)
    assert placed.executors and "folded by enumerate() " in placed.why, placed.why
    assert "new (index, element) pairs" in placed.why
    assert enumerate_.executors and not enumerate_.native, enumerate_.why  # (not a native count: it keeps the fold)
    (state,) = region.states
    assert state.joined is not None and isinstance(state.joined.input, n.Enumerate) and state.chains == ()
    assert len(region.lookups) == 1  # answered from the enumerate's groups too


@pytest.mark.parametrize(
    "fold",
    [
        lambda e: e.entries().map(lambda kv: (kv[1][1], kv[0])).into_keyed().count(),
        lambda e: e.values().map(lambda iv: (iv[1], iv[0])).into_keyed().count(),
    ],
    ids=["re-keying-map", "values"],
)
def test_re_keyed_aggregates_stay_on_the_driver_and_say_why(fold: Callable[[Any], Any]) -> None:
    """Keyed by something else than the enumerate's key: its groups are not the enumerate's,
    so the enumerate stays Spark's own count and the aggregate on the driver, saying so."""
    placed, enumerate_, _ = _placed(fold)
    assert not placed.executors and "passes through enumerate() " in placed.why, placed.why
    assert "which is not element-wise" in placed.why
    assert enumerate_.native, enumerate_.why


def test_under_driver_state_both_stay_where_the_option_puts_them() -> None:
    placed, enumerate_, region = _placed(lambda e: e.count(), "driver")
    assert not placed.executors and not enumerate_.executors and region is None, placed.why
