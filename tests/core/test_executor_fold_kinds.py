"""How the executor path folds each keyed state (`keyed_state.agg_fn`): a reduce that keeps the
newer element is `last()`, whose state is written without being read first (one round trip to
Spark's state server less per key); every other reduce reads the stored value."""

from __future__ import annotations

from typing import Any

import pytest

import hydrolite as hl
from hydrolite.ir import nodes as n
from hydrolite.planner.spark.keyed_state import _site, agg_fn


class P:
    """Tag of the process."""


def _reduce_of(f: Any) -> n.Node:
    flow = hl.FlowBuilder("kinds")
    p = flow.process(P)
    p.keyed_source("event", str, int).reduce(f).snapshot(p.tick(), hl.nondet("any version")).entries().all_ticks().sink(
        "out"
    )
    found = [x for x in flow.finalize().nodes() if isinstance(x, n.Reduce)]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize(
    ("f", "kind"),
    [
        (lambda _old, new: new, "last"),
        (lambda a, b: b, "last"),
        (lambda a, b: a, "reduce"),  # keeps the first: the stored value decides
        (lambda a, b: min(a, b), "reduce"),
        (lambda a, b: a + b, "reduce"),
        (lambda a, b: b + 1, "reduce"),  # not the element itself
        (lambda a, b: b if b > a else a, "reduce"),  # reads the accumulator
    ],
)
def test_a_reduce_keeping_the_newer_element_folds_as_last(f: Any, kind: str) -> None:
    got = agg_fn(_reduce_of(f), _site(_reduce_of(f), "q"))
    assert got.kind == kind
    assert got.fold("k", True, 1, [5, 7]) == (True, f(f(1, 5), 7))  # the same value either way


def test_a_def_returning_its_second_argument_folds_as_last() -> None:
    def newer(_old: int, new: int) -> int:
        return new

    got = agg_fn(_reduce_of(newer), _site(_reduce_of(newer), "q"))
    assert got.kind == "last"
    assert got.fold("k", False, None, [3, 4]) == (True, 4)
