"""Keyed state the tick folds, kept as a Parquet table on the executors.

A carried keyed aggregate whose input the tick computes (a join's pairs re-keyed, an
`enumerate()`'s output, a stream built from a snapshot ...) cannot be a second stateful
operator in the query's streaming plan (SPARK-47960: Spark puts none after
`transformWithState`, and two crash PySpark 4's driver worker). On the driver path each
batch collects its groups and folds them in the driver's store; here the executors do it,
so the driver sees neither keys nor values:

1. the batch's `(k, v)` rows are pickled and given their key's `grouping.group_bytes`
   (`g`: keys equal in Python are one key, as in the simulator's dict);
2. they are joined with the table the batch before kept (`g`, `k` the key's first form,
   `a` the pickled accumulator) and sorted by `g` and the stream's order within partitions
   by `g`: one Python pass per partition folds each touched key's new elements, in order,
   into its stored accumulator (or from the init) with the same kernels as the simulator
   (`keyed_processor.AggFn`);
3. the table with those keys replaced is written as this batch's version
   (`channel_versions.keep_table`: a directory per batch under `<query>/state/blobs/`, its
   path in the versioned store; a replay of the batch rewrites the same rows from the same
   previous version, so a crash anywhere repeats it exactly);
4. each folded key's row also holds the key and the accumulator typed as the driver path
   types them (`tk`, `tv`; `kinds.state_type`), so readers read the keyed singleton's
   `(k, v)` frame with no Python (a batch whose types differ re-derives them from the
   pickles). A type that may be a guess (an undeclared fold's whose function does not
   translate, a reduce's, first / last's: the batch frame's) is checked by one job over a
   column of flags: when a value is not exactly of it (`0.5` where the init said int), the
   readers get the pickles, each value as it is — as the driver path keeps a table's frame
   pickled then (`values.frame_of(exact=)`).

Cost: O(table) per batch on the executors (the joins and the rewrite, in Spark) and the
batch's elements through Python once; nothing per key on the driver. Placed by `placement.place`
(home "table") where state may live on the executors and the input is no chain.
"""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...ir import nodes as n
from .channel_versions import keep_table, kept_table
from .exec import BatchCtx
from .keyed_processor import AggFn
from .keyed_state import agg_fn
from .kinds import guessed_type, state_type
from .pyfn import FnSite, equality_bytes, map_in_arrow, reencode
from .types import OPAQUE, HType, exact_numbers
from .values import KTable, SFrame

#: what `hydrolite plan` says of such a state (after the reason its input is no chain)
WHY = (
    "a table the executors keep as Parquet under the query's checkpoint: each batch folds the keys it touched "
    "(sorted by key on the executors, one Python pass per partition, nothing through the driver) and rewrites the "
    "table, O(table) per batch"
)
_BIN = T.BinaryType()
_TABLE = T.StructType([T.StructField(c, _BIN, True) for c in ("g", "k", "a")])


def _fold_sorted(agg: AggFn) -> Any:
    """Arrow batches of a partition's rows sorted by key (`g`) and then by the stream's order,
    each with the stored `sk` / `a` when the table had its key -> one row per key: its new
    elements folded into its accumulator. One Python call per partition, not per key (a
    key's rows may span batches: the current key carries over)."""

    def run(batches: Any) -> Any:
        out: dict[str, list[Any]] = {"g": [], "k": [], "a": []}
        cur: list[Any] = []  # [g, key bytes, stored accumulator or None, pickled elements]

        def done() -> None:
            g, key_bytes, stored, xs = cur
            key = pickle.loads(key_bytes)  # (the form the table keeps, else the batch's first)
            has, acc = (True, pickle.loads(stored)) if stored is not None else (agg.has_init, agg.init)
            has, acc = agg.fold(key, has, acc, [pickle.loads(x) for x in xs])
            if has:  # (else no element made a value: a reduce / first / last of nothing)
                for c, x in (("g", g), ("k", key_bytes), ("a", pickle.dumps(acc, protocol=5))):
                    out[c].append(x)

        def flush() -> Any:
            rb = pa.RecordBatch.from_pydict({c: pa.array(xs, type=pa.binary()) for c, xs in out.items()})
            for xs in out.values():
                xs.clear()
            return rb

        for rb in batches:
            gs, ks, vs, sks, stored = (rb.column(i).to_pylist() for i in range(5))
            for i, g in enumerate(gs):
                if not cur or g != cur[0]:
                    if cur:
                        done()
                    cur[:] = [g, sks[i] if stored[i] is not None else ks[i], stored[i], []]
                cur[3].append(vs[i])
            if len(out["g"]) >= 4096:
                yield flush()
        if cur:
            done()
        if out["g"]:
            yield flush()

    return run


def _pickled(sf: SFrame) -> DataFrame:
    """The batch's rows: its order columns, `k` and `v` pickled, and `g`."""
    assert sf.kt is not None
    base = sf.df.select(*sf.order, "k", "v")
    schema = T.StructType([*(f for f in base.schema.fields if f.name in sf.order)])
    for c in ("k", "v"):
        schema.add(c, _BIN, True)
    pickled = map_in_arrow(base, reencode({"k": (sf.kt, OPAQUE), "v": (sf.vt, OPAQUE)}), schema)
    return map_in_arrow(
        pickled, equality_bytes("k", "g", OPAQUE), T.StructType([*schema.fields, T.StructField("g", _BIN)])
    )


def _typed_rows(kt: HType, vt: HType, site: FnSite, strict: bool) -> Any:
    """Arrow rows `g`, `k`, `a` (pickled) -> with `tk`, `tv` (the key and the value typed by
    `kt` / `vt`) and `fits`: whether the value is exactly of `vt` (a `1` is no float, a `True`
    no int). A value that does not fit leaves `tv` null (readers then read the pickles), or
    with `strict` (a type no value can miss: a count's, a declared one) fails naming it."""
    ka, va = kt.arrow(), vt.arrow()

    def run(batches: Any) -> Any:
        for rb in batches:
            keys = [pickle.loads(x) for x in rb.column(1).to_pylist()]
            try:
                tk = pa.array([kt.encode(x) for x in keys], type=ka)
            except TypeError as exc:  # (a key the batch's key type cannot hold at all)
                raise site.fail(next(x for x in keys if _misfit(kt, x)), exc) from exc
            tv, fits = [], []
            with exact_numbers():
                for x in rb.column(2).to_pylist():
                    try:
                        tv.append(vt.encode(pickle.loads(x)))
                        fits.append(True)
                    except TypeError as exc:
                        if strict:
                            misfit = TypeError(f"hydrolite: a value does not fit its column {vt.describe()}: {exc}")
                            raise site.fail(pickle.loads(x), misfit) from exc
                        tv.append(None)
                        fits.append(False)
            cols = [*rb.columns[:3], tk, pa.array(tv, type=va), pa.array(fits, type=pa.bool_())]
            yield pa.RecordBatch.from_arrays(cols, names=["g", "k", "a", "tk", "tv", "fits"])

    return run


def _misfit(t: HType, x: Any) -> bool:
    try:
        t.encode(x)
    except TypeError:
        return True
    return False


def _typed(df: DataFrame, kt: HType, vt: HType, site: FnSite, strict: bool) -> DataFrame:
    """`df` (`g`, `k`, `a`) with `tk`, `tv`, `fits` (`_typed_rows`)."""
    fields = [T.StructField("tk", kt.spark(), True), T.StructField("tv", vt.spark(), True)]
    schema = T.StructType([*_TABLE.fields, *fields, T.StructField("fits", T.BooleanType(), True)])
    return map_in_arrow(df.select("g", "k", "a"), _typed_rows(kt, vt, site, strict), schema)


def fold(ctx: BatchCtx, node: n.Fold | n.Reduce | n.Count | n.First | n.Last, sf: SFrame) -> KTable:
    """This batch's version of `node`'s table, folded from the previous one and `sf` (the
    batch's elements); readers get it as a (k, v) frame: typed when every value is exactly of
    the type the driver path gives the state, else pickled, each value as it is."""
    assert sf.kt is not None
    key, site, kt = ctx.key(node), ctx.site(node), sf.kt
    ctx.note_fn(node, "arrow (per key, the tick's Parquet table on the executors)")
    vt = state_type(node, sf.vt)
    # a count's type, and a fold's declared or proven by translating its function, hold every value
    strict = isinstance(node, n.Count) or (isinstance(node, n.Fold) and not guessed_type(node, sf.vt))
    rows = _pickled(sf)
    kept = kept_table(ctx.spark, ctx.state, key)
    if kept is None:
        kept = _typed(ctx.spark.createDataFrame([], _TABLE), kt, vt, site, strict)
    elif [kept.schema["tk"].dataType, kept.schema["tv"].dataType] != [kt.spark(), vt.spark()]:
        kept = _typed(kept, kt, vt, site, strict)  # (this batch's types differ: from the pickles again)
    stored = kept.select("g", F.col("k").alias("sk"), "a")
    grouped = rows.join(stored, "g", "left")
    ordered = grouped.repartition("g").sortWithinPartitions("g", *sf.order).select("g", "k", "v", "sk", "a")
    folded_rows = map_in_arrow(ordered, _fold_sorted(agg_fn(node, site)), _TABLE)
    new, old = _typed(folded_rows, kt, vt, site, strict).alias("new"), kept.alias("old")
    folded = F.col("new.g").isNotNull()  # (a key this batch folded: its new row, nulls included)
    cols = ("g", "k", "a", "tk", "tv", "fits")
    merged = new.join(old, F.col("new.g") == F.col("old.g"), "full_outer").select(
        *(F.when(folded, F.col(f"new.{c}")).otherwise(F.col(f"old.{c}")).alias(c) for c in cols)
    )
    table = keep_table(ctx.spark, ctx.state, key, merged)
    if strict or table.agg(F.bool_and("fits")).collect()[0][0] is not False:  # (one job: a column of flags)
        return KTable(kt, vt, SFrame(table.select(F.col("tk").alias("k"), F.col("tv").alias("v")), vt, kt))
    return KTable(kt, OPAQUE, SFrame(table.select(F.col("tk").alias("k"), F.col("a").alias("v")), OPAQUE, kt))


def placed_why(reason: str) -> str:
    """`hydrolite plan`'s reason for a state on this path: why it is no executor region's."""
    return f"keyed, fed by what the tick computes ({reason}): {WHY}"
