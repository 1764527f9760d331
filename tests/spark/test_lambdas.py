"""Lambda translation: native Column expressions must compute exactly what the kernels compute.

The kernels (`hydrolite.kernels`) define what map / filter / filter_map / flat_map mean; the
native translation (`lambdas.translate` + `ops._native`) is an optimisation of the same
operator and is checked here against the kernel, element by element and in order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from hydrolite import kernels
from hydrolite.planner.spark.lambdas import NotTranslatable, TExpr, function_ast, translate
from hydrolite.planner.spark.ops import _native
from hydrolite.planner.spark.ports import collect_values
from hydrolite.planner.spark.types import HType, ListT, OptT, Prim, from_python
from hydrolite.planner.spark.values import frame_of

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class Point:
    x: int
    y: int


class Pair(NamedTuple):
    name: str
    score: float


LIMIT = 10
WORDS = ("apple", "kiwi")
INTS = [-7, -3, -1, 0, 1, 2, 5, 9, 12]
STRS = ["", "a", " Hello World ", "kiwi", "apple,pie,,x", "ÄÖü"]
TUPLES = [("a", 1), ("bb", -2), ("", 0)]

CASES: list[tuple[str, Callable[..., Any], Any, list[Any]]] = [
    ("add", lambda x: x + 1, int, INTS),
    ("arith", lambda x: x * 3 - (x - 2) * 2, int, INTS),
    ("truediv", lambda x: x / 4, int, INTS),
    ("floordiv", lambda x: x // 4, int, INTS),
    ("floordiv_neg", lambda x: x // -4, int, INTS),
    ("mod", lambda x: x % 5, int, INTS),
    ("mod_neg", lambda x: x % -5, int, INTS),
    ("float_ops", lambda x: x * 0.5 + 1.25, float, [0.0, -1.5, 3.25]),
    ("compare_chain", lambda x: 0 < x <= 9, int, INTS),
    ("bool_logic", lambda x: (x > 1 and x < 9) or x == -7, int, INTS),
    ("not", lambda x: not x > 0, int, INTS),
    ("ifexp", lambda x: "big" if x > LIMIT else "small", int, INTS),
    ("in_const", lambda x: x in (1, 2, 12), int, INTS),
    ("abs_min_max", lambda x: abs(x) + max(x, 0) - min(x, 3), int, INTS),
    ("tuple_build", lambda x: (x, x * 2, str(x)), int, INTS),
    ("tuple_get", lambda t: t[1] * 2, tuple[str, int], TUPLES),
    ("tuple_neg_index", lambda t: t[-2], tuple[str, int], TUPLES),
    ("tuple_swap", lambda t: (t[1], t[0]), tuple[str, int], TUPLES),
    ("upper_lower", lambda s: s.upper() + s.lower(), str, STRS),
    ("strip", lambda s: s.strip(), str, STRS),
    ("startswith", lambda s: s.startswith("a"), str, STRS),
    ("len", lambda s: len(s), str, STRS),
    ("slice", lambda s: s[1:3], str, STRS),
    ("split", lambda s: s.split(","), str, STRS),
    ("replace", lambda s: s.replace("p", "P"), str, STRS),
    ("find", lambda s: s.find("i"), str, STRS),
    ("in_str", lambda s: "a" in s, str, STRS),
    ("fstring", lambda t: f"{t[0]}={t[1]}", tuple[str, int], TUPLES),
    ("concat", lambda t: t[0] + "!", tuple[str, int], TUPLES),
    ("captured_const", lambda s: s in WORDS, str, STRS),
    ("dataclass_field", lambda p: p.x * 10 + p.y, Point, [Point(1, 2), Point(-3, 4)]),
    ("dataclass_build", lambda p: Point(p.y, p.x), Point, [Point(1, 2), Point(-3, 4)]),
    ("namedtuple", lambda p: (p.name, p[1] * 2), Pair, [Pair("a", 1.5), Pair("b", -2.0)]),
    ("optional_is_none", lambda x: x is None, int | None, [1, None, 3]),
    ("eq_none", lambda x: x == None, int | None, [1, None]),  # noqa: E711
    ("ifexp_none", lambda x: x if x > 2 else None, int, INTS),
    ("ifexp_tuple_or_none", lambda t: (t[1], t[0]) if t[1] > 0 else None, tuple[str, int], TUPLES),
    ("float_mod", lambda x: x % -2.5, float, [0.0, -1.5, 3.25, 7.0]),
    ("optional_eq", lambda x: x == 3, int | None, [1, None, 3]),
    ("math_floor", lambda x: math.floor(x / 3), int, INTS),
    ("round", lambda x: round(x / 2), int, INTS),
    ("int_of_str", lambda s: int(s), str, ["1", " 42", "-7"]),
    ("list_index", lambda xs: xs[0] + xs[-1], list[int], [[1, 2, 3], [5]]),
    ("list_len", lambda xs: len(xs), list[int], [[1, 2, 3], []]),
]


def run_native(spark: SparkSession, f: Callable[..., Any], t: HType, values: list[Any]) -> list[Any]:
    te = translate(f, [TExpr(F.col("v"), t)])
    sf = frame_of(spark, values, t)
    rows = sf.df.select("_o0", te.col.alias("r")).orderBy("_o0").collect()
    return [te.t.decode(r["r"]) for r in rows]


class _Names:
    """The part of a BatchCtx the native operators use: fresh column names."""

    def __init__(self) -> None:
        self.n = 0

    def fresh(self, prefix: str = "_o") -> str:
        self.n += 1
        return f"{prefix}9{self.n}"


#: operator -> its kernel (the definition the native form must agree with)
KERNELS: dict[str, Callable[[Callable[..., Any], list[Any]], list[Any]]] = {
    "map": kernels.map_values,
    "filter": kernels.filter_values,
    "filter_map": kernels.filter_map_values,
    "flat_map": kernels.flat_map_values,
}


def native_kinds(te: TExpr) -> list[str]:
    """The operators whose native form applies to a function translated as `te` (map
    always; filter for bool results, filter_map for optional ones, flat_map for lists)."""
    kinds = ["map"]
    if te.t == Prim(bool):
        kinds.append("filter")
    if isinstance(te.t, OptT):
        kinds.append("filter_map")
    if isinstance(te.t, ListT):
        kinds.append("flat_map")
    return kinds


def run_native_op(spark: SparkSession, kind: str, f: Callable[..., Any], t: HType, values: list[Any]) -> list[Any]:
    """The operator's native (Column) form over `values`, collected in the stream's order."""
    te = translate(f, [TExpr(F.col("v"), t)])
    return collect_values(_native(_Names(), kind, te, frame_of(spark, values, t)))


@pytest.mark.parametrize("name, f, ty, values", CASES, ids=[c[0] for c in CASES])
def test_native_translation_matches_the_kernel(
    name: str, f: Callable[..., Any], ty: Any, values: list[Any], spark: SparkSession
) -> None:
    t = from_python(ty)
    assert t is not None
    assert run_native(spark, f, t, values) == kernels.map_values(f, values)
    for kind in native_kinds(translate(f, [TExpr(F.col("v"), t)])):
        assert run_native_op(spark, kind, f, t, values) == KERNELS[kind](f, values), kind


def test_every_native_operator_form_is_checked(spark: SparkSession) -> None:
    """The cases above reach the native form of each element-wise operator."""
    reached: set[str] = set()
    for _, f, ty, _ in CASES:
        t = from_python(ty)
        assert t is not None
        reached.update(native_kinds(translate(f, [TExpr(F.col("v"), t)])))
    assert reached == set(KERNELS)


NOT_NATIVE: list[tuple[str, Callable[..., Any], Any]] = [
    ("method_not_in_table", lambda s: s.title(), str),
    ("builtin_sorted", lambda xs: sorted(xs), list[int]),
    ("round_digits", lambda x: round(x, 2), float),  # Python rounds the binary value
    ("pow_int", lambda x: x**2, int),  # int ** int is exact in Python
    ("and_on_ints", lambda x: x and 1, int),  # returns an operand, not a bool
    ("arith_on_optional", lambda x: x + 1, int | None),  # Python raises on None
    ("dict_subscript", lambda d: d["k"], dict[str, int]),  # KeyError vs null
    ("comprehension", lambda xs: [x + 1 for x in xs], list[int]),
    ("global_function", lambda x: Point(x, x).x if callable(x) else x, int),
    ("record_of_other_types", lambda s: Point(s, s), str),  # Python keeps the str; a cast gives null
    ("record_of_a_list", lambda xs: Point(xs, 1), list[int]),  # no cast from a list to a number
]


@pytest.mark.parametrize("name, f, ty", NOT_NATIVE, ids=[c[0] for c in NOT_NATIVE])
def test_untranslatable_functions_are_refused(name: str, f: Callable[..., Any], ty: Any, spark: SparkSession) -> None:
    t = from_python(ty)
    assert t is not None
    with pytest.raises(NotTranslatable):
        translate(f, [TExpr(F.col("v"), t)])


def test_two_lambdas_on_one_line_are_told_apart() -> None:
    fs = [lambda x: x + 1, lambda y: y * 2]
    a, b = (function_ast(f) for f in fs)
    assert a is not None and b is not None
    assert (a.params, b.params) == (("x",), ("y",))


def test_def_with_single_return_is_translated(spark: SparkSession) -> None:
    def score(p: Pair) -> float:
        """Docstrings are allowed."""
        return p.score * 2 + 1

    t = from_python(Pair)
    assert t is not None
    assert run_native(spark, score, t, [Pair("a", 1.5)]) == [4.0]
