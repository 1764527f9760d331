"""Crashes as choices: a process restarting from its last committed tick is one more
non-deterministic choice, explored like batch boundaries and snapshot versions
(`Simulator.exhaustive(scenario, crashes=True)`).

The model is the Spark runtime's recovery (`hydrolite/planner/spark/runtime.py`,
`StageRunner._process`): a tick run is a micro-batch `b`. Its input is logged before it
runs (Spark's offset log); it evaluates, writes its state as version `b` (state version),
then writes its outputs one sink after the other, then its channels, then is committed. A
crash anywhere before the commit restarts the process, and the uncommitted run is replayed
with the same input:

* **state is versioned**: the replay reads the versions older than `b` (whatever the crashed
  run wrote as `b` is dropped; what it never wrote is lost anyway);
* **sinks are idempotent by batch id**: the replay overwrites what the crashed run wrote for
  `b` (a receiver sees those outputs once); channels and another tick's inputs skip an entry
  already complete (Spark's channel feed entries).

The crash points are Spark's fault points (`hydrolite/planner/spark/faults.py`):
``before_state`` (the run computed everything, wrote nothing), ``before_outputs`` (its state
version is written, no output), ``between_sinks`` (after each output but the last) and
``after_sinks`` (every output written, not committed). A crash at a tick boundary (between
two committed runs) is not a separate choice: sources are replayable, state is committed,
so the restarted process is in exactly the state it left, the same execution. Points that
cannot differ are not offered either: ``before_outputs`` only for a tick with state to
write, ``between_sinks`` only between two outputs.

The restart is immediate: nothing else happens between the crash and the replay (the
process is down; its inputs wait in their durable sources). What the replay re-runs is the
tick body, its exits and the top-level operators downstream of them up to the outputs
(Spark fuses those into the tick's micro-batch); the tick's own choices inside the body
(`assume_ordering` in a tick) are made the same way, as Spark's deterministic replay does.

**Top-level micro-batches.** The top-level operators a send, a delivery or a release runs
through (upstream of a tick's entries, Spark fuses them into that tick's query; a
pipeline crossing no tick is a query of its own) are a micro-batch too
(`CrashWorld.propagate_top`): what reaches an output is staged, a crash point is chosen
the same way, and the replay propagates the same durable input again (state rolled back
to its older version, outputs overwritten / skipped, user functions run again). A
propagation that runs no operator offers no point: it computes nothing a replay could
change, and a crash before its outputs is a crash at a boundary.

With a correct recovery and pure user functions a crash therefore changes nothing the test
can observe, and the simulator checks exactly that (`explore.py`): each execution that
crashed is compared with the same schedule without the crash. What breaks it is a user
function whose effects repeat (an `inspect()` appending to a list) or whose results differ
when replayed (a counter, the clock, randomness), or a recovery without one of the two
properties above (`Recovery`; tests turn them off to show the check catches it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from .. import kernels
from ..ir.nodes import Sink
from ..ir.roles import Role
from .asynchrony import EdgeBufferOp
from .errors import Pruned
from .ops_time import AssumeOrderingOp, Entry, SendOp, SinkOp
from .registry import Op
from .values import NOTHING, render
from .world import World

if TYPE_CHECKING:
    from ..ir.nodes import Node
    from .program import Program, TickPlan

#: Spark's fault points, in the order a micro-batch passes them (= `faults.FAULT_POINTS`)
POINTS = ("before_state", "before_outputs", "between_sinks", "after_sinks")


@dataclass(frozen=True)
class Recovery:
    """How a restarted process recovers: the two properties exactly-once rests on.

    The default (`SPARK`) is the Spark runtime's. Turning one off gives a broken recovery,
    which exists so that tests can show the crash check catches it:
    `versioned_state=False` replays a run on the newest state version, even the one the
    crashed run wrote itself; `idempotent_sinks=False` writes a replayed run's outputs
    again where the crashed run had written them (sink outputs appended twice, channel
    entries sent twice) instead of overwriting / skipping them.
    """

    versioned_state: bool = True
    idempotent_sinks: bool = True


SPARK = Recovery()


@dataclass(frozen=True)
class CrashPoint:
    """Where a run crashed: `written` output groups were written, and its state version was
    written when `state_written`."""

    name: str
    written: int
    state_written: bool


@dataclass
class Group:
    """Everything one run writes to one output (a sink, a channel, another tick's input)."""

    op: Op
    place: int
    deltas: list[tuple[int, Any]] = field(default_factory=list)  # (input port, delta), in order


@dataclass(frozen=True)
class TickInfo:
    """What a run of one tick touches: the state to roll back, and where its input is read."""

    touched: tuple[int, ...]  # ops whose state the run changes (rolled back on replay)
    stateful: bool  # the run writes a state version (else before_outputs = before_state)
    entries: tuple[Node, ...]  # its entries (batch / snapshot), to name the tick in reports


@dataclass(frozen=True)
class TopInfo:
    """What a top-level propagation from one operator touches (a send's source, a delivery's
    send operator at the receiver, a released buffer)."""

    touched: tuple[int, ...]  # stateful top-level operators it updates (rolled back on replay)
    computes: bool  # it runs a top-level operator before reaching the outputs (else no crash point)
    first: Node | None  # the first such operator, to name the crash in reports


@dataclass(frozen=True)
class CrashInfo:
    """Per program: terminal operators (outputs of a run), each tick's `TickInfo`, and the
    `TopInfo` of each operator a top-level propagation starts from (filled as met)."""

    terminal: frozenset[int]
    ticks: dict[int, TickInfo]
    tops: dict[int, TopInfo] = field(default_factory=dict)

    def top(self, op: Op) -> TopInfo:
        """The `TopInfo` of propagations starting at `op`."""
        known = self.tops.get(op.idx)
        if known is None:
            known = self.tops[op.idx] = _top_info(op, self.terminal)
        return known


def _downstream(start: list[Op], terminal: frozenset[int], touched: dict[int, None]) -> None:
    """Add the stateful operators reached from `start` before the outputs to `touched`."""
    todo = list(start)
    seen: set[int] = set()
    while todo:
        op = todo.pop()
        if op.idx in terminal or op.idx in seen:
            continue
        seen.add(op.idx)
        if _stateful(op):
            touched[op.idx] = None
        todo.extend(c for c, _ in op.consumers)


def _top_info(op: Op, terminal: frozenset[int]) -> TopInfo:
    inner = [c for c, _ in op.consumers if c.idx not in terminal]
    touched: dict[int, None] = {}
    _downstream(inner, terminal, touched)
    return TopInfo(tuple(touched), bool(inner), inner[0].node if inner else None)


def _stateful(op: Op) -> bool:
    return type(op).init_state is not Op.init_state


def _terminal(op: Op) -> bool:
    """An operator a run's outputs end in: written idempotently, never rolled back."""
    if isinstance(op, (SinkOp, SendOp, EdgeBufferOp)):
        return True
    if isinstance(op, Entry):
        return op.role is Role.ENTRY
    return isinstance(op, AssumeOrderingOp) and op.role is Role.TOP


def crash_info(prog: Program) -> CrashInfo:
    """The program's `CrashInfo` (computed once, kept on the program)."""
    if prog.crash_info is not None:
        info: CrashInfo = prog.crash_info
        return info
    terminal = frozenset(op.idx for op in prog.ops if _terminal(op))
    ticks: dict[int, TickInfo] = {}
    for tp in prog.ticks:
        touched: dict[int, None] = {}
        for op in tp.body:
            if _stateful(op) and (op.role is Role.CARRIED or op in tp.commits):
                touched[op.idx] = None
        _downstream(list(tp.exits), terminal, touched)
        stateful = bool(touched) or any(op.role is Role.CARRIED for op in tp.body)
        ticks[id(tp)] = TickInfo(tuple(touched), stateful, tuple(e.node for e in tp.entries))
    prog.crash_info = info = CrashInfo(terminal, ticks)
    return info


def clone(x: Any) -> Any:
    """A copy of an operator's state: its containers are copied, the values they hold are
    shared (kernels never mutate a value: copy-on-write)."""
    t = type(x)
    if t is list:
        return [clone(v) for v in x]
    if t is dict:
        return {k: clone(v) for k, v in x.items()}
    if t is tuple:
        return tuple(clone(v) for v in x)
    if t is set:
        return set(x)
    if t is kernels.Seen:
        seen = kernels.Seen()
        seen.hashed, seen.other = set(x.hashed), list(x.other)
        return seen
    return x


def _recorder(choose: Callable[[int], int], script: list[tuple[int, int]]) -> Callable[[int], int]:
    def record(n: int) -> int:
        v = choose(n)
        script.append((n, v))
        return v

    return record


def _scripted(script: list[tuple[int, int]]) -> Callable[[int], int]:
    """The choices the crashed run made inside its body, again (Spark's replay is
    deterministic given the batch); a replay that asks for more (an impure function changed
    the data) gets the first option."""
    pos = [0]

    def replay(n: int) -> int:
        i = pos[0]
        pos[0] += 1
        return min(script[i][1], n - 1) if i < len(script) else 0

    return replay


class CrashWorld(World):
    """A `World` whose tick runs may crash and be replayed (see the module docstring).

    `crashes_left` is the crash budget of the execution; once it is spent, runs are the
    plain `World`'s. `crash_positions` holds the index, in the chooser's sequence, of every
    crash choice (taken or not), so the same schedule without crashes can be rebuilt;
    `crash_log` describes the crashes that happened.
    """

    __slots__ = ("crashes_left", "recovery", "staged", "crash_log", "crash_positions", "nchoices", "info")

    def __init__(
        self,
        prog: Program,
        choose: Callable[[int], int],
        trace: bool = False,
        max_steps: int = 10_000,
        por: bool = False,
        fairness: int = 2,
        *,
        crashes: int = 1,
        recovery: Recovery = SPARK,
    ) -> None:
        def counted(n: int) -> int:
            self.nchoices += 1
            return choose(n)

        self.crashes_left = crashes
        self.recovery = recovery
        self.staged: list[tuple[Op, int, int, Any]] | None = None
        self.crash_log: list[str] = []
        self.crash_positions: list[int] = []
        self.nchoices = 0
        self.info = crash_info(prog)
        super().__init__(prog, counted, trace, max_steps, por, fairness)

    # ------------------------------------------------------------- staging outputs
    def propagate(self, op: Op, p: int, out: Any) -> None:
        """As `World.propagate`; while a run's exits propagate, what reaches an output
        (terminal operator) is staged, to be written output by output."""
        staged = self.staged
        if staged is None:
            World.propagate(self, op, p, out)
            return
        st = self.states[p]
        terminal = self.info.terminal
        for c, port in op.consumers:
            if c.idx in terminal:
                staged.append((c, p, port, out))
                continue
            o = c.push(self, p, st, port, out)
            if o is not NOTHING:
                self.propagate(c, p, o)

    # ------------------------------------------------------------- one run, maybe crashing
    def run_tick(self, tp: TickPlan, p: int, floors: list[Any] | None = None) -> None:
        """Run one tick; with crashes left, choose whether and where it crashes, and replay
        it with the same input until a run completes."""
        if self.crashes_left <= 0:
            World.run_tick(self, tp, p, floors)
            return
        st = self.states[p]
        k = self.runs[(id(tp), p)] = self.runs.get((id(tp), p), 0) + 1
        self.total_runs += 1
        if self.run_limit is not None and self.total_runs > self.run_limit:
            raise Pruned()
        self.ctx = ("tick", tp, p, k)
        if self.trace is not None:
            self.trace.append(("tick", tp.label, self.prog.places[p].label, k))
        size = len(self.prog.ops)
        vals: list[Any] = [None] * size
        self.decide_entries(tp, p, st, vals, floors)
        logged = [(e.idx, vals[e.idx]) for e in tp.entries]  # the offset log: the replay's input
        info = self.info.ticks[id(tp)]
        saved = [(i, clone(st[i])) for i in info.touched], (list(self.cur[p]) if self.cur else None)
        script: list[tuple[int, int]] = []
        written: dict[tuple[int, int], int] = {}
        choose = self.choose
        self.choose = _recorder(choose, script)
        try:
            groups = self._evaluate(tp, p, vals)
        finally:
            self.choose = choose
        while True:
            point = self._choose_point(info.stateful, groups)
            if point is None:
                self._write(groups, written)
                return
            self.crashes_left -= 1
            self._write(groups[: point.written], written)
            self._note_crash(f"run #{k} of {tp.label} on {self.prog.places[p].label}", point, groups, info.entries)
            if not point.state_written or self.recovery.versioned_state:
                for i, v in saved[0]:  # the versions older than this run
                    st[i] = clone(v)
                if saved[1] is not None:
                    self.cur[p] = list(saved[1])
            vals = [None] * size
            for i, v in logged:
                vals[i] = v
            ctx, trace = self.ctx, self.trace
            self.choose, self.trace, self.ctx = _scripted(script), None, ("replay", tp, p, k, point.name)
            try:
                groups = self._evaluate(tp, p, vals)
            finally:
                self.choose, self.trace, self.ctx = choose, trace, ctx

    def propagate_top(self, op: Op, p: int, delta: Any) -> None:
        """A delta entering the top level (a send, a delivery, a release) is a micro-batch of
        the top-level operators it runs through: with crashes left, and when it runs at
        least one operator, choose whether and where it crashes (Spark's points, as for a
        tick run), and replay it from its durable input: the send / channel entry /
        released element. State it updated rolls back (versioned), outputs it wrote are
        overwritten or skipped (idempotent), and its user functions run again."""
        top = self.info.top(op)
        if self.crashes_left <= 0 or not top.computes:
            World.propagate(self, op, p, delta)
            return
        st = self.states[p]
        saved = [(i, clone(st[i])) for i in top.touched]
        groups = self._staged(partial(self.propagate, op, p, delta))
        written: dict[tuple[int, int], int] = {}
        while True:
            point = self._choose_point(bool(top.touched), groups)
            if point is None:
                self._write(groups, written)
                return
            self.crashes_left -= 1
            self._write(groups[: point.written], written)
            self._note_crash(f"the top-level operators, {self.where_text()}", point, groups, _named(top.first))
            if not point.state_written or self.recovery.versioned_state:
                for i, v in saved:  # the versions older than this micro-batch
                    st[i] = clone(v)
            ctx, trace = self.ctx, self.trace
            self.trace, self.ctx = None, ("replay_top", ctx, point.name)
            try:
                groups = self._staged(partial(self.propagate, op, p, delta))
            finally:
                self.trace, self.ctx = trace, ctx

    def _evaluate(self, tp: TickPlan, p: int, vals: list[Any]) -> list[Group]:
        """Evaluate the body (entries already in `vals`), exits and commits, and propagate
        the exits, staging what reaches an output; returns the outputs, grouped."""
        st = self.states[p]
        outs = self._run_body(tp, p, st, vals)

        def exits() -> None:
            for x, v in outs:
                self.propagate(x, p, v)

        return self._staged(exits)

    def _staged(self, propagate: Callable[[], object]) -> list[Group]:
        """Run `propagate` staging what reaches an output; returns the outputs, grouped."""
        staged: list[tuple[Op, int, int, Any]] = []
        self.staged = staged
        try:
            propagate()
        finally:
            self.staged = None
        groups: dict[tuple[int, int], Group] = {}
        for op, place, port, delta in staged:
            g = groups.get((op.idx, place))
            if g is None:
                g = groups[(op.idx, place)] = Group(op, place)
            g.deltas.append((port, delta))
        # sinks first (the runtime writes them, then its channels), each in program order
        return sorted(groups.values(), key=lambda g: (not isinstance(g.op, SinkOp), g.op.idx, g.place))

    def _choose_point(self, stateful: bool, groups: list[Group]) -> CrashPoint | None:
        """The crash choice of a run (option 0: no crash); None when it does not crash."""
        if self.crashes_left <= 0:
            return None
        points = [CrashPoint("before_state", 0, False)]
        if stateful:
            points.append(CrashPoint("before_outputs", 0, True))
        points.extend(CrashPoint("between_sinks", i, True) for i in range(1, len(groups)))
        if groups:
            points.append(CrashPoint("after_sinks", len(groups), True))
        self.crash_positions.append(self.nchoices)
        c = self.choose(len(points) + 1)
        return None if c == 0 else points[c - 1]

    def _write(self, groups: list[Group], written: dict[tuple[int, int], int]) -> None:
        """Write outputs of the current batch, idempotently: a sink already written by this
        batch is overwritten, a channel or another tick's input already written is skipped."""
        for g in groups:
            key = (g.op.idx, g.place)
            st = self.states[g.place]
            start = written.get(key)
            if isinstance(g.op, SinkOp):
                out, read = st[g.op.idx]
                if start is None:
                    written[key] = len(out)
                elif self.recovery.idempotent_sinks:
                    assert read <= start, "a receiver read outputs of a run that had not been committed"
                    del out[start:]
            elif start is not None and self.recovery.idempotent_sinks:
                continue
            else:
                written[key] = 0
            for port, delta in g.deltas:
                g.op.push(self, g.place, st, port, delta)

    # ------------------------------------------------------------- reporting
    def _note_crash(self, what: str, point: CrashPoint, groups: list[Group], start: tuple[Node, ...]) -> None:
        """Log (and trace) a crash of `what` at `point`; `start` names it before any output."""
        if point.name == "between_sinks":
            before, after = groups[point.written - 1], groups[point.written]
            detail = f"after {_output(before)}, before {_output(after)}"
            nodes: tuple[Node, ...] = (before.op.node, after.op.node)
        elif point.name == "after_sinks":
            detail = f"after every output ({', '.join(_output(g) for g in groups)}), before the commit"
            nodes = (groups[-1].op.node,)
        else:
            detail = (
                "nothing written yet" if point.name == "before_state" else "its state version written, no output yet"
            )
            nodes = start[:1]
        text = f"{point.name} of {what} ({detail})"
        self.crash_log.append(text + _sites(nodes))
        if self.trace is not None:
            self.trace.append(("crash", text, nodes))

    def where_text(self) -> str:
        c = self.ctx
        if c[0] == "replay":
            return f"replaying run #{c[3]} of {c[1].label} on {self.prog.places[c[2]].label} after a crash at {c[4]}"
        if c[0] == "replay_top":
            self.ctx = c[1]
            try:
                return f"{World.where_text(self)}, replayed after a crash at {c[2]}"
            finally:
                self.ctx = c
        return World.where_text(self)


def _named(node: Node | None) -> tuple[Node, ...]:
    return () if node is None else (node,)


def _output(g: Group) -> str:
    node = g.op.node
    if isinstance(node, Sink):
        return f"sink {node.port!r}"
    if isinstance(g.op, SendOp):
        return f"{node.op}() at {node.site}"
    return f"the {node.op}() at {node.site}"


def _sites(nodes: tuple[Node, ...]) -> str:
    return "" if not nodes else " at " + ", ".join(f"{n.op}() {n.site}" for n in nodes)


# ----------------------------------------------------------------- comparing outputs
def sink_outputs(prog: Program, w: World) -> dict[tuple[str, int | None], list[Any]]:
    """Every sink's outputs so far, per (port, cluster member), to compare two executions."""
    out: dict[tuple[str, int | None], list[Any]] = {}
    for port, op in prog.sinks.items():
        for p in prog.places_at(op.node.meta.loc):
            out[(port, prog.places[p].member)] = list(w.states[p][op.idx][0])
    return out


def first_difference(
    crashed: dict[tuple[str, int | None], list[Any]], plain: dict[tuple[str, int | None], list[Any]]
) -> tuple[str, str] | None:
    """(port, description) of the first sink whose outputs differ, or None."""
    for (port, member), got in crashed.items():
        want = plain.get((port, member), [])
        try:
            same = bool(got == want)
        except Exception:  # an element whose == fails: compare renderings
            same = render(got, 1 << 30) == render(want, 1 << 30)
        if not same:
            on = "" if member is None else f" on member {member}"
            return port, f"sink {port!r}{on} holds {render(got)} with the crash, {render(want)} without"
    return None
