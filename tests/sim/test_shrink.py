"""Shrinking is minimal: fewest tick runs, then fewest choices, then smallest choices, checked
against a brute-force walk of every execution on small failures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import hydrolite as hl
from examples import counter_naive
from hydrolite import nondet
from hydrolite.sim import PrefixChooser, SimulationFailure, Simulator
from hydrolite.sim.choices import next_prefix
from hydrolite.sim.explore import _signature

from .helpers import Server


def naive_average() -> hl.Flow:
    """An average read from two separate snapshots (sum and count): they can disagree."""
    flow = hl.FlowBuilder("average")
    p = flow.process(Server)
    t = p.tick()
    values = p.source("in", int)
    total = values.fold(0, lambda a, x: a + x).snapshot(t, nondet("a recent sum"))
    count = values.count().snapshot(t, nondet("a recent count"))
    ask = p.source("ask", str).batch(t, nondet("any grouping"))
    pairs = ask.cross_singleton(total).cross_singleton(count)
    pairs.map(lambda qsn: (qsn[0][0], qsn[0][1] / qsn[1] if qsn[1] else None)).all_ticks().sink("avg")
    return flow.finalize()


def average_scenario(s: Simulator) -> None:
    s.sender("in").send_many([3, 3, 6])
    s.sender("ask").send("q")
    _, avg = s.receiver("avg").next()
    assert avg in (None, 3.0, 4.0), f"average {avg} matches no prefix of the input"


def counter_scenario(s: Simulator) -> None:
    s.sender("increment").send(("c1", None))
    s.receiver("increment_ack").next()
    s.sender("query").send(("c1", None))
    s.receiver("query_response").assert_yields([("c1", 1)])


def two_ticks() -> hl.Flow:
    """Two ticks batching one source; the test wrongly expects the first to answer first."""
    flow = hl.FlowBuilder("race")
    p = flow.process(Server)
    src = p.source("in", int)
    a = src.batch(p.tick(), nondet("first")).map(lambda x: ("a", x)).all_ticks()
    b = src.batch(p.tick(), nondet("second")).map(lambda x: ("b", x)).all_ticks()
    a.merge_unordered(b).sink("out")
    return flow.finalize()


def race_scenario(s: Simulator) -> None:
    s.sender("in").send_many([1, 2])
    got = [s.receiver("out").next() for _ in range(4)]
    assert [tag for tag, _ in got[:2]] != ["b", "b"], got


def brute_force_minimum(
    sim: Simulator, scenario: Callable[[Simulator], Any], signature: Any
) -> tuple[int, int, list[int]]:
    """Walk every plain execution; the smallest (runs, length, choices) failing the same way."""
    best: tuple[int, int, list[int]] | None = None
    prefix: list[int] | None = []
    while prefix is not None:
        ch = PrefixChooser(prefix)
        try:
            sim.run_once(scenario, ch)
        except AssertionError as e:
            if _signature(e) == signature:
                key = (sim.world.total_runs, len(ch.choices), list(ch.choices))
                best = key if best is None or key < best else best
        prefix = next_prefix(ch.choices, ch.branching)
    assert best is not None
    return best


CASES = {
    "naive average": (naive_average, average_scenario),
    "naive counter": (counter_naive.build, counter_scenario),
    "two ticks": (two_ticks, race_scenario),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("reduce", [True, False])
def test_shrinking_finds_the_brute_force_minimum(name: str, reduce: bool) -> None:
    build, scenario = CASES[name]
    sim = Simulator(build)
    with pytest.raises(SimulationFailure) as info:
        sim.exhaustive(scenario, reduce=reduce)
    failure = info.value
    runs, length, choices = brute_force_minimum(Simulator(build), scenario, _signature(failure.cause))
    assert failure.choices == choices
    assert failure.replay.startswith("v1:")  # plain choices: the same string with or without reduction
    assert f"shrunk to a minimal execution: {runs} tick run{'s' if runs != 1 else ''}, {length} choices" in str(
        failure
    ) or ("shrunk" not in str(failure))
    with pytest.raises(SimulationFailure):
        Simulator(build).replay(scenario, failure.replay)


@pytest.mark.parametrize("name", list(CASES))
def test_no_tick_run_in_a_shrunk_trace_released_nothing(name: str) -> None:
    build, scenario = CASES[name]
    with pytest.raises(SimulationFailure) as info:
        Simulator(build).exhaustive(scenario)
    runs = str(info.value).split("* ran ")[1:]
    assert runs
    for run in runs:
        releases = [line for line in run.splitlines() if "^ released" in line]
        assert any("released nothing" not in r and "(unchanged" not in r for r in releases), run


def test_a_fuzzed_naive_average_shrinks_to_one_run() -> None:
    # the example: reported "shrunk from 17 to 6 choices" with 2 tick runs before;
    # one run reading a sum and a count of different versions is enough: take the question,
    # one snapshot new, the other old (3 choices)
    with pytest.raises(SimulationFailure) as info:
        Simulator(naive_average).fuzz(average_scenario, iterations=2000, seed=7)
    failure = info.value
    report = str(failure)
    assert report.count("* ran ") == 1
    assert (
        failure.choices == brute_force_minimum(Simulator(naive_average), average_scenario, _signature(failure.cause))[2]
    )
    assert "shrunk to a minimal execution: 1 tick run, 3 choices" in report
