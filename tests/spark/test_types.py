"""Element types -> Spark schemas, and values through sources, operators and sinks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import OPAQUE, Prim, from_python, infer_result, of_value


@dataclass(frozen=True)
class Order:
    id: int
    item: str
    tags: list[str]
    price: float | None


class Move(NamedTuple):
    who: str
    steps: tuple[int, int]


SCHEMAS = [
    (int, "bigint"),
    (type(None), "boolean"),
    (tuple[str, int], "struct<_1:string,_2:bigint>"),
    (Order, "struct<id:bigint,item:string,tags:array<string>,price:double>"),
    (Move, "struct<who:string,steps:struct<_1:bigint,_2:bigint>>"),
    (dict[str, list[int]], "map<string,array<bigint>>"),
    (int | None, "bigint"),
    (set[str], "array<string>"),
]


@pytest.mark.parametrize("ty, ddl", SCHEMAS, ids=[str(s[0]) for s in SCHEMAS])
def test_python_types_map_to_spark_schemas(ty: Any, ddl: str) -> None:
    t = from_python(ty)
    assert t is not None and t.spark().simpleString() == ddl


def test_values_roundtrip_through_the_encoding() -> None:
    for ty, value in [
        (Order, Order(1, "x", ["a"], None)),
        (Move, Move("m", (1, -2))),
        (dict[str, list[int]], {"a": [1]}),
        (set[str], {"b", "a"}),
    ]:
        t = from_python(ty)
        assert t is not None
        assert t.decode(t.encode(value)) == value


def test_types_of_values_and_results() -> None:
    assert of_value((1, "a")) is not None and of_value(object()) is None
    assert infer_result(lambda x: (x, str(x)), [Prim(int)]).describe() == "tuple[int, str]"
    assert infer_result(lambda x: object(), [Prim(int)]) is OPAQUE


class S:
    """Tag."""


def orders_program() -> hl.Flow:
    flow = hl.FlowBuilder("orders")
    p = flow.process(S)
    t = p.tick()
    orders = p.source("orders", Order).batch(t, nondet("one batch per step"))
    orders.map(lambda o: (o.item, o.price)).all_ticks().sink("priced")
    orders.filter(lambda o: o.price is None).map(lambda o: o.tags).all_ticks().sink("untagged")
    orders.map(lambda o: Move(o.item, (o.id, len(o.tags)))).all_ticks().sink("moves")
    return flow.finalize()


@pytest.mark.spark
def test_records_lists_and_optionals_through_a_query(spark: SparkSession, tmp_path: Path) -> None:
    def scenario(s: Any) -> None:
        s.sender("orders").send_many([Order(1, "tea", ["hot"], 2.5), Order(2, "ice", [], None)])
        s.receiver("priced").assert_yields_only([("tea", 2.5), ("ice", None)])
        s.receiver("untagged").assert_yields_only([[]])
        s.receiver("moves").assert_yields_only([Move("tea", (1, 1)), Move("ice", (2, 0))])

    h = SparkHarness(orders_program(), spark, str(tmp_path))
    h.run(scenario)
    assert set(h.runner.stages[0].progress.fn_paths.values()) == {"native"}


@pytest.mark.spark
def test_json_files_in_and_out_with_a_record_type(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    rows = [{"id": 1, "item": "tea", "tags": ["hot"], "price": 2.5}, {"id": 2, "item": "ice", "tags": []}]
    (tmp_path / "in" / "a.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    outs = {p: f"json:{tmp_path / p}" for p in ("priced", "untagged", "moves")}
    with FlowRunner(
        orders_program(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"orders": f"json:{tmp_path / 'in'}"},
        outputs=outs,
    ) as run:
        run.start(once=True)
        run.await_termination()
    moves = [
        json.loads(x)
        for f in sorted((tmp_path / "moves").glob("batch_id=0/*.json"))
        for x in f.read_text().splitlines()
    ]
    assert sorted(moves, key=lambda m: m["who"]) == [
        {"who": "ice", "steps": {"_1": 2, "_2": 0}},
        {"who": "tea", "steps": {"_1": 1, "_2": 1}},
    ]


def literal_program() -> hl.Flow:
    flow = hl.FlowBuilder("literal")
    p = flow.process(S)
    t = p.tick()
    p.source_iter([3, 1, 2]).batch(t, nondet("all at once")).sort().all_ticks().sink("sorted")
    return flow.finalize()


@pytest.mark.spark
def test_bounded_only_program_runs_as_a_batch_job(spark: SparkSession, tmp_path: Path) -> None:
    with FlowRunner(literal_program(), spark=spark, checkpoint=str(tmp_path)) as run:
        assert not run.plan.stages[0].streaming
        run.start()
        assert run.memory("sorted").values() == [1, 2, 3]
    with FlowRunner(literal_program(), spark=spark, checkpoint=str(tmp_path)) as again:
        again.start()  # the literal input was emitted once: a rerun from the checkpoint adds nothing
        assert again.memory("sorted").values() == []
