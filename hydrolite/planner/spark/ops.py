"""Stateless operators: element-wise functions, reshaping, combining, entering/leaving ticks.

Functions are translated into Column expressions when possible (`lambdas`), otherwise
run through Arrow (`pyfn`); which path each operator took is recorded in
`BatchCtx.fn_paths`. Singleton functions run on the driver (one value per batch).
"""

from __future__ import annotations

from typing import Any, Protocol

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...ir import nodes as n
from ...kernels import KERNELS, KEYED_KERNELS, KernelError
from .by_value import compared, first_occurrences, group_columns, row_index
from .errors import SparkRunError, site_of
from .exec import BatchCtx, handles, whole
from .grouping import group_bytes
from .history import history_join
from .kinds import flat_item_type
from .lambdas import MixedTypes, NotTranslatable, TExpr, literal, translate, translate_reused
from .pyfn import elementwise, map_in_arrow, misfit, reencode, sort_whole, split_pairs
from .reuse import derived, struct_of
from .types import (
    OPAQUE,
    HType,
    ListT,
    OptT,
    Prim,
    TupleT,
    declared_result,
    exact_numbers,
    has_opaque,
    infer_result,
    of_value,
    strip_optional,
)
from .values import KTable, Scalar, SFrame, Val, frame_of, table_frame

BOOL = Prim(bool)


def sframe(v: Val, node: n.Node) -> SFrame:
    if not isinstance(v, SFrame):
        raise SparkRunError(f"{site_of(node)}: {node.op}() expected a stream, got {type(v).__name__}")
    return v


def unsupported(node: n.Node, why: str, fix: str) -> SparkRunError:
    return SparkRunError(f"{site_of(node)}: {node.op}() {why} is not supported on Spark\n  fix: {fix}")


def empty_like(sf: SFrame, vt: HType | None = None) -> SFrame:
    out = sf.df.filter(F.lit(False))
    if vt is not None:
        out = out.select(*sf.order, *(["k"] if sf.keyed else []), F.lit(None).cast(vt.spark()).alias("v"))
    return sf.with_df(out, vt=vt)


def project(sf: SFrame, v: Column, vt: HType, extra_order: tuple[str, ...] = ()) -> SFrame:
    """`sf` with its values replaced by `v` (a Column over `sf.df`), adding order columns."""
    df = sf.df.select(*sf.order, *extra_order, *(["k"] if sf.keyed else []), v.alias("v"))
    return SFrame(df, vt, sf.kt, (*sf.order, *extra_order))


# ------------------------------------------------------------------ element-wise
_KIND = {n.Map: "map", n.Filter: "filter", n.FilterMap: "filter_map", n.FlatMap: "flat_map", n.Inspect: "inspect"}
ElementWise = n.Map | n.Filter | n.FilterMap | n.FlatMap | n.Inspect  # nodes applying f per element


@handles(n.Map, n.Filter, n.FilterMap, n.FlatMap, n.Inspect, lazy=True)
def elementwise_op(ctx: BatchCtx, node: ElementWise, args: list[Val]) -> Val:
    kind = _KIND[type(node)]
    (x,) = args
    if isinstance(x, SFrame):
        return apply_stream(ctx, node, kind, x)
    if isinstance(x, Scalar):
        return _apply_scalar(ctx, node, kind, x)
    assert isinstance(x, KTable)
    if x.frame is not None:
        return KTable(x.kt, (out := apply_stream(ctx, node, kind, x.frame)).vt, out)
    return _apply_store_table(ctx, node, kind, x)


def apply_stream(ctx: BatchCtx, node: ElementWise, kind: str, sf: SFrame) -> SFrame:
    reason, mixed = "inspect() runs Python for its side effect", False
    if kind != "inspect":
        try:
            v = F.col("v") if kind == "flat_map" else sf.col("v")  # flat_map builds its DataFrame
            out = _native(ctx, kind, translate_reused(node.f, [TExpr(v, sf.vt)]), sf)
            ctx.note_fn(node, "native")
            ctx.natives.append((node, sf))
            return out
        except NotTranslatable as exc:
            reason, mixed = str(exc), isinstance(exc, MixedTypes)
    ctx.note_fn(node, f"arrow ({reason}{'; results kept pickled, each as it is' if mixed else ''})")
    return _arrow(ctx, node, kind, sf, mixed)


class FreshNames(Protocol):
    """The part of a BatchCtx `_native` uses: fresh column names (tests pass just that)."""

    def fresh(self, prefix: str = ...) -> str: ...


def _native(ctx: FreshNames, kind: str, te: TExpr, sf: SFrame) -> SFrame:
    """The op with its function translated to `te`: over `sf.base` (built from `sf.col("v")`)
    for map / filter / filter_map, which stay pending; over `sf.df` for flat_map."""
    if kind == "map":
        return sf.with_value(te.col, te.t)
    if kind == "filter":
        if te.t != BOOL:
            raise NotTranslatable("the predicate does not return a bool (Python truthiness)")
        return sf.filtered(te.col)
    if kind == "filter_map":
        return sf.with_value(te.col, strip_optional(te.t)).filtered(te.col.isNotNull())
    if kind == "flat_map":
        if not isinstance(te.t, ListT):
            raise NotTranslatable("flat_map result is not a list")
        pos = ctx.fresh()
        df = sf.df.select(*sf.order, *(["k"] if sf.keyed else []), F.posexplode(te.col).alias(pos, "v"))
        return SFrame(df.select(*sf.order, pos, *(["k"] if sf.keyed else []), "v"), te.t.item, sf.kt, (*sf.order, pos))
    raise NotTranslatable(kind)


def _arrow(ctx: BatchCtx, node: ElementWise, kind: str, sf: SFrame, mixed: bool = False) -> SFrame:
    """`node` over `sf` in Python (Arrow batches); with `mixed` (its results may differ in type:
    `lambdas.MixedTypes`) they are kept pickled, each exactly as the function returned it."""
    if mixed and kind != "filter":
        out_t: HType = OPAQUE
    elif kind == "map":
        out_t = infer_result(node.f, [sf.vt])
    elif kind == "filter_map":
        out_t = strip_optional(infer_result(node.f, [sf.vt]))
    elif kind == "flat_map":
        out_t = flat_item_type(node.f, sf.vt)
    else:
        out_t = sf.vt
    pos = ctx.fresh() if kind == "flat_map" else None
    base = sf.df.select(*sf.cols())
    fields = [f for f in base.schema.fields if f.name != "v"]
    if pos is not None:
        fields.append(T.StructField(pos, T.LongType(), True))
    fields.append(T.StructField("v", out_t.spark(), True))
    exact = not mixed and kind != "filter" and declared_result(node.f) is None  # (typed by a trial call)
    fn = elementwise(kind, node.f, sf.vt, out_t, ctx.site(node), pos, sf.kt, exact)
    df = map_in_arrow(base, fn, T.StructType(fields))
    order = (*sf.order, pos) if pos is not None else sf.order
    return SFrame(df.select(*order, *(["k"] if sf.keyed else []), "v"), out_t, sf.kt, order)


def _kernel(ctx: BatchCtx, node: ElementWise, kind: str, values: list[Any], keyed: bool = False) -> list[Any]:
    """The operator's kernel (`hydrolite.kernels`) on driver-side values; failures name the
    operator, the user's line, the element and the batch, like the Arrow path's."""
    table = KEYED_KERNELS if keyed else KERNELS
    try:
        f = node.run_fn() if isinstance(node, (n.Map, n.FilterMap)) else node.f  # (held as declared)
        return list(table[kind](f, values))
    except KernelError as exc:
        raise ctx.site(node).fail(exc.element, exc.cause) from exc


def _apply_scalar(ctx: BatchCtx, node: ElementWise, kind: str, x: Scalar) -> Val:
    if kind == "flat_map":
        items = _kernel(ctx, node, kind, [x.value]) if x.present else []
        t = of_value(items[0]) if items else None
        return frame_of(ctx.spark, items, t if t is not None else flat_item_type(node.f, x.t))
    if not x.present:
        return Scalar.empty(x.t if kind in ("filter", "inspect") else infer_result(node.f, [x.t]))
    out = _kernel(ctx, node, kind, [x.value])
    if kind in ("filter", "inspect"):
        return x if out else Scalar.empty(x.t)
    if not out:  # filter_map dropped it
        return Scalar.empty(infer_result(node.f, [x.t]))
    y = out[0]
    t = of_value(y) if y is not None else None
    return Scalar(True, y, t if t is not None else infer_result(node.f, [x.t]))


def _apply_store_table(ctx: BatchCtx, node: ElementWise, kind: str, x: KTable) -> KTable:
    if kind not in ("map", "filter", "inspect"):
        raise unsupported(node, "on a keyed singleton", "use map() or filter()")
    t, exact = _result_type(node.f, x.vt) if kind == "map" else (x.vt, False)

    def view(k: Any, v: Any) -> tuple[bool, Any]:
        out = _kernel(ctx, node, kind, [(k, v)], keyed=True)
        if out and exact:  # (the type is a trial call's guess: a result must fit it exactly)
            try:
                with exact_numbers():
                    t.encode(out[0][1])
            except TypeError as exc:
                raise ctx.site(node).fail((k, v), misfit(out[0][1], t, exc)) from exc
        return (True, out[0][1]) if out else (False, v)

    return x.with_transform(view, t, x.guessed)


def _result_type(f: Any, vt: HType) -> tuple[HType, bool]:
    """The type of `f`'s results over values of `vt` for Python code, and whether it is a
    trial call's guess (`types.declared_result`): pickled when a translation finds results
    that may differ in type (`lambdas.MixedTypes`)."""
    try:
        translate_reused(f, [TExpr(F.col("v"), vt)])
    except MixedTypes:
        return OPAQUE, False
    except NotTranslatable:
        pass
    return infer_result(f, [vt]), declared_result(f) is None


# ------------------------------------------------------------------ leaves and pass-through
@handles(n.Source)
def source(ctx: BatchCtx, node: n.Source, args: list[Val]) -> Val:
    raise SparkRunError(f"{site_of(node)}: source port {node.port!r} is not bound to an input")


@handles(n.TickConstant, lazy=True)
def tick_constant(ctx: BatchCtx, node: n.TickConstant, args: list[Val]) -> Val:
    return Scalar(True, node.value, of_value(node.value) or OPAQUE)


@handles(
    n.Batch, n.Snapshot, n.AllTicks, n.Latest, n.ReleaseAligned, n.AlignedAt, n.WeakenOrdering, n.CycleSink, lazy=True
)
def passthrough(
    ctx: BatchCtx,
    node: n.Batch
    | n.Snapshot
    | n.AllTicks
    | n.Latest
    | n.ReleaseAligned
    | n.AlignedAt
    | n.WeakenOrdering
    | n.CycleSink,
    args: list[Val],
) -> Val:
    return args[0]


@handles(n.Send, lazy=True)
def send(ctx: BatchCtx, node: n.Send, args: list[Val]) -> Val:
    return args[0]  # one Spark application: delivery is immediate, which is one legal schedule


@handles(n.AssumeOrdering, lazy=True)
def assume_ordering(ctx: BatchCtx, node: n.AssumeOrdering, args: list[Val]) -> Val:
    sf = sframe(args[0], node)
    if sf.order:
        return sf
    o = ctx.fresh()
    return SFrame(sf.df.withColumn(o, F.monotonically_increasing_id()), sf.vt, sf.kt, (o,))


@handles(n.Sink, lazy=True)
def sink(ctx: BatchCtx, node: n.Sink, args: list[Val]) -> Val:
    ctx.outputs[node.port] = sframe(args[0], node)
    return args[0]


# ------------------------------------------------------------------ reshaping
def pairs(ctx: BatchCtx, node: n.Node, sf: SFrame) -> tuple[DataFrame, HType, HType]:
    """A stream of 2-tuples as a DataFrame with `k` and `v` columns (plus order)."""
    if isinstance(sf.vt, TupleT) and len(sf.vt.items) == 2:
        df = sf.df.select(*sf.order, F.col("v._1").alias("k"), F.col("v._2").alias("v"))
        return df, sf.vt.items[0], sf.vt.items[1]
    ctx.note_fn(node, f"arrow (elements of type {sf.vt.describe()} are split into key and value in Python)")
    base = sf.df.select(*sf.order, "v")
    fields = [f for f in base.schema.fields if f.name != "v"]
    schema = T.StructType([*fields, T.StructField("k", OPAQUE.spark(), True), T.StructField("v", OPAQUE.spark(), True)])
    return map_in_arrow(base, split_pairs(sf.vt, ctx.site(node)), schema), OPAQUE, OPAQUE


@handles(n.IntoKeyed, lazy=True)
def into_keyed(ctx: BatchCtx, node: n.IntoKeyed, args: list[Val]) -> Val:
    sf = sframe(args[0], node)
    df, kt, vt = pairs(ctx, node, sf)
    return SFrame(df, vt, kt, sf.order)


@handles(n.Entries, lazy=True)
def entries(ctx: BatchCtx, node: n.Entries, args: list[Val]) -> Val:
    x = args[0]
    sf = table_frame(ctx.spark, x) if isinstance(x, KTable) else sframe(x, node)
    assert sf.kt is not None
    k, v = sf.col("k"), sf.col("v")
    pair = derived(("entries",), [k, v], lambda: struct_of([("_1", k), ("_2", v)]))
    return sf.with_value(pair, TupleT((sf.kt, sf.vt)), keyed=False)


@handles(n.Values, lazy=True)
def values(ctx: BatchCtx, node: n.Values, args: list[Val]) -> Val:
    x = args[0]
    sf = table_frame(ctx.spark, x) if isinstance(x, KTable) else sframe(x, node)
    return sf.with_value(sf.col("v"), sf.vt, keyed=False)


@handles(n.IntoStream, lazy=True)
def into_stream(ctx: BatchCtx, node: n.IntoStream, args: list[Val]) -> Val:
    x = args[0]
    assert isinstance(x, Scalar)
    return frame_of(ctx.spark, [x.value] if x.present else [], x.t)


@handles(n.IntoSingleton, lazy=True)
def into_singleton(ctx: BatchCtx, node: n.IntoSingleton, args: list[Val]) -> Val:
    x = args[0]
    assert isinstance(x, Scalar)
    return Scalar(True, x.value if x.present else None, x.t if isinstance(x.t, OptT) else OptT(x.t))


@handles(n.UnwrapOr, lazy=True)
def unwrap_or(ctx: BatchCtx, node: n.UnwrapOr, args: list[Val]) -> Val:
    x = args[0]
    assert isinstance(x, Scalar)
    return Scalar(True, x.value if x.present else node.default, x.t)


@handles(n.Zip, lazy=True)
def zip_(ctx: BatchCtx, node: n.Zip, args: list[Val]) -> Val:
    a, b = args
    assert isinstance(a, Scalar) and isinstance(b, Scalar)
    t = TupleT((a.t, b.t))
    return Scalar(True, (a.value, b.value), t) if a.present and b.present else Scalar.empty(t)


# ------------------------------------------------------------------ combining
@handles(n.CrossSingleton, lazy=True)
def cross_singleton(ctx: BatchCtx, node: n.CrossSingleton, args: list[Val]) -> Val:
    sf = sframe(args[0], node)
    s = args[1]
    assert isinstance(s, Scalar)
    t = TupleT((sf.vt, s.t))
    if not s.present:
        return empty_like(sf, t)
    return project(sf, F.struct(F.col("v").alias("_1"), literal(s.value, s.t).col.alias("_2")), t)


@handles(n.CrossProduct, lazy=True)
def cross_product(ctx: BatchCtx, node: n.CrossProduct, args: list[Val]) -> Val:
    a, b = sframe(args[0], node), sframe(args[1], node)
    if ctx.stateful(node):  # unbounded sides: with their history (history.py)
        return history_join(ctx, node, a, b, _cross)
    return _cross(a, b)


def _cross(a: SFrame, b: SFrame) -> SFrame:
    df = a.df.select(F.col("v").alias("_l")).crossJoin(b.df.select(F.col("v").alias("_r")))
    return SFrame(
        df.select(F.struct(F.col("_l").alias("_1"), F.col("_r").alias("_2")).alias("v")), TupleT((a.vt, b.vt))
    )


def common_type(a: HType, b: HType) -> HType:
    """One encoding for values compared or combined across two frames: theirs when equal,
    else pickled — two kinds of number too (int and float, int and bool): each value keeps
    its own kind, as the simulator keeps it (a wider column would turn a union's `1` into
    `1.0`, a join's int key into a float), and `compared` matches pickled values by Python's
    equality (`1 == 1.0 == True`), so an int key still meets a float key."""
    if a == b or a.spark() == b.spark():
        return a
    return OPAQUE


def encoded(df: DataFrame, col: str, have: HType, want: HType) -> DataFrame:
    """`df` with column `col` re-encoded from `have` to `want` (no-op when they agree)."""
    if have == want or have.spark() == want.spark():
        return df
    if isinstance(have, Prim) and isinstance(want, Prim) and {have.py, want.py} <= {int, float, bool}:
        return df.withColumn(col, F.col(col).cast(want.spark()))  # (common_type's number: a cast)
    schema = T.StructType([T.StructField(f.name, want.spark(), True) if f.name == col else f for f in df.schema.fields])
    return map_in_arrow(df, reencode({col: (have, want)}), schema)


@handles(n.Join, lazy=True)
def join(ctx: BatchCtx, node: n.Join, args: list[Val]) -> Val:
    a, b = sframe(args[0], node), sframe(args[1], node)
    if ctx.stateful(node):  # unbounded sides: with their history (history.py)
        return history_join(ctx, node, a, b, lambda x, y: _join(ctx, node, x, y))
    return _join(ctx, node, a, b)


def _join(ctx: BatchCtx, node: n.Join, a: SFrame, b: SFrame) -> SFrame:
    l_df, lk, lv = pairs(ctx, node, a)
    r_df, rk, rv = pairs(ctx, node, b)
    kt = common_type(lk, rk)
    left, lc = compared(encoded(l_df.select("k", F.col("v").alias("_l")), "k", lk, kt), "k", kt)
    right, rc = compared(
        encoded(r_df.select(F.col("k").alias("_rk"), F.col("v").alias("_r")), "_rk", rk, kt), "_rk", kt
    )
    df = left.join(right, left[lc].eqNullSafe(right[rc]))  # None keys match, as in Python
    v = F.struct(F.col("k").alias("_1"), F.struct(F.col("_l").alias("_1"), F.col("_r").alias("_2")).alias("_2"))
    return SFrame(df.select(v.alias("v")), TupleT((kt, TupleT((lv, rv)))))


@handles(n.AntiJoin, lazy=True)
def anti_join(ctx: BatchCtx, node: n.AntiJoin, args: list[Val]) -> Val:
    left = sframe(args[0], node)
    l_df, lk, lv = pairs(ctx, node, left)
    # at top level the keys are a bounded stream of literals that arrived in the query's first
    # batch; the model removes them from every element of the left stream, in every batch
    keys = sframe(args[1] if node.left.meta.in_tick else whole(ctx, node.right), node)
    kt = common_type(lk, keys.vt)
    l_df, lc = compared(encoded(l_df, "k", lk, kt), "k", kt)
    right, rc = compared(encoded(keys.df.select(F.col("v").alias("_key")), "_key", keys.vt, kt), "_key", kt)
    kept = l_df.join(right, l_df[lc].eqNullSafe(right[rc]), "left_anti")
    kept = encoded(kept, "k", kt, lk)  # the kept pairs keep their own key type
    return SFrame(
        kept.select(*left.order, F.struct(F.col("k").alias("_1"), F.col("v").alias("_2")).alias("v")),
        TupleT((lk, lv)),
        None,
        left.order,
    )


def _orders(a: SFrame, width: int) -> list[Column]:
    return [F.col(c).alias(f"_m{i}") for i, c in enumerate(a.order)] + [
        F.lit(0).cast("long").alias(f"_m{i}") for i in range(len(a.order), width)
    ]


@handles(n.Chain, lazy=True)
def chain(ctx: BatchCtx, node: n.Chain, args: list[Val]) -> Val:
    a, b = sframe(args[0], node), sframe(args[1], node)
    vt = common_type(a.vt, b.vt)
    width = max(len(a.order), len(b.order))
    tag = ctx.fresh("_c")
    names = tuple(f"_m{i}" for i in range(width))
    da = encoded(a.df.select(F.lit(0).alias(tag), *_orders(a, width), "v"), "v", a.vt, vt)
    db = encoded(b.df.select(F.lit(1).alias(tag), *_orders(b, width), "v"), "v", b.vt, vt)
    return SFrame(da.unionByName(db.select(*da.columns)), vt, None, (tag, *names))


@handles(n.MergeUnordered, lazy=True)
def merge_unordered(ctx: BatchCtx, node: n.MergeUnordered, args: list[Val]) -> Val:
    a, b = sframe(args[0], node), sframe(args[1], node)
    vt = common_type(a.vt, b.vt)
    keyed = ["k"] if a.keyed else []
    da, db = encoded(a.df.select(*keyed, "v"), "v", a.vt, vt), encoded(b.df.select(*keyed, "v"), "v", b.vt, vt)
    kt = a.kt
    if a.kt is not None and b.kt is not None:
        kt = common_type(a.kt, b.kt)
        da, db = encoded(da, "k", a.kt, kt), encoded(db, "k", b.kt, kt)
    return SFrame(da.unionByName(db), vt, kt)


@handles(n.KeyedLookup)
def keyed_lookup(ctx: BatchCtx, node: n.KeyedLookup, args: list[Val]) -> Val:
    left = sframe(args[0], node)
    table = args[1]
    assert isinstance(table, KTable) and left.kt is not None
    if table.frame is not None:  # compared in one type (`common_type`); the requests keep their keys
        assert table.frame.kt is not None
        kt = common_type(left.kt, table.frame.kt)
        r, rc = compared(
            encoded(table.frame.df.select(F.col("k").alias("_rk"), F.col("v").alias("_r")), "_rk", table.frame.kt, kt),
            "_rk",
            kt,
        )
        requests, lc = compared(encoded(left.df.withColumn("_lk", F.col("k")), "_lk", left.kt, kt), "_lk", kt)
        vt = table.vt
    else:  # found keys are encoded like the stream's keys, whatever the table's key type
        keys = [left.kt.decode(r["k"]) for r in left.df.select("k").distinct().collect()]
        # (a list, not a dict: `0` and `0.0`, distinct pickled requests, are one dict key, and
        # the request in the form the dict dropped would find no answer to join with)
        asked = [(k, as_key(k, table.kt)) for k in keys]  # (an int request of a float-keyed state: as a float)
        found = table.lookup(list(dict.fromkeys(a for _, a in asked)))
        hits = [(k, found[a]) for k, a in asked if a in found]
        right = frame_of(
            ctx.spark, [v for _, v in hits], table.vt, [k for k, _ in hits], left.kt, ordered=False, exact=table.guessed
        )
        r = right.df.select(F.col("k").alias("_rk"), F.col("v").alias("_r"))
        requests, lc, rc = left.df.withColumn("_lk", F.col("k")), "_lk", "_rk"
        vt = right.vt  # (pickled when a guessed type does not hold every value found)
    how = "left" if node.keep_missing else "inner"
    df = requests.join(r, requests[lc].eqNullSafe(r[rc]), how)
    rt = OptT(vt) if node.keep_missing and not isinstance(vt, OptT) else vt
    v = F.struct(F.col("v").alias("_1"), F.col("_r").alias("_2"))
    return SFrame(df.select(*left.order, "k", v.alias("v")), TupleT((left.vt, rt)), left.kt, left.order)


def as_key(k: Any, t: HType | None) -> Any:
    """Key `k` in the form a state keyed by `t` holds it, when a number of another kind equals
    it (`1` asking a float-keyed state is `1.0`; `2.0` asking an int-keyed one is `2`)."""
    if isinstance(t, Prim) and isinstance(k, (int, float)) and type(k) is not t.py:
        if t.py is float:
            return float(k)
        if t.py is int and (not isinstance(k, float) or k.is_integer()):
            return int(k)
    return k


@handles(n.KeyedGet)
def keyed_get(ctx: BatchCtx, node: n.KeyedGet, args: list[Val]) -> Val:
    table, key = args
    assert isinstance(table, KTable) and isinstance(key, Scalar)
    if not key.present:
        return Scalar.empty(table.vt)
    if table.frame is None:
        found = table.lookup([key.value])
        if key.value not in found:
            return Scalar.empty(table.vt)
        value = found[key.value]
        return Scalar(True, value, (of_value(value) or OPAQUE) if table.guessed else table.vt)
    df, col = compared(table.frame.df, "k", table.kt)  # (a pickled key: found in any form equal to it)
    want = literal(key.value, table.kt).col if col == "k" else F.lit(group_bytes(key.value))
    rows = df.filter(F.col(col).eqNullSafe(want)).select("v").limit(1).collect()
    return Scalar(True, table.vt.decode(rows[0]["v"]), table.vt) if rows else Scalar.empty(table.vt)


# ------------------------------------------------------------------ ordering within a batch
@handles(n.Sort, lazy=True)
def sort(ctx: BatchCtx, node: n.Sort, args: list[Val]) -> Val:
    sf = sframe(args[0], node)
    o = ctx.fresh()
    try:
        key = translate(node.key, [TExpr(F.col("v"), sf.vt)]) if node.key is not None else TExpr(F.col("v"), sf.vt)
        if not isinstance(strip_optional(key.t), (Prim, TupleT)):
            raise NotTranslatable(f"sort key of type {key.t}")
        ctx.note_fn(node, "native")
        return SFrame(sf.df.withColumn(o, key.col), sf.vt, sf.kt, (o, *sf.order))
    except NotTranslatable as exc:
        ctx.note_fn(node, f"arrow ({exc})")
    base = sf.df.select(*sf.cols()).repartition(1)
    schema = T.StructType([*base.schema.fields, T.StructField(o, T.LongType(), True)])
    df = map_in_arrow(base, sort_whole(node.key, sf.vt, ctx.site(node), list(sf.order), o), schema)
    return SFrame(df, sf.vt, sf.kt, (o,))


@handles(n.Unique)
def unique(ctx: BatchCtx, node: n.Unique, args: list[Val]) -> Val:
    sf = sframe(args[0], node)
    if ctx.stateful(node):
        from .ops_state import unique_unbounded

        return unique_unbounded(ctx, node, sf)  # counted by Spark when native (`native_state._unique_of`)
    return sf.with_df(first_occurrences(sf))


@handles(n.Enumerate)
def enumerate_(ctx: BatchCtx, node: n.Enumerate, args: list[Val]) -> Val:
    sf = sframe(args[0], node)
    if ctx.stateful(node):
        from .ops_state import enumerate_unbounded

        return enumerate_unbounded(ctx, node, sf)
    df, by = group_columns(sf, sf.df)  # (a key's indexes count its elements equal in Python as one key)
    idx = row_index(sf, by)
    out = sf.with_df(df)
    return project(out, F.struct(idx.cast("long").alias("_1"), F.col("v").alias("_2")), TupleT((Prim(int), sf.vt)))


@handles(n.Keys)
def keys(ctx: BatchCtx, node: n.Keys, args: list[Val]) -> Val:
    x = args[0]
    if isinstance(x, KTable):
        sf = table_frame(ctx.spark, x)
    else:
        sf = sframe(x, node)
        if ctx.stateful(node):
            from .ops_state import unique_unbounded

            ks = SFrame(sf.df.select(*sf.order, F.col("k").alias("v")), sf.kt or OPAQUE, None, sf.order)
            return unique_unbounded(ctx, node, ks)
    assert sf.kt is not None
    if has_opaque(sf.kt):  # (keys equal in Python are one key: the first form of each, as a dict keeps it)
        ks = SFrame(sf.df.select(*sf.order, F.col("k").alias("v")), sf.kt, None, sf.order)
        return SFrame(first_occurrences(ks).select("v"), sf.kt)
    return SFrame(sf.df.select(F.col("k").alias("v")).distinct(), sf.kt)
