"""Why a state lives where it does: the texts `placement.py` gives `hydrolite plan`, and the
checks that decide a state's home whatever the run option (a keyed aggregate or not, a
deferred stream's rows, which maps keep a join's key)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ...ir import nodes as n
from ...ir.meta import Kind
from .fn_source import function_ast
from .region import Chain
from .stages import where

#: aggregates whose keyed, carried state may live on the executors
EXECUTOR_AGGREGATES = (n.Fold, n.Reduce, n.Count, n.First, n.Last)

#: where a stateful unique() / keys() / keyed enumerate() keeps what it saw, on the executors
SEEN_WHY: dict[type[n.Node], str] = {
    n.Unique: (
        "partitioned by element (a keyed stream's: by (key, value) pair), fed per element: each element meets the "
        "ones seen before under its own key, and the new ones return to the tick"
    ),
    n.Keys: "partitioned by key, fed per element: each key meets whether it was seen, and the new ones return to the tick",
    n.Enumerate: (
        "partitioned by key, fed per element: each key's indexes continue from its count, and the (index, element) "
        "pairs return to the tick"
    ),
}
WHOLE = (
    "each version whole: the newest entry's rows, written as Parquet by the executors under <query>/state/blobs/; the "
    "driver keeps the path (channel_versions.latest_table)"
)
DELTAS_KEPT = (
    "the entries applied to the table kept as Parquet under <query>/state/blobs/: each batch that brings entries "
    "rewrites it on the executors, O(table)"
)
TABLE_WHY = (
    "each batch's entries (a key's new value, or a tombstone) applied as puts to the key's state, read only per key "
    "(by {readers}): a batch costs its entries and lookups, not the table"
)


def not_partitioned(node: n.Node) -> str | None:
    """Why `node`'s state is not one the executors could partition by key whatever the run
    option, or None for a keyed aggregate."""
    if not isinstance(node, EXECUTOR_AGGREGATES):
        return f"{node.op}() state is not a keyed aggregate"
    if not node.children[0].meta.kind.keyed:
        return "not keyed: one value, nothing to partition (it stays with the driver, which reads it whole)"
    return None


def deferred_rows(node: n.Node) -> str | None:
    """Why a deferred stream's (or keyed singleton's) state never passes through the driver,
    or None for any other state. `ops_state.defer_tick` writes the batch's rows as Parquet
    from the executors (`DataFrame.write`) and the next batch reads them back the same way;
    the driver's versioned store holds only their directory, per batch id."""
    deferred = node.children[0] if isinstance(node, n.CycleSink) else node
    if not isinstance(deferred, n.DeferTick):
        return None
    kind = deferred.meta.kind
    if not (kind.streamlike or kind is Kind.KEYED_SINGLETON):
        return None  # one value: the driver keeps it whole
    if deferred is not node:
        return f"the stream cycle's elements for the next batch, kept by defer_tick() {where(deferred)}"
    return (
        "the previous batch's rows: the executors write them as Parquet at the end of each batch (a directory per "
        "batch id under <query>/state/blobs/) and the next batch reads them back; the driver keeps only the path"
    )


JOINS = (n.Join, n.CrossProduct)  # the joins of unbounded streams: per key, or their sides' history
JOIN_WHY = {
    n.Join: "a join of unbounded streams: both sides kept per key",
    n.CrossProduct: "a cross product of unbounded streams: both sides' whole history kept under one key, by one "
    "task (it grows with the run, as the model's does)",
}


def history_why(node: n.Join | n.CrossProduct, because: str) -> str:
    """A join of unbounded streams Spark's join state cannot take (`because`): its sides'
    history as Parquet the executors write (`history.py`)."""
    return (
        f"a {node.op}() of unbounded streams, not in Spark's per-key state ({because}): each side's history as Parquet the "
        "executors write, a directory per batch (compacted) under <query>/state/blobs/, read whole by every batch "
        "(history.py)"
    )


def read_whole_why(u: n.Node) -> str:
    return f"read whole by {u.op}() {where(u)} (only per-key lookups and other queries' deltas read executor state)"


def keeps_key(f: object) -> bool:
    """Whether `f`, a function of one `(key, value)` element, provably returns a pair whose
    first item is that key: its one expression is a tuple `(p[0], ...)` of its parameter `p`
    (`lambda kv: (kv[0], kv[1][0] * 2)` does; `lambda kv: (kv[1][0], kv[0])` may not). A
    function whose source cannot be read (typed at a prompt) is not known to keep it
    (tests/core/test_join_fold_placement.py)."""
    fa = function_ast(f) if callable(f) else None
    if fa is None or len(fa.params) != 1 or not isinstance(fa.body, ast.Tuple) or len(fa.body.elts) != 2:
        return False
    first = fa.body.elts[0]
    return (
        isinstance(first, ast.Subscript)
        and isinstance(first.value, ast.Name)
        and first.value.id == fa.params[0]
        and isinstance(first.slice, ast.Constant)
        and first.slice.value == 0
        and type(first.slice.value) is int
    )


def marks_why(chains: Iterable[Chain]) -> str:
    """What a state's groups keep for the stateful `unique()` / `keys()` its chains (or its
    lookups' requests) pass through (`Chain.kept`), as a clause of its reason; "" for none."""
    steps = {id(x): x for c in chains if c.kept for x in c.ops if isinstance(x, (n.Unique, n.Keys))}
    if not steps:
        return ""
    named = ", ".join(f"{x.op}() {where(x)}" for x in steps.values())
    return f"; each of its keys keeps the elements {named} passed on to it (Spark's MapState)"
