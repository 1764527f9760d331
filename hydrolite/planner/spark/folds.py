"""Folds and reduces as algebra: per-batch partial aggregates plus a merge into the old value.

A fold `acc = f(acc, x)` is incremental for free when f has one of these shapes (each
component of a tuple accumulator may have its own):

| f(acc, x)                       | per batch (native Spark)   | merge with the old value |
| ------------------------------- | -------------------------- | ------------------------ |
| `acc + g(x)`, `g(x) + acc`      | `sum(g(x))`                | `old + partial`          |
| `acc - g(x)`                    | `sum(g(x))`                | `old - partial`          |
| `max(acc, g(x))`, `min(...)`    | `max(g(x))`, `min(g(x))`   | `max(old, partial)`      |
| `acc or g(x)`, `acc and g(x)`   | `bool_or`, `bool_and`      | `old or partial`         |
| `g(x)`                          | `g` of the last element    | `partial`                |
| `acc`                           | nothing                    | `old`                    |

`g` must translate to a Column (see `lambdas`). The per-batch partial is computed by Spark
over the batch (grouped by key for keyed folds) and merged on the driver with the state
of the previous batch: per-batch work is proportional to the batch. Any other f runs as a
sequential Python fold over the batch (vectorized through Arrow), starting from the
stored accumulator.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from .lambdas import NotTranslatable, TExpr, Translator, function_ast
from .types import HType, OptT, Prim, TupleT

_NUMERIC = (Prim(int), Prim(float))


@dataclass(frozen=True)
class Part:
    """One component of an accumulator and how it evolves."""

    kind: str  # sum | sub | max | min | any | all | last | first | keep
    g: ast.expr | None  # expression over the element parameter (None: the element itself)
    index: int | None  # the accumulator's tuple component; None for the whole accumulator


@dataclass(frozen=True)
class Algebra:
    """An incremental form of a fold/reduce (or of count/first/last)."""

    parts: tuple[Part, ...]
    fn: Callable[..., Any] | None  # the user's function (for resolving names in g)
    elem_param: str = "x"

    @property
    def tuple_acc(self) -> bool:
        return any(p.index is not None for p in self.parts)


COUNT = Algebra((Part("sum", ast.Constant(1), None),), None)
FIRST = Algebra((Part("first", None, None),), None)
LAST = Algebra((Part("last", None, None),), None)


def analyze(f: Callable[..., Any], acc_t: HType | None, *, reduce: bool) -> Algebra | None:
    """The algebra of `f(acc, x)`, or None when f has to run as a Python fold."""
    fa = function_ast(f)
    if fa is None or len(fa.params) != 2:
        return None
    acc, x = fa.params
    body = fa.body
    if isinstance(body, ast.Tuple) and isinstance(acc_t, TupleT) and len(body.elts) == len(acc_t.items) and not reduce:
        parts = [_part(e, acc, x, i, acc_t.items[i], reduce) for i, e in enumerate(body.elts)]
    else:
        parts = [_part(body, acc, x, None, acc_t, reduce)]
    if any(p is None for p in parts):
        return None
    return Algebra(tuple(p for p in parts if p is not None), f, x)


def _is_acc(e: ast.expr, acc: str, index: int | None) -> bool:
    if index is None:
        return isinstance(e, ast.Name) and e.id == acc
    return (
        isinstance(e, ast.Subscript)
        and isinstance(e.value, ast.Name)
        and e.value.id == acc
        and isinstance(e.slice, ast.Constant)
        and e.slice.value == index
    )


def _mentions(e: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(e))


def _part(e: ast.expr, acc: str, x: str, index: int | None, t: HType | None, reduce: bool) -> Part | None:
    def part(kind: str, g: ast.expr) -> Part | None:
        """Part(kind) fed by `g`, when `g` is a valid per-element expression (for reduce: the
        element itself, recorded as None); None when it is not."""
        if _mentions(g, acc) or (reduce and not (isinstance(g, ast.Name) and g.id == x)):
            return None
        return Part(kind, None if reduce else g, index)

    numeric = t in _NUMERIC or (reduce and t is None)
    if _is_acc(e, acc, index):
        return Part("first" if reduce else "keep", None, index)
    if not _mentions(e, acc):
        return part("last", e)
    if (
        isinstance(e, ast.BinOp)
        and isinstance(e.op, (ast.Add, ast.Sub))
        and numeric
        and not (reduce and isinstance(e.op, ast.Sub))
    ):
        p = part("sum" if isinstance(e.op, ast.Add) else "sub", e.right) if _is_acc(e.left, acc, index) else None
        if p is None and isinstance(e.op, ast.Add) and _is_acc(e.right, acc, index):
            p = part("sum", e.left)
        return p
    if (
        isinstance(e, ast.Call)
        and isinstance(e.func, ast.Name)
        and e.func.id in ("max", "min")
        and len(e.args) == 2
        and not e.keywords
    ):
        a, b = e.args
        other = b if _is_acc(a, acc, index) else a if _is_acc(b, acc, index) else None
        return None if other is None else part(e.func.id, other)
    if (
        isinstance(e, ast.BoolOp)
        and len(e.values) == 2
        and _is_acc(e.values[0], acc, index)
        and t in (Prim(bool), None)
    ):
        return part("any" if isinstance(e.op, ast.Or) else "all", e.values[1])
    return None


def partial_columns(alg: Algebra, elem: TExpr, order: Column | None) -> list[tuple[Column, HType]]:
    """Aggregate Columns (one per part) computing the batch's partial values."""
    out: list[tuple[Column, HType]] = []
    for p in alg.parts:
        if p.kind == "keep":
            out.append((F.lit(None), Prim(bool)))
            continue
        g = elem if p.g is None else _translate_g(alg, p.g, elem)
        if isinstance(g.t, OptT) and p.kind in ("sum", "sub", "max", "min"):
            raise NotTranslatable("aggregating optional values")
        col = g.col
        if p.kind in ("sum", "sub"):
            if g.t not in _NUMERIC and g.t != Prim(bool):
                raise NotTranslatable(f"sum of {g.t}")
            t = g.t if g.t != Prim(bool) else Prim(int)
            out.append((F.sum(col.cast(t.spark())), t))
        elif p.kind in ("max", "min"):
            out.append(((F.max if p.kind == "max" else F.min)(col), g.t))
        elif p.kind in ("any", "all"):
            if g.t != Prim(bool):
                raise NotTranslatable("and/or of non-booleans")
            out.append(((F.bool_or if p.kind == "any" else F.bool_and)(col), g.t))
        else:  # first / last element (by the stream's order; any deterministic pick without one)
            if order is None:
                out.append(((F.max if p.kind == "last" else F.min)(col), g.t))
            else:
                out.append(((F.max_by if p.kind == "last" else F.min_by)(col, order), g.t))
    return out


def _translate_g(alg: Algebra, g: ast.expr, elem: TExpr) -> TExpr:
    if isinstance(g, ast.Constant) and alg.fn is None:
        return TExpr(F.lit(g.value).cast("long"), Prim(int))
    assert alg.fn is not None
    return Translator(alg.fn, {alg.elem_param: elem}).visit(g)


def merge(alg: Algebra, old: Any, has_old: bool, partials: list[Any]) -> Any:
    """The new accumulator from the previous one (if any) and this batch's partials."""
    if alg.tuple_acc:
        vals = list(old)
        for p, v in zip(alg.parts, partials):
            assert p.index is not None
            vals[p.index] = _merge1(p.kind, vals[p.index], True, v)
        return tuple(vals)
    return _merge1(alg.parts[0].kind, old, has_old, partials[0])


def _merge1(kind: str, old: Any, has_old: bool, p: Any) -> Any:
    if not has_old:
        return p
    if kind == "sum":
        return old + p
    if kind == "sub":
        return old - p
    if kind == "max":
        return max(old, p)
    if kind == "min":
        return min(old, p)
    if kind == "any":
        return old or p
    if kind == "all":
        return old and p
    if kind == "last":
        return p
    return old  # first / keep
