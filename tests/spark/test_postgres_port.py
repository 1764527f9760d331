"""The PostgreSQL sink (`postgres:DSN?table=T`) against a real server started for the session.

The aligned counter writes both sinks to tables; a run is crashed inside batch 1 (between
the sinks: one table has batch 1; after both sinks: both have it, Spark has not committed
it) and resumed. Every element is in its table once, and each sink has one progress row
per batch id. Upserts: the batch's last row per key wins, across batches too, for a keyed
port (`key` column) and a record port (`key=_1`); a replayed batch writes nothing.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from examples import counter
from hydrolite.planner.spark.errors import SparkRunError
from hydrolite.planner.spark.faults import InjectedFault
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.port_api import PortSpecError
from hydrolite.planner.spark.ports import parse_output
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import Prim, TupleT, from_python
from tests.spark.pg_server import postgres_server
from tests.spark.test_exactly_once import _inputs as feed_inputs
from tests.spark.test_exactly_once import write_feeds

pytestmark = pytest.mark.spark

ACKS = sorted((f"i{i}", None) for i in range(6))
ANSWERS = sorted([("q0", 2), ("q1", 3), ("q2", 3), ("q3", 6)])


@pytest.fixture(scope="session")
def pg() -> Iterator[str]:
    with postgres_server() as dsn:
        yield dsn


@pytest.fixture
def db(pg: str) -> Iterator[str]:
    """A fresh database per test (its DSN)."""
    name = f"t{uuid.uuid4().hex}"
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield pg.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def query(dsn: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]


def run_counter(spark: SparkSession, d: Path, dsn: str, fault: Any = None) -> None:
    outputs = {"increment_ack": f"postgres:{dsn}?table=acks", "query_response": f"postgres:{dsn}?table=resp"}
    with FlowRunner(
        counter.build(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=feed_inputs(d) if (d / "inc").exists() else write_feeds(d),
        outputs=outputs,
        fault=fault,
    ) as run:
        run.start()
        run.process_all_available()


@pytest.mark.parametrize("point", ["between_sinks", "after_sinks"])
def test_postgres_sink_exactly_once_across_a_crash(point: str, spark: SparkSession, tmp_path: Path, db: str) -> None:
    fired: list[int] = []

    def fault(p: str, q: str, batch: int) -> None:
        if p == point and batch == 1 and not fired:
            fired.append(batch)
            raise InjectedFault(f"crash at {p} of batch 1")

    with pytest.raises(InjectedFault):
        run_counter(spark, tmp_path, db, fault)
    progress = query(db, "SELECT query, batch_id FROM hydrolite_progress ORDER BY query, batch_id")
    assert [b for _, b in progress if _.endswith("increment_ack")] == [0, 1]
    run_counter(spark, tmp_path, db)  # Spark replays batch 1: a sink that committed it writes nothing
    assert sorted(query(db, "SELECT _1, _2 FROM acks")) == ACKS
    assert sorted(query(db, "SELECT _1, _2 FROM resp")) == ANSWERS
    progress = query(db, "SELECT query, batch_id, rows FROM hydrolite_progress ORDER BY query, batch_id")
    for port, rows in (("increment_ack", [2, 1, 3]), ("query_response", [1, 2, 1])):
        mine = [(b, n) for q, b, n in progress if q.endswith(f"-{port}")]
        assert mine == [(0, rows[0]), (1, rows[1]), (2, rows[2])], port


class P:
    """Tag."""


def upsert_program() -> hl.Flow:
    flow = hl.FlowBuilder("pg_upsert")
    p = flow.process(P)
    events = p.source("events", tuple[str, int])
    events.sink("rows")
    events.into_keyed().sink("latest")
    return flow.finalize()


def test_postgres_upserts_last_row_per_key_and_skips_replays(spark: SparkSession, tmp_path: Path, db: str) -> None:
    feed = FeedWriter(str(tmp_path / "events"), TupleT((Prim(str), Prim(int))))
    feed.send_many([("a", 1), ("b", 2)])
    feed.send_many([("a", 3), ("c", 4)])
    feed.send_many([("b", 5)])
    fired: list[int] = []

    def fault(p: str, q: str, batch: int) -> None:
        if p == "after_sinks" and batch == 1 and not fired:
            fired.append(batch)
            raise InjectedFault("crash after the sinks of batch 1")

    def run(with_fault: bool) -> None:
        with FlowRunner(
            upsert_program(),
            spark=spark,
            checkpoint=str(tmp_path / "ck"),
            inputs={"events": f"feed:{tmp_path / 'events'}?maxEntriesPerTrigger=1"},
            outputs={
                "rows": f"postgres:{db}?table=rows&upsert=true&key=_1",
                "latest": f"postgres:{db}?table=latest&upsert=true",
            },
            fault=fault if with_fault else None,
        ) as r:
            r.start()
            r.process_all_available()

    with pytest.raises(InjectedFault):
        run(True)
    assert sorted(query(db, "SELECT key, value FROM latest")) == [("a", 3), ("b", 2), ("c", 4)]
    # a row written by the crashed run's batch 1 is changed by hand: a replay must not write it again
    with psycopg.connect(db) as conn:
        conn.execute("UPDATE latest SET value = 99 WHERE key = 'c'")
    run(False)
    assert sorted(query(db, "SELECT key, value FROM latest")) == [("a", 3), ("b", 5), ("c", 99)]
    assert sorted(query(db, "SELECT _1, _2 FROM rows")) == [("a", 3), ("b", 5), ("c", 4)]
    keys = query(
        db,
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
        "WHERE i.indrelid = 'latest'::regclass AND i.indisprimary",
    )
    assert keys == [("key",)]

    feed.send_many([("d", 6), ("d", 7)])  # two rows with one key in one batch: the later one wins
    run(False)
    assert ("d", 7) in query(db, "SELECT _1, _2 FROM rows")


def test_postgres_spec_and_write_errors(spark: SparkSession, tmp_path: Path, db: str) -> None:
    with pytest.raises(PortSpecError, match=r"needs \?table=NAME"):
        parse_output(f"postgres:{db}")
    with pytest.raises(PortSpecError, match='invalid connection option "tabel"'):
        parse_output(f"postgres:{db}?table=t&tabel=x")
    with pytest.raises(PortSpecError, match="key= is used by upsert=true only"):
        parse_output(f"postgres:{db}?table=t&key=_1")
    with psycopg.connect(db) as conn:
        conn.execute("CREATE TABLE other (x int)")
    flow = hl.FlowBuilder("pg_bad")
    flow.process(P).source("events", tuple[str, int]).sink("rows")
    FeedWriter(str(tmp_path / "events"), TupleT((Prim(str), Prim(int)))).send_many([("a", 1)])
    with pytest.raises(SparkRunError, match=r"(?s)batch \d+ was not written \(rolled back\).*column \"_1\".*_1 text"):
        with FlowRunner(
            flow.finalize(),
            spark=spark,
            checkpoint=str(tmp_path / "ck"),
            inputs={"events": f"feed:{tmp_path / 'events'}"},
            outputs={"rows": f"postgres:{db}?table=other&createTable=false"},
        ) as r:
            r.start()
            r.process_all_available()
    assert query(db, "SELECT count(*) FROM other") == [(0,)]


@dataclass
class Order:
    name: str
    tags: list[str]
    extra: dict[str, int]
    pair: tuple[int, float]
    when: datetime.datetime | None


def test_postgres_column_types_of_a_record_port(spark: SparkSession, tmp_path: Path, db: str) -> None:
    when = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc)
    order_type = from_python(Order)
    assert order_type is not None
    orders = [Order("a", ["x", "y"], {"n": 1}, (2, 0.5), when), Order("b", [], {}, (3, 1.5), None)]
    FeedWriter(str(tmp_path / "orders"), order_type).send_many(orders)
    flow = hl.FlowBuilder("pg_types")
    flow.process(P).source("orders", Order).sink("orders_out")
    with FlowRunner(
        flow.finalize(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"orders": f"feed:{tmp_path / 'orders'}"},
        outputs={"orders_out": f"postgres:{db}?table=orders"},
    ) as r:
        r.start()
        r.process_all_available()
    columns = query(
        db, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'orders' ORDER BY 1"
    )
    assert columns == [
        ("extra", "jsonb"),
        ("name", "text"),
        ("pair", "jsonb"),
        ("tags", "ARRAY"),
        ("when", "timestamp with time zone"),
    ]
    got = query(db, 'SELECT name, tags, extra, pair, "when" FROM orders ORDER BY name')
    assert got == [("a", ["x", "y"], {"n": 1}, {"_1": 2, "_2": 0.5}, when), ("b", [], {}, {"_1": 3, "_2": 1.5}, None)]
