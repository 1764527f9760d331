"""Exactly-once: crash a run inside a micro-batch, restart from the checkpoint, compare.

The aligned counter has two sinks and a stateful fold. Inputs are feeds capped at one entry
per micro-batch, so batch ids are deterministic. A run is crashed at each point of batch 1
(before the state version is written, before any output, between the two sinks, after
both sinks but before Spark commits the batch), then restarted from the same checkpoint
without the fault. Across both sinks nothing may be lost or duplicated, and the answers
(which depend on the versioned state) must equal an uninterrupted run's.

In-process crashes raise from a fault hook; the subprocess test kills the CLI with
`os._exit` (no cleanup at all) and restarts it: the same command line through the CLI's
`main`, in this process (on the test session's SparkSession: a second JVM would prove no more).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from examples import counter
from hydrolite.cli import main
from hydrolite.planner.spark.faults import FAULT_POINTS, InjectedFault, fault_from_env
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import NONE, Prim

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

INCREMENTS = [[("i0", None), ("i1", None)], [("i2", None)], [("i3", None), ("i4", None), ("i5", None)]]
QUERIES = [[("q0", None)], [("q1", None), ("q2", None)], [("q3", None)]]


def write_feeds(d: Path) -> dict[str, str]:
    inc = FeedWriter(str(d / "inc"), NONE, Prim(str))
    qry = FeedWriter(str(d / "qry"), NONE, Prim(str))
    for i, q in zip(INCREMENTS, QUERIES):
        inc.send_many(i)
        qry.send_many(q)
    cap = "?maxEntriesPerTrigger=1"
    return {"increment": f"feed:{d / 'inc'}{cap}", "query": f"feed:{d / 'qry'}{cap}"}


def outputs(d: Path) -> dict[str, str]:
    return {"increment_ack": f"json:{d / 'out' / 'acks'}", "query_response": f"json:{d / 'out' / 'resp'}"}


def read_outputs(d: Path) -> dict[str, list[tuple[int, Any]]]:
    """Every output row with the batch it was written by."""
    out: dict[str, list[tuple[int, Any]]] = {}
    for name in ("acks", "resp"):
        rows: list[tuple[int, Any]] = []
        for part in sorted((d / "out" / name).glob("batch_id=*/part-*.json")):
            batch = int(part.parent.name.split("=")[1])
            for line in part.read_text().splitlines():
                if line.strip():
                    obj = json.loads(line)  # Spark's JSON writer leaves out null fields
                    rows.append((batch, (obj.get("_1"), obj.get("_2"))))
        out[name] = sorted(rows)
    return out


def run_to_end(spark: SparkSession, d: Path, fault: Any = None) -> None:
    with FlowRunner(
        counter.build(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=write_feeds(d) if not (d / "inc").exists() else _inputs(d),
        outputs=outputs(d),
        fault=fault,
    ) as run:
        run.start()
        run.process_all_available()


def _inputs(d: Path) -> dict[str, str]:
    cap = "?maxEntriesPerTrigger=1"
    return {"increment": f"feed:{d / 'inc'}{cap}", "query": f"feed:{d / 'qry'}{cap}"}


@pytest.fixture(scope="module")
def reference(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, Any]]]:
    d = tmp_path_factory.mktemp("reference")
    run_to_end(spark, d)
    ref = read_outputs(d)
    # sanity: every increment acked once, every query answered once, counts include the tick's increments
    assert sorted(k for _, (k, _v) in ref["acks"]) == [f"i{i}" for i in range(6)]
    assert ref["resp"] == [(0, ("q0", 2)), (1, ("q1", 3)), (1, ("q2", 3)), (2, ("q3", 6))]
    return ref


@pytest.mark.parametrize("point", FAULT_POINTS)
def test_crash_inside_a_batch_then_restart(
    point: str, spark: SparkSession, tmp_path: Path, reference: dict[str, Any]
) -> None:
    fired: list[str] = []

    def fault(p: str, query: str, batch: int) -> None:
        if p == point and batch == 1 and not fired:
            fired.append(p)
            raise InjectedFault(f"crash at {p} of batch {batch}")

    with pytest.raises(InjectedFault, match=f"crash at {point} of batch 1"):
        run_to_end(spark, tmp_path, fault)
    assert fired == [point]
    partial = read_outputs(tmp_path)
    assert all(b <= 1 for rows in partial.values() for b, _ in rows)  # the run stopped inside batch 1
    run_to_end(spark, tmp_path)  # restart from the checkpoint: Spark replays batch 1
    assert read_outputs(tmp_path) == reference


def counter_cli(d: Path, inputs: dict[str, str]) -> list[str]:
    """`hydrolite run examples/counter.py` on checkpoint d/ck with these inputs and `outputs(d)`."""
    cmd = [sys.executable, "-m", "hydrolite.cli", "run", "examples/counter.py", "--until-idle", "2"]
    cmd += ["--checkpoint", str(d / "ck"), "--conf", "spark.sql.shuffle.partitions=2"]
    for port, spec in {**inputs, **outputs(d)}.items():
        cmd += ["--input" if port in inputs else "--output", f"{port}={spec}"]
    return cmd


def test_killed_process_restarts_exactly_once(
    tmp_path: Path,
    reference: dict[str, Any],
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cmd = counter_cli(tmp_path, write_feeds(tmp_path))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.run(
        cmd,
        cwd=ROOT,
        env={**env, "HYDROLITE_FAULT": "kill:between_sinks:tick0:1"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert killed.returncode == 137, killed.stderr[-2000:]
    acks = read_outputs(tmp_path)["acks"]
    # died between the sinks of batch 1: its acks are written (file sinks run concurrently,
    # so its answers may be written too), and the batch is not committed
    assert {b for b, _ in acks} == {0, 1}
    assert not (tmp_path / "ck" / "tick0" / "spark" / "commits" / "1").exists()
    monkeypatch.chdir(ROOT)  # the command's program path is relative to the repository
    assert main(cmd[3:]) == 0  # `python -m hydrolite.cli` + the same arguments, without the fault
    assert "query tick0: resuming after batch 0" in capsys.readouterr().out  # batch 1 died before its commit
    assert read_outputs(tmp_path) == reference


def test_fault_spec_from_environment() -> None:
    hook = fault_from_env("raise:after_sinks:tick0:3")
    assert hook is not None
    hook("after_sinks", "tick0", 2)
    with pytest.raises(InjectedFault):
        hook("after_sinks", "tick0", 3)
    assert fault_from_env("") is None


def test_callback_sinks_are_called_once_per_batch_across_a_crash(spark: SparkSession, tmp_path: Path) -> None:
    acks: list[tuple[int, list[Any]]] = []
    answers: list[tuple[int, list[Any]]] = []
    fired: list[int] = []

    def fault(p: str, query: str, batch: int) -> None:
        if p == "after_sinks" and batch == 1 and not fired:  # both callbacks of batch 1 have returned
            fired.append(batch)
            raise InjectedFault("crash after the callbacks of batch 1")

    def run(with_fault: bool) -> None:
        outs = {
            "increment_ack": lambda b, vs: acks.append((b, sorted(vs))),
            "query_response": lambda b, vs: answers.append((b, vs)),
        }
        with FlowRunner(
            counter.build(),
            spark=spark,
            checkpoint=str(tmp_path / "ck"),
            inputs=_inputs(tmp_path),
            outputs=outs,
            fault=fault if with_fault else None,
        ) as r:
            r.start()
            r.process_all_available()

    write_feeds(tmp_path)
    with pytest.raises(InjectedFault):
        run(True)
    run(False)  # Spark replays batch 1: its callbacks already returned, so they are not called again
    assert [b for b, _ in acks] == [0, 1, 2] and [b for b, _ in answers] == [0, 1, 2]
    assert answers == [(0, [("q0", 2)]), (1, [("q1", 3), ("q2", 3)]), (2, [("q3", 6)])]
