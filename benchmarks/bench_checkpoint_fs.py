"""What a checkpoint on a Hadoop file system costs per micro-batch, against a local directory.

A checkpoint URI sends every file hydrolite writes under it through Hadoop's file system
API over Py4J (`ckfs`): the remap log's entry per batch, the driver store's change file per
batch (and a snapshot every 50), the lease. Spark's own offset log, commits and state store
go through Hadoop either way. The URI here is a `viewfs://` mount table over a local
directory: Hadoop's client code path without a network, so the figures are the client's
overhead, not a remote store's latency.

    python benchmarks/bench_checkpoint_fs.py                       # 3 rounds of 40 batches
    python benchmarks/bench_checkpoint_fs.py --batches 80 --rounds 5 --rows 2000

Two programs, each run in both modes alternately in one warm process (`local[2]`): the
aligned counter (driver state: the versioned store) and the key-value store with its table
on the executors (Spark's RocksDB state store). Prints per program and mode the median of
hydrolite's `foreachBatch` time and of Spark's `triggerExecution` per batch, and the ratio
URI / local of each. The machine is shared: compare the ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import uuid
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _counter_feeds(d: str, batches: int, rows: int) -> tuple[Any, dict[str, str]]:
    from examples import counter
    from hydrolite.planner.spark.feed import FeedWriter
    from hydrolite.planner.spark.types import NONE, Prim

    inc = FeedWriter(os.path.join(d, "inc"), NONE, Prim(str))
    qry = FeedWriter(os.path.join(d, "qry"), NONE, Prim(str))
    for b in range(batches):
        inc.send_many([(f"c{(b * rows + i) % 97}", None) for i in range(rows)])
        qry.send_many([(f"c{b % 97}", None)])
    cap = "?maxEntriesPerTrigger=1"
    return counter.build(), {"increment": f"feed:{d}/inc{cap}", "query": f"feed:{d}/qry{cap}"}


def _kv_feeds(d: str, batches: int, rows: int) -> tuple[Any, dict[str, str]]:
    from examples import kvstore
    from hydrolite.planner.spark.feed import FeedWriter
    from hydrolite.planner.spark.types import from_python

    put = FeedWriter(os.path.join(d, "put"), from_python(tuple[str, str, int]))
    get = FeedWriter(os.path.join(d, "get"), from_python(tuple[str, str]))
    for b in range(batches):
        put.send_many([(f"c{i}", f"k{(b * rows + i) % 5000}", i) for i in range(rows)])
        get.send_many([(f"g{b}", f"k{i}") for i in range(0, 5000, 500)])
    cap = "?maxEntriesPerTrigger=1"
    return kvstore.build(), {"put": f"feed:{d}/put{cap}", "get": f"feed:{d}/get{cap}"}


PROGRAMS: dict[str, tuple[Callable[[str, int, int], tuple[Any, dict[str, str]]], str]] = {
    "counter (driver state)": (_counter_feeds, "driver"),
    "kvstore (executor state)": (_kv_feeds, "executors"),
}


def run_once(spark: Any, program: str, uri: bool, batches: int, rows: int) -> tuple[list[float], list[float]]:
    """(hydrolite's foreachBatch ms, Spark's triggerExecution ms) of every batch of one run."""
    from hydrolite.planner.spark.runtime import FlowRunner

    build, keyed_state = PROGRAMS[program]
    d = tempfile.mkdtemp(prefix="hl-bench-ckfs-")
    try:
        flow, inputs = build(d, batches, rows)
        os.makedirs(os.path.join(d, "disk"))
        checkpoint = os.path.join(d, "disk", "ck")
        if uri:
            table = f"bench{uuid.uuid4().hex[:8]}"
            spark.sparkContext._jsc.hadoopConfiguration().set(
                f"fs.viewfs.mounttable.{table}.link./disk", "file://" + os.path.join(d, "disk")
            )
            checkpoint = f"viewfs://{table}/disk/ck"
        runner = FlowRunner(
            flow, spark=spark, checkpoint=checkpoint, inputs=inputs, outputs={}, keyed_state=keyed_state
        )
        try:
            runner.start()
            runner.process_all_available()
            stage = runner.stages[0]
            ours = [ms for _b, ms in stage.progress.durations_ms]
            assert stage.query is not None
            spark_ms = [float(p["durationMs"]["triggerExecution"]) for p in stage.query.recentProgress]
        finally:
            runner.stop()
        if len(ours) < batches:
            raise SystemExit(f"{program}: {len(ours)} batches ran, {batches} expected")
        return ours, spark_ms
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--rows", type=int, default=500, help="increments / puts per batch")
    ap.add_argument("--rounds", type=int, default=3, help="runs per program and mode (after a warm-up)")
    args = ap.parse_args()
    from hydrolite.planner.spark.session import spark_session

    spark = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2"})
    print(f"{args.batches} batches x {args.rows} rows, {args.rounds} rounds, local[2]; medians per batch (ms)")
    for program in PROGRAMS:
        got: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
        run_once(spark, program, False, 3, args.rows)  # warm-up
        run_once(spark, program, True, 3, args.rows)
        for _ in range(args.rounds):
            for uri in (False, True):
                ours, theirs = run_once(spark, program, uri, args.batches, args.rows)
                got[uri][0].extend(ours[1:])  # the first batch starts the query's state: apart
                got[uri][1].extend(theirs[1:])
        local, remote = got[False], got[True]
        lo, ro = statistics.median(local[0]), statistics.median(remote[0])
        lt, rt = statistics.median(local[1]), statistics.median(remote[1])
        print(
            f"{program:26s} foreachBatch local {lo:7.1f}  viewfs {ro:7.1f}  ({ro / lo:.2f}x)   "
            f"triggerExecution local {lt:7.1f}  viewfs {rt:7.1f}  ({rt / lt:.2f}x)"
        )
    spark.stop()


if __name__ == "__main__":
    main()
