"""Top-level propagation as a crash point (`crash.py`, `CrashWorld.propagate_top`).

A send, a delivery or a release that runs top-level operators is a micro-batch of those
operators on the Spark runtime (fused into the query that reads them): with crashes, it
may crash at Spark's points too, and is replayed from its durable input (the source, the
channel entry): state rolled back to its older version, outputs overwritten or skipped,
user functions run again. A propagation that runs no operator (a send straight into a
tick's entries) offers no crash point: nothing is computed that a replay could change.
"""

from __future__ import annotations

from typing import Any

import pytest
from scenarios import counter_seed

import hydrolite as hl
from examples import counter, counter_naive
from hydrolite import nondet
from hydrolite.sim import CrashDivergence, Recovery, SimulationFailure, Simulator

from .helpers import Client, Server


def line_of(needle: str) -> int:
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if needle in text)


def mapped_to_two_sinks(stateful: bool = False) -> hl.Flow:
    """A send mapped at top level into sinks 'a' and 'b' (and counted, when `stateful`)."""
    flow = hl.FlowBuilder("top_two_sinks")
    p = flow.process(Server)
    doubled = p.source("in", int).map(lambda x: x * 2)  # the top-level operator
    doubled.sink("a")
    doubled.sink("b")
    if stateful:
        doubled.count().snapshot(p.tick(), nondet("any count")).into_stream().all_ticks().sink("count")
    return flow.finalize()


def crash_points(log: list[str]) -> set[str]:
    return {entry.split(" of ")[0] for entry in log}


def test_a_send_through_a_top_level_operator_may_crash_at_each_point() -> None:
    # the send's micro-batch writes sink 'a' then sink 'b': no crash, before_state, between
    # the sinks, after both (no state: no before_outputs): 4 executions, each sink once
    points: set[str] = set()

    def scenario(s: Simulator) -> None:
        s.sender("in").send(3)
        s.receiver("a").assert_yields_only([6])
        s.receiver("b").assert_yields_only([6])
        points.update(crash_points(s.crash_log))

    sim = Simulator(mapped_to_two_sinks())
    assert sim.exhaustive(scenario) == 1
    assert sim.exhaustive(scenario, crashes=True) == 4
    assert points == {"before_state", "between_sinks", "after_sinks"}


def test_state_updated_at_top_level_is_rolled_back_on_replay() -> None:
    # the count is state of the send's micro-batch: before_outputs too, and the replay
    # counts the element once (the version it wrote is dropped)
    points: set[str] = set()

    def scenario(s: Simulator) -> None:
        s.sender("in").send(3)
        assert s.receiver("count").collect()[-1] == 1
        points.update(crash_points(s.crash_log))

    Simulator(mapped_to_two_sinks(stateful=True)).exhaustive(scenario, crashes=True)
    assert {"before_state", "before_outputs", "between_sinks", "after_sinks"} <= points


def test_a_send_straight_into_a_tick_is_no_crash_point() -> None:
    # the aligned counter's sends reach only its tick's entries: 7 = its tick runs' points
    assert Simulator(counter.build).exhaustive(counter_seed, crashes=True) == 7


def test_an_impure_function_upstream_of_a_tick_is_caught() -> None:
    # The known gap of tick-only crashes: a counter in a top-level map feeding a tick ran
    # once in the model, while Spark re-runs it with the query's replayed micro-batch.
    calls = [0]

    def stamp(x: int) -> tuple[int, int]:
        calls[0] += 1
        return x, calls[0]

    flow = hl.FlowBuilder("stamp_top")
    p = flow.process(Server)
    p.source("in", int).map(stamp).batch(p.tick(), nondet("any grouping")).all_ticks().sink("out")  # the stamp

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
    # shrunk to the earliest point, named at the user's line of the map
    assert "CRASH at before_state of the top-level operators, processing 7 sent to port 'in'" in report
    assert f"test_crash_top.py:{line_of('# the stamp')}" in report


def test_top_level_state_without_versions_is_caught() -> None:
    # The naive counter folds increments at top level: a replay that reads the version the
    # crashed micro-batch wrote counts the increment twice (the answer says 2).
    def scenario(s: Simulator) -> None:
        s.sender("increment").send(("c1", None))
        s.receiver("increment_ack").assert_yields_only([("c1", None)])
        s.sender("query").send(("c1", None))
        assert s.receiver("query_response").next()[1] in (0, 1)

    sim = Simulator(counter_naive.build)
    assert (sim.exhaustive(scenario), sim.exhaustive(scenario, crashes=True)) == (2, 17)
    sim.recovery = Recovery(versioned_state=False)
    with pytest.raises(SimulationFailure, match="CRASH at before_outputs of the top-level operators, processing"):
        sim.exhaustive(scenario, crashes=True)


def test_top_level_sinks_without_idempotence_are_caught() -> None:
    def scenario(s: Simulator) -> None:
        s.sender("in").send(3)
        s.receiver("a").assert_yields_only([6])

    sim = Simulator(mapped_to_two_sinks())
    sim.recovery = Recovery(idempotent_sinks=False)
    with pytest.raises(SimulationFailure, match="CRASH at between_sinks of the top-level operators") as info:
        sim.exhaustive(scenario, crashes=True)
    assert "'a' yielded unexpected [6], expected no more outputs" in str(info.value)


def test_a_delivery_through_a_top_level_operator_may_crash() -> None:
    # the server maps what the client sends: the delivery is the micro-batch that crashes
    flow = hl.FlowBuilder("remote_map")
    server = flow.process(Server)
    flow.process(Client).source("in", int).send(server).map(lambda x: x + 1).sink("out")
    logs: set[tuple[str, ...]] = set()

    def scenario(s: Simulator) -> None:
        s.sender("in").send(1)
        s.receiver("out").assert_yields_only([2])
        logs.add(tuple(s.crash_log))

    assert Simulator(flow.finalize()).exhaustive(scenario, crashes=True) == 3  # none, before_state, after_sinks
    delivered = [log for log in logs if log]
    assert all("delivering 1 from Process[Client] to Process[Server]" in log[0] for log in delivered)
    assert len(delivered) == 2


def test_replay_strings_carry_top_level_crashes() -> None:
    seen: list[Any] = []

    def scenario(s: Simulator) -> None:
        s.sender("in").send(3)
        seen.append(s.crash_log)
        s.receiver("a").assert_yields_only([6])

    sim = Simulator(mapped_to_two_sinks())
    trace = sim.replay(scenario, "v1c1:2")  # option 2 of the send: between the sinks
    assert "CRASH at between_sinks of the top-level operators" in trace
    assert any("after sink 'a', before sink 'b'" in log[0] for log in seen if log)
