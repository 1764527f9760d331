"""What one IR node evaluates to inside one micro-batch.

* `SFrame` — a stream (keyed or not): a DataFrame of this batch's elements, with columns
  `k` (keyed only), `v` and the order columns (`order`, empty for NoOrder streams). For a
  tick-bounded stream it is the tick's batch; for a top-level or carried stream it is the
  delta that reached the node in this micro-batch.
* `Scalar` — a singleton or optional singleton: a Python value held by the driver (the
  current value for top-level / carried singletons, this tick's value inside a tick).
* `KTable` — a keyed singleton: either a DataFrame of (k, v) (computed in this tick) or a
  view of the versioned state store (carried keyed folds), read only where needed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from .state import BatchState
from .types import OPAQUE, HType, OpaqueT, exact_numbers, has_opaque


class SFrame:
    """A stream's elements in this batch: a DataFrame with the order columns, `k` (keyed
    streams only) and `v`.

    A frame may be *pending*: the rows of a base DataFrame where a condition holds,
    projected onto Column expressions over that base, with no DataFrame built yet. Each
    DataFrame transformation costs an analysis in the JVM over Py4J (10 to 50 ms here, as
    much as a small batch's whole Spark job), so the element-wise operators whose functions
    translate to Columns, `entries` / `values` and the native aggregations' answers compose
    into one pending projection, and `df` (or `select`) builds it once, when something
    needs a DataFrame. Spark's optimizer collapses adjacent projections and filters the same
    way, so the rows and values are those of the step-by-step plan; only the plan-building
    cost goes.

    Expressions built with `col(name)` are valid over the base; expressions built with
    `F.col(name)` are valid over `df`. For example (`sf` keyed, with no order columns):

        doubled = SFrame.pending(sf.base, {"k": sf.col("k"), "v": sf.col("v") * 2}, sf.vt, sf.kt, where=sf.where)
        doubled.select(doubled.col("k"), doubled.col("v") + 1)  # one select over the base
    """

    __slots__ = ("vt", "kt", "order", "base", "where", "_exprs", "_df")

    def __init__(self, df: DataFrame, vt: HType, kt: HType | None = None, order: tuple[str, ...] = ()) -> None:
        self.vt, self.kt, self.order = vt, kt, order
        #: the DataFrame the pending expressions and condition are over (`df` itself when not pending)
        self.base = df
        #: the pending row condition over `base` (None: every row)
        self.where: Column | None = None
        self._exprs: dict[str, Column] | None = None  # column name -> its expression over `base`
        self._df: DataFrame | None = df

    @classmethod
    def pending(
        cls,
        base: DataFrame,
        exprs: dict[str, Column],
        vt: HType,
        kt: HType | None = None,
        order: tuple[str, ...] = (),
        where: Column | None = None,
    ) -> SFrame:
        """The rows of `base` where `where` holds, as the columns `exprs` (each over `base`);
        `exprs` names exactly the frame's columns (`cols()`)."""
        sf = cls(base, vt, kt, order)
        assert sorted(exprs) == sorted(sf.cols()), (sorted(exprs), sf.cols())
        sf.where, sf._exprs, sf._df = where, dict(exprs), None
        return sf

    @property
    def df(self) -> DataFrame:
        """The frame as a DataFrame (built on first use when pending)."""
        if self._df is None:
            self._df = self.select(*(self.col(c).alias(c) for c in self.cols()))
        return self._df

    @property
    def keyed(self) -> bool:
        return self.kt is not None

    def cols(self) -> list[str]:
        return [*self.order, *(["k"] if self.keyed else []), "v"]

    def col(self, name: str) -> Column:
        """Column `name` of the frame as an expression over `base`."""
        return F.col(name) if self._exprs is None else self._exprs[name]

    def rows(self) -> DataFrame:
        """`base`'s rows where the pending condition holds (its columns, not the frame's)."""
        return self.base if self.where is None else self.base.filter(self.where)

    def select(self, *cols: Column | str) -> DataFrame:
        """One DataFrame of `cols` (built with `col`) over the frame's rows."""
        return self.rows().select(*cols)

    def project(
        self, exprs: dict[str, Column], vt: HType, kt: HType | None = None, order: tuple[str, ...] = ()
    ) -> SFrame:
        """A pending frame of `exprs` (built with `col`) over this frame's rows."""
        return SFrame.pending(self.base, exprs, vt, kt, order, self.where)

    def filtered(self, cond: Column) -> SFrame:
        """The frame's elements where `cond` (built with `col`) holds, still pending."""
        if self._exprs is None:  # a filter alone: one DataFrame, as before
            return self.with_df(self.base.filter(cond))
        where = cond if self.where is None else self.where & cond
        return SFrame.pending(self.base, self._exprs, self.vt, self.kt, self.order, where)

    def with_value(self, v: Column, vt: HType, keyed: bool = True, ordered: bool = True) -> SFrame:
        """A pending frame of the same elements with value `v` (built with `col`), keeping the
        key (unless not `keyed`) and the order columns (unless not `ordered`)."""
        kt = self.kt if keyed else None
        order = self.order if ordered else ()
        keep = [*order, *(["k"] if kt is not None else [])]
        return self.project({c: self.col(c) for c in keep} | {"v": v}, vt, kt, order)

    def with_df(
        self, df: DataFrame, vt: HType | None = None, kt: HType | None = None, order: tuple[str, ...] | None = None
    ) -> SFrame:
        return SFrame(
            df, self.vt if vt is None else vt, self.kt if kt is None else kt, self.order if order is None else order
        )

    def unordered(self) -> SFrame:
        return self.with_value(self.col("v"), self.vt, ordered=False)

    def order_col(self) -> Any:
        """One Column ordering the elements (a struct of the order columns) over `df`, or None."""
        if not self.order:
            return None
        if len(self.order) == 1:
            return F.col(self.order[0])
        return F.struct(*[F.col(c) for c in self.order])

    def __repr__(self) -> str:
        state = "pending" if self._df is None else "built"
        return f"SFrame({state}, vt={self.vt}, kt={self.kt}, order={self.order})"


@dataclass
class Scalar:
    """A (possibly absent) singleton value."""

    present: bool
    value: Any
    t: HType

    @staticmethod
    def empty(t: HType) -> Scalar:
        return Scalar(False, None, t)


@dataclass
class KTable:
    """A keyed singleton: a map from key to value.

    Exactly one of `frame` (a DataFrame of k, v) or `node` (a state-store key) is set; a
    store-backed table overlays this batch's `updates` on the stored versions and applies
    `transforms` (map/filter of the values) in Python as it reads.
    """

    kt: HType
    vt: HType
    frame: SFrame | None = None
    node: str | None = None
    state: BatchState | None = None
    updates: dict[Any, Any] = field(default_factory=dict)
    deleted: set[Any] = field(default_factory=set)
    transforms: list[Callable[[Any, Any], tuple[bool, Any]]] = field(default_factory=list)
    #: `vt` is a guess from values (a Python fold's accumulators, no declared type): a value of
    #: another kind keeps the table's frame pickled rather than converted (`frame_of(exact=)`)
    guessed: bool = False

    def _view(self, key: Any, value: Any) -> tuple[bool, Any]:
        keep = True
        for tf in self.transforms:
            keep, value = tf(key, value)
            if not keep:
                break
        return keep, value

    def items(self) -> list[tuple[Any, Any]]:
        """Every (key, value) of a store-backed table, as the driver sees it."""
        assert self.node is not None and self.state is not None
        merged = {k: v for k, v in self.state.scan(self.node) if k not in self.deleted}
        merged.update(self.updates)
        out: list[tuple[Any, Any]] = []
        for k, v in merged.items():
            keep, v2 = self._view(k, v)
            if keep:
                out.append((k, v2))
        return out

    def lookup(self, keys: list[Any]) -> dict[Any, Any]:
        """The values of the given keys (absent keys are left out)."""
        assert self.node is not None and self.state is not None
        missing = [k for k in keys if k not in self.updates and k not in self.deleted]
        found = self.state.get_many(self.node, missing, has_opaque(self.kt))  # (pickled keys: by value)
        found.update({k: self.updates[k] for k in keys if k in self.updates})
        out: dict[Any, Any] = {}
        for k, v in found.items():
            keep, v2 = self._view(k, v)
            if keep:
                out[k] = v2
        return out

    def with_transform(self, tf: Callable[[Any, Any], tuple[bool, Any]], vt: HType, guessed: bool = False) -> KTable:
        return KTable(
            self.kt, vt, None, self.node, self.state, self.updates, self.deleted, [*self.transforms, tf], guessed
        )


Val = SFrame | Scalar | KTable


def frame_of(
    spark: SparkSession,
    values: list[Any],
    vt: HType,
    keys: list[Any] | None = None,
    kt: HType | None = None,
    ordered: bool = True,
    exact: bool = False,
) -> SFrame:
    """An SFrame built from Python values held by the driver (through one Arrow table).

    With `exact` (`vt` is a guess from some of the values), a value of another numeric kind
    than `vt` (`1` where it says float, `True` where it says int) makes the frame's values
    pickled, each kept as it is, instead of converted: the simulator holds them as they are."""
    encoded: list[Any] | None = None
    if exact and not isinstance(vt, OpaqueT):
        try:
            with exact_numbers():
                encoded = [vt.encode(v) for v in values]
        except TypeError:
            vt = OPAQUE
    cols: dict[str, Any] = {}
    fields: list[Any] = []
    if ordered:
        cols["_o0"] = pa.array(range(len(values)), type=pa.int64())
        fields.append(pa.field("_o0", pa.int64()))
    if keys is not None:
        assert kt is not None
        cols["k"] = pa.array([kt.encode(k) for k in keys], type=kt.arrow())
        fields.append(pa.field("k", kt.arrow()))
    cols["v"] = pa.array(encoded if encoded is not None else [vt.encode(v) for v in values], type=vt.arrow())
    fields.append(pa.field("v", vt.arrow()))
    table = pa.Table.from_pydict(cols, schema=pa.schema(fields))
    df = spark.createDataFrame(table)
    return SFrame(df, vt, kt, ("_o0",) if ordered else ())


def table_frame(spark: SparkSession, table: KTable) -> SFrame:
    """A keyed singleton as a DataFrame of (k, v)."""
    if table.frame is not None:
        return table.frame
    items = table.items()
    return frame_of(
        spark, [v for _, v in items], table.vt, [k for k, _ in items], table.kt, ordered=False, exact=table.guessed
    )
