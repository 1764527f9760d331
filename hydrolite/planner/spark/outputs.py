"""Writing a micro-batch's outputs: every sink (idempotent by batch id) and every channel
to another query. A mixin of `runtime.StageRunner`, kept apart so the runner reads as the
batch's control flow."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...ir import nodes as n
from . import ckfs
from .errors import SparkRunError
from .exec import BatchCtx
from .feed import FeedWriter, arrow_bytes, entry_table
from .port_api import ValuesSink, collect_many
from .ports import ChannelOutput, FileOutput, SinkCtx
from .pyfn import ACC_TYPE_FIX, ONE_TYPE_FIX, FnSite, KindCheck, map_in_arrow, reencode
from .run_support import record_sink_type
from .stages import Channel
from .types import NONE, OPAQUE, HType
from .values import KTable, Scalar, SFrame, Val, frame_of, table_frame

if TYPE_CHECKING:
    from .runtime import FlowRunner, StageProgress
    from .stages import Stage
    from .state import StateStore


class StageOutputs:
    """Sinks and channels of one stage's batch (needs the runner's fields below)."""

    runner: FlowRunner
    stage: Stage
    store: StateStore
    progress: StageProgress
    dir: str  # the query's checkpoint directory (its sinks' identity lives there)
    deferred: list[n.DeferTick]  # the stage's deferred streams (`Stage.deferred`, listed once)

    _hook: Callable[[str, int], None]  # the runner's fault-injection point

    def _write_sinks(self, ctx: BatchCtx, batch_id: int) -> None:
        """Write every sink of the batch (each idempotent by batch id).

        File sinks are independent Spark jobs: they run concurrently (one inheritable thread
        each, so Spark's per-query properties follow them), which hides each job's fixed
        driver-side cost; sinks that take Python values (memory, callbacks, console:
        `ValuesSink`) are read together by one Spark job first, then delivered in order in
        this thread. A crash between two sinks (`between_sinks`) is the same as before: the
        batch is not committed and its replay rewrites every sink."""
        sinks = self.stage.sinks
        files = [k for k in sinks if isinstance(self.runner.outputs[k.port], FileOutput)]
        # memory, callback and console sinks: read by one Spark job together, delivered in order
        as_values = [k for k in sinks if isinstance(self.runner.outputs[k.port], ValuesSink)]
        collected: dict[str, list[Any]] = {}
        if len(as_values) > 1:
            got = collect_many([ctx.outputs[k.port] for k in as_values])
            collected = {k.port: values for k, values in zip(as_values, got)}
        threads: list[Any] = []
        errors: list[BaseException] = []
        if len(files) > 1:
            from pyspark.util import InheritableThread

            def run(sink: n.Sink) -> None:
                try:
                    self._write_sink(sink, ctx, batch_id)
                except BaseException as exc:  # re-raised in the batch's own thread below
                    errors.append(exc)

            threads = [InheritableThread(target=run, args=(k,), name=f"hydrolite-sink-{k.port}") for k in files]
            for t in threads:
                t.start()
        try:
            done = 0
            for sink in sinks:
                if threads and sink in files:
                    continue
                if done:
                    self._hook("between_sinks", batch_id)
                self._write_sink(sink, ctx, batch_id, collected.get(sink.port))
                done += 1
            if threads:
                threads[0].join()
                if done or len(threads) > 1:
                    self._hook("between_sinks", batch_id)
        finally:
            for t in threads:
                t.join()
        if errors:
            raise errors[0]

    def _write_sink(self, sink: n.Sink, ctx: BatchCtx, batch_id: int, values: list[Any] | None = None) -> None:
        """Write one sink; `values`: its batch already collected (a `ValuesSink`)."""
        sctx = SinkCtx(sink.port, batch_id, self.store, self.stage.name, self.dir)
        out = self.runner.outputs[sink.port]
        if values is not None:
            assert isinstance(out, ValuesSink)
            rows: int | None = out.deliver(sctx, values)
        else:
            rows = out.write(sctx, ctx.outputs[sink.port])
        if sink.port not in self.runner.typed_sinks:  # once per run: the types do not change
            record_sink_type(self.runner.checkpoint, sink.port, ctx.outputs[sink.port])
            self.runner.typed_sinks.add(sink.port)
        if rows is not None:
            self.progress.output_rows[sink.port] = self.progress.output_rows.get(sink.port, 0) + rows

    def _write_channel(self, ch: Channel, value: Val, batch_id: int, updated: Val | None = None) -> None:
        """Write the channel's entry for this batch; `updated`: the value of its `gone_from`
        state (the keys the batch updated), whose keys `value` lacks are written as tombstones."""
        vt, kt = self.runner.channel_types[ch.name]
        if isinstance(value, KTable):  # a keyed singleton: its whole version (channel_versions.py)
            value = table_frame(self.runner.spark, value)
        if isinstance(value, Scalar):
            sf = frame_of(self.runner.spark, [value.value] if value.present else [], vt)
        elif isinstance(value, SFrame):
            sf = value
            # a channel without a declared type carries its values pickled (the reader cannot know them);
            # values kept pickled (a fold's that left its init's type) cross in the channel's type, exactly
            change: dict[str, tuple[HType, HType]] = {}
            for c, have, want in (("v", value.vt, vt), ("k", value.kt, kt)):
                if have is not None and want is not None and have != want and OPAQUE in (have, want):
                    change[c] = (have, want)
            if change:
                base = value.df.select(*value.cols())
                schema = T.StructType(
                    [
                        T.StructField(f.name, change[f.name][1].spark(), True) if f.name in change else f
                        for f in base.schema.fields
                    ]
                )
                checks = {c: [self._channel_check(ch, batch_id, t)] for c, (_, t) in change.items() if t != OPAQUE}
                sf = SFrame(
                    map_in_arrow(base, reencode(change, checks), schema),
                    change["v"][1] if "v" in change else value.vt,
                    change["k"][1] if "k" in change else value.kt,
                    value.order,
                )
            sf = sf.with_df(sf.df.withColumn("v", F.col("v").cast(vt.spark())))
            if updated is not None:
                sf = self._with_tombstones(sf, updated, change.get("k"), vt)
        else:
            raise SparkRunError(f"channel {ch.name}: cannot write a {type(value).__name__}")
        path = self.runner.channel_dir(ch)
        mirrors = self.runner.mirrors  # a checkpoint on a Hadoop file system: feed_mirror.py
        ChannelOutput(path).write(batch_id, sf, mirrors.get(path) if mirrors is not None else None, updated is not None)

    def _channel_check(self, ch: Channel, batch_id: int, t: HType) -> KindCheck:
        """Values the batch kept pickled, each as it is, that cross to another query in the
        channel's type `t` (the type the program gives the node, e.g. a fold's from its
        init): one that is not exactly of `t` (`66.0` where the init was `0`) fails naming the
        operator, the value and the fix, rather than being converted or failing in Spark."""
        node = ch.node
        site = FnSite(node.op, node.site.file, node.site.line, batch_id, self.stage.name)
        crossing = f"the type it crosses to another query in (channel {ch.name})"
        fix = ACC_TYPE_FIX if isinstance(node, (n.Fold, n.Reduce)) else ONE_TYPE_FIX
        return KindCheck(site, t, None, (crossing, fix))

    def _with_tombstones(self, sf: SFrame, updated: Val, key_change: tuple[HType, HType] | None, vt: HType) -> SFrame:
        """A delta entry's rows (`k`, `v`, `gone`): the channel's value, and a tombstone for
        each key of `updated` it lacks (a `filter` / `filter_map` dropped the key in this
        batch: the reader's version must lose it). Keys are compared as the channel writes
        them (`key_change`: re-encoded, as the channel's own keys were)."""
        if isinstance(updated, KTable):
            updated = table_frame(self.runner.spark, updated)
        if not isinstance(updated, SFrame) or not updated.keyed:
            raise SparkRunError(f"{type(updated).__name__}: the keys a state updated must be a keyed table")
        keys = updated.df.select("k")
        if key_change is not None and updated.kt != key_change[1]:
            assert updated.kt is not None
            to = T.StructType([T.StructField("k", key_change[1].spark())])
            keys = map_in_arrow(keys, reencode({"k": (updated.kt, key_change[1])}), to)
        kept = sf.df.select("k", "v", F.lit(False).alias("gone"))
        lost = keys.join(sf.df.select("k"), "k", "left_anti")  # (a state's batch value has each key once)
        tombstones = lost.select("k", F.lit(None).cast(vt.spark()).alias("v"), F.lit(True).alias("gone"))
        return SFrame(kept.unionByName(tombstones), sf.vt, sf.kt)  # (a keyed singleton has no order)

    def _heartbeat(self, ctx: BatchCtx) -> None:
        """Ask Spark for another run of the tick when a deferred stream holds elements (the
        model runs the tick again for them; a replayed batch may ask twice: one more run of
        a tick is always legal)."""
        for x in self.deferred:
            value = ctx.vals.get(id(x.children[0]))
            if isinstance(value, SFrame) and not value.df.isEmpty():
                path, mirrors = ckfs.join(self.dir, "heartbeat"), self.runner.mirrors
                if mirrors is not None:  # a checkpoint on a Hadoop file system: feed_mirror.py
                    mirrors.get(path).append(arrow_bytes(entry_table([], NONE)))
                else:
                    FeedWriter(path, NONE).send_many([])
                return
