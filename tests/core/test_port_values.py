"""A source port holds each element as its declared type stores it (`hydrolite.port_values`),
in the simulator exactly as in Spark's typed column: the conversion is checked here against
the Spark planner's own encoding (`types.from_python`: encode, an Arrow column of the port's
type, decode), for generated types and values. The same values through real Spark and the
simulator: `tests/spark/test_port_values_spark.py`."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, NamedTuple

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from hydrolite.planner.spark.types import OpaqueT, from_python
from hydrolite.planner.spark.verify import typed as with_types
from hydrolite.port_values import holder


@dataclasses.dataclass(frozen=True)
class Reading:
    name: str
    value: float


class Pair(NamedTuple):
    count: int
    mean: float


class Plain:
    """A class Spark keeps pickled."""

    def __init__(self, x: float) -> None:
        self.x = x

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plain) and same(self.x, other.x)

    def __hash__(self) -> int:
        return hash(self.x)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same type all the way down (`1 == 1.0 == True` is not enough)."""
    return bool(with_types(a) == with_types(b))


def spark_holds(t: Any, x: Any) -> Any:
    """What Spark's column of `t` gives back for `x` (the feed's encoding, as Arrow)."""
    h = from_python(t)
    if h is None or isinstance(h, OpaqueT):
        return x  # pickled: as sent
    return h.decode(pa.array([h.encode(x)], type=h.arrow()).to_pylist()[0])


def held(t: Any, x: Any) -> Any:
    convert = holder(t)
    return x if convert is None else convert(x)


NUMBER = st.one_of(st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False, width=32))
DAY = st.dates(min_value=datetime.date(1970, 1, 2), max_value=datetime.date(2100, 1, 1))
MOMENT = st.datetimes(min_value=datetime.datetime(1970, 1, 2), max_value=datetime.datetime(2100, 1, 1))


def typed(depth: int = 2) -> st.SearchStrategy[tuple[Any, Any]]:
    """(a declared type, a value mypy accepts for it: an int or bool where a float or int is)."""
    leaves = st.one_of(
        st.tuples(st.just(float), NUMBER),
        st.tuples(st.just(int), st.one_of(st.booleans(), st.integers(-(2**40), 2**40))),
        st.tuples(st.just(bool), st.booleans()),
        st.tuples(st.just(str), st.text(max_size=3)),
        st.tuples(st.just(datetime.date), st.one_of(DAY, MOMENT)),  # (a datetime's time zone: the Spark test)
        st.tuples(st.just(Reading), st.builds(Reading, st.text(max_size=2), NUMBER)),
        st.tuples(st.just(Pair), st.builds(Pair, st.integers(0, 9) | st.booleans(), NUMBER)),
        st.tuples(st.just(object), NUMBER),
        st.tuples(st.just(Plain), st.builds(Plain, NUMBER)),
    )
    if depth == 0:
        return leaves
    inner = typed(depth - 1)
    return st.one_of(
        leaves,
        inner.map(lambda tv: (tv[0] | None, tv[1])),
        st.just((float | None, None)),
        inner.map(lambda tv: (int | str, tv[1]) if isinstance(tv[1], (int, str)) else tv),
        st.lists(inner, min_size=1, max_size=3).map(
            lambda tvs: (tuple[tuple(t for t, _ in tvs)], tuple(v for _, v in tvs))
        ),
        st.lists(NUMBER, max_size=3).map(lambda xs: (tuple[float, ...], tuple(xs))),
        st.lists(st.integers(-3, 3) | st.booleans(), max_size=3).map(lambda xs: (tuple[int, ...], tuple(xs))),
        st.lists(NUMBER, max_size=3).map(lambda xs: (list[float], xs)),
        st.sets(st.integers(-3, 3) | st.booleans(), max_size=3).map(lambda xs: (set[int], xs)),
        st.frozensets(st.integers(-3, 3), max_size=3).map(lambda xs: (frozenset[float], xs)),
        st.dictionaries(st.text(max_size=2), NUMBER, max_size=3).map(lambda d: (dict[str, float], d)),
        st.dictionaries(st.integers(0, 3), st.text(max_size=1), max_size=3).map(lambda d: (dict[float, str], d)),
    )


@settings(max_examples=400, deadline=None)
@given(typed())
def test_a_port_holds_what_spark_s_column_holds(tv: tuple[Any, Any]) -> None:
    t, x = tv
    assert same(held(t, x), spark_holds(t, x)), (t, x, held(t, x), spark_holds(t, x))


def test_the_conversions_by_hand() -> None:
    assert same(held(float, 3), 3.0) and same(held(float, True), 1.0) and same(held(int, True), 1)
    assert same(held(tuple[str, float], ("a", 2)), ("a", 2.0))
    assert same(held(Reading, Reading("r", 1)), Reading("r", 1.0))
    assert same(held(Pair, Pair(True, 2)), Pair(1, 2.0))
    assert same(held(datetime.date, datetime.datetime(2026, 1, 2, 3, 4)), datetime.date(2026, 1, 2))
    assert same(held(dict[float, str], {1: "a"}), {1.0: "a"})
    # kept whole on Spark (pickled): held as sent, every part
    assert holder(tuple[float, object]) is None and holder(int | str) is None and holder(Plain) is None
    assert holder(str) is None and holder(tuple[str, bool]) is None  # nothing to convert
