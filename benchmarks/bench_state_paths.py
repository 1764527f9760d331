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
    count-hydro      hydrolite: a keyed `count()` read back per touched key (`build_keycount` below)
    kv-hydro         hydrolite: `examples/kvstore.py`

Each path runs in its own Python + JVM process, one after the other, after a warm-up run in
that process; its outputs are checked against answers computed with pandas. Printed: input
rows/s, ratios against count-native (and kv-twsp), per-batch latency (`triggerExecution`:
first, last, median batch; per distinct key), peak RSS of the Python driver and of the JVM
(VmHWM from /proc; in local mode the JVM also runs the executors and RocksDB) and the peak
PSS of the Python workers.

    python benchmarks/bench_state_paths.py                       # 4 x 5k rows over 10k keys
    python benchmarks/bench_state_paths.py --keys 1000000 --batches 4 --rows 100000 --paths count-native,kv-hydro
    python benchmarks/bench_state_paths.py --keys 10000000 --batches 10 --rows 1000000 --paths count-native
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
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
EVENTS, PUTS, GETS = "events", "put", "get"
COUNT_OUT = "_1 string, _2 long"  # (key, running count) per touched key
KV_OUT = "kind int, _1 string, _2 string, _3 long"  # kind 0: put ack (client, key); 1: reply (client, key, value)
PATHS = tuple(
    "count-native count-aipws count-twsp count-tws kv-twsp kv-twsp-arrival kv-tws kv-aipws count-hydro kv-hydro".split()
)


# ----------------------------------------------------------------------------- input data
def write_inputs(base: str, batches: int, rows: int, keys: int, gets: int, group: int | None = None) -> None:
    """`batches` files per input. Keys: the first `keys` rows (events and puts share them) visit
    every key once in a random order, later rows pick keys uniformly; gets pick keys uniformly.
    `group`: rows per Parquet row group (the unit Spark splits a file into partitions by)."""
    rng = np.random.default_rng(7)
    perm = rng.permutation(keys)
    for d in (EVENTS, PUTS, GETS):
        os.makedirs(os.path.join(base, d))
    t0 = time.time() - 10 * batches
    for b in range(batches):
        g = np.arange(b * rows, (b + 1) * rows, dtype=np.int64)
        idx = np.where(g < keys, perm[np.minimum(g, keys - 1)], rng.integers(0, keys, rows))
        key = pc.binary_join_element_wise("k", pa.array(idx).cast(pa.string()), "")
        gi = np.arange(b * gets, (b + 1) * gets, dtype=np.int64)
        tables = {
            EVENTS: pa.table({"key": key, "value": pa.array(g)}),
            PUTS: pa.table({"_1": _names("p", g), "_2": key, "_3": pa.array(rng.integers(0, 1 << 40, rows)), "seq": g}),
            GETS: pa.table({"_1": _names("g", gi), "_2": _names("k", rng.integers(0, keys, gets))}),
        }
        for d, table in tables.items():
            path = os.path.join(base, d, f"part-{b:06d}.parquet")
            pq.write_table(table, path, row_group_size=group)
            os.utime(path, (t0 + 10 * b, t0 + 10 * b))  # Spark's file source takes the oldest first


def _names(prefix: str, ints: Any) -> Any:
    return pc.binary_join_element_wise(prefix, pa.array(ints).cast(pa.string()), "")


def _read(base: str, d: str) -> pd.DataFrame:
    """One input as pandas with its batch number `b` (file i is micro-batch i)."""
    parts: list[pd.DataFrame] = []
    for i, f in enumerate(sorted(os.listdir(os.path.join(base, d)))):
        parts.append(pq.read_table(os.path.join(base, d, f)).to_pandas().assign(b=i))
    return pd.concat(parts, ignore_index=True)


def expected(base: str, kind: str) -> dict[str, pd.DataFrame]:
    """The answers every path must write, per batch, from the generated files."""
    if kind == "count":
        ev = _read(base, EVENTS)
        per = ev.groupby(["b", "key"], sort=True).size().rename("n").reset_index()
        per["_2"] = per.groupby("key")["n"].cumsum()
        return {"resp": per.rename(columns={"b": "batch_id", "key": "_1"})[["batch_id", "_1", "_2"]]}
    puts, gets = _read(base, PUTS), _read(base, GETS)
    last = puts.sort_values("seq").groupby(["b", "_2"]).tail(1)[["b", "_2", "_3"]].sort_values("b")
    answers = pd.merge_asof(gets.sort_values("b"), last, on="b", by="_2", direction="backward")
    answers["_3"] = answers["_3"].astype("Int64")
    return {
        "resp": answers.rename(columns={"b": "batch_id"})[["batch_id", "_1", "_2", "_3"]],
        "acks": puts.rename(columns={"b": "batch_id"})[["batch_id", "_1", "_2"]],
    }


def _normal(df: pd.DataFrame) -> pd.DataFrame:
    """Numbers as nullable Int64, the rest as strings: one dtype per column whatever the reader chose."""
    out: pd.DataFrame = df.astype({c: "Int64" if pd.api.types.is_numeric_dtype(df[c]) else "string" for c in df})
    return out


def check(out: str, want: dict[str, pd.DataFrame]) -> str:
    """Compare each output directory (as a multiset of rows) with the expected answers; '' if equal."""
    bad = []
    for name, exp in want.items():
        table = ds.dataset(os.path.join(out, name), format="parquet", partitioning="hive").to_table()
        cols = list(exp.columns)
        g, e = (_normal(df[cols]).sort_values(cols, ignore_index=True) for df in (table.to_pandas(), exp))
        if not g.equals(e):
            diff = g.merge(e, how="outer", indicator=True).query("_merge != 'both'")
            bad.append(f"{name}: {len(g)} rows written, {len(e)} expected, {len(diff)} differ, e.g.\n{diff.head(4)}")
    return "\n".join(bad)


# ----------------------------------------------------------------------------- the Spark paths
def _stream(spark: Any, base: str, d: str, schema: str) -> Any:
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", "1").parquet(os.path.join(base, d))


def _kv_input(spark: Any, base: str) -> Any:
    """Puts and gets as one stream: kind 0 = put (client, key, value, seq), 1 = get (client, key)."""
    from pyspark.sql import functions as F

    puts = _stream(spark, base, PUTS, "_1 string, _2 string, _3 long, seq long").select(F.lit(0).alias("kind"), "*")
    gets = _stream(spark, base, GETS, "_1 string, _2 string").select(F.lit(1).alias("kind"), "_1", "_2")
    return puts.unionByName(gets, allowMissingColumns=True)


def _writer(out: str, kv: bool) -> Callable[[Any, int], None]:
    """foreachBatch: the batch's rows under `resp/` (kv: acks under `acks/`, the processor's output persisted)."""
    from pyspark.sql import functions as F

    def write(df: Any, batch_id: int) -> None:
        if not kv:
            df.toDF("_1", "_2").write.mode("overwrite").parquet(f"{out}/resp/batch_id={batch_id}")
            return
        df.persist()
        for name, kind, cols in (("acks", 0, ["_1", "_2"]), ("resp", 1, ["_1", "_2", "_3"])):
            df.filter(F.col("kind") == kind).select(cols).write.mode("overwrite").parquet(
                f"{out}/{name}/batch_id={batch_id}"
            )
        df.unpersist()

    return write


def _count_state(key: tuple[str], pdfs: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
    total = sum(len(p) for p in pdfs) + (state.get[0] if state.exists else 0)
    state.update((total,))
    yield pd.DataFrame({"_1": [key[0]], "_2": [total]})


def _processors() -> dict[str, type]:
    """The StatefulProcessors (pyspark imported only in the worker process)."""
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class CountPandas(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.n = handle.getValueState("n", "n long")

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            old = self.n.get()
            total = sum(len(p) for p in rows) + (old[0] if old else 0)
            self.n.update((total,))
            yield pd.DataFrame({"_1": [key[0]], "_2": [total]})

    class CountRows(CountPandas):
        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            old = self.n.get()
            total = sum(1 for _ in rows) + (old[0] if old else 0)
            self.n.update((total,))
            yield Row(_1=key[0], _2=total)

    class KvPandas(StatefulProcessor):
        by_seq = True

        def init(self, handle: Any) -> None:
            self.v = handle.getValueState("v", "v long")

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            old = self.v.get()
            out, value = kv_step(key[0], _one(rows), old[0] if old else None, self.by_seq)
            if value is not None:
                self.v.update((value,))
            yield out

    class KvArrival(KvPandas):
        by_seq = False

    class KvRows(KvPandas):
        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            ordered = sorted(rows, key=lambda r: -1 if r.seq is None else r.seq)  # gets first, then puts by seq
            old = self.v.get()
            value = old[0] if old else None
            for r in ordered:
                value = r._3 if r.kind == 0 else value
            if value is not None:
                self.v.update((value,))
            for r in ordered:
                yield Row(kind=r.kind, _1=r._1, _2=key[0], _3=None if r.kind == 0 else value)

    return {
        "count-twsp": CountPandas,
        "count-tws": CountRows,
        "kv-twsp": KvPandas,
        "kv-twsp-arrival": KvArrival,
        "kv-tws": KvRows,
    }


def kv_step(key: str, pdf: pd.DataFrame, old: int | None, by_seq: bool) -> tuple[pd.DataFrame, int | None]:
    """One key's batch: the last put (by `seq`, or in arrival order) wins; gets see the new value;
    returns the acks and replies and the value to store (None: no value yet)."""
    if by_seq:
        pdf = pdf.sort_values("seq", kind="stable", na_position="first")  # gets have no seq
    kind = pdf["kind"].to_numpy()
    puts = np.flatnonzero(kind == 0)
    value = int(pdf["_3"].to_numpy()[puts[-1]]) if len(puts) else old
    reply = pd.array([None if k == 0 else value for k in kind], dtype="Int64")
    return pd.DataFrame({"kind": kind, "_1": pdf["_1"].to_numpy(), "_2": key, "_3": reply}), value


def _one(chunks: Iterator[pd.DataFrame]) -> pd.DataFrame:
    parts = list(chunks)
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


def _kv_state(key: tuple[str], pdfs: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
    out, value = kv_step(key[0], _one(pdfs), state.get[0] if state.exists else None, True)
    if value is not None:
        state.update((value,))
    yield out


def spark_query(spark: Any, name: str, base: str) -> Any:
    """The streaming DataFrame of a Spark path (before its foreachBatch sink)."""
    if name.startswith("kv"):
        grouped = _kv_input(spark, base).groupBy("_2")
        if name == "kv-aipws":
            return grouped.applyInPandasWithState(_kv_state, KV_OUT, "v long", "Update", "NoTimeout")
        api = grouped.transformWithState if name == "kv-tws" else grouped.transformWithStateInPandas
        return api(_processors()[name](), KV_OUT, "Update", "None")
    events = _stream(spark, base, EVENTS, "key string, value long")
    if name == "count-native":
        return events.groupBy("key").count()
    grouped = events.select("key").groupBy("key")
    if name == "count-aipws":
        return grouped.applyInPandasWithState(_count_state, COUNT_OUT, "n long", "Update", "NoTimeout")
    api = grouped.transformWithStateInPandas if name == "count-twsp" else grouped.transformWithState
    return api(_processors()[name](), COUNT_OUT, "Update", "None")


# ----------------------------------------------------------------------------- hydrolite's paths
class Counter:
    """Tag of the counting process (count-hydro)."""


def build_keycount() -> Any:
    """Per-key running count: a top-level keyed `count()`, read back in the same tick (aligned)
    for every key the batch touched; the output is (key, count so far), as update mode writes."""
    import hydrolite as hl
    from hydrolite import nondet

    flow = hl.FlowBuilder("keycount")
    node = flow.process(Counter)
    events = node.keyed_source("event", str, int)
    align = node.local_align_point()
    counts = events.count()
    tick = node.tick()
    touched = events.batch_aligned(tick, align, nondet("any grouping of events gives the same final counts")).keys()
    snap = counts.snapshot_aligned(tick, align, nondet("the version that includes this batch's events"))
    requests = touched.map(lambda k: (k, None)).into_keyed()
    requests.lookup_keyed_singleton(snap).entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("counts")
    return flow.finalize()


def run_hydro(spark: Any, name: str, base: str, out: str) -> tuple[float, list[Any], str]:
    """Run a hydrolite program through FlowRunner on the Parquet inputs; returns its time,
    its queries' progress and the plan's state lines (where each state lives)."""
    from hydrolite.planner.spark.render import render_text
    from hydrolite.planner.spark.runtime import FlowRunner
    from hydrolite.planner.spark.stages import plan_flow

    opts = "?maxFilesPerTrigger=1"
    if name == "count-hydro":
        flow = build_keycount()
        inputs, outputs = {"event": f"parquet:{base}/{EVENTS}{opts}"}, {"counts": f"parquet:{out}/resp"}
    else:
        from examples import kvstore

        flow = kvstore.build()
        inputs = {"put": f"parquet:{base}/{PUTS}{opts}", "get": f"parquet:{base}/{GETS}{opts}"}
        outputs = {"put_ack": f"parquet:{out}/acks", "get_response": f"parquet:{out}/resp"}
    text = render_text(plan_flow(flow))
    state = text[text.index("  state") : text.index("  body")].strip() if "  state" in text else "(no state lines)"
    runner = FlowRunner(flow, spark=spark, checkpoint=os.path.join(out, "ck"), inputs=inputs, outputs=outputs)
    t0 = time.perf_counter()
    runner.start(once=True)
    runner.await_termination()
    elapsed = time.perf_counter() - t0
    progress = [p for st in runner.stages if st.query is not None for p in st.query.recentProgress]
    runner.stop()
    return elapsed, progress, state


def run_spark(spark: Any, name: str, base: str, out: str) -> tuple[float, list[Any], str]:
    w = spark_query(spark, name, base).writeStream.outputMode("update").foreachBatch(_writer(out, name[:2] == "kv"))
    t0 = time.perf_counter()
    q = w.option("checkpointLocation", f"{out}/ck").trigger(availableNow=True).start()
    q.awaitTermination()
    return time.perf_counter() - t0, q.recentProgress, "Spark state store: " + ROCKSDB.rsplit(".", 1)[1]


# ----------------------------------------------------------------------------- memory
def _status(pid: int, field: str, file: str = "status") -> int:
    """A /proc/<pid>/status (or smaps_rollup) field in kB (0 if the process is gone)."""
    try:
        with open(f"/proc/{pid}/{file}") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def _descendants(pid: int) -> dict[int, int]:
    """pid -> parent pid of every process below `pid`."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    found, todo = {}, [pid]
    while todo:
        parent = todo.pop()
        for k in kids.get(parent, []):
            found[k] = parent
            todo.append(k)
    return found


class WorkerMemory(threading.Thread):
    """Samples the summed PSS of the JVM's Python workers (and executor JVMs under local-cluster)
    every 0.2 s and keeps the peak. PSS, not RSS: forked workers share pages. Left out: the
    data-source lookup workers Spark starts because hydrolite's session registers a Python data
    source (the same in every path; they come and go)."""

    def __init__(self, jvm: int) -> None:
        super().__init__(daemon=True)
        self.jvm, self.peak_kb, self.running = jvm, 0, True

    def run(self) -> None:
        while self.running:
            self.peak_kb = max(self.peak_kb, sum(_status(p, "Pss", "smaps_rollup") for p in self._workers()))
            time.sleep(0.2)

    def _workers(self) -> Iterator[int]:
        procs = _descendants(self.jvm)
        cmds = {p: _cmdline(p) for p in [self.jvm, *procs]}
        for pid, parent in procs.items():
            argv = cmds[pid]
            # a child still being forked shows its parent's pages (and command line) until it execs
            python = bool(argv) and os.path.basename(argv[0]).startswith("python") and "_data_source" not in argv[-1]
            executor = "CoarseGrainedExecutorBackend" in argv and "CoarseGrainedExecutorBackend" not in cmds[parent]
            if python or executor:
                yield pid


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline") as fh:
            return fh.read().split("\0")[:-1]
    except OSError:
        return []


def _reset_peak(pid: int) -> bool:
    """Reset VmHWM (Linux `clear_refs` 5) so the warm-up does not count; False if not allowed."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


# ----------------------------------------------------------------------------- one path, one process
def session(args: argparse.Namespace) -> Any:
    """hydrolite's session defaults (Arrow on, AQE off, no empty batches) plus RocksDB state."""
    from hydrolite.planner.spark.session import spark_session

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
    run(spark, args.worker, args.warm, os.path.join(args.work, "warm"))
    reset = _reset_peak(os.getpid()) and _reset_peak(jvm)
    workers = WorkerMemory(jvm)
    workers.start()
    load = os.getloadavg()[0]
    elapsed, progress, where = run(spark, args.worker, args.data, os.path.join(args.work, "run"))
    workers.running = False
    load = max(load, os.getloadavg()[0])
    lat = {int(p.batchId): float(p.durationMs.get("triggerExecution", 0)) for p in progress}
    rows = sum(int(p.numInputRows) for p in progress)
    result = {
        "path": args.worker,
        "elapsed": elapsed,
        "rows": rows,
        "latency_ms": [lat[b] for b in sorted(lat)],
        "driver_kb": _status(os.getpid(), "VmHWM"),
        "jvm_kb": _status(jvm, "VmHWM"),
        "workers_kb": workers.peak_kb,
        "peak_after_warmup": reset,
        "load": load,
        "state": where,
        "spark": spark.version,
    }
    with open(args.result, "w") as fh:
        json.dump(result, fh)
    spark.stop()


def run_worker(args: argparse.Namespace, path: str, base: str, warm: str) -> dict[str, Any]:
    """One path in a fresh `python` process (its own JVM), hydrolite from --hydrolite-src."""
    work = tempfile.mkdtemp(prefix=f"{path}-", dir=base)
    result = os.path.join(work, "result.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", path, "--data", os.path.join(base, "data")]
    cmd += ["--warm", warm, "--work", work, "--result", result, "--master", args.master]
    cmd += ["--partitions", str(args.partitions), *(x for c in args.conf for x in ("--conf", c))]
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


def _rate(r: dict[str, Any]) -> float:
    return float(r["rows"] / r["elapsed"])


def report(runs: dict[str, list[dict[str, Any]]], keys: dict[str, float]) -> None:
    """The table (per path, its median run by rows/s): throughput, ratios, latency, peak RSS."""
    med = {p: sorted(rs, key=_rate)[(len(rs) - 1) // 2] for p, rs in runs.items()}
    native, kvb = med.get("count-native"), med.get("kv-twsp")
    print(
        f"\n{'path':<16}{'rows':>10}{'s':>7}{'rows/s':>9}{'x native':>9}{'x kv-twsp':>10}{'first':>7}{'last':>7}"
        f"{'median':>7}{'us/key':>7}{'drv MB':>7}{'JVM MB':>7}{'wrk MB':>7}{'load':>5}  check"
    )
    for path, r in med.items():
        lat, rate, rs = r["latency_ms"], _rate(r), runs[path]
        ratio = f"{rate / _rate(native):9.2f}" if native else f"{'-':>9}"
        kv = f"{rate / _rate(kvb):10.2f}" if kvb and path.startswith("kv") else f"{'-':>10}"
        per_key = statistics.median(lat) * 1000 / keys["kv" if path.startswith("kv") else "count"]
        each = ", ".join(f"{_rate(x):,.0f} (load {x['load']:.1f})" for x in rs)
        print(
            f"{path:<16}{r['rows']:>10,}{r['elapsed']:7.1f}{rate:9,.0f}{ratio}{kv}{lat[0]:7.0f}{lat[-1]:7.0f}"
            f"{statistics.median(lat):7.0f}{per_key:7.0f}{_mb(r['driver_kb'])}{_mb(r['jvm_kb'])}{_mb(r['workers_kb'])}"
            f"{r['load']:5.1f}  {'WRONG' if any(x['check'] for x in rs) else 'ok'}"
            + (f"  rows/s of the {len(rs)} runs: {each}" if len(rs) > 1 else "")
        )
    peaks = "reset after the warm-up" if all(r["peak_after_warmup"] for r in med.values()) else "warm-up included"
    print(
        "\nrows = input rows (Spark's numInputRows); s = start to end of the availableNow query; first / last / "
        "median = triggerExecution (ms) of the first, last and median micro-batch; us/key = median batch time per "
        f"distinct key touched in a batch (count: {keys['count']:,.0f}, kv: {keys['kv']:,.0f}); drv / JVM MB = VmHWM "
        f"(peak RSS from /proc, {peaks}) of the Python driver and of the JVM (local mode: driver + executors + "
        "RocksDB); wrk MB = peak summed PSS of the JVM's child processes (Python workers; executor JVMs under "
        "local-cluster), sampled every 0.2 s; load = the machine's 1-minute load average (the higher of start and end "
        "of the run; 2 cores: above 2, other processes were competing for them)."
    )
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
    print(f"{args.batches} x {args.rows:,} rows over {args.keys:,} keys (+ {gets:,} gets per batch)", flush=True)
    write_inputs(os.path.join(base, "data"), args.batches, args.rows, args.keys, gets)
    write_inputs(os.path.join(base, "warm"), 2, 500, 300, 100)
    want = {kind: expected(os.path.join(base, "data"), kind) for kind in ("count", "kv")}
    runs: dict[str, list[dict[str, Any]]] = {p: [] for p in paths}
    failed = []
    try:
        for rep, path in ((r, p) for r in range(args.repeat) for p in paths):
            res = run_worker(args, path, base, os.path.join(base, "warm"))
            if "error" in res:  # say so and go on: one failing path must not hide the others' figures
                print(f"  run {rep + 1} {path}: FAILED ({res['error'].splitlines()[0]})", flush=True)
                failed.append(res)
                continue
            res["check"] = check(res["out"], want["kv" if path.startswith("kv") else "count"])
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


def probe_union(spark: Any, base: str) -> None:
    """(1) One query: the kv processor's replies unioned with the acks taken straight from the
    input stream, written by one foreachBatch; the input is either the very DataFrame the
    processor reads (one source feeding two branches) or a second readStream of the same files."""
    from pyspark.sql import functions as F

    data = os.path.join(base, "data")
    write_inputs(data, 3, 1000, 500, 100)
    want = expected(data, "kv")
    for variant in ("same DataFrame", "second readStream"):
        src = _kv_input(spark, data)
        proc = _processors()["kv-twsp"]()
        replies = src.groupBy("_2").transformWithStateInPandas(proc, KV_OUT, "Update", "None")
        raw = src if variant == "same DataFrame" else _kv_input(spark, data)
        acks = raw.filter(F.col("kind") == 0).select("kind", "_1", "_2", F.lit(None).cast("long").alias("_3"))
        both = replies.filter(F.col("kind") == 1).unionByName(acks)
        out = os.path.join(base, variant.replace(" ", "_"))
        try:
            w = both.writeStream.outputMode("update").foreachBatch(_writer(out, True))
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
        df = _stream(spark, data, PUTS, "_2 string, seq long").withColumnRenamed("_2", "key").groupBy("key")
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


if __name__ == "__main__":
    main()
