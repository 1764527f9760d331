"""What a `unique()`, `keys()` or keyed `enumerate()` saw, kept as a Parquet table the tick updates.

The stateful `unique()` / `keys()` of a stream, and a keyed stream's `enumerate()`, remember
something per element (per key): whether it was seen, or how many elements it had. When
their input is a chain of the query's inputs the executor region keeps that in Spark's state
store (`region.ExecutorSeen`); when the tick computes their input (a join's pairs re-keyed,
two `flat_map()`s, a cross product, ...) Spark cannot put a stateful operator there
(SPARK-47960), and the driver's store kept it: every distinct element of every batch was
collected to the driver. Here the executors keep it as a table, as `tick_table.py` does for
keyed aggregates:

* each row of the batch gets `g`, the `grouping.group_bytes` of its element (of its key for
  `enumerate()`): elements equal in Python (`1`, `1.0`, `True`) are one element, as in the
  simulator's set and dict; one Python pass over the batch, in Arrow;
* `unique()` / `keys()`: the first occurrence of each `g` in the stream's order whose `g` the
  table (the version the batch before kept) does not hold is new; the table's next version
  adds the new `g`s;
* keyed `enumerate()`: the table holds each key's count `n`; an element's index is its
  key's stored count plus its place among the key's elements of the batch, and the next
  version holds the counts plus the batch's;
* the version is written with `channel_versions.keep_table` (a Parquet directory per batch
  under `<query>/state/blobs/`, its path in the versioned store): a replay of the batch reads
  the same previous version and writes the same rows.

Cost: O(table) per batch on the executors (a join and the rewrite), the batch's elements
through Python once for `g`; nothing per element on the driver.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...ir import nodes as n
from .by_value import row_index
from .channel_versions import keep_table, kept_table
from .exec import BatchCtx
from .grouping import group_bytes
from .pyfn import map_in_arrow
from .types import Prim, TupleT
from .values import SFrame

#: what `hydrolite plan` says of such a state (after the reason its input is no chain)
WHY = (
    "a table the executors keep as Parquet under the query's checkpoint: each batch joins its elements' "
    "equality bytes with it and rewrites it (nothing through the driver), O(table) per batch"
)
_BIN = T.BinaryType()


def _grouped(sf: SFrame, by_key: bool) -> DataFrame:
    """`sf`'s rows with `_g`: the group bytes of each element ((key, value) when keyed), or of
    its key with `by_key`."""
    kt, vt = sf.kt, sf.vt

    def element(k: Any, v: Any) -> Any:
        if by_key:
            assert kt is not None
            return kt.decode(k)
        return (kt.decode(k), vt.decode(v)) if kt is not None else vt.decode(v)

    def run(batches: Any) -> Any:
        for rb in batches:
            ks = rb.column(rb.schema.get_field_index("k")).to_pylist() if kt is not None else [None] * rb.num_rows
            vs = rb.column(rb.schema.get_field_index("v")).to_pylist()
            gs = [group_bytes(element(k, v)) for k, v in zip(ks, vs)]
            yield rb.append_column(pa.field("_g", pa.binary()), pa.array(gs, type=pa.binary()))

    df = sf.df.select(*sf.cols())
    return map_in_arrow(df, run, T.StructType([*df.schema.fields, T.StructField("_g", _BIN, True)]))


def _empty(ctx: BatchCtx, *extra: T.StructField) -> DataFrame:
    return ctx.spark.createDataFrame([], T.StructType([T.StructField("g", _BIN, True), *extra]))


def unique(ctx: BatchCtx, node: n.Node, sf: SFrame) -> SFrame:
    """The batch's elements (first occurrences, in the stream's order) that no earlier batch
    had, each element's `g` added to the table."""
    key = ctx.key(node)
    ctx.note_fn(node, "arrow (equality bytes; what it saw: the tick's Parquet table on the executors)")
    rows = _grouped(sf, by_key=False)
    if sf.order:
        rows = rows.withColumn("_i", row_index(sf, ["_g"])).filter(F.col("_i") == 0).drop("_i")
    else:
        rows = rows.dropDuplicates(["_g"])
    seen = kept_table(ctx.spark, ctx.state, key)
    seen = _empty(ctx) if seen is None else seen
    fresh = rows.join(seen, rows["_g"] == seen["g"], "left_anti")
    keep_table(ctx.spark, ctx.state, key, seen.unionByName(fresh.select(F.col("_g").alias("g"))))
    return sf.with_df(fresh.drop("_g"))


def enumerate_keyed(ctx: BatchCtx, node: n.Node, sf: SFrame) -> SFrame:
    """(index, element) per key, a key's indexes continuing from its count in the table (keys
    equal in Python count together); the table's next version adds the batch's counts."""
    key = ctx.key(node)
    ctx.note_fn(node, "arrow (equality bytes; counts: the tick's Parquet table on the executors)")
    rows = _grouped(sf, by_key=True)
    rows = rows.withColumn("_i", row_index(sf, ["_g"]))
    counts = kept_table(ctx.spark, ctx.state, key)
    counts = _empty(ctx, T.StructField("n", T.LongType(), True)) if counts is None else counts
    old = counts.alias("old")
    indexed = rows.join(old, rows["_g"] == F.col("old.g"), "left").withColumn(
        "_idx", (F.col("_i") + F.coalesce(F.col("old.n"), F.lit(0))).cast("long")
    )
    added = rows.groupBy(F.col("_g").alias("g")).agg(F.count(F.lit(1)).alias("b")).alias("new")
    both = added.join(old, F.col("new.g") == F.col("old.g"), "full_outer")
    total = F.coalesce(F.col("old.n"), F.lit(0)) + F.coalesce(F.col("new.b"), F.lit(0))
    keep_table(
        ctx.spark,
        ctx.state,
        key,
        both.select(F.coalesce(F.col("new.g"), F.col("old.g")).alias("g"), total.cast("long").alias("n")),
    )
    pair = F.struct(F.col("_idx").alias("_1"), F.col("v").alias("_2"))
    return SFrame(indexed.select(*sf.order, "k", pair.alias("v")), TupleT((Prim(int), sf.vt)), sf.kt, sf.order)


def placed_why(reason: str) -> str:
    """`hydrolite plan`'s reason for a state on this path: why it is no executor region's."""
    return f"fed by what the tick computes ({reason}): {WHY}"
