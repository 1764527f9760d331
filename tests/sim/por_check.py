"""Brute force against partial-order reduction: the outcomes of every execution, both ways.

An *outcome* is what one execution produced: for every sink (and cluster member) the
sequence of deltas it received, each delta in canonical form, plus the failure, if the
execution failed. Canonical form is what the program's types promise and no more: a
TotalOrder stream's delta as it is, a NoOrder stream's as a multiset, a keyed stream's as
the sequence per key (see `hydrolite/sim/por.py`, "Unordered data"). Reduction is sound
for a scenario when the set of outcomes with it equals the set without it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hydrolite.ir.meta import Kind, Meta
from hydrolite.sim import NoMoreOutput, Simulator, UserFunctionError
from hydrolite.sim.errors import ExplorationLimit
from hydrolite.sim.ops_time import SinkOp
from hydrolite.sim.world import World

Outcome = tuple[Any, ...]


def _key(x: Any) -> str:
    return repr(x)


def canonical(meta: Meta, delta: list[Any]) -> Any:
    """One sink delta as the sink's type promises it."""
    if meta.kind is Kind.KEYED_STREAM:
        per_key: dict[str, list[Any]] = {}
        for k, v in delta:
            per_key.setdefault(_key(k), []).append(v)
        ordered = {k: tuple(vs) if meta.ordered else tuple(sorted(vs, key=_key)) for k, vs in per_key.items()}
        return tuple(sorted(ordered.items()))
    if meta.ordered:
        return tuple(delta)
    return tuple(sorted(delta, key=_key))


class DeltaLog:
    """Records every delta written to a sink, per execution (`SinkOp.push` wrapped)."""

    def __init__(self) -> None:
        self.world: World | None = None
        self.deltas: list[tuple[int, int, Any]] = []  # (place, sink op, canonical delta)

    @contextlib.contextmanager
    def installed(self) -> Iterator[DeltaLog]:
        original = SinkOp.push
        log = self

        def push(op: SinkOp, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
            if w is not log.world:  # a new execution
                log.world, log.deltas = w, []
            log.deltas.append((p, op.idx, canonical(op.node.meta, list(delta))))
            return original(op, w, p, st, port, delta)

        SinkOp.push = push  # type: ignore[method-assign]  # instrumentation for this check only
        try:
            yield self
        finally:
            SinkOp.push = original  # type: ignore[method-assign]

    def outcome(self, w: World) -> Outcome:
        """Per (place, sink): the sequence of canonical deltas of execution `w`."""
        per_sink: dict[tuple[int, int], list[Any]] = {}
        for p, idx, d in self.deltas if w is self.world else []:
            per_sink.setdefault((p, idx), []).append(d)
        return tuple(sorted((k, tuple(v)) for k, v in per_sink.items()))


#: failures that are outcomes of one execution (the scenario catches them)
FAILURES = (UserFunctionError, NoMoreOutput, AssertionError)


@dataclass
class Comparison:
    """Executions and distinct outcomes without and with reduction."""

    full: int
    reduced: int
    outcomes: set[Outcome]
    pruned: int


def compare(
    make: Callable[[], Simulator], body: Callable[[Simulator], None], budget: int = 3_000, crashes: int = 0
) -> Comparison | None:
    """Explore `body` without and with reduction; assert the outcome sets are equal. None
    when the unreduced tree exceeds `budget` executions (or an execution does not quiesce).
    With `crashes`, a crashed run's writes and its replay's are all in the delta log."""
    seen: dict[bool, set[Outcome]] = {False: set(), True: set()}
    counts: dict[bool, int] = {}
    pruned = 0
    log = DeltaLog()
    with log.installed():
        for reduce in (False, True):
            sim = make()

            def scenario(s: Simulator, into: set[Outcome] = seen[reduce]) -> None:
                failure: tuple[str, str] | None = None
                try:
                    body(s)
                except FAILURES as e:
                    failure = (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
                into.add((log.outcome(s.world), failure))

            try:
                counts[reduce] = sim.exhaustive(scenario, reduce=reduce, max_executions=budget, crashes=crashes)
            except ExplorationLimit:
                return None
            pruned = sim.pruned
    assert seen[True] == seen[False], _difference(seen)
    # every pruned branch holds at least one schedule that was not explored
    assert counts[True] + pruned <= counts[False], (counts, pruned)
    return Comparison(counts[False], counts[True], seen[True], pruned)


def _difference(seen: dict[bool, set[Outcome]]) -> str:
    lost = seen[False] - seen[True]
    extra = seen[True] - seen[False]
    return f"reduction lost {len(lost)} outcome(s), e.g. {sorted(lost, key=repr)[:2]}; gained {sorted(extra, key=repr)[:2]}"
