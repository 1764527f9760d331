"""`grouping.group_bytes` is Python's equality as bytes: the executors group keys by it.

Hypothesis draws values of the types a key or a `unique()` element commonly has — numbers in
every form (int, bool, float with -0.0, Decimal, Fraction, complex), strings, and tuples,
lists, frozensets and dicts of them — and checks that two values encode alike exactly when
they compare equal, which is how the simulator's dicts and sets tell keys apart.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import enum
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hydrolite.planner.spark.grouping import canonical, group_bytes

NUMBERS = st.one_of(
    st.integers(-3, 3),
    st.booleans(),
    st.sampled_from([0.0, -0.0, 0.5, -1.0, 2.0, 1e300, float("inf"), float("-inf"), 0.1]),
    st.sampled_from(
        [Decimal("1.0"), Decimal("1.00"), Decimal("0.5"), Decimal("-0"), Decimal("0.1"), Decimal("Infinity")]
    ),
    st.sampled_from([Fraction(1, 2), Fraction(1, 10), Fraction(4, 2), Fraction(-1, 3)]),
    st.sampled_from([complex(1, 0), complex(0.5, 0), complex(1, 1), complex(-0.0, 0.0)]),
)
ATOMS = st.one_of(NUMBERS, st.sampled_from(["", "a", "b"]), st.sampled_from([b"", b"a"]), st.none())
VALUES = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        st.tuples(inner, inner),
        st.lists(inner, max_size=3),
        st.frozensets(ATOMS, max_size=3),
        st.dictionaries(ATOMS, inner, max_size=3),
    ),
    max_leaves=6,
)


@settings(max_examples=600, deadline=None)
@given(VALUES, VALUES)
def test_two_values_encode_alike_exactly_when_they_are_equal(a: Any, b: Any) -> None:
    assert (group_bytes(a) == group_bytes(b)) == (a == b), (a, b)


@settings(max_examples=200, deadline=None)
@given(VALUES)
def test_a_value_encodes_alike_in_every_form(a: Any) -> None:
    """The forms a key may take on its way: a copy, a tuple of it (one element), a set rebuilt."""
    assert group_bytes(a) == group_bytes(_rebuilt(a))
    assert group_bytes((a,)) == group_bytes((_rebuilt(a),))


def _rebuilt(a: Any) -> Any:
    if isinstance(a, frozenset):
        return frozenset(reversed([_rebuilt(x) for x in a]))
    if isinstance(a, dict):
        return {k: _rebuilt(v) for k, v in reversed(list(a.items()))}
    if isinstance(a, tuple):
        return tuple(_rebuilt(x) for x in a)
    if isinstance(a, list):
        return [_rebuilt(x) for x in a]
    if isinstance(a, bool):
        return int(a)
    if isinstance(a, float) and a.is_integer():
        return int(a)
    return a


class Color(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    LOW = 1


@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float
    label: str = dataclasses.field(default="", compare=False)


def test_records_enums_and_times_group_as_they_compare() -> None:
    pair = collections.namedtuple("pair", "a b")
    utc, plus2 = datetime.timezone.utc, datetime.timezone(datetime.timedelta(hours=2))
    assert group_bytes(pair(1, "x")) == group_bytes((1.0, "x"))  # a NamedTuple is its tuple
    assert group_bytes(Point(1, 2, "a")) == group_bytes(Point(1.0, 2.0, "b"))  # (label: compare=False)
    assert group_bytes(Point(1, 2)) != group_bytes((1, 2))
    assert group_bytes(Level.LOW) == group_bytes(1) and group_bytes(Color.RED) != group_bytes(1)
    noon = datetime.datetime(2026, 1, 1, 12, tzinfo=utc)
    assert group_bytes(noon) == group_bytes(datetime.datetime(2026, 1, 1, 14, tzinfo=plus2))
    assert group_bytes(noon.replace(tzinfo=None)) != group_bytes(noon)  # (naive and aware are never equal)
    assert group_bytes(datetime.date(2026, 1, 1)) != group_bytes(datetime.datetime(2026, 1, 1))
    assert group_bytes(datetime.timedelta(seconds=1)) == group_bytes(datetime.timedelta(milliseconds=1000))
    # every NaN is one value (Python's NaN equals nothing; Spark groups NaNs together)
    assert group_bytes(float("nan")) == group_bytes(-float("nan")) == group_bytes(Decimal("NaN"))


def test_common_keys_keep_their_pickled_bytes() -> None:
    """ints and strs (most keys) are not rebuilt: `canonical` gives them back as they are."""
    for k in (0, -7, 2**70, "", "key"):
        assert canonical(k) is k
