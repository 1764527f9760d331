"""A micro-batch's fixed cost: what hydrolite's session settings save on every tick.

Two settings hydrolite starts Spark with, each measured against Spark's default in a process
of its own (a SparkContext fixes both when it starts):

* `manager`: the checkpoint file manager of a query checkpointing on the local disk
  (`ckfs.query_manager`: Hadoop's `FileSystem` API instead of `FileContext`). Measured on a
  query over Spark's `rate` source with an empty `foreachBatch`: Spark's median
  `walCommit` + `commitOffsets` (the two log files a batch writes) and `triggerExecution`.
* `uds`: the JVM talking to its Python workers over a Unix domain socket instead of TCP
  (`spark.python.unix.domain.socket.enabled`). Measured on one-row partitions through
  `mapInArrow`: each partition is one run of a Python function, as each partition of a
  tick's batch is for each Python function of the program. Median ms of a `collect()` over
  `--partitions` partitions, in parallel and serially (after `coalesce(1)`).
* `counter`: the counter example's tick (`examples/counter.py` through the test harness,
  one increment and one query per tick): median seconds per tick with both settings, and
  with both turned back to Spark's defaults.

    python benchmarks/bench_batch_overhead.py                   # 30 partitions, 20 ticks
    python benchmarks/bench_batch_overhead.py --partitions 8 --ticks 30

The machine is shared: compare the ratios, and run it twice.
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
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPARK_DEFAULTS = {"spark.python.unix.domain.socket.enabled": "false"}


def _session(hydrolite: bool) -> Any:
    """A SparkSession with hydrolite's settings, or with Spark's defaults back for both: the
    socket off, and Spark's default manager named as the user's own choice, which
    `ckfs.query_manager` keeps."""
    from hydrolite.planner.spark import ckfs
    from hydrolite.planner.spark.session import spark_session

    spark = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2", **({} if hydrolite else SPARK_DEFAULTS)})
    if not hydrolite:
        jvm = spark.sparkContext._jvm
        spark.conf.set(ckfs.MANAGER_CONF, ckfs.checkpointing_class(jvm, "FileContextBasedCheckpointFileManager"))
    return spark


def manager(hydrolite: bool, seconds: float) -> dict[str, float]:
    from hydrolite.planner.spark import ckfs
    from hydrolite.planner.spark.session import query_conf

    spark = _session(hydrolite)
    location = os.path.join(tempfile.mkdtemp(prefix="hl-bench-overhead-"), "ck")
    df = spark.readStream.format("rate").option("rowsPerSecond", 10).load()
    w = df.writeStream.foreachBatch(lambda b, i: None).option("checkpointLocation", location)
    with query_conf(spark, ckfs.MANAGER_CONF, ckfs.query_manager(spark, location)):  # as StageRunner.start
        q = w.trigger(processingTime="200 milliseconds").start()
    time.sleep(seconds)
    q.stop()
    progress = [p["durationMs"] for p in q.recentProgress[5:]]  # the first batches warm the JVM up
    return {
        "logs": statistics.median(p.get("walCommit", 0) + p.get("commitOffsets", 0) for p in progress),
        "trigger": statistics.median(p["triggerExecution"] for p in progress),
    }


def python_runs(hydrolite: bool, partitions: int, rounds: int) -> dict[str, float]:
    spark = _session(hydrolite)

    def same(batches: Any) -> Any:
        yield from batches

    rows = spark.range(0, partitions, numPartitions=partitions)
    out: dict[str, float] = {}
    for name, df in (
        ("parallel", rows.mapInArrow(same, rows.schema)),
        ("serial", rows.mapInArrow(same, rows.schema).coalesce(1)),
    ):
        took = []
        for _ in range(rounds + 3):
            t = time.perf_counter()
            df.collect()
            took.append((time.perf_counter() - t) * 1000)
        out[name] = statistics.median(took[3:])
    return out


def counter(hydrolite: bool, ticks: int) -> dict[str, float]:
    from examples import counter as program
    from hydrolite.planner.spark.harness import SparkHarness

    h = SparkHarness(program.build, _session(hydrolite))
    took = []
    for i in range(ticks + 3):
        h.sender("increment").send((f"c{i % 3}", None))
        h.sender("query").send((f"c{i % 3}", None))
        t = time.perf_counter()
        h.step()
        took.append(time.perf_counter() - t)
    h.runner.stop()
    return {"tick": statistics.median(took[3:])}


def _child(what: str, hydrolite: bool, args: argparse.Namespace) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", what, "--partitions", str(args.partitions), "--ticks", str(args.ticks)]
    if hydrolite:
        cmd.append("--hydrolite")
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    if done.returncode != 0:
        sys.exit(f"{what} ({'hydrolite' if hydrolite else 'Spark default'}) failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=30, help="one-row partitions through mapInArrow")
    ap.add_argument("--ticks", type=int, default=20, help="ticks of the counter example (after 3 warm-up ticks)")
    ap.add_argument("--seconds", type=float, default=20.0, help="how long the rate-source query runs")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--hydrolite", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run = {
            "manager": lambda: manager(args.hydrolite, args.seconds),
            "uds": lambda: python_runs(args.hydrolite, args.partitions, 7),
            "counter": lambda: counter(args.hydrolite, args.ticks),
        }[args.child]
        print(json.dumps(run()))
        return
    print(f"{'measure':<40} {'Spark default':>14} {'hydrolite':>10} {'ratio':>6}")
    for what, unit in (("manager", "ms"), ("uds", "ms"), ("counter", "s")):
        base, ours = _child(what, False, args), _child(what, True, args)
        for key in base:
            label = {
                "logs": "batch log writes (walCommit+commitOffsets)",
                "trigger": "rate-source batch (triggerExecution)",
                "parallel": f"{args.partitions} Python runs, parallel",
                "serial": f"{args.partitions} Python runs, serial",
                "tick": "counter example, one tick",
            }[key]
            print(f"{label:<40} {base[key]:>12.2f}{unit:<2} {ours[key]:>8.2f}{unit:<2} {base[key] / ours[key]:>5.2f}x")


if __name__ == "__main__":
    main()
