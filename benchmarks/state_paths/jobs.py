"""The paths: each builds its streaming query over the Parquet inputs and runs it with
availableNow, returning its time, its progress and where its state lives."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .data import EVENTS, GETS, PUTS

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
COUNT_OUT = "_1 string, _2 long"  # (key, running count) per touched key
KV_OUT = "kind int, _1 string, _2 string, _3 long"  # kind 0: put ack (client, key); 1: reply (client, key, value)


def stream(spark: Any, base: str, d: str, schema: str) -> Any:
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", "1").parquet(os.path.join(base, d))


def kv_input(spark: Any, base: str) -> Any:
    """Puts and gets as one stream: kind 0 = put (client, key, value, seq), 1 = get (client, key)."""
    from pyspark.sql import functions as F

    puts = stream(spark, base, PUTS, "_1 string, _2 string, _3 long, seq long").select(F.lit(0).alias("kind"), "*")
    gets = stream(spark, base, GETS, "_1 string, _2 string").select(F.lit(1).alias("kind"), "_1", "_2")
    return puts.unionByName(gets, allowMissingColumns=True)


def writer(out: str, kv: bool) -> Callable[[Any, int], None]:
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


def processors() -> dict[str, type]:
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
        grouped = kv_input(spark, base).groupBy("_2")
        if name == "kv-aipws":
            return grouped.applyInPandasWithState(_kv_state, KV_OUT, "v long", "Update", "NoTimeout")
        api = grouped.transformWithState if name == "kv-tws" else grouped.transformWithStateInPandas
        return api(processors()[name](), KV_OUT, "Update", "None")
    events = stream(spark, base, EVENTS, "key string, value long")
    if name in ("count-native", "table-native"):  # (table-native runs in complete mode: `run_spark`)
        return events.groupBy("key").count()
    grouped = events.select("key").groupBy("key")
    if name == "count-aipws":
        return grouped.applyInPandasWithState(_count_state, COUNT_OUT, "n long", "Update", "NoTimeout")
    api = grouped.transformWithStateInPandas if name == "count-twsp" else grouped.transformWithState
    return api(processors()[name](), COUNT_OUT, "Update", "None")


# ----------------------------------------------------------------------------- hydrolite's paths
class Counter:
    """Tag of the counting process (count-hydro)."""


class Event(NamedTuple):
    """An event file's row (columns `key`, `value`) as one element (count-map-hydro)."""

    key: str
    value: int


def build_keycount(mapped: bool = False, rekeyed: bool = False) -> Any:
    """Per-key running count: a top-level keyed `count()`, read back in the same tick (aligned)
    for every key the batch touched; the output is (key, count so far), as update mode writes.
    `mapped`: the events arrive as `Event` records and are keyed by a projection,
    `map(lambda e: (e.key, e.value)).into_keyed()` (native through it: `projection.py`).
    `rekeyed`: the count's input passes through two `flat_map()`s, so it is no chain of the
    query's input: the tick computes it, and the count is the tick's (`tick_table.py` on the
    executors, or the driver's store), as for a re-keyed join's pairs."""
    import hydrolite as hl
    from hydrolite import nondet

    flow = hl.FlowBuilder("keycount")
    node = flow.process(Counter)
    if mapped:
        events = node.source("event", Event).map(lambda e: (e.key, e.value)).into_keyed()
    else:
        events = node.keyed_source("event", str, int)
    if rekeyed:
        twice = events.entries().flat_map_unordered(lambda e: [e]).flat_map_unordered(lambda e: [e])
        events = twice.map(lambda e: (e[0], e[1])).into_keyed()
    align = node.local_align_point()
    counts = events.count()
    tick = node.tick()
    touched = events.batch_aligned(tick, align, nondet("any grouping of events gives the same final counts")).keys()
    snap = counts.snapshot_aligned(tick, align, nondet("the version that includes this batch's events"))
    requests = touched.map(lambda k: (k, None)).into_keyed()
    requests.lookup_keyed_singleton(snap).entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("counts")
    return flow.finalize()


def build_table() -> Any:
    """Per-key running count read whole: every micro-batch writes every key counted so far
    with its count (as Spark's complete output mode does), `snapshot().entries()`."""
    import hydrolite as hl
    from hydrolite import nondet

    flow = hl.FlowBuilder("keytable")
    node = flow.process(Counter)
    counts = node.keyed_source("event", str, int).count()
    tick = node.tick()
    counts.snapshot(tick, nondet("the version after this batch's events")).entries().all_ticks().sink("counts")
    return flow.finalize()


def run_hydro(spark: Any, name: str, base: str, out: str, keyed_state: str) -> tuple[float, list[Any], str]:
    """Run a hydrolite program through FlowRunner (`keyed_state`: auto, executors or driver) on
    the Parquet inputs; returns its time, its queries' progress and the plan's state lines (where
    each state lives, as this run placed it)."""
    from hydrolite.planner.spark.render import render_text
    from hydrolite.planner.spark.runtime import FlowRunner

    opts = "?maxFilesPerTrigger=1"
    if name in ("count-hydro", "count-map-hydro", "count-rekeyed-hydro"):
        flow = build_keycount(mapped=name == "count-map-hydro", rekeyed=name == "count-rekeyed-hydro")
        inputs, outputs = {"event": f"parquet:{base}/{EVENTS}{opts}"}, {"counts": f"parquet:{out}/resp"}
    elif name == "table-hydro":
        flow = build_table()
        inputs, outputs = {"event": f"parquet:{base}/{EVENTS}{opts}"}, {"counts": f"parquet:{out}/resp"}
    else:
        from examples import kvstore

        flow = kvstore.build()
        inputs = {"put": f"parquet:{base}/{PUTS}{opts}", "get": f"parquet:{base}/{GETS}{opts}"}
        outputs = {"put_ack": f"parquet:{out}/acks", "get_response": f"parquet:{out}/resp"}
    # auto is FlowRunner's default: not passed, so a --hydrolite-src from before the option still runs
    placed: dict[str, Any] = {} if keyed_state == "auto" else {"keyed_state": keyed_state}
    runner = FlowRunner(flow, spark=spark, checkpoint=os.path.join(out, "ck"), inputs=inputs, outputs=outputs, **placed)
    text = render_text(runner.plan)
    state = text[text.index("  state") : text.index("  body")].strip() if "  state" in text else "(no state lines)"
    elapsed, progress = timed_run(runner)
    return elapsed, progress, state


def timed_run(runner: Any) -> tuple[float, list[Any]]:
    """Run a FlowRunner to the end of its input (availableNow): its seconds, from start to the
    end of its last batch, and its queries' progress events; the runner is stopped."""
    t0 = time.perf_counter()
    runner.start(once=True)
    runner.await_termination()
    elapsed = time.perf_counter() - t0
    progress = [p for st in runner.stages if st.query is not None for p in st.query.recentProgress]
    runner.stop()
    return elapsed, progress


def run_spark(spark: Any, name: str, base: str, out: str, keyed_state: str = "auto") -> tuple[float, list[Any], str]:
    """Run a Spark path with availableNow (`keyed_state` is hydrolite's option: not used here).
    Timed from building its DataFrame, as hydrolite's `start()` builds its own."""
    t0 = time.perf_counter()
    mode = "complete" if name == "table-native" else "update"
    w = spark_query(spark, name, base).writeStream.outputMode(mode).foreachBatch(writer(out, name[:2] == "kv"))
    q = w.option("checkpointLocation", f"{out}/ck").trigger(availableNow=True).start()
    q.awaitTermination()
    return time.perf_counter() - t0, q.recentProgress, "Spark state store: " + ROCKSDB.rsplit(".", 1)[1]
