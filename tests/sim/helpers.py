"""Small builders shared by the simulator tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hydrolite as hl
from hydrolite import nondet
from hydrolite.sim import EagerChooser, Simulator


class Server:
    """A process tag."""


class Client:
    """Another process tag."""


class Workers:
    """A cluster tag."""


Build = Callable[[Any, Any, Any], Any]


def tick_flow(build: Build, *, keyed: bool = False) -> hl.Flow:
    """source 'in' -> batch into a tick -> build(batch, tick, process) -> all_ticks -> sink 'out'."""
    flow = hl.FlowBuilder("tick")
    p = flow.process(Server)
    t = p.tick()
    src: Any = p.keyed_source("in", str, int) if keyed else p.source("in", object)
    build(src.batch(t, nondet("tests batch everything at once")), t, p).all_ticks().sink("out")
    return flow.finalize()


def top_flow(build: Build, *, keyed: bool = False) -> hl.Flow:
    """source 'in' -> build(source, None, process) -> sink 'out' (all top level)."""
    flow = hl.FlowBuilder("top")
    p = flow.process(Server)
    src: Any = p.keyed_source("in", str, int) if keyed else p.source("in", object)
    build(src, None, p).sink("out")
    return flow.finalize()


def eager_outputs(flow: hl.Flow, inputs: list[Any], port: str = "out") -> list[Any]:
    """Send `inputs`, run one tick taking everything (EagerChooser), return the outputs."""
    got: list[Any] = []

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many(inputs)
        got.extend(s.receiver(port).collect())

    Simulator(flow).run_once(scenario, EagerChooser())
    return got
