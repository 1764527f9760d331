"""Run one generated cluster program on Spark and compare it with the simulator, twice:

1. `verify_runner`: every batch of the Spark run replayed in the simulator on the plan's
   flow (the lifted, process-only one), sink by sink — Spark computes the lifted flow;
2. the same recorded batches replayed on the *original* cluster program, each member its
   own place (`replay_members`): a cluster source's record `(member, x)` is sent to that
   member, every member's tick runs once per batch (all members share the micro-batch),
   sends are delivered at once (Spark's `send` is the identity) — so the lifting pass is
   checked against the simulator's own cluster semantics. A cluster sink's outputs are
   compared per member (in order when the sink is ordered), as `(member, element)` pairs.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any
from unittest import mock

from pyspark.sql import SparkSession

from hydrolite.errors import FlowError
from hydrolite.ir.graph import Flow
from hydrolite.ir.ids import ClusterId, TickId, top_of
from hydrolite.passes.align import align_flow
from hydrolite.planner.spark import verify
from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.planner.spark.stages import SparkPlanError
from hydrolite.sim.program import compile_program
from hydrolite.sim.recorded import ReplayBatch, ReplayResult, _first, _ReplayWorld, _tick_plan
from tests.differential.harness import Outcome, load


class PerMember(list[Any]):
    """A cluster sink's model outputs: compared per member, not in one interleaving."""


def _same(spark_out: list[Any], model: list[Any], ordered: bool, strict: bool = False) -> bool:
    if not isinstance(model, PerMember):
        return _plain_same(spark_out, model, ordered, strict)
    members = {m for m, _ in spark_out} | {m for m, _ in model}
    for m in members:
        a, b = [x for k, x in spark_out if k == m], [x for k, x in model if k == m]
        if not _plain_same(a, b, ordered, strict):
            return False
    return True


_plain_same = verify._same


def replay_members(flow: Flow, sizes: Mapping[str, int]) -> Any:
    """A `replay_ticks` for the original cluster program `flow` (see the module doc)."""
    aligned = align_flow(flow)
    prog = compile_program(aligned, sizes)
    cluster_ports = {
        p for p, x in [*aligned.sources.items(), *aligned.sinks.items()] if isinstance(top_of(x.meta.loc), ClusterId)
    }

    def replay(
        _lifted: Flow,
        tick: TickId | None,
        batches: Iterable[ReplayBatch],
        *,
        sinks: Iterable[str],
        program: Any = None,
        fed: Iterable[Any] = (),
    ) -> list[ReplayResult]:
        assert not list(fed), "a channel in a generated cluster program"  # (one query: see below)
        tp = None
        if tick is not None:
            tp = next((t for t in prog.ticks if t.tick.index == tick.index), None)
            tp = _tick_plan(prog, tp.tick) if tp is not None else None
        world = _ReplayWorld(prog, _first, max_steps=1 << 62)
        watched = list(sinks)
        seen: dict[tuple[str, int], int] = {}
        results = []
        for b in batches:
            # progen_cluster generates one-query programs: a channel value here means the
            # generator changed and this replay must learn to inject it
            assert not any(d for _, d in b.injected.values()), "a channel in a generated cluster program"
            for port, elements in b.sources.items():
                src = prog.sources[port]
                places = prog.places_of[top_of(src.node.meta.loc)]
                for x in elements:
                    if port in cluster_ports:
                        world.send(src, places[x[0]], x[1])
                    else:
                        world.send(src, places[0], x)
                _deliver_all(world)
            if tp is not None:
                for p in tp.places:
                    if all(e.has_value(world.states[p]) for e in tp.entries):
                        world.run_tick(tp, p)
                _deliver_all(world)
            out: dict[str, list[Any]] = {}
            for port in watched:
                op = prog.sinks[port]
                places = prog.places_of[top_of(op.node.meta.loc)]
                got: list[Any] = PerMember() if port in cluster_ports else []
                for m, p in enumerate(places):
                    emitted: list[Any] = world.states[p][op.idx][0]
                    new = emitted[seen.get((port, m), 0) :]
                    seen[(port, m)] = len(emitted)
                    got.extend((m, x) for x in new) if port in cluster_ports else got.extend(new)
                out[port] = got
            results.append(ReplayResult(b.batch_id, out))
        return results

    return replay


def _deliver_all(world: Any) -> None:
    while True:
        keys = [k for k, q in world.channels.items() if q]
        if not keys:
            return
        for k in keys:
            while world.channels[k]:
                world.deliver(k)


def verify_cluster_run(h: SparkHarness, flow: Flow, sizes: Mapping[str, int]) -> tuple[Any, Any]:
    """(Spark vs the lifted flow, Spark vs the original cluster program), batch by batch."""
    lifted = verify.verify_runner(h.runner)
    with mock.patch.object(verify, "replay_ticks", replay_members(flow, sizes)):
        with mock.patch.object(verify, "_same", _same):
            original = verify.verify_runner(h.runner)
    return lifted, original


def run_cluster_case(
    spark: SparkSession, source: str, steps: list[dict[str, list[Any]]], sizes: Mapping[str, int]
) -> Outcome:
    """Run `source` on Spark with `steps` (cluster ports: (member, x) records), then compare."""
    try:
        flow = load(source)
    except FlowError as exc:
        return Outcome("rejected", str(exc))
    directory = tempfile.mkdtemp(prefix="hl-diff-cl-")
    try:
        try:
            h = SparkHarness(flow, spark, directory, cluster_sizes=sizes)
        except SparkPlanError as exc:
            return Outcome("refused", str(exc))
        try:
            for step in steps:
                for port, values in step.items():
                    if port not in flow.sources or not values:
                        continue
                    if port in h.plan.cluster_ports:
                        for m in sorted({m for m, _ in values}):
                            h.sender(port, member=m).send_many([x for k, x in values if k == m])
                    else:
                        h.sender(port).send_many(values)
                h.step()
            lifted, original = verify_cluster_run(h, flow, sizes)
        finally:
            h.runner.stop()
        if not lifted.identical:
            return Outcome("divergent", f"Spark vs the lifted flow in the simulator: {lifted}", lifted)
        if not original.identical:
            return Outcome("divergent", f"Spark vs the cluster program in the simulator: {original}", original)
        return Outcome("identical", str(original), original)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
