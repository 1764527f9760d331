"""Every public operator of the live API has a runnable example in its docstring (issue 13).

The examples themselves run as doctests (pytest collects `hydrolite/` with
`--doctest-modules`); this test makes sure a new operator cannot arrive without one.
"""

from __future__ import annotations

import inspect

import pytest

from hydrolite import (
    FlowBuilder,
    KeyedSingleton,
    KeyedStream,
    OptionalSingleton,
    Singleton,
    Stream,
    Tick,
    TickCycle,
    TopLevel,
)
from hydrolite.live._base import Live

CLASSES = (Stream, KeyedStream, Singleton, OptionalSingleton, KeyedSingleton, TickCycle, TopLevel, Tick, FlowBuilder)


def _public_methods() -> list[tuple[str, str, object]]:
    found = []
    for cls in CLASSES:
        for name, member in inspect.getmembers(cls):
            if name.startswith("_") or name in ("flow",):
                continue
            owner = next(c for c in cls.__mro__ if name in vars(c))
            if owner is Tick and name in vars(TopLevel):
                continue  # run-time guards that explain a misuse (a tick has no sources), not operators
            if isinstance(member, property) or inspect.isfunction(member):
                found.append((f"{owner.__name__}.{name}", name, member))
    return sorted({key: (key, name, m) for key, name, m in found}.values(), key=lambda t: t[0])


METHODS = _public_methods()


def test_the_api_is_found() -> None:
    names = {key for key, _, _ in METHODS}
    assert {"Stream.batch", "KeyedSingleton.snapshot", "TopLevel.source", "FlowBuilder.finalize"} <= names
    assert "Live.node" in names and len(names) > 100
    assert all(issubclass(c, Live) for c in CLASSES[:5])


@pytest.mark.parametrize(("key", "name", "member"), METHODS, ids=[key for key, _, _ in METHODS])
def test_every_public_operator_has_an_example(key: str, name: str, member: object) -> None:
    doc = inspect.getdoc(member) or ""
    assert ">>> " in doc, f"{key} has no runnable example: add a short `>>>` example to its docstring"


# ------------------------------------------------------------------ the examples' helper
class Server:
    """Tag of the process below."""


def test_demo_refuses_what_it_cannot_observe() -> None:
    from hydrolite import BuildError
    from hydrolite.live.demo import run

    with pytest.raises(BuildError, match="requires a live collection to observe"):
        run([1, 2])  # type: ignore[arg-type]  # the misuse under test
    xs = FlowBuilder().process(Server).source("xs", int)
    with pytest.raises(BuildError, match="either as keyword arguments"):
        run(xs, {"xs": [1]}, xs=[2])


def test_demo_shows_unordered_results_sorted_and_rounds_apart() -> None:
    from hydrolite import nondet
    from hydrolite.live.demo import outcomes, run

    server = FlowBuilder().process(Server)
    assert run(server.source("xs", int).weaken_ordering(), xs=[3, 1, 2]) == [1, 2, 3]
    server = FlowBuilder().process(Server)
    tick = server.tick()
    sizes = server.source("xs", int).batch(tick, nondet("any grouping is fine for a test")).count()
    assert run(sizes, {"xs": [1, 2]}, {"xs": [3]}) == [[2], [1]]
    server = FlowBuilder().process(Server)
    tick = server.tick()
    sizes = server.source("xs", int).batch(tick, nondet("any grouping is fine for a test")).count()
    assert outcomes(sizes, xs=[1, 2, 3]) == [[1, 1, 1], [1, 2], [2, 1], [3]]
