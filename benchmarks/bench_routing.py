"""`demux_by_key()` on Spark: the route as a Spark expression vs the same route in Python.

One program — a process reads `(key, value)` pairs from Parquet and shards them by key over
a cluster of `--members` members, which write what they own — runs twice per round in one
process, once with the native route (`planner/spark/routing.py`: `sha2` over the key's
canonical bytes, no Python worker) and once with the route in an Arrow function
(`cluster_fns.Owner.__call__`, what hydrolite did before, and still does for float keys).
Every output is checked: each key on the member `member_of_key` names, every row once.

    python benchmarks/bench_routing.py                        # 4 x 250k rows, 100k str keys, 3 members
    python benchmarks/bench_routing.py --rows 100000 --repeat 5
    python benchmarks/bench_routing.py --hydrolite-src /tmp/clone   # hydrolite from another checkout

Prints, per path, the median time of the `availableNow` query over the rounds, input rows/s
and the ratio native / Python (the machine is shared: compare ratios, not seconds).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Front:
    """Tag of the process that reads the pairs."""


class Shard:
    """Tag of the cluster that owns the keys."""


def build() -> Any:
    import hydrolite as hl

    flow = hl.FlowBuilder("route_by_key")
    front, shards = flow.process(Front), flow.cluster(Shard)
    front.source("put", tuple[str, int]).into_keyed().demux_by_key(shards).entries().sink("owned")
    return flow.finalize()


def write_inputs(d: str, batches: int, rows: int, keys: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(d)
    for b in range(batches):
        ids = [(b * rows + i) * 7919 % keys for i in range(rows)]
        table = pa.table({"_1": [f"key{k}" for k in ids], "_2": list(range(b * rows, (b + 1) * rows))})
        pq.write_table(table, os.path.join(d, f"part-{b:04d}.parquet"))


@contextlib.contextmanager
def python_route() -> Iterator[None]:
    """The route without its Spark expression: `lambdas.translate` then runs it through Arrow."""
    from hydrolite.planner.spark.cluster_fns import Owner

    native = Owner.__dict__["spark_column"]
    delattr(Owner, "spark_column")
    try:
        yield
    finally:
        Owner.spark_column = native  # type: ignore[attr-defined]


def run(spark: Any, inp: str, out: str, members: int, expect_rows: int) -> tuple[float, str]:
    from hydrolite.locations.sharding import member_of_key
    from hydrolite.planner.spark.runtime import FlowRunner

    runner = FlowRunner(
        build(),
        spark=spark,
        checkpoint=os.path.join(out, "ck"),
        inputs={"put": f"parquet:{inp}?maxFilesPerTrigger=1"},
        outputs={"owned": f"parquet:{out}/owned"},
        cluster_sizes={"Shard": members},
    )
    t0 = time.perf_counter()
    runner.start(once=True)
    runner.await_termination()
    elapsed = time.perf_counter() - t0
    runner.stop()
    paths = {v for s in runner.stages for k, v in s.progress.fn_paths.items() if k.startswith("demux_by_key()")}
    rows = spark.read.parquet(f"{out}/owned").collect()
    assert len(rows) == expect_rows, f"{len(rows)} rows written, {expect_rows} sent"
    for r in rows[:: max(1, len(rows) // 20_000)]:  # a sample: the check runs in this process
        member, (key, _value) = r[0], r[1]
        assert member == member_of_key(key, members), (key, member)
    return elapsed, "/".join(sorted(paths))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--rows", type=int, default=250_000, help="rows per batch")
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--hydrolite-src", default=ROOT)
    args = ap.parse_args()
    sys.path.insert(0, args.hydrolite_src)
    from hydrolite.planner.spark.session import spark_session

    spark = spark_session(args.master, {"spark.sql.shuffle.partitions": "2"})
    base = tempfile.mkdtemp(prefix="bench-routing-")
    try:
        inp = os.path.join(base, "in")
        write_inputs(inp, args.batches, args.rows, args.keys)
        total = args.batches * args.rows
        warm = os.path.join(base, "warm")
        write_inputs(warm, 1, 1000, 100)
        run(spark, warm, os.path.join(base, "w1"), args.members, 1000)
        with python_route():
            run(spark, warm, os.path.join(base, "w2"), args.members, 1000)
        times: dict[str, list[float]] = {"native": [], "python": []}
        for i in range(args.repeat):
            for name in ("native", "python"):
                with python_route() if name == "python" else contextlib.nullcontext():
                    t, path = run(spark, inp, os.path.join(base, f"{name}{i}"), args.members, total)
                times[name].append(t)
                print(f"round {i}: {name:6} {t:7.1f} s  (route: {path})", flush=True)
        med = {k: statistics.median(v) for k, v in times.items()}
        for k, t in med.items():
            print(f"{k:6}: median {t:7.1f} s, {total / t:9,.0f} rows/s")
        print(f"native / python: {med['python'] / med['native']:.2f}x the rows/s ({args.repeat} rounds, {args.master})")
    finally:
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
