"""States kept inside another operator's state on the executors: a join's, a keyed `enumerate()`'s.

A keyed state fed by the output of a join of unbounded streams, or of a keyed `enumerate()`,
cannot be a second stateful operator of the same query on Spark (chained stateful operators
need event time, SPARK-47960; chained `transformWithState` operators crash PySpark 4). When
every step from that output to the state keeps the element's key, the first operator's
processor can fold its new elements itself, under its own grouping key: the state lives in
the same per-key `ValueState` (`keyed_processor.JoinFn.folds`, `SeenFn.folds`), and lookups of
it are answered there too.

Which steps keep the key: from a join's output (`(k, (v1, v2))` elements, unkeyed) `filter()`
and a `map()` returning `(kv[0], ...)`, then `into_keyed()`; on a keyed stream (after
`into_keyed()`, or an `enumerate()`'s `(index, element)` values) the per-value `map` /
`filter` / `filter_map` / `flat_map`, and identity steps. A join's output has no order, so
only commutative aggregates (and `unique()` / `keys()`) are kept with it; an `enumerate()`'s
elements arrive in order per key, so any keyed aggregate is (and `unique()` / `keys()`: each
key's group keeps the elements it passed on, `keyed_processor.JoinedSeen`).

>>> from hydrolite.ir import nodes as n
>>> KEEPERS[n.Join], KEEPERS[n.Enumerate]
('join', 'enumerate')
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from ...ir import nodes as n
from .placement_why import EXECUTOR_AGGREGATES, keeps_key
from .projection import IDENTITY
from .stages import Stage, where

#: operators whose processor can keep the states their output feeds, and their names
KEEPERS: dict[type[n.Node], str] = {n.Join: "join", n.Enumerate: "enumerate"}
_IDENTITY = (*IDENTITY, n.Send)
_ELEMENTWISE = (n.Map, n.Filter, n.FilterMap, n.FlatMap, n.IntoKeyed, n.Entries, n.Values)
_DISTINCT = (n.Unique, n.Keys)


def keeper_steps(
    node: n.Node, stage: Stage, keepers: Collection[int]
) -> tuple[n.Node, tuple[n.Node, ...]] | str | None:
    """(the keeper, the steps from its output to `node`'s input) when a join or keyed
    `enumerate()` in `keepers` (ids of those kept per key on the executors) feeds `node`
    through steps keeping its key; None when none feeds it (the caller's own reason stands);
    a string: why this one cannot keep `node` (a keyed enumerate() outside `keepers` too: the
    steps' reason is what `hydrolite plan` should say, not the enumerate's)."""
    steps: list[n.Node] = []
    x = node.children[0]
    while not isinstance(x, tuple(KEEPERS)):
        if isinstance(x, _IDENTITY):
            x = x.children[0]
        elif isinstance(x, _ELEMENTWISE) and x.children[0].meta.kind.streamlike and stage.member(x):
            steps.append(x)
            x = x.children[0]
        else:
            return None
    keeper = x
    kept = id(keeper) in keepers
    if not kept and not (isinstance(keeper, n.Enumerate) and keeper.children[0].meta.kind.keyed):
        return None
    steps.reverse()
    at, whose = (
        f"the output of {keeper.op}() {where(keeper)}",
        f"the {keeper.op}()'s key" if keeper.op != "join" else "the join's key",
    )
    if isinstance(keeper, n.Enumerate):
        if not isinstance(node, (*EXECUTOR_AGGREGATES, *_DISTINCT)):
            return None
    elif not (isinstance(node, (n.Count, *_DISTINCT)) or (isinstance(node, (n.Fold, n.Reduce)) and node.commutative)):
        return f"{at} has no order: only a commutative fold or reduce, a count, unique() or keys() is kept by it"
    keyed = isinstance(keeper, n.Enumerate)  # (a join's pairs are unkeyed; an enumerate()'s keep their key)
    for op in steps:
        if isinstance(op, n.IntoKeyed) and not keyed:
            keyed = True
        elif isinstance(op, n.Entries) and keyed and isinstance(keeper, n.Enumerate):
            keyed = False  # (its (key, (index, element)) pairs, keyed again by into_keyed() below)
        elif isinstance(op, n.Values):
            return f"{at} loses {whose} at values() {where(op)}: only steps that keep {whose} reach its state"
        elif isinstance(op, (n.Entries, n.IntoKeyed)):
            return f"{at} is keyed again by {op.op}() {where(op)}: only steps that keep {whose} reach its state"
        elif not keyed and not (isinstance(op, n.Filter) or (isinstance(op, n.Map) and keeps_key(op.f))):
            return (
                f"{op.op}() {where(op)} may change {whose}: only filter() and a map() returning (kv[0], ...) "
                f"keep it before into_keyed() ({at})"
            )
    # (a keyed enumerate() not kept per key: the steps' reason above says why none keeps `node`)
    return (keeper, tuple(steps)) if kept else None


def keeping_enumerates(stage: Stage, held: Mapping[int | str, str], chained: Callable[[n.Enumerate], bool]) -> set[int]:
    """Ids of the keyed `enumerate()`s fed by chains (`chained`) that feed a keyed aggregate,
    a `unique()` or a `keys()` of `stage` through steps keeping the key: placed per key on
    the executors (not as a native count), their processor keeps that state. A state its checkpoint (`held`:
    `kept_homes.recorded_homes`) keeps anywhere but the executors is left where it is."""
    found: set[int] = set()
    enumerates = {
        id(x) for x in stage.stateful if isinstance(x, n.Enumerate) and x.children[0].meta.kind.keyed and chained(x)
    }
    for x in stage.stateful:
        if not isinstance(x, _DISTINCT) and not (isinstance(x, EXECUTOR_AGGREGATES) and x.children[0].meta.kind.keyed):
            continue
        kept = keeper_steps(x, stage, enumerates)
        if isinstance(kept, tuple) and all(held.get(id(y), "executors") == "executors" for y in (x, kept[0])):
            found.add(id(kept[0]))
    return found
