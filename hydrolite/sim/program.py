"""Compile a `Flow` into a `Program`: one `Op` per node, roles, places, tick plans, taint.

Compilation runs once per simulator; every explored execution reuses the program and only
allocates fresh per-place state (see `world.py`), so exploring is cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..ir import nodes as n
from ..ir.graph import Flow
from ..ir.ids import ClusterId, LocId, ProcessId, TickId, TopId, top_of
from ..ir.meta import Kind
from ..ir.roles import Role, role_of
from .asynchrony import EdgeBufferOp, KeyedSnapshotOp, buffer_edges, per_key_candidate
from .errors import SimUsageError
from .ops_time import (
    AllTicksOp,
    AssumeOrderingOp,
    CycleSinkOp,
    CycleSourceOp,
    DeferTickOp,
    Entry,
    LatestOp,
    SendOp,
    SinkOp,
    SourceOp,
)
from .registry import Op, evaluator_for

if TYPE_CHECKING:
    from .actions import ActionTable
    from .crash import CrashInfo
    from .por import Footprints

DEFAULT_CLUSTER_SIZE = 2


@dataclass(frozen=True)
class Place:
    """One running instance of a top-level location (a process, or one cluster member)."""

    top: TopId
    member: int | None
    label: str


@dataclass(eq=False)
class TickPlan:
    """What running one tick means: entries (choices), body, exits, commits."""

    tick: TickId
    places: list[int]
    entries: list[Entry] = field(default_factory=list)
    body: list[Op] = field(default_factory=list)  # BODY and CARRIED ops, inputs first
    exits: list[AllTicksOp | LatestOp] = field(default_factory=list)  # top-level readers of this tick
    commits: list[DeferTickOp | CycleSinkOp] = field(default_factory=list)  # end-of-run updates
    deferred: list[DeferTickOp] = field(default_factory=list)  # stream defers (keep the tick busy)

    @property
    def label(self) -> str:
        return str(self.tick)


@dataclass
class Program:
    """A compiled flow, shared by every execution of one simulator."""

    flow: Flow
    ops: list[Op]
    places: list[Place]
    places_of: dict[TopId, list[int]]
    ticks: list[TickPlan]
    sources: dict[str, SourceOp]
    sinks: dict[str, SinkOp]
    statics: dict[TopId, list[Op]]  # top-level bounded ops, inputs first
    initials: dict[TopId, list[Op]]  # top-level / carried ops with an initial version
    stateful: dict[TopId, list[Op]]  # ops whose state must be initialised per place
    orderings: list[AssumeOrderingOp | EdgeBufferOp]  # top-level buffers released by the scheduler
    deterministic_sinks: list[str]  # sinks whose type promises determinism and are untainted
    has_carried: bool
    bridges: dict[int, list[Op]] = field(default_factory=dict)  # carried op -> latest() exits reading it
    footprints: Footprints | None = None  # built by the first reduced execution
    crash_info: CrashInfo | None = None  # built by the first execution with crashes
    action_table: ActionTable | None = None  # built by the first execution

    def places_at(self, loc: LocId) -> list[int]:
        """The places running top-level location `loc` (one per cluster member)."""
        if isinstance(loc, TickId):
            raise SimUsageError(f"{loc} is a tick, not a process or cluster: it has no places of its own")
        return self.places_of[loc]


_PUSH_FROM = {Role.TOP, Role.STATIC, Role.EXIT}  # producers of top-level values


def _connect(op: Op, port: int, child: Op) -> None:
    """Record how `child`'s output reaches `op` (push edge, carried edge or tick-time read)."""
    r, c = op.role, child.role
    if c in _PUSH_FROM:
        if r in (Role.TOP, Role.ENTRY):
            child.consumers.append((op, port))
            return
        if r is Role.STATIC and c is Role.STATIC:
            return  # computed together at start-up
        if r is Role.CARRIED:
            raise SimUsageError(
                f"{op.node.op}() at {op.node.site} was placed in a tick while its input "
                f"{child.node.op}() at {child.node.site} stayed at top level without an aligned entry"
            )
    elif c is Role.CARRIED and r is Role.CARRIED:
        child.carried.append((op, port))
        return
    elif r in (Role.BODY, Role.CARRIED, Role.EXIT, Role.ENTRY):
        return  # read from the tick's values when the tick runs
    raise SimUsageError(f"unsupported edge: {child!r} -> {op!r}")


def _places(tops: list[TopId], cluster_sizes: Mapping[str, int]) -> tuple[list[Place], dict[TopId, list[int]]]:
    places: list[Place] = []
    places_of: dict[TopId, list[int]] = {}
    for top in tops:
        if isinstance(top, ClusterId):
            size = cluster_sizes.get(top.tag, DEFAULT_CLUSTER_SIZE)
            if size < 1:
                raise SimUsageError(f"cluster {top} needs at least one member, got cluster_sizes[{top.tag!r}] = {size}")
            members: list[int | None] = list(range(size))
        else:
            members = [None]
        places_of[top] = []
        for m in members:
            places_of[top].append(len(places))
            places.append(Place(top, m, str(top) if m is None else f"{top} member {m}"))
    return places, places_of


def _taint(nodes: list[n.Node], ops: dict[int, Op]) -> set[int]:
    """Ids of nodes derived from a non-deterministic choice (batch, snapshot, order, network)."""
    tainted: set[int] = set()
    for node in nodes:
        op = ops[id(node)]
        if isinstance(op, (Entry, AssumeOrderingOp, SendOp)) or any(id(c) in tainted for c in node.children):
            tainted.add(id(node))
    return tainted


def compile_program(
    flow: Flow,
    cluster_sizes: Mapping[str, int] | None = None,
    *,
    interleavings: bool = False,
    per_key_snapshots: bool = False,
) -> Program:
    """Build the executable program of a (preferably aligned) flow. `interleavings` and
    `per_key_snapshots` turn on the finer asynchrony of `asynchrony.py`."""
    nodes = flow.nodes()
    by_id: dict[int, Op] = {}
    ops: list[Op] = []
    for node in nodes:
        op_cls = evaluator_for(type(node))
        children = node.children
        in_ops = tuple(by_id[id(c)] for c in children)
        role = role_of(node)
        if per_key_snapshots and isinstance(node, n.Snapshot) and per_key_candidate(node, role):
            op_cls = KeyedSnapshotOp
        op = op_cls(node, len(ops), role, tuple(c.meta.kind for c in children), tuple(o.role for o in in_ops))
        op.ins = tuple(o.idx for o in in_ops)
        op.port_order = tuple(sorted(range(len(in_ops)), key=lambda i: in_ops[i].role is Role.CARRIED))
        for port, child in enumerate(in_ops):
            _connect(op, port, child)
        by_id[id(node)] = op
        ops.append(op)
    for src in flow.sources.values():  # declared but unused sources still accept sends
        if id(src) not in by_id:
            op = evaluator_for(type(src))(src, len(ops), Role.TOP, (), ())
            by_id[id(src)] = op
            ops.append(op)
    tops = list(dict.fromkeys([top_of(x.meta.loc) for x in nodes] + [s.meta.loc for s in flow.sources.values()]))
    places, places_of = _places([t for t in tops if not isinstance(t, TickId)], cluster_sizes or {})
    _link_cycles(ops)
    buffers = buffer_edges(ops) if interleavings else []
    ticks = _tick_plans(flow, ops, places_of)
    tainted = _taint(nodes, by_id)
    prog = Program(
        flow=flow,
        ops=ops,
        places=places,
        places_of=places_of,
        ticks=ticks,
        sources={},
        sinks={},
        statics=_group(ops, lambda o: o.role is Role.STATIC),
        initials=_group(ops, lambda o: o.role in (Role.TOP, Role.CARRIED) and type(o).initial is not Op.initial),
        stateful=_group(ops, lambda o: type(o).init_state is not Op.init_state),
        orderings=[*(o for o in ops if isinstance(o, AssumeOrderingOp) and o.role is Role.TOP), *buffers],
        deterministic_sinks=[],
        has_carried=any(o.role is Role.CARRIED for o in ops),
    )
    for op in ops:
        if isinstance(op, LatestOp) and op.role is Role.EXIT and ops[op.ins[0]].role is Role.CARRIED:
            prog.bridges.setdefault(op.ins[0], []).append(op)
        if isinstance(op, SourceOp):
            assert isinstance(op.node, n.Source)
            prog.sources[op.node.port] = op
        elif isinstance(op, SinkOp):
            assert isinstance(op.node, n.Sink)
            name = op.node.port
            prog.sinks[name] = op
            if _promises_determinism(op.node) and id(op.node) not in tainted:
                prog.deterministic_sinks.append(name)
    return prog


def _promises_determinism(node: n.Node) -> bool:
    m = node.meta
    return isinstance(m.loc, ProcessId) and m.ordered and m.kind is Kind.STREAM


def _group(ops: list[Op], pred: Any) -> dict[TopId, list[Op]]:
    out: dict[TopId, list[Op]] = {}
    for op in ops:
        if pred(op):
            out.setdefault(top_of(op.node.meta.loc), []).append(op)
    return out


def _link_cycles(ops: list[Op]) -> None:
    sinks = {o.node.cycle: o for o in ops if isinstance(o, CycleSinkOp) and isinstance(o.node, n.CycleSink)}
    for op in ops:
        if isinstance(op, CycleSourceOp):
            assert isinstance(op.node, n.CycleSource)
            sink = sinks.get(op.node.cycle)
            if sink is None:
                raise SimUsageError(f"the tick cycle created at {op.node.site} is never completed")
            feeder = ops[sink.ins[0]]
            op.link = feeder if isinstance(feeder, DeferTickOp) else sink


def _tick_plans(flow: Flow, ops: list[Op], places_of: dict[TopId, list[int]]) -> list[TickPlan]:
    plans: dict[TickId, TickPlan] = {}

    def plan(t: TickId) -> TickPlan:
        if t not in plans:
            plans[t] = TickPlan(t, places_of[t.outer])
        return plans[t]

    for op in ops:
        loc = op.node.meta.loc
        if op.role is Role.ENTRY:
            assert isinstance(op, Entry) and isinstance(loc, TickId)
            plan(loc).entries.append(op)
        elif op.role in (Role.BODY, Role.CARRIED):
            assert isinstance(loc, TickId)
            p = plan(loc)
            p.body.append(op)
            if isinstance(op, (DeferTickOp, CycleSinkOp)):
                p.commits.append(op)
            if isinstance(op, DeferTickOp) and op.streamlike:
                p.deferred.append(op)
        elif op.role is Role.EXIT:
            src = ops[op.ins[0]].node.meta.loc
            if not isinstance(src, TickId) or not isinstance(op, (AllTicksOp, LatestOp)):
                raise SimUsageError(
                    f"{op.node.op}() at {op.node.site} reads a tick at top level, but the simulator runs only "
                    "all_ticks(), latest() and release_aligned() as a tick's exits; leave the tick with one of them"
                )
            plan(src).exits.append(op)
    order = {t: i for i, t in enumerate(flow.ticks)}
    return sorted(plans.values(), key=lambda p: (order.get(p.tick, len(order)), p.tick.index))
