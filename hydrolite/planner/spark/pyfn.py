"""User functions that do not translate run as Python over Arrow record batches.

Every function here returns a callable for `DataFrame.mapInArrow` or
`GroupedData.applyInArrow`: Spark ships Arrow batches to a Python worker, the element
column is decoded once per batch (`to_pylist` + `HType.decode`), the operator's kernel
(`hydrolite.kernels`, the definition the simulator runs too) computes the results, and
they are encoded back into one Arrow array. This module is only that plumbing: no
operator semantics are written here. No row-at-a-time `@udf` is ever used.

A failing function (`KernelError` from the kernel, or a result of the wrong type) raises
`UserFunctionError` naming the operator, the user's file:line, the element and the batch id.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import chain, compress
from typing import Any, NamedTuple

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ... import kernels
from ...kernels import KernelError
from .errors import UserFunctionError
from .grouping import group_bytes
from .types import HType, exact_numbers

ArrowFn = Callable[[Iterator[Any]], Iterator[Any]]
PANDAS_NOTE = "PySpark does not yet fully support pandas"  # Arrow functions do not use pandas


def map_in_arrow(df: DataFrame, fn: ArrowFn, schema: StructType | str) -> DataFrame:
    """`df.mapInArrow(fn, schema)`, without PySpark's pandas-version warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PANDAS_NOTE)
        return df.mapInArrow(fn, schema)


def apply_in_arrow(df: DataFrame, key: str, fn: Callable[[Any], Any], schema: StructType) -> DataFrame:
    """`df.groupBy(key).applyInArrow(fn, schema)`, without PySpark's pandas-version warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PANDAS_NOTE)
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


def _failed(site: FnSite, e: KernelError) -> UserFunctionError:
    """The worker's error for a failing kernel (raise it `from e.cause`)."""
    return site.fail(e.element, e.cause)


#: how to fix a result that does not fit the column its function's results are stored in
ONE_TYPE_FIX = (
    "fix: return values of one type (e.g. `float(...)` or `int(...)` throughout), or make it a `def` whose return "
    "annotation names the types it returns (`-> int | bool`, `-> object`; a flat_map()'s items: `-> list[object]`): "
    "each result is then kept exactly as it is"
)


def misfit(v: Any, t: HType, exc: Exception) -> TypeError:
    """The error for a user function's result `v` that does not fit `t`, its results' type on
    Spark (`exc`: why), with the fix."""
    return TypeError(
        f"result {v!r} does not fit {t.describe()}, the type its results have on Spark: {exc}; {ONE_TYPE_FIX}"
    )


def _encode_array(site: FnSite, t: HType, values: list[Any], elements: list[Any]) -> Any:
    """The results of a user's function as an Arrow array of type `t`; one of another type
    (under `types.exact_numbers`, another numeric kind too) fails naming its element."""
    try:
        return pa.array([t.encode(v) for v in values], type=t.arrow())
    except (TypeError, ValueError, pa.ArrowException):
        for v, x in zip(values, elements):  # find the element whose result does not fit
            try:
                pa.array([t.encode(v)], type=t.arrow())
            except (TypeError, ValueError, pa.ArrowException) as exc:
                raise site.fail(x, misfit(v, t, exc)) from exc
        raise


def _replace(batch: Any, name: str, array: Any) -> Any:
    i = batch.schema.get_field_index(name)
    return batch.set_column(i, pa.field(name, array.type), array)


def _decode_v(rb: Any, in_t: HType) -> list[Any]:
    return [in_t.decode(x) for x in rb.column(rb.schema.get_field_index("v")).to_pylist()]


def _keyed_failure(site: FnSite, e: KernelError, rb: Any, kt: HType | None) -> UserFunctionError:
    """A failure on a keyed frame's value names the (key, value) pair, as the keyed kernels do."""
    i = rb.schema.get_field_index("k")
    if kt is None or i < 0 or e.index < 0:
        return _failed(site, e)
    return site.fail((kt.decode(rb.column(i)[e.index].as_py()), e.element), e.cause)


def elementwise(
    kind: str,
    f: Callable[..., Any],
    in_t: HType,
    out_t: HType,
    site: FnSite,
    extra_order: str | None = None,
    kt: HType | None = None,
    exact: bool = False,
) -> ArrowFn:
    """map / filter / filter_map / flat_map / inspect over the `v` column (other columns pass
    through): the operator's kernel (`hydrolite.kernels`) on the decoded values. For a keyed
    frame, pass `kt` so that a failure names the (key, value) pair like the simulator's. With
    `exact` (`out_t` is a trial call's guess) a result of another numeric kind than `out_t`'s
    fails rather than being converted (`types.exact_numbers`)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for rb in batches:
            try:
                with exact_numbers() if exact else nullcontext():
                    out = _one_batch(kind, f, rb, _decode_v(rb, in_t), out_t, site, extra_order)
            except KernelError as e:
                raise _keyed_failure(site, e, rb, kt) from e.cause
            yield out

    return run


def _one_batch(
    kind: str, f: Callable[..., Any], rb: Any, xs: list[Any], out_t: HType, site: FnSite, extra_order: str | None
) -> Any:
    if kind == "inspect":
        kernels.inspect_values(f, xs)
        return rb
    if kind == "map":
        return _replace(rb, "v", _encode_array(site, out_t, kernels.map_values(f, xs), xs))
    if kind == "filter":
        return rb.filter(pa.array(kernels.filter_mask(f, xs), type=pa.bool_()))
    if kind == "filter_map":
        kept, ys = kernels.filter_map_results(f, xs)
        out = rb.filter(pa.array(kept, type=pa.bool_()))
        return _replace(out, "v", _encode_array(site, out_t, list(compress(ys, kept)), list(compress(xs, kept))))
    if kind == "flat_map":
        groups = kernels.flat_map_groups(f, xs)
        idx = [i for i, ys in enumerate(groups) for _ in ys]
        taken = rb.take(pa.array(idx, type=pa.int64()))
        names = [c for c in taken.schema.names if c != "v"]
        arrays = [taken.column(taken.schema.get_field_index(c)) for c in names]
        if extra_order is not None:  # the declared schema has the position before `v`
            names.append(extra_order)
            arrays.append(pa.array([j for ys in groups for j in range(len(ys))], type=pa.int64()))
        names.append("v")
        arrays.append(_encode_array(site, out_t, list(chain.from_iterable(groups)), [xs[i] for i in idx]))
        return pa.RecordBatch.from_arrays(arrays, names=names)
    raise ValueError(kind)


def _whole_table(batches: Iterator[Any], order_cols: list[str]) -> Any:
    """One partition's batches as one table, in the stream's order (None when empty)."""
    rbs = list(batches)
    if not rbs:
        return None
    table = pa.Table.from_batches(rbs)
    return table.sort_by([(c, "ascending") for c in order_cols]) if order_cols else table


def sort_whole(
    key: Callable[[Any], Any] | None, in_t: HType, site: FnSite, order_cols: list[str], out_col: str
) -> ArrowFn:
    """Sort one partition holding the whole batch by a Python key (`kernels.sort_order`);
    emit the rank as `out_col`."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        table = _whole_table(batches, order_cols)
        if table is None:
            return
        xs = [in_t.decode(x) for x in table.column("v").to_pylist()]
        try:
            ranks = kernels.sort_order(key, xs)
        except KernelError as e:
            raise _failed(site, e) from e.cause
        out = table.take(pa.array(ranks, type=pa.int64()))
        out = out.append_column(out_col, pa.array(range(len(ranks)), type=pa.int64()))
        yield from out.to_batches()

    return run


def fold_global(
    f: Callable[[Any, Any], Any], start: Any, has_start: bool, in_t: HType, site: FnSite, order_cols: list[str]
) -> ArrowFn:
    """A sequential fold (`kernels.fold_values`) of one partition holding the whole batch;
    emits one pickled accumulator and the number of elements folded."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        table = _whole_table(batches, order_cols)
        xs = [] if table is None else [in_t.decode(x) for x in table.column("v").to_pylist()]
        try:
            _, acc = kernels.fold_values(f, start, has_start, xs)
        except KernelError as e:
            raise _failed(site, e) from e.cause
        yield pa.RecordBatch.from_pydict(
            {"acc": [pickle.dumps(acc, protocol=5)], "n": [len(xs)]},
            schema=pa.schema([("acc", pa.binary()), ("n", pa.int64())]),
        )

    return run


def fold_keyed(
    f: Callable[[Any, Any], Any],
    starts: dict[Any, Any],
    init: Any,
    has_init: bool,
    kt: HType,
    in_t: HType,
    site: FnSite,
    order_cols: list[str],
) -> Callable[[Any], Any]:
    """Per key (one Arrow table per group): `kernels.fold_keyed` of this batch's values from
    the stored accumulator (`starts`), else from init / the first value."""

    def run(table: Any) -> Any:
        if order_cols:
            table = table.sort_by([(c, "ascending") for c in order_cols])
        keys = table.column("k").to_pylist()
        if not keys:
            return pa.table({"k": pa.array([], type=kt.arrow()), "acc": pa.array([], type=pa.binary())})
        key = kt.decode(keys[0])
        kvs = [(key, in_t.decode(raw)) for raw in table.column("v").to_pylist()]
        try:
            acc = kernels.fold_keyed(f, starts, init, has_init, kvs)[key]
        except KernelError as e:
            raise _failed(site, e) from e.cause
        return pa.table(
            {
                "k": pa.array([keys[0]], type=kt.arrow()),
                "acc": pa.array([pickle.dumps(acc, protocol=5)], type=pa.binary()),
            }
        )

    return run


def split_pairs(in_t: HType, site: FnSite) -> ArrowFn:
    """Split elements that are (key, value) tuples (`kernels.split_pairs`) into pickled `k`
    and `v` columns."""
    from .types import OPAQUE

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for rb in batches:
            try:
                pairs = kernels.split_pairs(_decode_v(rb, in_t))
            except KernelError as e:
                raise _failed(site, e) from e.cause
            out = (
                rb.drop_columns(["v"])
                if hasattr(rb, "drop_columns")
                else rb.select([c for c in rb.schema.names if c != "v"])
            )
            out = out.append_column("k", pa.array([OPAQUE.encode(k) for k, _ in pairs], type=pa.binary()))
            yield out.append_column("v", pa.array([OPAQUE.encode(v) for _, v in pairs], type=pa.binary()))

    return run


#: how to fix a fold whose accumulator changes kind (`reencode`'s checks)
ACC_TYPE_FIX = (
    "fix: declare the accumulator's types (`acc_type=int | float`: each value is then kept exactly as it is) "
    "or keep one kind throughout (e.g. a `float` init and `float(...)` results)"
)
#: where a checked type came from, and the fix (`KindCheck.given`)
INIT_TYPED = ("the type its init (or a reduce's elements) gave it", ACC_TYPE_FIX)
TRIAL_TYPED = ("the type a trial call of its function gave it", ONE_TYPE_FIX)


class KindCheck(NamedTuple):
    """Of values whose type is a guess, what `reencode` checks: the operator the guess is
    about, the type the values must have exactly, which part of each value (an index into a
    tuple, or None for all of it), and where the type came from, with the fix."""

    site: FnSite
    t: HType
    part: int | None
    given: tuple[str, str]


def reencode(
    columns: dict[str, tuple[HType, HType]],
    checks: dict[str, list[KindCheck]] | None = None,
    site: FnSite | None = None,
) -> ArrowFn:
    """Re-encode named columns from one HType to another (e.g. typed -> pickled); others pass
    through. `checks`: of a column whose type is a guess (a Python fold's accumulator typed
    from its init, a step typed by a trial call), a value of another numeric kind fails
    naming the operator and the value, where it would otherwise be converted. `site`: the
    operator whose values these are, named (with the value) when one does not fit its column."""
    checks = checks or {}

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for rb in batches:
            for name, (src, dst) in columns.items():
                xs = [src.decode(x) for x in rb.column(rb.schema.get_field_index(name)).to_pylist()]
                for check in checks.get(name, ()):
                    _check_kinds(xs, check)
                try:
                    values = [dst.encode(x) for x in xs]
                except TypeError as exc:
                    misfit = TypeError(
                        f"hydrolite: a result does not fit its column {dst.describe()}: {exc}; {ONE_TYPE_FIX}"
                    )
                    if site is None:
                        raise misfit from exc
                    raise site.fail(_first_misfit(xs, dst), misfit) from exc
                rb = _replace(rb, name, pa.array(values, type=dst.arrow()))
            yield rb

    return run


def _first_misfit(xs: list[Any], t: HType) -> Any:
    """The first of `xs` that `t` cannot encode (`reencode` found one)."""
    for x in xs:
        try:
            t.encode(x)
        except TypeError:
            return x
    return None


def _check_kinds(xs: list[Any], check: KindCheck) -> None:
    with exact_numbers():
        for x in xs:
            v = x if check.part is None or x is None else x[check.part]
            try:
                check.t.encode(v)
            except TypeError as exc:
                source, fix = check.given
                why = f"the value {v!r} is not {check.t.describe()}, {source}: {exc}"
                raise check.site.fail(x, TypeError(f"{why}; {fix}")) from exc


def equality_bytes(col: str, name: str, t: HType) -> ArrowFn:
    """Add column `name`: the `grouping.group_bytes` of the values in `col` (of type `t`), so
    that values equal in Python have equal bytes (None stays None: `eqNullSafe` matches it, as
    Python's `None == None`)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for rb in batches:
            xs = rb.column(rb.schema.get_field_index(col)).to_pylist()
            eq = [None if x is None else group_bytes(t.decode(x)) for x in xs]
            yield rb.append_column(pa.field(name, pa.binary()), pa.array(eq, type=pa.binary()))

    return run
