"""Keyed state on Spark, path by path: a per-key running count and a key-value store (issue 14).

Every path reads the same generated Parquet files as a stream (`maxFilesPerTrigger=1`: one
file of each input per micro-batch), keeps its keyed state in Spark's RocksDB state store (or,
hydrolite's driver path, in its SQLite store) and writes Parquet, one `batch_id=N` directory
per micro-batch:

    count-native     `groupBy(key).count()`, update mode, foreachBatch writes the updated rows
    count-aipws      `applyInPandasWithState` (GroupState holds the count)
    count-twsp       `transformWithStateInPandas` (a StatefulProcessor with one ValueState)
    count-tws        `transformWithState` (the Row-based Python API)
    kv-twsp          puts (last write by `seq` wins) and gets unioned and grouped by key, one
                     `transformWithStateInPandas` processor; a get sees the value at the end of its batch
    kv-twsp-arrival  the same, last put in arrival order (no sort by `seq`; the check says if that held)
    kv-tws           the key-value store through `transformWithState` (Row-based)
    kv-aipws         the key-value store through `applyInPandasWithState`
    count-hydro      hydrolite: a keyed `count()` read back per touched key (`state_paths.jobs.build_keycount`)
    count-map-hydro  the same, the events read as records and keyed by a projection
                     (`map(lambda e: (e.key, e.value)).into_keyed()`: native through it too)
    count-rekeyed-hydro  the same count over its input through two `flat_map()`s (no chain: the tick
                     computes it, as a re-keyed join's pairs): a table the tick folds on the
                     executors (`--keyed-state executors`), or the driver's store
    kv-hydro         hydrolite: `examples/kvstore.py`
    table-native     the running count read whole: `groupBy(key).count()` in complete mode, every
                     batch writes every key counted so far
    table-hydro      hydrolite: a keyed `count()` read whole each tick, `snapshot().entries()`
                     (`state_paths.jobs.build_table`)

hydrolite's paths keep keyed state where `--keyed-state auto|executors|driver` says (FlowRunner's
`keyed_state`; auto: the driver on a local master, the executors on a cluster one). The jobs,
the inputs and answers, memory sampling and the probes are in `benchmarks/state_paths/`.

Each path runs in its own Python + JVM process, one after the other, after a warm-up run in
that process; its outputs are checked against answers computed with pandas. Printed: input
rows/s, ratios against count-native (and kv-twsp), per-batch latency (`triggerExecution`:
first, last, median batch; per distinct key), peak RSS of the Python driver and of the JVM
(VmHWM from /proc; in local mode the JVM also runs the executors and RocksDB), the peak
PSS of the Python workers, and CPU time per micro-batch of the Python driver and the JVM
(under `local-cluster` the JVM is the driver's alone: the figures for driver flatness).
With `--repeat N`, every repetition runs each path once (in reverse order every other time)
and the ratios are also given paired by repetition: their median and how many reach 1.0.

    python benchmarks/bench_state_paths.py                       # 4 x 5k rows over 10k keys
    python benchmarks/bench_state_paths.py --keys 1000000 --batches 4 --rows 100000 --paths count-native,kv-hydro
    python benchmarks/bench_state_paths.py --keys 10000000 --batches 10 --rows 1000000 --paths count-native
    python benchmarks/bench_state_paths.py --paths count-native,kv-hydro --keyed-state executors
    python benchmarks/bench_state_paths.py --hydrolite-src /tmp/head   # hydrolite from another checkout
    python benchmarks/bench_state_paths.py --probe union   # one source feeding two branches of one query
    python benchmarks/bench_state_paths.py --probe order --master 'local-cluster[2,1,1024]'
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import pandas as pd
from state_paths.data import check, expected, write_inputs
from state_paths.jobs import ROCKSDB, run_hydro, run_spark
from state_paths.memory import WorkerMemory, batch_sampler, cpu_seconds, reset_peak, status
from state_paths.probes import probe_order, probe_union

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = tuple(
    "count-native count-aipws count-twsp count-tws kv-twsp kv-twsp-arrival kv-tws kv-aipws count-hydro count-map-hydro "
    "count-rekeyed-hydro kv-hydro "
    "table-native table-hydro".split()
)
#: each kind of path and the baseline its ratios are over
BASELINE = {"count": "count-native", "kv": "kv-twsp", "table": "table-native"}


def kind_of(path: str) -> str:
    return path.split("-", 1)[0]


KEYED_STATE = ("auto", "executors", "driver")


# ----------------------------------------------------------------------------- one path, one process
def session(args: argparse.Namespace) -> Any:
    """hydrolite's session defaults (Arrow on, AQE off, no empty batches) plus RocksDB state.
    The paths' functions travel to Spark's Python workers by value: the workers cannot import
    `state_paths` (benchmarks/ is on this script's path only)."""
    import state_paths
    from pyspark.cloudpickle import register_pickle_by_value

    from hydrolite.planner.spark.session import spark_session

    register_pickle_by_value(state_paths)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this venv's pandas, not PATH's python3
    for kv in args.conf:
        if "=" not in kv:
            raise SystemExit(f"--conf wants key=value, got {kv!r}")
    conf = {
        "spark.sql.shuffle.partitions": str(args.partitions),
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.streaming.numRecentProgressUpdates": "100000",
        **dict(kv.split("=", 1) for kv in args.conf),
    }
    return spark_session(args.master, conf)


def worker(args: argparse.Namespace) -> None:
    """Run one path (warm-up, then the measured run) in this process; write its figures as JSON."""
    spark = session(args)
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    run = run_hydro if args.worker.endswith("hydro") else run_spark
    run(spark, args.worker, args.warm, os.path.join(args.work, "warm"), args.keyed_state)
    reset = reset_peak(os.getpid()) and reset_peak(jvm)
    workers = WorkerMemory(jvm)
    workers.start()
    load = os.getloadavg()[0]
    cpu = (cpu_seconds(os.getpid()), cpu_seconds(jvm))
    samples = batch_sampler(spark, jvm, workers, args.result + ".batches.jsonl")
    elapsed, progress, where = run(spark, args.worker, args.data, os.path.join(args.work, "run"), args.keyed_state)
    workers.running = False
    workers.join()
    # the driver's CPU without the sampling thread's (the process's time includes every thread's)
    cpu = (cpu_seconds(os.getpid()) - cpu[0] - workers.cpu_s, cpu_seconds(jvm) - cpu[1])
    load = max(load, os.getloadavg()[0])
    lat = {int(p.batchId): float(p.durationMs.get("triggerExecution", 0)) for p in progress}
    rows = sum(int(p.numInputRows) for p in progress)
    result = {
        "path": args.worker,
        "elapsed": elapsed,
        "rows": rows,
        "latency_ms": [lat[b] for b in sorted(lat)],
        "driver_kb": status(os.getpid(), "VmHWM"),
        "jvm_kb": status(jvm, "VmHWM"),
        "workers_kb": workers.peak_kb,
        "driver_cpu_s": cpu[0],
        "jvm_cpu_s": cpu[1],
        "peak_after_warmup": reset,
        "load": load,
        "state": where,
        "spark": spark.version,
        "per_batch": _per_batch_samples(samples),
    }
    with open(args.result, "w") as fh:
        json.dump(result, fh)
    spark.stop()


def _per_batch_samples(samples: list[dict[str, float]]) -> list[dict[str, float]]:
    """Driver CPU ms, driver RSS MB and JVM CPU ms of each progress event against the one before
    (listener events arrive a moment after their batch ends: a batch's figure may include the start
    of the next one's planning; the sum is exact)."""
    time.sleep(1)  # the last event is delivered asynchronously
    return [
        {
            "batch": b["batch"],
            "driver_ms": (b["driver_cpu_s"] - a["driver_cpu_s"]) * 1000,
            "driver_rss_mb": b["driver_rss_kb"] / 1024,
            "jvm_ms": (b["jvm_cpu_s"] - a["jvm_cpu_s"]) * 1000,
        }
        for a, b in zip(samples, samples[1:])
    ]


def run_worker(args: argparse.Namespace, path: str, base: str, warm: str) -> dict[str, Any]:
    """One path in a fresh `python` process (its own JVM), hydrolite from --hydrolite-src."""
    work = tempfile.mkdtemp(prefix=f"{path}-", dir=base)
    result = os.path.join(work, "result.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", path, "--data", os.path.join(base, "data")]
    cmd += ["--warm", warm, "--work", work, "--result", result, "--master", args.master]
    cmd += ["--partitions", str(args.partitions), "--keyed-state", args.keyed_state]
    cmd += [x for c in args.conf for x in ("--conf", c)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([args.hydrolite_src, os.environ.get("PYTHONPATH", "")])}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(result):
        return {"path": path, "error": f"exit {proc.returncode}: {' '.join(cmd)}\n{proc.stderr[-3000:]}"}
    with open(result) as fh:
        res: dict[str, Any] = json.load(fh)
    res["process_s"] = time.perf_counter() - t0
    res["out"] = os.path.join(work, "run")
    return res


# ----------------------------------------------------------------------------- report
def _mb(kb: int) -> str:
    return f"{kb / 1024:7.0f}"


def touched(want: dict[str, pd.DataFrame]) -> float:
    """Median number of distinct keys a micro-batch touches (puts, gets or events)."""
    keys = pd.concat(
        [w[["batch_id", "_2" if "acks" in want else "_1"]].set_axis(["b", "k"], axis=1) for w in want.values()]
    )
    return float(keys.drop_duplicates().groupby("b").size().median())


def _per_batch(r: dict[str, Any], field: str) -> str:
    """A run's CPU seconds as ms per micro-batch ('-' from a --hydrolite-src run without the figure)."""
    return f"{r[field] * 1000 / len(r['latency_ms']):9.0f}" if field in r and r["latency_ms"] else f"{'-':>9}"


def per_batch_line(r: dict[str, Any]) -> str:
    """Each batch's driver CPU ms, driver RSS MB and JVM CPU ms, then first -> last ratios: the
    driver's flatness as state grows within one run."""
    pb = r["per_batch"]
    cells = ", ".join(f"#{int(x['batch'])} {x['driver_ms']:.0f}/{x['driver_rss_mb']:.0f}/{x['jvm_ms']:.0f}" for x in pb)
    first, last = pb[0], pb[-1]
    ratio = last["driver_ms"] / first["driver_ms"] if first["driver_ms"] else float("nan")
    rss = last["driver_rss_mb"] / first["driver_rss_mb"] if first["driver_rss_mb"] else float("nan")
    return f"driver ms / driver RSS MB / JVM ms: {cells}; last/first driver ms {ratio:.2f}x, RSS {rss:.2f}x"


def _rate(r: dict[str, Any]) -> float:
    return float(r["rows"] / r["elapsed"])


def paired(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each path's rows/s over its baseline's (`BASELINE`: count-native, kv-twsp, table-native) in the same
    repetition, run next to each other: on a shared machine the load moves between
    repetitions more than between two neighbouring runs, so these ratios are steadier than
    the ratio of the two medians."""
    lines = []
    for path, rs in runs.items():
        base = BASELINE[kind_of(path)]
        if kind_of(path) == "kv" and base not in runs:
            base = "count-native"  # (a kv path's rate against the running count's, as before)
        if path == base or base not in runs:
            continue
        of_rep = {b["rep"]: b for b in runs[base] if "rep" in b}
        ratios = [_rate(r) / _rate(of_rep[r["rep"]]) for r in rs if r.get("rep") in of_rep]
        if len(ratios) < 2:
            continue
        each = ", ".join(f"{x:.2f}" for x in ratios)
        at_least = sum(x >= 1.0 for x in ratios)
        lines.append(
            f"{path} / {base}, paired by repetition: median {statistics.median(ratios):.3f}x, "
            f"{at_least} of {len(ratios)} >= 1.0 ({each})"
        )
    return lines


def report(runs: dict[str, list[dict[str, Any]]], keys: dict[str, float]) -> None:
    """The table (per path, its median run by rows/s): throughput, ratios, latency, peak RSS."""
    med = {p: sorted(rs, key=_rate)[(len(rs) - 1) // 2] for p, rs in runs.items()}
    native, kvb = med.get("count-native"), med.get("kv-twsp")
    table = med.get("table-native")
    print(
        f"\n{'path':<16}{'rows':>10}{'s':>7}{'rows/s':>9}{'x native':>9}{'x kv-twsp':>10}{'first':>7}{'last':>7}"
        f"{'median':>7}{'us/key':>7}{'drv MB':>7}{'JVM MB':>7}{'wrk MB':>7}{'drv ms/b':>9}{'JVM ms/b':>9}{'load':>5}  check"
    )
    for path, r in med.items():
        lat, rate, rs = r["latency_ms"], _rate(r), runs[path]
        base = table if kind_of(path) == "table" else native  # (x native: table paths against complete mode)
        ratio = f"{rate / _rate(base):9.2f}" if base else f"{'-':>9}"
        kv = f"{rate / _rate(kvb):10.2f}" if kvb and path.startswith("kv") else f"{'-':>10}"
        per_key = statistics.median(lat) * 1000 / keys.get(kind_of(path), keys.get("count", 1.0))
        each = ", ".join(f"{_rate(x):,.0f} (load {x['load']:.1f})" for x in rs)
        print(
            f"{path:<16}{r['rows']:>10,}{r['elapsed']:7.1f}{rate:9,.0f}{ratio}{kv}{lat[0]:7.0f}{lat[-1]:7.0f}"
            f"{statistics.median(lat):7.0f}{per_key:7.0f}{_mb(r['driver_kb'])}{_mb(r['jvm_kb'])}{_mb(r['workers_kb'])}"
            f"{_per_batch(r, 'driver_cpu_s')}{_per_batch(r, 'jvm_cpu_s')}"
            f"{r['load']:5.1f}  {'WRONG' if any(x['check'] for x in rs) else 'ok'}"
            + (f"  rows/s of the {len(rs)} runs: {each}" if len(rs) > 1 else "")
        )
    for line in paired(runs):
        print(line)
    peaks = "reset after the warm-up" if all(r["peak_after_warmup"] for r in med.values()) else "warm-up included"
    print(
        "\nrows = input rows (the files' rows, the same for every path of a kind; Spark's numInputRows counts a row per branch reading it); s = start to end of the availableNow query; first / last / "
        "median = triggerExecution (ms) of the first, last and median micro-batch; us/key = median batch time per "
        f"distinct key touched in a batch ({', '.join(f'{k}: {v:,.0f}' for k, v in keys.items())}; for table, the keys written); drv / JVM MB = VmHWM "
        f"(peak RSS from /proc, {peaks}) of the Python driver and of the JVM (local mode: driver + executors + "
        "RocksDB); wrk MB = peak summed PSS of the JVM's child processes (Python workers; executor JVMs under "
        "local-cluster), sampled every 0.2 s; drv / JVM ms/b = CPU time (user + system, /proc) of the Python driver "
        "and of the JVM per micro-batch (local mode: the JVM's includes the executors' work; under local-cluster it "
        "is the driver JVM's alone); load = the machine's 1-minute load average (the higher of start and end "
        "of the run; 2 cores: above 2, other processes were competing for them)."
    )
    for path, r in med.items():
        if r.get("per_batch"):
            print(f"{path} per micro-batch (progress events of its median run): " + per_batch_line(r))
    for path, rs in runs.items():
        if path.endswith("hydro"):
            print(f"{path} state placement (hydrolite plan, from {rs[0]['src']}):\n  {rs[0]['state']}")
        for x in rs:
            if x["check"]:
                print(f"{path} output differs from the expected answers:\n{x['check']}")


def main() -> None:
    args = parse_args()
    if args.worker or args.probe:
        (worker if args.worker else probe)(args)
        return
    paths = args.paths.split(",")
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        raise SystemExit(f"--paths: unknown {', '.join(unknown)}; known: {', '.join(PATHS)}")
    base = tempfile.mkdtemp(prefix="bench-state-", dir=args.tmp)
    gets = args.gets if args.gets is not None else args.rows // 5
    print(f"Spark {args.master}, {args.partitions} shuffle partitions, conf {args.conf}; data under {base}")
    print(f"hydrolite's paths: --keyed-state {args.keyed_state} (FlowRunner keyed_state)")
    print(f"{args.batches} x {args.rows:,} rows over {args.keys:,} keys (+ {gets:,} gets per batch)", flush=True)
    write_inputs(os.path.join(base, "data"), args.batches, args.rows, args.keys, gets)
    write_inputs(os.path.join(base, "warm"), 2, 500, 300, 100)
    want = {kind: expected(os.path.join(base, "data"), kind) for kind in {kind_of(p) for p in paths}}
    # the input rows each kind of path reads: every path's rate is over the same rows (Spark's
    # numInputRows counts a row once per branch that reads it: twice on hydrolite's executor paths)
    inputs = {
        "count": args.batches * args.rows,
        "kv": args.batches * (args.rows + gets),
        "table": args.batches * args.rows,
    }
    runs: dict[str, list[dict[str, Any]]] = {p: [] for p in paths}
    failed = []
    try:
        # every other repetition runs the paths in reverse order: a slot that is faster on this
        # machine (the first run after a pause, say) favours no path in the paired ratios
        order = ((r, p) for r in range(args.repeat) for p in (paths if r % 2 == 0 else paths[::-1]))
        for rep, path in order:
            res = run_worker(args, path, base, os.path.join(base, "warm"))
            res["rep"] = rep
            if "error" in res:  # say so and go on: one failing path must not hide the others' figures
                print(f"  run {rep + 1} {path}: FAILED ({res['error'].splitlines()[0]})", flush=True)
                failed.append(res)
                continue
            kind = kind_of(path)
            res["check"] = check(res["out"], want[kind])
            res["spark_rows"], res["rows"] = res["rows"], inputs[kind]
            res["src"] = args.hydrolite_src
            runs[path].append(res)
            took = f"{res['elapsed']:.1f} s ({res['process_s']:.0f} s with start-up)"
            print(f"  run {rep + 1} {path}: {res['rows']:,} rows in {took}", flush=True)
            shutil.rmtree(os.path.dirname(res["out"]), ignore_errors=True)
        report({p: rs for p, rs in runs.items() if rs}, {kind: touched(w) for kind, w in want.items()})
        for res in failed:
            print(f"\n{res['path']} FAILED: {res['error']}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--batches", type=int, default=4, help="micro-batches = files per input (default 4)")
    parser.add_argument("--rows", type=int, default=5_000, help="events (= puts) per batch (default 5k)")
    parser.add_argument("--keys", type=int, default=10_000, help="distinct keys (default 10k)")
    parser.add_argument("--gets", type=int, default=None, help="gets per batch (default rows / 5)")
    parser.add_argument("--paths", default=",".join(PATHS), help="comma-separated, from: " + ", ".join(PATHS))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--keyed-state",
        choices=KEYED_STATE,
        default="auto",
        help="hydrolite's paths: where keyed state lives (FlowRunner keyed_state; auto: by the master)",
    )
    parser.add_argument("--partitions", type=int, default=2, help="spark.sql.shuffle.partitions = state partitions")
    parser.add_argument("--conf", action="append", default=[], help="extra Spark conf key=value (repeatable)")
    parser.add_argument("--hydrolite-src", default=ROOT, help="checkout to import hydrolite from (default: this one)")
    parser.add_argument("--tmp", default="/tmp", help="where the data and outputs go (default /tmp)")
    parser.add_argument("--repeat", type=int, default=1, help="run every path this many times (median)")
    parser.add_argument("--keep", action="store_true", help="keep the generated data")
    parser.add_argument("--probe", choices=("union", "order"), help="a capability probe instead of the benchmark")
    for hidden in ("--worker", "--data", "--warm", "--work", "--result"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if min(args.batches, args.rows, args.keys, args.repeat) < 1:
        parser.error(
            f"--batches, --rows, --keys, --repeat must be >= 1: {args.batches}, {args.rows}, {args.keys}, {args.repeat}"
        )
    return args


# ----------------------------------------------------------------------------- probes
def probe(args: argparse.Namespace) -> None:
    base = tempfile.mkdtemp(prefix=f"probe-{args.probe}-", dir=args.tmp)
    spark = session(args)
    try:
        (probe_union if args.probe == "union" else probe_order)(spark, base)
    finally:
        spark.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
