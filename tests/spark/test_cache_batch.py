"""A micro-batch whose plan holds a native streaming aggregation *and* the executor region's
`transformWithState` (`run_support.cache_batch`).

Spark 4 hands a task's read store (opened by the aggregation's `StateStoreRestore`) to the
next stateful operator the same task computes, through a per-thread tracker cleared only
when the task ends. A `coalesce()` over such a batch (every collect of hydrolite's sinks)
makes one task compute a partition of the aggregation and then one of `transformWithState`,
which then fails: "Can only upgrade readStore to writeStore with the same stateStoreId" (the
differential run found it; on PySpark 4.3 the query below fails in its first batch without
`cache_batch`'s own job). The batch is therefore computed once, one task per partition,
before anything reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from hydrolite.planner.spark.keyed_state import ROCKSDB
from hydrolite.planner.spark.run_support import cache_batch
from hydrolite.planner.spark.session import STATE_STORE, query_conf

pytestmark = pytest.mark.spark


def test_a_batch_with_an_aggregation_and_transform_with_state_is_read_through_a_coalesce(
    spark: SparkSession, tmp_path: Path
) -> None:
    class Count(StatefulProcessor):  # (local: pickled by value for the Python workers)
        def init(self, handle: StatefulProcessorHandle) -> None:
            self.n = handle.getValueState("n", "n long")

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            got = self.n.get()
            n = (0 if got is None else got[0]) + len(list(rows))
            self.n.update((n,))
            yield Row(k=key[0], n=n)

        def close(self) -> None:
            """Nothing to release: the state is Spark's."""

    (tmp_path / "in").mkdir()
    for i in range(3):  # overlapping values: both operators carry state across batches
        (tmp_path / "in" / f"f{i}.txt").write_text("".join(f"{x}\n" for x in range(i * 7, i * 7 + 20)))
    src = spark.readStream.option("maxFilesPerTrigger", 1).text(str(tmp_path / "in")).select(F.col("value").alias("k"))
    native = src.groupBy("k").agg(F.count(F.lit(1)).alias("n"))
    out = T.StructType([T.StructField("k", T.StringType()), T.StructField("n", T.LongType())])
    per_key = src.groupBy("k").transformWithState(Count(), out, "Append", "None")
    got: dict[int, list[tuple[str, int]]] = {}

    def batch(df: Any, batch_id: int) -> None:
        cached = cache_batch(df, both_stores=True)
        got[batch_id] = sorted((r["k"], r["n"]) for r in cached.coalesce(1).collect())  # (as the sinks collect)
        cached.unpersist()

    with query_conf(spark, STATE_STORE, ROCKSDB):  # (as hydrolite starts its queries)
        query = (
            native.unionByName(per_key)
            .writeStream.outputMode("update")
            .foreachBatch(batch)
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
    query.awaitTermination()
    assert sorted(got) == [0, 1, 2], got  # one file per batch (in whichever order Spark lists them)
    occurrences: dict[str, int] = {}
    for i in range(3):
        for x in range(i * 7, i * 7 + 20):
            occurrences[str(x)] = occurrences.get(str(x), 0) + 1
    # each value's running count from both operators, once per batch that read it
    want = sorted((v, n) for v, times in occurrences.items() for n in range(1, times + 1) for _ in range(2))
    assert sorted(r for rows in got.values() for r in rows) == want
