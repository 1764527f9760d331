"""Outputs whose type promises determinism must be identical on every explored schedule."""

from __future__ import annotations

import itertools

import pytest

import hydrolite as hl
from hydrolite import nondet
from hydrolite.sim import DeterminismViolation, SimulationFailure, Simulator

from .helpers import Server


def program(f: object) -> hl.Flow:
    flow = hl.FlowBuilder("det")
    p = flow.process(Server)
    src = p.source("in", int)
    src.map(f).sink("promised")  # Stream[?, Process[Server], Unbounded, TotalOrder], no nondet
    src.weaken_ordering().batch(p.tick(), nondet("any grouping")).count().into_stream().all_ticks().sink("sizes")
    return flow.finalize()


def scenario(s: Simulator) -> None:
    s.sender("in").send_many([1, 2])
    s.receiver("sizes").collect()


def test_pure_functions_pass() -> None:
    sim = Simulator(program(lambda x: x + 1))
    assert sim.program.deterministic_sinks == ["promised"]  # "sizes" comes from a batch
    assert sim.exhaustive(scenario) == 3


def test_impure_function_is_reported_like_a_failure() -> None:
    counter = itertools.count()
    with pytest.raises(SimulationFailure) as info:
        Simulator(program(lambda x: (x, next(counter)))).exhaustive(scenario)
    assert isinstance(info.value.cause, DeterminismViolation)
    text = str(info.value)
    assert "sink 'promised' promises a deterministic output" in text
    assert "Replay this execution" in text
