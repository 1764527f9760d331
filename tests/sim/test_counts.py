"""Pinned exploration counts: how many executions exhaustive mode explores, and why.

Rules behind every count (see hydrolite/sim/world.py): a tick runs only when it observes
something new, one of its entries being forced to release something new; a batch of a
TotalOrder stream takes a prefix, of a NoOrder stream any subset, of a keyed stream a prefix
per key; a snapshot takes any version not older than the last one seen; when several
scheduler actions are possible (ticks, deliveries), which runs next is a choice.
"""

from __future__ import annotations

from typing import Any

import pytest

import hydrolite as hl
from hydrolite import nondet
from hydrolite.sim import Simulator

from .helpers import Client, Server, Workers


def batched_counts(ordered: bool) -> Simulator:
    flow = hl.FlowBuilder("batched")
    p = flow.process(Server)
    src: Any = p.source("in", int)
    if not ordered:
        src = src.weaken_ordering()
    src.batch(p.tick(), nondet("any grouping")).count().into_stream().all_ticks().sink("out")
    return Simulator(flow.finalize())


def send_and_drain(items: list[Any]) -> Any:
    def scenario(s: Simulator) -> None:
        s.sender("in").send_many(items)
        assert sum(s.receiver("out").collect()) == len(items)

    return scenario


@pytest.mark.parametrize(("n", "expected"), [(1, 1), (2, 3), (3, 13), (4, 75)])
def test_unordered_batches_match_hydro(n: int, expected: int) -> None:
    # Hydro: one tick batching 4 unordered items explores 75 executions. Same semantics here:
    # every tick run releases a non-empty subset of what is pending, until nothing is, so an
    # execution is an ordered set partition of the items: the Fubini numbers 1, 3, 13, 75.
    assert batched_counts(ordered=False).exhaustive(send_and_drain(list(range(n)))) == expected


def test_ordered_batches_are_compositions() -> None:
    # TotalOrder: each run releases a non-empty prefix, so an execution is a composition of
    # 4 (where to cut the sequence): 2^(4-1) = 8.
    assert batched_counts(ordered=True).exhaustive(send_and_drain([1, 2, 3, 4])) == 8


def test_keyed_batches_take_a_prefix_per_key() -> None:
    # Keyed TotalOrder: a prefix per key, non-empty overall. Pending a:[1, 2], b:[1]: an
    # execution is a sequence of non-zero vectors summing to (2, 1): 1 (one run) + 4 (two
    # runs: (1,0)(1,1), (2,0)(0,1), (0,1)(2,0), (1,1)(1,0)) + 3 (orders of (1,0),(1,0),(0,1)) = 8.
    flow = hl.FlowBuilder("keyed")
    p = flow.process(Server)
    p.keyed_source("in", str, int).batch(p.tick(), nondet("any grouping")).entries().all_ticks().sink("out")
    sim = Simulator(flow.finalize())

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many([("a", 1), ("a", 2), ("b", 1)])
        got = s.receiver("out").collect()
        assert [v for k, v in got if k == "a"] == [1, 2]  # order within a key always holds

    assert sim.exhaustive(scenario) == 8


def test_snapshot_versions_never_go_back() -> None:
    # Three sends make versions 0, 1, 2, 3 of the count. The tick (only a snapshot) runs while
    # a newer version exists, each run a strictly newer one: increasing sequences ending at
    # 3, i.e. any subset of {0, 1, 2} then 3: 2^3 = 8.
    flow = hl.FlowBuilder("snap")
    p = flow.process(Server)
    p.source("in", int).count().snapshot(p.tick(), nondet("any recent count")).into_stream().all_ticks().sink("out")
    sim = Simulator(flow.finalize())
    seen: set[tuple[int, ...]] = set()

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many([7, 7, 7])
        got = tuple(s.receiver("out").collect())
        assert list(got) == sorted(set(got)) and got[-1] == 3
        seen.add(got)

    assert sim.exhaustive(scenario) == 8
    assert len(seen) == 8


def test_assume_ordering_in_a_tick() -> None:
    # 3 unordered items: each run takes a subset and orders it. Ordered partitions with
    # ordered blocks = arrange the items (3!) and cut the arrangement (2^2): 24.
    flow = hl.FlowBuilder("order")
    p = flow.process(Server)
    p.source("in", int).weaken_ordering().batch(p.tick(), nondet("any grouping")).assume_ordering(
        nondet("any order is fine here")
    ).all_ticks().sink("out")
    assert Simulator(flow.finalize()).exhaustive(send_and_drain([1, 1, 1])) == 24


def test_which_tick_runs_next() -> None:
    # Two ticks with one pending element each: each runs once; which runs first is the only
    # choice: 2 executions. The ticks read disjoint state and write different sinks, so
    # the two orders are one equivalence class: with reduction (the default), 1.
    flow = hl.FlowBuilder("two")
    p = flow.process(Server)
    src = p.source("in", int)
    src.batch(p.tick(), nondet("first tick")).all_ticks().sink("out")
    src.batch(p.tick(), nondet("second tick")).all_ticks().sink("out2")
    sim = Simulator(flow.finalize())

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("out").assert_yields([1])
        s.receiver("out2").assert_yields_only([1])

    assert sim.exhaustive(scenario, reduce=False) == 2
    # one branch pruned (the second tick first): it holds the one other schedule
    assert sim.exhaustive(scenario) == 1 and (sim.pruned, sim.abandoned) == (1, 1)


def test_network_fifo_and_interleaving() -> None:
    # One process-to-process channel is FIFO: delivering [1, 2] leaves no choice: 1.
    flow = hl.FlowBuilder("p2p")
    Client_ = flow.process(Client)
    srv = flow.process(Server)
    Client_.source("in", int).send(srv).sink("out")

    def fifo(s: Simulator) -> None:
        s.sender("in").send_many([1, 2])
        s.receiver("out").assert_yields_only([1, 2])

    assert Simulator(flow.finalize()).exhaustive(fifo) == 1

    # Two members sending to one process use two channels that interleave: 2.
    flow = hl.FlowBuilder("c2p")
    workers = flow.cluster(Workers)
    srv = flow.process(Server)
    workers.source("in", int).send(srv).entries().sink("out")
    seen: set[tuple[Any, ...]] = set()

    def both(s: Simulator) -> None:
        s.sender("in", member=0).send(10)
        s.sender("in", member=1).send(11)
        seen.add(tuple(v for _, v in s.receiver("out").collect()))

    assert Simulator(flow.finalize(), cluster_sizes={"Workers": 2}).exhaustive(both) == 2
    assert seen == {(10, 11), (11, 10)}


def test_cluster_members_run_their_own_ticks() -> None:
    # A broadcast to 2 members, each batching into its own tick: per member a chain
    # (deliver, run tick). Without reduction the two chains interleave freely: C(4, 2) = 6.
    # Actions at different places commute, and the test reads member 0 then member 1, so
    # all six are one Mazurkiewicz trace: exhaustive mode (sleep sets) explores 1. It
    # prunes 4 branches holding the other 5 schedules (one branch holds two: 1 + 4 <= 6),
    # and runs 2 partial executions before finding every next action asleep.
    flow = hl.FlowBuilder("bcast")
    p = flow.process(Server)
    workers = flow.cluster(Workers)
    t = workers.tick()
    p.source("in", int).broadcast(workers).batch(t, nondet("any grouping")).count().into_stream().all_ticks().sink(
        "out"
    )
    sim = Simulator(flow.finalize(), cluster_sizes={"Workers": 2})

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("out", member=0).assert_yields([1])
        s.receiver("out", member=1).assert_yields_only([1])

    assert sim.exhaustive(scenario, reduce=False) == 6
    assert sim.exhaustive(scenario) == 1 and (sim.pruned, sim.abandoned) == (4, 2)


def quorum_flow() -> hl.Flow:
    """A leader broadcasts; members reply; the leader counts replies and answers questions."""
    flow = hl.FlowBuilder("quorum")
    leader = flow.process(Server)
    workers = flow.cluster(Workers)
    replies = leader.source("in", int).broadcast(workers).map(lambda x: x + 1).send(leader)
    tick = leader.tick()
    seen = replies.entries().count().snapshot(tick, nondet("any number of replies so far"))
    leader.source("ask", str).batch(tick, nondet("any grouping")).cross_singleton(seen).all_ticks().sink("answers")
    replies.entries().map(lambda kv: kv[1]).sink("values")
    return flow.finalize()


def test_reduction_keeps_every_observable_outcome() -> None:
    # Sleep sets only skip reorderings of commuting actions: the set of outcomes the test can
    # observe is the same with and without reduction, for fewer executions.
    outcomes: dict[bool, set[tuple[Any, ...]]] = {True: set(), False: set()}

    def scenario_for(reduce: bool) -> Any:
        def scenario(s: Simulator) -> None:
            s.sender("in").send(1)
            first = s.receiver("values").next()
            s.sender("ask").send("q")
            answer = s.receiver("answers").next()
            outcomes[reduce].add((first, answer))

        return scenario

    sim = Simulator(quorum_flow(), cluster_sizes={"Workers": 2})
    full = sim.exhaustive(scenario_for(False), reduce=False)
    reduced = sim.exhaustive(scenario_for(True))
    assert outcomes[True] == outcomes[False] == {(2, ("q", n)) for n in range(3)}
    # regression pins (no closed form: deliveries both ways, two ticks' worth of choices):
    # 488 interleavings; 40 with reduction (110 when only actions at different places
    # commuted: ticks and deliveries into their entries now commute too)
    assert (full, reduced) == (488, 40)
