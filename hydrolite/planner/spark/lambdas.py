"""Translate user functions into native Spark Column expressions.

The function's source is found and parsed by `fn_source.function_ast`. The body is
translated by a table keyed by AST node class; each rule returns the Column and the
`HType` of its result, so types flow through translated lambdas. Anything outside the table (or whose Spark semantics would differ from
Python's) raises `NotTranslatable`, and the caller runs the function vectorized through
Arrow instead: translation is an optimisation that must never change a result.

Translated: arithmetic (`+ - * / // %` with Python's floor/modulo rules), comparisons
(also `in`, `is None`), `and`/`or`/`not` on booleans, conditional expressions, tuple
and field access, tuple/list/dataclass/NamedTuple construction, f-strings, `len abs min
max int float str round`, `math.floor/ceil`, and the str methods `upper lower strip
lstrip rstrip startswith endswith replace split find join`. Names that are neither
parameters nor the functions above must be constants (captured or global). A conditional
expression whose branches, or a `min`/`max` whose arguments, differ in type raises
`MixedTypes`: Python keeps each result's type, one column would not (`True if c else 0`
would read back as `1`), so such results run in Python and are kept pickled.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from .fn_source import function_ast
from .reuse import derived, field_of, free_values, struct_of
from .types import (
    NONE,
    DictT,
    HType,
    ListT,
    NoneT,
    OptT,
    Prim,
    RecordT,
    StructT,
    TupleT,
    declared_result,
    from_python,
    of_value,
)

INT, FLOAT, STR, BOOL = Prim(int), Prim(float), Prim(str), Prim(bool)


class NotTranslatable(Exception):
    """The function (or part of it) has no exact native equivalent; run it in Python."""


class MixedTypes(NotTranslatable):
    """Its results may differ in type (`True if c else 0`, `x if c else 0.5`, `max(1, 0.5)`):
    one Spark column would convert some of them (`True` to `1`, `3` to `3.0`) where Python
    keeps each as it is, so they run in Python and are kept pickled (`types.OPAQUE`)."""


@dataclass(frozen=True)
class TExpr:
    """A translated expression: a Column and the HType of its values."""

    col: Column
    t: HType


def translate(f: Callable[..., Any], args: Sequence[TExpr]) -> TExpr:
    """`f(*args)` as a Column expression, or raise NotTranslatable. A callable object of
    hydrolite's own may translate itself (`spark_column(args)`, e.g. `cluster_fns.Owner`)."""
    own = getattr(f, "spark_column", None)
    if own is not None:
        result: TExpr = own(args)
        return result
    fa = function_ast(f)
    if fa is None:
        raise NotTranslatable("the function's source is not available as one expression")
    if len(fa.params) != len(args):
        raise NotTranslatable(f"expected {len(fa.params)} arguments, got {len(args)}")
    te = Translator(f, dict(zip(fa.params, args))).visit(fa.body)
    declared = declared_result(f)
    if declared is not None and declared != te.t:  # the annotation is the user's word: held as declared
        raise NotTranslatable(
            f"its return annotation says {declared.describe()}, the expression gives {te.t.describe()}"
        )
    return te


def translate_reused(f: Callable[..., Any], args: Sequence[TExpr]) -> TExpr:
    """`translate`, reused from an earlier micro-batch while the arguments are the same
    Column objects and `f`'s free names hold the same values (`reuse.py`): the tick
    translates its functions once per query, not once per batch. A function that did not
    translate is not parsed again either; the same NotTranslatable reason is raised."""
    bound = free_values(f)
    if bound is None:
        return translate(f, args)

    def attempt() -> TExpr | NotTranslatable:
        try:
            return translate(f, args)
        except NotTranslatable as exc:
            return exc

    got = derived(("translate", f, bound, tuple(a.t for a in args)), [a.col for a in args], attempt)
    if isinstance(got, NotTranslatable):
        raise type(got)(str(got))  # (a MixedTypes stays one: its results are then kept pickled)
    return got


def literal(value: Any, t: HType | None = None) -> TExpr:
    """A constant as a typed Column."""
    t = t if t is not None else of_value(value)
    if t is None:
        raise NotTranslatable(f"constant {value!r} has no native type")
    if value is None:
        return TExpr(F.lit(None).cast(t.spark()), t)
    if isinstance(t, OptT):
        return TExpr(literal(value, t.inner).col, t)
    if isinstance(t, StructT):
        vals = t._fields_of(value)
        return TExpr(F.struct(*[literal(v, it).col.alias(n) for v, it, n in zip(vals, t.items, t.names)]), t)
    if isinstance(t, ListT):
        elems = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
        items = [literal(v, t.item).col for v in elems]
        return TExpr(F.array(*items).cast(t.spark()) if items else F.array().cast(t.spark()), t)
    if isinstance(t, DictT):
        kv: list[Column] = []
        for k, v in value.items():
            kv += [literal(k, t.key).col, literal(v, t.value).col]
        return TExpr(F.create_map(*kv).cast(t.spark()) if kv else F.create_map().cast(t.spark()), t)
    if isinstance(t, Prim):
        return TExpr(F.lit(value).cast(t.spark()), t)
    return TExpr(F.lit(t.encode(value)).cast(t.spark()), t)


def _numeric(t: HType) -> bool:
    return isinstance(t, Prim) and t.py in (int, float, bool)


def _num_result(a: HType, b: HType) -> HType:
    return FLOAT if FLOAT in (a, b) else INT


_STR_NOARG: dict[str, Callable[[Column], Column]] = {
    "upper": F.upper,
    "lower": F.lower,
    "strip": lambda c: F.regexp_replace(c, r"(?U)^\s+|\s+$", ""),
    "lstrip": lambda c: F.regexp_replace(c, r"(?U)^\s+", ""),
    "rstrip": lambda c: F.regexp_replace(c, r"(?U)\s+$", ""),
}


class Translator:
    """One function body's translation; rules are looked up by AST node class."""

    def __init__(self, f: Callable[..., Any], env: dict[str, TExpr]) -> None:
        self.f = f
        self.env = env

    def visit(self, node: ast.AST) -> TExpr:
        rule = RULES.get(type(node))
        if rule is None:
            raise NotTranslatable(f"{type(node).__name__} expressions are not translated")
        return rule(self, node)

    # ------------------------------------------------------------- names
    def resolve(self, name: str) -> Any:
        """The Python value a free name refers to (closure, global or builtin)."""
        code = self.f.__code__
        closure = getattr(self.f, "__closure__", None)
        if name in code.co_freevars and closure is not None:
            return closure[code.co_freevars.index(name)].cell_contents
        glb = getattr(self.f, "__globals__", {})
        if name in glb:
            return glb[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise NotTranslatable(f"name {name!r} is not defined")

    def name(self, node: ast.Name) -> TExpr:
        if node.id in self.env:
            return self.env[node.id]
        value = self.resolve(node.id)
        if callable(value):
            raise NotTranslatable(f"{node.id} is a function, not a value")
        return literal(value)

    def constant(self, node: ast.Constant) -> TExpr:
        if node.value is None:
            return TExpr(F.lit(None).cast(NONE.spark()), NONE)
        return literal(node.value)

    # ------------------------------------------------------------- operators
    def binop(self, node: ast.BinOp) -> TExpr:
        a, b = self.visit(node.left), self.visit(node.right)
        op = type(node.op)
        if op is ast.Add and a.t == STR and b.t == STR:
            return TExpr(F.concat(a.col, b.col), STR)
        if op is ast.Add and isinstance(a.t, ListT) and a.t == b.t and a.t.container is list:
            return TExpr(F.concat(a.col, b.col), a.t)
        if not (_numeric(a.t) and _numeric(b.t)):
            raise NotTranslatable(f"{op.__name__} on {a.t} and {b.t}")
        ca, cb = a.col, b.col
        if a.t == BOOL:
            ca = ca.cast("long")
        if b.t == BOOL:
            cb = cb.cast("long")
        rt = _num_result(a.t, b.t)
        if op is ast.Add:
            return TExpr(ca + cb, rt)
        if op is ast.Sub:
            return TExpr(ca - cb, rt)
        if op is ast.Mult:
            return TExpr(ca * cb, rt)
        if op is ast.Div:
            return TExpr(ca.cast("double") / cb.cast("double"), FLOAT)
        if op is ast.Mod:
            return TExpr(_py_mod(ca, cb), rt)
        if op is ast.FloorDiv:
            if rt == FLOAT:
                return TExpr(F.floor(ca / cb).cast("double"), FLOAT)
            exact = (ca - _py_mod(ca, cb)).cast("decimal(38,0)") / cb.cast("decimal(38,0)")
            return TExpr(exact.cast("long"), INT)
        if op is ast.Pow and rt == FLOAT:
            return TExpr(F.pow(ca, cb), FLOAT)
        if op in (ast.BitAnd, ast.BitOr, ast.BitXor) and a.t == BOOL and b.t == BOOL:
            fn = {ast.BitAnd: Column.__and__, ast.BitOr: Column.__or__}.get(op)
            if fn is not None:
                return TExpr(fn(a.col, b.col), BOOL)
            return TExpr(a.col != b.col, BOOL)
        if op in (ast.BitAnd, ast.BitOr, ast.BitXor) and rt == INT:
            meth = {ast.BitAnd: "bitwiseAND", ast.BitOr: "bitwiseOR", ast.BitXor: "bitwiseXOR"}[op]
            return TExpr(getattr(ca, meth)(cb), INT)
        raise NotTranslatable(f"operator {op.__name__} on {a.t} and {b.t}")

    def unaryop(self, node: ast.UnaryOp) -> TExpr:
        a = self.visit(node.operand)
        if isinstance(node.op, ast.Not) and a.t == BOOL:
            return TExpr(~a.col, BOOL)
        if isinstance(node.op, ast.USub) and _numeric(a.t) and a.t != BOOL:
            return TExpr(-a.col, a.t)
        if isinstance(node.op, ast.UAdd) and _numeric(a.t) and a.t != BOOL:
            return a
        raise NotTranslatable(f"unary {type(node.op).__name__} on {a.t}")

    def boolop(self, node: ast.BoolOp) -> TExpr:
        vals = [self.visit(v) for v in node.values]
        if any(v.t != BOOL for v in vals):
            raise NotTranslatable("and/or on non-booleans returns one of the operands")
        out = vals[0].col
        for v in vals[1:]:
            out = (out & v.col) if isinstance(node.op, ast.And) else (out | v.col)
        return TExpr(out, BOOL)

    def compare(self, node: ast.Compare) -> TExpr:
        left = node.left
        parts: list[Column] = []
        for op, right in zip(node.ops, node.comparators):
            parts.append(self._compare1(left, op, right))
            left = right
        out = parts[0]
        for p in parts[1:]:
            out = out & p
        return TExpr(out, BOOL)

    def _compare1(self, left: ast.expr, op: ast.cmpop, right: ast.expr) -> Column:
        if isinstance(op, (ast.Is, ast.IsNot)):
            if not (isinstance(right, ast.Constant) and right.value is None):
                raise NotTranslatable("`is` other than `is None`")
            a = self.visit(left)
            return a.col.isNull() if isinstance(op, ast.Is) else a.col.isNotNull()
        if isinstance(op, (ast.In, ast.NotIn)):
            a = self.visit(left)
            if isinstance(right, (ast.Tuple, ast.List, ast.Set)) and all(
                isinstance(e, ast.Constant) for e in right.elts
            ):
                consts = [e.value for e in right.elts if isinstance(e, ast.Constant)]  # all of them (checked above)
            elif isinstance(right, ast.Name) and right.id not in self.env:
                consts = self.resolve(right.id)
                if not isinstance(consts, (tuple, list, set, frozenset)) or not all(
                    isinstance(c, (int, float, str)) for c in consts
                ):
                    if isinstance(consts, str) and a.t == STR:
                        res = F.lit(consts).contains(a.col)
                        return res if isinstance(op, ast.In) else ~res
                    raise NotTranslatable("`in` needs a constant container")
                consts = list(consts)
            else:
                b = self.visit(right)
                if b.t == STR and a.t == STR:
                    res = b.col.contains(a.col)
                    return res if isinstance(op, ast.In) else ~res
                raise NotTranslatable("`in` on a computed container")
            if isinstance(a.t, OptT) or not isinstance(a.t, Prim):
                raise NotTranslatable("`in` on a non-primitive")
            res = a.col.isin(consts)
            return res if isinstance(op, ast.In) else ~res
        a, b = self.visit(left), self.visit(right)
        if isinstance(op, (ast.Eq, ast.NotEq)):
            if isinstance(a.t, NoneT) or isinstance(b.t, NoneT):  # `x == None`: only None equals None
                other = b if isinstance(a.t, NoneT) else a
                eq = other.col.isNull()
            elif isinstance(a.t, OptT) or isinstance(b.t, OptT):
                eq = a.col.eqNullSafe(b.col)
            elif a.t == b.t or (_numeric(a.t) and _numeric(b.t)):
                eq = a.col == b.col
            else:
                raise NotTranslatable(f"== between {a.t} and {b.t}")
            return eq if isinstance(op, ast.Eq) else ~eq
        ordered = (_numeric(a.t) and _numeric(b.t)) or (a.t == b.t and isinstance(a.t, (Prim, TupleT)))
        if not ordered or isinstance(a.t, OptT) or isinstance(b.t, OptT):
            raise NotTranslatable(f"ordering comparison between {a.t} and {b.t}")
        fn = {ast.Lt: Column.__lt__, ast.LtE: Column.__le__, ast.Gt: Column.__gt__, ast.GtE: Column.__ge__}[type(op)]
        return fn(a.col, b.col)

    def ifexp(self, node: ast.IfExp) -> TExpr:
        test, a, b = self.visit(node.test), self.visit(node.body), self.visit(node.orelse)
        if test.t != BOOL:
            raise NotTranslatable("condition is not a boolean")
        t = _join(a.t, b.t)
        ca = F.lit(None).cast(t.spark()) if isinstance(a.t, NoneT) else a.col  # a typed null, not a void one
        cb = F.lit(None).cast(t.spark()) if isinstance(b.t, NoneT) else b.col
        return TExpr(F.when(test.col, ca).otherwise(cb), t)

    # ------------------------------------------------------------- structure
    def tuple_(self, node: ast.Tuple) -> TExpr:
        items = [self.visit(e) for e in node.elts]
        col = struct_of([(f"_{i + 1}", it.col) for i, it in enumerate(items)])
        return TExpr(col, TupleT(tuple(it.t for it in items)))

    def list_(self, node: ast.List) -> TExpr:
        items = [self.visit(e) for e in node.elts]
        if not items or any(it.t != items[0].t for it in items):
            raise NotTranslatable("lists must be non-empty with one element type")
        return TExpr(F.array(*[it.col for it in items]), ListT(items[0].t))

    def attribute(self, node: ast.Attribute) -> TExpr:
        if isinstance(node.value, ast.Name) and node.value.id not in self.env:
            value = getattr(self.resolve(node.value.id), node.attr, None)
            if value is None or callable(value):
                raise NotTranslatable(f"{node.value.id}.{node.attr} is not a constant")
            return literal(value)
        a = self.visit(node.value)
        if isinstance(a.t, RecordT) and node.attr in a.t.names:
            return TExpr(field_of(a.col, node.attr), a.t.field(node.attr))
        raise NotTranslatable(f"attribute .{node.attr} of {a.t}")

    def subscript(self, node: ast.Subscript) -> TExpr:
        a = self.visit(node.value)
        sl = node.slice
        if isinstance(sl, ast.Slice):
            if a.t != STR or sl.step is not None:
                raise NotTranslatable("slices are translated for strings only")
            lo = _const_int(sl.lower, 0)
            hi = _const_int(sl.upper, None)
            if lo < 0 or (hi is not None and hi < 0):
                raise NotTranslatable("negative string slice bounds")
            length = (
                F.length(a.col) - lo if hi is None else F.greatest(F.lit(hi) - F.least(F.lit(lo), F.lit(hi)), F.lit(0))
            )
            return TExpr(F.substring(a.col, F.lit(lo + 1), length), STR)
        idx = _const_int(sl, None)
        if isinstance(a.t, StructT) and (
            isinstance(a.t, TupleT) or (isinstance(a.t, RecordT) and a.t.cls is not None and issubclass(a.t.cls, tuple))
        ):
            if not -len(a.t.items) <= idx < len(a.t.items):
                raise NotTranslatable("tuple index out of range")
            name = a.t.names[idx]
            return TExpr(field_of(a.col, name), a.t.items[idx])
        if isinstance(a.t, ListT):
            return TExpr(F.element_at(a.col, idx + 1 if idx >= 0 else idx), a.t.item)
        raise NotTranslatable(f"indexing {a.t}")

    def joinedstr(self, node: ast.JoinedStr) -> TExpr:
        parts: list[Column] = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(F.lit(str(v.value)))
            elif isinstance(v, ast.FormattedValue) and v.format_spec is None and v.conversion in (-1, ord("s")):
                e = self.visit(v.value)
                if e.t not in (STR, INT):
                    raise NotTranslatable(f"f-string of {e.t}")
                parts.append(e.col.cast("string"))
            else:
                raise NotTranslatable("f-string with a format spec or conversion")
        return TExpr(F.concat(*parts) if parts else F.lit(""), STR)

    # ------------------------------------------------------------- calls
    def call(self, node: ast.Call) -> TExpr:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise NotTranslatable("*args / **kwargs in a call")
        fn = node.func
        if isinstance(fn, ast.Attribute):
            if isinstance(fn.value, ast.Name) and fn.value.id not in self.env:
                target = getattr(self.resolve(fn.value.id), fn.attr, None)
                return self._call_value(target, node)
            if isinstance(fn.value, ast.Constant) and isinstance(fn.value.value, str):
                if fn.attr == "join" and len(node.args) == 1 and not node.keywords:
                    items = self.visit(node.args[0])
                    if isinstance(items.t, ListT) and items.t.item == STR:
                        return TExpr(F.array_join(items.col, fn.value.value), STR)
                raise NotTranslatable(f"str.{fn.attr} on a constant")
            return self._method(self.visit(fn.value), fn.attr, node)
        if isinstance(fn, ast.Name) and fn.id not in self.env:
            return self._call_value(self.resolve(fn.id), node)
        raise NotTranslatable("call of a computed function")

    def _call_value(self, target: Any, node: ast.Call) -> TExpr:
        args = [self.visit(a) for a in node.args]
        if isinstance(target, type) and (
            dataclasses.is_dataclass(target) or (issubclass(target, tuple) and hasattr(target, "_fields"))
        ):
            rt = from_python(target)
            if not isinstance(rt, RecordT):
                raise NotTranslatable(f"{target.__name__} has fields without a native type")
            kw = {k.arg: self.visit(k.value) for k in node.keywords if k.arg is not None}
            given = dict(zip(rt.names, args)) | kw
            if set(given) != set(rt.names):
                raise NotTranslatable(f"{target.__name__}(...) without every field")
            for nm, t in zip(rt.names, rt.items):
                # Python keeps what it is given whatever the annotation says; a cast would not
                # (a str or a pickled value cast to a number is null in Spark)
                if given[nm].t != t:
                    raise NotTranslatable(
                        f"{target.__name__}.{nm} given {given[nm].t.describe()}, declared {t.describe()}"
                    )
            return TExpr(struct_of([(nm, given[nm].col.cast(t.spark())) for nm, t in zip(rt.names, rt.items)]), rt)
        if node.keywords:
            raise NotTranslatable("keyword arguments")
        rule = CALLS.get(target) if _hashable(target) else None
        if rule is None:
            raise NotTranslatable(f"call of {getattr(target, '__name__', target)!r}")
        return rule(args)

    def _method(self, obj: TExpr, name: str, node: ast.Call) -> TExpr:
        if node.keywords:
            raise NotTranslatable("keyword arguments")
        args = [self.visit(a) for a in node.args]
        if obj.t != STR:
            raise NotTranslatable(f"method .{name}() of {obj.t}")
        if name in _STR_NOARG and not args:
            return TExpr(_STR_NOARG[name](obj.col), STR)
        consts = [_const_str(a) for a in node.args]
        if name in ("startswith", "endswith") and len(args) == 1 and args[0].t == STR:
            return TExpr(getattr(obj.col, name)(args[0].col), BOOL)
        if name == "replace" and len(consts) == 2 and None not in consts:
            return TExpr(F.replace(obj.col, F.lit(consts[0]), F.lit(consts[1])), STR)
        if name == "split" and len(consts) == 1 and consts[0]:
            return TExpr(F.split(obj.col, _java_quote(consts[0]), -1), ListT(STR))
        if name == "find" and len(consts) == 1 and consts[0] is not None:
            return TExpr((F.locate(consts[0], obj.col) - 1).cast("long"), INT)
        raise NotTranslatable(f"str.{name}() with these arguments")


def _py_mod(a: Column, b: Column) -> Column:
    """Python's `a % b`: the result has the sign of the divisor (Spark's `%` follows the dividend)."""
    r = a % b
    return F.when((r != 0) & ((r < 0) != (b < 0)), r + b).otherwise(r)


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _const_int(node: ast.expr | None, default: int | None) -> Any:
    if node is None:
        return default
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int)
    ):
        return -node.operand.value
    raise NotTranslatable("only constant indexes are translated")


def _const_str(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _java_quote(s: str) -> str:
    return "\\Q" + s.replace("\\E", "\\E\\\\E\\Q") + "\\E"


def _join(a: HType, b: HType) -> HType:
    if a == b:
        return a
    if isinstance(a, NoneT):
        return b if isinstance(b, OptT) else OptT(b)
    if isinstance(b, NoneT):
        return a if isinstance(a, OptT) else OptT(a)
    raise MixedTypes(f"branches of different types {a} and {b}")


def _len(args: list[TExpr]) -> TExpr:
    (a,) = args
    if a.t == STR:
        return TExpr(F.length(a.col).cast("long"), INT)
    if isinstance(a.t, (ListT, DictT)):
        return TExpr(F.size(a.col).cast("long"), INT)
    raise NotTranslatable(f"len() of {a.t}")


def _minmax(fn: Callable[..., Column]) -> Callable[[list[TExpr]], TExpr]:
    def rule(args: list[TExpr]) -> TExpr:
        if len(args) < 2 or not all(_numeric(a.t) or a.t == STR for a in args):
            raise NotTranslatable("min/max of fewer than two plain values")
        if any(a.t != args[0].t for a in args):  # (Python returns the argument itself: its type)
            raise MixedTypes(f"min/max of {', '.join(str(a.t) for a in args)}")
        return TExpr(fn(*[a.col for a in args]), args[0].t)

    return rule


def _cast(to: Prim, allowed: tuple[HType, ...]) -> Callable[[list[TExpr]], TExpr]:
    def rule(args: list[TExpr]) -> TExpr:
        if len(args) != 1 or args[0].t not in allowed:
            raise NotTranslatable(f"{to.py.__name__}() of {[a.t for a in args]}")
        return TExpr(args[0].col.cast(to.spark()), to)

    return rule


def _round(args: list[TExpr]) -> TExpr:
    # round(x, n) is left to Python: it rounds the binary value, Spark the decimal text
    if len(args) == 1 and _numeric(args[0].t):
        return TExpr(F.bround(args[0].col, 0).cast("long"), INT)
    raise NotTranslatable("round(x, n)")


def _one_numeric(name: str, fn: Callable[[Column], Column]) -> Callable[[list[TExpr]], TExpr]:
    def rule(args: list[TExpr]) -> TExpr:
        if len(args) != 1 or not _numeric(args[0].t):
            raise NotTranslatable(f"{name}() arguments")
        return TExpr(fn(args[0].col).cast("long"), INT)

    return rule


def _abs(args: list[TExpr]) -> TExpr:
    (a,) = args
    if not _numeric(a.t) or a.t == BOOL:
        raise NotTranslatable("abs() of a non-number")
    return TExpr(F.abs(a.col), a.t)


CALLS: dict[Any, Callable[[list[TExpr]], TExpr]] = {
    len: _len,
    abs: _abs,
    min: _minmax(F.least),
    max: _minmax(F.greatest),
    int: _cast(INT, (INT, FLOAT, STR, BOOL)),
    float: _cast(FLOAT, (INT, FLOAT, STR)),
    str: _cast(STR, (STR, INT)),
    round: _round,
    math.floor: _one_numeric("floor", F.floor),
    math.ceil: _one_numeric("ceil", F.ceil),
}

RULES: dict[type[ast.AST], Callable[[Translator, Any], TExpr]] = {
    ast.Name: Translator.name,
    ast.Constant: Translator.constant,
    ast.BinOp: Translator.binop,
    ast.UnaryOp: Translator.unaryop,
    ast.BoolOp: Translator.boolop,
    ast.Compare: Translator.compare,
    ast.IfExp: Translator.ifexp,
    ast.Tuple: Translator.tuple_,
    ast.List: Translator.list_,
    ast.Attribute: Translator.attribute,
    ast.Subscript: Translator.subscript,
    ast.JoinedStr: Translator.joinedstr,
    ast.Call: Translator.call,
}

__all__ = ["NotTranslatable", "TExpr", "translate", "literal", "function_ast"]
