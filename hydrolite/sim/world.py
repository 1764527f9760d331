"""One execution of a program: per-place state, eager top-level propagation, tick runs and the
scheduler's actions. Every non-deterministic decision goes through `World.choose`.

Execution model:
* A send from the test enters its source and is propagated *eagerly* through the top-level
  operators of its location (deterministic functions of their inputs); with
  `interleavings`, the inputs of two-input operators are edge buffers released by the
  scheduler instead (`asynchrony.py`). Asynchrony between
  top-level operators is observable only where something samples it, and is modelled there:
  a snapshot may read any version not older than the last one it saw; a batch takes any
  prefix (or subset) of what is pending.
* The scheduler's actions are: run a tick (on one process or cluster member), deliver the
  head of a network channel (FIFO per sender/receiver pair; channels interleave freely), or
  release the next element of a top-level `assume_ordering`. They run only when the test
  waits for an output (`Receiver.next()` and friends), one at a time; when several are
  possible, which one runs is a choice.
* Partial-order reduction (exhaustive mode, `por=True`): independent actions commute
  (`por.py`: different places, a tick run and a delivery into its batch, writes of
  different keys to a keyed batch / per-key operator / per-key snapshot, ...), so after
  exploring action a, its later siblings explore with a *asleep* (sleep sets) until
  something dependent on a happens (an action, or the test sending or receiving, whose
  footprint conflicts). Each action kept from running is a pruned branch (`hidden`); an
  execution whose every next action is asleep repeats an explored one and is abandoned
  (`Pruned`).
* A tick is runnable when running it observes something new: a batch can release an
  element, a snapshot a newer version, or a deferred stream holds elements and a run
  without new input would change an output or the value carried to the next run (see
  `idle.py`: a stream cycle at its fixpoint does not keep its tick busy). One of its
  entries is forced to release something new (a run that sees nothing new is not explored:
  it would be indistinguishable from not running, and would make exploration infinite);
  in a run kept busy by deferred elements, an entry passed over `fairness` times in a row
  is forced (no pending input is starved).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ir.roles import Role
from ..locations.locations import MemberId
from ..locations.sharding import member_of_key
from .actions import Action, ChannelKey, Deliver, RunTick, table_of
from .asynchrony import EdgeBufferOp
from .errors import ExplorationLimit, Pruned, SimUsageError
from .idle import idle_run_changes
from .por import Footprints, dependent, element_key
from .program import Program, TickPlan
from .registry import Op
from .values import NOTHING, UNSET, render

if TYPE_CHECKING:
    from .ops_time import AssumeOrderingOp, SendOp, SourceOp
    from .por import Resource


class World:
    """The mutable state of one execution."""

    __slots__ = (
        "prog", "states", "cur", "choose", "trace", "channels", "steps", "max_steps", "ctx", "sends", "runs", "por", "sleep",
        "filtered", "idle", "starved", "fairness", "busy_note", "marks", "total_runs", "run_limit", "fp", "fp_memo",
        "table", "hidden", "choice_log", "seen_before",
    )  # fmt: skip

    def __init__(
        self,
        prog: Program,
        choose: Callable[[int], int],
        trace: bool = False,
        max_steps: int = 10_000,
        por: bool = False,
        fairness: int = 2,
    ) -> None:
        self.prog = prog
        self.por = por
        self.fairness = fairness  # self-driven runs an entry with new input may be passed over in a row
        self.idle: dict[tuple[int, int], bool] = {}  # (tick, place) -> would an idle run change anything
        self.starved: dict[tuple[int, int], list[int]] = {}  # (tick, place) -> passed-over runs per entry
        self.busy_note = ""  # why a tick without new input stayed runnable (for ExplorationLimit)
        self.sleep: list[Action] = []
        self.fp: Footprints | None = None
        self.fp_memo: dict[Action, tuple[Resource, ...]] = {}
        self.table = table_of(prog)
        if por:
            if prog.footprints is None:
                prog.footprints = Footprints(prog)
            self.fp = prog.footprints
            self.fp_memo = prog.footprints.memo_actions
        self.filtered = False  # whether the sleep set ever hid an action (choices then depend on it)
        self.hidden = 0  # branches the sleep set cut off in this execution (see Simulator.pruned)
        self.choice_log: list[int] = []  # the chooser's choices so far (set by the Simulator)
        self.seen_before = 0  # a state reached with fewer choices was visited by an earlier execution
        self.choose = choose
        self.marks: dict[Action, list[Any]] = {}  # sleeping tick -> its entries' marks when it fell asleep
        self.total_runs = 0
        self.run_limit: int | None = None  # shrinking's bound: more tick runs than this is pruned
        self.trace: list[tuple[Any, ...]] | None = [] if trace else None
        self.channels: dict[ChannelKey, deque[Any]] = {}
        self.steps = 0
        self.max_steps = max_steps
        self.ctx: tuple[Any, ...] = ("init",)
        self.sends: list[tuple[str, int, Any]] = []
        self.runs: dict[tuple[int, int], int] = {}
        size = len(prog.ops)
        self.states: list[list[Any]] = []
        for pl in prog.places:
            st: list[Any] = [None] * size
            for op in prog.stateful.get(pl.top, ()):
                st[op.idx] = op.init_state()
            self.states.append(st)
        self.cur: list[list[Any]] = [[UNSET] * size for _ in prog.places] if prog.has_carried else []
        self._start()

    # ------------------------------------------------------------- start-up
    def _start(self) -> None:
        """Compute finite sources and push initial versions (fold inits, ...) downstream."""
        prog = self.prog
        for p, pl in enumerate(prog.places):
            st = self.states[p]
            statics = prog.statics.get(pl.top, ())
            if statics:
                vals: list[Any] = [None] * len(prog.ops)
                for op in statics:
                    vals[op.idx] = v = op.tick(self, st, vals)
                    if op.consumers:
                        self.propagate(op, p, v)
            for op in prog.initials.get(pl.top, ()):
                v = op.initial(st)
                if v is NOTHING:
                    continue
                if op.role is Role.TOP:
                    self.propagate(op, p, v)
                else:
                    self._carried_init(op, p, v)

    def _carried_init(self, op: Op, p: int, v: Any) -> None:
        self.cur[p][op.idx] = v
        st = self.states[p]
        for bridge in self.prog.bridges.get(op.idx, ()):
            # a top-level reader of a carried singleton (through the alignment pass's latest()
            # bridge) sees its initial version from the start, as it did before alignment
            st[bridge.idx][0] = v
            self.propagate(bridge, p, v)
        for c, port in op.carried:
            o = c.push(self, p, st, port, v)
            if o is NOTHING:
                continue
            if c.streamlike:
                raise SimUsageError(
                    f"{c.node.op}() at {c.node.site} would emit elements before its tick ever ran (unsupported in an aligned region)"
                )
            self._carried_init(c, p, o)

    # ------------------------------------------------------------- top level
    def send(self, op: SourceOp, p: int, x: Any) -> None:
        """The test sends `x` to a source port: propagate it, as the port holds it, through
        the top level."""
        if op.convert is not None:
            x = op.convert(x)
        self.ctx = ("send", op, p, x)
        self.sends.append((op.port, p, x))
        if self.sleep:
            self.wake(self.fp.send(op, p, x) if self.fp is not None else ())
        if self.trace is not None:
            self.trace.append(("send", op.port, self.prog.places[p].label, x))
        self.propagate_top(op, p, [x])

    def propagate_top(self, op: Op, p: int, delta: Any) -> None:
        """Propagate a delta that enters the top level from outside a tick run (a send, a
        delivery, a release): what `crash.CrashWorld` makes a crash point."""
        self.propagate(op, p, delta)

    def propagate(self, op: Op, p: int, out: Any) -> None:
        """Push `op`'s output delta to its top-level consumers at place `p`, recursively."""
        st = self.states[p]
        for c, port in op.consumers:
            o = c.push(self, p, st, port, out)
            if o is not NOTHING:
                self.propagate(c, p, o)

    def enqueue(self, op: SendOp, p: int, delta: list[Any]) -> None:
        """Put sent elements into their (sender, receiver) channels."""
        for x in delta:
            for dst, payload in self._route(op, p, x):
                key = (op, p, dst)
                q = self.channels.get(key)
                if q is None:
                    q = self.channels[key] = deque()
                q.append(payload)

    def _route(self, op: SendOp, p: int, x: Any) -> list[tuple[int, Any]]:
        from ..ir.nodes import SendMode

        member = self.prog.places[p].member
        dests = self.prog.places_at(op.dest)
        wrap: Callable[[Any], Any] = (lambda v: v) if member is None else (lambda v: (MemberId(member), v))
        if op.mode is SendMode.DEMUX:
            if type(x) is not tuple or len(x) != 2:
                raise op.fail(self, x, TypeError("demux() needs (member_id, value) tuples"))
            i = x[0].raw if isinstance(x[0], MemberId) else x[0]
            if not isinstance(i, int) or not 0 <= i < len(dests):
                raise op.fail(
                    self, x, ValueError(f"demux() to member {x[0]!r}, but the cluster has {len(dests)} members")
                )
            return [(dests[i], wrap(x[1]))]
        if op.mode is SendMode.BY_KEY:  # a keyed (k, v): to k's owner, still keyed by k
            try:
                i = member_of_key(x[0], len(dests))
            except TypeError as exc:
                raise op.fail(self, x, exc) from exc
            return [(dests[i], x)]
        return [(d, wrap(x)) for d in dests]

    # ------------------------------------------------------------- scheduler
    def step(self) -> bool:
        """Run one scheduler action (a choice when several are possible); False when quiescent."""
        acts = self.actions()
        if not acts:
            return False
        self.steps += 1
        if self.steps > self.max_steps:
            raise ExplorationLimit(self._busy_message())
        floors: dict[Action, list[Any]] = {}
        if self.por:
            sleep = self.sleep
            if sleep:
                awake = []
                for a in acts:
                    if a not in sleep:
                        awake.append(a)
                    elif isinstance(a, RunTick) and self._regrown(a):
                        awake.append(a)  # asleep for what it had; awake for what came since
                        floors[a] = self.marks[a]
                if len(self.choice_log) >= self.seen_before:  # a state no earlier execution counted
                    self.hidden += len(acts) - len(awake) + len(floors)
                if not awake:
                    raise Pruned()
                self.filtered = self.filtered or len(awake) < len(acts)
                acts = awake
        i = self.choose(len(acts)) if len(acts) > 1 else 0
        a = acts[i]
        if self.por:
            here = self.footprint(a)
            for b in acts[:i]:  # explored from this state: asleep for everything pending now
                if isinstance(b, RunTick):
                    self.marks[b] = [e.mark(self.states[b.place]) for e in b.tick.entries]
            kept = dict.fromkeys(self.sleep + acts[:i])
            self.sleep = [b for b in kept if not dependent(self.footprint(b), here)]
        if self.trace is not None and len(acts) > 1:
            self.trace.append(("choice", [self.action_label(x) for x in acts], i))
        if isinstance(a, RunTick):
            self.run_tick(a.tick, a.place, floors.get(a))
        elif isinstance(a, Deliver):
            self.deliver(a.channel)
        else:
            self.release(a.op, a.place)
        return True

    def _busy_message(self) -> str:
        busiest = max(self.runs.items(), key=lambda kv: kv[1], default=None)
        who = ""
        if busiest is not None:
            tp = next((t for t in self.prog.ticks if id(t) == busiest[0][0]), None)
            if tp is not None:
                who = f" ({tp.label} on {self.prog.places[busiest[0][1]].label} ran {busiest[1]} times)"
        note = (
            f": {self.busy_note}"
            if self.busy_note
            else (
                ": a tick keeps producing work for itself (a stream cycle or defer_tick() whose value changes, "
                "or whose runs emit, in every run)"
            )
        )
        return f"the execution did not quiesce after {self.max_steps} scheduler steps{who}{note}"

    def _regrown(self, a: RunTick) -> bool:
        """A sleeping tick whose entries received something since it fell asleep."""
        mark = self.marks.get(a)
        st = self.states[a.place]
        return mark is not None and any(e.grown(st, m) for e, m in zip(a.tick.entries, mark, strict=True))

    def footprint(self, a: Action) -> tuple[Resource, ...]:
        """The resources action `a` writes (cached per program; see `por.py`). A delivery
        whose element's key matters is cached per key (its head stays put while it waits)."""
        fp = self.fp_memo.get(a)
        if fp is not None:
            return fp
        footprints = self.fp
        assert footprints is not None
        if isinstance(a, Deliver) and footprints.keyed(a.channel[0]):
            head = self.channels[a.channel][0]
            k = (a, element_key(head))
            fp = footprints.memo_keyed.get(k)
            if fp is None:
                fp = footprints.memo_keyed[k] = footprints.action(a, head)
            return fp
        fp = self.fp_memo[a] = footprints.action(a)
        return fp

    def wake(self, written: tuple[Resource, ...]) -> None:
        """The test wrote `written` (a send) or read it (a receive): wake what depends on it."""
        self.sleep = [b for b in self.sleep if not dependent(self.footprint(b), written)]

    def run_until_quiet(self) -> None:
        """Run scheduler actions until nothing can happen any more."""
        while self.step():
            pass

    def actions(self) -> list[Action]:
        """Everything the scheduler could do next, in a deterministic order."""
        acts: list[Action] = []
        table = self.table
        for tp, runs in table.ticks:
            for run in runs:
                if self.runnable(tp, run.place):
                    acts.append(run)
        for key, q in self.channels.items():
            if q:
                acts.append(table.deliver(key))
        for op, releases in table.releases:
            for rel in releases:
                if self.states[rel.place][op.idx]:
                    acts.append(rel)
        return acts

    def runnable(self, tp: TickPlan, p: int) -> bool:
        """Whether running `tp` at `p` would observe something new."""
        st = self.states[p]
        advance = False
        for e in tp.entries:
            if not e.has_value(st):
                return False  # a snapshot of a value that does not exist yet
            if not advance and e.can_advance(st):
                advance = True
        return advance or (any(d.pending(st) for d in tp.deferred) and idle_run_changes(self, tp, p))

    def run_tick(self, tp: TickPlan, p: int, floors: list[Any] | None = None) -> None:
        """Run one tick atomically: choose its entries, evaluate its body, then emit its exits.
        `floors`: the run must take something appended since these marks (see `step`)."""
        st = self.states[p]
        k = self.runs[(id(tp), p)] = self.runs.get((id(tp), p), 0) + 1
        self.total_runs += 1
        if self.run_limit is not None and self.total_runs > self.run_limit:
            raise Pruned()
        self.ctx = ("tick", tp, p, k)
        if self.trace is not None:
            self.trace.append(("tick", tp.label, self.prog.places[p].label, k))
        vals: list[Any] = [None] * len(self.prog.ops)
        self.decide_entries(tp, p, st, vals, floors)
        outs = self._run_body(tp, p, st, vals)
        for x, v in outs:
            self.propagate(x, p, v)

    def decide_entries(
        self, tp: TickPlan, p: int, st: list[Any], vals: list[Any], floors: list[Any] | None = None
    ) -> None:
        """Choose what each entry releases into this run.

        A run must observe something new: one entry is forced to release something new
        (the last that can, unless an earlier one already did), except in a *self-driven*
        run, kept observable by deferred elements (see `idle.py`), which may take nothing.
        Fairness: an entry passed over (it had something new, released nothing new) in
        `fairness` self-driven runs in a row is forced in the next one, so a tick that keeps
        itself busy lets every pending input in within a bounded number of runs.
        """
        entries = tp.entries
        key = (id(tp), p)
        if floors is not None:  # partly awake (sleep sets): something newer than the marks
            advancing = [i for i, e in enumerate(entries) if e.grown(st, floors[i])]
            self_driven = False
        else:
            advancing = [i for i, e in enumerate(entries) if e.can_advance(st)]
            self_driven = any(d.pending(st) for d in tp.deferred) and idle_run_changes(self, tp, p)
        counts = self.starved.get(key)
        if counts is None:
            counts = self.starved[key] = [0] * len(entries)
        hard = {i for i in advancing if counts[i] >= self.fairness} if self_driven else set()
        forced = -1 if self_driven or not advancing else advancing[-1]
        new = False
        for i, e in enumerate(entries):
            vals[e.idx], nt = e.decide(
                self, st, i in hard or (i == forced and not new), floors[i] if floors is not None else None
            )
            new = new or nt
            if nt:
                counts[i] = 0
            elif self_driven and i in advancing:
                counts[i] += 1

    def _run_body(self, tp: TickPlan, p: int, st: Any, vals: list[Any]) -> list[tuple[Op, Any]]:
        """One run of a tick after its entries are decided: the body (carried nodes step on
        their delta), the exits' values, the commits; the tick's idle verdict is dropped
        (the state an idle run would read has changed)."""
        changed: set[int] = set()
        for op in tp.body:
            if op.role is Role.CARRIED:
                self._carried_step(op, p, st, vals, changed)
            else:
                vals[op.idx] = op.tick(self, st, vals)
        outs: list[tuple[Op, Any]] = []
        for x in tp.exits:
            v = x.exit(self, st, vals)
            if v is not NOTHING:
                outs.append((x, v))
        for c in tp.commits:
            c.commit(st)
        self.idle.pop((id(tp), p), None)
        return outs

    def _carried_step(self, op: Op, p: int, st: list[Any], vals: list[Any], changed: set[int]) -> None:
        """A carried op consumes what reached it in this run (deltas / new versions)."""
        cur = self.cur[p]
        acc: Any = [] if op.streamlike else NOTHING
        for port in op.port_order:
            i = op.ins[port]
            v = vals[i]
            if op.in_kinds[port].streamlike:
                if not v:
                    continue
            elif op.in_roles[port] is Role.CARRIED and i not in changed:
                continue
            o = op.push(self, p, st, port, v)
            if o is NOTHING:
                continue
            if op.streamlike:
                acc.extend(o)
            else:
                acc = o
        if op.streamlike:
            vals[op.idx] = acc
            return
        if acc is not NOTHING:
            cur[op.idx] = acc
            changed.add(op.idx)
        vals[op.idx] = cur[op.idx]

    def deliver(self, key: ChannelKey) -> None:
        """Deliver the head of one network channel at its receiver."""
        op, src, dst = key
        x = self.channels[key].popleft()
        self.ctx = ("deliver", op, src, dst, x)
        if self.trace is not None:
            self.trace.append(("deliver", op.node, self.prog.places[src].label, self.prog.places[dst].label, x))
        self.propagate_top(op, dst, [x])

    def release(self, op: AssumeOrderingOp | EdgeBufferOp, p: int) -> None:
        """Release the next element of a top-level assume_ordering buffer, or deliver the
        oldest delta of an edge buffer (`interleavings`, see `asynchrony.py`)."""
        self.ctx = ("order", op, p)
        if self.trace is not None:
            if isinstance(op, EdgeBufferOp):
                self.trace.append(("edge", op.label(), self.prog.places[p].label, op.node, self.states[p][op.idx][0]))
            else:
                self.trace.append(("order", op.node, self.prog.places[p].label))
        self.propagate_top(op, p, op.release(self, self.states[p]))

    # ------------------------------------------------------------- reporting
    def note_release(self, op: Op, value: Any, note: str) -> None:
        """Trace what a choice point released (only when tracing)."""
        if self.trace is not None:
            self.trace.append(("release", op.node, value, note))

    def action_label(self, a: Action) -> str:
        """A short description of a scheduler action."""
        places = self.prog.places
        if isinstance(a, RunTick):
            return f"run {a.tick.label} on {places[a.place].label}"
        if isinstance(a, Deliver):
            op, src, dst = a.channel
            head = render(self.channels[a.channel][0])
            return f"deliver {head} from {places[src].label} to {places[dst].label} ({op.node.op}() at {op.node.site})"
        if isinstance(a.op, EdgeBufferOp):
            head = render(self.states[a.place][a.op.idx][0])
            return f"deliver {head} on {a.op.label()} on {places[a.place].label}"
        return f"release from assume_ordering() at {a.op.node.site} on {places[a.place].label}"

    def where_text(self) -> str:
        """What the execution was doing (for error messages)."""
        c = self.ctx
        places = self.prog.places
        if c[0] == "send":
            return f"processing {render(c[3])} sent to port {c[1].port!r} on {places[c[2]].label}"
        if c[0] == "tick":
            return f"running {c[1].label} on {places[c[2]].label} (run #{c[3]} of this tick)"
        if c[0] == "deliver":
            return f"delivering {render(c[4])} from {places[c[2]].label} to {places[c[3]].label} over {c[1].node.op}() at {c[1].node.site}"
        if c[0] == "order" and isinstance(c[1], EdgeBufferOp):
            return f"delivering the next delta on {c[1].label()} on {places[c[2]].label}"
        if c[0] == "order":
            return f"releasing the next element of assume_ordering() at {c[1].node.site} on {places[c[2]].label}"
        return "starting the program (finite sources and initial values)"
