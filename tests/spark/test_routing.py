"""`demux_by_key()` routed natively (planner/spark/routing.py) lands every key where the
simulator's `member_of_key` does: generated key types and keys, checked byte for byte and
member for member in one Spark job per example. (The sharded cluster programs take that
path on Spark: tests/spark/test_cluster.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from hydrolite.locations import sharding
from hydrolite.planner.spark import routing
from hydrolite.planner.spark.lambdas import NotTranslatable, TExpr
from hydrolite.planner.spark.types import NONE, HType, Prim, TupleT

pytestmark = pytest.mark.spark

LEAVES: list[tuple[HType, st.SearchStrategy[Any]]] = [
    (Prim(int), st.integers(-(2**63), 2**63 - 1)),
    (Prim(str), st.text(st.characters(exclude_categories=["Cs"]), max_size=12)),
    (Prim(bool), st.booleans()),
    (Prim(bytes), st.binary(max_size=12)),
    (NONE, st.none()),
]


def _typed() -> st.SearchStrategy[tuple[HType, st.SearchStrategy[Any]]]:
    """A key type routing.py encodes, with a strategy for its values (None: a null key)."""

    def tuples(inner: st.SearchStrategy[tuple[HType, st.SearchStrategy[Any]]]) -> st.SearchStrategy[Any]:
        def build(parts: list[tuple[HType, st.SearchStrategy[Any]]]) -> tuple[HType, st.SearchStrategy[Any]]:
            return TupleT(tuple(t for t, _ in parts)), st.tuples(*(s for _, s in parts))

        return st.lists(inner, max_size=3).map(build)

    return st.recursive(st.sampled_from(LEAVES), tuples, max_leaves=5)


@st.composite
def key_columns(draw: st.DrawFn) -> list[tuple[HType, list[Any]]]:
    """Up to 6 key columns of generated types, 12 keys each (None: a null key)."""
    cols = []
    for t, values in draw(st.lists(_typed(), min_size=1, max_size=6)):
        cols.append((t, draw(st.lists(st.none() | values, min_size=12, max_size=12))))
    return cols


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(columns=key_columns())
def test_spark_routes_every_key_where_the_simulator_does(
    spark: SparkSession, columns: list[tuple[HType, list[Any]]]
) -> None:
    fields = [T.StructField(f"k{c}", t.spark()) for c, (t, _) in enumerate(columns)]
    schema = T.StructType([T.StructField("i", T.LongType()), *fields])
    rows = [(i, *(t.encode(keys[i]) for t, keys in columns)) for i in range(12)]
    exprs = [F.col("i")]
    for c, (t, _) in enumerate(columns):
        k = F.col(f"k{c}")
        exprs.append(routing.key_bytes(k, t).alias(f"b{c}"))
        exprs += [routing.owner_of_key(k, t, m).alias(f"m{c}_{m}") for m in (1, 3, 7)]
    got = sorted(spark.createDataFrame(rows, schema).select(*exprs).collect())
    for c, (t, keys) in enumerate(columns):
        assert [bytes(r[f"b{c}"]) for r in got] == [sharding.key_bytes(x) for x in keys], t.describe()
        for m in (1, 3, 7):
            assert [r[f"m{c}_{m}"] for r in got] == [sharding.member_of_key(x, m) for x in keys], (t.describe(), m)


@pytest.mark.parametrize("t", [Prim(float), TupleT((Prim(str), Prim(float)))], ids=["float", "tuple_with_float"])
def test_keys_spark_prints_differently_route_in_python(t: HType) -> None:
    """`repr(0.1)` and Spark's `cast(0.1 as string)` need not agree: such keys keep the Python route."""
    with pytest.raises(NotTranslatable, match="routes keys of type"):
        routing.owner_column([TExpr(F.col("v"), TupleT((t, Prim(int))))], 3, from_cluster=False)
