"""Prometheus metrics of a Spark run: `hydrolite run --metrics-port N` (or `RunMetrics(runner)`).

What is exported, per query (a Structured Streaming query = one merged tick):

==========================================  ==========  ===========================================
metric                                      labels      source
==========================================  ==========  ===========================================
``hydrolite_batches_total``                 query       batches whose tick ran in this process
``hydrolite_input_rows_total``              query,port  Spark's progress events (``numInputRows``
                                                        of each source of the query's union)
``hydrolite_output_rows_total``             query,port  rows written to each sink (by the runtime)
``hydrolite_batch_duration_seconds``        query       Spark's ``triggerExecution`` of each batch
                                                        that ran: offsets, tick body, commit
``hydrolite_last_committed_batch``          query       Spark's progress event (posted after the
                                                        commit), or the checkpoint's on resume
``hydrolite_state_rows``                    query,      live keys of each stateful operator
                                            operator,   (driver: counted in its SQLite store;
                                            placement   executors: Spark's ``numRowsTotal``;
                                                        table: the rows of the Parquet table the
                                                        tick keeps, from its files' footers)
``hydrolite_failures_total``                query       queries stopped by an error
``hydrolite_rejected_records_total``        query,port  records set aside by ``?onBadRecord=quarantine``
==========================================  ==========  ===========================================

Input rows, batch durations, commits and failures come from a `StreamingQueryListener`: Spark
already computes them for every micro-batch and posts each event exactly once (see
`planner/spark/input_rows.py` for why `recentProgress` would not do). Batches, outputs and
rejects are the runtime's own counts (`StageProgress`), read when Prometheus scrapes.

State size: the driver's store keeps at most two versions of each key, indexed by
(operator, key, version), so the live keys of every operator are one indexed scan of the
query's store (`benchmarks/bench_metrics_state.py` measures it: linear in the stored keys,
about 2.4 µs a key, 2.4 s for a million, on the 2-core machine). It runs at most once per committed batch (scrapes in between
reuse the figure), on its own read connection, so it never blocks a batch (SQLite's WAL
lets a reader see the last committed version while the batch writes the next). Keyed state
on the executors lives in one Spark state operator per query holding several hydrolite
operators' states; Spark counts its rows as a whole, so that series is labelled with the
Spark operator's name.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
)

from .errors import HydroliteError
from .planner.spark.listeners import JsonEventListener

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from .planner.spark.runtime import FlowRunner, StageRunner

#: batch durations, in seconds: a local micro-batch takes from tens of milliseconds to minutes
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class MetricsError(HydroliteError):
    """The metrics endpoint could not be started."""

    code = "HL-METRICS"


def operator_label(node: Any) -> str:
    """`fold@counter.py:30`: an operator as `hydrolite plan --against` and `--reset-state` name it."""
    return f"{node.op}@{node.site.label}"


# ------------------------------------------------------------------ state size
_LIVE_KEYS = """
SELECT s.node, COUNT(*) FROM state s
WHERE s.value IS NOT NULL AND s.key != ?
  AND s.version = (SELECT MAX(t.version) FROM state t WHERE t.node = s.node AND t.key = s.key)
GROUP BY s.node
"""


def driver_state_rows(directory: str) -> dict[str, int]:
    """Live keys per state key (operator) in a query's driver store, as last committed.

    A key counts when its newest version holds a value (a deleted key's newest version is
    NULL); bulk state's file pointer (`__blob__`) is not a row of the operator. An empty
    dict when the store does not exist yet."""
    path = os.path.join(directory, "state.sqlite")
    if not os.path.exists(path):
        return {}
    db = sqlite3.connect(path, timeout=30.0)
    try:
        return {str(node): int(count) for node, count in db.execute(_LIVE_KEYS, (b"__blob__",))}
    finally:
        db.close()


_NEWEST_TABLE = "SELECT value FROM state WHERE node = ? AND key = ? ORDER BY version DESC LIMIT 1"


def table_rows(directory: str, nodes: Iterable[str], spark: Any = None) -> dict[str, int]:
    """Rows of the newest committed version of each tick table (`tick_table.py`,
    `tick_seen.py`) kept under `nodes` in a query's driver store: the sum of its Parquet
    files' row counts, from their footers (a table under a Hadoop file system: one Spark
    count of its footers). A node without a version yet is left out."""
    import pyarrow.parquet as pq

    from .planner.spark.ckfs import is_local, os_path

    path = os.path.join(directory, "state.sqlite")
    if not os.path.exists(path):
        return {}
    db = sqlite3.connect(path, timeout=30.0)
    try:
        found = {node: db.execute(_NEWEST_TABLE, (node, b"table")).fetchone() for node in nodes}
    finally:
        db.close()
    out: dict[str, int] = {}
    for node, row in found.items():
        if row is None or row[0] is None:
            continue
        where = pickle.loads(row[0])[0]
        if is_local(where):
            parts = [f for f in os.listdir(os_path(where)) if f.endswith(".parquet")]
            out[node] = sum(pq.read_metadata(os.path.join(os_path(where), f)).num_rows for f in parts)
        elif spark is not None:
            out[node] = int(spark.read.parquet(where).count())
    return out


@dataclass
class _StateCount:
    batch: int  # the stage's last batch when counted
    rows: dict[str, int]


class _StateSizes:
    """Per query: the driver store's live keys per operator, recounted once per new batch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counted: dict[str, _StateCount] = {}

    def rows(self, stage: StageRunner) -> dict[str, int]:
        name, batch = stage.stage.name, stage.progress.last_batch
        with self._lock:
            done = self._counted.get(name)
            if done is None or done.batch != batch:
                rows = driver_state_rows(stage.store.directory)
                placement = stage.stage.placement
                tables = [stage.keys[id(p.node)] for p in placement.placements if p.tick_table] if placement else []
                rows.update(table_rows(stage.store.directory, tables, stage.runner.spark))
                done = _StateCount(batch, rows)
                self._counted[name] = done
            return done.rows


# ------------------------------------------------------------------ Spark's progress events
@dataclass
class _SparkFigures:
    """What the listener learnt of one query (keyed by the hydrolite query name)."""

    last_committed: int | None = None
    state_rows: dict[str, int] | None = None  # Spark state operator -> numRowsTotal (newest progress)


class _Listener(JsonEventListener):
    """Feeds the event-driven metrics; one per `RunMetrics`, attached to the run's session."""

    def __init__(self, metrics: RunMetrics) -> None:
        self.metrics = metrics

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        pass

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        self.metrics._on_progress(event.progress)

    def onQueryIdle(self, event: QueryIdleEvent) -> None:
        pass

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        self.metrics._on_terminated(str(event.runId), event.exception)


class _RuntimeCollector(Collector):
    """The runtime's own figures, read at scrape time (no work per batch)."""

    def __init__(self, metrics: RunMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        return list(self.metrics._runtime_families())


class RunMetrics:
    """The metrics of one `FlowRunner`, in a registry of their own, optionally served over HTTP.

    Create it before `runner.start()` (so no progress event is missed) and `close()` it after
    `runner.stop()`; `serve(port)` starts the endpoint (`port` 0: any free port) and returns
    the port it listens on."""

    def __init__(self, runner: FlowRunner) -> None:
        self.runner = runner
        self.registry = CollectorRegistry(auto_describe=True)
        self._lock = threading.Lock()
        self._spark: dict[str, _SparkFigures] = {s.stage.name: _SparkFigures() for s in runner.stages}
        self._states = _StateSizes()
        self._terminated: set[str] = set()  # run ids whose termination event arrived
        self.input_rows = Counter(
            "hydrolite_input_rows", "Rows read from each input of the query", ("query", "port"), registry=self.registry
        )
        self.latency = Histogram(
            "hydrolite_batch_duration_seconds",
            "Duration of each micro-batch that ran (Spark's triggerExecution: offsets, tick body, commit)",
            ("query",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.failures = Counter("hydrolite_failures", "Queries stopped by an error", ("query",), registry=self.registry)
        for s in runner.stages:  # every series exists from the first scrape, at 0
            self.failures.labels(s.stage.name)
            for inp in s.inputs:
                if inp.node is not None:
                    self.input_rows.labels(s.stage.name, inp.name)
        self.registry.register(_RuntimeCollector(self))
        self._listener = _Listener(self)
        runner.spark.streams.addListener(self._listener)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------- the endpoint
    def serve(self, port: int, addr: str = "127.0.0.1") -> int:
        """Serve `/metrics` on `addr:port` from a daemon thread; returns the bound port."""
        if not 0 <= port <= 65535:
            raise MetricsError(f"metrics port must be 0-65535 (0: any free port), got {port}")
        try:
            self._server, self._thread = start_http_server(port, addr, registry=self.registry)
        except OSError as exc:
            raise MetricsError(
                f"cannot serve metrics on {addr}:{port}: {exc}\n"
                "  fix: choose a free port (--metrics-port 0 picks one and prints it) or another --metrics-addr"
            ) from exc
        return int(self._server.server_port)

    def wait_for_end(self, timeout: float = 10.0) -> bool:
        """After `runner.stop()`: wait until Spark posted the termination of every query of the
        run (its progress events come before: then every batch is counted)."""
        want = {str(s.query.runId) for s in self.runner.stages if s.query is not None}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if want <= self._terminated:
                    return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        """Stop the endpoint and detach from Spark (call `wait_for_end` first to count every event)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.runner.spark.streams.removeListener(self._listener)

    def text(self) -> str:
        """The exposition text a scrape would get now."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry).decode()

    # ---------------------------------------------------------- from the listener
    def _stage_of(self, name: str | None, run_id: str | None) -> StageRunner | None:
        for s in self.runner.stages:
            q = s.query
            if q is not None and (q.name == name or str(q.runId) == run_id):
                return s
        return None

    def _on_progress(self, p: Any) -> None:
        stage = self._stage_of(p.name, str(p.runId))
        if stage is None:  # another query of the same session (not this run's)
            return
        query = stage.stage.name
        for i, src in enumerate(p.sources):
            if i < len(stage.inputs) and stage.inputs[i].node is not None:  # not the heartbeat
                rows = stage.rows_read(i, int(src.numInputRows or 0))
                self.input_rows.labels(query, stage.inputs[i].name).inc(rows)
        durations = dict(p.durationMs or {})
        if "addBatch" not in durations:  # a trigger that found no new data: no batch ran
            return
        self.latency.labels(query).observe(float(durations.get("triggerExecution", 0)) / 1000.0)
        ops = {str(op.operatorName): int(op.numRowsTotal) for op in p.stateOperators}
        with self._lock:
            figures = self._spark[query]
            figures.last_committed = int(p.batchId)
            if ops:
                figures.state_rows = ops

    def _on_terminated(self, run_id: str, exception: str | None) -> None:
        stage = self._stage_of(None, run_id)
        with self._lock:
            self._terminated.add(run_id)
        if stage is not None and exception:
            self.failures.labels(stage.stage.name).inc()

    # ---------------------------------------------------------- at scrape time
    def _runtime_families(self) -> Iterator[Metric]:
        batches = CounterMetricFamily("hydrolite_batches", "Batches whose tick ran in this process", labels=["query"])
        outputs = CounterMetricFamily(
            "hydrolite_output_rows", "Rows written to each sink of the query", labels=["query", "port"]
        )
        rejected = CounterMetricFamily(
            "hydrolite_rejected_records",
            "Records set aside by ?onBadRecord=quarantine, per input",
            labels=["query", "port"],
        )
        committed = GaugeMetricFamily(
            "hydrolite_last_committed_batch", "Id of the query's last committed batch (-1: none yet)", labels=["query"]
        )
        state = GaugeMetricFamily(
            "hydrolite_state_rows",
            "Live keys (rows) of each stateful operator's state",
            labels=["query", "operator", "placement"],
        )
        for s in self.runner.stages:
            query, p = s.stage.name, s.progress
            batches.add_metric([query], p.batches)
            for port in [k.port for k in s.stage.sinks]:
                outputs.add_metric([query, port], dict(p.output_rows).get(port, 0))
            for port, count in sorted(dict(p.rejected).items()):
                rejected.add_metric([query, port], count)
            committed.add_metric([query], self._last_committed(s))
            for labels, rows in self._state_rows(s):
                state.add_metric(list(labels), rows)
        yield from (batches, outputs, rejected, committed, state)

    def _last_committed(self, s: StageRunner) -> int:
        with self._lock:
            seen = self._spark[s.stage.name].last_committed
        if seen is not None:
            return seen
        return self.runner.resumed.get(s.stage.name, 0) - 1  # committed by earlier runs

    def _state_rows(self, s: StageRunner) -> Iterator[tuple[tuple[str, str, str], int]]:
        placement = s.stage.placement
        driver = self._states.rows(s) if s.stage.stateful else {}
        for node in s.stage.stateful:
            where = placement.of(node) if placement is not None else None
            if where is not None and where.tick_table:  # (its table's rows: `table_rows`)
                yield (s.stage.name, operator_label(node), "table"), driver.get(s.keys[id(node)], 0)
            elif where is None or not where.executors:  # (else counted by Spark's state operator below)
                yield (s.stage.name, operator_label(node), "driver"), driver.get(s.keys[id(node)], 0)
        with self._lock:
            spark_ops = dict(self._spark[s.stage.name].state_rows or {})
        if placement is not None and (placement.region is not None or placement.native):
            for name, rows in sorted(spark_ops.items()):
                yield (s.stage.name, name, "executors"), rows
