"""Capability probes (`--probe union|order`): what Spark's stateful APIs allow, printed as findings."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import pandas as pd

from .data import PUTS, check, expected, write_inputs
from .jobs import KV_OUT, kv_input, processors, stream, writer


def probe_union(spark: Any, base: str) -> None:
    """(1) One query: the kv processor's replies unioned with the acks taken straight from the
    input stream, written by one foreachBatch; the input is either the very DataFrame the
    processor reads (one source feeding two branches) or a second readStream of the same files."""
    from pyspark.sql import functions as F

    data = os.path.join(base, "data")
    write_inputs(data, 3, 1000, 500, 100)
    want = expected(data, "kv")
    for variant in ("same DataFrame", "second readStream"):
        src = kv_input(spark, data)
        proc = processors()["kv-twsp"]()
        replies = src.groupBy("_2").transformWithStateInPandas(proc, KV_OUT, "Update", "None")
        raw = src if variant == "same DataFrame" else kv_input(spark, data)
        acks = raw.filter(F.col("kind") == 0).select("kind", "_1", "_2", F.lit(None).cast("long").alias("_3"))
        both = replies.filter(F.col("kind") == 1).unionByName(acks)
        out = os.path.join(base, variant.replace(" ", "_"))
        try:
            w = both.writeStream.outputMode("update").foreachBatch(writer(out, True))
            q = w.option("checkpointLocation", f"{out}/ck").trigger(availableNow=True).start()
            q.awaitTermination()
        except Exception as exc:  # the finding is the error itself: print it, go on with the next variant
            print(f"{variant}: failed: {type(exc).__name__}: {str(exc).splitlines()[0][:400]}")
            continue
        sources = [s.description for s in q.lastProgress.sources]
        verdict = check(out, want) or "outputs equal the expected answers"
        rows = [int(p.numInputRows) for p in q.recentProgress]
        print(
            f"{variant}: {len(rows)} batches, input rows per batch {rows} (1100 sent); {len(sources)} sources {sources}"
        )
        print(f"  {verdict}")


def probe_order(spark: Any, base: str) -> None:
    """(2) Do a key's rows reach a StatefulProcessor in input order? 3 batches of 200k rows over
    1000 keys (about 200 rows per key per batch); per key and batch the processor reports whether
    `seq` arrived increasing and how long sorting by it took. Run with each file read as one
    partition and as several (spark.sql.files.maxPartitionBytes=256k)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Order(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.n = handle.getValueState("n", "n long")

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            pdf = pd.concat(list(rows))
            t0 = time.perf_counter()
            old = self.n.get()  # one ValueState get + update: the state API's round trips to the JVM
            self.n.update(((old[0] if old else 0) + len(pdf),))
            t1 = time.perf_counter()
            pdf.sort_values("seq", kind="stable")
            t2 = time.perf_counter()
            ordered = bool(np.all(np.diff(pdf["seq"].to_numpy()) > 0))
            row = {
                "key": key[0],
                "n": len(pdf),
                "ordered": ordered,
                "state_us": (t1 - t0) * 1e6,
                "sort_us": (t2 - t1) * 1e6,
            }
            yield pd.DataFrame([row])

    data = os.path.join(base, "data")
    write_inputs(data, 3, 200_000, 1000, 1, group=10_000)
    schema = "key string, n long, ordered boolean, state_us double, sort_us double"
    for split in ("128m", "256k"):
        spark.conf.set("spark.sql.files.maxPartitionBytes", split)
        parts = spark.read.parquet(os.path.join(data, PUTS, "part-000000.parquet")).rdd.getNumPartitions()
        df = stream(spark, data, PUTS, "_2 string, seq long").withColumnRenamed("_2", "key").groupBy("key")
        out = os.path.join(base, f"order-{split}")
        q = df.transformWithStateInPandas(Order(), schema, "Update", "None").writeStream.outputMode("update")
        q = q.foreachBatch(lambda d, b, out=out: d.write.parquet(f"{out}/res/batch_id={b}"))
        q = q.option("checkpointLocation", f"{out}/ck").trigger(availableNow=True).start()
        q.awaitTermination()
        got = pd.read_parquet(f"{out}/res")
        print(
            f"maxPartitionBytes={split} ({parts} input partition(s) per file): {len(got)} (key, batch) groups, "
            f"{int((~got['ordered']).sum())} not in input order; median {got['n'].median():.0f} rows per group; "
            f"ValueState get + update: median {got['state_us'].median():.0f} us per key; "
            f"sort by seq: median {got['sort_us'].median():.0f} us per group, "
            f"{got['sort_us'].sum() / got['n'].sum():.2f} us per row"
        )
