"""Element and key types recorded in Meta, derived through operators where they are known."""

from __future__ import annotations

from typing import Any, cast

import hydrolite as hl


class S:
    pass


def test_into_keyed_splits_a_declared_pair_type() -> None:
    flow = hl.FlowBuilder()
    p = flow.process(S)
    keyed = p.source("kv", tuple[str, int]).into_keyed()
    assert keyed.node.meta.key is str and keyed.node.meta.elem is int
    assert keyed.node.meta.type_str() == "KeyedStream[str, int, Process[S], Unbounded, TotalOrder]"
    assert keyed.entries().node.meta.elem == tuple[str, int]


def test_into_keyed_of_unknown_or_variadic_tuple_stays_unknown() -> None:
    flow = hl.FlowBuilder()
    p = flow.process(S)
    untyped = p.source("x", int).map(lambda x: (x, x)).into_keyed()
    assert untyped.node.meta.key is None and untyped.node.meta.elem is None
    variadic: Any = cast(Any, p.source("v", tuple[int, ...])).into_keyed()  # mypy rejects this; run time must not crash
    assert variadic.node.meta.key is None and variadic.node.meta.elem is None
