"""A top-level `unique()` (or a keyed `enumerate()`) on Spark: the occurrences counted by
Spark's streaming aggregation (RocksDB, `native_state._unique_of`) vs the driver's SQLite
store (hydrolite before). With `--through-python` the elements first go through a Python
function Spark cannot compute (a `map` / `filter` that changes nothing), so the native path
cannot count them: then the executor region's processor (`region.ExecutorSeen`, Spark's
state store per element or key, `keyed_state="executors"`) vs the driver's store. With
`--unchained` they go through two `flat_map()`s (each element once), so no chain reaches the
state either: then the tick's Parquet table on the executors (`tick_seen.py`) vs the driver's store.

One program — `source("xs", int).unique().sink("new")`, or with `--op enumerate`
`keyed_source("xs", int, int).enumerate().entries().sink("new")`, or with `--op
distinct-per-key` the number of distinct values of every key each batch touched
(`ks.unique().count()`, asked by the batch's `keys()`: the count's state keeps the values each
key saw, `region.Chain.kept`, executors vs driver), or with `--op enumerate-fold` an
order-sensitive fold of each key's `enumerate()` pairs asked the same way (kept by the
enumerate's processor, `kept_with.py`, executors vs driver) — reads the same Parquet
files (`maxFilesPerTrigger=1`: one file per micro-batch) twice per round in one process, once
with `keyed_state="auto"` (native) and once with `keyed_state="driver"`. Each batch repeats
elements (keys) of its own and of earlier batches. Every output is checked: each distinct
input element is written exactly once, in the batch of its first occurrence; each keyed row
carries its index within its key over all batches.

    python benchmarks/bench_unique.py                        # 4 x 250k rows over 600k elements
    python benchmarks/bench_unique.py --rows 1000000 --elements 3000000 --repeat 1
    python benchmarks/bench_unique.py --op enumerate         # the same rows as keys, each value its row number
    python benchmarks/bench_unique.py --through-python [--op enumerate]   # executor region vs driver
    python benchmarks/bench_unique.py --unchained [--op enumerate]   # the tick's table vs driver
    python benchmarks/bench_unique.py --op distinct-per-key    # executor region vs driver
    python benchmarks/bench_unique.py --op enumerate-fold      # executor region vs driver
    python benchmarks/bench_unique.py --hydrolite-src /tmp/clone   # hydrolite from another checkout

Prints, per path, the median time of the `availableNow` query, input rows/s, the driver
process's peak RSS growth during the run (VmHWM, reset before it) and the ratio native /
driver (or executors / driver; the machine is shared: compare ratios, not seconds).
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

from state_paths.memory import reset_peak, status  # benchmarks/ is this script's directory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Reader:
    """Tag of the process that reads the elements."""


def build(op: str, python: bool = False, unchained: bool = False) -> Any:
    """The program; with `python`, its elements go through a function the native path cannot
    compute first (`abs` of values that are never negative; a filter keeping every value);
    with `unchained`, through two `flat_map()`s giving each element once (no chain)."""
    import hydrolite as hl

    flow = hl.FlowBuilder("bench_unique")
    reader = flow.process(Reader)
    if op == "enumerate":
        ks = reader.keyed_source("xs", int, int)
        if unchained:
            ks.flat_map_ordered(lambda v: [v]).flat_map_ordered(lambda v: [v]).enumerate().entries().sink("new")
        else:
            (ks.filter(lambda v: v % 1 == 0) if python else ks).enumerate().entries().sink("new")
    elif op in ("distinct-per-key", "enumerate-fold"):
        ks, tick = reader.keyed_source("xs", int, int), reader.tick()
        nd = hl.nondet("bench: each micro-batch asks for the keys it touched")
        if op == "enumerate-fold":  # (an order-sensitive fold of each key's (index, row number) pairs)
            counts = ks.enumerate().fold(0, lambda a, iv: (a * 31 + iv[0] + iv[1]) % 1_000_003).snapshot(tick, nd)
        else:
            counts = ks.unique().count().snapshot(tick, nd)
        asked = ks.batch(tick, nd).keys().map(lambda k: (k, 0)).into_keyed()
        asked.lookup_keyed_singleton(counts).entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("new")
    else:
        xs = reader.source("xs", int)
        if unchained:
            xs = xs.flat_map_ordered(lambda x: [x]).flat_map_ordered(lambda x: [x])
        (xs.map(abs) if python else xs).unique().sink("new")
    return flow.finalize()


def write_inputs(d: str, batches: int, rows: int, elements: int, op: str = "unique") -> dict[int, int]:
    """Batch b's elements: a scattered walk over `elements` values (repeats within and across
    batches). Returns element -> the batch of its first occurrence; with `op` enumerate the
    walk gives the keys, each row's value is its row number, and the result is row number ->
    the row's index within its key; with `distinct-per-key` each row's value is its row number
    modulo 5, and the result is (batch, key) -> the key's distinct values after that batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(d)
    want: dict[Any, int] = {}
    seen: dict[int, int] = {}
    pairs: dict[int, set[int]] = {}
    acc: dict[int, int] = {}
    for b in range(batches):
        xs = [(b * rows + i) * 7919 % elements for i in range(rows)]
        if op == "distinct-per-key":
            vs = [(b * rows + i) % 5 for i in range(rows)]
            for x, v in zip(xs, vs):
                pairs.setdefault(x, set()).add(v)
            want.update({(b, x): len(pairs[x]) for x in set(xs)})
            table = pa.table({"key": xs, "value": vs})
        elif op == "enumerate-fold":
            for i, x in enumerate(xs):
                seen[x] = seen.get(x, 0) + 1
                acc[x] = (acc.get(x, 0) * 31 + seen[x] - 1 + b * rows + i) % 1_000_003
            want.update({(b, x): acc[x] for x in set(xs)})
            table = pa.table({"key": xs, "value": list(range(b * rows, (b + 1) * rows))})
        elif op == "enumerate":
            for i, x in enumerate(xs):
                want[b * rows + i] = seen.get(x, 0)
                seen[x] = seen.get(x, 0) + 1
            table = pa.table({"key": xs, "value": list(range(b * rows, (b + 1) * rows))})
        else:
            for x in xs:
                want.setdefault(x, b)
            table = pa.table({"value": xs})
        pq.write_table(table, os.path.join(d, f"part-{b:04d}.parquet"))
    return want


def run(
    spark: Any,
    inp: str,
    out: str,
    keyed_state: str,
    first: dict[int, int],
    op: str = "unique",
    python: bool = False,
    unchained: bool = False,
) -> tuple[float, int, str]:
    from pyspark.sql import functions as F

    from hydrolite.planner.spark.runtime import FlowRunner

    runner = FlowRunner(
        build(op, python, unchained),
        spark=spark,
        checkpoint=os.path.join(out, "ck"),
        inputs={"xs": f"parquet:{inp}?maxFilesPerTrigger=1"},
        outputs={"new": f"parquet:{out}/new"},
        keyed_state=keyed_state,
    )
    placements = [p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements]
    placed = placements[-1]  # (distinct-per-key: the count, after the unique() it folds; enumerate-fold: the fold)
    reset_peak(os.getpid())
    before = status(os.getpid(), "VmHWM")
    t0 = time.perf_counter()
    runner.start(once=True)
    runner.await_termination()
    elapsed = time.perf_counter() - t0
    grew = max(0, status(os.getpid(), "VmHWM") - before)  # the kernel updates the peak lazily: a few KB below is 0
    runner.stop()
    if op in ("distinct-per-key", "enumerate-fold"):  # (key, value) rows, one per key a batch touched
        rows = spark.read.parquet(f"{out}/new").select(F.col("batch_id"), F.col("_1"), F.col("_2")).collect()
        written = [((b, k), c) for b, k, c in rows]
        assert len(written) == len(first), f"{len(written)} answers written, {len(first)} (batch, key) asked"
    elif op == "enumerate":  # (key, (index, row number)) rows
        written = spark.read.parquet(f"{out}/new").select(F.col("_2._2"), F.col("_2._1")).collect()
        assert len(written) == len(first), f"{len(written)} rows written, {len(first)} sent"
    else:
        written = spark.read.parquet(f"{out}/new").select("value", F.col("batch_id")).collect()
        assert len(written) == len(first), f"{len(written)} elements written, {len(first)} distinct sent"
    for value, got in written[:: max(1, len(written) // 20_000)]:  # a sample: the check runs here
        assert first[value] == got, (value, got, first[value])
    home = (
        "native" if placed.native else "table" if placed.tick_table else "executors" if placed.executors else "driver"
    )
    return elapsed, grew, f"{home}: {placed.why[:60]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--rows", type=int, default=250_000, help="rows per batch")
    ap.add_argument("--elements", type=int, default=600_000, help="distinct values the rows are drawn from")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--op", choices=("unique", "enumerate", "distinct-per-key", "enumerate-fold"), default="unique")
    ap.add_argument("--through-python", action="store_true", help="elements through a Python function first")
    ap.add_argument("--unchained", action="store_true", help="elements through two flat_map()s (unique, enumerate)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--hydrolite-src", default=ROOT)
    args = ap.parse_args()
    sys.path.insert(0, args.hydrolite_src)
    from hydrolite.planner.spark.session import spark_session

    spark = spark_session(args.master, {"spark.sql.shuffle.partitions": "2"})
    base = tempfile.mkdtemp(prefix="bench-unique-")
    try:
        inp = os.path.join(base, "in")
        first = write_inputs(inp, args.batches, args.rows, args.elements, args.op)
        total = args.batches * args.rows
        warm = os.path.join(base, "warm")
        warm_first = write_inputs(warm, 2, 1000, 1500, args.op)
        executors = args.through_python or args.unchained or args.op in ("distinct-per-key", "enumerate-fold")
        first_mode = "executors" if executors else "auto"
        modes = (first_mode, "driver")
        for ks in modes:
            run(
                spark, warm, os.path.join(base, f"w-{ks}"), ks, warm_first, args.op, args.through_python, args.unchained
            )
        times: dict[str, list[float]] = {k: [] for k in modes}
        grew: dict[str, list[int]] = {k: [] for k in modes}
        for i in range(args.repeat):
            for ks in modes:
                out = os.path.join(base, f"{ks}{i}")
                t, g, how = run(spark, inp, out, ks, first, args.op, args.through_python, args.unchained)
                times[ks].append(t)
                grew[ks].append(g)
                print(f"round {i}: {ks:9} {t:7.1f} s, driver peak RSS +{g / 1024:,.0f} MB  ({how})", flush=True)
        med = {k: statistics.median(v) for k, v in times.items()}
        what = {"unique": "distinct elements", "enumerate": "rows"}.get(args.op, "answers") + " (keys drawn from"
        through = ", through a Python function" if args.through_python else ""
        through += ", through two flat_map()s" if args.unchained else ""
        print(
            f"{args.op}{through}: {total:,} rows, {len(first):,} {what} {args.elements:,}), {args.batches} batches, "
            f"{args.master}"
        )
        for k, t in med.items():
            mb = statistics.median(grew[k]) / 1024
            print(f"{k:9}: median {t:7.1f} s, {total / t:9,.0f} rows/s, driver peak RSS +{mb:,.0f} MB")
        label = "native" if first_mode == "auto" else "executors"
        print(f"{label} / driver: {med['driver'] / med[first_mode]:.2f}x the rows/s ({args.repeat} rounds)")
    finally:
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
