"""Resuming a checkpoint with an edited program, and one runner per checkpoint, on Spark.

The counter runs two of its three feed entries, stops, and is resumed by an edited program
for the third: the outputs must equal an uninterrupted run of the original (the count
continues; before stable ids, an identity `map` above the fold reset it to 0, and moving a
sink statement crashed with a raw Java error). A renamed port is refused before anything
is written. Two runners on one checkpoint: the second is refused at once, the outputs are
those of one runner.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.lock import CheckpointLockedError
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import NONE, Prim
from hydrolite.planner.spark.upgrade import PlanChangedError
from tests.core.test_upgrade import Edits, counter
from tests.spark.test_exactly_once import INCREMENTS, QUERIES, counter_cli, outputs, read_outputs

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
CAP = "?maxEntriesPerTrigger=1"


def feed(d: Path, rounds: range, port: str = "increment") -> dict[str, str]:
    inc = FeedWriter(str(d / "inc"), NONE, Prim(str))
    qry = FeedWriter(str(d / "qry"), NONE, Prim(str))
    audit = FeedWriter(str(d / "audit"), Prim(str))
    for r in rounds:
        inc.send_many(INCREMENTS[r])
        qry.send_many(QUERIES[r])
        audit.send_many([f"a{r}"])
    return {port: f"feed:{d / 'inc'}{CAP}", "query": f"feed:{d / 'qry'}{CAP}", "audit": f"feed:{d / 'audit'}{CAP}"}


def run(spark: SparkSession, d: Path, flow: Any, ins: dict[str, str]) -> None:
    bound = {p: s for p, s in ins.items() if p in flow.sources}
    outs = {**outputs(d), "audit_out": f"json:{d / 'out' / 'audit'}"}
    with FlowRunner(
        flow,
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=bound,
        outputs={p: s for p, s in outs.items() if p in flow.sinks},
    ) as r:
        r.start()
        r.process_all_available()


@pytest.fixture(scope="module")
def reference(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, Any]]]:
    d = tmp_path_factory.mktemp("reference")
    run(spark, d, counter(), feed(d, range(3)))
    ref = read_outputs(d)
    assert ref["resp"] == [(0, ("q0", 2)), (1, ("q1", 3)), (1, ("q2", 3)), (2, ("q3", 6))]
    return ref


@pytest.mark.parametrize(
    "edit",
    [Edits(identity_map=True), Edits(keep_all_filter=True), Edits(extra_pipeline_first=True)],
    ids=["identity_map", "keep_all_filter", "extra_pipeline_first"],
)
def test_an_edited_program_continues_the_count(
    edit: Edits, spark: SparkSession, tmp_path: Path, reference: dict[str, Any]
) -> None:
    run(spark, tmp_path, counter(), feed(tmp_path, range(2)))
    ins = feed(tmp_path, range(2, 3))
    run(spark, tmp_path, counter(**edit), ins)
    assert read_outputs(tmp_path) == reference  # q3 sees 6, not the 3 of a count restarted from 0


def _listing(d: Path) -> dict[str, float]:
    return {str(p.relative_to(d)): p.stat().st_mtime for p in d.rglob("*") if p.is_file() and p.name != "LOCK"}


def test_a_renamed_port_is_refused_before_anything_is_written(spark: SparkSession, tmp_path: Path) -> None:
    run(spark, tmp_path, counter(), feed(tmp_path, range(2)))
    before = _listing(tmp_path / "ck")
    with pytest.raises(PlanChangedError) as info:
        run(spark, tmp_path, counter(port="incr"), feed(tmp_path, range(2, 3), port="incr"))
    msg = str(info.value)
    assert "query tick0 reads ['incr', 'query'] but its checkpoint recorded ['increment', 'query']" in msg
    assert "a renamed port is a new input" in msg
    assert _listing(tmp_path / "ck") == before


def test_a_second_runner_is_refused_while_the_first_runs(
    spark: SparkSession, tmp_path: Path, reference: dict[str, Any]
) -> None:
    ins = feed(tmp_path, range(3))
    outs = outputs(tmp_path)
    with FlowRunner(
        counter(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={p: ins[p] for p in ("increment", "query")},
        outputs=outs,
    ) as first:
        first.start()
        with pytest.raises(CheckpointLockedError, match=f"pid {os.getpid()}"):
            FlowRunner(
                counter(),
                spark=spark,
                checkpoint=str(tmp_path / "ck"),
                inputs={p: ins[p] for p in ("increment", "query")},
                outputs=outs,
            )
        first.process_all_available()
    assert read_outputs(tmp_path) == reference


def test_two_runners_started_together_write_what_one_runner_writes(tmp_path: Path, reference: dict[str, Any]) -> None:
    ins = feed(tmp_path, range(3))
    cmd = counter_cli(tmp_path, {p: ins[p] for p in ("increment", "query")})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 1], results
    refused = next(err for p, (_, err) in zip(procs, results) if p.returncode == 1)
    assert "is in use by another runner" in refused and "Traceback" not in refused
    assert not any("WARN NativeCodeLoader" in err for _, err in results)  # Spark's start-up noise is off by default
    assert read_outputs(tmp_path) == reference
