"""One execution of a program: per-place state, eager top-level propagation, tick runs and the
scheduler's actions. Every non-deterministic decision goes through `World.choose`.

Execution model:
* A send from the test enters its source and is propagated *eagerly* through the top-level
  operators of its location (deterministic functions of their inputs). Asynchrony between
  top-level operators is observable only where something samples it, and is modelled there:
  a snapshot may read any version not older than the last one it saw; a batch takes any
  prefix (or subset) of what is pending.
* The scheduler's actions are: run a tick (on one process or cluster member), deliver the
  head of a network channel (FIFO per sender/receiver pair; channels interleave freely), or
  release the next element of a top-level `assume_ordering`. They run only when the test
  waits for an output (`Receiver.next()` and friends), one at a time; when several are
  possible, which one runs is a choice.
* Partial-order reduction (exhaustive mode, `por=True`): actions at different places
  commute, so after exploring action a, its later siblings explore with a *asleep* (sleep
  sets) until something touching a's place happens (an action there, or the test sending
  or receiving there). An execution whose every next action is asleep repeats an explored
  one and is abandoned (`Pruned`).
* A tick is runnable when running it observes something new: a batch can release an
  element, a snapshot a newer version, or a deferred stream holds elements. One of its
  entries is forced to release something new (a run that sees nothing new is not explored:
  it would be indistinguishable from not running, and would make exploration infinite).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from ..locations.locations import MemberId
from .errors import ExplorationLimit, Pruned, SimUsageError
from .program import Program, TickPlan
from ..ir.roles import Role
from .registry import Op
from .values import NOTHING, UNSET, render

if TYPE_CHECKING:
    from .ops_time import AssumeOrderingOp, SendOp, SourceOp

Action = tuple[Any, ...]
ChannelKey = tuple["SendOp", int, int]


class World:
    """The mutable state of one execution."""

    __slots__ = ("prog", "states", "cur", "choose", "trace", "channels", "steps", "max_steps", "ctx", "sends", "runs", "por", "sleep", "filtered")

    def __init__(self, prog: Program, choose: Callable[[int], int], trace: bool = False, max_steps: int = 10_000, por: bool = False) -> None:
        self.prog = prog
        self.por = por
        self.sleep: list[Action] = []
        self.filtered = False  # whether the sleep set ever hid an action (choices then depend on it)
        self.choose = choose
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
                raise SimUsageError(f"{c.node.op}() at {c.node.site} would emit elements before its tick ever ran (unsupported in an aligned region)")
            self._carried_init(c, p, o)

    # ------------------------------------------------------------- top level
    def send(self, op: SourceOp, p: int, x: Any) -> None:
        """The test sends `x` to a source port: propagate it through the top level."""
        self.ctx = ("send", op, p, x)
        self.sends.append((getattr(op.node, "port"), p, x))
        if self.sleep:
            self.touch(p)
        if self.trace is not None:
            self.trace.append(("send", getattr(op.node, "port"), self.prog.places[p].label, x))
        self.propagate(op, p, [x])

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
        dests = self.prog.places_of[getattr(op.node, "dest")]
        wrap: Callable[[Any], Any] = (lambda v: v) if member is None else (lambda v: (MemberId(member), v))
        if op.mode is SendMode.DEMUX:
            if type(x) is not tuple or len(x) != 2:
                raise op.fail(self, x, TypeError("demux() needs (member_id, value) tuples"))
            i = x[0].raw if isinstance(x[0], MemberId) else x[0]
            if not isinstance(i, int) or not 0 <= i < len(dests):
                raise op.fail(self, x, ValueError(f"demux() to member {x[0]!r}, but the cluster has {len(dests)} members"))
            return [(dests[i], wrap(x[1]))]
        return [(d, wrap(x)) for d in dests]

    # ------------------------------------------------------------- scheduler
    def step(self) -> bool:
        """Run one scheduler action (a choice when several are possible); False when quiescent."""
        acts = self.actions()
        if not acts:
            return False
        self.steps += 1
        if self.steps > self.max_steps:
            raise ExplorationLimit(
                f"the execution did not quiesce after {self.max_steps} scheduler steps: a tick keeps "
                "producing work for itself (e.g. a stream cycle that is never empty)"
            )
        if self.por:
            sleep = self.sleep
            if sleep:
                awake = [a for a in acts if a not in sleep]
                if not awake:
                    raise Pruned()
                self.filtered = self.filtered or len(awake) < len(acts)
                acts = awake
        i = self.choose(len(acts)) if len(acts) > 1 else 0
        a = acts[i]
        if self.por:
            here = self.place_of(a)
            self.sleep = [b for b in self.sleep + acts[:i] if self.place_of(b) != here]
        if self.trace is not None and len(acts) > 1:
            self.trace.append(("choice", [self.action_label(x) for x in acts], i))
        if a[0] == 0:
            self.run_tick(a[1], a[2])
        elif a[0] == 1:
            self.deliver(a[1])
        else:
            self.release(a[1], a[2])
        return True

    @staticmethod
    def place_of(a: Action) -> int:
        """The place an action reads and writes (actions at different places commute)."""
        return int(a[1][2]) if a[0] == 1 else int(a[2])

    def touch(self, p: int) -> None:
        """The test interacted with place `p`: wake the actions sleeping there."""
        self.sleep = [b for b in self.sleep if self.place_of(b) != p]

    def run_until_quiet(self) -> None:
        """Run scheduler actions until nothing can happen any more."""
        while self.step():
            pass

    def actions(self) -> list[Action]:
        """Everything the scheduler could do next, in a deterministic order."""
        acts: list[Action] = []
        for tp in self.prog.ticks:
            for p in tp.places:
                if self.runnable(tp, p):
                    acts.append((0, tp, p))
        for key, q in self.channels.items():
            if q:
                acts.append((1, key))
        for op in self.prog.orderings:
            for p in self.prog.places_of[op.node.meta.loc]:  # type: ignore[index]
                if self.states[p][op.idx]:
                    acts.append((2, op, p))
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
        return advance or any(d.pending(st) for d in tp.deferred)

    def run_tick(self, tp: TickPlan, p: int) -> None:
        """Run one tick atomically: choose its entries, evaluate its body, then emit its exits."""
        st = self.states[p]
        k = self.runs[(id(tp), p)] = self.runs.get((id(tp), p), 0) + 1
        self.ctx = ("tick", tp, p, k)
        if self.trace is not None:
            self.trace.append(("tick", tp.label, self.prog.places[p].label, k))
        vals: list[Any] = [None] * len(self.prog.ops)
        self.decide_entries(tp, st, vals)
        changed: set[int] = set()
        for op in tp.body:
            if op.role is Role.CARRIED:
                self._carried_step(op, p, st, vals, changed)
            else:
                vals[op.idx] = op.tick(self, st, vals)
        outs = []
        for x in tp.exits:
            v = x.exit(self, st, vals)  # type: ignore[attr-defined]
            if v is not NOTHING:
                outs.append((x, v))
        for c in tp.commits:
            c.commit(st)  # type: ignore[attr-defined]
        for x, v in outs:
            self.propagate(x, p, v)

    def decide_entries(self, tp: TickPlan, st: list[Any], vals: list[Any]) -> None:
        """Choose what each entry releases into this run; one is forced to release something new
        (unless a deferred stream makes the run observable anyway)."""
        entries = tp.entries
        forced = -1
        if not any(d.pending(st) for d in tp.deferred):
            for i in range(len(entries) - 1, -1, -1):
                if entries[i].can_advance(st):
                    forced = i
                    break
        new = False
        for i, e in enumerate(entries):
            vals[e.idx], nt = e.decide(self, st, i == forced and not new)
            new = new or nt

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
        self.propagate(op, dst, [x])

    def release(self, op: AssumeOrderingOp, p: int) -> None:
        """Release the next element of a top-level assume_ordering buffer."""
        self.ctx = ("order", op, p)
        if self.trace is not None:
            self.trace.append(("order", op.node, self.prog.places[p].label))
        self.propagate(op, p, op.release(self, self.states[p]))

    # ------------------------------------------------------------- reporting
    def note_release(self, op: Op, value: Any, note: str) -> None:
        """Trace what a choice point released (only when tracing)."""
        if self.trace is not None:
            self.trace.append(("release", op.node, value, note))

    def action_label(self, a: Action) -> str:
        """A short description of a scheduler action."""
        if a[0] == 0:
            return f"run {a[1].label} on {self.prog.places[a[2]].label}"
        if a[0] == 1:
            op, src, dst = a[1]
            head = render(self.channels[a[1]][0])
            return f"deliver {head} from {self.prog.places[src].label} to {self.prog.places[dst].label} ({op.node.op}() at {op.node.site})"
        return f"release from assume_ordering() at {a[1].node.site} on {self.prog.places[a[2]].label}"

    def where_text(self) -> str:
        """What the execution was doing (for error messages)."""
        c = self.ctx
        places = self.prog.places
        if c[0] == "send":
            return f"processing {render(c[3])} sent to port {getattr(c[1].node, 'port')!r} on {places[c[2]].label}"
        if c[0] == "tick":
            return f"running {c[1].label} on {places[c[2]].label} (run #{c[3]} of this tick)"
        if c[0] == "deliver":
            return f"delivering {render(c[4])} from {places[c[2]].label} to {places[c[3]].label} over {c[1].node.op}() at {c[1].node.site}"
        if c[0] == "order":
            return f"releasing the next element of assume_ordering() at {c[1].node.site} on {places[c[2]].label}"
        return "starting the program (finite sources and initial values)"
