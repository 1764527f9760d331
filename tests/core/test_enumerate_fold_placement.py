"""Which keyed aggregates of a keyed `enumerate()`'s pairs its own processor keeps
(`kept_with.py`), and what `hydrolite plan` says of the others: pure planning, no Spark
session (the answers on real Spark: tests/spark/test_enumerate_folds.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import hydrolite as hl
from hydrolite.ir import nodes as n
from hydrolite.planner.spark.placement import Placement, place
from hydrolite.planner.spark.stages import plan_flow
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
def test_re_keyed_aggregates_are_the_ticks_tables_and_say_why(fold: Callable[[Any], Any]) -> None:
    """Keyed by something else than the enumerate's key: its groups are not the enumerate's,
    so the enumerate stays Spark's own count and the tick folds the aggregate into a Parquet
    table on the executors (`tick_table.py`; before: on the driver), saying why."""
    placed, enumerate_, _ = _placed(fold)
    assert placed.tick_table and "the output of enumerate() " in placed.why, placed.why
    assert "may change the enumerate()'s key" in placed.why or "loses the enumerate()'s key" in placed.why
    assert enumerate_.native, enumerate_.why


def test_under_driver_state_both_stay_where_the_option_puts_them() -> None:
    placed, enumerate_, region = _placed(lambda e: e.count(), "driver")
    assert not placed.executors and not enumerate_.executors and region is None, placed.why


def _seen_placed(
    distinct: Callable[[Any], Any], held: dict[str, str] | None = None
) -> tuple[Placement, Placement, Any]:
    """Where `distinct(numbered)` — a `unique()` / `keys()` of a keyed enumerate's output,
    sunk — lives under `executors`, and the enumerate; `held`: where a checkpoint keeps each
    (by operator name)."""
    flow = hl.FlowBuilder("seen")
    p = flow.process(P)
    numbered = p.source("xs", tuple[int, int]).into_keyed().enumerate()
    distinct(numbered).sink("out")
    (stage,) = plan_flow(flow.finalize()).stages
    kept: dict[int | str, str] = {id(x): (held or {})[x.op] for x in stage.stateful if x.op in (held or {})}
    sp = place(stage, executors=True, kept=kept)
    (found,) = [x for x in sp.placements if x.node.op in ("unique", "keys")]
    (enumerate_,) = [x for x in sp.placements if x.node.op == "enumerate"]
    return found, enumerate_, sp.region


@pytest.mark.parametrize(
    "distinct",
    [
        lambda e: e.keys(),
        lambda e: e.map(lambda iv: iv[1] % 2).unique().entries(),
        lambda e: e.entries().map(lambda kv: (kv[0], kv[1][1] > 4)).unique(),
    ],
    ids=["keys", "unique-of-a-value-map", "unique-of-key-keeping-entries"],
)
def test_what_the_enumerates_pairs_saw_is_kept_by_the_enumerate(distinct: Callable[[Any], Any]) -> None:
    """Each element names the enumerate's key, so that key's group alone decides whether it
    is new (`keyed_processor.JoinedSeen`): the enumerate goes per key, not native."""
    found, enumerate_, region = _seen_placed(distinct)
    assert found.executors and "kept by enumerate() " in found.why, found.why
    assert enumerate_.executors and not enumerate_.native, enumerate_.why
    (seen,) = [s for s in region.seen if s.node is found.node]
    assert seen.joined is not None and seen.joined.input is enumerate_.node and seen.chains == ()


@pytest.mark.parametrize(
    "distinct",
    [lambda e: e.values().unique(), lambda e: e.entries().map(lambda kv: (kv[1][1], kv[0])).unique()],
    ids=["values", "re-keying-map"],
)
def test_what_comes_from_two_keys_is_the_ticks_table_and_says_why(distinct: Callable[[Any], Any]) -> None:
    """An element two keys may give (an (index, value) pair; a pair led by the value) is not
    one group's to decide: the unique() keeps what it saw in the tick's table on the executors
    (`tick_seen.py`; before, on the driver) saying why, the enumerate native."""
    found, enumerate_, _ = _seen_placed(distinct)
    assert found.tick_table and "the output of enumerate() " in found.why, found.why
    assert "may change the enumerate()'s key" in found.why or "loses the enumerate()'s key" in found.why
    assert enumerate_.native, enumerate_.why


def test_a_checkpoint_keeping_them_on_the_driver_keeps_them_there() -> None:
    """A resumed run whose checkpoint kept the unique() on the driver and the enumerate as
    Spark's count (what hydrolite before did) resumes them where they are."""
    found, enumerate_, _ = _seen_placed(lambda e: e.keys(), held={"keys": "driver", "enumerate": "native"})
    assert not found.executors and enumerate_.native, (found.why, enumerate_.why)
