"""Every operator builds the expected IR node: class, meta, fields, children and call site.

`OPS` is a table with one row per (operator, collection kind); each row's `build` is a
one-line lambda, so the node's recorded call site must be that very line of this file.
`test_every_node_class_is_built` keeps the table complete as node classes are added.
Snapshot: `HYDROLITE_UPDATE_FIXTURES=1 pytest tests/core` rewrites tests/core/fixtures/.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hydrolite import Cluster, FlowBuilder, MemberId, Process, SinkPort, Tick, nondet
from hydrolite.ir import nodes as n
from hydrolite.ir.graph import topo_order
from hydrolite.ir.ids import LocId
from hydrolite.ir.meta import Kind, Meta
from hydrolite.ir.nodes import Node, node_classes
from hydrolite.live._base import Live
from hydrolite.live.keyed_stream import KeyedStream
from hydrolite.live.stream import Stream

HERE = os.path.abspath(__file__)
FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
R = "any batch boundary is acceptable to this test"
ANY: Any = object()  # "do not check" for elem/key


class Server: ...


class Client: ...


class Workers: ...


class W:
    """A flow with typical inputs; `build` lambdas take one of these."""

    def __init__(self) -> None:
        self.flow = FlowBuilder("ir")
        self.server: Process[Server] = self.flow.process(Server)
        self.client: Process[Client] = self.flow.process(Client)
        self.workers: Cluster[Workers] = self.flow.cluster(Workers)
        self.tick: Tick[Process[Server]] = self.server.tick()
        self.align = self.server.local_align_point()
        self.x: Stream[int, Process[Server]] = self.server.source("x", int)
        self.ks: KeyedStream[str, int, Process[Server]] = self.server.keyed_source("k", str, int)
        self.bx = self.x.batch(self.tick, nondet(R))
        self.bks = self.ks.batch(self.tick, nondet(R))
        self.count = self.x.count()
        self.snap = self.count.snapshot(self.tick, nondet(R))
        self.opt = self.bx.first()
        self.table = self.ks.count()
        self.snap_table = self.table.snapshot(self.tick, nondet(R))

    def loc(self, at: str) -> LocId:
        locs: dict[str, LocId] = {
            "server": self.server.id,
            "client": self.client.id,
            "workers": self.workers.id,
            "tick": self.tick.id,
        }
        return locs[at]


ST, KS, SG, OP, KG = Kind.STREAM, Kind.KEYED_STREAM, Kind.SINGLETON, Kind.OPTIONAL, Kind.KEYED_SINGLETON


@dataclass(frozen=True)
class Op:
    """One operator call and the node it must build."""

    node: type[Node]
    variant: str
    build: Callable[[W], object]
    kind: Kind
    at: str
    bounded: bool
    ordered: bool
    elem: Any = ANY
    key: Any = ANY
    inputs: tuple[type[Node], ...] = ()
    fields: Callable[[W], dict[str, Any]] = field(default=lambda w: {})

    def __str__(self) -> str:
        return f"{self.node.__name__}-{self.variant}"


OPS: list[Op] = [
    # leaves
    Op(
        n.Source,
        "stream",
        lambda w: w.server.source("p", str),
        ST,
        "server",
        False,
        True,
        str,
        None,
        fields=lambda w: {"port": "p"},
    ),
    Op(n.Source, "keyed", lambda w: w.server.keyed_source("kp", str, float), KS, "server", False, True, float, str),
    Op(
        n.SourceIter,
        "typed",
        lambda w: w.server.source_iter([1, 2]),
        ST,
        "server",
        True,
        True,
        int,
        fields=lambda w: {"values": (1, 2)},
    ),
    Op(n.SourceIter, "mixed", lambda w: w.workers.source_iter([1, "a"]), ST, "workers", True, True, None),
    Op(
        n.TickConstant,
        "singleton",
        lambda w: w.tick.singleton(1.5),
        SG,
        "tick",
        True,
        True,
        float,
        fields=lambda w: {"value": 1.5},
    ),
    Op(n.CycleSource, "stream", lambda w: w.tick.stream_cycle(int)[1], ST, "tick", True, True, int),
    Op(
        n.CycleSource,
        "singleton",
        lambda w: w.tick.singleton_cycle(0)[1],
        SG,
        "tick",
        True,
        True,
        int,
        fields=lambda w: {"initial": 0},
    ),
    Op(n.CycleSource, "optional", lambda w: w.tick.optional_cycle(str)[1], OP, "tick", True, True, str),
    # element-wise
    Op(n.Map, "stream", lambda w: w.x.map(str), ST, "server", False, True, None, inputs=(n.Source,)),
    Op(n.Map, "keyed", lambda w: w.ks.map(float), KS, "server", False, True, None, str, inputs=(n.Source,)),
    Op(n.Map, "singleton", lambda w: w.snap.map(str), SG, "tick", True, True, None, inputs=(n.Snapshot,)),
    Op(n.Map, "optional", lambda w: w.opt.map(str), OP, "tick", True, True, None, inputs=(n.First,)),
    Op(n.Map, "keyed_singleton", lambda w: w.table.map(str), KG, "server", False, True, None, str, inputs=(n.Count,)),
    Op(n.Filter, "stream", lambda w: w.x.filter(lambda v: v > 0), ST, "server", False, True, int, inputs=(n.Source,)),
    Op(n.Filter, "keyed", lambda w: w.ks.filter(lambda v: v > 0), KS, "server", False, True, int, str),
    Op(
        n.Filter,
        "singleton",
        lambda w: w.snap.filter(lambda v: v > 0),
        OP,
        "tick",
        True,
        True,
        int,
        inputs=(n.Snapshot,),
    ),
    Op(n.Filter, "keyed_singleton", lambda w: w.table.filter(lambda v: v > 1), KG, "server", False, True, int, str),
    Op(n.FilterMap, "stream", lambda w: w.x.filter_map(lambda v: v or None), ST, "server", False, True, None),
    Op(n.FilterMap, "keyed", lambda w: w.ks.filter_map(lambda v: v or None), KS, "server", False, True, None, str),
    Op(n.FilterMap, "singleton", lambda w: w.snap.filter_map(lambda v: v or None), OP, "tick", True, True, None),
    Op(n.FlatMap, "ordered", lambda w: w.x.flat_map_ordered(lambda v: [v]), ST, "server", False, True, None),
    Op(n.FlatMap, "unordered", lambda w: w.x.flat_map_unordered(lambda v: {v}), ST, "server", False, False, None),
    Op(
        n.FlatMap,
        "keyed_unordered",
        lambda w: w.ks.flat_map_unordered(lambda v: {v}),
        KS,
        "server",
        False,
        False,
        None,
        str,
    ),
    Op(
        n.FlatMap,
        "singleton",
        lambda w: w.snap.flat_map_ordered(range),
        ST,
        "tick",
        True,
        True,
        None,
        inputs=(n.Snapshot,),
    ),
    Op(
        n.Inspect, "stream", lambda w: w.x.inspect(print), ST, "server", False, True, int, fields=lambda w: {"f": print}
    ),
    Op(n.Inspect, "keyed", lambda w: w.bks.inspect(print), KS, "tick", True, True, int, str),
    Op(n.Inspect, "optional", lambda w: w.opt.inspect(print), OP, "tick", True, True, int),
    # aggregation
    Op(
        n.Fold,
        "stream",
        lambda w: w.x.fold(0, max),
        SG,
        "server",
        False,
        True,
        int,
        inputs=(n.Source,),
        fields=lambda w: {"init": 0, "f": max, "commutative": False},
    ),
    Op(
        n.Fold,
        "commutative",
        lambda w: w.x.weaken_ordering().fold_commutative(0.0, max),
        SG,
        "server",
        False,
        True,
        float,
        fields=lambda w: {"commutative": True},
    ),
    Op(
        n.Fold,
        "keyed",
        lambda w: w.ks.fold("", lambda a, v: a + str(v)),
        KG,
        "server",
        False,
        True,
        str,
        str,
        fields=lambda w: {"commutative": False},
    ),
    Op(
        n.Fold,
        "keyed_commutative",
        lambda w: w.bks.fold_commutative(0, max),
        KG,
        "tick",
        True,
        True,
        int,
        str,
        fields=lambda w: {"commutative": True},
    ),
    Op(
        n.Reduce,
        "stream",
        lambda w: w.bx.reduce(max),
        OP,
        "tick",
        True,
        True,
        int,
        fields=lambda w: {"commutative": False},
    ),
    Op(
        n.Reduce,
        "commutative",
        lambda w: w.x.weaken_ordering().reduce_commutative(max),
        OP,
        "server",
        False,
        True,
        int,
        fields=lambda w: {"commutative": True},
    ),
    Op(n.Reduce, "keyed", lambda w: w.ks.reduce(max), KG, "server", False, True, int, str),
    Op(
        n.Reduce,
        "keyed_commutative",
        lambda w: w.ks.reduce_commutative(max),
        KG,
        "server",
        False,
        True,
        int,
        str,
        fields=lambda w: {"commutative": True},
    ),
    Op(
        n.Count,
        "stream",
        lambda w: w.x.weaken_ordering().count(),
        SG,
        "server",
        False,
        True,
        int,
        inputs=(n.WeakenOrdering,),
    ),
    Op(n.Count, "keyed", lambda w: w.bks.count(), KG, "tick", True, True, int, str, inputs=(n.Batch,)),
    Op(n.First, "stream", lambda w: w.x.first(), OP, "server", False, True, int),
    Op(n.First, "keyed", lambda w: w.ks.first(), KG, "server", False, True, int, str),
    Op(n.Last, "stream", lambda w: w.bx.last(), OP, "tick", True, True, int),
    Op(n.Last, "keyed", lambda w: w.ks.last(), KG, "server", False, True, int, str),
    Op(n.Enumerate, "stream", lambda w: w.x.enumerate(), ST, "server", False, True, None),
    Op(n.Enumerate, "keyed", lambda w: w.ks.enumerate(), KS, "server", False, True, None, str),
    Op(n.Unique, "stream", lambda w: w.x.weaken_ordering().unique(), ST, "server", False, False, int),
    Op(n.Unique, "keyed", lambda w: w.ks.unique(), KS, "server", False, True, int, str),
    Op(
        n.Sort,
        "plain",
        lambda w: w.bx.weaken_ordering().sort(),
        ST,
        "tick",
        True,
        True,
        int,
        fields=lambda w: {"key": None},
    ),
    Op(
        n.Sort,
        "by_key",
        lambda w: w.server.source_iter([3, 1]).sort(key=abs),
        ST,
        "server",
        True,
        True,
        int,
        fields=lambda w: {"key": abs},
    ),
    # binary
    Op(
        n.CrossSingleton,
        "singleton",
        lambda w: w.bx.cross_singleton(w.snap),
        ST,
        "tick",
        True,
        True,
        None,
        inputs=(n.Batch, n.Snapshot),
    ),
    Op(
        n.CrossSingleton,
        "optional",
        lambda w: w.bx.weaken_ordering().cross_singleton(w.opt),
        ST,
        "tick",
        True,
        False,
        None,
        inputs=(n.WeakenOrdering, n.First),
    ),
    Op(
        n.CrossProduct,
        "top",
        lambda w: w.x.cross_product(w.server.source("y", str)),
        ST,
        "server",
        False,
        False,
        None,
        inputs=(n.Source, n.Source),
    ),
    Op(
        n.CrossProduct,
        "tick",
        lambda w: w.bx.cross_product(w.bx),
        ST,
        "tick",
        True,
        False,
        None,
        inputs=(n.Batch, n.Batch),
    ),
    Op(
        n.Join,
        "stream",
        lambda w: w.x.map(lambda v: (v, v)).join(w.x.map(lambda v: (v, str(v)))),
        ST,
        "server",
        False,
        False,
        None,
        inputs=(n.Map, n.Map),
    ),
    Op(
        n.AntiJoin,
        "tick",
        lambda w: w.bx.map(lambda v: (v, v)).anti_join(w.bx),
        ST,
        "tick",
        True,
        True,
        None,
        inputs=(n.Map, n.Batch),
    ),
    Op(n.Chain, "ordered", lambda w: w.bx.chain(w.bx.map(abs)), ST, "tick", True, True, int, inputs=(n.Batch, n.Map)),
    Op(
        n.Chain,
        "unordered",
        lambda w: w.bx.weaken_ordering().chain(w.bx.weaken_ordering()),
        ST,
        "tick",
        True,
        False,
        int,
        inputs=(n.WeakenOrdering, n.WeakenOrdering),
    ),
    Op(
        n.MergeUnordered,
        "top",
        lambda w: w.x.merge_unordered(w.server.source("y", int)),
        ST,
        "server",
        False,
        False,
        int,
        inputs=(n.Source, n.Source),
    ),
    Op(n.MergeUnordered, "tick", lambda w: w.bx.merge_unordered(w.bx), ST, "tick", True, False, int),
    Op(
        n.Zip,
        "singletons",
        lambda w: w.snap.zip(w.snap.map(str)),
        SG,
        "tick",
        True,
        True,
        None,
        inputs=(n.Snapshot, n.Map),
    ),
    Op(n.Zip, "with_optional", lambda w: w.snap.zip(w.opt), OP, "tick", True, True, None, inputs=(n.Snapshot, n.First)),
    Op(
        n.KeyedLookup,
        "lookup",
        lambda w: w.bks.lookup_keyed_singleton(w.snap_table),
        KS,
        "tick",
        True,
        True,
        None,
        str,
        inputs=(n.Batch, n.Snapshot),
        fields=lambda w: {"keep_missing": True},
    ),
    Op(
        n.KeyedLookup,
        "get_many",
        lambda w: w.snap_table.get_many_if_present(w.bks),
        KS,
        "tick",
        True,
        True,
        None,
        str,
        inputs=(n.Batch, n.Snapshot),
        fields=lambda w: {"keep_missing": False},
    ),
    Op(
        n.KeyedGet,
        "get",
        lambda w: w.snap_table.get(w.tick.singleton("a")),
        OP,
        "tick",
        True,
        True,
        int,
        None,
        inputs=(n.Snapshot, n.TickConstant),
    ),
    Op(
        n.UnwrapOr,
        "optional",
        lambda w: w.opt.unwrap_or(-1),
        SG,
        "tick",
        True,
        True,
        int,
        inputs=(n.First,),
        fields=lambda w: {"default": -1},
    ),
    # reshaping
    Op(
        n.IntoKeyed,
        "pairs",
        lambda w: w.x.map(lambda v: (v, v)).into_keyed(),
        KS,
        "server",
        False,
        True,
        None,
        None,
        inputs=(n.Map,),
    ),
    Op(
        n.Entries,
        "keyed_stream",
        lambda w: w.ks.entries(),
        ST,
        "server",
        False,
        False,
        tuple[str, int],
        None,
        inputs=(n.Source,),
    ),
    Op(n.Entries, "keyed_singleton", lambda w: w.snap_table.entries(), ST, "tick", True, False, tuple[str, int], None),
    Op(n.Keys, "keyed_stream", lambda w: w.ks.keys(), ST, "server", False, False, str, None),
    Op(n.Keys, "keyed_singleton", lambda w: w.snap_table.keys(), ST, "tick", True, False, str, None),
    Op(n.Values, "keyed_stream", lambda w: w.ks.values(), ST, "server", False, False, int, None),
    Op(n.Values, "keyed_singleton", lambda w: w.snap_table.values(), ST, "tick", True, False, int, None),
    Op(n.IntoStream, "singleton", lambda w: w.snap.into_stream(), ST, "tick", True, True, int, inputs=(n.Snapshot,)),
    Op(n.IntoStream, "optional", lambda w: w.opt.into_stream(), ST, "tick", True, True, int, inputs=(n.First,)),
    Op(n.IntoSingleton, "optional", lambda w: w.opt.into_singleton(), SG, "tick", True, True, None, inputs=(n.First,)),
    # time and order
    Op(
        n.Batch,
        "stream",
        lambda w: w.x.batch(w.tick, nondet(R)),
        ST,
        "tick",
        True,
        True,
        int,
        inputs=(n.Source,),
        fields=lambda w: {"tick": w.tick.id, "align": None},
    ),
    Op(
        n.Batch,
        "keyed",
        lambda w: w.ks.weaken_ordering().batch(w.tick, nondet(R)),
        KS,
        "tick",
        True,
        False,
        int,
        str,
        fields=lambda w: {"tick": w.tick.id},
    ),
    Op(
        n.Batch,
        "aligned",
        lambda w: w.x.batch_aligned(w.tick, w.align, nondet(R)),
        ST,
        "tick",
        True,
        True,
        int,
        fields=lambda w: {"tick": w.tick.id, "align": w.align.id},
    ),
    Op(
        n.Batch,
        "keyed_aligned",
        lambda w: w.ks.batch_aligned(w.tick, w.align, nondet(R)),
        KS,
        "tick",
        True,
        True,
        int,
        str,
        fields=lambda w: {"align": w.align.id},
    ),
    Op(
        n.Snapshot,
        "singleton",
        lambda w: w.count.snapshot(w.tick, nondet(R)),
        SG,
        "tick",
        True,
        True,
        int,
        inputs=(n.Count,),
        fields=lambda w: {"tick": w.tick.id, "align": None},
    ),
    Op(
        n.Snapshot,
        "optional",
        lambda w: w.x.first().snapshot(w.tick, nondet(R)),
        OP,
        "tick",
        True,
        True,
        int,
        inputs=(n.First,),
    ),
    Op(n.Snapshot, "keyed_singleton", lambda w: w.table.snapshot(w.tick, nondet(R)), KG, "tick", True, True, int, str),
    Op(
        n.Snapshot,
        "aligned",
        lambda w: w.count.snapshot_aligned(w.tick, w.align, nondet(R)),
        SG,
        "tick",
        True,
        True,
        int,
        fields=lambda w: {"align": w.align.id},
    ),
    Op(
        n.Snapshot,
        "optional_aligned",
        lambda w: w.x.last().snapshot_aligned(w.tick, w.align, nondet(R)),
        OP,
        "tick",
        True,
        True,
        int,
        fields=lambda w: {"align": w.align.id},
    ),
    Op(
        n.Snapshot,
        "keyed_aligned",
        lambda w: w.table.snapshot_aligned(w.tick, w.align, nondet(R)),
        KG,
        "tick",
        True,
        True,
        int,
        str,
        fields=lambda w: {"align": w.align.id},
    ),
    Op(n.AllTicks, "stream", lambda w: w.bx.all_ticks(), ST, "server", False, True, int, inputs=(n.Batch,)),
    Op(n.AllTicks, "keyed", lambda w: w.bks.all_ticks(), KS, "server", False, True, int, str),
    Op(n.Latest, "singleton", lambda w: w.snap.latest(), SG, "server", False, True, int, inputs=(n.Snapshot,)),
    Op(n.Latest, "optional", lambda w: w.opt.latest(), OP, "server", False, True, int),
    Op(n.Latest, "keyed_singleton", lambda w: w.snap_table.latest(), KG, "server", False, True, int, str),
    Op(n.DeferTick, "stream", lambda w: w.bx.defer_tick(), ST, "tick", True, True, int, inputs=(n.Batch,)),
    Op(n.DeferTick, "keyed", lambda w: w.bks.defer_tick(), KS, "tick", True, True, int, str),
    Op(n.DeferTick, "singleton", lambda w: w.snap.defer_tick(), OP, "tick", True, True, int),
    Op(n.DeferTick, "optional", lambda w: w.opt.defer_tick(), OP, "tick", True, True, int),
    Op(n.DeferTick, "keyed_singleton", lambda w: w.snap_table.defer_tick(), KG, "tick", True, True, int, str),
    Op(
        n.AssumeOrdering,
        "stream",
        lambda w: w.bx.weaken_ordering().assume_ordering(nondet("order is fine")),
        ST,
        "tick",
        True,
        True,
        int,
        inputs=(n.WeakenOrdering,),
    ),
    Op(
        n.AssumeOrdering,
        "keyed",
        lambda w: w.ks.weaken_ordering().assume_ordering(nondet("order is fine")),
        KS,
        "server",
        False,
        True,
        int,
        str,
    ),
    Op(n.WeakenOrdering, "stream", lambda w: w.x.weaken_ordering(), ST, "server", False, False, int),
    Op(n.WeakenOrdering, "keyed", lambda w: w.bks.weaken_ordering(), KS, "tick", True, False, int, str),
    # network
    Op(
        n.Send,
        "process",
        lambda w: w.bx.all_ticks().send(w.client),
        ST,
        "client",
        False,
        True,
        int,
        inputs=(n.AllTicks,),
        fields=lambda w: {"dest": w.client.id, "mode": n.SendMode.DIRECT},
    ),
    Op(
        n.Send,
        "from_cluster",
        lambda w: w.workers.source("c", int).send(w.server),
        KS,
        "server",
        False,
        True,
        int,
        MemberId,
        fields=lambda w: {"dest": w.server.id, "mode": n.SendMode.DIRECT},
    ),
    Op(
        n.Send,
        "broadcast",
        lambda w: w.server.source_iter([1]).broadcast(w.workers),
        ST,
        "workers",
        False,
        True,
        int,
        fields=lambda w: {"mode": n.SendMode.BROADCAST},
    ),
    Op(
        n.Send,
        "demux",
        lambda w: w.x.map(lambda v: (MemberId[Workers](v), v)).demux(w.workers),
        ST,
        "workers",
        False,
        True,
        None,
        fields=lambda w: {"mode": n.SendMode.DEMUX},
    ),
    # alignment
    Op(
        n.ReleaseAligned,
        "stream",
        lambda w: w.x.release_aligned(w.align),
        ST,
        "server",
        False,
        True,
        int,
        inputs=(n.Source,),
        fields=lambda w: {"align": w.align.id},
    ),
    Op(
        n.ReleaseAligned,
        "keyed",
        lambda w: w.ks.release_aligned(w.align),
        KS,
        "server",
        False,
        True,
        int,
        str,
        fields=lambda w: {"align": w.align.id},
    ),
    Op(
        n.AlignedAt,
        "stream",
        lambda w: w.x.aligned_at(w.align),
        ST,
        "server",
        False,
        True,
        int,
        fields=lambda w: {"align": w.align.id},
    ),
    Op(n.AlignedAt, "keyed", lambda w: w.ks.aligned_at(w.align), KS, "server", False, True, int, str),
    Op(n.AlignedAt, "singleton", lambda w: w.count.aligned_at(w.align), SG, "server", False, True, int),
    Op(n.AlignedAt, "optional", lambda w: w.x.first().aligned_at(w.align), OP, "server", False, True, int),
    Op(n.AlignedAt, "keyed_singleton", lambda w: w.table.aligned_at(w.align), KG, "server", False, True, int, str),
    # roots
    Op(
        n.Sink,
        "stream",
        lambda w: w.x.sink("out"),
        ST,
        "server",
        False,
        True,
        int,
        inputs=(n.Source,),
        fields=lambda w: {"port": "out"},
    ),
    Op(n.Sink, "keyed", lambda w: w.ks.sink("kout"), KS, "server", False, True, int, str),
    Op(
        n.CycleSink,
        "singleton",
        lambda w: w.tick.singleton_cycle(0)[0].complete_next_tick(w.snap),
        OP,
        "tick",
        True,
        True,
        int,
        inputs=(n.DeferTick,),
    ),
    Op(
        n.CycleSink,
        "stream",
        lambda w: w.tick.stream_cycle(int)[0].complete_next_tick(w.bx),
        ST,
        "tick",
        True,
        True,
        int,
        inputs=(n.DeferTick,),
    ),
]

# Node classes that only compiler passes create (none yet): they need no row in OPS.
PASS_ONLY: frozenset[type[Node]] = frozenset()


def built(op: Op) -> tuple[W, Node]:
    """Build the operator in a fresh world; resolve sinks and cycle sinks through finalize()."""
    w = W()
    result = op.build(w)
    if isinstance(result, Live):
        return w, result.node
    flow = w.flow.finalize()
    if isinstance(result, SinkPort):
        return w, flow.sinks[result.name]
    assert result is None, result
    return w, flow.roots[-1]


# ------------------------------------------------------------------ operators
def test_every_node_class_is_built() -> None:
    covered = {op.node for op in OPS}
    missing = set(node_classes()) - covered - PASS_ONLY
    assert not missing, f"node classes no test builds: {sorted(c.__name__ for c in missing)}"
    assert covered <= set(node_classes())
    for op in OPS:  # the table's claim is checked by building, not trusted
        assert type(built(op)[1]) is op.node, op


@pytest.mark.parametrize("op", OPS, ids=str)
def test_operator_builds_its_node(op: Op) -> None:
    w, node = built(op)
    assert type(node) is op.node
    meta = node.meta
    assert (meta.kind, meta.loc, meta.bounded, meta.ordered) == (op.kind, w.loc(op.at), op.bounded, op.ordered), (
        meta.type_str()
    )
    if op.elem is not ANY:
        assert meta.elem == op.elem, meta.type_str()
    if op.key is not ANY:
        assert meta.key == op.key, meta.type_str()
    assert (node.site.file, node.site.line) == (HERE, op.build.__code__.co_firstlineno)
    if op.inputs:
        assert tuple(type(c) for c in node.children) == op.inputs
    for name, value in op.fields(w).items():
        assert getattr(node, name) == value, name
    if isinstance(node, (n.Batch, n.Snapshot, n.AssumeOrdering)):
        assert node.nondet.reason and (node.nondet.site.file, node.nondet.site.line) == (
            HERE,
            op.build.__code__.co_firstlineno,
        )


def test_chained_operators_keep_their_own_lines() -> None:
    w = W()
    out = (
        w.x.map(lambda v: v + 1)  # line +1
        .filter(lambda v: v > 0)  # line +2
        .batch(w.tick, nondet(R))  # line +3
    )
    start = test_chained_operators_keep_their_own_lines.__code__.co_firstlineno + 3
    lines = [node.site.line for node in topo_order((out.node,)) if node.site.file == HERE and node.op != "source"]
    assert lines == [start, start + 1, start + 2]
    assert [c.op for c in topo_order((out.node,))] == ["source", "map", "filter", "batch"]


# ------------------------------------------------------------------ node classes
def test_node_classes_are_frozen_identity_dataclasses_with_their_own_name() -> None:
    names = set()
    for cls in node_classes():
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert dataclasses.is_dataclass(cls) and params.frozen and not params.eq, cls
        assert "op" in cls.__dict__ and cls.op not in names, f"{cls.__name__} needs its own op name"
        names.add(cls.op)
        assert "children" not in {f.name for f in dataclasses.fields(cls)}, f"{cls.__name__} stores children"


def _meta(w: W) -> Meta:
    return Meta(Kind.STREAM, w.server.id, bounded=False, ordered=True, elem=int)


def test_nodes_are_immutable_and_compared_by_identity() -> None:
    w = W()
    node = w.x.map(str).node
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.meta = _meta(w)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.input = node
    twin = dataclasses.replace(node)
    assert twin is not node and twin != node and len({node, twin}) == 2
    assert twin.children == node.children and twin.params() == node.params()


def test_children_are_derived_from_fields() -> None:
    w = W()
    site = w.x.node.site
    a = n.Source(meta=_meta(w), site=site, port="a")
    b = n.Source(meta=_meta(w), site=site, port="b")
    assert a.children == () and a.params() == {"port": "a"}
    join = n.Join(meta=_meta(w), site=site, left=a, right=b)
    assert join.children == (a, b)
    assert n.Join(meta=_meta(w), site=site, left=b, right=a).children == (b, a)
    assert join.params() == {}
    m = n.Map(meta=_meta(w), site=site, input=a, f=str)
    assert m.children == (a,) and m.params() == {"f": str}
    assert dataclasses.replace(m, input=b).children == (b,)
    shared = n.Join(meta=_meta(w), site=site, left=m, right=n.Filter(meta=_meta(w), site=site, input=a, f=bool))
    order = topo_order((shared,))
    assert [x.op for x in order] == ["source", "map", "filter", "join"]
    assert order.count(a) == 1


def test_a_reused_collection_is_one_shared_node() -> None:
    w = W()
    counted = w.ks.values()
    left, right = counted.count(), counted.fold_commutative(0, max)
    assert left.node.children[0] is right.node.children[0] is counted.node


# ------------------------------------------------------------------ dumps and examples
def _load_example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_hl_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dump_snapshot_of_counter_naive() -> None:
    example = _load_example("counter_naive")
    text = example.build().dump() + "\n"
    fixture = FIXTURES / "counter_naive.dump.txt"
    if os.environ.get("HYDROLITE_UPDATE_FIXTURES") == "1":
        fixture.parent.mkdir(exist_ok=True)
        fixture.write_text(text)
    assert text == fixture.read_text(), (
        "Flow.dump() changed: rerun with HYDROLITE_UPDATE_FIXTURES=1 and review the diff"
    )
    assert example.build().dump() + "\n" == text, "two builds of one program dump differently"
    assert "0x" not in text and " at 0" not in text


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.py") if p.stem != "__init__"))
def test_examples_build_their_ir(name: str) -> None:
    example = _load_example(name)
    flow = example.build()
    nodes = flow.nodes()
    assert nodes and flow.sinks
    source = os.path.abspath(EXAMPLES / f"{name}.py")
    assert {node.site.file for node in nodes} == {source}, "every node points at the example's own lines"
    assert all(node.site.code for node in nodes)
    assert flow.dump() == example.build().dump()
