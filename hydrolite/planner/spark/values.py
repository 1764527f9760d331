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
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .state import BatchState
from .types import HType


@dataclass
class SFrame:
    """A stream's elements in this batch."""

    df: DataFrame
    vt: HType
    kt: HType | None = None
    order: tuple[str, ...] = ()

    @property
    def keyed(self) -> bool:
        return self.kt is not None

    def cols(self) -> list[str]:
        return [*self.order, *(["k"] if self.keyed else []), "v"]

    def with_df(
        self, df: DataFrame, vt: HType | None = None, kt: HType | None = None, order: tuple[str, ...] | None = None
    ) -> SFrame:
        return SFrame(
            df, self.vt if vt is None else vt, self.kt if kt is None else kt, self.order if order is None else order
        )

    def unordered(self) -> SFrame:
        return SFrame(self.df.select(*(["k"] if self.keyed else []), "v"), self.vt, self.kt, ())

    def order_col(self) -> Any:
        """One Column ordering the elements (a struct of the order columns), or None."""
        if not self.order:
            return None
        if len(self.order) == 1:
            return F.col(self.order[0])
        return F.struct(*[F.col(c) for c in self.order])


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
        found = self.state.get_many(self.node, missing)
        found.update({k: self.updates[k] for k in keys if k in self.updates})
        out: dict[Any, Any] = {}
        for k, v in found.items():
            keep, v2 = self._view(k, v)
            if keep:
                out[k] = v2
        return out

    def with_transform(self, tf: Callable[[Any, Any], tuple[bool, Any]], vt: HType) -> KTable:
        return KTable(self.kt, vt, None, self.node, self.state, self.updates, self.deleted, [*self.transforms, tf])


Val = SFrame | Scalar | KTable


def frame_of(
    spark: SparkSession,
    values: list[Any],
    vt: HType,
    keys: list[Any] | None = None,
    kt: HType | None = None,
    ordered: bool = True,
) -> SFrame:
    """An SFrame built from Python values held by the driver (through one Arrow table)."""
    cols: dict[str, Any] = {}
    fields: list[Any] = []
    if ordered:
        cols["_o0"] = pa.array(range(len(values)), type=pa.int64())
        fields.append(pa.field("_o0", pa.int64()))
    if keys is not None:
        assert kt is not None
        cols["k"] = pa.array([kt.encode(k) for k in keys], type=kt.arrow())
        fields.append(pa.field("k", kt.arrow()))
    cols["v"] = pa.array([vt.encode(v) for v in values], type=vt.arrow())
    fields.append(pa.field("v", vt.arrow()))
    table = pa.Table.from_pydict(cols, schema=pa.schema(fields))
    df = spark.createDataFrame(table)
    return SFrame(df, vt, kt, ("_o0",) if ordered else ())


def table_frame(spark: SparkSession, table: KTable) -> SFrame:
    """A keyed singleton as a DataFrame of (k, v)."""
    if table.frame is not None:
        return table.frame
    items = table.items()
    return frame_of(spark, [v for _, v in items], table.vt, [k for k, _ in items], table.kt, ordered=False)
