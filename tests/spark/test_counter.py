"""The counter story on real Spark: the simulator's scenario, the offset log, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from scenarios import counter_seed

from examples import counter
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.planner.spark.offsets import read_offset_log
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import NONE, Prim

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def longer_scenario(s: Any) -> None:
    """Several ticks: every answer counts every increment acked before the query was sent."""
    inc, query = s.sender("increment"), s.sender("query")
    ack, resp = s.receiver("increment_ack"), s.receiver("query_response")
    inc.send_many([("a", None), ("b", None)])
    ack.assert_yields_unordered([("a", None), ("b", None)])
    query.send(("a", None))
    resp.assert_yields([("a", 2)])
    inc.send(("c", None))
    query.send(("b", None))  # same tick as the increment: the aligned snapshot includes it
    resp.assert_yields_only([("b", 3)])
    ack.assert_yields_only([("c", None)])


def test_counter_seed_scenario_on_spark(spark: SparkSession, tmp_path: Path) -> None:
    SparkHarness(counter.build(), spark, str(tmp_path)).run(counter_seed)


def test_counter_longer_scenario_on_spark(spark: SparkSession, tmp_path: Path) -> None:
    SparkHarness(counter.build(), spark, str(tmp_path)).run(longer_scenario)


def test_offset_log_maps_each_tick_to_the_offsets_it_covered(spark: SparkSession, tmp_path: Path) -> None:
    inc = FeedWriter(str(tmp_path / "inc"), NONE, Prim(str))
    qry = FeedWriter(str(tmp_path / "qry"), NONE, Prim(str))
    ck = str(tmp_path / "ck")
    with FlowRunner(
        counter.build(),
        spark=spark,
        checkpoint=ck,
        inputs={"increment": f"feed:{tmp_path}/inc", "query": f"feed:{tmp_path}/qry"},
    ) as run:
        run.start()
        inc.send_many([("a", None), ("b", None)])
        run.process_all_available()
        qry.send(("a", None))
        run.process_all_available()
        inc.send(("c", None))
        qry.send(("b", None))
        run.process_all_available()
        assert run.memory("query_response").values() == [("a", 2), ("b", 3)]
    ticks = read_offset_log(ck)
    assert [(t.query, t.batch_id, t.committed) for t in ticks] == [
        ("tick0", 0, True),
        ("tick0", 1, True),
        ("tick0", 2, True),
    ]
    assert ticks[0].inputs == {"increment": (None, {"entries": 1}), "query": (None, {"entries": 0})}
    assert ticks[1].inputs == {"increment": ({"entries": 1}, {"entries": 1}), "query": ({"entries": 0}, {"entries": 1})}
    assert ticks[2].inputs == {"increment": ({"entries": 1}, {"entries": 2}), "query": ({"entries": 1}, {"entries": 2})}
    assert 'tick0 batch 2 [committed] increment: {"entries":1} -> {"entries":2}' in ticks[2].describe()


def _write_json(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _read_json_dir(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for f in sorted(path.glob("batch_id=*/part-*.json")):
        rows.extend(json.loads(line) for line in f.read_text().splitlines() if line.strip())
    return rows


def test_cli_run_once_with_file_ports_then_offsets(tmp_path: Path) -> None:
    _write_json(tmp_path / "inc" / "1.json", [{"key": "c1"}, {"key": "c2"}])
    _write_json(tmp_path / "qry" / "1.json", [{"key": "c1"}])
    ck, out = tmp_path / "ck", tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "hydrolite.cli",
        "run",
        "examples/counter.py",
        "--once",
        "--checkpoint",
        str(ck),
        "--input",
        f"increment=json:{tmp_path / 'inc'}",
        "--input",
        f"query=json:{tmp_path / 'qry'}",
        "--output",
        f"increment_ack=json:{out / 'acks'}",
        "--output",
        f"query_response=json:{out / 'resp'}",
        "--conf",
        "spark.sql.shuffle.partitions=2",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "hydrolite done: query tick0: 1 batches" in res.stdout
    assert sorted(r["_1"] for r in _read_json_dir(out / "acks")) == ["c1", "c2"]
    assert _read_json_dir(out / "resp") == [{"_1": "c1", "_2": 2}]
    res = subprocess.run(
        [sys.executable, "-m", "hydrolite.cli", "offsets", str(ck), "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    (line,) = res.stdout.splitlines()
    logged = json.loads(line)
    assert logged["query"] == "tick0" and logged["batch_id"] == 0 and logged["committed"]
    assert set(logged["inputs"]) == {"increment", "query"}
