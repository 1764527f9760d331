"""User functions that do not translate run as Python over Arrow record batches.

Every function here returns a callable for `DataFrame.mapInArrow` or
`GroupedData.applyInArrow`: Spark ships Arrow batches to a Python worker, the element
column is decoded once per batch (`to_pylist` + `HType.decode`), the user function is
called per element, and the results are encoded back into one Arrow array. No
row-at-a-time `@udf` is ever used.

A failing function (or a result of the wrong type) raises `UserFunctionError` naming the
operator, the user's file:line, the element and the batch id.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from .errors import UserFunctionError
from .types import HType

ArrowFn = Callable[[Iterator[Any]], Iterator[Any]]
_PANDAS_NOTE = "PySpark does not yet fully support pandas"  # Arrow functions do not use pandas


def map_in_arrow(df: DataFrame, fn: ArrowFn, schema: StructType | str) -> DataFrame:
    """`df.mapInArrow(fn, schema)`, without PySpark's pandas-version warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PANDAS_NOTE)
        return df.mapInArrow(fn, schema)


def apply_in_arrow(df: DataFrame, key: str, fn: Callable[[Any], Any], schema: StructType) -> DataFrame:
    """`df.groupBy(key).applyInArrow(fn, schema)`, without PySpark's pandas-version warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PANDAS_NOTE)
        return df.groupBy(key).applyInArrow(fn, schema)


@dataclass(frozen=True)
class FnSite:
    """What an error inside a worker must say about where it happened."""

    op: str
    file: str
    line: int
    batch_id: int
    stage: str

    fn_at: str = ""  # where the function itself is defined, when not on the operator's line

    def fail(self, element: object, exc: BaseException) -> UserFunctionError:
        return UserFunctionError(self.op, self.file, self.line, element, self.batch_id, self.stage, exc, self.fn_at)


def _call(site: FnSite, f: Callable[..., Any], *args: Any) -> Any:
    try:
        return f(*args)
    except Exception as exc:  # reported with the operator, line, element and batch
        raise site.fail(args[0] if len(args) == 1 else args, exc) from exc


def _encode_array(site: FnSite, t: HType, values: list[Any], elements: list[Any]) -> Any:
    try:
        return pa.array([t.encode(v) for v in values], type=t.arrow())
    except (TypeError, ValueError, pa.ArrowException):
        for v, x in zip(values, elements):  # find the element whose result does not fit
            try:
                pa.array([t.encode(v)], type=t.arrow())
            except (TypeError, ValueError, pa.ArrowException) as exc:
                raise site.fail(x, TypeError(f"result {v!r} is not a {t.describe()}: {exc}")) from exc
        raise


def _replace(batch: Any, name: str, array: Any) -> Any:
    i = batch.schema.get_field_index(name)
    return batch.set_column(i, pa.field(name, array.type), array)


def elementwise(kind: str, f: Callable[..., Any], in_t: HType, out_t: HType, site: FnSite, extra_order: str | None = None) -> ArrowFn:
    """map / filter / filter_map / flat_map / inspect over the `v` column (other columns pass through)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for rb in batches:
            xs = [in_t.decode(x) for x in rb.column(rb.schema.get_field_index("v")).to_pylist()]
            if kind == "inspect":
                for x in xs:
                    _call(site, f, x)
                yield rb
            elif kind == "map":
                ys = [_call(site, f, x) for x in xs]
                yield _replace(rb, "v", _encode_array(site, out_t, ys, xs))
            elif kind == "filter":
                mask = [bool(_call(site, f, x)) for x in xs]
                yield rb.filter(pa.array(mask, type=pa.bool_()))
            elif kind == "filter_map":
                ys = [_call(site, f, x) for x in xs]
                keep = [i for i, y in enumerate(ys) if y is not None]
                out = rb.take(pa.array(keep, type=pa.int64()))
                yield _replace(out, "v", _encode_array(site, out_t, [ys[i] for i in keep], [xs[i] for i in keep]))
            elif kind == "flat_map":
                idx: list[int] = []
                pos: list[int] = []
                ys = []
                for i, x in enumerate(xs):
                    for j, y in enumerate(_iterate(site, f, x)):
                        idx.append(i)
                        pos.append(j)
                        ys.append(y)
                taken = rb.take(pa.array(idx, type=pa.int64()))
                names = [c for c in taken.schema.names if c != "v"]
                arrays = [taken.column(taken.schema.get_field_index(c)) for c in names]
                if extra_order is not None:  # the declared schema has the position before `v`
                    names.append(extra_order)
                    arrays.append(pa.array(pos, type=pa.int64()))
                names.append("v")
                arrays.append(_encode_array(site, out_t, ys, [xs[i] for i in idx]))
                yield pa.RecordBatch.from_arrays(arrays, names=names)
            else:
                raise ValueError(kind)

    return run


def _iterate(site: FnSite, f: Callable[..., Any], x: Any) -> list[Any]:
    try:
        return list(f(x))
    except Exception as exc:  # reported with the operator, line, element and batch
        raise site.fail(x, exc) from exc


def sort_whole(key: Callable[[Any], Any] | None, in_t: HType, site: FnSite, order_cols: list[str], out_col: str) -> ArrowFn:
    """Sort one partition holding the whole batch by a Python key; emit the rank as `out_col`."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        rbs = list(batches)
        if not rbs:
            return
        table = pa.Table.from_batches(rbs)
        if order_cols:
            table = table.sort_by([(c, "ascending") for c in order_cols])
        xs = [in_t.decode(x) for x in table.column("v").to_pylist()]
        keys = [_call(site, key, x) if key is not None else x for x in xs]
        try:
            ranks = sorted(range(len(xs)), key=lambda i: keys[i])
        except TypeError as exc:
            raise site.fail(xs[0] if xs else None, exc) from exc
        out = table.take(pa.array(ranks, type=pa.int64()))
        out = out.append_column(out_col, pa.array(range(len(ranks)), type=pa.int64()))
        yield from out.to_batches()

    return run


def fold_global(f: Callable[[Any, Any], Any], start: Any, has_start: bool, in_t: HType, site: FnSite, order_cols: list[str]) -> ArrowFn:
    """A sequential fold of one partition holding the whole batch; emits one pickled accumulator."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        rbs = list(batches)
        acc, has = start, has_start
        n = 0
        if rbs:
            table = pa.Table.from_batches(rbs)
            if order_cols:
                table = table.sort_by([(c, "ascending") for c in order_cols])
            for raw in table.column("v").to_pylist():
                x = in_t.decode(raw)
                acc = _call(site, f, acc, x) if has else x
                has = True
                n += 1
        yield pa.RecordBatch.from_pydict({"acc": [pickle.dumps(acc, protocol=5)], "n": [n]}, schema=pa.schema([("acc", pa.binary()), ("n", pa.int64())]))

    return run


def fold_keyed(f: Callable[[Any, Any], Any], starts: dict[Any, Any], init: Any, has_init: bool, kt: HType, in_t: HType, site: FnSite, order_cols: list[str]) -> Callable[[Any], Any]:
    """Per key (one Arrow table per group): fold this batch's values from the stored accumulator."""

    def run(table: Any) -> Any:
        if order_cols:
            table = table.sort_by([(c, "ascending") for c in order_cols])
        keys = table.column("k").to_pylist()
        if not keys:
            return pa.table({"k": pa.array([], type=kt.arrow()), "acc": pa.array([], type=pa.binary())})
        key = kt.decode(keys[0])
        if key in starts:
            acc, has = starts[key], True
        else:
            acc, has = init, has_init
        for raw in table.column("v").to_pylist():
            x = in_t.decode(raw)
            acc = _call(site, f, acc, x) if has else x
            has = True
        return pa.table({"k": pa.array([keys[0]], type=kt.arrow()), "acc": pa.array([pickle.dumps(acc, protocol=5)], type=pa.binary())})

    return run


def split_pairs(in_t: HType, site: FnSite) -> ArrowFn:
    """Split elements that are (key, value) pairs into pickled `k` and `v` columns."""
    from .types import OPAQUE

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for rb in batches:
            xs = [in_t.decode(x) for x in rb.column(rb.schema.get_field_index("v")).to_pylist()]
            ks, vs = [], []
            for x in xs:
                try:
                    k, v = x
                except (TypeError, ValueError) as exc:
                    raise site.fail(x, TypeError(f"expected a (key, value) pair: {exc}")) from exc
                ks.append(OPAQUE.encode(k))
                vs.append(OPAQUE.encode(v))
            out = rb.drop_columns(["v"]) if hasattr(rb, "drop_columns") else rb.select([c for c in rb.schema.names if c != "v"])
            out = out.append_column("k", pa.array(ks, type=pa.binary()))
            yield out.append_column("v", pa.array(vs, type=pa.binary()))

    return run


def reencode(columns: dict[str, tuple[HType, HType]]) -> ArrowFn:
    """Re-encode named columns from one HType to another (e.g. typed -> pickled); others pass through."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for rb in batches:
            for name, (src, dst) in columns.items():
                values = [dst.encode(src.decode(x)) for x in rb.column(rb.schema.get_field_index(name)).to_pylist()]
                rb = _replace(rb, name, pa.array(values, type=dst.arrow()))
            yield rb

    return run
