"""Joins and cross products of unbounded streams whose sides Spark's join state cannot take.

A join (or cross product) of two unbounded streams pairs every element of one side with the
other side's elements so far. When both sides are chains from the query's inputs, Spark keeps
that history per key in its state store (`keyed_state.py`). A side that is not such a chain —
a tick's output (`all_ticks()`, `release_aligned()`), a stream through `enumerate()` or
`unique()` — is only known inside `foreachBatch`, after Spark's stateful operators ran. Such a
join keeps each side's history as Parquet its executors write under the query's state:

* batch `b` writes its side's new elements to `<query>/state/blobs/<join>_<side>/<b>/` and
  records the directory in the versioned store; a side's history is the directories recorded
  before `b`, so a replay of `b` reads exactly what the first attempt read and rewrites the same
  directory;
* the batch's pairs are `new_left x (history_right + new_right)` and
  `history_left x new_right`: every pair once, in the batch where its later element arrives,
  as the model emits it (its output has no order);
* after `COMPACT_AFTER` directories a side's history is rewritten as one directory (in the
  batch that reaches it); the directories it replaces are removed once that batch commits
  (`BatchState.put_blob`), so a long run reads a bounded number of directories.

The driver sees only the directories' paths; the executors read and write every element.
Cost: each batch reads the other side's whole history (a cross product's output is that large
anyway; a join's per-key state in Spark's store would read only the batch's keys).

    >>> COMPACT_AFTER
    16
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import types as T

from ...ir import nodes as n
from .exec import BatchCtx
from .values import SFrame

__all__ = ["COMPACT_AFTER", "history_join"]

#: a side's history is rewritten as one directory once it has this many
COMPACT_AFTER = 16

Combine = Callable[[SFrame, SFrame], SFrame]


def history_join(ctx: BatchCtx, node: n.Join | n.CrossProduct, left: SFrame, right: SFrame, combine: Combine) -> SFrame:
    """This batch's output of `node` from its sides' new elements `left` / `right` and their
    history; `combine(a, b)` pairs two bounded frames as the operator does in a tick."""
    new_l, new_r = _values(left), _values(right)
    (paths_l, old_l), (paths_r, old_r) = _history(ctx, node, "l", new_l), _history(ctx, node, "r", new_r)
    out = combine(new_l, new_r if old_r is None else _union(old_r, new_r))
    if old_l is not None:
        out = _union(out, combine(old_l, new_r))
    _append(ctx, node, "l", new_l, paths_l, old_l)
    _append(ctx, node, "r", new_r, paths_r, old_r)
    return out


def _values(sf: SFrame) -> SFrame:
    """The frame's elements without order columns (the output has no order)."""
    cols = [c for c in sf.cols() if c not in sf.order]
    return SFrame(sf.df.select(*cols), sf.vt, sf.kt)


def _union(a: SFrame, b: SFrame) -> SFrame:
    return SFrame(a.df.unionByName(b.df.select(*a.df.columns)), a.vt, a.kt)


def _key(ctx: BatchCtx, node: n.Node, side: str) -> str:
    return f"{ctx.key(node)}:history_{side}"


def _history(ctx: BatchCtx, node: n.Node, side: str, like: SFrame) -> tuple[list[str], SFrame | None]:
    """The directories of the side's earlier batches and their elements (None before the first)."""
    found, record = ctx.state.get(_key(ctx, node, side), b"history")
    if not found or not record[0]:
        return [], None
    paths, schema = record
    df = ctx.spark.read.schema(T.StructType.fromJson(schema)).parquet(*paths)
    return list(paths), SFrame(df, like.vt, like.kt)


def _append(ctx: BatchCtx, node: n.Node, side: str, new: SFrame, paths: list[str], old: SFrame | None) -> None:
    """Write this batch's side (with its history `old`, read from `paths`, when compacting) and
    record the directory."""
    key = _key(ctx, node, side)
    path = ctx.state.blob_dir(key)
    compact = old is not None and len(paths) + 1 >= COMPACT_AFTER
    df = _union(old, new).df if compact and old is not None else new.df

    def write() -> None:
        df.write.mode("overwrite").parquet(path)

    ctx.after.append(write)
    ctx.state.put(key, ([path] if compact else [*paths, path], df.schema.jsonValue()), b"history")
    if compact:  # the replaced directories go when this batch commits (a replay of it reads them)
        ctx.state.put_blob(key, path, previous=paths[0])
