"""Simulator-only operator checks. Operator semantics on both backends: tests/matrix."""

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
def test_inspect_calls_its_function_on_every_element(run: Any) -> None:
    seen: list[Any] = []
    assert run(lambda s, t, p: s.inspect(seen.append), [4, 5]) == [4, 5] and seen == [4, 5]


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
    import hydrolite as hl
    from hydrolite.sim import Simulator

    from .helpers import Server

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
    import hydrolite as hl
    from hydrolite.sim import Simulator

    from .helpers import Server

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
