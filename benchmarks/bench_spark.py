"""The aligned counter on Spark vs a hand-written PySpark Structured Streaming job.

Both read the same Parquet files (increments and queries, one file of each per
micro-batch), both answer every query with the count of increments so far (this batch's
increments included) and write the acks and the answers as Parquet, one directory per batch
id. hydrolite runs `examples/counter.py` through the planner (one query, versioned state,
idempotent sinks); the baseline is the job one would write by hand (running count in a
driver variable).

    python benchmarks/bench_spark.py                  # 1M increments, 100k queries, 510 batches (~7 min)
    python benchmarks/bench_spark.py --scale 0.1      # fewer rows, same number of batches
    python benchmarks/bench_spark.py --batches 1000   # more, smaller batches
    python benchmarks/bench_spark.py --batches 50 --scale 0.1 --repeat 3   # the size a user would try first
    python benchmarks/bench_spark.py --format json    # JSON-lines inputs (hydrolite checks every record)

Prints both throughputs (input rows/s over the whole run), their ratio and the median
per-batch latency (time inside foreachBatch, over batches 0-10 and the last 11) at batch 5
and near the last batch. With `--repeat N` both jobs run N times, alternating, and the
median ratio is printed (the machine is shared: compare ratios, not seconds). Both jobs first run a short warm-up so neither pays the JVM's warm-up.
Per-batch time is dominated by Spark's fixed cost per micro-batch (a few small jobs, the
offset and commit logs, listing the input directories), so the run takes minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

CLIENTS = 1000


def write_inputs(base: str, increments: int, queries: int, batches: int, fmt: str = "parquet") -> tuple[str, str]:
    """`batches` files per source (Parquet, JSON lines or CSV), columns key (client id) and value (null)."""
    inc_dir, q_dir = os.path.join(base, "increment"), os.path.join(base, "query")
    for d, total in ((inc_dir, increments), (q_dir, queries)):
        os.makedirs(d)
        per = total // batches
        for b in range(batches):
            n = per + (1 if b < total % batches else 0)
            keys = [f"c{(b * per + i) % CLIENTS}" for i in range(n)]
            path = os.path.join(d, f"part-{b:06d}.{fmt}")
            if fmt == "json":  # null values left out, as Spark's JSON writer does
                with open(path, "w") as fh:
                    fh.writelines(f'{{"key":"{k}"}}\n' for k in keys)
            elif fmt == "csv":
                with open(path, "w") as fh:
                    fh.write("key,value\n")
                    fh.writelines(f"{k},\n" for k in keys)
            else:
                table = pa.table({"key": pa.array(keys, pa.string()), "value": pa.nulls(n, pa.bool_())})
                pq.write_table(table, path)
    return inc_dir, q_dir


def run_hydrolite(
    spark: Any, inc_dir: str, q_dir: str, out: str, expect_batches: int, expect_count: int, fmt: str = "parquet"
) -> tuple[float, dict[int, float]]:
    from examples import counter
    from hydrolite.planner.spark.runtime import FlowRunner

    opts = "?maxFilesPerTrigger=1"
    runner = FlowRunner(
        counter.build(),
        spark=spark,
        checkpoint=os.path.join(out, "ck"),
        inputs={"increment": f"{fmt}:{inc_dir}{opts}", "query": f"{fmt}:{q_dir}{opts}"},
        outputs={"increment_ack": f"parquet:{out}/acks", "query_response": f"parquet:{out}/resp"},
    )
    t0 = time.perf_counter()
    runner.start(once=True)
    runner.await_termination()
    elapsed = time.perf_counter() - t0
    runner.stop()
    (stage,) = runner.stages
    durations = dict(stage.progress.durations_ms)
    assert len(durations) == expect_batches, f"hydrolite ran {len(durations)} batches, expected {expect_batches}"
    check_last_answer(spark, out, expect_count)
    return elapsed, durations


def run_baseline(
    spark: Any, inc_dir: str, q_dir: str, out: str, expect_batches: int, expect_count: int, fmt: str = "parquet"
) -> tuple[float, dict[int, float]]:
    """The same work written directly against PySpark (Spark's own reader, no record checks)."""
    from pyspark.sql import functions as F

    schema = "key string, value boolean"
    opts = {"maxFilesPerTrigger": "1", **({"header": "true"} if fmt == "csv" else {})}
    inc = spark.readStream.schema(schema).options(**opts).format(fmt).load(inc_dir)
    qry = spark.readStream.schema(schema).options(**opts).format(fmt).load(q_dir)
    both = inc.select(F.lit(0).alias("src"), "key").unionByName(qry.select(F.lit(1).alias("src"), "key"))
    count = [0]
    durations: dict[int, float] = {}

    def batch(df: Any, batch_id: int) -> None:
        t = time.perf_counter()
        df.persist()
        incs = df.filter(F.col("src") == 0)
        count[0] += incs.count()
        incs.select(F.col("key").alias("_1"), F.lit(None).cast("boolean").alias("_2")).write.mode("overwrite").parquet(
            f"{out}/acks/batch_id={batch_id}"
        )
        answers = df.filter(F.col("src") == 1).select(F.col("key").alias("_1"), F.lit(count[0]).alias("_2"))
        answers.write.mode("overwrite").parquet(f"{out}/resp/batch_id={batch_id}")
        df.unpersist()
        durations[batch_id] = (time.perf_counter() - t) * 1000.0

    t0 = time.perf_counter()
    q = (
        both.writeStream.foreachBatch(batch)
        .option("checkpointLocation", os.path.join(out, "ck"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    elapsed = time.perf_counter() - t0
    assert len(durations) == expect_batches, f"baseline ran {len(durations)} batches, expected {expect_batches}"
    check_last_answer(spark, out, expect_count)
    return elapsed, durations


def check_last_answer(spark: Any, out: str, expect_count: int) -> None:
    """The last batch's answers count every increment."""
    top = spark.read.parquet(f"{out}/resp").agg({"_2": "max"}).collect()[0][0]
    assert top == expect_count, f"{out}: the last answer counts {top} increments, expected {expect_count}"


def median_around(durations: dict[int, float], center: int, half: int = 5) -> float:
    """The median over batches center-half .. center+half."""
    window = [durations[b] for b in range(max(center - half, 0), center + half + 1) if b in durations]
    return statistics.median(window)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of 1M increments / 100k queries (default 1)")
    parser.add_argument("--batches", type=int, default=510, help="micro-batches (files per source); at least 20")
    parser.add_argument("--repeat", type=int, default=1, help="run both jobs this many times, alternating")
    parser.add_argument(
        "--format", default="parquet", choices=("parquet", "json", "csv"), help="input file format (default parquet)"
    )
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--keep", action="store_true", help="keep the generated data and outputs")
    args = parser.parse_args()
    increments, queries = int(1_000_000 * args.scale), int(100_000 * args.scale)
    batches = max(args.batches, 20)
    late = batches - 6

    from hydrolite.planner.spark.session import spark_session

    base = tempfile.mkdtemp(prefix="hydrolite-bench-")
    try:
        print(f"writing {increments:,} increments and {queries:,} queries as {batches} files each under {base}")
        inc_dir, q_dir = write_inputs(base, increments, queries, batches, args.format)
        spark = spark_session(args.master, {"spark.sql.shuffle.partitions": "2"})
        warm_in, warm_q = write_inputs(os.path.join(base, "warmup"), 2000, 200, 10, args.format)
        for name, fn in (("baseline", run_baseline), ("hydrolite", run_hydrolite)):
            fn(spark, warm_in, warm_q, os.path.join(base, "warmup", name), 10, 2000, args.format)
        rows = increments + queries
        ratios: list[float] = []
        for rep in range(args.repeat):
            results = {}
            for name, fn in (("hand-written PySpark", run_baseline), ("hydrolite", run_hydrolite)):
                out = os.path.join(base, f"{name.split()[0].replace('-', '_')}_{rep}")
                elapsed, durations = fn(spark, inc_dir, q_dir, out, batches, increments, args.format)
                results[name] = (elapsed, durations)
                print(
                    f"{name:>22}: {elapsed:7.1f} s, {rows / elapsed:9,.0f} input rows/s; "
                    f"median batch latency around batch 5: {median_around(durations, 5):6.0f} ms, around batch {late}: {median_around(durations, late):6.0f} ms"
                )
            (eb, _), (eh, dh) = results["hand-written PySpark"], results["hydrolite"]
            ratios.append(eb / eh)
            print(
                f"run {rep + 1}: throughput ratio hydrolite / hand-written: {eb / eh:.2f}  (hydrolite takes {eh / eb:.2f}x the time)"
            )
            print(
                f"run {rep + 1}: hydrolite latency growth batch {late} vs batch 5: {median_around(dh, late) / median_around(dh, 5):.2f}x"
            )
        print(
            f"median throughput ratio over {len(ratios)} run(s), {batches} batches: {statistics.median(ratios):.2f} "
            f"(each: {', '.join(f'{r:.2f}' for r in ratios)})"
        )
        spark.stop()
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
