"""Errors: user functions name the operator, site, element and tick; misuse is explained."""

from __future__ import annotations

import pytest

import hydrolite as hl
from hydrolite import nondet
from hydrolite.sim import NoMoreOutput, SimulationFailure, Simulator, SimUsageError, UserFunctionError
from hydrolite.sim.errors import ExplorationLimit

from .helpers import Server, Workers, tick_flow, top_flow


def test_user_function_error_in_a_tick() -> None:
    flow = tick_flow(lambda s, t, p: s.map(lambda x: 10 // x))

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many([5, 0])
        s.receiver("out").collect()

    with pytest.raises(SimulationFailure) as info:
        Simulator(flow).exhaustive(scenario)
    err = info.value.cause
    assert isinstance(err, UserFunctionError) and isinstance(err.exc, ZeroDivisionError)
    assert isinstance(err.__cause__, ZeroDivisionError)  # the original error is chained
    text = str(err)
    assert "map() raised ZeroDivisionError" in text and "element: 0" in text
    assert "running Tick#0[Process[Server]] on Process[Server] (run #" in text
    assert "test_errors.py:" in text and "s.map(lambda x: 10 // x)" in text
    # shrunk: the smallest schedule reaching the error batches only what is needed
    assert "Steps and choices that led here" in str(info.value)


def test_user_function_error_at_top_level_names_the_send() -> None:
    flow = top_flow(lambda s, t, p: s.filter(lambda x: x.startswith("a")))

    def scenario(s: Simulator) -> None:
        s.sender("in").send(3)

    with pytest.raises(SimulationFailure) as info:
        Simulator(flow).exhaustive(scenario)
    assert "processing 3 sent to port 'in' on Process[Server]" in str(info.value.cause)


def half_declared_int(x: int) -> int:
    return x // 2 if x % 2 == 0 else x / 2  # (a float for odd x, where `-> int` says int)


def test_a_result_that_does_not_fit_its_declared_type_fails_as_on_spark() -> None:
    """A declared result type is the user's word on both backends: Spark stores the result in
    a column of that type and fails on a value it cannot hold (`2.5` for `-> int`), so the
    simulator fails too, naming the operator, the element and the fix (before, it kept `2.5`
    and passed a program Spark rejects). (A fold's `acc_type=` is held by the same rule.)"""
    for build in (lambda s, t, p: s.map(half_declared_int), lambda s, t, p: s.filter_map(half_declared_int)):
        flow = tick_flow(build)

        def scenario(s: Simulator) -> None:
            s.sender("in").send_many([4, 5])
            s.receiver("out").collect()

        with pytest.raises(SimulationFailure) as info:
            Simulator(flow).exhaustive(scenario)
        err = info.value.cause
        assert isinstance(err, UserFunctionError) and isinstance(err.exc, TypeError), err
        text = str(err)
        assert "2.5 (a float) does not fit the declared int" in text, text
        assert "Spark stores it in a column of int and fails on it" in text and "fix: return int(...)" in text, text
        assert "test_errors.py:" in text


def test_receiving_when_nothing_can_come_fails_clearly() -> None:
    flow = top_flow(lambda s, t, p: s.filter(lambda x: x > 10))

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("out").next()

    with pytest.raises(SimulationFailure) as info:
        Simulator(flow).exhaustive(scenario)
    assert isinstance(info.value.cause, NoMoreOutput)
    assert "nothing more can be produced in this execution" in str(info.value)


def test_assertion_helpers_messages() -> None:
    flow = top_flow(lambda s, t, p: s.map(lambda x: x))
    sim = Simulator(flow)

    def extra(s: Simulator) -> None:
        s.sender("in").send_many([1, 2])
        s.receiver("out").assert_yields_only([1])

    with pytest.raises(SimulationFailure, match=r"yielded unexpected \[2\], expected no more outputs"):
        sim.exhaustive(extra)

    def early(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("out").assert_yields_unordered([1, 2])

    with pytest.raises(SimulationFailure, match=r"ended early: still expected \[2\]"):
        sim.exhaustive(early)


def test_usage_errors() -> None:
    flow = hl.FlowBuilder("usage")
    p = flow.process(Server)
    w = flow.cluster(Workers)
    p.keyed_source("in", str, int).entries().sink("out")
    w.source("win", int).sink("wout")
    sim = Simulator(flow.finalize())
    with pytest.raises(SimUsageError, match="no source port 'nope'"):
        sim.sender("nope")
    with pytest.raises(SimUsageError, match="pass member=0..1"):
        sim.sender("win")
    with pytest.raises(SimUsageError, match="do not pass member="):
        sim.receiver("out", member=0)
    with pytest.raises(SimUsageError, match="no execution is running"):
        sim.sender("in").send(("a", 1))

    def wrong_type(s: Simulator) -> None:
        s.sender("in").send(("a", "not an int"))

    with pytest.raises(SimulationFailure, match=r"expects tuple\[str, int\], got \('a', 'not an int'\)"):
        sim.exhaustive(wrong_type)


def test_a_tick_that_never_quiesces_hits_the_step_budget() -> None:
    flow = hl.FlowBuilder("forever")
    p = flow.process(Server)
    t = p.tick()
    handle, again = t.stream_cycle(int)
    handle.complete_next_tick(again.chain(p.source("in", int).batch(t, nondet("any grouping"))))
    again.all_ticks().sink("out")
    sim = Simulator(flow.finalize(), max_steps=50)

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("out").collect()

    with pytest.raises(SimulationFailure) as info:
        sim.exhaustive(scenario)
    assert isinstance(info.value.cause, ExplorationLimit)
