"""Lift `Cluster[Tag]` locations into member-keyed collections on a process (pure IR pass).

The simulator runs a cluster as N separate places, each with its own state. Spark runs one
application, so before planning every node located on a cluster (or on a tick of one) is
rewritten into an equivalent node on a synthetic process `Process[Tag*N]` whose
collections are keyed by the member index (an `int`, 0..N-1):

* `Stream[T]` -> `KeyedStream[int, T]`, `KeyedStream[K, V]` -> `KeyedStream[(int, K), V]`,
* `Singleton[T]` / `OptionalSingleton[T]` -> `KeyedSingleton[int, T]` plus a *default*: the
  value a member without an entry has (a fold's `init`, a count's 0, a map of those; an
  optional's default is empty), applied where a member's value is read,
* `KeyedSingleton[K, V]` -> `KeyedSingleton[(int, K), V]`.

Keyed operators apply user functions to values per key (`hydrolite.kernels`), so every
element-wise function, fold and reduce keeps its meaning per member. The members' ticks
run together in one micro-batch (members are asynchronous: that is one legal schedule);
a member that had nothing new in a batch produces no element, as in the model where it
does not run. Network sends become re-keyings (`n.Send` stays, the identity on Spark):
`broadcast` pairs each element with every member, `demux` routes `(member, x)` to that
member (a member out of range fails the batch with the simulator's message),
`demux_by_key` keys each `(k, v)` by `(owner of k, k)` (`locations.sharding`), and a send
from a cluster is keyed by `MemberId(sender)`, as in the simulator.

What has no exact lifted form (a singleton's value read when a member may not have run:
`into_stream` of a non-optional, `latest` of a tick body, singleton cycles and
`defer_tick`, `zip`, `get`, tick constants, the entries of a keyed singleton snapshotted
from outside the tick) is refused with a `SparkPlanError` naming the operator, its line and
why; the simulator runs such programs.

Ports: a cluster source is a keyed port whose key is the member index (records
`(member, value)`, files `key` + `value` columns); a cluster sink writes `(member, element)`
pairs, `element` being what a process sink would write.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import GenericAlias
from typing import Any, Final

from ...ir import nodes as n
from ...ir.graph import AlignedRegion, AlignPointInfo, Flow
from ...ir.ids import AlignId, ClusterId, CycleId, LocId, ProcessId, TickId, TopId, top_of
from ...ir.meta import Kind, Meta
from ...ir.roles import Role, Roles, classify
from ...locations.locations import MemberId
from .cluster_fns import (
    CheckMember,
    Default,
    Everyone,
    EveryoneFrom,
    Fill,
    MemberFirst,
    Owner,
    OwnerFrom,
    Route,
    RouteFrom,
    const,
    drop_key,
    join_key,
    not_none,
    split_key,
    then,
    to_sender,
    unwrap_or,
    wrap,
)
from .stages import SparkPlanError, where

DEFAULT_MEMBERS: Final = 2  # as the simulator (`hydrolite.sim.program.DEFAULT_CLUSTER_SIZE`)


# ------------------------------------------------------------------ members
def has_clusters(flow: Flow) -> bool:
    """Whether any node or port of `flow` lives on a cluster."""
    nodes = [*flow.nodes(), *flow.sources.values()]
    return any(isinstance(top_of(x.meta.loc), ClusterId) for x in nodes)


def cluster_tags(flow: Flow) -> list[str]:
    """The tags of the clusters `flow` uses, in a deterministic order."""
    nodes = [*flow.nodes(), *flow.sources.values()]
    tops = {top_of(x.meta.loc) for x in nodes}
    return sorted(t.tag for t in tops if isinstance(t, ClusterId))


def member_counts(flow: Flow, cluster_sizes: Mapping[str, int] | None) -> dict[str, int]:
    """Members per cluster tag (default 2, as the simulator); unknown tags and sizes < 1 are errors."""
    sizes = dict(cluster_sizes or {})
    tags = cluster_tags(flow)
    unknown = sorted(set(sizes) - set(tags))
    if unknown:
        raise SparkPlanError(
            f"cluster_sizes names {', '.join(map(repr, unknown))}, but the program's clusters are "
            f"{', '.join(map(repr, tags)) or 'none'}",
            fix="give the tag class's name of a cluster the program creates (flow.cluster(Tag))",
        )
    out = {}
    for tag in tags:
        size = sizes.get(tag, DEFAULT_MEMBERS)
        if not isinstance(size, int) or size < 1:
            raise SparkPlanError(
                f"cluster {tag!r} needs at least one member, got {size!r}", fix=f"--cluster-members {tag}=N with N >= 1"
            )
        out[tag] = size
    return out


def members_process(cid: ClusterId, size: int) -> ProcessId:
    """The synthetic process that runs every member of `cid` (keyed by member index)."""
    return ProcessId(f"{cid.tag}*{size}", cid.index)


# ------------------------------------------------------------------ the rewriting
def _tuple_of(a: Any, b: Any) -> Any:
    return None if a is None or b is None else GenericAlias(tuple, (a, b))


class _Lifter:
    """One run of the pass: lifts the nodes of an aligned flow in topological order."""

    def __init__(self, flow: Flow, sizes: dict[str, int], roles: Roles) -> None:
        self.flow = flow
        self.sizes = sizes
        self.roles = roles
        self.new: dict[int, n.Node] = {}  # id(original) -> lifted node
        self.defaults: dict[int, Default | None] = {}  # id(original singleton on a cluster) -> default
        self.port_nodes: dict[str, n.Node] = {}  # cluster source port -> its lifted (keyed) Source

    # ------------------------------------------------------------- ids
    def top(self, t: TopId) -> TopId:
        return members_process(t, self.sizes[t.tag]) if isinstance(t, ClusterId) else t

    def loc(self, loc: LocId) -> LocId:
        return TickId(self.top(loc.outer), loc.index) if isinstance(loc, TickId) else self.top(loc)

    def tick(self, t: TickId) -> TickId:
        return TickId(self.top(t.outer), t.index)

    def align(self, a: AlignId | None) -> AlignId | None:
        return None if a is None else AlignId(self.top(a.loc), a.index)

    def cycle(self, c: CycleId) -> CycleId:
        return CycleId(self.tick(c.tick), c.index)

    def size_of(self, loc: LocId) -> int:
        t = top_of(loc)
        assert isinstance(t, ClusterId)
        return self.sizes[t.tag]

    # ------------------------------------------------------------- helpers
    def lifted_meta(self, m: Meta) -> Meta:
        loc = self.loc(m.loc)
        if m.kind is Kind.STREAM:
            return m.but(loc=loc, kind=Kind.KEYED_STREAM, key=int)
        if m.kind in (Kind.SINGLETON, Kind.OPTIONAL):
            return m.but(loc=loc, kind=Kind.KEYED_SINGLETON, key=int)
        return m.but(loc=loc, key=_tuple_of(int, m.key))

    def mk(self, cls: type[n.Node], like: n.Node, meta: Meta, **fields: Any) -> n.Node:
        """A helper node standing for part of `like` (its site: errors name the user's line)."""
        return cls(meta=meta, site=like.site, **fields)

    def stream_meta(self, like: n.Node, elem: Any = None, *, ordered: bool | None = None) -> Meta:
        m = like.meta
        return Meta(Kind.STREAM, self.loc(m.loc), m.bounded, m.ordered if ordered is None else ordered, elem)

    def rekeyed(self, like: n.Node, pairs: n.Node, key: Any, elem: Any) -> n.Node:
        """`into_keyed()` of a stream of (key, value) pairs, at `like`'s place."""
        m = pairs.meta
        return self.mk(n.IntoKeyed, like, m.but(kind=Kind.KEYED_STREAM, key=key, elem=elem), input=pairs)

    def entries(self, like: n.Node, c: n.Node) -> n.Node:
        m = c.meta
        ordered = m.ordered if m.kind.streamlike else False
        return self.mk(n.Entries, like, Meta(Kind.STREAM, m.loc, m.bounded, ordered, _tuple_of(m.key, m.elem)), input=c)

    def mapped(
        self, like: n.Node, c: n.Node, f: Callable[..., Any], elem: Any = None, cls: type[n.Node] = n.Map
    ) -> n.Node:
        return self.mk(cls, like, c.meta.but(elem=elem), input=c, f=f)

    def refuse(self, node: n.Node, why: str, fix: str) -> SparkPlanError:
        return SparkPlanError(
            f"{node.op}() on {top_of(node.meta.loc)} at {where(node)}: {why}; the Spark planner runs a cluster as "
            "one process keyed by member, where this has no exact equivalent",
            site=node.site,
            fix=fix,
        )

    def from_batches_only(self, node: n.Node) -> bool:
        """Whether a tick value has entries only for members that ran in this tick: it derives,
        within its tick, from batches alone (no snapshot, cycle, defer, constant, carried state)."""
        todo, seen = [node], set()
        while todo:
            x = todo.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            role = self.roles.of(x).role
            if isinstance(x, n.Batch) and role is Role.ENTRY:
                continue
            if role is not Role.BODY or isinstance(x, (n.Snapshot, n.CycleSource, n.DeferTick, n.TickConstant)):
                return False
            todo.extend(x.children)
        return True

    # ------------------------------------------------------------- driver
    def run(self) -> Flow:
        for node in self.flow.nodes():
            self.new[id(node)] = self.lift(node)
        for src in self.flow.sources.values():
            if id(src) not in self.new:
                self.new[id(src)] = self.lift(src)
        f = self.flow
        roots = tuple(self.new[id(r)] for r in f.roots)
        sources = {p: self.new[id(s)] for p, s in f.sources.items()}
        sinks = {p: self.new[id(s)] for p, s in f.sinks.items()}
        regions = tuple(
            AlignedRegion(
                align=AlignId(self.top(r.align.loc), r.align.index),
                tick=self.tick(r.tick),
                merged_ticks=tuple(self.tick(t) for t in r.merged_ticks),
                nodes=tuple(self.new[id(x)] for x in r.nodes),
                site=r.site,
            )
            for r in f.regions
        )
        return dataclasses.replace(
            f,
            roots=roots,
            sources=sources,  # type: ignore[arg-type]  # lifted sources are Sources
            sinks=sinks,  # type: ignore[arg-type]
            ticks=tuple(self.tick(t) for t in f.ticks),
            align_points=tuple(AlignPointInfo(AlignId(self.top(a.id.loc), a.id.index), a.site) for a in f.align_points),
            regions=regions,
            _order=[],
        )

    def copy(self, node: n.Node, meta: Meta) -> n.Node:
        """`node` with lifted inputs, ids and `meta`."""
        changes: dict[str, Any] = {"meta": meta}
        for fl in dataclasses.fields(node):
            v = getattr(node, fl.name)
            if isinstance(v, n.Node):
                changes[fl.name] = self.new[id(v)]
            elif isinstance(v, TickId):
                changes[fl.name] = self.tick(v)
            elif isinstance(v, AlignId):
                changes[fl.name] = self.align(v)
            elif isinstance(v, CycleId):
                changes[fl.name] = self.cycle(v)
            elif isinstance(v, (ProcessId, ClusterId)):
                changes[fl.name] = self.top(v)
        return dataclasses.replace(node, **changes)

    def lift(self, node: n.Node) -> n.Node:
        if isinstance(node, n.Send):
            return self.send(node)
        if not isinstance(top_of(node.meta.loc), ClusterId):
            return self.copy(node, node.meta)
        return self.on_cluster(node)

    # ------------------------------------------------------------- network
    def send(self, node: n.Send) -> n.Node:
        src = node.input
        c = self.new[id(src)]
        from_cluster = isinstance(top_of(src.meta.loc), ClusterId)
        to_cluster = isinstance(node.dest, ClusterId)
        dest = self.loc(node.dest)
        elem = node.meta.elem
        if not from_cluster and not to_cluster:  # process -> process: unchanged
            return self.copy(node, node.meta)
        if not to_cluster:  # every member -> one process: keyed by MemberId(sender)
            pairs = self.mapped(node, self.entries(node, c), to_sender, _tuple_of(MemberId, elem))
            sent = self.mk(
                n.Send, node, pairs.meta.but(loc=dest, bounded=False), input=pairs, dest=dest, mode=n.SendMode.DIRECT
            )
            return self.rekeyed(node, sent, MemberId, elem)
        size = self.size_of(node.dest)
        if node.mode is n.SendMode.BY_KEY:  # (k, v) -> ((owner of k, k), v): a keyed stream on the cluster
            owned = _tuple_of(int, node.meta.key)
            owner = OwnerFrom(size) if from_cluster else Owner(size)
            pairs = self.mapped(node, self.entries(node, c), owner, _tuple_of(owned, elem))
            meta = pairs.meta.but(loc=dest, bounded=False, ordered=node.meta.ordered)
            sent = self.mk(n.Send, node, meta, input=pairs, dest=dest, mode=n.SendMode.DIRECT)
            return self.rekeyed(node, sent, owned, elem)
        demux = node.mode is n.SendMode.DEMUX
        if from_cluster:
            key: Any = _tuple_of(int, MemberId)
            ent = self.entries(node, c)
            if demux:
                pairs = self.mapped(node, ent, RouteFrom(Route(size)), _tuple_of(key, elem))
            else:
                pairs = self.mapped(node, ent, EveryoneFrom(size), _tuple_of(key, elem), n.FlatMap)
        else:
            key = int
            if demux:
                pairs = self.mapped(node, c, Route(size), _tuple_of(key, elem))
            else:
                pairs = self.mapped(node, c, Everyone(size), _tuple_of(key, elem), n.FlatMap)
        sent = self.mk(
            n.Send, node, pairs.meta.but(loc=dest, bounded=False), input=pairs, dest=dest, mode=n.SendMode.DIRECT
        )
        return self.rekeyed(node, sent, key, elem)

    # ------------------------------------------------------------- cluster nodes
    def on_cluster(self, node: n.Node) -> n.Node:
        meta = self.lifted_meta(node.meta)
        kind = node.meta.kind
        ins = [self.new[id(c)] for c in node.children]
        in_kinds = [c.meta.kind for c in node.children]
        single = kind in (Kind.SINGLETON, Kind.OPTIONAL)
        if isinstance(node, n.Source):
            return self.source(node, meta)
        if isinstance(node, n.SourceIter):
            size = self.size_of(node.meta.loc)
            values = tuple((i, v) for i in range(size) for v in node.values)
            it = self.mk(n.SourceIter, node, self.stream_meta(node, _tuple_of(int, node.meta.elem)), values=values)
            return self.rekeyed(node, it, int, node.meta.elem)
        if isinstance(node, n.Sink):
            c = ins[0]
            if in_kinds[0] is Kind.KEYED_STREAM:  # ((m, k), v) -> (m, (k, v))
                kv = _tuple_of(node.input.meta.key, node.input.meta.elem)
                c = self.rekeyed(node, self.mapped(node, self.entries(node, c), join_key, _tuple_of(int, kv)), int, kv)
            return dataclasses.replace(node, meta=c.meta, input=c)  # a keyed sink: (member, element) pairs
        if isinstance(node, (n.Map, n.Filter, n.FilterMap, n.FlatMap, n.Inspect)):
            return self.elementwise(node, meta, ins[0], in_kinds[0])
        if isinstance(node, (n.Fold, n.Reduce, n.Count, n.First, n.Last)):
            if single:
                self.defaults[id(node)] = (
                    const(node.run_init())
                    if isinstance(node, n.Fold)
                    else const(0)
                    if isinstance(node, n.Count)
                    else None
                )
            return self.copy(node, meta)
        if isinstance(node, n.Sort):  # sorted per member: by (member, the user's key)
            ent = self.entries(node, ins[0])
            by = self.mk(n.Sort, node, ent.meta.but(ordered=True), input=ent, key=MemberFirst(node.key))
            return self.rekeyed(node, by, int, node.meta.elem)
        if isinstance(node, (n.Enumerate, n.Unique, n.Batch, n.AllTicks, n.ReleaseAligned)):
            return self.copy(node, meta)
        if isinstance(node, (n.AssumeOrdering, n.WeakenOrdering, n.AlignedAt, n.Snapshot)):
            self.pass_default(node)
            return self.copy(node, meta)
        if isinstance(node, n.Latest):
            if self.roles.of(node.input).role is not Role.CARRIED:
                raise self.refuse(
                    node,
                    "a member that does not run in a micro-batch would lose its latest value (all members share the batch)",
                    "read the tick's value with all_ticks() of a stream, or keep the value in a top-level fold",
                )
            self.pass_default(node)
            return self.copy(node, meta)
        if isinstance(node, (n.DeferTick, n.CycleSource, n.CycleSink)):
            if not kind.streamlike:
                raise self.refuse(
                    node,
                    "a value carried to a member's next run would also advance for members that did not run",
                    "carry streams (tick.stream_cycle(), defer_tick() of a stream), or keep the value in a top-level fold",
                )
            return self.copy(node, meta)
        if isinstance(node, n.IntoKeyed):
            pairs = self.mapped(node, self.entries(node, ins[0]), split_key, _tuple_of(meta.key, meta.elem))
            return self.rekeyed(node, pairs, meta.key, meta.elem)
        if isinstance(node, (n.Entries, n.Values, n.Keys)):
            return self.reshape(node, ins[0], in_kinds[0])
        if isinstance(node, n.IntoStream):
            if self.defaults.get(id(node.input)) is not None or not self.from_batches_only(node.input):
                raise self.refuse(
                    node,
                    "a member's value is emitted in every micro-batch whether or not that member ran, or has a "
                    "value without an entry (a fold's init, a count's 0)",
                    "pair the value with a stream of the member (cross_singleton), or use an optional computed from "
                    "the tick's batches only (reduce/first/last of a batch)",
                )
            return self.rekeyed(node, self.entries(node, ins[0]), int, node.meta.elem)
        if isinstance(node, n.IntoSingleton):
            self.defaults[id(node)] = unwrap_or(self.defaults.get(id(node.input)), None)
            return ins[0]
        if isinstance(node, n.UnwrapOr):
            self.defaults[id(node)] = unwrap_or(self.defaults.get(id(node.input)), node.default)
            return ins[0]
        if isinstance(node, n.CrossSingleton):
            return self.cross_singleton(node, meta, ins)
        if isinstance(node, n.KeyedLookup):
            return self.copy(node, meta)
        if isinstance(node, n.MergeUnordered):
            return self.copy(node, meta)
        if isinstance(node, n.Chain):
            both = [self.entries(node, c) for c in ins]
            ch = self.mk(n.Chain, node, both[0].meta.but(elem=None), left=both[0], right=both[1])
            return self.rekeyed(node, ch, int, node.meta.elem)
        if isinstance(node, (n.Join, n.AntiJoin, n.CrossProduct)):
            return self.binary_by_member(node, ins)
        raise self.refuse(
            node,
            "each member's value would be read while another member may not have run"
            if single or kind is Kind.KEYED_SINGLETON
            else "it is not lifted to member-keyed collections yet",
            "simulate this program with hydrolite.sim, or pair singletons with a stream of the member (cross_singleton)",
        )

    def pass_default(self, node: n.Node) -> None:
        if node.meta.kind in (Kind.SINGLETON, Kind.OPTIONAL):
            self.defaults[id(node)] = self.defaults.get(id(node.children[0]))

    def source(self, node: n.Source, meta: Meta) -> n.Node:
        """A keyed port whose key is the member index: records (member, value), or
        (member, (key, value)) for a keyed source; a record for a missing member fails the batch."""
        m = node.meta
        elem = _tuple_of(m.key, m.elem) if m.kind.keyed else m.elem
        src = dataclasses.replace(node, meta=meta.but(key=int, elem=elem))
        size = self.size_of(m.loc)
        checked = self.mapped(node, self.entries(node, src), CheckMember(node.port, size), _tuple_of(int, elem))
        if m.kind.keyed:
            pairs = self.mapped(node, checked, split_key, _tuple_of(meta.key, m.elem))
            out = self.rekeyed(node, pairs, meta.key, m.elem)
        else:
            out = self.rekeyed(node, checked, int, m.elem)
        self.port_nodes[node.port] = src
        return out

    def elementwise(self, node: n.Node, meta: Meta, c: n.Node, in_kind: Kind) -> n.Node:
        assert isinstance(node, (n.Map, n.Filter, n.FilterMap, n.FlatMap, n.Inspect))
        if in_kind not in (Kind.SINGLETON, Kind.OPTIONAL):
            return self.copy(node, meta)
        d = self.defaults.get(id(node.input))
        if isinstance(node, n.FlatMap):
            raise self.refuse(
                node,
                "a member's value would be turned into elements in every micro-batch whether or not that member ran",
                "flat_map a stream of the member instead (cross_singleton, then flat_map)",
            )
        if isinstance(node, n.FilterMap):  # = map, then drop None (keyed singletons have map and filter)
            self.defaults[id(node)] = None if d is None else then(d, n.FilterMap, node.f)
            m = self.mk(n.Map, node, meta.but(elem=None), input=c, f=node.f)
            return self.mk(n.Filter, node, meta, input=m, f=not_none)
        self.defaults[id(node)] = None if d is None or isinstance(node, n.Inspect) else then(d, type(node), node.f)
        if isinstance(node, n.Inspect) and d is not None:
            self.defaults[id(node)] = d
        return self.copy(node, meta)

    def reshape(self, node: n.Node, c: n.Node, in_kind: Kind) -> n.Node:
        if in_kind is Kind.KEYED_SINGLETON and not self.from_batches_only(node.children[0]):
            raise self.refuse(
                node,
                "the entries of a keyed singleton snapshotted into the tick would be emitted for every member in "
                "every micro-batch, also for members that did not run",
                "look the keys up with lookup_keyed_singleton() from a stream of the member",
            )
        m = node.meta
        if isinstance(node, n.Keys):
            ks = self.mk(n.Keys, node, self.stream_meta(node, _tuple_of(int, m.elem), ordered=m.ordered), input=c)
            return self.rekeyed(node, ks, int, m.elem)
        f = join_key if isinstance(node, n.Entries) else drop_key
        return self.rekeyed(node, self.mapped(node, self.entries(node, c), f, _tuple_of(int, m.elem)), int, m.elem)

    def cross_singleton(self, node: n.CrossSingleton, meta: Meta, ins: list[n.Node]) -> n.Node:
        left, right = ins
        if node.left.meta.kind is not Kind.STREAM:
            raise self.refuse(node, "its left side is not a stream", "cross a stream with the singleton")
        d = self.defaults.get(id(node.right))
        if d is None:  # a member without an entry has an empty optional: no pair
            return self.mk(n.KeyedLookup, node, meta, left=left, right=right, keep_missing=False)
        wrapped = self.mk(n.Map, node, right.meta.but(elem=None), input=right, f=wrap)
        looked = self.mk(n.KeyedLookup, node, meta.but(elem=None), left=left, right=wrapped, keep_missing=True)
        return self.mk(n.FilterMap, node, meta, input=looked, f=Fill(d))

    def binary_by_member(self, node: n.Node, ins: list[n.Node]) -> n.Node:
        """join / anti_join / cross_product per member: the member joins the key."""
        m = node.meta
        if isinstance(node, n.CrossProduct):
            both = [self.entries(node, c) for c in ins]  # (m, a), (m, b)
            joined = self.mk(n.Join, node, both[0].meta.but(elem=None), left=both[0], right=both[1])
            return self.rekeyed(node, joined, int, m.elem)
        left = self.mapped(node, self.entries(node, ins[0]), split_key)  # ((m, k), v)
        right = self.entries(node, ins[1])
        if isinstance(node, n.Join):
            right = self.mapped(node, right, split_key)
        out = self.mk(type(node), node, left.meta.but(elem=None, ordered=m.ordered), left=left, right=right)
        return self.rekeyed(node, self.mapped(node, out, join_key), int, m.elem)


@dataclass(frozen=True)
class Lifted:
    """The result of the pass: the flow on processes only, and what it did."""

    flow: Flow
    members: dict[str, int]  # cluster tag -> number of members
    processes: dict[str, ProcessId]  # cluster tag -> the process running its members
    ports: dict[str, str]  # cluster port -> cluster tag (sources and sinks)


def lift_clusters(flow: Flow, cluster_sizes: Mapping[str, int] | None = None) -> Lifted:
    """Rewrite every cluster node of an aligned `flow` onto a member-keyed process (see module doc)."""
    sizes = member_counts(flow, cluster_sizes)
    lifter = _Lifter(flow, sizes, classify(flow))
    out = lifter.run()
    out = dataclasses.replace(out, sources={**out.sources, **lifter.port_nodes})  # type: ignore[dict-item]
    processes: dict[str, ProcessId] = {}
    for x in [*flow.nodes(), *flow.sources.values()]:
        t = top_of(x.meta.loc)
        if isinstance(t, ClusterId):
            processes[t.tag] = members_process(t, sizes[t.tag])
    ports = {
        p: top.tag
        for p, x in [*flow.sources.items(), *flow.sinks.items()]
        if isinstance(top := top_of(x.meta.loc), ClusterId)
    }
    return Lifted(out, sizes, processes, ports)
