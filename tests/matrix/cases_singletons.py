"""Operator matrix cases (continued): singletons, optional singletons and combining streams."""

from __future__ import annotations

from typing import Any

from hydrolite.ir import nodes as n
from hydrolite.planner.spark.stages import SparkPlanError

from . import (
    VERSION,
    Harness,
    Proc,
    batch_of_lists,
    case,
    noop,
    sinks,
    yields,
    zipped_versions,
)


# ---------------------------------------------------------------- singletons and optional singletons
def _singletons_tick(p: Proc) -> None:
    t, b = batch_of_lists(p)
    c, f = b.count(), b.first()
    sinks(
        {
            "map": c.map(lambda x: x + 1),
            "filter": c.filter(lambda x: x > 1),
            "filter_map": c.filter_map(lambda x: x * 2 if x != 1 else None),
            "inspect": c.inspect(noop),
            "zip": c.zip(t.singleton("k")),
            "zip_optional": c.zip(f),
            "flat_map_ordered": c.flat_map_ordered(lambda x: range(x)),
            "opt_map": f.map(lambda x: x * 10),
            "opt_filter": f.filter(lambda x: x > 2),
            "opt_filter_map": f.filter_map(lambda x: -x if x != 4 else None),
            "opt_inspect": f.inspect(noop),
            "opt_zip": f.zip(c),
            "unwrap_or": f.unwrap_or(-1),
            "into_singleton": f.into_singleton(),
            "cross_singleton": b.cross_singleton(c),
            "cross_optional": b.cross_singleton(f.filter(lambda x: x > 2)),
        }
    )


_SINGLETON_OPS = (n.Map, n.Filter, n.FilterMap, n.Inspect, n.Zip, n.UnwrapOr, n.IntoSingleton)


@case(
    "singleton-optional-tick",
    _singletons_tick,
    *_SINGLETON_OPS,
    n.FlatMap,
    n.CrossSingleton,
    n.IntoStream,
    n.TickConstant,
)
def _singletons_tick_run(s: Harness) -> None:
    s.sender("xs").send([3, 1])
    yields(
        s,
        {
            "map": [3],
            "filter": [2],
            "filter_map": [4],
            "inspect": [2],
            "zip": [(2, "k")],
            "zip_optional": [(2, 3)],
            "flat_map_ordered": [0, 1],
            "opt_map": [30],
            "opt_filter": [3],
            "opt_filter_map": [-3],
            "opt_inspect": [3],
            "opt_zip": [(3, 2)],
            "unwrap_or": [3],
            "into_singleton": [3],
            "cross_singleton": [(3, 2), (1, 2)],
            "cross_optional": [(3, 3), (1, 3)],
        },
    )
    s.sender("xs").send([])  # empty: the optional is empty, the count 0
    yields(
        s,
        {"map": [1], "inspect": [0], "zip": [(0, "k")], "filter_map": [0], "unwrap_or": [-1], "into_singleton": [None]},
    )
    s.sender("xs").send([4])
    yields(
        s,
        {
            "map": [2],
            "inspect": [1],
            "zip": [(1, "k")],
            "zip_optional": [(1, 4)],
            "flat_map_ordered": [0],
            "opt_map": [40],
            "opt_filter": [4],
            "opt_inspect": [4],
            "opt_zip": [(4, 1)],
            "unwrap_or": [4],
            "into_singleton": [4],
            "cross_singleton": [(4, 1)],
            "cross_optional": [(4, 4)],
        },
    )


def _singletons_top(p: Proc) -> None:
    src = p.source("in", int)
    c, f = src.count(), src.first()
    parts = (  # four zipped parts, each a chain of singleton operators
        c.map(lambda x: x * 10)
        .inspect(noop)
        .zip(c.filter(lambda x: x > 1).into_singleton())
        .zip(f.map(lambda x: x + 100).filter(lambda x: x > 105).unwrap_or(-1))
        .zip(c.filter_map(lambda x: -x if x != 2 else None).inspect(noop).zip(f).into_singleton())
    )
    parts.snapshot(p.tick(), VERSION).into_stream().all_ticks().sink("singletons")


@case("singleton-optional-top", _singletons_top, *_SINGLETON_OPS, n.Snapshot)
def _singletons_top_run(s: Harness) -> None:
    s.sender("in").send_many([7, 2])
    parts: list[list[Any]] = [[0, 10, 20], [None, None, 2], [-1, 107], [None, (-1, 7), None]]
    zipped_versions(s, "singletons", *parts)
    s.sender("in").send(1)
    zipped_versions(s, "singletons", *[[v[-1], new] for v, new in zip(parts, [30, 3, 107, (-3, 7)])])


def _flat_map_top(p: Proc) -> None:
    p.source("in", int).count().flat_map_ordered(lambda x: range(x)).sink("flat_map_ordered")


@case(
    "singleton-flat-map-top",
    _flat_map_top,
    n.Count,
    n.FlatMap,
    raises=SparkPlanError,
    divergence="refused at planning: a micro-batch computes one version of a top-level count per batch, the model one per element",
)
def _flat_map_top_run(s: Harness) -> None:
    for x, want in [(7, [0]), (2, [0, 1])]:  # one element per step: every version of the count, flattened
        s.sender("in").send(x)
        s.receiver("flat_map_ordered").assert_yields(want)


@case(
    "singleton-flat-map-top-versions",
    _flat_map_top,
    n.Count,
    n.FlatMap,
    raises=SparkPlanError,
    divergence="refused at planning: sending [7, 2] at once would give [0, 1] (one version per micro-batch), not [0, 0, 1]",
)
def _flat_map_top_versions(s: Harness) -> None:
    s.sender("in").send_many([7, 2])
    s.receiver("flat_map_ordered").assert_yields([0, 0, 1])  # the versions 1 and 2 of the count, flattened


# ---------------------------------------------------------------- combining streams
def _binary_tick(p: Proc) -> None:
    b = batch_of_lists(p)[1]
    left, right = b.map(lambda x: (x % 2, x)), b.filter(lambda x: x > 1).map(lambda x: (x % 2, x * 10))
    sinks(
        {
            "join": left.join(right),
            "anti_join": left.anti_join(b.filter(lambda x: x > 2).map(lambda x: x % 2)),
            "chain": b.chain(b.map(lambda x: x + 10)),
            "cross_product": b.cross_product(b.filter(lambda x: x < 3)),
            "merge_unordered": b.merge_unordered(b.map(lambda x: -x)),
        }
    )


@case("binary-tick", _binary_tick, n.Join, n.AntiJoin, n.Chain, n.CrossProduct, n.MergeUnordered)
def _binary_tick_run(s: Harness) -> None:
    s.sender("xs").send([1, 2, 3])
    want: dict[str, list[Any]] = {
        "join": [(0, (2, 20)), (1, (1, 30)), (1, (3, 30))],
        "anti_join": [(0, 2)],
        "cross_product": [(x, y) for x in (1, 2, 3) for y in (1, 2)],
        "merge_unordered": [1, 2, 3, -1, -2, -3],
    }
    yields(s, {**want, "chain": [1, 2, 3, 11, 12, 13]}, unordered=want)
    s.sender("xs").send([5])  # a new tick: nothing is kept from the previous batch
    yields(s, {"join": [(1, (5, 50))], "chain": [5, 15], "merge_unordered": [5, -5]}, unordered={"merge_unordered"})


@case(
    "merge-unordered-top",
    lambda p: p.source("a", int).merge_unordered(p.source("b", int)).sink("merged"),
    n.MergeUnordered,
)
def _merge_top(s: Harness) -> None:
    s.sender("a").send_many([1, 2])
    s.sender("b").send(3)
    s.receiver("merged").assert_yields_unordered([1, 2, 3])


def _join_top(p: Proc) -> None:
    a, b = p.source("a", tuple[int, str]), p.source("b", tuple[int, str])
    a.join(b).sink("join")


@case("join-top", _join_top, n.Join)
def _join_top_run(s: Harness) -> None:
    """A join of two unbounded streams: each side's history kept per key (on Spark, on the
    executors: placement.py)."""
    s.sender("a").send((1, "x"))
    s.sender("b").send_many([(1, "y"), (2, "z")])
    s.receiver("join").assert_yields_unordered([(1, ("x", "y"))])
    s.sender("a").send((2, "w"))  # joins with b's earlier elements: the whole history counts
    s.receiver("join").assert_yields_unordered([(2, ("w", "z"))])


def _cross_top(p: Proc) -> None:
    a, b = p.source("a", tuple[int, str]), p.source("b", tuple[int, str])
    a.map(lambda kv: kv[0]).cross_product(b.map(lambda kv: kv[1])).sink("cross_product")


@case("cross-product-top", _cross_top, n.CrossProduct)
def _cross_top_run(s: Harness) -> None:
    s.sender("a").send((1, "x"))
    s.sender("b").send_many([(1, "y"), (2, "z")])
    s.receiver("cross_product").assert_yields_unordered([(1, "y"), (1, "z")])
    s.sender("a").send((2, "w"))
    s.receiver("cross_product").assert_yields_unordered([(2, "y"), (2, "z")])


def _anti_top(p: Proc) -> None:
    banned = p.source_iter([2, 3])
    p.source("a", tuple[int, str]).anti_join(banned).sink("anti_join")
    p.source("b", tuple[int, str]).anti_join(banned.chain(p.source_iter([5])).map(lambda k: k * 2)).sink("derived")


@case("anti-join-top", _anti_top, n.AntiJoin, n.SourceIter, n.Chain, n.Map)
def _anti_join_top(s: Harness) -> None:
    s.sender("a").send_many([(1, "x"), (2, "y"), (4, "z")])
    s.receiver("anti_join").assert_yields([(1, "x"), (4, "z")])
    s.sender("a").send_many([(3, "w"), (5, "v")])  # a later batch: the keys still count
    s.receiver("anti_join").assert_yields([(5, "v")])
    s.sender("b").send_many([(4, "a"), (5, "b"), (10, "c"), (6, "d")])
    s.receiver("derived").assert_yields([(5, "b")])


def _static(p: Proc) -> None:
    p.source_iter([3, 1, 2]).map(lambda x: x * 2).sink("map")
    p.source_iter([1, 2]).chain(p.source_iter([3])).sink("chain")
    p.source("q", str).cross_singleton(p.source_iter([5, 6]).count()).sink("cross_singleton")


@case("source-iter", _static, n.SourceIter, n.Map, n.Chain, n.Count, n.CrossSingleton)
def _static_run(s: Harness) -> None:
    s.sender("q").send("a")
    yields(s, {"cross_singleton": [("a", 2)], "map": [6, 2, 4], "chain": [1, 2, 3]})
