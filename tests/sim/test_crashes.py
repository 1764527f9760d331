"""Crashes as choices: every tick run may crash at each of Spark's fault points and be
replayed with the same input (`hydrolite/sim/crash.py`); so may every top-level propagation
that runs an operator (`test_crash_top.py`); an execution that crashed must end with the
outputs of the same schedule without the crash.

The examples pass under every crash point of every schedule; what breaks exactly-once is
caught: a user function whose effect repeats or whose result changes on replay, and a
recovery without versioned state or without idempotent sinks (turned off on purpose).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from scenarios import (
    bank_audit_consistent,
    counter_acks_bound_answers,
    counter_seed,
    kvstore_get_after_put_ack,
)

import hydrolite as hl
from examples import bank, counter, counter_naive, kvstore
from hydrolite import nondet
from hydrolite.planner.spark.faults import FAULT_POINTS
from hydrolite.sim import (
    CrashDivergence,
    PrefixChooser,
    Recovery,
    SimulationFailure,
    Simulator,
    SimUsageError,
)
from hydrolite.sim import exhaustive as sim_exhaustive
from hydrolite.sim.crash import POINTS
from hydrolite.sim.report import REPLAY_ENV
from hydrolite.sim.values import decode_replay

from .helpers import Client, Server
from .test_counts import quorum_flow
from .test_quiescence import word_count


def line_of(needle: str) -> int:
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if needle in text)


def test_the_crash_points_are_the_spark_runtimes() -> None:
    assert POINTS == FAULT_POINTS


def any_answer(s: Simulator) -> None:
    s.sender("increment").send(("c1", None))
    s.receiver("increment_ack").next()
    s.sender("query").send(("c1", None))
    s.receiver("query_response").next()


@pytest.mark.parametrize(
    ("build", "scenario", "plain", "crashing"),
    [
        (counter.build, counter_seed, 1, 7),
        (counter.build, counter_acks_bound_answers, 9, 156),
        (counter_naive.build, any_answer, 6, 47),
        (kvstore.build, kvstore_get_after_put_ack, 1, 16),
        (bank.build, bank_audit_consistent, 103, 1012),
    ],
    ids=["counter-seed", "counter-acks", "naive-any-answer", "kvstore", "bank"],
)
def test_examples_survive_every_crash_point_of_every_schedule(
    build: Callable[[], hl.Flow], scenario: Any, plain: int, crashing: int
) -> None:
    # Each crash-free execution E adds one execution per (tick run of E, crash point of that
    # run); the rest of the execution is explored as usual after the replay. The aligned
    # counter's seed scenario: run 1 (the increment; its carried count is state) has
    # before_state, before_outputs, after_sinks; run 2 (the query) the same: 1 + 3 + 3 = 7.
    # Its sends go straight into the tick's entries: no top-level operator, no crash point.
    # The naive counter's increment runs values() -> fold and entries() -> the ack at top
    # level: 4 points (before_state, before_outputs, between the ack and the snapshot's
    # input, after both), each followed by the 6 schedules: 6 + 4 * 6 + 17 (its ticks) = 47.
    sim = Simulator(build)
    assert sim.exhaustive(scenario) == plain
    assert sim.exhaustive(scenario, crashes=True) == crashing
    assert sim.baseline_runs == 0  # each was compared with a crash-free schedule explored before


def test_two_crashes_per_execution_include_crashes_during_a_replay() -> None:
    logs: set[tuple[str, ...]] = set()

    def scenario(s: Simulator) -> None:
        counter_seed(s)
        logs.add(tuple(s.crash_log))

    assert Simulator(counter.build).exhaustive(scenario, crashes=2) == 34
    replayed_twice = [
        log
        for log in logs
        if len(log) == 2 and log[0].split(" (")[0].split(" of ", 1)[1] == log[1].split(" (")[0].split(" of ", 1)[1]
    ]
    assert replayed_twice, "no execution crashed again while replaying the crashed run"


def two_sinks(stateful: bool = False) -> hl.Flow:
    """One tick writing the same batch to two sinks (and, when `stateful`, counting it at top level)."""
    flow = hl.FlowBuilder("two_sinks")
    p = flow.process(Server)
    out = p.source("in", int).batch(p.tick(), nondet("any grouping")).all_ticks()
    out.sink("a")
    out.sink("b")
    if stateful:
        out.count().snapshot(p.tick(), nondet("any count")).into_stream().all_ticks().sink("count")
    return flow.finalize()


def test_crash_points_of_one_run_and_outputs_seen_once() -> None:
    # One run writing sinks 'a' then 'b': it may not crash, or crash before_state, between
    # the sinks, or after both (no before_outputs: the run writes no state): 4 executions.
    # Whatever the crash point, each sink holds the output once: the replay overwrote what
    # the crashed run had written (sinks are idempotent by batch id).
    points: set[str] = set()

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("a").assert_yields_only([1])
        s.receiver("b").assert_yields_only([1])
        points.update(entry.split(" of run")[0] for entry in s.crash_log)

    sim = Simulator(two_sinks())
    assert sim.exhaustive(scenario, crashes=True) == 4
    assert points == {"before_state", "between_sinks", "after_sinks"}


def test_a_run_that_writes_state_can_crash_before_its_outputs() -> None:
    # The top-level count downstream of the tick is part of its micro-batch's state: the run
    # now also has before_outputs (5 options), and the count is not incremented twice.
    points: set[str] = set()

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("a").assert_yields_only([1])
        assert s.receiver("count").collect()[-1] == 1
        points.update(entry.split(" of run")[0] for entry in s.crash_log)

    sim = Simulator(two_sinks(stateful=True))
    sim.exhaustive(scenario, crashes=True)
    assert points == {"before_state", "before_outputs", "between_sinks", "after_sinks"}


def test_a_crash_between_sinks_is_visible_in_the_replay_string_and_replays() -> None:
    sim = Simulator(two_sinks())
    sim.recovery = Recovery(idempotent_sinks=False)

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("a").assert_yields_only([1])

    with pytest.raises(SimulationFailure) as info:
        sim.exhaustive(scenario, crashes=True)
    failure = info.value
    report = str(failure)
    # the receiver saw the output twice: the replay appended instead of overwriting
    assert "'a' yielded unexpected [1], expected no more outputs" in report
    assert "CRASH at between_sinks of run #1" in report and "after sink 'a', before sink 'b'" in report
    sink_line = "test_crashes.py:" + str(line_of('out.sink("a")'))
    assert sink_line in report  # the crash point named at the user's line
    assert failure.replay == "v1c1:2" and decode_replay(failure.replay) == ([2], False, 1)
    with pytest.raises(SimulationFailure):  # the string replays the crash
        sim.replay(scenario, failure.replay)
    sim.recovery = Recovery()
    assert "CRASH at between_sinks" in sim.replay(scenario, failure.replay)  # and passes with Spark's recovery


def test_broken_recovery_without_versioned_state_is_caught() -> None:
    # Replaying the increment's run on the state version it had already written counts the
    # increment twice: the query answers 2. Spark's recovery reads the versions older than
    # the batch, so the same crash point passes with it.
    sim = Simulator(counter.build)
    sim.recovery = Recovery(versioned_state=False)
    with pytest.raises(SimulationFailure) as info:
        sim.exhaustive(counter_seed, crashes=True)
    report = str(info.value)
    assert "'query_response' yielded ('c1', 2), expected ('c1', 1)" in report
    assert "CRASH at before_outputs of run #1" in report
    assert "counter.py:" in report.split("CRASH at before_outputs")[1].splitlines()[1]


def test_broken_recovery_of_a_stream_cycle_is_caught() -> None:
    # The word count carries its counts in a tick cycle (state written with the run): read
    # again after a crash, a word is counted twice.
    def scenario(s: Simulator) -> None:
        s.sender("words").send_many(["x", "y", "x"])
        s.receiver("answers").assert_no_more()
        s.sender("ask").send("x")
        s.receiver("answers").assert_yields_only([("x", (None, 2))])

    sim = Simulator(word_count())
    assert sim.exhaustive(scenario, crashes=True) > sim.exhaustive(scenario)
    sim.recovery = Recovery(versioned_state=False)
    with pytest.raises(SimulationFailure, match="CRASH at before_outputs"):
        sim.exhaustive(scenario, crashes=True)


def test_broken_idempotence_of_channels_is_caught() -> None:
    # A tick on the client sends its batch to the server. A crash after the channel entry
    # was written: Spark's replay skips the complete entry; one that sends it again
    # delivers the elements twice.
    flow = hl.FlowBuilder("channel")
    client, server = flow.process(Client), flow.process(Server)
    client.source("in", int).batch(client.tick(), nondet("any grouping")).all_ticks().send(server).sink("received")

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many([1, 2])
        s.receiver("received").assert_yields_only([1, 2])

    sim = Simulator(flow.finalize())
    assert sim.exhaustive(scenario, crashes=True) > sim.exhaustive(scenario)
    sim.recovery = Recovery(idempotent_sinks=False)
    with pytest.raises(SimulationFailure, match="CRASH at after_sinks") as info:
        sim.exhaustive(scenario, crashes=True)
    assert "'received' yielded unexpected" in str(info.value)


def callback_flow(delivered: list[int]) -> hl.Flow:
    """A tick calling a Python callback for each element, without batch-id idempotence."""
    flow = hl.FlowBuilder("callback")
    p = flow.process(Server)
    batch = p.source("in", int).batch(p.tick(), nondet("any grouping"))  # the callback's tick
    batch.inspect(lambda x: delivered.append(x)).all_ticks().sink("out")
    return flow.finalize()


def test_a_non_idempotent_callback_is_caught_only_with_crashes() -> None:
    delivered: list[int] = []

    def scenario(s: Simulator) -> None:
        delivered.clear()
        s.sender("in").send_many([1, 2])
        s.receiver("out").assert_yields_only([1, 2])
        assert delivered == [1, 2], f"the callback saw {delivered}"

    sim = Simulator(callback_flow(delivered))
    assert sim.exhaustive(scenario) == 2  # every schedule passes without crashes
    with pytest.raises(SimulationFailure) as info:
        sim.exhaustive(scenario, crashes=True)
    report = str(info.value)
    assert "the callback saw [1, 1, 2]" in report or "the callback saw [1, 2, 1, 2]" in report
    # shrunk to the earliest crash point, named at the line of the tick's batch
    assert "CRASH at before_state of run #1" in report
    assert "test_crashes.py:" + str(line_of("# the callback's tick")) in report
    assert info.value.replay.startswith("v1c1:")


def test_a_result_that_changes_on_replay_is_a_crash_divergence() -> None:
    # The map numbers elements with a counter: deterministic in every crash-free schedule
    # (the scenario resets it), but a replay numbers them again. The scenario checks
    # nothing; the comparison with the same schedule without the crash catches it.
    calls = [0]

    def stamp(x: int) -> tuple[int, int]:
        calls[0] += 1
        return x, calls[0]

    flow = hl.FlowBuilder("stamp")
    p = flow.process(Server)
    p.source("in", int).batch(p.tick(), nondet("any grouping")).map(stamp).all_ticks().sink("out")

    def scenario(s: Simulator) -> None:
        calls[0] = 0
        s.sender("in").send(7)
        s.receiver("out").collect()

    sim = Simulator(flow.finalize())
    assert sim.exhaustive(scenario) == 1
    with pytest.raises(SimulationFailure) as info:
        sim.exhaustive(scenario, crashes=True)
    assert isinstance(info.value.cause, CrashDivergence)
    report = str(info.value)
    assert "sink 'out' holds [(7, 2)] with the crash, [(7, 1)] without" in report
    assert "CRASH at before_state of run #1" in report


def test_orders_chosen_in_a_tick_are_replayed_the_same_way() -> None:
    # Spark's replay of a batch is deterministic: an assume_ordering inside the tick orders
    # the replayed batch as it did the first time (else the outputs would differ).
    flow = hl.FlowBuilder("order")
    p = flow.process(Server)
    p.source("in", int).weaken_ordering().batch(p.tick(), nondet("any grouping")).assume_ordering(
        nondet("any order")
    ).all_ticks().sink("out")

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many([1, 2, 3])
        assert sorted(s.receiver("out").collect()) == [1, 2, 3]

    sim = Simulator(flow.finalize())
    assert sim.exhaustive(scenario, crashes=True) > sim.exhaustive(scenario) == 24


def test_reduction_keeps_every_outcome_under_crashes() -> None:
    outcomes: dict[bool, set[tuple[Any, ...]]] = {True: set(), False: set()}

    def scenario_for(reduce: bool) -> Callable[[Simulator], None]:
        def scenario(s: Simulator) -> None:
            s.sender("in").send(1)
            first = s.receiver("values").next()
            s.sender("ask").send("q")
            outcomes[reduce].add((first, s.receiver("answers").next(), len(s.crash_log)))

        return scenario

    # brute force on one member (two take 7,558 executions without reduction: seconds)
    sim = Simulator(quorum_flow(), cluster_sizes={"Workers": 1})
    full = sim.exhaustive(scenario_for(False), reduce=False, crashes=True)
    reduced = sim.exhaustive(scenario_for(True), crashes=True)
    assert outcomes[True] == outcomes[False]
    assert {crashed for _, _, crashed in outcomes[True]} == {0, 1}
    assert (full, reduced) == (121, 59)
    # two members, reduced: 40 without crashes (test_counts.py); 164 when only tick runs
    # crashed, the deliveries' top-level operators (the map, the count) now crash too
    assert Simulator(quorum_flow(), cluster_sizes={"Workers": 2}).exhaustive(scenario_for(True), crashes=True) == 524


def test_fuzzing_with_crashes_finds_the_broken_recovery() -> None:
    sim = Simulator(counter.build)
    assert sim.fuzz(counter_acks_bound_answers, iterations=200, crashes=True) == 200
    sim.recovery = Recovery(versioned_state=False)
    with pytest.raises(SimulationFailure, match="CRASH at"):
        sim.fuzz(counter_acks_bound_answers, iterations=200, crashes=True)


def test_crash_replay_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = Simulator(counter.build)
    sim.recovery = Recovery(versioned_state=False)
    monkeypatch.setenv(REPLAY_ENV, "v1c1:2")
    with pytest.raises(SimulationFailure, match="CRASH at before_outputs"):
        sim.exhaustive(counter_seed)  # the string carries the crash budget


def test_crash_budget_is_checked() -> None:
    with pytest.raises(SimUsageError, match="crashes"):
        Simulator(counter.build).exhaustive(counter_seed, crashes=-1)


def test_run_once_with_a_chosen_crash() -> None:
    # option 3 of run #1 of the aligned counter: after_sinks (the ack written, not committed)
    sim = Simulator(counter.build)

    def scenario(s: Simulator) -> None:
        counter_seed(s)
        assert s.receiver("increment_ack").collect() == []  # the ack was read once, not twice

    sim.run_once(scenario, PrefixChooser([3]), crashes=True)
    assert [entry.split(" (")[0] for entry in sim.crash_log] == [
        "after_sinks of run #1 of Tick#0[Process[Server]] on Process[Server]"
    ]


@sim_exhaustive(counter.build, crashes=True)
def test_decorator_with_crashes(s: Simulator) -> None:
    counter_acks_bound_answers(s)


def test_cli_explores_crashes_and_replays_them(capsys: pytest.CaptureFixture[str]) -> None:
    from hydrolite.sim.cli import main as sim_main

    target, program = "tests/scenarios.py:counter_acks_bound_answers", "examples/counter.py"
    assert sim_main([target, "--program", program, "--crashes", "1"]) == 0
    assert "every schedule and crash point (up to 1 per execution) passed: 156 executions" in capsys.readouterr().out
    assert sim_main([target, "--program", program, "--replay", "v1c1:0.3"]) == 0
    assert "CRASH at after_sinks of run #1" in capsys.readouterr().out
