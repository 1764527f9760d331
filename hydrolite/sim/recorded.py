"""Replaying a recorded run (e.g. one Spark query's micro-batches) as one simulator execution.

A Spark run makes exactly the simulator's batching choices, and records them: micro-batch
`b` of a query covered the inputs between the end offsets of `b - 1` and those of `b`
(the offset log). Given, per batch, the elements each input delivered, `replay_ticks` runs
the program in the simulator with those choices and returns what every sink emitted per
batch, so a backend's outputs can be compared with the model's, batch by batch.

The replay is per tick (compositional): it sends a batch's source elements, injects what
other ticks produced into this one (channels), then runs the tick once with every entry
taking all that is pending (`batch`) or the newest version (`snapshot`) — which is what a
micro-batch over exactly those inputs sees. Other choices inside the tick body
(`assume_ordering`) keep the order as given, and a top-level `assume_ordering` passes its
elements on as they arrived (`_release_orderings`). Stages without a tick (top-level pipelines)
just receive the sends.

Example (a pure top-level pipeline, no tick)::

    >>> import hydrolite as hl
    >>> from hydrolite.sim.recorded import ReplayBatch, replay_ticks
    >>> class P: ...
    >>> fb = hl.FlowBuilder("double")
    >>> xs = fb.process(P).source("xs", int)
    >>> _ = xs.map(lambda x: 2 * x).sink("out")
    >>> [r.outputs for r in replay_ticks(fb.finalize(), None, [ReplayBatch(0, {"xs": [1, 2]}), ReplayBatch(1, {"xs": [5]})])]
    [{'out': [2, 4]}, {'out': [10]}]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..ir.graph import Flow
from ..ir.ids import TickId, top_of
from ..ir.nodes import Node, Sink, Source
from .errors import SimUsageError
from .program import Program, TickPlan, compile_program
from .values import NOTHING
from .world import World


@dataclass(frozen=True)
class ReplayBatch:
    """One recorded tick run: what each input delivered before it ran.

    `sources` maps a source port to its new elements, in arrival order; `injected` maps a
    node computed elsewhere (another query's output read through a channel) to its new
    elements (streams) or its newest version (singletons, wrapped in a one-element list).
    """

    batch_id: int
    sources: Mapping[str, list[Any]]
    injected: Mapping[int, tuple[Node, list[Any]]] = field(default_factory=dict)


@dataclass(frozen=True)
class ReplayResult:
    """What every sink emitted during one replayed batch."""

    batch_id: int
    outputs: dict[str, list[Any]]


def _eager(n: int) -> int:
    return n - 1  # batches release everything pending, snapshots the newest version


def _first(n: int) -> int:
    return 0  # any other choice (assume_ordering): keep the order as given


class ReplayBlocked(SimUsageError):
    """The recorded run ran a tick the model cannot run yet (a snapshot with no version)."""


class _ReplayWorld(World):
    """A world whose entries release everything pending, whose body keeps orders and whose
    sends are delivered at once (a micro-batch's `send` is the identity: one legal schedule).

    `fed`: the operators (by index) whose values the recording received from elsewhere (a
    channel from another query): only the injections set them. Were upstream deltas pushed
    into them too, a singleton derived from an injected stream would take a version the
    recording never received (a reader's batch that got the stream's entry before the
    singleton's would read, in the replay, the newer singleton)."""

    fed: frozenset[int] = frozenset()

    def propagate(self, op: Any, p: int, out: Any) -> None:
        if not self.fed:
            super().propagate(op, p, out)
            return
        st = self.states[p]
        for c, port in op.consumers:
            if c.idx in self.fed:
                continue  # set by its own injections only
            o = c.push(self, p, st, port, out)
            if o is not NOTHING:
                self.propagate(c, p, o)

    def enqueue(self, op: Any, p: int, delta: list[Any]) -> None:
        super().enqueue(op, p, delta)
        for key in [k for k in self.channels if k[0] is op and k[1] == p]:
            while self.channels[key]:
                self.deliver(key)

    def decide_entries(
        self, tp: TickPlan, p: int, st: list[Any], vals: list[Any], floors: list[Any] | None = None
    ) -> None:
        for e in tp.entries:
            if not e.has_value(st):
                raise ReplayBlocked(
                    f"the recording ran {tp.label}, but in the model it cannot run yet: "
                    f"{e.node.op}() at {e.node.site} has no version to read"
                )
        self.choose = _eager
        try:
            super().decide_entries(tp, p, st, vals, floors)
        finally:
            self.choose = _first


def _tick_plan(prog: Program, tick: TickId | None) -> TickPlan | None:
    if tick is None:
        return None
    for tp in prog.ticks:
        if tp.tick == tick:
            return tp
    raise SimUsageError(f"the program has no tick {tick}")


def replay_ticks(
    flow: Flow,
    tick: TickId | None,
    batches: Iterable[ReplayBatch],
    *,
    sinks: Iterable[str] | None = None,
    program: Program | None = None,
    fed: Iterable[Node] = (),
) -> list[ReplayResult]:
    """Replay `batches` of one tick (or of a tick-free pipeline when `tick` is None).

    `flow` must be the aligned flow the recording ran (node identities are used for
    `injected`). `fed`: every node the recording received from elsewhere (whether or not a
    batch injects it): the replay computes none of them from their inputs. Returns, per
    batch, the new outputs of `sinks` (default: every sink).
    """
    prog = program if program is not None else compile_program(flow)
    tp = _tick_plan(prog, tick)
    watched = list(sinks) if sinks is not None else list(prog.sinks)
    world = _ReplayWorld(prog, _first, max_steps=1 << 62)
    ops_by_node = {id(op.node): op for op in prog.ops}
    world.fed = frozenset(ops_by_node[id(x)].idx for x in fed if id(x) in ops_by_node)
    seen = {port: 0 for port in watched}
    results: list[ReplayResult] = []
    for b in batches:
        for port, elements in b.sources.items():
            src = prog.sources.get(port)
            if src is None:
                raise SimUsageError(f"the program has no source port {port!r}")
            p = prog.places_of[top_of(src.node.meta.loc)][0]
            for x in elements:
                world.send(src, p, x)
        for node, delta in b.injected.values():
            op = ops_by_node.get(id(node))
            if op is None:
                raise SimUsageError(f"{node.op}() at {node.site} is not part of the replayed program")
            p = prog.places_of[top_of(node.meta.loc)][0]
            if node.meta.kind.streamlike:
                if delta:
                    world.propagate(op, p, list(delta))
            else:
                for version in delta:
                    world.propagate(op, p, version)
        _release_orderings(world, prog)
        if tp is not None:
            for p in tp.places:
                # a tick whose snapshot has no version yet cannot run (the recording held the
                # batch back too): its inputs stay pending for the next run
                if all(e.has_value(world.states[p]) for e in tp.entries):
                    world.run_tick(tp, p)
        out: dict[str, list[Any]] = {}
        for port in watched:
            op = prog.sinks[port]
            p = prog.places_of[top_of(op.node.meta.loc)][0]
            emitted: list[Any] = world.states[p][op.idx][0]
            out[port] = list(emitted[seen[port] :])
            seen[port] = len(emitted)
        results.append(ReplayResult(b.batch_id, out))
    return results


def _release_orderings(world: World, prog: Program) -> None:
    """Release every element waiting in a top-level `assume_ordering` buffer, oldest first.

    On a backend such a buffer is the identity: the elements go on in the order they
    arrived, within the micro-batch they arrived in (one legal schedule; the scheduler of an
    exploring run would pick among all). A release may fill a buffer further down, so this
    repeats until every buffer is empty."""
    pending = True
    while pending:
        pending = False
        for op in prog.orderings:
            for p in prog.places_of[top_of(op.node.meta.loc)]:
                while world.states[p][op.idx]:
                    world.release(op, p)
                    pending = True


def operator_chain(sink: Sink, limit: int = 12) -> str:
    """The operators that produced a sink's elements, newest first, with the user's lines
    (follows the first input of each operator up to a source)."""
    parts: list[str] = []
    node: Node = sink
    while True:
        parts.append(f"{node.op}() at {node.site.label}")
        if isinstance(node, Source) or not node.children or len(parts) >= limit:
            break
        node = node.children[0]
    return " <- ".join(parts)
