"""Singletons and keyed singletons read from another query: the version a batch reads.

A singleton's versions cross as one-row channel entries; the reader takes the newest its
batch brings, else the one it kept, else the producer's static initial version
(`latest_scalar`; `held.py` holds a batch that has none). A keyed singleton:

* **Producer.** A batch that computes a version writes the whole table, `(k, v)` rows, as the
  channel's entry `<batch id>` (`outputs._write_channel`, through `values.table_frame`). An
  empty table writes no entry, as an empty optional singleton writes none: the reader keeps
  the version it has, an older one, which a snapshot may read.
* **Reader.** Of the entries a batch brings, the newest is the version (`latest_table`: one
  aggregate over the batch's rows of that input, then a filter). The reader keeps it as
  Parquet its executors write under its own state (`<query>/state/blobs/`), recorded in the
  versioned store by path: a later batch without a new version reads it back from there,
  neither through the driver nor from the producer's entry (which retention may remove).
* **Before a first version.** A keyed aggregation of an unbounded keyed stream (count,
  fold, reduce, first, last; a map or filter of one) is the empty table from the start, in
  the model too (`ir.roles.starts_empty`); any other keyed singleton has no version yet, and the reading tick waits
  for one (`held.py`), as it does for a singleton.
* **Only whole tables cross.** A keyed state Spark's streaming aggregation or the executor
  region keeps yields, per batch, only the keys the batch updated; such a state read by
  another query is refused at plan time (`check_whole`).

    >>> from hydrolite.planner.spark.channel_versions import VERSIONED
    >>> [k.value for k in VERSIONED]
    ['Singleton', 'OptionalSingleton', 'KeyedSingleton']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...ir import nodes as n
from ...ir.meta import Kind
from ...ir.roles import starts_empty, static_initial
from .stages import SparkPlanError, where
from .values import KTable, Scalar, SFrame, frame_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .runtime import InputSpec
    from .stages import Plan

__all__ = ["VERSIONED", "check_whole", "latest_scalar", "latest_table"]

#: the kinds read from another query by version (the reader takes one version, not every element)
VERSIONED = (Kind.SINGLETON, Kind.OPTIONAL, Kind.KEYED_SINGLETON)

_VALUE_OPS = (n.Map, n.Filter, n.FilterMap, n.Inspect)


def latest_scalar(sf: SFrame, inp: InputSpec, state: Any) -> Scalar:
    """A singleton read from another query: its newest version so far."""
    rows = sf.df.orderBy(*[F.col(c).desc() for c in sf.order]).limit(1).collect()
    key = f"input:{inp.name}"
    if rows:
        value = inp.vt.decode(rows[0]["v"])
        state.put(key, value)
        return Scalar(True, value, inp.vt)
    found, value = state.get(key)
    if not found and inp.node is not None:  # nothing received yet: the producer's initial version, if static
        found, value = static_initial(inp.node)
    return Scalar(found, value, inp.vt)


def latest_table(spark: SparkSession, sf: SFrame, inp: InputSpec, state: Any) -> KTable | None:
    """The version of keyed singleton input `inp` this batch reads: the newest entry among the
    batch's rows `sf` (ordered by the feed's `_seq`: entry << 32 + row), else the version an
    earlier batch kept, else the empty table when it starts empty; None: no version yet."""
    assert inp.node is not None and inp.kt is not None and len(sf.order) == 1
    key, seq = f"input:{inp.name}", F.col(sf.order[0])
    newest = sf.df.agg(F.max(seq)).collect()[0][0]
    if newest is not None:
        rows = sf.df.filter(seq >= F.lit((int(newest) >> 32) << 32)).select("k", "v")
        path = state.blob_dir(key)
        rows.write.mode("overwrite").parquet(path)  # by the executors; a replay writes the same rows
        found, kept = True, (path, rows.schema.jsonValue())
        state.put(key, kept, b"table")  # (reads of `state` see the previous batch's versions)
        state.put_blob(key, path)  # older versions' directories go when the batch commits
    else:
        found, kept = state.get(key, b"table")
    if not found:
        if not starts_empty(inp.node):
            return None
        return KTable(inp.kt, inp.vt, frame_of(spark, [], inp.vt, [], inp.kt, ordered=False))
    path, schema = kept
    table = spark.read.schema(T.StructType.fromJson(schema)).parquet(path)
    return KTable(inp.kt, inp.vt, SFrame(table, inp.vt, inp.kt))


def check_whole(plan: Plan) -> None:
    """Refuse a keyed singleton read by another query when its producer holds it as a state
    whose batch value is only the keys the batch updated (Spark's streaming aggregation, the
    executor region): the reader needs whole versions."""
    for ch in plan.channels:
        if ch.node.meta.kind is not Kind.KEYED_SINGLETON:
            continue
        stage = plan.stages[ch.producer]
        if stage.placement is None:
            continue
        x: n.Node = ch.node
        while True:
            placed = stage.placement.of(x)
            if placed is not None and (placed.executors or placed.native):
                raise SparkPlanError(
                    f"{ch.node.op}() is a keyed singleton read by another query, and its state {x.op}() "
                    f"(at {where(x)}) lives on the executors ({placed.why}), where a batch sees only the keys "
                    "it updated; the reading query needs every version whole",
                    site=ch.node.site,
                    fix="run with keyed_state='driver' (hydrolite run --keyed-state driver), or snapshot it in the "
                    "tick that computes it, or align the two ticks with an align point",
                )
            if not isinstance(x, (n.Latest, *_VALUE_OPS)):
                break
            x = x.input
