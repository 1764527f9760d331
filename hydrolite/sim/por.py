"""Independence of scheduler actions, for partial-order reduction (sleep sets, `world.py`).

Two actions are *independent* when running them in either order gives the same executions,
so exhaustive mode explores one order only. Each action has a footprint: the resources its
top-level propagation writes, found statically by following push edges from where it starts
(a send operator at the receiver, a tick's exits, a top-level assume_ordering) and stopping
at buffers:

* ``state`` (a stateful top-level operator: fold, count, join, ...): writes conflict, since
  snapshots observe the sequence of versions;
* ``sink`` (a sink port): writes conflict, since `Receiver.next()` observes arrival order;
* ``chan`` (appending to one sender's network channel): appends conflict (FIFO order).
  Delivering pops the head and commutes with appends (the head does not change);
* ``buf`` (what a batch / snapshot entry has pending): a tick run consumes from its entries
  and commutes with appends to them as far as the options it had are concerned: the run
  could take exactly what it took with the appended elements present (batches take any
  prefix, snapshots any version not older than the last one seen). Two appends commute on a NoOrder batch (it takes any
  subset) and on a keyed batch when the keys differ (it takes a prefix per key); a
  delivery straight from a cluster member into a keyed batch appends under the member's
  key, so replies gathered from different members commute;
* ``ord`` (a top-level assume_ordering buffer): any buffered element may come next, so
  appends commute with each other, but not with a release (an append adds an option);
* ``edge`` (an input edge of a two-input operator, `interleavings`): FIFO like a channel,
  so appends conflict, and delivering the head (``epop``) commutes with appends.

A tick run consumes from its entries, and appends to them give it *new* options (a
longer prefix, a newer version). So a tick put to sleep keeps a mark of what its entries
held (`Entry.mark`); when something is appended, it wakes only for runs taking something
past the mark (`Entry.decide`'s floor): the runs taking nothing newer were explored in
the sibling branch where the tick ran first.

Different places never share a resource. The test's own events wake sleeping actions that
conflict with them: a send by the footprint of its source, a receive by its sink.

Approximation: fairness counters (`World.starved`) are bookkeeping, not state an action
reads, so a reordering that changes only when an input was passed over is treated as equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ir.meta import Kind
from ..ir.roles import Role
from .asynchrony import EdgeBufferOp
from .ops_time import AssumeOrderingOp, BatchOp, Entry, SendOp, SinkOp
from .registry import Op

if TYPE_CHECKING:
    from .program import Program

Resource = tuple[Any, ...]


@dataclass(frozen=True)
class Template:
    """A resource reached from an operator's output, before the place is known."""

    kind: str  # state / sink / chan / buf / ord
    idx: int
    commutes: str = ""  # for buf: "subset" (NoOrder), "keyed", or "" (appends conflict)
    direct: bool = False  # for buf: fed straight by the starting operator (keys are the sender's)


def _stateful(op: Op) -> bool:
    return type(op).init_state is not Op.init_state


def reach(op: Op, memo: dict[int, frozenset[Template]]) -> frozenset[Template]:
    """Resources written when `op` pushes a delta to its top-level consumers."""
    known = memo.get(op.idx)
    if known is not None:
        return known
    memo[op.idx] = frozenset()  # cycles of push edges do not exist, but stay safe
    out: set[Template] = set()
    for c, _ in op.consumers:
        if isinstance(c, Entry) and c.role is Role.ENTRY:
            mode = (
                "subset"
                if isinstance(c, BatchOp) and c.subset
                else "keyed"
                if isinstance(c, BatchOp) and c.keyed
                else ""
            )
            out.add(Template("buf", c.idx, mode, direct=True))
        elif isinstance(c, SinkOp):
            out.add(Template("sink", c.idx))
        elif isinstance(c, SendOp):
            out.add(Template("chan", c.idx))
        elif isinstance(c, AssumeOrderingOp) and c.role is Role.TOP:
            out.add(Template("ord", c.idx))
        elif isinstance(c, EdgeBufferOp):
            out.add(Template("edge", c.idx))
        else:
            if _stateful(c):
                out.add(Template("state", c.idx))
            out.update(Template(t.kind, t.idx, t.commutes) for t in reach(c, memo))  # not direct any more
    memo[op.idx] = result = frozenset(out)
    return result


class Footprints:
    """Footprints of a program's actions and test events (computed once per simulator)."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.memo: dict[int, frozenset[Template]] = {}
        self.memo_actions: dict[Any, tuple[Resource, ...]] = {}  # World.footprint's cache
        self.ticks: dict[int, frozenset[Template]] = {}
        for tp in prog.ticks:
            out: set[Template] = set()
            for x in tp.exits:
                out |= reach(x, self.memo)
            self.ticks[id(tp)] = frozenset(out)

    def action(self, a: tuple[Any, ...]) -> tuple[Resource, ...]:
        """The resources action `a` writes (see `World.actions` for the encoding)."""
        if a[0] == 0:
            return self._at(self.ticks[id(a[1])], a[2], None) + (("tick", a[2], id(a[1])),)
        if a[0] == 1:
            op, src, dst = a[1]
            keyed_by_sender = op.kind is Kind.KEYED_STREAM and self.prog.places[src].member is not None
            return self._at(reach(op, self.memo), dst, src if keyed_by_sender else None) + (("pop", op.idx, src, dst),)
        pop = "epop" if isinstance(a[1], EdgeBufferOp) else "release"
        return self._at(reach(a[1], self.memo), a[2], None) + ((pop, a[2], a[1].idx),)

    def send(self, op: Op, p: int) -> tuple[Resource, ...]:
        """The resources a test's send to source `op` at place `p` writes."""
        return self._at(reach(op, self.memo), p, None)

    @staticmethod
    def _at(templates: frozenset[Template], p: int, key: Any) -> tuple[Resource, ...]:
        out: list[Resource] = []
        for t in templates:
            if t.kind == "chan":
                out.append(("chan", t.idx, p))
            elif t.kind == "buf":
                out.append(("buf", p, t.idx, t.commutes, key if t.direct else None))
            else:
                out.append((t.kind, p, t.idx))
        return tuple(out)


def conflict(r: Resource, s: Resource) -> bool:
    """Whether two writes, in either order, can lead to different executions."""
    if r[1:3] != s[1:3]:
        return False
    kinds = {r[0], s[0]}
    if kinds == {"ord", "release"}:
        return True  # a release chooses among what is buffered: an append adds an option
    if r[0] != s[0]:
        return False
    kind = r[0]
    if kind in ("ord", "pop"):
        return False  # appends to a chosen-release buffer / one channel's head: they commute
    if kind == "buf":
        mode = r[3]
        if mode == "subset":
            return False
        if mode == "keyed":
            return r[4] is None or s[4] is None or r[4] == s[4]
        return True
    return True  # state, sink, chan, tick


def dependent(a: tuple[Resource, ...], b: tuple[Resource, ...]) -> bool:
    """Whether two footprints conflict on some resource."""
    return any(conflict(r, s) for r in a for s in b)
