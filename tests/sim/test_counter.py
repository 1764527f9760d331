"""The seed's counter story: the naive program fails with the stale read, the aligned one passes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from scenarios import counter_seed

from examples import counter, counter_naive
from hydrolite import sim
from hydrolite.sim import SimulationFailure, Simulator
from hydrolite.sim.report import REPLAY_ENV

seed_scenario = counter_seed  # the seed's scenario, shared with the Spark conformance tests


def line_of(module: object, needle: str) -> int:
    path = Path(module.__file__)
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


def naive_failure() -> SimulationFailure:
    with pytest.raises(SimulationFailure) as info:
        Simulator(counter_naive.build).exhaustive(seed_scenario)
    return info.value


def test_naive_counter_stale_read_is_found_with_its_trace() -> None:
    failure = naive_failure()
    report = str(failure)
    batch_at = f"counter_naive.py:{line_of(counter_naive, 'query.batch(')}"
    snapshot_at = f"counter_naive.py:{line_of(counter_naive, 'count.snapshot(')}"
    assert "AssertionError: 'query_response' yielded ('c1', 0), expected ('c1', 1)" in report
    # the two choices, in order, each with file:line, its code line and what it released
    batch, snapshot = report.index(batch_at), report.index(snapshot_at)
    assert batch < snapshot
    assert 'query.batch(tick, nondet("queries may be answered in any grouping"))' in report
    assert "^ released [('c1', None)]" in report[batch:snapshot]
    assert "count.snapshot(tick" in report[snapshot:]
    assert "^ released 0" in report[snapshot:]
    assert "received ('c1', None) from 'increment_ack'" in report[:batch]  # the ack came first
    # shrunk to exactly those two choices, with one line to replay them
    assert failure.choices == [1, 0] and failure.replay == "v1:1.0"
    replay_lines = [x for x in report.splitlines() if "Replay this execution" in x]
    assert len(replay_lines) == 1 and f"{REPLAY_ENV}=v1:1.0 pytest" in replay_lines[0]
    assert "test_counter.py::test_naive_counter_stale_read_is_found_with_its_trace" in replay_lines[0]
    assert isinstance(failure.cause, AssertionError)


def test_naive_counter_exploration_count() -> None:
    # The tick has two entries: the query batch (take it or not) and the count snapshot
    # (versions 0 and 1 pending). Run 1: batch [q] with snapshot 0 or 1 (2 executions end
    # with an answer); or batch [] with snapshot 0 (then run 2: batch [] forces snapshot 1
    # and run 3 answers 1; or batch [q] with snapshot 0 again or 1: 3 executions); or batch
    # [] with snapshot 1 (run 2 answers 1: 1 execution). Total 2 + 3 + 1 = 6.
    answers: list[int] = []

    def any_answer(s: Simulator) -> None:
        s.sender("increment").send(("c1", None))
        s.receiver("increment_ack").next()
        s.sender("query").send(("c1", None))
        answers.append(s.receiver("query_response").next()[1])

    assert Simulator(counter_naive.build).exhaustive(any_answer) == 6
    assert sorted(answers) == [0, 0, 1, 1, 1, 1]  # two schedules read the stale count


def test_aligned_counter_passes_every_schedule() -> None:
    # The increment enters the merged tick through the aligned entry batch (the only entry
    # that can advance, so it is forced): one run releases the ack and updates the count.
    # The query's run then reads the count consistently: no choice anywhere: 1 execution.
    assert Simulator(counter.build).exhaustive(seed_scenario) == 1


@sim.exhaustive(counter.build)
def test_aligned_counter_one_line(s: Simulator) -> None:
    seed_scenario(s)


def test_fuzz_finds_and_shrinks_the_stale_read() -> None:
    with pytest.raises(SimulationFailure) as info:
        Simulator(counter_naive.build).fuzz(seed_scenario, iterations=500, seed=3)
    assert info.value.choices == [1, 0]
    assert "fuzzing (seed 3)" in str(info.value)


def test_hypothesis_engine_finds_the_stale_read() -> None:
    with pytest.raises(SimulationFailure) as info:
        Simulator(counter_naive.build).fuzz(seed_scenario, iterations=200, seed=1, engine="hypothesis")
    failure = info.value
    assert "^ released 0" in str(failure) and len(failure.choices) <= 4
    with pytest.raises(SimulationFailure):  # Hypothesis's minimal example replays
        Simulator(counter_naive.build).replay(seed_scenario, failure.replay)


def test_replay_runs_exactly_the_recorded_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SimulationFailure) as info:
        Simulator(counter_naive.build).replay(seed_scenario, "v1:1.0")
    assert info.value.choices == [1, 0] and "replay" in str(info.value).splitlines()[0]
    # a passing sequence (batch the query with the newer count) returns its trace
    trace = Simulator(counter_naive.build).replay(seed_scenario, "v1:1.1")
    assert "^ released 1" in trace and "received ('c1', 1) from 'query_response'" in trace
    # the environment variable printed in the report makes exhaustive() replay it
    monkeypatch.setenv(REPLAY_ENV, "v1:1.0")
    with pytest.raises(SimulationFailure):
        Simulator(counter_naive.build).exhaustive(seed_scenario)
    assert os.environ[REPLAY_ENV] == "v1:1.0"


def test_fixture(simulator: Callable[..., Simulator]) -> None:
    s = simulator(counter.build)
    assert s.exhaustive(seed_scenario) == 1
