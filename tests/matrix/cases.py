"""The operator cases, one `case(...)` each: what they exercise, and their expected outputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import hydrolite as hl
from hydrolite.ir import nodes as n

from . import (
    ALIGNED,
    ANY,
    CASES,
    VERSION,
    Harness,
    Proc,
    Scenario,
    batch_of_lists,
    case,
    noop,
    sinks,
    versions,
    yields,
    zipped_versions,
)

__all__ = ["CASES"]


# ---------------------------------------------------------------- streams, element-wise
def _elementwise(s: Any) -> dict[str, Any]:
    return {  # filter() by a truthy int, not a bool
        "map": s.map(lambda x: x * 10),
        "filter": s.filter(lambda x: x % 2),
        "filter_map": s.filter_map(lambda x: x * 2 if x > 1 else None),
        "flat_map_ordered": s.flat_map_ordered(lambda x: [x] * x),
        "flat_map_unordered": s.flat_map_unordered(lambda x: {x, -x}),
        "inspect": s.inspect(noop),
    }


def _elementwise_run(s: Harness) -> None:
    s.sender("in").send_many([1, 2, 3])  # element-wise: the same outputs under every batching
    want = {
        "map": [10, 20, 30],
        "filter": [1, 3],
        "filter_map": [4, 6],
        "flat_map_ordered": [1, 2, 2, 3, 3, 3],
        "inspect": [1, 2, 3],
    }
    yields(s, {**want, "flat_map_unordered": [1, -1, 2, -2, 3, -3]}, unordered={"flat_map_unordered"})
    s.sender("in").send(4)
    yields(
        s,
        {"map": [40], "filter_map": [8], "flat_map_ordered": [4] * 4, "inspect": [4], "flat_map_unordered": [4, -4]},
        unordered={"flat_map_unordered"},
    )


_ELEMENTWISE = (n.Source, n.Map, n.Filter, n.FilterMap, n.FlatMap, n.Inspect, n.Sink)
case(
    "stream-elementwise-tick",
    lambda p: sinks(_elementwise(p.source("in", int).batch(p.tick(), ANY))),
    *_ELEMENTWISE,
    n.Batch,
    n.AllTicks,
)(_elementwise_run)
case("stream-elementwise-top", lambda p: sinks(_elementwise(p.source("in", int))), *_ELEMENTWISE)(_elementwise_run)


# ---------------------------------------------------------------- streams, aggregation
def _aggregates(s: Any) -> dict[str, Any]:
    return {
        "fold": s.fold(0, lambda a, x: a * 10 + x),
        "fold_commutative": s.fold_commutative(0, lambda a, x: a + x),
        "reduce": s.reduce(lambda a, x: a - x),
        "reduce_commutative": s.reduce_commutative(lambda a, x: max(a, x)),
        "count": s.count(),
        "first": s.first(),
        "last": s.last(),
    }


def _aggregates_tick(p: Proc) -> None:
    b = batch_of_lists(p)[1]
    sinks({**_aggregates(b), "fold_list": b.fold([], lambda a, x: [*a, x])})


@case("stream-aggregates-tick", _aggregates_tick, n.Fold, n.Reduce, n.Count, n.First, n.Last, n.IntoStream)
def _aggregates_tick_run(s: Harness) -> None:
    s.sender("xs").send([3, 1, 2])
    yields(
        s,
        {
            "fold": [312],
            "fold_commutative": [6],
            "reduce": [0],
            "reduce_commutative": [3],
            "count": [3],
            "first": [3],
            "last": [2],
            "fold_list": [[3, 1, 2]],
        },
    )
    s.sender("xs").send([])  # an empty batch: folds give their init, the optional ones nothing
    yields(s, {"fold": [0], "fold_commutative": [0], "count": [0], "fold_list": [[]]})
    s.sender("xs").send([5])
    yields(
        s,
        {
            "fold": [5],
            "fold_commutative": [5],
            "reduce": [5],
            "reduce_commutative": [5],
            "count": [1],
            "first": [5],
            "last": [5],
            "fold_list": [[5]],
        },
    )


def _order_tick(p: Proc) -> None:
    b = batch_of_lists(p)[1]
    sinks({"enumerate": b.enumerate(), "unique": b.unique(), "sort": b.sort(), "sort_key": b.sort(key=lambda x: -x)})


@case("stream-enumerate-unique-sort-tick", _order_tick, n.Enumerate, n.Unique, n.Sort)
def _order_tick_run(s: Harness) -> None:
    s.sender("xs").send([3, 1, 3, 2])
    yields(
        s,
        {
            "enumerate": [(0, 3), (1, 1), (2, 3), (3, 2)],
            "unique": [3, 1, 2],
            "sort": [1, 2, 3, 3],
            "sort_key": [3, 3, 2, 1],
        },
    )
    s.sender("xs").send([2, 2])  # a new tick: indices restart, unique is per batch
    yields(s, {"enumerate": [(0, 2), (1, 2)], "unique": [2], "sort": [2, 2], "sort_key": [2, 2]})


def _zipped_top(*names: str) -> Callable[[Proc], None]:
    """The named aggregates of a top-level stream, zipped into one snapshot (one choice per run)."""

    def body(p: Proc) -> None:
        aggs = _aggregates(p.source("in", int))
        zipped = aggs[names[0]]
        for name in names[1:]:
            zipped = zipped.zip(aggs[name])
        zipped.snapshot(p.tick(), VERSION).into_stream().all_ticks().sink("aggregates")

    return body


def _zipped_top_run(*parts: list[Any]) -> Scenario:
    def run(s: Harness) -> None:
        s.sender("in").send_many([3, 1])
        zipped_versions(s, "aggregates", *[v[:-1] for v in parts])
        s.sender("in").send(2)  # state across steps
        zipped_versions(s, "aggregates", *[v[-2:] for v in parts])

    return run


case("stream-folds-top", _zipped_top("fold", "fold_commutative", "count"), n.Fold, n.Count, n.Zip, n.Snapshot)(
    _zipped_top_run([0, 3, 31, 312], [0, 3, 4, 6], [0, 1, 2, 3])
)
case(
    "stream-reduces-top", _zipped_top("reduce", "reduce_commutative", "first", "last"), n.Reduce, n.First, n.Last, n.Zip
)(_zipped_top_run([3, 2, 0], [3, 3, 3], [3, 3, 3], [3, 1, 2]))


def _order_top(p: Proc) -> None:
    src = p.source("in", int)
    sinks({"enumerate": src.enumerate(), "unique": src.unique()})


@case("stream-enumerate-unique-top", _order_top, n.Enumerate, n.Unique)
def _order_top_run(s: Harness) -> None:
    s.sender("in").send_many([3, 1, 3])
    yields(s, {"enumerate": [(0, 3), (1, 1), (2, 3)], "unique": [3, 1]})
    s.sender("in").send_many([1, 2])  # state across steps: indices go on, 1 was seen
    yields(s, {"enumerate": [(3, 1), (4, 2)], "unique": [2]})


# ---------------------------------------------------------------- carried: top-level state read at an align point
def _carried_fold_count(p: Proc) -> None:
    nums = p.source("nums", int)
    align, t = p.local_align_point(), p.tick()
    total = nums.fold_commutative(0, lambda a, x: a + x).snapshot_aligned(t, align, ALIGNED)
    count = nums.count().snapshot_aligned(t, align, ALIGNED)
    nums.release_aligned(align).sink("ack")
    total.zip(count).into_stream().all_ticks().sink("out")


@case("carried-fold-count", _carried_fold_count, n.Fold, n.Count, n.Snapshot, n.ReleaseAligned, n.Zip)
def _carried_fold_count_run(s: Harness) -> None:
    """The production bug: a fold and a count of one source, aligned with its acks."""
    s.sender("nums").send_many([1, 2, 3])
    s.receiver("ack").assert_yields([1, 2, 3])
    versions(s, {"out": [(1, 1), (3, 2), (6, 3)]})  # aligned: a sum always goes with its count
    s.sender("nums").send(4)
    s.receiver("ack").assert_yields([4])
    versions(s, {"out": [(10, 4)]})  # the only read since the last one reflects the acked 4


def _carried(p: Proc, keyed: bool, tables: Callable[[Any], dict[str, Any]]) -> None:
    """Aggregates of a source, read by a query tick at the align point of the source's acks."""
    src: Any = p.keyed_source("nums", str, int) if keyed else p.source("nums", int)
    align, t = p.local_align_point(), p.tick()
    (src.release_aligned(align).entries() if keyed else src.release_aligned(align)).sink("ack")
    sinks({"batch_aligned": src.batch_aligned(t, align, ALIGNED)})  # the acked elements, once each
    q = p.source("q", str).batch(t, ANY)
    for name, table in tables(src).items():
        snap = table.snapshot_aligned(t, align, ALIGNED)
        sinks(
            {
                name: q.map(lambda k: (k, None)).into_keyed().lookup_keyed_singleton(snap).entries()
                if keyed
                else q.cross_singleton(snap)
            }
        )


def _carried_aggregates(src: Any) -> dict[str, Any]:
    return {**_aggregates(src), "count_map": src.count().map(lambda c: c * 100)}


@case(
    "carried-aggregates",
    lambda p: _carried(p, False, _carried_aggregates),
    n.Fold,
    n.Reduce,
    n.First,
    n.Last,
    n.Count,
    n.Map,
    n.CrossSingleton,
)
def _carried_aggregates_run(s: Harness) -> None:
    s.sender("nums").send_many([3, 1, 2])
    s.receiver("ack").assert_yields([3, 1, 2])
    s.receiver("batch_aligned").assert_yields([3, 1, 2])
    s.sender("q").send("a")
    want = {
        "fold": 312,
        "fold_commutative": 6,
        "reduce": 0,
        "reduce_commutative": 3,
        "count": 3,
        "first": 3,
        "last": 2,
        "count_map": 300,
    }
    yields(s, {name: [("a", v)] for name, v in want.items()})
    s.sender("nums").send(4)
    s.receiver("ack").assert_yields([4])
    s.receiver("batch_aligned").assert_yields([4])
    s.sender("q").send("b")
    want = {
        "fold": 3124,
        "fold_commutative": 10,
        "reduce": -4,
        "reduce_commutative": 4,
        "count": 4,
        "first": 3,
        "last": 4,
        "count_map": 400,
    }
    yields(s, {name: [("b", v)] for name, v in want.items()})


def _carried_keyed_tables(kv: Any) -> dict[str, Any]:
    tables = {**_carried_aggregates(kv), "count_filter": kv.count().filter(lambda c: c > 1)}
    del tables["reduce"]  # carried-keyed-reduce
    return tables


def _carried_keyed_run(want: Mapping[str, Any]) -> Scenario:
    def run(s: Harness) -> None:
        s.sender("nums").send_many([("a", 3), ("b", 2), ("a", 1)])
        s.receiver("ack").assert_yields_unordered([("a", 3), ("b", 2), ("a", 1)])
        s.receiver("batch_aligned").assert_yields_unordered([("a", 3), ("b", 2), ("a", 1)])
        s.sender("q").send_many(["a", "z"])  # z: never sent, looked up as None
        yields(s, {name: [("a", (None, v)), ("z", (None, None))] for name, v in want.items()}, unordered=want)

    return run


_KEYED_WANT = {
    "fold": 31,
    "fold_commutative": 4,
    "reduce_commutative": 3,
    "count": 2,
    "first": 3,
    "last": 1,
    "count_map": 200,
    "count_filter": 2,
}
case(
    "carried-keyed",
    lambda p: _carried(p, True, _carried_keyed_tables),
    n.Fold,
    n.Reduce,
    n.Count,
    n.First,
    n.Last,
    n.Map,
    n.Filter,
    n.KeyedLookup,
)(_carried_keyed_run(_KEYED_WANT))
case(
    "carried-keyed-reduce",
    lambda p: _carried(p, True, lambda kv: {"reduce": kv.reduce(lambda a, x: a - x)}),
    n.Reduce,
    n.KeyedLookup,
)(_carried_keyed_run({"reduce": 2}))


# ---------------------------------------------------------------- keyed streams and keyed singletons
_KV = [("a", 1), ("b", 2), ("a", 3)]


def _keyed_elementwise(kv: Any) -> dict[str, Any]:
    return {
        "map": kv.map(lambda v: v * 10),
        "filter": kv.filter(lambda v: v > 1).entries(),
        "filter_map": kv.filter_map(lambda v: -v if v != 2 else None),
        "flat_map_ordered": kv.flat_map_ordered(lambda v: [v, v]),
        "flat_map_unordered": kv.flat_map_unordered(lambda v: {v, -v}),
        "inspect": kv.inspect(noop),
        "values": kv.values(),
    }


_KEYED_ELEMENTWISE = (n.Map, n.Filter, n.FilterMap, n.FlatMap, n.Inspect, n.Entries, n.Values)
_KEYED_ELEMENTWISE_WANT: dict[str, list[Any]] = {
    "map": [("a", 10), ("b", 20), ("a", 30)],
    "filter": [("b", 2), ("a", 3)],
    "filter_map": [("a", -1), ("a", -3)],
    "flat_map_ordered": [("a", 1), ("a", 1), ("b", 2), ("b", 2), ("a", 3), ("a", 3)],
    "flat_map_unordered": [("a", 1), ("a", -1), ("b", 2), ("b", -2), ("a", 3), ("a", -3)],
    "inspect": _KV,
    "values": [1, 2, 3],
}


@case(
    "keyed-elementwise-tick",
    lambda p: sinks(_keyed_elementwise(p.keyed_source("kv", str, int).batch(p.tick(), ANY))),
    *_KEYED_ELEMENTWISE,
    n.Batch,
    n.AllTicks,
)
def _keyed_elementwise_tick(s: Harness) -> None:
    s.sender("kv").send_many(_KV)  # element-wise: the same outputs under every batching
    yields(s, _KEYED_ELEMENTWISE_WANT, unordered=_KEYED_ELEMENTWISE_WANT)


def _keyed_top(p: Proc) -> None:
    kv = p.keyed_source("kv", str, int)
    sinks({**_keyed_elementwise(kv), "enumerate": kv.enumerate(), "unique": kv.unique(), "keys": kv.keys()})


@case("keyed-elementwise-top", _keyed_top, *_KEYED_ELEMENTWISE, n.Enumerate, n.Unique, n.Keys)
def _keyed_top_run(s: Harness) -> None:
    s.sender("kv").send_many(_KV)
    want: dict[str, list[Any]] = {
        **_KEYED_ELEMENTWISE_WANT,
        "enumerate": [("a", (0, 1)), ("b", (0, 2)), ("a", (1, 3))],
        "unique": _KV,
        "keys": ["a", "b"],
    }
    yields(s, want, unordered=want)
    s.sender("kv").send_many([("b", 2), ("c", 1), ("a", 1)])  # state across steps, per key
    want = {
        "enumerate": [("b", (1, 2)), ("c", (0, 1)), ("a", (2, 1))],
        "unique": [("c", 1)],
        "keys": ["c"],
        "values": [2, 1, 1],
    }
    yields(s, want, unordered=want)
    for port in ("map", "filter", "filter_map", "flat_map_ordered", "flat_map_unordered", "inspect"):
        s.receiver(port).collect()  # checked in the first step


def _keyed_batch(p: Proc) -> tuple[hl.Tick[Any], Any]:
    t, b = batch_of_lists(p, "kvs", tuple[str, int])
    return t, b.into_keyed()


def _keyed_aggregates_tick(p: Proc) -> None:
    kv = _keyed_batch(p)[1]
    sinks({**_aggregates(kv), "enumerate": kv.enumerate(), "unique": kv.unique(), "keys": kv.keys()})


@case(
    "keyed-aggregates-tick",
    _keyed_aggregates_tick,
    n.IntoKeyed,
    n.Fold,
    n.Reduce,
    n.Count,
    n.First,
    n.Last,
    n.Enumerate,
    n.Unique,
    n.Keys,
)
def _keyed_aggregates_tick_run(s: Harness) -> None:
    s.sender("kvs").send([("a", 3), ("b", 2), ("a", 1), ("a", 3)])
    want: dict[str, list[Any]] = {
        "fold": [("a", 313), ("b", 2)],
        "fold_commutative": [("a", 7), ("b", 2)],
        "reduce": [("a", -1), ("b", 2)],
        "reduce_commutative": [("a", 3), ("b", 2)],
        "count": [("a", 3), ("b", 1)],
        "first": [("a", 3), ("b", 2)],
        "last": [("a", 3), ("b", 2)],
        "enumerate": [("a", (0, 3)), ("b", (0, 2)), ("a", (1, 1)), ("a", (2, 3))],
        "unique": [("a", 3), ("b", 2), ("a", 1)],
        "keys": ["a", "b"],
    }
    yields(s, want, unordered=want)
    s.sender("kvs").send([("a", 3)])  # a new tick: tables are per tick, indices restart, unique is per batch
    yields(s, {port: [("a", 3)] for port in want if port not in ("count", "enumerate", "keys")})
    yields(s, {"count": [("a", 1)], "enumerate": [("a", (0, 3))], "keys": ["a"]})


def _keyed_singleton_tick(p: Proc) -> None:
    t, kv = _keyed_batch(p)
    table = kv.count()
    sinks(
        {
            "map": table.map(lambda c: c * 100),
            "filter": table.filter(lambda c: c > 1),
            "keys": table.keys(),
            "values": table.values(),
            "get": table.get(t.singleton("a")),
            "get_missing": table.get(t.singleton("z")).unwrap_or(-1),
            "get_many_if_present": table.filter(lambda c: c > 1).get_many_if_present(kv),
            "lookup_keyed_singleton": kv.lookup_keyed_singleton(table.filter(lambda c: c > 1)),
        }
    )


@case(
    "keyed-singleton-tick",
    _keyed_singleton_tick,
    n.Map,
    n.Filter,
    n.Entries,
    n.Keys,
    n.Values,
    n.KeyedGet,
    n.KeyedLookup,
    n.TickConstant,
)
def _keyed_singleton_tick_run(s: Harness) -> None:
    s.sender("kvs").send([("a", 1), ("b", 2), ("a", 3)])
    want: dict[str, list[Any]] = {
        "map": [("a", 200), ("b", 100)],
        "filter": [("a", 2)],
        "keys": ["a", "b"],
        "values": [2, 1],
        "get_many_if_present": [("a", (1, 2)), ("a", (3, 2))],
        "lookup_keyed_singleton": [("a", (1, 2)), ("b", (2, None)), ("a", (3, 2))],
    }
    yields(s, {**want, "get": [2], "get_missing": [-1]}, unordered=want)
    s.sender("kvs").send([("b", 5)])
    yields(
        s,
        {
            "map": [("b", 100)],
            "keys": ["b"],
            "values": [1],
            "get_missing": [-1],
            "lookup_keyed_singleton": [("b", (5, None))],
        },
    )


def _keyed_snapshots(tables: Callable[[Any], dict[str, Any]]) -> Callable[[Proc], None]:
    """Top-level keyed aggregates, each snapshot (plain) into one tick and read at key "a"."""

    def body(p: Proc) -> None:
        t = p.tick()
        for name, table in tables(p.keyed_source("kv", str, int)).items():
            sinks({name: table.snapshot(t, VERSION).get(t.singleton("a")).into_singleton()})

    return body


def _keyed_snapshots_run(steps: list[tuple[Any, dict[str, list[Any]]]]) -> Scenario:
    def run(s: Harness) -> None:
        for sent, reads in steps:  # one element per step: each snapshot may lag on its own
            s.sender("kv").send(sent)
            versions(s, reads)

    return run


_KEYED_TOP: dict[str, Callable[[Any], Any]] = {
    "fold": lambda kv: kv.fold(0, lambda a, x: a * 10 + x),
    "count_map": lambda kv: kv.count().map(lambda c: c * 100),
    "reduce_filter": lambda kv: kv.reduce_commutative(lambda a, x: max(a, x)).filter(lambda v: v > 1),
}
case(
    "keyed-folds-top",
    _keyed_snapshots(lambda kv: {k: f(kv) for k, f in _KEYED_TOP.items()}),
    n.Fold,
    n.Count,
    n.Reduce,
    n.Map,
    n.Filter,
    n.KeyedGet,
    n.IntoSingleton,
)(
    _keyed_snapshots_run(
        [
            (("a", 1), {"fold": [None, 1], "count_map": [None, 100], "reduce_filter": [None]}),
            (("b", 7), {"fold": [1], "count_map": [100], "reduce_filter": [None]}),
            (("a", 3), {"fold": [1, 13], "count_map": [100, 200], "reduce_filter": [None, 3]}),
        ]
    )
)
case(
    "keyed-reduces-top",
    _keyed_snapshots(
        lambda kv: {k: v for k, v in _aggregates(kv).items() if k in ("fold_commutative", "reduce", "first", "last")}
    ),
    n.Reduce,
    n.First,
    n.Last,
)(
    _keyed_snapshots_run(
        [
            (("a", 5), {"fold_commutative": [None, 5], "reduce": [None, 5], "first": [None, 5], "last": [None, 5]}),
            (("a", 2), {"fold_commutative": [5, 7], "reduce": [5, 3], "first": [5], "last": [5, 2]}),
        ]
    )
)


from . import cases_singletons, cases_time  # noqa: E402, F401  (after the cases above: registers the singleton, combining, time, order and network cases, in this order)
