"""Show what a live collection computes, on the simulator (the docstring examples use this).

`run(collection, xs=[1, 2])` completes the program around `collection` with an observer
(a sink port named `shown`), finalizes its flow, sends the elements to the named source
ports, runs the simulator until nothing more can happen and returns what the observer saw:

* a top-level stream: its elements (a keyed stream: its `(key, value)` pairs);
* a stream in a tick: the elements of every tick's batch, one batch after the other;
* a singleton in a tick: its value at every run of the tick (an empty optional shows nothing);
* a top-level singleton: the versions a tick snapshotting it sees;
* a keyed singleton: its `(key, value)` entries, in the same way;
* on a cluster: a dict from member index to what that member's part shows.

A NoOrder result is sorted, and a keyed one by key (each key keeps its values' order),
since that order means nothing. `run` makes one eager execution: a batch takes everything
pending, a snapshot the newest version (`sim.EagerChooser`). `outcomes` explores every
execution (`Simulator.exhaustive`) and returns the distinct answers: what batch boundaries,
snapshot versions and the network can make of the program.

Inputs are keyword arguments (a cluster's port takes `{member: elements}`), or rounds:
`run(c, {"xs": [1, 2]}, {"xs": [3]})` sends each round once the program is quiet after the
previous one and answers with one result per round. `cluster_sizes=` is the simulator's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import BuildError
from ..ir.ids import ClusterId, TickId, top_of
from ..ir.meta import Kind
from ..nondet import nondet
from ._base import Live

if TYPE_CHECKING:
    from ..sim.explore import Simulator

PORT = "shown"
Inputs = Mapping[str, Iterable[Any] | Mapping[int, Iterable[Any]]]
_SCALARS = (Kind.SINGLETON, Kind.OPTIONAL, Kind.KEYED_SINGLETON)


def run(collection: Live, *rounds: Inputs, cluster_sizes: Mapping[str, int] | None = None, **inputs: Any) -> Any:
    """What `collection` shows on one eager execution (see the module docstring).

    >>> run(server.source("xs", int).map(lambda x: x + 1), xs=[1, 2])
    [2, 3]
    """
    from ..sim.choices import EagerChooser

    sim, scenario, answers = _prepare(collection, rounds, inputs, cluster_sizes)
    sim.run_once(scenario, EagerChooser())
    return answers[0]


def outcomes(
    collection: Live, *rounds: Inputs, cluster_sizes: Mapping[str, int] | None = None, **inputs: Any
) -> list[Any]:
    """Every distinct answer `run` could give, over all executions the simulator explores.

    >>> batches = server.source("xs", int).batch(tick, nondet("any grouping will do"))
    >>> outcomes(batches.count(), xs=[1, 2])  # one batch of two, or two of one
    [[1, 1], [2]]
    """
    sim, scenario, answers = _prepare(collection, rounds, inputs, cluster_sizes)
    sim.exhaustive(scenario)
    distinct: list[Any] = []
    for answer in answers:
        if answer not in distinct:
            distinct.append(answer)
    return _sorted(distinct)


def _prepare(
    collection: Live, rounds: tuple[Inputs, ...], inputs: Inputs, cluster_sizes: Mapping[str, int] | None
) -> tuple[Simulator, Callable[[Simulator], None], list[Any]]:
    from ..sim.explore import Simulator

    if not isinstance(collection, Live):
        raise BuildError(
            "run()/outcomes()",
            required="a live collection to observe",
            found=f"{type(collection).__name__} {collection!r}",
            fix="pass a Stream, KeyedStream, Singleton, OptionalSingleton or KeyedSingleton",
        )
    if rounds and inputs:
        raise BuildError(
            "run()/outcomes()",
            required="the inputs either as keyword arguments (one round) or as rounds",
            found=f"{len(rounds)} round(s) and the keyword inputs {sorted(inputs)}",
            fix='pass run(c, xs=[1, 2]) or run(c, {"xs": [1]}, {"xs": [2]})',
        )
    sort = _observe(collection)
    sim = Simulator(collection.location.flow.finalize(), cluster_sizes=cluster_sizes)
    top = top_of(collection.node.meta.loc)
    members = len(sim.program.places_of[top]) if isinstance(top, ClusterId) else None
    answers: list[Any] = []

    def scenario(s: Simulator) -> None:
        shown = [_round(s, r, members, sort) for r in (rounds or (inputs,))]
        answers.append(shown if rounds else shown[0])

    return sim, scenario, answers


def _observe(collection: Live) -> Callable[[list[Any]], list[Any]]:
    """Sink `collection` (through the operators that make it observable) into PORT; return
    how to order what the sink receives."""
    meta = collection.node.meta
    shown: Any = collection
    if meta.kind in _SCALARS and not isinstance(meta.loc, TickId):
        shown = shown.snapshot(shown.location.tick(), nondet("the example observes the value as it changes"))
    if meta.kind is Kind.KEYED_SINGLETON:
        shown = shown.entries()
    elif meta.kind in _SCALARS:
        shown = shown.into_stream()
    if isinstance(shown.node.meta.loc, TickId):
        shown = shown.all_ticks()
    shown.sink(PORT)
    if not shown.node.meta.ordered:
        return _sorted
    if shown.node.meta.kind is Kind.KEYED_STREAM:
        return lambda xs: sorted(xs, key=lambda kv: _key(kv[0]))  # stable: each key keeps its order
    return lambda xs: xs


def _round(s: Simulator, inputs: Inputs, members: int | None, sort: Callable[[list[Any]], list[Any]]) -> Any:
    for port, values in inputs.items():
        if isinstance(values, Mapping):
            for member, part in values.items():
                s.sender(port, member=member).send_many(part)
        else:
            s.sender(port).send_many(values)
    if members is None:
        return sort(s.receiver(PORT).collect())
    return {m: sort(s.receiver(PORT, member=m).collect()) for m in range(members)}


def _sorted(xs: list[Any]) -> list[Any]:
    return sorted(xs, key=_key)


def _key(x: Any) -> Any:
    """A sort key for any value: numbers and strings by value, sequences item by item,
    anything else by its text; values of different kinds are grouped by kind."""
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(_key(item) for item in x))
    if isinstance(x, (int, float)):
        return ("number", x)
    if isinstance(x, str):
        return ("str", x)
    return (type(x).__name__, repr(x))
