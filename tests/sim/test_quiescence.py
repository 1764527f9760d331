"""Stream cycles finish exploring: idle runs at a fixpoint are not schedules, inputs are not starved.

A tick holding deferred elements runs again without new input (an *idle* run). Such a run is
explored only when it would change an output or the value carried to the next run; and in
runs kept busy that way, an entry with pending input may be passed over at most `fairness`
times in a row.
"""

from __future__ import annotations

from typing import Any

import pytest

import hydrolite as hl
from hydrolite import NoOrder, nondet
from hydrolite.ir.meta import Kind
from hydrolite.sim import SimulationFailure, Simulator
from hydrolite.sim.errors import ExplorationLimit

from .helpers import Server


def word_count() -> hl.Flow:
    """A word count carrying its counts from run to run in an unordered stream cycle."""
    flow = hl.FlowBuilder("wordcount")
    p = flow.process(Server)
    t = p.tick()
    handle, carried = t.stream_cycle(tuple[str, int], NoOrder)
    words = p.source("words", str).batch(t, nondet("any grouping of words"))
    counts = carried.merge_unordered(words.map(lambda w: (w, 1))).into_keyed().fold_commutative(0, lambda a, c: a + c)
    handle.complete_next_tick(counts.entries())
    ask = p.source("ask", str).batch(t, nondet("questions see the words counted so far"))
    ask.map(lambda w: (w, None)).into_keyed().lookup_keyed_singleton(counts).entries().all_ticks().sink("answers")
    return flow.finalize()


def test_stream_cycle_takes_the_ordering_of_what_it_carries() -> None:
    flow = hl.FlowBuilder("orders")
    t = flow.process(Server).tick()
    _, bag = t.stream_cycle(int, NoOrder)
    _, seq = t.stream_cycle(int)
    assert bag.node.meta.kind is Kind.STREAM and not bag.node.meta.ordered
    assert seq.node.meta.ordered


def test_word_count_with_a_stream_cycle_finishes_and_quiesces() -> None:
    answers: set[Any] = set()

    def scenario(s: Simulator) -> None:
        s.sender("words").send_many(["a", "b", "a"])
        s.sender("ask").send("a")
        answers.add(s.receiver("answers").next())
        s.receiver("answers").assert_no_more()  # needs quiescence: the cycle must stop the tick

    sim = Simulator(word_count())
    n = sim.exhaustive(scenario)
    # the question can come before, between or after the two 'a's (None: not counted yet)
    assert answers == {("a", (None, None)), ("a", (None, 1)), ("a", (None, 2))}
    assert 0 < n < 200


def test_counts_carried_across_questions() -> None:
    def scenario(s: Simulator) -> None:
        s.sender("words").send_many(["x", "y", "x"])
        s.receiver("answers").assert_no_more()  # every word is counted: the tick goes quiet
        s.sender("ask").send("x")
        s.receiver("answers").assert_yields_only([("x", (None, 2))])

    Simulator(word_count()).exhaustive(scenario)


def test_an_idle_run_at_its_fixpoint_is_not_a_schedule() -> None:
    # one word: run 1 counts it; the carried counts then keep the tick runnable, but a run
    # without input computes the same counts and emits nothing: not explored, so the only
    # choice left is none at all: 1 execution
    def scenario(s: Simulator) -> None:
        s.sender("words").send("a")
        s.receiver("answers").assert_no_more()

    sim = Simulator(word_count())
    assert sim.exhaustive(scenario) == 1
    world = sim.run_once(scenario)
    assert world.runs == {(id(sim.program.ticks[0]), 0): 1}


def ticker() -> hl.Flow:
    """A tick that keeps itself busy for ever: the cycle counts runs and emits every run."""
    flow = hl.FlowBuilder("ticker")
    p = flow.process(Server)
    t = p.tick()
    handle, beats = t.stream_cycle(int)
    started = p.source("start", int).batch(t, nondet("start any time"))
    now = beats.chain(started).map(lambda x: x + 1)
    handle.complete_next_tick(now)
    now.all_ticks().sink("beats")
    ask = p.source("ask", str).batch(t, nondet("questions may wait a few runs"))
    ask.cross_singleton(now.fold(0, lambda a, x: x)).all_ticks().sink("answers")
    return flow.finalize()


@pytest.mark.parametrize("fairness", [0, 1, 2, 3])
def test_fairness_lets_pending_input_in_within_bounded_runs(fairness: int) -> None:
    # without fairness the first schedule passes the question over in every run and never
    # answers; with it, the question enters within `fairness` + 1 runs of the busy tick
    answers: set[Any] = set()

    def scenario(s: Simulator) -> None:
        s.sender("start").send(0)
        s.receiver("beats").next()  # run 1 took the start: the cycle now holds [1]
        s.sender("ask").send("q")
        answers.add(s.receiver("answers").next())

    sim = Simulator(ticker(), fairness=fairness)
    assert sim.exhaustive(scenario) == fairness + 1
    assert answers == {("q", k) for k in range(2, fairness + 3)}


def test_a_tick_that_never_quiesces_is_reported_briefly() -> None:
    def scenario(s: Simulator) -> None:
        s.sender("start").send(0)
        s.receiver("beats").collect()  # waits for quiescence, which never comes

    with pytest.raises(SimulationFailure) as info:
        Simulator(ticker(), max_steps=3000).exhaustive(scenario)
    failure = info.value
    assert isinstance(failure.cause, ExplorationLimit)
    assert "ran 3000 times" in str(failure)
    assert "lines of steps omitted" in str(failure) and len(str(failure)) < 40_000
    assert len(failure.replay) < 40  # a long run of equal choices is written value*count


def test_without_fairness_the_first_schedule_starves_the_question() -> None:
    def scenario(s: Simulator) -> None:
        s.sender("start").send(0)
        s.receiver("beats").next()
        s.sender("ask").send("q")
        s.receiver("answers").next()

    with pytest.raises(SimulationFailure) as info:
        Simulator(ticker(), fairness=10**9, max_steps=500).exhaustive(scenario)
    assert isinstance(info.value.cause, ExplorationLimit)


def test_assume_ordering_in_a_busy_cycle_is_explained() -> None:
    # the pre-NoOrder way to carry a keyed fold's entries: every idle run chooses an order
    # again, so the tick never goes quiet; the report says what to write instead
    flow = hl.FlowBuilder("ordered-bag")
    p = flow.process(Server)
    t = p.tick()
    handle, carried = t.stream_cycle(tuple)
    words = p.source("words", str).batch(t, nondet("any grouping"))
    counts = carried.chain(words.map(lambda w: (w, 1))).into_keyed().fold(0, lambda a, c: a + c)
    handle.complete_next_tick(counts.entries().assume_ordering(nondet("the cycle is TotalOrder")))
    words.all_ticks().sink("seen")

    def scenario(s: Simulator) -> None:
        s.sender("words").send_many(["a", "b"])
        s.receiver("seen").collect()

    with pytest.raises(SimulationFailure) as info:
        Simulator(flow.finalize(), max_steps=200).exhaustive(scenario)
    assert "stream_cycle(ty, NoOrder) instead of assume_ordering" in str(info.value)
