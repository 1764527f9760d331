"""Operator semantics in a tick (one batch) and at top level (deltas with state)."""

from __future__ import annotations

from typing import Any

import pytest

from hydrolite import nondet

from .helpers import eager_outputs, tick_flow, top_flow


def tick(build: Any, inputs: list[Any], keyed: bool = False) -> list[Any]:
    return eager_outputs(tick_flow(build, keyed=keyed), inputs)


def top(build: Any, inputs: list[Any], keyed: bool = False) -> list[Any]:
    return eager_outputs(top_flow(build, keyed=keyed), inputs)


@pytest.mark.parametrize("run", [tick, top])
def test_element_wise_streams(run: Any) -> None:
    assert run(lambda s, t, p: s.map(lambda x: x * 10), [1, 2, 3]) == [10, 20, 30]
    assert run(lambda s, t, p: s.filter(lambda x: x % 2), [1, 2, 3]) == [1, 3]
    assert run(lambda s, t, p: s.filter_map(lambda x: x * 2 if x > 1 else None), [1, 2, 3]) == [4, 6]
    assert run(lambda s, t, p: s.flat_map_ordered(lambda x: [x] * x), [1, 2]) == [1, 2, 2]
    seen: list[Any] = []
    assert run(lambda s, t, p: s.inspect(seen.append), [4, 5]) == [4, 5] and seen == [4, 5]
    assert run(lambda s, t, p: s.enumerate(), ["a", "b"]) == [(0, "a"), (1, "b")]
    assert run(lambda s, t, p: s.unique(), [1, 2, 1, 3, 2]) == [1, 2, 3]


@pytest.mark.parametrize("run", [tick, top])
def test_keyed_element_wise(run: Any) -> None:
    inputs = [("a", 1), ("b", 2), ("a", 3)]
    assert run(lambda s, t, p: s.map(lambda v: v + 1).entries(), inputs, True) == [("a", 2), ("b", 3), ("a", 4)]
    assert run(lambda s, t, p: s.filter(lambda v: v > 1).entries(), inputs, True) == [("b", 2), ("a", 3)]
    assert run(lambda s, t, p: s.flat_map_ordered(lambda v: [v, -v]).values(), inputs[:1], True) == [1, -1]
    assert run(lambda s, t, p: s.enumerate().entries(), inputs, True) == [("a", (0, 1)), ("b", (0, 2)), ("a", (1, 3))]
    assert run(lambda s, t, p: s.keys(), inputs, True) == ["a", "b"]
    assert run(lambda s, t, p: s.values(), inputs, True) == [1, 2, 3]
    assert run(lambda s, t, p: s.unique().entries(), inputs + [("a", 1)], True) == inputs


def test_tick_aggregations() -> None:
    def one(agg: Any, inputs: list[Any]) -> list[Any]:
        return tick(lambda s, t, p: agg(s).into_stream(), inputs)

    assert one(lambda s: s.fold(0, lambda a, x: a * 10 + x), [1, 2, 3]) == [123]
    assert one(lambda s: s.fold([], lambda a, x: a + [x]), [1, 2]) == [[1, 2]]
    assert one(lambda s: s.reduce(lambda a, x: a - x), [10, 1, 2]) == [7]
    assert one(lambda s: s.count(), [7, 7]) == [2]
    assert one(lambda s: s.first(), [5, 6]) == [5]
    assert one(lambda s: s.last(), [5, 6]) == [6]
    assert one(lambda s: s.sort(key=lambda x: -x).first(), [5, 6, 1]) == [6]


def test_tick_keyed_aggregations() -> None:
    inputs = [("a", 1), ("b", 2), ("a", 3)]

    def one(agg: Any) -> list[Any]:
        return sorted(tick(lambda s, t, p: agg(s).entries(), inputs, keyed=True))

    assert one(lambda s: s.fold(0, lambda a, v: a + v)) == [("a", 4), ("b", 2)]
    assert one(lambda s: s.reduce(lambda a, v: a * v)) == [("a", 3), ("b", 2)]
    assert one(lambda s: s.count()) == [("a", 2), ("b", 1)]
    assert one(lambda s: s.first()) == [("a", 1), ("b", 2)]
    assert one(lambda s: s.last()) == [("a", 3), ("b", 2)]
    assert one(lambda s: s.count().map(lambda c: c * 100)) == [("a", 200), ("b", 100)]
    assert one(lambda s: s.count().filter(lambda c: c > 1)) == [("a", 2)]
    assert sorted(tick(lambda s, t, p: s.count().keys(), inputs, keyed=True)) == ["a", "b"]
    assert sorted(tick(lambda s, t, p: s.count().values(), inputs, keyed=True)) == [1, 2]


def test_tick_singletons() -> None:
    def one(build: Any, inputs: list[Any]) -> list[Any]:
        return tick(lambda s, t, p: build(s, t).into_stream(), inputs)

    assert one(lambda s, t: s.count().map(lambda c: c + 1), [1, 1]) == [3]
    assert one(lambda s, t: s.count().filter(lambda c: c > 5), [1]) == []
    assert one(lambda s, t: s.count().filter_map(lambda c: None if c else 0), [1]) == []
    assert one(lambda s, t: s.count().zip(t.singleton("x")), [1]) == [(1, "x")]
    assert one(lambda s, t: s.first().zip(t.singleton("x")), []) == []
    assert one(lambda s, t: s.first().unwrap_or(-1), [3]) == [3]
    assert one(lambda s, t: s.reduce(lambda a, b: a + b).into_singleton(), [2, 3]) == [5]
    assert tick(lambda s, t, p: s.count().flat_map_ordered(lambda c: range(c)), [9, 9]) == [0, 1]
    assert tick(lambda s, t, p: s.cross_singleton(s.count()), ["a", "b"]) == [("a", 2), ("b", 2)]
    assert tick(lambda s, t, p: s.cross_singleton(s.filter(lambda x: False).first()), ["a"]) == []


def test_tick_binary() -> None:
    pairs = [(1, "a"), (2, "b"), (1, "c")]
    assert tick(lambda s, t, p: s.cross_product(s.map(lambda x: -x)), [1, 2]) == [(1, -1), (1, -2), (2, -1), (2, -2)]
    assert sorted(tick(lambda s, t, p: s.join(s.map(lambda kv: (kv[0], kv[1] * 2))), pairs)) == [
        (1, ("a", "aa")), (1, ("a", "cc")), (1, ("c", "aa")), (1, ("c", "cc")), (2, ("b", "bb")),
    ]
    assert tick(lambda s, t, p: s.anti_join(s.filter(lambda kv: kv[1] == "b").map(lambda kv: kv[0])), pairs) == [(1, "a"), (1, "c")]
    assert tick(lambda s, t, p: s.chain(s.map(lambda x: x + 10)), [1, 2]) == [1, 2, 11, 12]
    assert tick(lambda s, t, p: s.merge_unordered(s.map(lambda x: x + 10)), [1]) == [1, 11]
    assert tick(lambda s, t, p: s.into_keyed().lookup_keyed_singleton(s.into_keyed().count()).entries(), pairs[:2]) == [
        (1, ("a", 1)), (2, ("b", 1)),
    ]


def test_tick_keyed_lookups() -> None:
    def build(s: Any, t: Any, p: Any) -> Any:
        table = s.filter(lambda v: v > 1).count()  # a: 1 (only 3), b: 1, c: 1
        return table.get_many_if_present(s).entries()

    assert tick(build, [("a", 1), ("b", 2), ("a", 3), ("c", 5)], keyed=True) == [("a", (1, 1)), ("b", (2, 1)), ("a", (3, 1)), ("c", (5, 1))]

    def missing(s: Any, t: Any, p: Any) -> Any:
        return s.lookup_keyed_singleton(s.filter(lambda v: v > 2).count()).entries()

    assert tick(missing, [("a", 1), ("b", 3)], keyed=True) == [("a", (1, None)), ("b", (3, 1))]

    def get(s: Any, t: Any, p: Any) -> Any:
        return s.count().get(t.singleton("a")).into_stream()

    assert tick(get, [("a", 1), ("a", 2)], keyed=True) == [2]


def test_top_level_aggregations_emit_versions() -> None:
    # a top-level fold is a singleton changing over time; latest() of a tick snapshot of it
    # is observed through a sink on into_stream of a snapshot: every new version is visible
    def build(s: Any, t: Any, p: Any) -> Any:
        tick_ = p.tick()
        total = s.fold(0, lambda a, x: a + x)
        return total.snapshot(tick_, nondet("every version")).into_stream().all_ticks()

    flow = top_flow(build)
    from hydrolite.sim import Simulator

    runs: set[tuple[Any, ...]] = set()

    def scenario(sim: Simulator) -> None:
        sim.sender("in").send_many([1, 2])
        runs.add(tuple(sim.receiver("out").collect()))

    Simulator(flow).exhaustive(scenario)
    # versions 0, 1, 3: each run sees a newer version; every execution ends at the newest
    assert runs == {(0, 1, 3), (0, 3), (1, 3), (3,)}


def test_top_level_symmetric_joins() -> None:
    from hydrolite.sim import Simulator

    from .helpers import Server
    import hydrolite as hl

    flow = hl.FlowBuilder("joins")
    p = flow.process(Server)
    a = p.source("a", object)
    b = p.source("b", object)
    a.join(b).sink("joined")
    a.cross_product(b).sink("crossed")
    a.merge_unordered(b).sink("merged")
    sim = Simulator(flow.finalize())

    def scenario(s: Simulator) -> None:
        s.sender("a").send((1, "x"))
        s.sender("b").send((1, "y"))
        s.sender("b").send((2, "z"))
        s.sender("a").send((2, "w"))
        s.receiver("joined").assert_yields_only([(1, ("x", "y")), (2, ("w", "z"))])
        assert len(s.receiver("crossed").collect()) == 4
        s.receiver("merged").assert_yields_only([(1, "x"), (1, "y"), (2, "z"), (2, "w")])

    assert sim.exhaustive(scenario) == 1  # no tick, no network: one execution


def test_static_sources() -> None:
    from hydrolite.sim import Simulator

    from .helpers import Server
    import hydrolite as hl

    flow = hl.FlowBuilder("static")
    p = flow.process(Server)
    p.source_iter([3, 1, 2]).map(lambda x: x * 2).sink("doubled")
    p.source("q", int).cross_singleton(p.source_iter([1, 2]).count()).sink("crossed")
    sim = Simulator(flow.finalize())

    def scenario(s: Simulator) -> None:
        s.receiver("doubled").assert_yields_only([6, 2, 4])
        s.sender("q").send(7)
        s.receiver("crossed").assert_yields([(7, 2)])

    assert sim.exhaustive(scenario) == 1
