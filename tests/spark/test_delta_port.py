"""Delta Lake ports (`delta:PATH`, delta-rs) against real Delta tables on disk.

Sink: the aligned counter writes both sinks to Delta tables; a run is crashed inside batch 1
(between the two sinks: one table has batch 1, the other not; after both sinks: both have it
but Spark never committed the batch), then resumed from the checkpoint. The tables, read
back with deltalake and with DuckDB (its own Parquet reader over the files the table's
snapshot names), hold every element exactly once, and each batch id is one commit carrying
its application transaction. A killed CLI process (`HYDROLITE_FAULT=kill`) does the same,
resumed by the same command line through the CLI's `main` in this process.

Source: a table appended to by deltalake is read version by version (one version per
micro-batch), a crash inside a batch replays the same versions, a compaction adds nothing,
a DELETE stops the stream unless `skipChangeCommits=true`, and the table's columns and nulls
are checked against the port's type.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import SparkSession

import hydrolite as hl
from examples import counter
from hydrolite.cli import main
from hydrolite.planner.spark.errors import BadDataError, SparkRunError
from hydrolite.planner.spark.faults import InjectedFault
from hydrolite.planner.spark.port_api import PortSpecError
from hydrolite.planner.spark.runtime import FlowRunner
from tests.spark.test_exactly_once import _inputs as feed_inputs
from tests.spark.test_exactly_once import write_feeds

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

ACKS = sorted((f"i{i}", None) for i in range(6))
ANSWERS = sorted([("q0", 2), ("q1", 3), ("q2", 3), ("q3", 6)])


def delta_outputs(d: Path) -> dict[str, str]:
    return {"increment_ack": f"delta:{d / 'acks'}", "query_response": f"delta:{d / 'resp'}"}


def rows_deltalake(path: Path) -> list[tuple[Any, Any]]:
    table = pa.table(DeltaTable(str(path)).to_pyarrow_table())
    return sorted(zip(table.column("_1").to_pylist(), table.column("_2").to_pylist()))


def rows_duckdb(path: Path) -> list[tuple[Any, Any]]:
    """The table's rows through DuckDB: the Parquet files of the current snapshot (the log's adds)."""
    files = DeltaTable(str(path)).file_uris()
    con = duckdb.connect()
    try:
        got = con.execute("SELECT _1, _2 FROM read_parquet(?)", [files]).fetchall()
    finally:
        con.close()
    return sorted((a, b) for a, b in got)


def commits(path: Path) -> list[tuple[str, int]]:
    """(operation, app-transaction version) of every commit of the table, oldest first."""
    out: list[tuple[str, int]] = []
    log = path / "_delta_log"
    for entry in sorted(log.glob("*.json")):
        import json

        actions = [json.loads(line) for line in entry.read_text().splitlines() if line.strip()]
        op = next(a["commitInfo"]["operation"] for a in actions if "commitInfo" in a)
        txn = [a["txn"]["version"] for a in actions if "txn" in a]
        out.append((op, txn[0] if txn else -1))
    return out


def run_counter(spark: SparkSession, d: Path, fault: Any = None) -> None:
    with FlowRunner(
        counter.build(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=feed_inputs(d) if (d / "inc").exists() else write_feeds(d),
        outputs=delta_outputs(d),
        fault=fault,
    ) as run:
        run.start()
        run.process_all_available()


def check_tables(d: Path) -> None:
    for name, expected in (("acks", ACKS), ("resp", ANSWERS)):
        assert rows_deltalake(d / name) == expected, name
        assert rows_duckdb(d / name) == expected, name
        # one WRITE per batch id 0, 1, 2, in order: no batch committed twice
        assert commits(d / name) == [("WRITE", 0), ("WRITE", 1), ("WRITE", 2)], name


@pytest.mark.parametrize("point", ["between_sinks", "after_sinks"])
def test_delta_sink_exactly_once_across_a_crash(point: str, spark: SparkSession, tmp_path: Path) -> None:
    fired: list[int] = []

    def fault(p: str, query: str, batch: int) -> None:
        if p == point and batch == 1 and not fired:
            fired.append(batch)
            raise InjectedFault(f"crash at {p} of batch 1")

    with pytest.raises(InjectedFault):
        run_counter(spark, tmp_path, fault)
    assert DeltaTable(str(tmp_path / "acks")).transaction_version(_app_id(tmp_path, "increment_ack")) == 1
    if point == "after_sinks":  # both tables committed batch 1; Spark did not
        assert [t for _, t in commits(tmp_path / "resp")] == [0, 1]
    run_counter(spark, tmp_path)  # Spark replays batch 1: the tables that have it skip it
    check_tables(tmp_path)


def _app_id(d: Path, port: str) -> str:
    import json

    ident = json.loads((d / "ck" / "tick0" / "sink-identity.json").read_text())["query"]
    return f"hydrolite-{ident}-{port}"


def test_killed_cli_resumes_delta_sinks_exactly_once(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_feeds(tmp_path)
    cmd = [sys.executable, "-m", "hydrolite.cli", "run", "examples/counter.py", "--until-idle", "2"]
    cmd += ["--checkpoint", str(tmp_path / "ck"), "--conf", "spark.sql.shuffle.partitions=2"]
    for port, spec in inputs.items():
        cmd += ["--input", f"{port}={spec}"]
    for port, spec in delta_outputs(tmp_path).items():
        cmd += ["--output", f"{port}={spec}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.run(
        cmd, cwd=ROOT, env={**env, "HYDROLITE_FAULT": "kill:after_sinks:tick0:1"}, capture_output=True, text=True
    )
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert [t for _, t in commits(tmp_path / "acks")] == [0, 1]  # batch 1 is in the table, not in Spark's log
    assert not (tmp_path / "ck" / "tick0" / "spark" / "commits" / "1").exists()
    # resumed on the test session's SparkSession (a second JVM would prove no more)
    monkeypatch.chdir(ROOT)  # the command's program path is relative to the repository
    assert main(cmd[3:]) == 0  # `python -m hydrolite.cli` + the same arguments, without the fault
    assert "resuming after batch 0" in capsys.readouterr().out
    check_tables(tmp_path)


# ------------------------------------------------------------------ the source
class P:
    """Tag."""


@dataclass
class Event:
    name: str
    amount: int
    note: str | None


def events_program() -> hl.Flow:
    flow = hl.FlowBuilder("delta_events")
    p = flow.process(P)
    p.source("events", Event).map(lambda e: (e.name, e.amount * 10, e.note)).sink("scaled")
    return flow.finalize()


def append(path: Path, rows: list[tuple[str, int, str | None]]) -> None:
    table = pa.table(
        {
            "name": pa.array([r[0] for r in rows], pa.string()),
            "amount": pa.array([r[1] for r in rows], pa.int64()),
            "note": pa.array([r[2] for r in rows], pa.string()),
        }
    )
    write_deltalake(str(path), table, mode="append")


VERSIONS = [[("a", 1, None), ("b", 2, "x")], [("c", 3, None)], [("d", 4, "y"), ("e", 5, None), ("f", 6, None)]]


def scaled(rows: list[tuple[str, int, str | None]]) -> list[tuple[str, int, str | None]]:
    return [(n, a * 10, note) for n, a, note in rows]


def read_events(spark: SparkSession, d: Path, spec: str, fault: Any = None) -> dict[int, list[Any]]:
    with FlowRunner(
        events_program(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs={"events": spec},
        outputs={"scaled": "memory"},
        fault=fault,
    ) as run:
        run.start()
        run.process_all_available()
        return dict(run.memory("scaled").batches)


def test_delta_source_reads_versions_in_order_and_resumes(spark: SparkSession, tmp_path: Path) -> None:
    table = tmp_path / "events"
    for rows in VERSIONS:
        append(table, rows)
    spec = f"delta:{table}?maxVersionsPerTrigger=1"
    fired: list[int] = []

    def crash(p: str, query: str, batch: int) -> None:
        if p == "after_sinks" and batch == 1 and not fired:
            fired.append(batch)
            raise InjectedFault("crash after the sinks of batch 1")

    with pytest.raises(InjectedFault):
        read_events(spark, tmp_path, spec, crash)
    # resumed: batch 1 is replayed from the same versions, then batch 2; one version per batch, in order
    batches = read_events(spark, tmp_path, spec)
    assert batches == {1: scaled(VERSIONS[1]), 2: scaled(VERSIONS[2])}

    DeltaTable(str(table)).optimize.compact()  # rewrites files without changing data: nothing new
    append(table, [("g", 7, "z")])
    assert read_events(spark, tmp_path, spec) == {3: [], 4: scaled([("g", 7, "z")])}  # version 3: the compaction

    DeltaTable(str(table)).delete("name = 'a'")  # not an append
    append(table, [("h", 8, None)])
    with pytest.raises(SparkRunError, match=r"version 5 of the delta table changed existing rows \(DELETE") as err:
        read_events(spark, tmp_path, spec)
    assert type(err.value) is SparkRunError and "skipChangeCommits=true" in str(err.value)
    skipping = read_events(spark, tmp_path, spec + "&skipChangeCommits=true")
    assert [v for b in sorted(skipping) for v in skipping[b]] == scaled([("h", 8, None)])


def test_delta_source_starting_version_latest(spark: SparkSession, tmp_path: Path) -> None:
    table = tmp_path / "events"
    append(table, VERSIONS[0])
    with FlowRunner(
        events_program(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"events": f"delta:{table}?startingVersion=latest"},
        outputs={"scaled": "memory"},
    ) as run:
        run.start()
        run.process_all_available()
        append(table, VERSIONS[1])
        run.process_all_available()
        assert run.memory("scaled").values() == scaled(VERSIONS[1])


def test_delta_source_checks_columns_and_nulls(spark: SparkSession, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    write_deltalake(str(wrong), pa.table({"name": ["a"], "amount": ["1"], "note": [None], "extra": [1]}))
    with pytest.raises(PortSpecError, match=r"column amount is string.*unknown column\(s\) extra") as err:
        read_events(spark, tmp_path / "a", f"delta:{wrong}")
    assert "the port reads columns name: str, amount: int, note: str | None" in str(err.value)

    with pytest.raises(PortSpecError, match="(?s)no Delta table at .*waitForTable=true"):
        read_events(spark, tmp_path / "b", f"delta:{tmp_path / 'missing'}")

    nulls = tmp_path / "nulls"
    append(nulls, [("a", 1, None)])
    write_deltalake(
        str(nulls),
        pa.table({"name": pa.array([None], pa.string()), "amount": [2], "note": pa.array(["n"], pa.string())}),
        mode="append",
    )
    with pytest.raises(BadDataError, match=r"version 1 of the delta table holds a null in name \(row 0"):
        read_events(spark, tmp_path / "c", f"delta:{nulls}")
