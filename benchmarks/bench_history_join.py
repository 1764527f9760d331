"""A join of two unbounded streams, per key in Spark's state store vs with its sides' history
as Parquet (`hydrolite/planner/spark/history.py`), side by side on the same files.

The same program runs twice per repetition (order alternating): `--keyed-state executors`
keeps the join per key in Spark's state (both sides are chains from the query's inputs), and
`--keyed-state driver` takes the history path (the one programs whose sides are not chains
get on any option). Each side gets one Parquet file per micro-batch; keys are spread so every
element meets about one element of the other side. Printed: seconds, input rows/s and their
ratio, and `triggerExecution` of the first and last batch — the history path reads the other
side's whole history each batch, so its last batch is where the difference shows.

    python benchmarks/bench_history_join.py                         # 10 batches x 5,000 rows a side
    python benchmarks/bench_history_join.py --batches 20 --rows 20000 --repeat 3
    python benchmarks/bench_history_join.py --batches 40 --rows 50000 --repeat 1 --paths driver   # one path
    python benchmarks/bench_history_join.py --fold   # a count of the pairs per key, looked up per key

With `--fold` the pairs are counted per key and the count is looked up by each batch's ys
(the printed "pairs" are then the lookups answered): per key, the count is folded by the
join's own processor on the executors; on the driver path, the join's history is Parquet
and the count is in the driver's store.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from typing import Any

import pyarrow as pa
from state_paths.data import write_batch_file
from state_paths.jobs import timed_run

import hydrolite as hl
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.session import spark_session

PATHS = ("executors", "driver")


class Server:
    """The benchmark's process."""


def program(keys: int) -> hl.Flow:
    fb = hl.FlowBuilder("bench-join")
    p = fb.process(Server)
    xs = p.source("xs", int).map(lambda x: (x % keys, x))
    ys = p.source("ys", int).map(lambda y: (y % keys, y))
    xs.join(ys).map(lambda t: t[1][0] + t[1][1]).sink("out")
    return fb.finalize()


def program_fold(keys: int) -> hl.Flow:
    """The join's pairs counted per key and looked up per key by the ys of each batch: with
    `--keyed-state executors` the count is folded by the join's own processor (placement's
    `joined`); with `driver` the join keeps its history as Parquet and the count lives in the
    driver's store."""
    fb = hl.FlowBuilder("bench-join-fold")
    p = fb.process(Server)
    xs = p.source("xs", int).map(lambda x: (x % keys, x))
    ys = p.source("ys", int)
    counts = xs.join(ys.map(lambda y: (y % keys, y))).into_keyed().count()
    tick = p.tick()
    seen = counts.snapshot(tick, hl.nondet("any prefix of the pairs"))
    asks = ys.batch(tick, hl.nondet("any grouping")).map(lambda y: (y % keys, y)).into_keyed()
    seen.get_many_if_present(asks).entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("out")
    return fb.finalize()


def write_inputs(base: str, batches: int, rows: int) -> None:
    for side, offset in (("xs", 0), ("ys", 7)):
        for b in range(batches):
            values = [(b * rows + i) * 3 + offset for i in range(rows)]
            write_batch_file(os.path.join(base, side), b, pa.table({"value": values}))


def run(spark: Any, base: str, keyed_state: str, keys: int, fold: bool = False) -> dict[str, Any]:
    work = tempfile.mkdtemp(prefix="bench-join-")
    opts = "?maxFilesPerTrigger=1"
    runner = FlowRunner(
        program_fold(keys) if fold else program(keys),
        spark=spark,
        checkpoint=os.path.join(work, "ck"),
        inputs={"xs": f"parquet:{base}/xs{opts}", "ys": f"parquet:{base}/ys{opts}"},
        outputs={"out": f"parquet:{work}/out"},
        keyed_state=keyed_state,
    )
    elapsed, progress = timed_run(runner)
    pairs = spark.read.parquet(f"{work}/out").count()
    shutil.rmtree(work, ignore_errors=True)
    lat = [float(p.durationMs.get("triggerExecution", 0)) for p in sorted(progress, key=lambda p: int(p.batchId))]
    at = [lat[round(q * (len(lat) - 1))] for q in (0, 0.25, 0.5, 0.75, 1)]  # how a batch's cost grows
    return {"s": elapsed, "pairs": pairs, "first": lat[0], "last": lat[-1], "batches": len(lat), "at": at}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--rows", type=int, default=5000, help="rows per side per batch")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--paths", default=",".join(PATHS), help="executors (per key), driver (history), or both")
    ap.add_argument("--fold", action="store_true", help="count the pairs per key, looked up by each batch's ys")
    args = ap.parse_args()
    keys = args.batches * args.rows  # each element meets one of the other side (keys prime to 3)
    keys += 0 if keys % 3 else 1
    base = tempfile.mkdtemp(prefix="bench-join-in-")
    write_inputs(base, args.batches, args.rows)
    spark = spark_session(args.master, {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    rows = 2 * args.batches * args.rows
    print(f"Spark {args.master}; {args.batches} batches x {args.rows:,} rows a side over {keys:,} keys")
    paths = [p for p in PATHS if p in args.paths.split(",")]
    run(spark, base, paths[0], keys, args.fold)  # warm-up (JVM, Python workers)
    results: dict[str, list[dict[str, Any]]] = {p: [] for p in paths}
    for rep in range(args.repeat):
        for path in paths if rep % 2 == 0 else paths[::-1]:
            r = run(spark, base, path, keys, args.fold)
            results[path].append(r)
            print(
                f"  run {rep + 1} {path:9s}: {r['s']:.1f} s, {rows / r['s']:,.0f} rows/s, {r['pairs']:,} pairs, "
                "batch ms at 0/25/50/75/100% of the run " + " / ".join(f"{x:.0f}" for x in r["at"]),
                flush=True,
            )
    med = {p: statistics.median(r["s"] for r in rs) for p, rs in results.items()}
    print(f"\n{'path':30s} {'median s':>9s} {'rows/s':>10s} {'first ms':>9s} {'last ms':>8s}")
    names = {"executors": "per key (Spark state store)", "driver": "history (Parquet, history.py)"}
    for p, rs in results.items():
        first = statistics.median(r["first"] for r in rs)
        last = statistics.median(r["last"] for r in rs)
        print(f"{names[p]:30s} {med[p]:9.1f} {rows / med[p]:10,.0f} {first:9.0f} {last:8.0f}")
    if len(paths) == 2:
        paired = [e["s"] / h["s"] for e, h in zip(results["executors"], results["driver"])]
        print(
            f"history / per-key throughput: {med['executors'] / med['driver']:.2f}x of the medians; paired "
            + ", ".join(f"{x:.2f}" for x in paired)
        )
    assert len({r["pairs"] for rs in results.values() for r in rs}) == 1, "the two paths wrote different row counts"
    shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
