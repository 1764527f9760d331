"""A keyed table read by another query: deltas from the executors vs whole versions from the
driver (`hydrolite/planner/spark/channel_versions.py`), side by side on the same files.

The program: tick `a` batches puts, a top-level keyed aggregate of them (`all_ticks()`) is
the table, and tick `b` — another query — looks up the keys of its gets in it. With
`--keyed-state executors` the aggregate lives on the executors (Spark's streaming
aggregation for `count`, the executor region for a Python fold: `--fold python`) and each
producer batch sends the keys it updated; with `--keyed-state driver` the driver's store
keeps it and each producer batch sends the whole table. `--even-only` reads the table through
`filter(even)`: a key whose value turns odd leaves it (deltas: a tombstone). Printed per path: seconds, put rows/s
and the ratio, the producer's `triggerExecution` at the first and last batch, and the bytes
of all channel entries, and the reading query's batch at the first and last batch (with
deltas and the reader's state on the executors, its gets look the keys up in the version
it keeps per key, `channel_versions.py`).

    python benchmarks/bench_keyed_channel.py                              # 10 x 20,000 puts over 200,000 keys
    python benchmarks/bench_keyed_channel.py --batches 10 --rows 50000 --keys 1000000 --repeat 3
    python benchmarks/bench_keyed_channel.py --fold python --repeat 1
    python benchmarks/bench_keyed_channel.py --even-only --keys 50000   # keys in and out of the table: tombstones
    python benchmarks/bench_keyed_channel.py --first-rows 2000000 --rows 10000 --keys 2000000  # a large table, small updates
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
from hydrolite import nondet
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.session import spark_session

PATHS = ("executors", "driver")
ND = nondet("benchmark: any version of the table answers a get")


class Server:
    """The benchmark's process."""


def program(fold: str, even_only: bool = False) -> hl.Flow:
    fb = hl.FlowBuilder("bench-keyed-channel")
    p = fb.process(Server)
    a, b = p.tick(), p.tick()
    puts = p.keyed_source("puts", int, int).batch(a, ND).all_ticks()
    table = puts.count() if fold == "count" else puts.fold(0, lambda acc, x: (acc * 31 + x) % 1_000_003)
    if even_only:  # a key leaves the table when its value turns odd: the deltas carry tombstones
        table = table.filter(lambda v: v % 2 == 0)
    gets = p.keyed_source("gets", int, int).batch(b, ND)
    gets.lookup_keyed_singleton(table.snapshot(b, ND)).entries().map(lambda t: (t[0], t[1][1])).all_ticks().sink("out")
    return fb.finalize()


def write_inputs(base: str, batches: int, rows: int, keys: int, gets: int, first: int | None = None) -> None:
    """Puts cycle through the keys (`first`: the first batch's size, the rest `rows` each);
    gets ask keys spread over them."""
    for port, n, step in (("puts", rows, 1), ("gets", gets, 7919)):
        start = 0
        for b in range(batches):
            size = first if port == "puts" and b == 0 and first is not None else n
            k = [((start + i) * step) % keys for i in range(size)]
            start += size
            table = pa.table({"key": pa.array(k, pa.int64()), "value": pa.array([1] * size, pa.int64())})
            write_batch_file(os.path.join(base, port), b, table)


def _bytes(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(directory) for f in fs)


def run(spark: Any, base: str, keyed_state: str, fold: str, even_only: bool = False) -> dict[str, Any]:
    work = tempfile.mkdtemp(prefix="bench-kch-")
    opts = "?maxFilesPerTrigger=1"
    runner = FlowRunner(
        program(fold, even_only),
        spark=spark,
        checkpoint=os.path.join(work, "ck"),
        inputs={"puts": f"parquet:{base}/puts{opts}", "gets": f"parquet:{base}/gets{opts}"},
        outputs={"out": f"parquet:{work}/out"},
        keyed_state=keyed_state,
        channel_history="all",  # every entry stays, to be measured
    )
    deltas = [c.deltas for c in runner.plan.channels]
    producer = next(st for st in runner.stages if st.stage.channels_out)
    reader = next(st for st in runner.stages if st.stage.channels_in)
    elapsed, _ = timed_run(runner)

    def latencies(st: Any) -> list[float]:
        return [float(p.durationMs.get("triggerExecution", 0)) for p in st.query.recentProgress] if st.query else []

    lat, rlat = latencies(producer), latencies(reader)
    out = spark.read.parquet(f"{work}/out")
    # the answers' count and an order-free digest of them (a sum of row hashes): equal across paths
    answers, digest = out.selectExpr("count(*)", "sum(cast(hash(*) as bigint))").first()
    channel = _bytes(os.path.join(work, "ck", "channels"))
    shutil.rmtree(work, ignore_errors=True)
    return {
        "s": elapsed,
        "answers": answers,
        "digest": digest,
        "first": lat[0],
        "last": lat[-1],
        "rfirst": rlat[0],
        "rlast": rlat[-1],
        "channel": channel,
        "deltas": deltas,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--rows", type=int, default=20000, help="puts per batch")
    ap.add_argument("--keys", type=int, default=200000, help="distinct keys the puts cycle through")
    ap.add_argument("--gets", type=int, default=1000, help="gets per batch")
    ap.add_argument(
        "--first-rows",
        type=int,
        default=None,
        help="puts of the first batch (default --rows): a large table, then small batches",
    )
    ap.add_argument("--fold", choices=("count", "python"), default="count")
    ap.add_argument("--even-only", action="store_true", help="read the table through filter(even): tombstones")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--paths", default=",".join(PATHS), help="executors (deltas), driver (whole versions), or both")
    args = ap.parse_args()
    base = tempfile.mkdtemp(prefix="bench-kch-in-")
    write_inputs(base, args.batches, args.rows, args.keys, args.gets, args.first_rows)
    spark = spark_session(args.master, {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    first = args.rows if args.first_rows is None else args.first_rows
    rows = first + (args.batches - 1) * args.rows
    print(
        f"Spark {args.master}; {args.fold}{' read through filter(even)' if args.even_only else ''}: {args.batches} batches x {args.rows:,} puts over {args.keys:,} keys, "
        f"{args.gets:,} gets a batch{f' (the first batch: {first:,} puts)' if args.first_rows is not None else ''}"
    )
    paths = [p for p in PATHS if p in args.paths.split(",")]
    run(spark, base, paths[0], args.fold, args.even_only)  # warm-up (JVM, Python workers)
    results: dict[str, list[dict[str, Any]]] = {p: [] for p in paths}
    for rep in range(args.repeat):
        for path in paths if rep % 2 == 0 else paths[::-1]:
            r = run(spark, base, path, args.fold, args.even_only)
            results[path].append(r)
            print(
                f"  run {rep + 1} {path:9s} (deltas {r['deltas']}): {r['s']:.1f} s, {rows / r['s']:,.0f} puts/s, "
                f"producer batch {r['first']:.0f} ms first / {r['last']:.0f} ms last, reader batch {r['rfirst']:.0f} / "
                f"{r['rlast']:.0f} ms, channel {r['channel']:,} bytes, "
                f"{r['answers']:,} answers",
                flush=True,
            )
    digests = {r["digest"] for rs in results.values() for r in rs}
    if len(digests) != 1:
        raise SystemExit(f"the paths answered differently (answer digests {sorted(digests)})")
    med = {p: statistics.median(r["s"] for r in rs) for p, rs in results.items()}
    print(
        f"\n{'path':34s} {'median s':>9s} {'puts/s':>10s} {'first ms':>9s} {'last ms':>8s} {'reader last':>12s} "
        f"{'channel MB':>11s}"
    )
    names = {"executors": "deltas (state on the executors)", "driver": "whole versions (driver state)"}
    for p, rs in results.items():
        first = statistics.median(r["first"] for r in rs)
        last = statistics.median(r["last"] for r in rs)
        rlast = statistics.median(r["rlast"] for r in rs)
        mb = statistics.median(r["channel"] for r in rs) / 1e6
        print(f"{names[p]:34s} {med[p]:9.1f} {rows / med[p]:10,.0f} {first:9.0f} {last:8.0f} {rlast:12.0f} {mb:11.1f}")
    if len(paths) == 2:
        paired = [d["s"] / e["s"] for e, d in zip(results["executors"], results["driver"])]
        print(
            f"deltas / whole throughput: {med['driver'] / med['executors']:.2f}x of the medians; paired "
            + ", ".join(f"{x:.2f}" for x in paired)
        )
    shutil.rmtree(base, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
