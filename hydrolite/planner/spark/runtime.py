"""Running a plan: one Structured Streaming query per stage, `foreachBatch` per tick.

Each stage's inputs (bound source ports and channels from other queries) are unioned into
one streaming DataFrame, tagged by input (`_src`) with each input's payload in its own
struct column, so every micro-batch is one consistent slice of all of them; Spark's
offset log records, per batch id, the end offset of every input (see `offsets`).

`foreachBatch(df, batch_id)` is the tick: evaluate the stage's nodes, write the new state
version (`state`), then write every output of the tick. Every write is idempotent by batch
id and state reads only see versions older than the batch, so a crash anywhere inside a
batch followed by Spark's replay of that batch loses and duplicates nothing.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from ...ir import nodes as n
from ...ir.graph import Flow
from ...ir.meta import Kind
from . import ckfs, ops, ops_state, run_support  # noqa: F401  (ops, ops_state: register the node handlers)
from .channel_versions import VERSIONED, latest_scalar, latest_table
from .errors import SparkRunError, describe_spark_error
from .exec import BatchCtx, evaluate, live_nodes, one_job_reads
from .faults import FaultHook, InjectedFault
from .feed_mirror import FeedMirrors, mirror_inputs
from .files import FileWatch
from .footer_check import check_files, footer_checked
from .held import HeldBatches, release_held
from .keyed_option import KEYED_STATE
from .keyed_state import ROCKSDB, ExecutorRegion, QueryInput
from .lock import CheckpointLock, checkpoint_dir
from .native_state import OUTPUT_MODE, NativeAggregations
from .offsets import check_restart
from .outputs import StageOutputs
from .placement import place_all
from .ports import FeedInput, FileInput, InputBinding, MemorySink, OutputBinding, parse_input, parse_output
from .quarantine import divert_rejected, good, quarantine_dir
from .remap import RemapLog, parquet_has_rows
from .retention import FeedRetention, channel_history
from .run_support import (
    busy,
    check_sources,
    explain_failure,
    pickle_user_modules,
    prepare_queries,
    record_bindings,
    write_query_record,
)
from .session import STATE_STORE, query_conf, spark_session
from .stages import Channel, Plan, Stage, plan_flow
from .state import StateStore
from .strict_read import stream_input, unlocated
from .types import NONE, OPAQUE, HType, from_python
from .upgrade import PLAN_FILE, PlanChangedError, committed, reconcile, write_record
from .values import SFrame, Val

_query_ids = itertools.count()


HEARTBEAT = "heartbeat"  # the input name of a stage's heartbeat feed


@dataclass
class InputSpec:
    """One input of a stage's union: a source port, a channel from another query, or the
    stage's own heartbeat (`node` None: it only makes Spark run the tick again)."""

    name: str
    node: n.Node | None
    binding: InputBinding
    vt: HType
    kt: HType | None
    deltas: bool = False  # a keyed singleton channel whose entries are deltas (`Channel.deltas`)


@dataclass
class StageProgress:
    batches: int = 0
    last_batch: int = -1
    output_rows: dict[str, int] = field(default_factory=dict)
    durations_ms: deque[tuple[int, float]] = field(default_factory=lambda: deque(maxlen=100_000))
    fn_paths: dict[str, str] = field(default_factory=dict)
    held: int = 0  # batches whose tick could not run yet (their input waits in held/)
    rejected: dict[str, int] = field(default_factory=dict)  # port -> records set aside (?onBadRecord=quarantine)


def _latest_first(inp: InputSpec) -> bool:
    return isinstance(inp.binding, FileInput) and inp.binding.latest_first()


class StageRunner(StageOutputs, HeldBatches):
    """One stage as one streaming query (or a one-off batch job when it reads no stream)."""

    def __init__(self, runner: FlowRunner, stage: Stage) -> None:
        self.runner = runner
        self.stage = stage
        self.dir = ckfs.join(runner.checkpoint, stage.name)
        self.store = StateStore(ckfs.join(self.dir, "state"))
        self.keys = stage.state_keys
        by_name = {s.port: self._source_input(s) for s in stage.sources} | {
            f"channel:{c.name}": self._channel_input(c) for c in stage.channels_in
        }
        self.inputs = [by_name[name] for name in stage.input_names]  # Spark's offsets are positional
        # deferred streams (defer_tick, stream cycles) make the next run of the tick observable
        # even without new input; Spark runs a micro-batch only for new input, so the stage
        # writes an (empty) entry to its own heartbeat feed when something was deferred
        self.deferred = stage.deferred
        if stage.has_heartbeat:
            self.inputs.append(InputSpec(HEARTBEAT, None, FeedInput(ckfs.join(self.dir, "heartbeat")), NONE, None))
        if runner.mirrors is not None:
            mirror_inputs(self.inputs, self.dir, runner.mirrors)
        self.query: StreamingQuery | None = None
        self.has_seq: list[bool] = [False] * len(self.inputs)
        self.has_file: list[bool] = [False] * len(self.inputs)
        self.ordered = [inp.node is not None and stage.needs_order(inp.node) for inp in self.inputs]
        files = {
            i: inp.binding.latest_first() for i, inp in enumerate(self.inputs) if isinstance(inp.binding, FileInput)
        }
        self.remap = RemapLog(self.dir, [i.name for i in self.inputs], files)
        self.parquet = [i for i in files if getattr(self.inputs[i].binding, "fmt", "") == "parquet"]
        self.error: BaseException | None = None
        self.progress = StageProgress()
        self._ctx: BatchCtx | None = None
        self._in_cols: dict[int, tuple[Column, dict[str, Column], dict[str, Column]]] = {}  # _split's, per input
        self.region: ExecutorRegion | None = None  # keyed state on the executors (set by streaming_df)
        self.native: NativeAggregations | None = None  # native streaming aggregations (set by streaming_df)
        # how many times the query's plan scans each input: Spark's `numInputRows` counts every
        # scan of a source (a branch filtering the raw union still scans all of it), so the
        # progress line and the metrics divide by this (set by streaming_df)
        self.scans = [1] * len(self.inputs)
        self.in_tick = [True] * len(self.inputs)  # whether the input's own rows reach the tick (streaming_df)
        self.unlocated: set[int] = set()  # inputs read without file metadata (strict_read.unlocated)
        self.footer: dict[int, dict[str, str]] = {}  # inputs null-checked from footers: footer_check.py
        self.batch_files: dict[int, list[str]] = {}  # the batch's files per input (`_process`)
        self.live: set[int] | None = None  # the nodes a batch evaluates (`exec.live_nodes`; set by streaming_df)
        self.one_job = False  # whether one Spark job reads each batch (`exec.one_job_reads`; set by streaming_df)
        write_query_record(self.dir, stage.name, [i.name for i in self.inputs], [s.port for s in stage.sinks])
        self.sources: list[str] = []  # the input of each of Spark's sources, in order (streaming_df)
        self._df: DataFrame | None = None  # (prepare)

    def rows_read(self, i: int, counted: int) -> int:
        """Input i's rows, from Spark's count for it (`numInputRows`, one per scan: `scans`)."""
        return counted // self.scans[i]

    def _source_input(self, src: n.Source) -> InputSpec:
        vt = from_python(src.meta.elem)
        kt = from_python(src.meta.key) if src.meta.kind.keyed else None
        if vt is None or (src.meta.kind.keyed and kt is None):
            vt, kt = vt or OPAQUE, (kt or OPAQUE) if src.meta.kind.keyed else None
        return InputSpec(src.port, src, self.runner.inputs[src.port], vt, kt)

    def _channel_input(self, ch: Channel) -> InputSpec:
        vt, kt = self.runner.channel_types[ch.name]
        feed = FeedInput(self.runner.channel_dir(ch), gone=ch.deltas)  # deltas may hold tombstones
        return InputSpec(f"channel:{ch.name}", ch.node, feed, vt, kt, ch.deltas)

    # ------------------------------------------------------------- the streaming query
    def streaming_df(self) -> DataFrame:
        spark = self.runner.spark
        parts: list[DataFrame] = []
        region = self.stage.placement.region if self.stage.placement is not None else None
        natives = self.stage.placement.native if self.stage.placement is not None else ()
        if natives:  # algebraic keyed state as Spark's own aggregations: native_state.py
            self.native = NativeAggregations.over(natives, self.inputs, self.stage)
        if self.native is not None and region is None:  # no reader needs their `_file`: strict_read.unlocated
            self.unlocated = unlocated(self.inputs, live_nodes(self.stage, self.native.given()))
        self.footer = footer_checked(self.inputs)  # null checks of each batch's files, not in the scan
        # the aggregations straight over the query's one input when the tick never reads it
        # (only native aggregations without an executor region leave an input `unlocated`)
        direct = self.unlocated == {0} and len(self.inputs) == 1
        for i, inp in enumerate(self.inputs):
            sdf = stream_input(spark, inp, i not in self.unlocated, i not in self.footer)
            columns = sdf.columns  # (a Py4J round trip)
            self.has_seq[i] = "_seq" in columns
            self.has_file[i] = "_file" in columns  # file inputs: ordered by file, then split, then row
            if direct:
                parts.append(sdf)  # (k, v): never unioned with the tick's rows (not `in_tick`)
                continue
            seq = F.col("_seq") if self.has_seq[i] else F.lit(None).cast("long")
            payload = F.struct(*(["k"] if inp.kt is not None else []), "v", *(["gone"] if inp.deltas else []))
            where = [F.col("_file")] if self.has_file[i] else []
            parts.append(sdf.select(F.lit(i).alias("_src"), seq.alias("_seq"), payload.alias(f"p{i}"), *where))
        raw = parts[0]
        for p in parts[1:]:
            raw = raw.unionByName(p, allowMissingColumns=True)
        branches: list[DataFrame] = []
        reads = 0  # how many times the branches read `raw` (each a scan of every input)
        given: set[int] = set()  # nodes whose values the branches compute
        if self.native is not None:
            branches.append(self.native.branch(raw, direct))
            reads += self.native.scans
            given |= self.native.given()
        if region is not None:  # keyed state partitioned across the executors: keyed_state.py
            described = [
                QueryInput(
                    i, inp.node, inp.vt, inp.kt, self.has_seq[i], self.has_file[i], _latest_first(inp), inp.deltas
                )
                for i, inp in enumerate(self.inputs)
                if inp.node is not None
            ]
            self.region = ExecutorRegion(region, described, self.stage.name, self.keys)
            branches.append(self.region.branch(raw))
            reads += 1
            given |= set(self.region.answers) | self.region.region.skipped()
        self.live = live_nodes(self.stage, given)
        plain = all(  # each of these reads the batch with a job of its own (quarantine.py, channel_versions.py)
            quarantine_dir(inp.binding) is None and (inp.node is None or inp.node.meta.kind not in VERSIONED)
            for inp in self.inputs
        )
        inputs = {id(inp.node) for inp in self.inputs if inp.node is not None}
        self.one_job = plain and one_job_reads(
            self.stage, self.live, given | inputs, lambda port: self.runner.outputs[port].one_job
        )
        self.sources = [inp.name for inp in self.inputs]  # (each branch reads them all, then the tick its own)
        if not branches:
            return raw
        # an input no live node reads leaves the tick's rows (the branches still read it); its
        # rejected records must still reach the dead letters (quarantine.py)
        for i, inp in enumerate(self.inputs):
            self.in_tick[i] = inp.node is None or id(inp.node) in self.live or quarantine_dir(inp.binding) is not None
            self.scans[i] = int(self.in_tick[i]) + reads
            assert not (self.in_tick[i] and i in self.unlocated), "an input read without `_file` reaches the tick"
        if self.native is not None:
            self.native.alone = len(self.native.states) == 1 and region is None and not any(self.in_tick)
        # the branches first: Spark numbers a query's sources in the order the plan first
        # reads them, and its offset log (so the remap log, `verify`, a resumed checkpoint) is
        # positional; each branch reads `raw`, every input in the union's order
        self.sources = self.sources * reads + [x for x, tick in zip(self.sources, self.in_tick) if tick]
        df = branches[0]
        for b in branches[1:] + [p for i, p in enumerate(parts) if self.in_tick[i]]:
            df = df.unionByName(b, allowMissingColumns=True)
        return df

    def prepare(self) -> None:
        """Build the query's streaming plan, checked against its checkpoint's Spark sources."""
        if self.stage.streaming:
            self._df = self.streaming_df()
            check_sources(self.dir, self.stage.name, self.sources, self.runner.resumed.get(self.stage.name, 0))

    def start(self, once: bool) -> None:
        if not self.stage.streaming:
            self.run_batch_job()
            return
        name = f"hydrolite.{self.runner.plan.flow.name}.{self.stage.name}.{next(_query_ids)}"
        assert self._df is not None, "FlowRunner.start prepares every query first"
        w = self._df.writeStream.queryName(name).foreachBatch(self.foreach_batch)
        if self.native is not None:  # an aggregation without a watermark runs in update mode only
            w = w.outputMode(OUTPUT_MODE)
        location = ckfs.join(self.dir, "spark")
        w = w.option("checkpointLocation", location)
        if once:
            w = w.trigger(availableNow=True)
        stateful = self.native is not None or self.region is not None
        spark = self.runner.spark
        with (
            query_conf(spark, STATE_STORE, ROCKSDB if stateful else None),
            query_conf(spark, ckfs.MANAGER_CONF, ckfs.query_manager(spark, location)),  # local disk: faster logs
        ):
            self.query = w.start()

    def run_batch_job(self) -> None:
        """A stage without unbounded inputs (only literal sources) runs once, as batch 0.

        Like a streaming batch, it is committed only after all its outputs were written; a
        rerun from a committed checkpoint does nothing, an uncommitted one replays batch 0.
        """
        marker = ckfs.join(self.dir, "batch-job-committed")
        if ckfs.exists(marker):
            return
        empty = self.runner.spark.createDataFrame([], "_src int, _seq long")
        self.foreach_batch(empty, 0)
        ckfs.write_atomic(marker, "0\n")

    def foreach_batch(self, df: DataFrame, batch_id: int) -> None:
        self._ctx = None
        try:
            self._process(df, batch_id)
        except (InjectedFault, SparkRunError) as exc:
            self.error = exc
            raise
        except Exception as exc:  # Spark / Py4J errors: say which query, batch, operator or port
            self.error = explain_failure(self, self._ctx, exc, batch_id)
            raise self.error from exc

    def _hook(self, point: str, batch_id: int) -> None:
        if self.runner.fault is not None:
            self.runner.fault(point, self.stage.name, batch_id)

    def _split(self, df: DataFrame, ctx_state: Any, files: dict[int, list[str]]) -> dict[int, Val]:
        """Each input's part of the batch, in arrival order (`files`: file input -> its files in order)."""
        out: dict[int, Val] = {}
        for i, inp in enumerate(self.inputs):
            if inp.node is None or not self.in_tick[i]:  # the heartbeat carries no elements; no live node reads it
                continue
            if i not in self._in_cols:  # the same Columns every batch: later steps reuse theirs (reuse.py)
                mine = F.col("_src") == i
                if quarantine_dir(inp.binding) is not None:  # its rejected records were set aside (quarantine.py)
                    mine = mine & good()
                fields = {c: F.col(f"p{i}.{c}") for c in (["k"] if inp.kt is not None else []) + ["v"]}
                self._in_cols[i] = (mine, fields, {"_o0": F.col("_seq")} if not self.has_file[i] else {})
            mine, fields, order = self._in_cols[i]
            if (self.has_file[i] and not self.ordered[i]) or (self.has_seq[i] and not self.has_file[i]):
                # no order needed, or the source's own: a pending frame (built with its first reader)
                sf = SFrame.pending(df, order | fields, inp.vt, inp.kt, tuple(order), where=mine)
            else:
                payload = [c.alias(name) for name, c in fields.items()]
                part, ordered = self._ordered_part(df.filter(mine), i, inp, files, payload)
                sf = SFrame(part, inp.vt, inp.kt, ordered)
            if inp.node.meta.kind in (Kind.SINGLETON, Kind.OPTIONAL):  # versions: channel_versions.py
                out[id(inp.node)] = latest_scalar(sf, inp, ctx_state)
            elif inp.node.meta.kind is Kind.KEYED_SINGLETON:  # without a version yet, left out (held.py)
                gone = F.col(f"p{i}.gone") if inp.deltas else None  # (a pending frame's base: the batch)
                if (table := latest_table(self.runner.spark, sf, inp, ctx_state, gone)) is not None:
                    out[id(inp.node)] = table
            else:
                out[id(inp.node)] = sf
        out.update(run_support.executor_values(df, self.region, self.native, ctx_state, self.live))
        return out

    def _ordered_part(
        self, rows: DataFrame, i: int, inp: InputSpec, files: dict[int, list[str]], payload: list[Any]
    ) -> tuple[DataFrame, tuple[str, ...]]:
        """Input i's rows of the batch with their arrival order as columns, and those columns."""
        order: tuple[str, ...]
        if self.has_file[i]:  # file, then split of the file, then row: see FileInput
            assert isinstance(inp.binding, FileInput)
            part = inp.binding.arrival_order(self.runner.spark, rows, inp.name, files.get(i, []), payload)
            order = ("_o0", "_o0s", "_o0r")
        else:
            # without a source order, the position in the batch (deterministic on replay: the
            # batch's data and its partitions are fixed by the offset log); built here, as the
            # position must not move when a reader filters further
            part, order = rows.select(F.monotonically_increasing_id().alias("_o0"), *payload), ("_o0",)
        return part, order

    def _process(self, df: DataFrame, batch_id: int) -> None:
        t0 = time.perf_counter()
        self.runner.check_lock()  # a lease taken over by another runner: no batch from here on
        # the remap log entry first, before any output: it survives Spark's log purging
        files = self.batch_files = self.remap.record(batch_id) if self.stage.streaming else {}
        if self.stage.streaming:  # the batch's files are all there, as Spark listed them (files.py)
            self.runner.files.begin(self.stage.name, batch_id, self.remap.listed)
            if self.runner.mirrors is not None:  # mirrored entries below this batch are read for good
                self.runner.mirrors.advance(self.dir, self.inputs, self.remap.starts)
            self.runner.retention.advance(self.dir, self.inputs, self.remap.starts)  # retention.py
        for i, rules in self.footer.items():  # before anything reads the batch
            check_files(self.runner.spark, self.inputs[i], rules, files.get(i, []))
        state = self.store.begin(batch_id)
        # the first batch's emptiness check (a Spark job) is not needed when a Parquet footer shows a row
        check_empty = batch_id == 0 and self.stage.streaming
        check_empty = check_empty and not parquet_has_rows([u for i in self.parquet for u in files.get(i, [])])
        both = self.native is not None and self.region is not None  # (run_support.cache_batch)
        if check_empty or not self.one_job or both:  # more than one job reads the batch: cache it
            df = run_support.cache_batch(df, both)
        try:
            if check_empty and df.isEmpty() and not run_support.left_out_elements(self, files):
                return  # Spark's first batch runs even without data; a tick without input may be skipped
            quarantined = [
                (i, inp.name, inp.binding)
                for i, inp in enumerate(self.inputs)
                if quarantine_dir(inp.binding) is not None
            ]
            if quarantined:  # this batch's dead letters, before a held batch can merge (quarantine.py)
                for port, count in divert_rejected(df, batch_id, quarantined).items():
                    self.progress.rejected[port] = self.progress.rejected.get(port, 0) + count
            raw = df
            df, files = self._with_held(df, files, state)
            if df is not raw:
                raw.unpersist()
            inputs = self._split(df, state, files)
            if self._blocked(inputs):
                self._hold(df, files, batch_id, state)
                return
            release_held(state)
            ctx = BatchCtx(self.runner.spark, self.stage, batch_id, state, inputs, self.keys, live=self.live)
            if self.region is not None:
                ctx.elsewhere = self.region.region.skipped()
            if self.native is not None:
                ctx.native_seen = self.native.seen(df)
            self._ctx = ctx
            evaluate(ctx)
            for action in ctx.after:
                action()
            self._hook("before_state", batch_id)
            state.commit()
            self._hook("before_outputs", batch_id)
            self._write_sinks(ctx, batch_id)
            for ch in self.stage.channels_out:
                self._write_channel(ch, ctx.channel_outputs[ch.name], batch_id, ctx.channel_updated.get(ch.name))
            self._heartbeat(ctx)
            self._hook("after_sinks", batch_id)
            self.runner.files.end(self.stage.name, batch_id)  # last, before Spark commits: no file changed while read
        finally:
            df.unpersist()
        p = self.progress
        p.batches += 1
        p.last_batch = batch_id
        p.durations_ms.append((batch_id, (time.perf_counter() - t0) * 1000.0))
        p.fn_paths.update(ctx.fn_paths)


class FlowRunner:
    """Runs a program on Spark: binds ports, starts one query per stage, reports progress."""

    def __init__(
        self,
        flow: Flow | Plan,
        *,
        spark: SparkSession | None = None,
        master: str | None = None,
        checkpoint: str | None = None,
        inputs: Mapping[str, str | InputBinding] | None = None,
        outputs: Mapping[str, str | OutputBinding | Callable[[int, list[Any]], object]] | None = None,
        fault: FaultHook | None = None,
        reset_state: Sequence[str] = (),
        lock: CheckpointLock | None = None,
        keyed_state: str = "auto",
        cluster_sizes: Mapping[str, int] | None = None,
        channel_history: int | str | None = None,
    ) -> None:
        # cluster_sizes: members per cluster tag (default 2, as the simulator; see cluster.py);
        # channel_history: newest batches whose channel entries stay (default Spark's; retention.py)
        self.plan = flow if isinstance(flow, Plan) else plan_flow(flow, cluster_sizes)
        if keyed_state not in KEYED_STATE:
            raise SparkRunError(
                f"keyed_state must be one of {', '.join(KEYED_STATE)}, not {keyed_state!r}\n"
                "  fix: 'executors' partitions keyed state across Spark's executors where the program allows; "
                "'driver' keeps all state in the driver's store; 'auto' (the default) chooses by the master"
            )
        self.spark = spark if spark is not None else spark_session(master)
        if type(self.spark).__module__.startswith("pyspark.sql.connect"):
            raise SparkRunError(
                "running on Spark Connect is not supported yet: Connect runs foreachBatch in a server-side "
                "Python process, while hydrolite's tick body keeps its versioned state and in-memory sinks "
                "in the driver\n  fix: use a classic master URL (spark://host:7077, yarn, local[*])"
            )
        self.checkpoint = checkpoint_dir(checkpoint or tempfile.mkdtemp(prefix="hydrolite-"))
        # where each state lives (in plan.json, shown by `hydrolite plan`; `auto`: where the checkpoint has it)
        place_all(self.plan, keyed_state, self.spark.sparkContext.master or "local[*]", self.checkpoint, reset_state)
        self.fault = fault
        # before anything is written (the CLI takes it earlier: it writes demo inputs)
        self.lock = lock if lock is not None and lock.checkpoint == self.checkpoint else CheckpointLock(self.checkpoint)
        try:
            self._setup(inputs, outputs, reset_state, channel_history)
        except BaseException:
            self.lock.release()
            raise

    def _setup(
        self,
        inputs: Mapping[str, str | InputBinding] | None,
        outputs: Mapping[str, str | OutputBinding | Callable[[int, list[Any]], object]] | None,
        reset_state: Sequence[str],
        history: int | str | None,
    ) -> None:
        # feeds (channels, heartbeats) on a Hadoop file system are read from local mirrors: feed_mirror.py
        self.mirrors = FeedMirrors() if not ckfs.is_local(self.checkpoint) else None
        recon = reconcile(self.plan, self.checkpoint, reset_state)
        if recon.refused:
            raise PlanChangedError(recon.render())
        if recon.notable:
            print(recon.render(), file=sys.stderr)
        recon.apply()
        #: query -> batches it had committed before this run (0: a new query)
        self.resumed = {s.name: committed(self.checkpoint, s.name) for s in self.plan.stages}
        flow_ = self.plan.flow
        given_in = dict(inputs or {})
        missing = sorted(p for p in flow_.sources if p not in given_in)
        if missing:
            raise SparkRunError(
                f"source ports not bound: {', '.join(missing)}\n  fix: bind each with an input (see hydrolite.planner.spark.ports)"
            )
        self.inputs: dict[str, InputBinding] = {p: parse_input(s) for p, s in given_in.items()}
        self.files = FileWatch(self.spark, self.inputs)  # checks of the file inputs (files.py)
        self.outputs: dict[str, OutputBinding] = {
            p: parse_output((outputs or {}).get(p, "memory")) for p in flow_.sinks
        }
        self.channel_types = {ch.name: self._channel_type(ch) for ch in self.plan.channels}
        pickle_user_modules(flow_)
        self.stages = [StageRunner(self, s) for s in self.plan.stages]
        self.retention = FeedRetention.of(channel_history(history, self.spark), self.stages)
        self._record_before = ckfs.read_bytes(ckfs.join(self.checkpoint, PLAN_FILE))  # (put back on a refusal)
        write_record(self.checkpoint, recon.record())
        record_bindings(self.checkpoint, self.inputs, self.outputs)
        self.typed_sinks: set[str] = set()  # sinks whose element types this run has recorded

    def _channel_type(self, ch: Channel) -> tuple[HType, HType | None]:
        vt = from_python(ch.node.meta.elem) or OPAQUE
        kt = (from_python(ch.node.meta.key) or OPAQUE) if ch.node.meta.kind.keyed else None
        return vt, kt

    def channel_dir(self, ch: Channel) -> str:
        return ckfs.join(self.checkpoint, "channels", ch.name)

    def sink(self, port: str) -> OutputBinding:
        return self.outputs[port]

    def memory(self, port: str) -> MemorySink:
        out = self.outputs[port]
        if not isinstance(out, MemorySink):
            raise KeyError(f"sink {port!r} is bound to {out.describe()}, not memory")
        return out

    # ------------------------------------------------------------- lifecycle
    def start(self, *, once: bool = False) -> FlowRunner:
        self.files.before_start()  # before any query starts: input directories exist
        for s in self.stages:  # a damaged Spark log is explained, with its recovery
            check_restart(self.checkpoint, s.stage.name)
        if self.mirrors is not None:  # the feed entries the queries may still read
            self.mirrors.sync()
        prepare_queries(self.stages, self.checkpoint, self._record_before)
        for s in self.stages:
            s.start(once)
        return self

    def check_lock(self) -> None:
        """Raise when this runner no longer holds its checkpoint (`lease.Lease.lost`)."""
        if self.lock.lost is not None:
            raise SparkRunError(
                f"stopped: this runner no longer holds checkpoint {self.checkpoint}: {self.lock.lost}\n"
                "  fix: make sure one runner at a time uses the checkpoint, then run again (it resumes)"
            )

    def _check(self) -> None:
        self.check_lock()
        for s in self.stages:
            if s.error is not None:
                raise s.error
            q = s.query
            failure = q.exception() if q is not None and not q.isActive else None
            if failure is not None:
                raise SparkRunError(f"query {s.stage.name!r} stopped: {describe_spark_error(failure)}")

    def process_all_available(self) -> None:
        """Process everything currently available in every query (channels included)."""
        while True:
            before = [s.progress.last_batch for s in self.stages]
            for s in self.stages:
                if s.query is not None and s.query.isActive:
                    try:
                        s.query.processAllAvailable()
                    except Exception:
                        self._check()
                        raise
            self._check()
            if [s.progress.last_batch for s in self.stages] == before:
                return

    def await_termination(self) -> None:
        for s in self.stages:
            if s.query is not None:
                try:
                    s.query.awaitTermination()
                except Exception:
                    self._check()
                    raise
        self._check()

    def run_until_idle(
        self, idle_seconds: float = 3.0, poll: float = 0.5, on_progress: Callable[[FlowRunner], None] | None = None
    ) -> None:
        """Run until every query has been waiting for data (with nothing new) for `idle_seconds`."""
        last_busy = time.monotonic()
        while time.monotonic() - last_busy < idle_seconds:
            time.sleep(poll)
            self._check()
            if any(busy(s.query) for s in self.stages if s.query is not None):
                last_busy = time.monotonic()
            if on_progress is not None:
                on_progress(self)
            if all(s.query is None or not s.query.isActive for s in self.stages):
                break

    def stop(self) -> None:
        for s in self.stages:
            if s.query is not None and s.query.isActive:
                s.query.stop()
        for s in self.stages:
            s.store.close()
        if self.mirrors is not None:
            self.mirrors.close()
        self.lock.release()

    def __enter__(self) -> FlowRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
