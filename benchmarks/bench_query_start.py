"""How long a streaming query over hydrolite feeds takes to its first micro-batch, with Spark's
Python processes started through hydrolite's launcher (`worker_python.py`) and its fork
server (`forkserver.py`), through the launcher alone, or directly.

Spark starts one fresh Python process per Python streaming source when a query starts. By
default it runs them with `SPARK_HOME/python/lib/pyspark.zip` first on `PYTHONPATH`, and
Python compiles every module it imports from a zip again at each start. The launcher puts
the installed (compiled) pyspark first; its fork server hands each such process to a child
forked from a server that imported pyspark, pyarrow and hydrolite's sources once. Each mode
runs in its own process (a SparkContext fixes its workers' Python when it starts):
`forkserver` is what `spark_session` does on a local master; `launcher` sets
`HYDROLITE_NO_FORKSERVER=1`; `zip` sets `PYSPARK_PYTHON` to this interpreter.

    python benchmarks/bench_query_start.py                 # 1 and 4 sources, 5 rounds each
    python benchmarks/bench_query_start.py --sources 1,2,8 --rounds 3

Prints, per mode and number of sources, the median seconds from `start()` to the end of the
first batch (`processAllAvailable`) and the median of Spark's own `triggerExecution` for
that batch, then the ratios launcher / fork server and zip / fork server. The machine is
shared: compare ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("forkserver", "launcher", "zip")


def measure(sources: list[int], rounds: int) -> dict[str, list[float]]:
    """In this process: per number of sources, seconds to the first batch, then Spark's
    trigger time, for each round after a warm-up round."""
    from hydrolite.planner.spark.feed import FEED_FORMAT, FeedWriter
    from hydrolite.planner.spark.session import spark_session
    from hydrolite.planner.spark.types import from_python

    spark = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2"})
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in ("v", "_seq")],
        }
    )
    out: dict[str, list[float]] = {}
    for r in range(rounds + 1):
        for n in sources:
            d = tempfile.mkdtemp(prefix="hl-bench-start-")
            frames = []
            for i in range(n):
                path = os.path.join(d, f"in{i}")
                FeedWriter(path, from_python(int)).send_many([1, 2, 3])
                frames.append(spark.readStream.format(FEED_FORMAT).option("path", path).option("schema", schema).load())
            df = frames[0]
            for other in frames[1:]:
                df = df.unionByName(other)
            t = time.perf_counter()
            q = df.writeStream.foreachBatch(lambda b, _: b.count()).option("checkpointLocation", f"{d}/ck").start()
            q.processAllAvailable()
            took = time.perf_counter() - t
            trigger = q.lastProgress["durationMs"]["triggerExecution"] / 1000
            q.stop()
            if r > 0:  # round 0 warms the JVM up
                out.setdefault(f"{n}", []).append(took)
                out.setdefault(f"{n}-trigger", []).append(trigger)
    spark.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", default="1,4", help="numbers of feed sources per query (comma-separated)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sources = [int(x) for x in args.sources.split(",")]
    if args.worker:
        print(json.dumps(measure(sources, args.rounds)))
        return
    results: dict[str, dict[str, list[float]]] = {}
    for mode in MODES:
        env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "HYDROLITE_NO_FORKSERVER")}
        if mode == "launcher":
            env["HYDROLITE_NO_FORKSERVER"] = "1"
        if mode == "zip":
            env["PYSPARK_PYTHON"] = sys.executable
        cmd = [sys.executable, __file__, "--worker", mode, "--sources", args.sources, "--rounds", str(args.rounds)]
        done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=True)
        results[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    head = "".join(f"{m:>11}" for m in MODES)
    print(f"{'sources':>7}{head} {'l/fs':>6} {'zip/fs':>6}   (median s to the first batch; Spark's trigger times)")
    for n in sources:
        f, a, b = (statistics.median(results[m][f"{n}"]) for m in MODES)
        tf, ta, tb = (statistics.median(results[m][f"{n}-trigger"]) for m in MODES)
        print(
            f"{n:>7} {f:>9.2f}s {a:>9.2f}s {b:>9.2f}s {a / f:>5.2f}x {b / f:>5.2f}x"
            f"   (trigger {tf:.2f}s, {ta:.2f}s, {tb:.2f}s)"
        )


if __name__ == "__main__":
    main()
