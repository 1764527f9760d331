"""hydrolite's per-key running count makes Spark do exactly the work of the hand-written
`groupBy(key).count()` it compiles to (issue 14's comparison, `benchmarks/bench_state_paths.py`).

The benchmark measures the two side by side, and on this machine they are level within its
noise. What keeps them level is structural: per micro-batch, the same Spark jobs, each with
the same stages and tasks, over the same files. This test checks that structure from Spark's
status tracker, so that a change adding a job (an emptiness check, a second scan, a write
more) or a shuffle to this path fails here instead of showing up as a few percent in a
benchmark nobody reruns. It is not timed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from hydrolite.planner.spark.runtime import FlowRunner
from tests.spark.test_native_state import _program

pytestmark = pytest.mark.spark

FILES = [[f"k{(i * 7 + b) % 40}" for i in range(120)] for b in range(3)]  # 3 micro-batches over 40 keys


def _inputs(d: Path) -> str:
    d.mkdir(parents=True)
    for b, keys in enumerate(FILES):
        path = d / f"part-{b}.parquet"
        pq.write_table(pa.table({"key": keys, "value": list(range(len(keys)))}), path)
        os.utime(path, (1_000_000 + b, 1_000_000 + b))  # the file source takes the oldest first
    return str(d)


def _work(spark: SparkSession, queries: list[Any]) -> list[list[tuple[str, int]]]:
    """Per micro-batch (in order), the tasks of each stage of each job Spark ran for it."""
    st = spark.sparkContext.statusTracker()
    per_batch: list[list[tuple[str, int]]] = []
    for q in queries:
        jobs = sorted(st.getJobIdsForGroup(str(q.runId)))
        batches = [int(p.batchId) for p in q.recentProgress]
        assert len(jobs) == len(batches), (jobs, batches)  # one job per batch: checked below per stage
        for j in jobs:
            info = st.getJobInfo(j)
            assert info is not None and info.status == "SUCCEEDED"
            stages = [st.getStageInfo(s) for s in sorted(info.stageIds)]
            per_batch.append([(s.name.split(" at ")[0], s.numTasks) for s in stages if s is not None])
    return per_batch


def _native(spark: SparkSession, src: str, out: Path) -> Any:
    def write(df: Any, batch_id: int) -> None:
        df.toDF("_1", "_2").write.mode("overwrite").parquet(str(out / f"batch_id={batch_id}"))

    events = spark.readStream.schema("key string, value long").option("maxFilesPerTrigger", 1).parquet(src)
    w = events.groupBy("key").count().writeStream.outputMode("update").foreachBatch(write)
    q = w.option("checkpointLocation", str(out / "ck")).trigger(availableNow=True).start()
    q.awaitTermination()
    return q


def _answers(d: Path) -> dict[int, list[tuple[str, int]]]:
    out: dict[int, list[tuple[str, int]]] = {}
    for b in sorted(d.glob("batch_id=*")):
        t = pq.read_table(b)
        rows = sorted(zip(t.column(0).to_pylist(), t.column(1).to_pylist()))
        if rows:
            out[int(b.name.split("=")[1])] = rows
    return out


def test_the_running_count_runs_the_jobs_stages_and_tasks_of_the_hand_written_query(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = _inputs(tmp_path / "events")
    native = _native(spark, src, tmp_path / "native")
    runner = FlowRunner(
        _program(lambda events: events.count()),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"event": f"parquet:{src}?maxFilesPerTrigger=1"},
        outputs={"out": f"parquet:{tmp_path / 'hydro'}"},
        keyed_state="executors",
    )
    runner.start(once=True)
    runner.await_termination()
    runner.stop()
    (stage,) = runner.stages
    assert stage.native is not None and len(stage.native.states) == 1  # the count took the native path
    want = _work(spark, [native])
    assert len(want) == len(FILES) and all(len(job) == 2 for job in want), want  # scan + partial agg | state
    assert _work(spark, [stage.query]) == want
    assert _answers(tmp_path / "hydro") == _answers(tmp_path / "native")
