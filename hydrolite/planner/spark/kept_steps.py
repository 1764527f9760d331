"""Stateful `unique()` / `keys()` steps whose state the executor region's groups already keep.

A chain may pass through a stateful `unique()` / `keys()` (`region.Chain.kept`): every group
its elements reach keeps the elements it saw through it, so the step needs no state of its
own for that chain. When *every* reader of such an operator is a step of kept chains (or the
state, lookup, join or `unique()` those chains feed), nothing else needs its own state: it
is *absorbed* (`Region.absorbed`) — no native aggregation or per-element state is kept for it,
and the tick does not evaluate it. "Distinct values per key" (`ks.unique().count()`) then
keeps each (key, value) once, in the count's groups, instead of twice.

A checkpoint records an absorbed operator's home as "chains" (`state_homes.home_of`): should a
later version of the program read it elsewhere, it would need the state it never kept, and
the resume is refused rather than starting it empty. The other way round, an operator whose
checkpoint holds a state of its own keeps it under `auto` (`placement.place`: Spark cannot
drop a native aggregation from a query that committed batches); an explicit option that would
drop it is refused by `upgrade.reconcile`, saying so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ...ir import nodes as n
from .region import Chain, ExecutorJoin, ExecutorLookup, ExecutorSeen, ExecutorState

#: absorbed: what `hydrolite plan` says of its state
ABSORBED_WHY = (
    "no state of its own: every reader is a chain feeding executor state, and each key of that state keeps the "
    "elements it passed on (Spark's MapState; kept_steps.py)"
)


def absorbed(
    stateful: Iterable[n.Node],
    users: Mapping[int, Sequence[n.Node]],
    states: Sequence[ExecutorState],
    lookups: Sequence[ExecutorLookup],
    joins: Sequence[ExecutorJoin],
    seen: Sequence[ExecutorSeen],
    steps: tuple[type[n.Node], ...],
) -> set[int]:
    """Ids of the stateful `unique()` / `keys()` whose every reader, through chain-like
    `steps` only, is a state, lookup, join or seen operator of the region whose kept chains
    pass through it — to a fixed point: an absorbed `unique()` feeds no kept chain itself."""
    distincts = [x for x in stateful if isinstance(x, (n.Unique, n.Keys))]
    fed = [(s.node, s.chains) for s in states] + [(x.node, (x.chain,)) for x in lookups]
    fed += [(j.node, (j.left, j.right)) for j in joins]
    gone: set[int] = set()
    while True:
        now = fed + [(x.node, x.chains) for x in seen if id(x.node) not in gone]
        found = {id(d) for d in distincts if _only_kept_readers(d, users, now, steps)}
        if found == gone:
            return gone
        gone = found


def _only_kept_readers(
    d: n.Node,
    users: Mapping[int, Sequence[n.Node]],
    fed: Sequence[tuple[n.Node, Sequence[Chain]]],
    steps: tuple[type[n.Node], ...],
) -> bool:
    through = {id(node) for node, chains in fed if any(c.kept and any(x is d for x in c.ops) for c in chains)}
    todo, seen = list(users.get(id(d), [])), set()
    while todo:
        u = todo.pop()
        if id(u) in seen or id(u) in through:
            continue
        seen.add(id(u))
        if not isinstance(u, steps) or any(x is u for x in users.get(id(u), [])):  # (itself: read elsewhere)
            return False
        todo.extend(users.get(id(u), []))
    return bool(users.get(id(d)))
