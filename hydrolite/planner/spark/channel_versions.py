"""Singletons and keyed singletons read from another query: the version a batch reads.

A singleton's versions cross as one-row channel entries; the reader takes the newest its
batch brings, else the one it kept, else the producer's static initial version
(`latest_scalar`; `held.py` holds a batch that has none). A keyed singleton crosses in one
of two forms, decided once the states are placed (`settle_channels`, `Channel.deltas`):

* **Whole versions** (its producer's state on the driver). A batch that computes a version
  writes the whole table, `(k, v)` rows, as the channel's entry `<batch id>`
  (`outputs._write_channel`, through `values.table_frame`). An empty table writes no entry,
  as an empty optional singleton writes none: the reader keeps the version it has, an
  older one, which a snapshot may read.
* **Deltas** (its producer's state on the executors: Spark's streaming aggregation or the
  executor region, whose value in a batch is the keys the batch updated). The entry of a
  batch is those keys' new values; a keyed aggregate never loses a key, and the steps
  between it and the channel (`KEYWISE_STEPS`: `latest()`, a value `map()` / `inspect()` /
  `filter()`, the IR's `FilterMap`) compute a key's value, or its absence, from that key's
  alone, so the version after the entry is the version before it with those keys replaced,
  added or removed. A key the state updated that a filter now drops is written as a
  **tombstone** (`gone` true, `v` null): the key may have passed before, and the reader
  must remove it (`Channel.gone_from` names the state whose updated keys are the candidates).
  The producer's state then never passes through the driver.
* **Reader.** Of the entries a batch brings, the newest is the version (`latest_table`):
  of whole versions, the rows of the newest entry; of deltas, the version it kept with every
  entry's rows applied in entry order (per key, the row of the highest `_seq`; a tombstone
  there removes the key), computed by the executors. The reader keeps it as Parquet its
  executors write under its own state (`<query>/state/blobs/`), recorded in the versioned
  store by path: a later batch without a new version reads it back from there, neither
  through the driver nor from the producer's entries (which retention removes once every
  reader has read them). A reader batch that brings deltas rewrites the table it keeps:
  O(table) work on the executors.
* **Reader, per key** (`--keyed-state executors` only: under `auto` the Parquet table
  measured faster, at 1M and 10M keys). Deltas read only by lookups whose requests are
  element-wise chains of the reader's inputs, with its state on the executors, skip that
  table: the entries join the reader's executor region as puts
  (`placement._Finder.table_of`; `keyed_state`'s `table` state: the newest entry per key is
  its value, a tombstone clears it), and the lookups read the key's state there, so a batch
  costs its entries and its lookups, not the table (`hydrolite plan` says which form each
  reader keeps).
* **Before a first version.** A keyed aggregation of an unbounded keyed stream (count,
  fold, reduce, first, last; a map or filter of one) is the empty table from the start, in
  the model too (`ir.roles.starts_empty`); any other keyed singleton has no version yet, and the reading tick waits
  for one (`held.py`), as it does for a singleton.

    >>> from hydrolite.planner.spark.channel_versions import VERSIONED
    >>> [k.value for k in VERSIONED]
    ['Singleton', 'OptionalSingleton', 'KeyedSingleton']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...ir import nodes as n
from ...ir.meta import Kind
from ...ir.roles import starts_empty, static_initial
from .stages import where
from .values import KTable, Scalar, SFrame, frame_of

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from .runtime import InputSpec
    from .stages import Plan

__all__ = [
    "KEYWISE_STEPS",
    "PER_KEY_STEPS",
    "VERSIONED",
    "crossings",
    "keep_table",
    "kept_table",
    "read_whole",
    "latest_scalar",
    "latest_table",
    "published_by",
    "settle_channels",
    "updated_tables",
    "whole_table",
    "with_entries",
]

#: the kinds read from another query by version (the reader takes one version, not every element)
VERSIONED = (Kind.SINGLETON, Kind.OPTIONAL, Kind.KEYED_SINGLETON)

#: keyed singleton steps that keep every key and compute each key's value from that key's
#: alone: the keys a version changed, through them, are the keys the result changed
PER_KEY_STEPS = (n.Latest, n.Map, n.Inspect)
#: keyed singleton steps that compute each key's value, or drop the key, from that key's value
#: alone: the keys a version changed, through them, are the keys the result changed or lost
KEYWISE_STEPS = (*PER_KEY_STEPS, n.Filter, n.FilterMap)


def published_by(state: n.Node, u: n.Node, users: Mapping[int, list[n.Node]]) -> list[n.Node] | str | None:
    """For a user `u` of keyed state `state`: the channels out it leads to through
    `KEYWISE_STEPS` (`u is state`: the state itself is one), why it cannot (`crossings`), or
    None when `u` is no such step (a lookup, a snapshot: the caller's to judge)."""
    if u is state:
        return [state]
    if isinstance(u, KEYWISE_STEPS) and u.meta.kind is Kind.KEYED_SINGLETON:
        return crossings(u, users)
    return None


def crossings(x: n.Node, users: Mapping[int, list[n.Node]]) -> list[n.Node] | str:
    """The nodes another query reads (channels out: a node that is its own user in `users`,
    as `placement._Finder` records them) that keyed singleton `x` reaches through
    `KEYWISE_STEPS` only, or why one of its readers below those steps needs more than the
    keys a batch changed (a reader in the query itself)."""
    out: list[n.Node] = []
    todo = [x]
    while todo:
        y = todo.pop()
        for u in users.get(id(y), []):
            if u is y:
                out.append(y)
            elif isinstance(u, KEYWISE_STEPS) and u.meta.kind is Kind.KEYED_SINGLETON:
                todo.append(u)
            else:
                return (
                    f"{y.op}() {where(y)} is read whole by {u.op}() {where(u)} (a batch's value is only the keys it "
                    "updated; only per-key lookups and another query's deltas can read that)"
                )
    return out


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


def latest_table(
    spark: SparkSession, sf: SFrame, inp: InputSpec, state: Any, gone: Column | None = None
) -> KTable | None:
    """The version of keyed singleton input `inp` this batch reads: of whole versions, the
    newest entry among the batch's rows `sf` (ordered by the feed's `_seq`: entry << 32 +
    row); of deltas (`inp.deltas`), the kept version with every entry of the batch applied
    (`gone`: the entries' tombstone flag, a Column over `sf`'s base); without a new entry,
    the version an earlier batch kept, else the empty table when it starts empty; None: no
    version yet."""
    assert inp.node is not None and inp.kt is not None and len(sf.order) == 1
    key, seq = f"input:{inp.name}", F.col(sf.order[0])
    newest = sf.df.agg(F.max(seq)).collect()[0][0]
    table = kept_table(spark, state, key)  # (reads of `state` see the previous batch's versions)
    if newest is not None:
        if inp.deltas:  # per key, the row of the newest entry that has the key; the kept row else
            dead = F.coalesce(gone, F.lit(False)) if gone is not None else F.lit(False)
            entries = sf.select(
                sf.col("k").alias("k"), sf.col("v").alias("v"), dead.alias("gone"), sf.col(sf.order[0]).alias("_q")
            )
            rows = with_entries(table, entries)
        else:
            rows = sf.df.filter(seq >= F.lit((int(newest) >> 32) << 32)).select("k", "v")
        table = keep_table(spark, state, key, rows)
    if table is None:
        if not starts_empty(inp.node):
            return None
        return KTable(inp.kt, inp.vt, frame_of(spark, [], inp.vt, [], inp.kt, ordered=False))
    return KTable(inp.kt, inp.vt, SFrame(table, inp.vt, inp.kt))


def read_whole(readers: list[n.Node]) -> str:
    """How a keyed state on the executors is read whole by `readers` of its own query (its
    reason in `hydrolite plan`; the copy: `keep_table`)."""
    by = ", ".join(f"{x.op}() {where(x)}" for x in readers)
    return (
        f"read whole by {by}: each batch's updated keys are applied to a copy of the table the executors keep as "
        "Parquet under <query>/state/blobs/ (O(table) per batch, as reading it whole is; never through the driver)"
    )


def kept_table(spark: SparkSession, state: Any, key: str) -> DataFrame | None:
    """The `(k, v)` table kept under `key` by an earlier batch (`keep_table`), or None."""
    found, kept = state.get(key, b"table")
    if not found:
        return None
    path, schema = kept
    return spark.read.schema(T.StructType.fromJson(schema)).parquet(path)


def with_entries(table: DataFrame | None, entries: DataFrame) -> DataFrame:
    """`table` (`k`, `v`; None: empty) with `entries` (`k`, `v`, `gone`, `_q`) applied: per
    key, the entry of the highest `_q` is its value, or its removal when `gone`."""
    rows = entries
    if table is not None:
        rows = table.select("k", "v", F.lit(False).alias("gone"), F.lit(-1).cast("long").alias("_q")).unionByName(rows)
    newest_row = F.max_by(F.struct("v", "gone"), "_q")
    return rows.groupBy("k").agg(newest_row.alias("x")).filter(~F.col("x.gone")).select("k", F.col("x.v").alias("v"))


def keep_table(spark: SparkSession, state: Any, key: str, rows: DataFrame) -> DataFrame:
    """Write `rows` as this batch's version of the table kept under `key` (Parquet the
    executors write under the query's state; the driver records only the path) and read it
    back. A replay of the batch writes the same rows to the same directory."""
    path = state.blob_dir(key)
    rows.write.mode("overwrite").parquet(path)
    state.put(key, (path, rows.schema.jsonValue()), b"table")
    state.put_blob(key, path)  # older versions' directories go when the batch commits
    return spark.read.schema(rows.schema).parquet(path)


def updated_tables(batch: DataFrame, conditions: dict[str, Any]) -> dict[str, bool]:
    """Whether any row of `batch` meets each condition (the rows of a state read whole that
    its batch updated; the keys are its kept table's): one Spark job for all of them, where
    one emptiness check per state was one job each (tests/spark/test_whole_reads.py counts it).
    """
    if not conditions:
        return {}
    keys = list(conditions)
    row = batch.agg(*[F.bool_or(conditions[k]).alias(f"_u{j}") for j, k in enumerate(keys)]).collect()[0]
    return {k: bool(row[j]) for j, k in enumerate(keys)}  # (no rows at all: None, not updated)


def whole_table(spark: SparkSession, state: Any, key: str, updated: DataFrame, unchanged: bool) -> DataFrame:
    """A keyed aggregate's whole table after this batch: the table kept under `key` by the
    batch before, with the keys the batch `updated` (`k`, `v`) replaced or added (an
    aggregate never loses a key). The executors write it as Parquet under the query's state
    (`keep_table`; the driver keeps the path); a batch that updated no key
    (`unchanged`) reads the kept one."""
    kept = kept_table(spark, state, key)
    if unchanged:
        return kept if kept is not None else updated  # (nothing kept yet: the empty table)
    entries = updated.select("k", "v", F.lit(False).alias("gone"), F.lit(0).cast("long").alias("_q"))
    return keep_table(spark, state, key, with_entries(kept, entries))


def settle_channels(plan: Plan) -> None:
    """Decide how each keyed singleton read by another query crosses (`Channel.deltas`): as
    deltas when its producer keeps the state where a batch's value is only the keys it
    updated (Spark's streaming aggregation, the executor region), through `KEYWISE_STEPS`
    only; whole versions otherwise. With a `filter` / `filter_map` among those steps, the
    state's updated keys the channel's value lacks are written as tombstones
    (`Channel.gone_from`: that state)."""
    for ch in plan.channels:
        ch.deltas, ch.gone_from = False, None
        if ch.node.meta.kind is not Kind.KEYED_SINGLETON:
            continue
        stage = plan.stages[ch.producer]
        if stage.placement is None:
            continue
        x: n.Node = ch.node
        drops = False
        while True:
            placed = stage.placement.of(x)  # (a version read from another query is no state of this one)
            if (
                placed is not None
                and placed.table is None
                and not placed.tick_table
                and (placed.executors or placed.native)
            ):
                ch.deltas = True
                ch.gone_from = x if drops else None
                break
            if not isinstance(x, KEYWISE_STEPS):
                break  # (a placement puts no state behind any other step on the executors)
            drops = drops or not isinstance(x, PER_KEY_STEPS)
            x = x.input
