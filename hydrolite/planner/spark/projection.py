"""Projections and simple predicates: user functions Spark's own plan can compute exactly.

`lambda p: (p[1], p[2])`, `lambda w: (w, 1)`, `lambda e: e.user`: such a function reads
fields of its one argument by constant index or name, builds tuples of them and of
constants, and does nothing else. Its result, and its type, follow from the argument's type
alone, and it cannot fail on a well-typed element. So the planner can decide *before Spark
runs* (`hydrolite plan` starts no JVM) that a native streaming aggregation can compute it
in its own plan (`native_state.py`: `events.map(lambda e: (e.user, 1)).into_keyed().count()`
keeps its counts in Spark's state store, no Python per element). Anything else is not a
projection (`project` returns None) and keeps its other paths.

A *simple predicate* (`predicate`) is the same for filters: comparisons of such fields and
constants of one type among int, str and bool, with `and` / `or` / `not`.

`chain_to` finds, below a state's input, the query input it comes from through such maps and
filters, `into_keyed()` and a keyed stream's `entries()` / `values()`; `follow` gives the types after
each step at plan time and, when Spark runs, the Columns the aggregation groups and folds.

    >>> import ast
    >>> from hydrolite.planner.spark.types import Prim, TupleT
    >>> t = TupleT((Prim(str), Prim(str), Prim(int)))
    >>> def of(src):  # the body of `lambda p: <src>` (a doctest's lambda has no source file to read)
    ...     return _walk(ast.parse(src, mode="eval").body, "p", t)
    >>> of("(p[1], p[2])").t.describe(), of("(p[-1], 1)").t.describe()
    ('tuple[str, int]', 'tuple[int, int]')
    >>> of("p[0].upper()") is None, of("p[3]") is None
    (True, True)
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...ir import nodes as n
from ...ir.meta import Kind
from ...port_values import is_namedtuple
from .fn_source import function_ast
from .types import HType, Prim, RecordT, TupleT, from_python

#: Column -> Column, called only when Spark runs (`Projected.build`)
Build = Callable[[Any], Any]
_CONSTANTS = (bool, int, str)


@dataclass(frozen=True)
class Projected:
    """A projection's result type, and how to compute it from the argument's Column."""

    t: HType
    build: Build


def project(f: Callable[..., Any], t: HType) -> Projected | None:
    """`f` applied to an element of type `t`, if `f` is a projection (else None)."""
    found = _one_param(f)
    return None if found is None else _walk(found[1], found[0], t)


def _one_param(f: Callable[..., Any]) -> tuple[str, ast.expr] | None:
    """(its parameter, the expression it returns) of a function of one parameter whose source is found."""
    fa = function_ast(f)
    return None if fa is None or len(fa.params) != 1 else (fa.params[0], fa.body)


def _walk(e: ast.expr, param: str, t: HType) -> Projected | None:
    if isinstance(e, ast.Name):
        return Projected(t, lambda c: c) if e.id == param else None
    if isinstance(e, ast.Constant):
        if type(e.value) not in _CONSTANTS:  # None, floats, bytes: kept out (keys, exact types)
            return None
        const, pt = e.value, Prim(type(e.value))

        def lit(_: Any) -> Any:
            from pyspark.sql import functions as F

            return F.lit(const).cast(pt.spark())

        return Projected(pt, lit)
    if isinstance(e, ast.Tuple):
        parts = [_walk(x, param, t) for x in e.elts]
        if not parts or any(p is None for p in parts) or any(isinstance(x, ast.Starred) for x in e.elts):
            return None
        items = [p for p in parts if p is not None]

        def struct(c: Any) -> Any:
            from pyspark.sql import functions as F

            return F.struct(*[p.build(c).alias(f"_{i + 1}") for i, p in enumerate(items)])

        return Projected(TupleT(tuple(p.t for p in items)), struct)
    if isinstance(e, ast.Subscript) and (i := _index(e.slice)) is not None:
        inner = _walk(e.value, param, t)
        if inner is None or not _indexable(inner.t):
            return None
        items = inner.t.items  # type: ignore[attr-defined]
        if not -len(items) <= i < len(items):
            return None
        i %= len(items)
        return _field(inner, inner.t.names[i], items[i])  # type: ignore[attr-defined]
    if isinstance(e, ast.Attribute):
        inner = _walk(e.value, param, t)
        if inner is None or not isinstance(inner.t, RecordT) or e.attr not in inner.t.names:
            return None
        return _field(inner, e.attr, inner.t.field(e.attr))
    return None


def _index(e: ast.expr) -> int | None:
    """A constant int index (`2`, `-1`), or None."""
    neg = isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub)
    c = e.operand if isinstance(e, ast.UnaryOp) and neg else e
    if isinstance(c, ast.Constant) and type(c.value) is int:
        return -c.value if neg else c.value
    return None


def _indexable(t: HType) -> bool:
    """A tuple, or a record that is a tuple in Python too (a NamedTuple: `e[0]` is its first field)."""
    return isinstance(t, TupleT) or (isinstance(t, RecordT) and t.cls is not None and is_namedtuple(t.cls))


def _field(inner: Projected, name: str, t: HType) -> Projected:
    return Projected(t, lambda c: inner.build(c).getField(name))


# ------------------------------------------------------------------ predicates over them
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
#: types Spark orders as Python does (strings: UTF-8 bytes sort as code points do); never null here
_ORDERED = (Prim(int), Prim(str), Prim(bool))
BOOL = Prim(bool)


def predicate(f: Callable[..., Any], t: HType) -> Projected | None:
    """`f` applied to an element of type `t`, if `f` is a *simple predicate* (else None):
    comparisons (`== != < <= > >=`, chained too) between projections of one type among int,
    str and bool, `and` / `or` / `not` of those, or a projection of type bool. Like a
    projection, it cannot fail on a well-typed element, and Spark evaluates it as Python does.

    >>> import ast
    >>> from hydrolite.planner.spark.types import Prim, TupleT
    >>> t = TupleT((Prim(str), Prim(int), Prim(bool)))
    >>> def of(src):
    ...     return _test(ast.parse(src, mode="eval").body, "p", t)
    >>> of("p[2] and 0 < p[1] <= 9 or not p[0] != 'x'").t.describe(), of("p[1]") is None, of("p[0] < p[1]") is None
    ('bool', True, True)
    """
    found = _one_param(f)
    return None if found is None else _test(found[1], found[0], t)


def _test(e: ast.expr, param: str, t: HType) -> Projected | None:
    if isinstance(e, ast.BoolOp):
        parts = [_test(x, param, t) for x in e.values]
        if any(p is None for p in parts):
            return None
        tests = [p for p in parts if p is not None]
        combine = operator.and_ if isinstance(e.op, ast.And) else operator.or_
        return Projected(BOOL, lambda c: functools.reduce(combine, [p.build(c) for p in tests]))
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        inner = _test(e.operand, param, t)
        return None if inner is None else Projected(BOOL, lambda c: ~inner.build(c))
    if isinstance(e, ast.Compare):
        sides = [_walk(x, param, t) for x in (e.left, *e.comparators)]
        ops = [_COMPARE.get(type(op)) for op in e.ops]
        found = [s for s in sides if s is not None]
        if len(found) < len(sides) or any(op is None for op in ops) or found[0].t not in _ORDERED:
            return None
        if any(s.t != found[0].t for s in found):  # 1 == True, 1 < 'a': Python's rules, not Spark's
            return None
        pairs = [(op, found[i], found[i + 1]) for i, op in enumerate(ops) if op is not None]

        def compare(c: Any) -> Any:
            return functools.reduce(operator.and_, [op(a.build(c), b.build(c)) for op, a, b in pairs])

        return Projected(BOOL, compare)
    got = _walk(e, param, t)
    return got if got is not None and got.t == BOOL else None


# ------------------------------------------------------------------ chains of them, in the IR
#: steps that pass every element of a micro-batch on unchanged: within one query a tick runs
#: once per micro-batch on that batch's rows, so `all_ticks()` of a tick's stream is, in the
#: batch, that stream's elements (a query whose batches can wait, `held.py`, keeps no state
#: on the executors: `placement._Finder._blocker`, so a tick never runs on two batches' rows there);
#: `release_aligned()` emits a merged tick's elements as `all_ticks()` does, and `aligned_at()`
#: only marks its input for the alignment pass (both pass their input on: `ops.passthrough`,
#: as the simulator's `IdentityOp` / `ops_time` exit)
IDENTITY = (n.Batch, n.AssumeOrdering, n.WeakenOrdering, n.AllTicks, n.ReleaseAligned, n.AlignedAt)


def strip_identity(x: n.Node) -> n.Node:
    """`x` below its identity steps (`batch`, `assume_ordering`, `weaken_ordering`, `all_ticks`,
    `release_aligned`, `aligned_at`)."""
    while isinstance(x, IDENTITY):
        x = x.children[0]
    return x


@dataclass(frozen=True)
class Chain:
    """A state's own input as a query input through projections (`projection.py`), with the
    key and element types the aggregation sees."""

    src: n.Node
    steps: tuple[n.Node, ...]
    kt: HType | None
    vt: HType | None


#: the steps a native aggregation computes itself: projections, simple predicates, re-keying
_CHAIN_STEPS = (n.Map, n.Filter, n.IntoKeyed, n.Entries, n.Values)


def chain_to(top: n.Node, inputs: Sequence[n.Node]) -> Chain | str:
    """`top` as a query input through `map`s that are projections, `filter`s that are simple
    predicates, `into_keyed()`, and a keyed stream's `entries()` / `values()` (identity steps
    skipped), or why it is not one: the aggregation then computes those steps itself, in
    Spark, from the input's typed columns."""
    steps: list[n.Node] = []
    x = strip_identity(top)
    while not any(x is i for i in inputs):
        if not isinstance(x, _CHAIN_STEPS) or (isinstance(x, (n.Map, n.Filter)) and function_ast(x.f) is None):
            return f"its input passes through {x.op}() {x.site.label} (the aggregation reads a query input directly)"
        steps.append(x)
        x = strip_identity(x.children[0])
    steps.reverse()
    if x.meta.kind not in (Kind.KEYED_STREAM, Kind.STREAM):
        return f"its input {x.op}() {x.site.label} is not a stream"
    got = follow(x, steps)
    if isinstance(got, str):
        return got
    kt, vt, _ = got
    return Chain(x, tuple(steps), kt, vt)


@dataclass(frozen=True)
class Cols:
    """A chain's element as Spark Columns over the input's payload: its key (None: not keyed),
    its value, and the condition its filters put on the row (None: every row)."""

    k: Any
    v: Any
    where: Any = None

    def keep(self, cond: Any) -> Cols:
        return Cols(self.k, self.v, cond if self.where is None else self.where & cond)


def follow(
    src: n.Node, steps: Sequence[n.Node], cols: Cols | None = None
) -> tuple[HType | None, HType | None, Cols | None] | str:
    """The key and value types after `steps` from the query input `src` (and, given `src`'s
    columns, the Columns: only when Spark runs), or why a step cannot be computed natively."""
    keyed = src.meta.kind is Kind.KEYED_STREAM
    kt, vt = (from_python(src.meta.key) if keyed else None), from_python(src.meta.elem)
    for step in steps:
        if vt is None:
            return f"the type of {step.op}() {step.site.label}'s input has no Spark column type"
        if isinstance(step, n.IntoKeyed):
            if not (isinstance(vt, TupleT) and len(vt.items) == 2):
                return f"into_keyed() {step.site.label} is not of typed pairs"
            kt, vt = vt.items
            cols = None if cols is None else Cols(cols.v.getField("_1"), cols.v.getField("_2"), cols.where)
        elif isinstance(step, (n.Entries, n.Values)):
            if kt is None:
                return f"{step.op}() {step.site.label} has no typed keys"
            entries = isinstance(step, n.Entries)
            if cols is not None:
                from pyspark.sql import functions as F

                v = F.struct(cols.k.alias("_1"), cols.v.alias("_2")) if entries else cols.v
                cols = Cols(None, v, cols.where)
            vt = TupleT((kt, vt)) if entries else vt
            kt = None
        elif isinstance(step, n.Filter):
            test = predicate(step.f, vt)
            if test is None:
                return (
                    f"its input passes through filter() {step.site.label}, a predicate that is not a simple "
                    "comparison (of fields and constants of one type among int, str and bool, with and / or / not)"
                )
            cols = None if cols is None else cols.keep(test.build(cols.v))
        else:
            got = project(step.f, vt)  # type: ignore[attr-defined]
            if got is None:
                return (
                    f"its input passes through {step.op}() {step.site.label}, a function that is not a projection "
                    "(fields by constant index or name, tuples of them and constants: the aggregation computes only those)"
                )
            vt = got.t
            cols = None if cols is None else Cols(cols.k, got.build(cols.v), cols.where)
    return kt, vt, cols
