"""Python's equality on the driver path's DataFrames, for values Spark holds pickled.

Spark compares a pickled value (a type hydrolite has no column type for: `-> object`, a union
of kinds, a plain class) by its bytes, so `1`, `1.0` and `True`, or `0` and `-0.0`, are
several values to a `groupBy`, a `distinct()` or a window, and one value to the simulator's
dicts and sets. Every operator that groups or deduplicates such values groups them by a
column of their `grouping.group_bytes` instead (`group_columns`): equal in Python, equal
bytes. What an operator emits keeps the form the simulator shows: an element's own form, or
for a group, the form that came first in the stream's order (`first_form`).

Typed columns (ints, strings, tuples of them) are compared as they are: Spark's equality is
Python's there (`grouping.py`, "Which keys are one key" in the README), and no column is added.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .pyfn import equality_bytes, map_in_arrow
from .types import HType, has_opaque
from .values import SFrame


def compared(df: DataFrame, col: str, t: HType) -> tuple[DataFrame, str]:
    """`df` and the column its `col` (of type `t`) is compared by: itself, or for values with
    pickled parts a column of their `grouping.group_bytes` — Python's equality, where the
    pickles of `1` and `1.0`, or of two equal frozensets, differ."""
    if not has_opaque(t):
        return df, col
    name = f"_eq{col}"
    schema = T.StructType([*df.schema.fields, T.StructField(name, T.BinaryType(), True)])
    return map_in_arrow(df, equality_bytes(col, name, t), schema), name


def group_columns(sf: SFrame, df: DataFrame, key: bool = True, value: bool = False) -> tuple[DataFrame, list[str]]:
    """`df` (rows of `sf`) and the columns that group its rows as Python's equality groups
    their key (`key`) and / or value (`value`)."""
    cols: list[str] = []
    if key and sf.kt is not None:
        df, c = compared(df, "k", sf.kt)
        cols.append(c)
    if value:
        df, c = compared(df, "v", sf.vt)
        cols.append(c)
    return df, cols


def first_form(sf: SFrame, col: str) -> Column:
    """An aggregate Column: of a group's rows, `col` of the row first in `sf`'s order (any
    row's without an order) — the form a Python dict keeps for a key it met in several."""
    if not sf.order:
        return F.first(col)
    return F.min_by(col, F.struct(*[F.col(c) for c in sf.order]))


def first_occurrences(sf: SFrame, df: DataFrame | None = None) -> DataFrame:
    """The rows of `df` (default: `sf.df`, with `sf`'s columns) holding the first occurrence of
    each element (each (key, value) pair when keyed) in `sf`'s order, elements equal in Python
    being one element; any one of them without an order."""
    df = sf.df if df is None else df
    df, by = group_columns(sf, df, key=sf.keyed, value=True)
    added = [c for c in by if c not in ("k", "v")]
    if not sf.order:
        return df.dropDuplicates(by).drop(*added)
    w = row_index(sf, by)
    return df.withColumn("_first", w).filter(F.col("_first") == 0).drop("_first", *added)


def row_index(sf: SFrame, partition: list[str]) -> Column:
    """0, 1, ... in the stream's order (within each partition of the columns `partition`)."""
    order = [F.col(c) for c in sf.order] or [F.col("v")]
    w = Window.partitionBy(*partition).orderBy(*order) if partition else Window.orderBy(*order)
    return F.row_number().over(w) - 1


def by_key(sf: SFrame, df: DataFrame, by: list[str], *aggs: Column) -> DataFrame:
    """`df`'s rows grouped by the columns `by` (of `group_columns(sf, ..)`): per key, `k` (the
    form that came first) and `aggs`."""
    if by == ["k"]:
        return df.groupBy("k").agg(*aggs)
    return df.groupBy(*by).agg(first_form(sf, "k").alias("k"), *aggs).drop(*by)
