"""The simulator: run hydrolite programs in pure Python and explore their non-determinism.

```python
from hydrolite import sim

@sim.exhaustive(counter.build)             # one line: a pytest test exploring every schedule
def test_counter(s: sim.Simulator) -> None:
    increment, query = s.sender("increment"), s.sender("query")
    ack, response = s.receiver("increment_ack"), s.receiver("query_response")
    increment.send(("c1", None))
    ack.next()
    query.send(("c1", None))
    response.assert_yields([("c1", 1)])
```

`Simulator(flow).exhaustive(scenario)` / `.fuzz(scenario, iterations=, seed=)` /
`.replay(scenario, "v1:...")` are the same modes without the decorator;
`sim.replay(build, scenario, "v1:...")` and `hydrolite sim FILE:SCENARIO --replay v1:...`
replay a reported execution from Python or the shell. `crashes=True` also explores every
crash point of every tick run and top-level micro-batch with the Spark runtime's recovery
(`crash.py`);
`Simulator(flow, interleavings=True, per_key_snapshots=True)` explores finer asynchrony
(`asynchrony.py`). See `world.py` for the execution model and `explore.py` for failure
reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..ir.graph import Flow
from .choices import Chooser, EagerChooser, PrefixChooser, RandomChooser
from .crash import Recovery
from .errors import (
    CrashDivergence,
    DeterminismViolation,
    ExplorationLimit,
    NoMoreOutput,
    SimulationFailure,
    SimUsageError,
    UserFunctionError,
)
from .explore import Simulator
from .ports import Receiver, Sender
from .registry import evaluator_for, registered

__all__ = [
    "Chooser",
    "CrashDivergence",
    "EagerChooser",
    "PrefixChooser",
    "RandomChooser",
    "DeterminismViolation",
    "ExplorationLimit",
    "NoMoreOutput",
    "Receiver",
    "Recovery",
    "Sender",
    "SimUsageError",
    "SimulationFailure",
    "Simulator",
    "UserFunctionError",
    "evaluator_for",
    "exhaustive",
    "fuzz",
    "registered",
    "replay",
]

TestFn = Callable[[], None]
FlowSource = Flow | Callable[[], Flow]


def _as_test(
    fn: Callable[[Simulator], object],
    run: Callable[[Simulator, Callable[[Simulator], object]], int],
    flow: FlowSource,
    cluster_sizes: Mapping[str, int] | None,
    model: dict[str, bool],
) -> TestFn:
    def test() -> None:
        s = Simulator(flow, cluster_sizes=cluster_sizes, **model)
        test.__dict__["executions"] = run(s, fn)

    # what `hydrolite sim FILE:TEST` needs to run the scenario outside pytest
    test.__dict__["_hydrolite_sim"] = (flow, dict(cluster_sizes or {}), fn, model)

    test.__name__ = fn.__name__
    test.__qualname__ = fn.__qualname__
    test.__doc__ = fn.__doc__
    test.__module__ = fn.__module__
    return test


def exhaustive(
    flow: FlowSource,
    *,
    cluster_sizes: Mapping[str, int] | None = None,
    max_executions: int = 200_000,
    crashes: bool | int = False,
    interleavings: bool = False,
    per_key_snapshots: bool = False,
) -> Callable[[Callable[[Simulator], object]], TestFn]:
    """Decorator: the function is a scenario run on every execution of `flow`; the result is
    a zero-argument test (its `executions` attribute holds the count after it ran). With
    `crashes`, every tick run may also crash and be replayed (`Simulator.exhaustive`);
    `interleavings` / `per_key_snapshots` are the `Simulator`'s finer-asynchrony options."""
    model = {"interleavings": interleavings, "per_key_snapshots": per_key_snapshots}

    def decorate(fn: Callable[[Simulator], object]) -> TestFn:
        return _as_test(
            fn, lambda s, f: s.exhaustive(f, max_executions=max_executions, crashes=crashes), flow, cluster_sizes, model
        )

    return decorate


def replay(
    flow: FlowSource,
    scenario: Callable[..., object],
    choices: str | list[int],
    *,
    cluster_sizes: Mapping[str, int] | None = None,
    **options: Any,
) -> str:
    """Run exactly one recorded execution (the string a failure report prints) and return
    its trace; raises `SimulationFailure` when it fails. Same as
    `Simulator(flow, cluster_sizes=...).replay(scenario, choices)`."""
    return Simulator(flow, cluster_sizes=cluster_sizes, **options).replay(scenario, choices)


def fuzz(
    flow: FlowSource,
    *,
    iterations: int = 5_000,
    seed: int | None = 0,
    engine: str = "random",
    cluster_sizes: Mapping[str, int] | None = None,
    crashes: bool | int = False,
    interleavings: bool = False,
    per_key_snapshots: bool = False,
    **options: Any,
) -> Callable[[Callable[[Simulator], object]], TestFn]:
    """Decorator: like `exhaustive`, on `iterations` seeded random executions."""
    model = {"interleavings": interleavings, "per_key_snapshots": per_key_snapshots}

    def decorate(fn: Callable[[Simulator], object]) -> TestFn:
        def run(s: Simulator, f: Callable[[Simulator], object]) -> int:
            return s.fuzz(f, iterations=iterations, seed=seed, engine=engine, crashes=crashes, **options)

        return _as_test(fn, run, flow, cluster_sizes, model)

    return decorate
