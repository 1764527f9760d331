"""Stateful operators: folds, reduces, counts, first/last, unique, enumerate, defer_tick, cycles.

In a tick body these compute a per-tick value from the batch alone. When `hydrolite.ir.roles`
calls them stateful (a top-level operator fused into the query, a *carried* node the
alignment pass placed in the tick, or one over a `source_iter`) they read the versioned
state as of the previous batch, fold in this batch's delta and write the new version (see
`state`): per-batch work is proportional to the batch.
"""

from __future__ import annotations

import pickle
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...ir import nodes as n
from ...ir.meta import Kind
from .by_value import by_key, compared, first_occurrences, group_columns, row_index
from .exec import BatchCtx, handles
from .folds import COUNT, FIRST, LAST, Algebra, analyze, merge, partial_columns
from .lambdas import NotTranslatable, TExpr, literal
from .ops import empty_like, project, sframe
from .pyfn import apply_in_arrow, fold_global, fold_keyed, map_in_arrow
from .types import OPAQUE, HType, Prim, TupleT, fold_type, from_python, has_opaque, of_value
from .values import KTable, Scalar, SFrame, Val, frame_of, table_frame

INT = Prim(int)  # counts and indexes
Aggregate = n.Fold | n.Reduce | n.Count | n.First | n.Last  # nodes folding a stream into a value


def _acc_type(value: Any, fallback: HType) -> HType:
    t = of_value(value)
    return t if t is not None else fallback


def _spec(node: Aggregate, sf: SFrame) -> tuple[Algebra | None, bool, Any, HType]:
    """(algebra or None, has_init, init, accumulator type) of an aggregating node."""
    if isinstance(node, n.Count):
        return COUNT, True, 0, INT
    if isinstance(node, n.First):
        return FIRST, False, None, sf.vt
    if isinstance(node, n.Last):
        return LAST, False, None, sf.vt
    if isinstance(node, n.Fold):
        acc_t = fold_type(node.init, node.meta.elem)
        return analyze(node.f, acc_t, reduce=False), True, node.run_init(), acc_t
    return analyze(node.f, sf.vt, reduce=True), False, None, sf.vt


@handles(n.Fold, n.Reduce, n.Count, n.First, n.Last)
def aggregate(ctx: BatchCtx, node: Aggregate, args: list[Val]) -> Val:
    sf = sframe(args[0], node)
    alg, has_init, init, acc_t = _spec(node, sf)
    carried = ctx.stateful(node)
    if carried and _in_tick_table(ctx, node):  # (its table on the executors)
        from .tick_table import fold  # (it imports the executor region's pieces: imported here)

        return fold(ctx, node, sf)
    if alg is not None:
        try:
            parts = partial_columns(alg, TExpr(F.col("v"), sf.vt), sf.order_col())
            if not isinstance(node, (n.Count, n.First, n.Last)):
                ctx.note_fn(node, "native (incremental aggregate)")
            if sf.keyed:
                return _keyed_algebra(ctx, node, sf, alg, parts, has_init, init, acc_t, carried)
            return _global_algebra(ctx, node, sf, alg, parts, has_init, init, acc_t, carried)
        except NotTranslatable as exc:
            reason = str(exc)
    else:
        reason = "the function is not an incremental aggregate"
    ctx.note_fn(node, f"arrow (sequential fold: {reason})")
    if sf.keyed:
        return _keyed_python(ctx, node, sf, has_init, init, acc_t, carried)
    return _global_python(ctx, node, sf, has_init, init, acc_t, carried)


def _in_tick_table(ctx: BatchCtx, node: n.Node) -> bool:
    """Whether `placement.place` gave `node`'s state to a table the tick keeps on the executors."""
    placed = ctx.stage.placement.of(node) if ctx.stage.placement is not None else None
    return placed is not None and placed.tick_table


def _old(ctx: BatchCtx, node: n.Node, carried: bool, has_init: bool, init: Any) -> tuple[bool, Any]:
    if carried:
        found, value = ctx.state.get(ctx.key(node))
        if found:
            return True, value
    return has_init, init


def _global_algebra(
    ctx: BatchCtx,
    node: Aggregate,
    sf: SFrame,
    alg: Algebra,
    parts: list[tuple[Column, HType]],
    has_init: bool,
    init: Any,
    acc_t: HType,
    carried: bool,
) -> Scalar:
    row = sf.df.agg(*[c.alias(f"p{i}") for i, (c, _) in enumerate(parts)], F.count(F.lit(1)).alias("n")).collect()[0]
    has, acc = _old(ctx, node, carried, has_init, init)
    if row["n"]:
        partials = [t.decode(row[f"p{i}"]) for i, (_, t) in enumerate(parts)]
        acc = merge(alg, acc, has, partials)
        has = True
        if carried:
            ctx.state.put(ctx.key(node), acc)
    return Scalar(has, acc, _acc_type(acc, acc_t)) if has else Scalar.empty(acc_t)


def _global_python(
    ctx: BatchCtx, node: Aggregate, sf: SFrame, has_init: bool, init: Any, acc_t: HType, carried: bool
) -> Scalar:
    has, acc = _old(ctx, node, carried, has_init, init)
    assert isinstance(node, (n.Fold, n.Reduce)), "count/first/last are algebraic: they never take the Python path"
    f = node.run_fn() if isinstance(node, n.Fold) else node.f  # (accumulators held as `acc_type=` declares)
    base = sf.df.select(*sf.order, "v").coalesce(1)
    fn = fold_global(f, acc, has, sf.vt, ctx.site(node), list(sf.order))
    rows = map_in_arrow(base, fn, "acc binary, n long").collect()
    row = rows[0] if rows else None  # a frame with no partitions yields no row: no elements
    if row is not None and row["n"]:
        acc, has = pickle.loads(row["acc"]), True
        if carried:
            ctx.state.put(ctx.key(node), acc)
    return Scalar(has, acc, _acc_type(acc, acc_t)) if has else Scalar.empty(acc_t)


def _keyed_algebra(
    ctx: BatchCtx,
    node: Aggregate,
    sf: SFrame,
    alg: Algebra,
    parts: list[tuple[Column, HType]],
    has_init: bool,
    init: Any,
    acc_t: HType,
    carried: bool,
) -> KTable:
    assert sf.kt is not None
    df, by = group_columns(sf, sf.df)  # (keys equal in Python are one key)
    grouped = by_key(sf, df, by, *[c.alias(f"p{i}") for i, (c, _) in enumerate(parts)])
    if not carried:  # a per-tick map: merge with init as Columns, stay in Spark
        v = merge_columns(alg, [(F.col(f"p{i}"), t) for i, (_, t) in enumerate(parts)], has_init, init, acc_t)
        out_t = acc_t if has_init else parts[0][1]
        return KTable(sf.kt, out_t, SFrame(grouped.select("k", v.alias("v")), out_t, sf.kt))
    rows = grouped.collect()
    keys = [sf.kt.decode(r["k"]) for r in rows]
    by_value = has_opaque(sf.kt)  # (pickled keys: one entry per Python key across batches)
    if by_value:
        keys = ctx.state.first_forms(ctx.key(node), keys)
    old = ctx.state.get_many(ctx.key(node), keys, by_value)
    updates: dict[Any, Any] = {}
    for k, r in zip(keys, rows):
        partials = [t.decode(r[f"p{i}"]) for i, (_, t) in enumerate(parts)]
        has, acc = (True, old[k]) if k in old else (has_init, init)
        updates[k] = merge(alg, acc, has, partials)
    ctx.state.put_many(ctx.key(node), updates, by_value)
    vt = acc_t if has_init else parts[0][1]
    # merged in Python, each value as the simulator makes it: an init's type that the parts do
    # not share (`0 + 0.5`) is a guess, so readers keep a value not of it as it is
    declared = isinstance(node, n.Fold) and node.declared_acc()
    guessed = has_init and not declared and any(t != _part_acc(alg, acc_t, i) for i, (_, t) in enumerate(parts))
    return KTable(sf.kt, vt, None, ctx.key(node), ctx.state, updates, guessed=guessed)


def _part_acc(alg: Algebra, acc_t: HType, i: int) -> HType:
    """The accumulator type partial `i` of `alg` merges into (a component of a tuple's)."""
    index = alg.parts[i].index
    return acc_t.items[index] if alg.tuple_acc and isinstance(acc_t, TupleT) and index is not None else acc_t


def merge_columns(alg: Algebra, parts: list[tuple[Column, HType]], has_init: bool, init: Any, acc_t: HType) -> Column:
    """Each key's value from its partial aggregates (`p*` Columns) and the fold's init: a
    per-tick keyed fold, and a native streaming aggregation's value (`native_state.py`)."""

    def one(kind: str, p: Column, start: Any, t: HType) -> Column:
        if not has_init or kind in ("last", "first"):
            return p
        s = literal(start, t).col
        if kind == "sum":
            return s + p
        if kind == "sub":
            return s - p
        if kind in ("max", "min"):
            return (F.greatest if kind == "max" else F.least)(s, p)
        if kind == "any":
            return s | p
        if kind == "all":
            return s & p
        return s  # keep

    if alg.tuple_acc and isinstance(acc_t, TupleT):
        comps: list[Column] = [literal(x, t).col for x, t in zip(init, acc_t.items)]
        for part, (col, _) in zip(alg.parts, parts):
            assert part.index is not None
            comps[part.index] = one(part.kind, col, init[part.index], acc_t.items[part.index])
        return F.struct(*[c.alias(f"_{i + 1}") for i, c in enumerate(comps)])
    return one(alg.parts[0].kind, parts[0][0], init, acc_t)


def _keyed_python(
    ctx: BatchCtx, node: Aggregate, sf: SFrame, has_init: bool, init: Any, acc_t: HType, carried: bool
) -> KTable:
    assert sf.kt is not None
    assert isinstance(node, (n.Fold, n.Reduce)), "count/first/last are algebraic: they never take the Python path"
    kt = sf.kt
    f = node.run_fn() if isinstance(node, n.Fold) else node.f  # (accumulators held as `acc_type=` declares)
    starts: dict[Any, Any] = {}
    by_value = carried and has_opaque(kt)  # (see `_keyed_algebra`)
    if carried:  # (every form of a key: the stored accumulator is found by Python's equality)
        keys = [kt.decode(r["k"]) for r in sf.df.select("k").distinct().collect()]
        starts = ctx.state.get_many(ctx.key(node), keys, by_value)
    fn = fold_keyed(f, starts, init, has_init, kt, sf.vt, ctx.site(node), list(sf.order))
    schema = T.StructType([T.StructField("k", kt.spark(), True), T.StructField("acc", T.BinaryType(), True)])
    df, by = group_columns(sf, sf.df.select(*sf.cols()))  # (a key's forms in one group: it emits the first)
    rows = apply_in_arrow(df, by[0], fn, schema).collect()
    got = [kt.decode(r["k"]) for r in rows]
    if by_value:  # (each key in its first form, as a dict keeps it)
        got = ctx.state.first_forms(ctx.key(node), got)
    updates = {k: pickle.loads(r["acc"]) for k, r in zip(got, rows)}
    # the type declared with `acc_type=`; without one, from a value of this batch (a reduce
    # has no init: typing the stored values from `None` would read them all as None)
    declared = isinstance(node, n.Fold) and node.declared_acc() and acc_t != OPAQUE
    vt = _acc_type(next(iter(updates.values())), acc_t) if updates and not declared else acc_t
    if carried:
        ctx.state.put_many(ctx.key(node), updates, by_value)
        return KTable(kt, vt, None, ctx.key(node), ctx.state, updates, guessed=not declared)
    frame = frame_of(ctx.spark, list(updates.values()), vt, list(updates), kt, ordered=False, exact=not declared)
    return KTable(kt, frame.vt, frame)


# ------------------------------------------------------------------ unique / enumerate over time
def _distinct_values(sf: SFrame) -> list[Any]:
    if sf.keyed:
        assert sf.kt is not None
        return [(sf.kt.decode(r["k"]), sf.vt.decode(r["v"])) for r in sf.df.select("k", "v").distinct().collect()]
    return [sf.vt.decode(r["v"]) for r in sf.df.select("v").distinct().collect()]


def unique_unbounded(ctx: BatchCtx, node: n.Node, sf: SFrame) -> SFrame:
    """Elements never seen in an earlier batch (first occurrence within this batch): from
    Spark's counts when the state is native, from the tick's table on the executors
    (`tick_seen.py`), else through the driver's store."""
    seen = ctx.native_seen.get(id(node))
    if seen is not None:
        return unique_native(sf, seen)
    if _in_tick_table(ctx, node):
        from .tick_seen import unique

        return unique(ctx, node, sf)
    distinct = _distinct_values(sf)  # (every form: the forms of one element are new together or not at all)
    t = TupleT((sf.kt, sf.vt)) if sf.kt is not None else sf.vt
    by_value = has_opaque(t)  # (an element equal to one seen in an earlier batch, in another form, is not new)
    seen = ctx.state.get_many(ctx.key(node), distinct, by_value)
    fresh = [v for v in distinct if v not in seen]
    ctx.state.put_many(ctx.key(node), {v: True for v in fresh}, by_value)
    first = first_occurrences(sf)
    if not fresh:
        return empty_like(sf)
    if sf.keyed:
        assert sf.kt is not None
        allowed = frame_of(ctx.spark, [v for _, v in fresh], sf.vt, [k for k, _ in fresh], sf.kt, ordered=False).df
        allowed = allowed.select(F.col("k").alias("_ak"), F.col("v").alias("_av"))
        cond = first["k"].eqNullSafe(allowed["_ak"]) & first["v"].eqNullSafe(allowed["_av"])
    else:
        allowed = frame_of(ctx.spark, fresh, sf.vt, ordered=False).df.select(F.col("v").alias("_av"))
        cond = first["v"].eqNullSafe(allowed["_av"])
    return sf.with_df(first.join(allowed, cond, "left_semi"))


def unique_native(sf: SFrame, seen: DataFrame) -> SFrame:
    """The batch's new elements from `seen` (`NativeAggregations.seen`: each element of the
    batch with its count over all batches, this one included): an element is new when that
    count is its count within this batch. Its first occurrence in the batch is kept."""
    by = (["k"] if sf.keyed else []) + ["v"]
    first = first_occurrences(sf, sf.df.withColumn("_c", F.count(F.lit(1)).over(Window.partitionBy(*by))))
    cond = first["_c"] == seen["_t"]
    for j, c in enumerate(by):
        cond = cond & first[c].eqNullSafe(seen[f"_g{j}"])
    return sf.with_df(first.join(seen, cond, "left_semi").drop("_c"))


def enumerate_unbounded(ctx: BatchCtx, node: n.Node, sf: SFrame) -> SFrame:
    """(index, element) with indexes continuing across batches (per key when keyed)."""
    seen = ctx.native_seen.get(id(node))
    if seen is not None:
        return enumerate_native(sf, seen)
    if sf.keyed and _in_tick_table(ctx, node):
        from .tick_seen import enumerate_keyed

        return enumerate_keyed(ctx, node, sf)
    key = ctx.key(node)
    if not sf.keyed:
        idx = row_index(sf, [])
        found, offset = ctx.state.get(key)
        offset = offset if found else 0
        count = sf.df.count()
        if count:
            ctx.state.put(key, offset + count)
        v = F.struct((idx + F.lit(offset)).cast("long").alias("_1"), F.col("v").alias("_2"))
        return project(sf, v, TupleT((INT, sf.vt)))
    assert sf.kt is not None
    grouped, by = group_columns(sf, sf.df)  # (keys equal in Python are one key: their indexes continue)
    rows = by_key(sf, grouped, by, F.count(F.lit(1)).alias("n")).collect()
    keys = [sf.kt.decode(r["k"]) for r in rows]
    counts = {k: r["n"] for k, r in zip(keys, rows)}
    by_value = has_opaque(sf.kt)  # (an equal key of an earlier batch in another form continues its indexes)
    offsets = ctx.state.get_many(key, list(counts), by_value)
    ctx.state.put_many(key, {k: offsets.get(k, 0) + c for k, c in counts.items()}, by_value)
    off = frame_of(ctx.spark, [offsets.get(k, 0) for k in counts], INT, list(counts), sf.kt, ordered=False)
    offdf, oc = compared(off.df.select(F.col("k").alias("_ok"), F.col("v").alias("_off")), "_ok", sf.kt)
    df = grouped.withColumn("_idx", row_index(sf, by)).join(offdf, F.col(by[0]).eqNullSafe(F.col(oc)), "left")
    v = F.struct((F.col("_idx") + F.col("_off")).cast("long").alias("_1"), F.col("v").alias("_2"))
    out = SFrame(df, sf.vt, sf.kt, sf.order)
    return project(out, v, TupleT((INT, sf.vt)))


def enumerate_native(sf: SFrame, seen: DataFrame) -> SFrame:
    """A keyed stream's (index, element) pairs from `seen` (`NativeAggregations.seen`: each key
    of the batch with its count over all batches, this one included): a key's indexes in this
    batch start at that count minus the key's count within the batch."""
    in_key = Window.partitionBy("k")
    df = sf.df.withColumn("_idx", row_index(sf, ["k"])).withColumn("_c", F.count(F.lit(1)).over(in_key))
    df = df.join(seen, df["k"].eqNullSafe(seen["_g0"]), "inner")
    index = F.col("_t") - F.col("_c") + F.col("_idx")
    out = SFrame(df, sf.vt, sf.kt, sf.order)
    return project(out, F.struct(index.cast("long").alias("_1"), F.col("v").alias("_2")), TupleT((INT, sf.vt)))


# ------------------------------------------------------------------ previous tick
def _deferred_of(node: n.DeferTick, ctx: BatchCtx, current: Val | None, fallback_t: HType, kind: Kind) -> Val:
    """What `node`'s input held in the previous batch (empty in the first)."""
    key = ctx.key(node)
    if kind.streamlike or kind is Kind.KEYED_SINGLETON:
        found, meta = ctx.state.get(key, b"frame")
        if found:
            path, vt, kt, order, schema_json = meta
            schema = T.StructType.fromJson(schema_json)
            sf = SFrame(ctx.spark.read.schema(schema).parquet(path), vt, kt, tuple(order))
            return KTable(kt, vt, sf) if kind is Kind.KEYED_SINGLETON else sf
        if isinstance(current, SFrame):
            return empty_like(current)
        if isinstance(current, KTable):
            return KTable(current.kt, current.vt, empty_like(table_frame(ctx.spark, current)))
        kt = (from_python(node.meta.key) or OPAQUE) if kind.keyed else None
        empty = frame_of(ctx.spark, [], fallback_t, [] if kt is not None else None, kt)
        return KTable(kt or OPAQUE, fallback_t, empty) if kind is Kind.KEYED_SINGLETON else empty
    found, pair = ctx.state.get(key)
    if found and pair[0]:
        return Scalar(True, pair[1], _acc_type(pair[1], fallback_t))
    return Scalar.empty(fallback_t)


def _remember(ctx: BatchCtx, node: n.DeferTick, current: Val) -> None:
    key = ctx.key(node)
    if isinstance(current, Scalar):
        ctx.state.put(key, (current.present, current.value))
        return
    sf = table_frame(ctx.spark, current) if isinstance(current, KTable) else current
    assert isinstance(sf, SFrame)
    path = ctx.state.blob_dir(key)
    df = sf.df.select(*sf.cols())

    def write() -> None:
        df.write.mode("overwrite").parquet(path)

    ctx.after.append(write)
    found, before = ctx.state.get(key, b"frame")  # the directory a replay of this batch reads
    ctx.state.put(key, (path, sf.vt, sf.kt, list(sf.order), df.schema.jsonValue()), b"frame")
    # recorded as the node's blob too: the store then removes its directories older than the
    # one a replay reads when the batch commits (without it one directory per batch stayed for
    # ever); `before` from the frame record, which checkpoints of earlier versions also have
    ctx.state.put_blob(key, path, previous=before[0] if found else None)


@handles(n.DeferTick)
def defer_tick(ctx: BatchCtx, node: n.DeferTick, args: list[Val]) -> Val:
    current = args[0]
    fallback = current.t if isinstance(current, Scalar) else current.vt
    prev = _deferred_of(node, ctx, current, fallback, node.meta.kind)
    _remember(ctx, node, current)
    return prev


@handles(n.CycleSource)
def cycle_source(ctx: BatchCtx, node: n.CycleSource, args: list[Val]) -> Val:
    sink = next(x for x in ctx.stage.nodes if isinstance(x, n.CycleSink) and x.cycle == node.cycle)
    deferred = sink.input
    assert isinstance(deferred, n.DeferTick)
    t = from_python(node.meta.elem) or (of_value(node.initial) if node.has_initial else None) or OPAQUE
    prev = _deferred_of(deferred, ctx, None, t, node.meta.kind)
    if isinstance(prev, Scalar) and not prev.present and node.has_initial:
        return Scalar(True, node.initial, t)
    return prev


@handles(n.SourceIter)
def source_iter(ctx: BatchCtx, node: n.SourceIter, args: list[Val]) -> Val:
    """A finite literal input: all of it in the query's first batch, nothing afterwards."""
    t = from_python(node.meta.elem) or (of_value(node.values[0]) if node.values else None) or OPAQUE
    if ctx.whole:  # the whole stream, for an operator that needs all of it in every batch (`exec.whole`)
        return frame_of(ctx.spark, list(node.values), t)
    found, _ = ctx.state.get(ctx.key(node))
    if not found:
        ctx.state.put(ctx.key(node), True)
        return frame_of(ctx.spark, list(node.values), t)
    return frame_of(ctx.spark, [], t)
