"""Ticks over time: defer_tick, cycles, latest(), tick constants and top-level assume_ordering."""

from __future__ import annotations

from typing import Any

import hydrolite as hl
from hydrolite import nondet
from hydrolite.sim import EagerChooser, Simulator

from .helpers import Server


def one_by_one(flow: hl.Flow, items: list[Any], port: str = "out") -> list[Any]:
    """Send items one at a time, each processed by its own tick run (a chosen schedule)."""
    got: list[Any] = []

    def scenario(s: Simulator) -> None:
        for x in items:
            s.sender("in").send(x)
            got.extend(s.receiver(port).collect())

    Simulator(flow).run_once(scenario, EagerChooser())
    return got


def test_singleton_cycle_carries_state_across_runs() -> None:
    flow = hl.FlowBuilder("cycle")
    p = flow.process(Server)
    t = p.tick()
    handle, total = t.singleton_cycle(100)
    batch = p.source("in", int).batch(t, nondet("one at a time in this test"))
    new_total = total.zip(batch.fold(0, lambda a, x: a + x)).map(lambda ab: ab[0] + ab[1])
    handle.complete_next_tick(new_total)
    new_total.into_stream().all_ticks().sink("out")
    assert one_by_one(flow.finalize(), [1, 2, 3]) == [101, 103, 106]


def test_defer_tick_emits_in_the_next_run() -> None:
    flow = hl.FlowBuilder("defer")
    p = flow.process(Server)
    t = p.tick()
    batch = p.source("in", int).batch(t, nondet("one at a time"))
    batch.defer_tick().all_ticks().sink("out")
    sim = Simulator(flow.finalize())

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        # the deferred element keeps the tick runnable: a second run emits it
        s.receiver("out").assert_yields_only([1])

    assert sim.exhaustive(scenario) == 1


def test_stream_cycle() -> None:
    flow = hl.FlowBuilder("stream-cycle")
    p = flow.process(Server)
    t = p.tick()
    handle, previous = t.stream_cycle(int)
    handle.complete_next_tick(p.source("in", int).batch(t, nondet("one at a time")).map(lambda x: x * 10))
    previous.all_ticks().sink("out")

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("out").assert_yields([10])  # a second run, kept busy by the cycle, emits it
        s.sender("in").send(2)
        s.receiver("out").assert_yields_only([20])

    assert Simulator(flow.finalize()).exhaustive(scenario) == 1


def test_optional_cycle() -> None:
    flow = hl.FlowBuilder("optional-cycle")
    p = flow.process(Server)
    t = p.tick()
    handle, last = t.optional_cycle(int)
    batch = p.source("in", int).batch(t, nondet("one at a time"))
    handle.complete_next_tick(batch.last())
    batch.cross_singleton(last.unwrap_or(-1)).all_ticks().sink("pairs")

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("pairs").assert_yields([(1, -1)])  # empty in the first run
        s.sender("in").send(2)
        s.receiver("pairs").assert_yields([(2, 1)])  # the previous run's last()

    assert Simulator(flow.finalize()).exhaustive(scenario) == 1


def test_latest_feeds_another_tick() -> None:
    flow = hl.FlowBuilder("latest")
    p = flow.process(Server)
    t1, t2 = p.tick(), p.tick()
    counts = p.source("in", int).batch(t1, nondet("any grouping")).count().latest()
    ask = p.source("ask", str).batch(t2, nondet("any grouping"))
    ask.cross_singleton(counts.snapshot(t2, nondet("any recent batch size"))).all_ticks().sink("out")
    sim = Simulator(flow.finalize())
    answers: set[Any] = set()

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many([5, 5])
        s.sender("ask").send("q")
        answers.add(s.receiver("out").next())

    sim.exhaustive(scenario)
    # t2 cannot run before t1 produced a first batch size (the snapshot has no version yet)
    assert answers == {("q", 1), ("q", 2)}


def test_tick_constant_and_into_stream() -> None:
    flow = hl.FlowBuilder("const")
    p = flow.process(Server)
    t = p.tick()
    p.source("in", int).batch(t, nondet("any grouping")).cross_singleton(t.singleton("k")).all_ticks().sink("out")
    assert one_by_one(flow.finalize(), [1, 2]) == [(1, "k"), (2, "k")]


def test_top_level_assume_ordering_releases_in_any_order() -> None:
    flow = hl.FlowBuilder("assume")
    p = flow.process(Server)
    p.source("in", int).weaken_ordering().assume_ordering(nondet("the order does not matter here")).enumerate().sink(
        "out"
    )
    sim = Simulator(flow.finalize())
    seen: set[tuple[Any, ...]] = set()

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many([1, 2, 3])
        seen.add(tuple(x for _, x in s.receiver("out").collect()))

    # buffered elements are released one at a time, any of the buffer next: 3! = 6
    assert sim.exhaustive(scenario) == 6
    assert len(seen) == 6


def test_top_level_first_last_reduce_versions() -> None:
    flow = hl.FlowBuilder("versions")
    p = flow.process(Server)
    t = p.tick()
    src = p.source("in", int)
    why = nondet("the newest version in this test")
    src.first().snapshot(t, why).into_stream().all_ticks().sink("first")
    src.last().snapshot(t, why).into_stream().all_ticks().sink("last")
    src.reduce(lambda a, b: a * b).snapshot(t, why).into_stream().all_ticks().sink("product")
    kv = src.map(lambda x: (x % 2, x)).into_keyed()
    kv.fold(0, lambda a, x: a + x).snapshot(t, why).entries().all_ticks().sink("sums")
    sim = Simulator(flow.finalize())

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many([2, 3, 4])
        assert s.receiver("first").collect()[-1] == 2
        assert s.receiver("last").collect()[-1] == 4
        assert s.receiver("product").collect()[-1] == 24
        assert sorted(s.receiver("sums").collect()) == [(0, 6), (1, 3)]

    sim.run_once(scenario, EagerChooser())
