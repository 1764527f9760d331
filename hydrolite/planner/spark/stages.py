"""Cut an aligned `Flow` into stages: one Spark Structured Streaming query each.

Pure planning (no Spark needed, so `hydrolite plan` is instant):

* every tick left after alignment merging is one stage; the top-level operators upstream
  of its `batch` / `snapshot` entries are fused into it (a source read by two stages is
  read twice, each query with its own offsets: that is the asynchrony the model promises),
  and so are the top-level operators downstream of its `all_ticks` / `latest` /
  `release_aligned` exits, so every output of a tick is written by the same micro-batch;
* the remaining top-level pipelines from sources to sinks (no tick on the way) become one
  stage per group of sinks sharing an upstream;
* an edge from a node computed in one stage to a node of another (e.g. one tick's
  `all_ticks()` batched into another tick) is a *channel*: the producing query writes the
  node's per-batch output under the checkpoint, the consuming query reads it as a source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from ...errors import FlowError
from ...ir import nodes as n
from ...ir.graph import AlignedRegion, Flow, parents_of
from ...ir.ids import ClusterId, TickId
from ...ir.roles import Role, Roles, classify
from ...ir.stable import Identity, identities
from ...ir.union_find import UnionFind

if TYPE_CHECKING:
    from .placement import StagePlacement


def where(node: n.Node) -> str:
    """`file.py:12` of the operator's call (`CallSite.label`)."""
    return node.site.label


@dataclass
class Channel:
    """A node computed by one stage and read by others, carried through checkpointed files."""

    name: str
    node: n.Node
    producer: int
    consumers: list[int] = field(default_factory=list)
    #: a keyed singleton that crosses as the keys each batch updated, not whole versions
    #: (decided once its producer's state is placed: `channel_versions.settle_channels`)
    deltas: bool = False
    #: of deltas through a `filter` / `filter_map`: the state whose updated keys the channel's
    #: value lacks cross as tombstones (`settle_channels`)
    gone_from: n.Node | None = None


@dataclass
class Stage:
    """One Structured Streaming query (or one batch job when it reads no unbounded port)."""

    index: int
    name: str
    tick: TickId | None  # the (merged) tick this query runs; None for a top-level pipeline
    merged_ticks: tuple[TickId, ...] = ()
    regions: tuple[AlignedRegion, ...] = ()
    nodes: list[n.Node] = field(default_factory=list)  # topological; includes fused upstreams
    sources: list[n.Source] = field(default_factory=list)  # ports read, in union order
    channels_in: list[Channel] = field(default_factory=list)
    channels_out: list[Channel] = field(default_factory=list)
    roles: Roles = field(default_factory=lambda: Roles({}))  # of the whole aligned flow
    #: node -> the key its state is stored under (its stable identity, `ir.stable`; a
    #: checkpoint written by an earlier version of the program may map it to an older key)
    state_keys: dict[int, str] = field(default_factory=dict)
    #: the names of the inputs in the order of the query's union (Spark's offset log is
    #: positional): sorted for a new query, as recorded for one resumed from a checkpoint
    input_order: list[str] = field(default_factory=list)
    base_name: str = ""  # the planner's name; `name` is the checkpoint directory (`upgrade`)
    #: where each stateful node's state lives (executors / driver, `placement.place`)
    placement: StagePlacement | None = None

    def __post_init__(self) -> None:
        self.base_name = self.base_name or self.name

    @property
    def deferred(self) -> list[n.DeferTick]:
        """Deferred streams: the next run of the tick is observable even without new input."""
        return [x for x in self.nodes if isinstance(x, n.DeferTick) and x.meta.kind.streamlike]

    @property
    def has_heartbeat(self) -> bool:
        """Whether the query reads its own heartbeat feed (see `runtime.HEARTBEAT`)."""
        return self.streaming and bool(self.deferred)

    @property
    def input_names(self) -> list[str]:
        """Source ports and channels this query reads (`channel:<name>`), in union order."""
        names = [x.port for x in self.sources] + [f"channel:{c.name}" for c in self.channels_in]
        if sorted(self.input_order) == sorted(names):
            return list(self.input_order)
        return sorted(names)

    @property
    def sinks(self) -> list[n.Sink]:
        return [x for x in self.nodes if isinstance(x, n.Sink)]

    @property
    def stateful(self) -> list[n.Node]:
        """Nodes whose value depends on earlier batches (kept in the versioned state store):
        exactly the nodes `hydrolite.ir.roles` calls stateful."""
        return [x for x in self.nodes if self.roles.stateful(x)]

    @property
    def streaming(self) -> bool:
        return bool(self.sources or self.channels_in)

    def member(self, node: n.Node) -> bool:
        return any(x is node for x in self.nodes)

    def needs_order(self, start: n.Node) -> bool:
        """Whether anything in this stage depends on the arrival order of `start`'s elements.

        Order stops mattering at a NoOrder stream (entries/keys/values of a keyed stream,
        weaken_ordering, merge_unordered, ...) and at order-insensitive aggregates (count,
        commutative folds and reduces); it matters at everything else that ends the walk: a
        TotalOrder sink, an order-sensitive aggregate, a channel to another query. Inputs no
        one needs the order of skip computing it (a file input's arrival order costs a
        projection per batch)."""
        users: dict[int, list[n.Node]] = {}
        for x in self.nodes:  # (inputs from channels are not in `nodes`)
            for c in x.children:
                users.setdefault(id(c), []).append(x)
        shared = {id(c.node) for c in self.channels_out}
        todo, seen = [start], set()
        while todo:
            x = todo.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            if id(x) in shared:
                return True
            for u in users.get(id(x), []):
                if u.meta.kind.streamlike and not u.meta.ordered:
                    continue  # the order is forgotten here
                if isinstance(u, n.Count) or (isinstance(u, (n.Fold, n.Reduce)) and u.commutative):
                    continue
                if isinstance(u, n.Sink) or not u.meta.kind.streamlike:
                    return True  # an ordered output, or an order-sensitive aggregate
                todo.append(u)
        return False


@dataclass(frozen=True)
class TickHome:
    """The stage of a (merged) tick."""

    tick: TickId

    @property
    def name(self) -> str:
        return f"tick{self.tick.index}"


@dataclass(frozen=True)
class MergeHome:
    """The stage of top-level nodes that combine the outputs of several ticks."""

    ticks: frozenset[TickHome]

    @property
    def name(self) -> str:
        return "merge_" + "_".join(t.name for t in sorted(self.ticks, key=lambda t: t.tick.index))


@dataclass(frozen=True)
class PipelineHome:
    """The stage of a top-level pipeline (sinks sharing an upstream, no tick on the way)."""

    group: int

    @property
    def name(self) -> str:
        return f"pipeline{self.group}"


StageHome = TickHome | MergeHome | PipelineHome


@dataclass
class Plan:
    """The stages of a program, in a deterministic order."""

    flow: Flow  # after alignment
    stages: list[Stage]
    channels: list[Channel]
    identities: dict[int, Identity] = field(default_factory=dict)  # node -> stable identity
    #: cluster tag -> members, when the program's clusters were lifted (`cluster.py`)
    cluster_members: dict[str, int] = field(default_factory=dict)
    cluster_ports: dict[str, str] = field(default_factory=dict)  # cluster port -> its cluster's tag

    def stage_of_sink(self, port: str) -> Stage:
        for s in self.stages:
            if any(k.port == port for k in s.sinks):
                return s
        raise KeyError(port)


class SparkPlanError(FlowError):
    """The program uses something the Spark planner cannot run."""

    code: ClassVar[str] = "HL-SPARK-PLAN"


def _check_supported(flow: Flow, roles: Roles) -> None:
    for node in flow.nodes():
        loc = node.meta.loc
        top = loc.outer if isinstance(loc, TickId) else loc
        if isinstance(top, ClusterId):  # `cluster.lift_clusters` runs first: none may be left
            raise SparkPlanError(f"{node.op}() is still on {top} after lifting clusters", site=node.site)
    for node in flow.nodes():
        if roles.of(node).role is Role.ENTRY:
            _check_no_self_feedback(node)
        if isinstance(node, n.FlatMap) and roles.of(node).role is Role.TOP and not node.input.meta.kind.streamlike:
            _check_versions_per_batch(node, roles)
        if isinstance(node, n.AntiJoin) and not node.left.meta.in_tick:
            _check_whole_keys(node, roles)


def _check_whole_keys(node: n.AntiJoin, roles: Roles) -> None:
    """Refuse a top-level `anti_join` whose keys (a bounded stream: literals) pass through an
    operator that keeps state: each batch evaluates the keys whole again (`exec.whole`), which
    only stateless operators over `source_iter()` allow."""
    for x in _top_level_upstream(node.right, lambda x: False):
        if roles.stateful(x) and not isinstance(x, n.SourceIter):
            raise SparkPlanError(
                f"{node.op}() at top level needs all its keys in every micro-batch, and they pass through {x.op}() "
                f"(at {where(x)}), which keeps state across batches",
                site=node.site,
                fix="build the keys from source_iter() and stateless operators (map, filter, chain ...), "
                "or batch() both sides into a tick",
            )


def _check_no_self_feedback(entry: n.Node) -> None:
    """Refuse an entry into tick T that reads T's own output through the top level.

    In the model, `all_ticks()` / `latest()` of T reach the top level only after a run of T
    completes, so T reads them in a later run. One micro-batch query computes T's exits and
    entries in the same batch and would read the current run instead: refuse rather than
    answer differently (the simulator runs such programs)."""
    tick = entry.meta.loc
    for x in _top_level_upstream(entry.children[0], lambda x: False):
        if any(c.meta.loc == tick for c in x.children):
            raise SparkPlanError(
                f"{entry.op}() into {tick} reads {x.op}() of the same tick (at {where(x)}): the tick would read "
                "its own output in the same micro-batch, while the model reads it in a later run",
                site=entry.site,
                fix="carry values to the next run with defer_tick() or tick.singleton_cycle()/stream_cycle()",
            )


def _top_level_upstream(start: n.Node, skip: Callable[[n.Node], bool]) -> Iterator[n.Node]:
    """`start` and its transitive inputs at top level (each once), not walking past nodes
    inside ticks or nodes `skip` rejects."""
    todo, seen = [start], set()
    while todo:
        x = todo.pop()
        if id(x) in seen or x.meta.in_tick or skip(x):
            continue
        seen.add(id(x))
        yield x
        todo.extend(x.children)


def _check_versions_per_batch(node: n.Node, roles: Roles) -> None:
    """Refuse a stream made from every version of a top-level singleton aggregated from a
    stream: the model emits one output per version (one per input element), while a
    micro-batch computes one version per batch (a singleton from `latest()` is fine: one
    version per tick run is one per micro-batch)."""
    for x in _top_level_upstream(node.children[0], lambda x: x.meta.kind.streamlike):
        if x.keeps_history() and roles.of(x).role is Role.TOP and any(c.meta.kind.streamlike for c in x.children):
            raise SparkPlanError(
                f"{node.op}() of a top-level singleton emits once per version of {x.op}() (at {where(x)}), one per input "
                "element; a micro-batch computes only the batch's last version",
                site=node.site,
                fix="batch() the input into a tick and aggregate and flat_map there, or snapshot() the singleton into a tick",
            )


def plan_flow(flow: Flow, cluster_sizes: Mapping[str, int] | None = None) -> Plan:
    """Align `flow` (if not done yet), lift its clusters onto member-keyed processes
    (`cluster.py`; `cluster_sizes`: members per cluster tag, default 2) and cut it into stages."""
    from ...passes.align import align_flow
    from .cluster import has_clusters, lift_clusters

    aligned = flow if flow.aligned else align_flow(flow)
    lifted = lift_clusters(aligned, cluster_sizes) if has_clusters(aligned) or cluster_sizes else None
    if lifted is not None:
        aligned = lifted.flow
    roles = classify(aligned)
    _check_supported(aligned, roles)
    plan = _Cutter(aligned, roles).cut()
    if lifted is not None:
        plan.cluster_members, plan.cluster_ports = lifted.members, lifted.ports
    from .placement import place  # (placement reads stages: imported here, not at the top)

    for stage in plan.stages:
        stage.placement = place(stage)
    from .channel_versions import settle_channels

    settle_channels(plan)  # how a keyed singleton read by another query crosses (channel_versions.py)
    return plan


class _Cutter:
    def __init__(self, flow: Flow, roles: Roles) -> None:
        self.roles = roles
        self.flow = flow
        self.order = flow.nodes()
        self.parents = parents_of(self.order)
        self.home: dict[int, StageHome] = {}  # node -> its stage, for nodes computed in one stage

    def cut(self) -> Plan:
        ids = identities(self.order)
        self._assign_homes()
        keys = self._stage_keys()
        stages = [self._new_stage(i, k) for i, k in enumerate(keys)]
        for st in stages:
            st.roles = self.roles
        by_key = {k: s for k, s in zip(keys, stages)}
        members: dict[StageHome, set[int]] = {k: set() for k in keys}
        channels: dict[int, Channel] = {}
        for node in reversed(self.order):  # users first, so needs propagate upstream
            for key in self._needed_by(node, members):
                members[key].add(id(node))
        for node in self.order:
            for key in self._stages_of(node, members):
                for child in node.children:
                    ck = self.home.get(id(child))
                    if ck is not None and ck != key:
                        ch = channels.get(id(child))
                        if ch is None:
                            ch = Channel(channel_name(ids[id(child)]), child, by_key[ck].index)
                            channels[id(child)] = ch
                            by_key[ck].channels_out.append(ch)
                        if by_key[key].index not in ch.consumers:
                            ch.consumers.append(by_key[key].index)
                            by_key[key].channels_in.append(ch)
        for key, stage in by_key.items():
            produced = {id(c.node) for c in stage.channels_in}
            stage.nodes = [x for x in self.order if id(x) in members[key] and id(x) not in produced]
            stage.sources = [x for x in stage.nodes if isinstance(x, n.Source)]
            stage.state_keys = {id(x): ids[id(x)].key for x in stage.nodes}
        return Plan(self.flow, stages, list(channels.values()), ids)

    # ------------------------------------------------------------- homes
    def _assign_homes(self) -> None:
        origin: dict[int, frozenset[TickHome]] = {}
        for node in self.order:
            if isinstance(node.meta.loc, TickId):
                origin[id(node)] = frozenset({TickHome(node.meta.loc)})
                self.home[id(node)] = TickHome(node.meta.loc)
                continue
            o: frozenset[TickHome] = frozenset()
            for c in node.children:
                o |= origin[id(c)]
            origin[id(node)] = o
            if len(o) == 1:
                self.home[id(node)] = next(iter(o))
            elif len(o) > 1:
                self.home[id(node)] = MergeHome(o)
        # pure top-level pipelines: sinks (and what they need) with no tick upstream
        groups: dict[int, int] = {}
        sinks = [r for r in self.flow.roots if isinstance(r, n.Sink) and id(r) not in self.home]
        uf: UnionFind[int] = UnionFind(rank=lambda i: i)  # a group is named by its first sink
        for i, s in enumerate(sinks):
            for up in _upstream(s):
                if id(up) in groups:
                    uf.union(groups[id(up)], i)
                else:
                    groups[id(up)] = i
        reps = sorted({uf.find(i) for i in range(len(sinks))})
        for i, s in enumerate(sinks):
            self.home[id(s)] = PipelineHome(reps.index(uf.find(i)))

    def _stage_keys(self) -> list[StageHome]:
        keys: list[StageHome] = []
        for node in self.order:
            k = self.home.get(id(node))
            if k is not None and k not in keys:
                keys.append(k)
        ticks = sorted((k for k in keys if isinstance(k, TickHome)), key=lambda k: k.tick.index)
        rest = sorted((k for k in keys if not isinstance(k, TickHome)), key=lambda k: k.name)
        return [*ticks, *rest]

    def _new_stage(self, i: int, key: StageHome) -> Stage:
        if isinstance(key, TickHome):
            tick = key.tick
            regions = tuple(r for r in self.flow.regions if r.tick == tick)
            merged: tuple[TickId, ...] = tuple(
                sorted({t for r in regions for t in r.merged_ticks} | {tick}, key=lambda t: t.index)
            )
            return Stage(i, key.name, tick, merged, regions)
        return Stage(i, key.name, None)

    def _all_ticks(self) -> list[TickId]:
        ticks = {x.meta.loc for x in self.order if isinstance(x.meta.loc, TickId)}
        return sorted((t for t in ticks if isinstance(t, TickId)), key=lambda t: t.index)

    # ------------------------------------------------------------- membership
    def _needed_by(self, node: n.Node, members: dict[StageHome, set[int]]) -> set[StageHome]:
        """The stages that compute `node`: its home, or every stage needing a source-derived node."""
        home = self.home.get(id(node))
        if home is not None:
            return {home}
        return {k for k, m in members.items() if any(id(p) in m for p in self.parents[id(node)])}

    def _stages_of(self, node: n.Node, members: dict[StageHome, set[int]]) -> list[StageHome]:
        return [k for k, m in members.items() if id(node) in m]


def channel_name(ident: Identity) -> str:
    """A channel's directory name: the producing node's stable key, safe in any Hadoop path."""
    return "ch_" + re.sub(r"[^A-Za-z0-9_.=-]", "_", ident.key.replace("#", "-"))


def _upstream(node: n.Node) -> list[n.Node]:
    from ...ir.graph import walk_up

    return list(walk_up(node))
