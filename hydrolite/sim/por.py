"""Independence of scheduler actions, for partial-order reduction (sleep sets, `world.py`).

Two actions are *independent* when running them in either order, from any state where both
can run, leads to the same state (up to the order of unordered data, below) and neither
disables the other; exhaustive mode then explores one order only. Each action has a
footprint: the resources its top-level propagation writes, found statically by following
push edges from where it starts (a send operator at the receiver, a tick's exits, a
top-level assume_ordering) and stopping at buffers. A resource is a 5-tuple (kind, place,
operator, mode, key):

* ``state`` (a stateful top-level operator: fold, count, join, ...): writes conflict, since
  snapshots observe the sequence of versions (and a fold that is not commutative ends
  elsewhere). Exception, **keys**: a per-key operator (a keyed fold / reduce / count /
  first / last, keyed enumerate, unique, keys) updates each key on its own, so writes of
  *different keys* commute; the versions it emits then differ from the previous only at
  that key, and the operators downstream judge what that means for them (their own
  resources are in the footprint too);
* ``sink`` (a sink port): writes conflict, since `Receiver.next()` observes arrival order;
* ``chan`` (appending to one sender's network channel): appends conflict (FIFO order).
  Delivering pops the head and commutes with appends (the head does not change);
* ``buf`` (what a batch / snapshot entry has pending): a tick run consumes from its entries
  and commutes with appends to them as far as the options it had are concerned: the run
  could take exactly what it took with the appended elements present (batches take any
  prefix, snapshots any version not older than the last one seen). Two appends commute on
  a NoOrder batch (it takes any subset), on a keyed batch when the **keys differ** (it
  takes a prefix per key), and on a per-key snapshot (`per_key_snapshots`) when the
  versions differ at different keys (each key keeps its own versions). A whole-map
  snapshot of a keyed singleton orders every version: appends conflict;
* ``ord`` (a top-level assume_ordering buffer): any buffered element may come next, so
  appends commute with each other, but not with a release (an append adds an option);
* ``edge`` (an input edge of a two-input operator, `interleavings`): FIFO like a channel,
  so appends conflict, and delivering the head (``epop``) commutes with appends;
* ``tick`` (one tick on one place): a run conflicts only with itself.

**Keys.** Which key an action writes is known when the action carries one element whose
key travels unchanged to the resource: a delivery (the channel's head; from a cluster
member, the member id the receiver is keyed by), or a send from the test; and the path
keeps element[0] as the key: filters, inspect, keyed maps (values change, keys stay),
merges, entries() / into_keyed() of pairs, weaken_ordering, and the per-key operators
above (their versions change at that key only). Anything else (a map of the whole element,
a tick run's outputs, a release whose element is a choice) writes an unknown key, which
conflicts with every key.

**Reads.** A tick run consumes from its entries, and appends to them give it *new* options
(a longer prefix, a newer version). So a tick put to sleep keeps a mark of what its entries
held (`Entry.mark`, per key for keyed entries); when something is appended, it wakes only
for runs taking something past the mark (`Entry.decide`'s floor): the runs taking nothing
newer were explored in the sibling branch where the tick ran first. A tick's footprint is
therefore what its exits write (and the tick itself): two ticks, or a tick and an append,
that write disjoint resources commute whatever they read.

**Unordered data.** The orders explored as one differ only in the order of elements
within one NoOrder batch, or across the keys of one keyed batch / map: a tick receives
the same multiset (per key, the same sequence), and the sink of such a collection
receives one delta per run in either order. The simulator never promises an order
there, so two such executions are one outcome; `tests/sim/test_por_soundness.py` checks
that the outcomes (sink outputs per delta, per key where keyed, as multisets where
unordered; failures) with and without reduction are the same.

Different places never share a resource. The test's own events wake sleeping actions that
conflict with them: a send by the footprint of its source (with the element's key), a
receive by its sink.

Approximation: fairness counters (`World.starved`) are bookkeeping, not state an action
reads, so a reordering that changes only when an input was passed over is treated as equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ir.meta import Kind
from ..ir.roles import Role
from .actions import Action, Deliver, RunTick
from .asynchrony import EdgeBufferOp, KeyedSnapshotOp
from .ops_aggregate import Aggregate, EnumerateOp, UniqueOp
from .ops_binary import MergeOp
from .ops_element import EntriesOp, FilterMapOp, FilterOp, FlatMapOp, IdentityOp, InspectOp, IntoKeyedOp, KeysOp, MapOp
from .ops_time import AssumeOrderingOp, BatchOp, Entry, SendOp, SinkOp
from .registry import Op

if TYPE_CHECKING:
    from .program import Program

#: (kind, place, operator, mode, key); for ``chan`` / ``pop``: (kind, operator, sender, mode, key)
Resource = tuple[str, int, int, str, Any]
UNKNOWN: Any = None  # the key of a write that may touch any key


@dataclass(frozen=True)
class Template:
    """A resource reached from an operator's output, before the place and key are known."""

    kind: str  # state / sink / chan / buf / ord / edge
    idx: int
    mode: str = ""  # buf / state: "subset" (appends commute), "keyed" (commute on different keys), "" (conflict)
    local: bool = False  # the write touches only the key of the element the action started with


def sink_resource(p: int, idx: int) -> Resource:
    """The resource a test's receive reads (it wakes what writes that sink)."""
    return ("sink", p, idx, "", UNKNOWN)


def element_key(x: Any) -> Any:
    """The key an element carries along a keyed path (element[0] of a pair), or UNKNOWN."""
    if type(x) is not tuple or len(x) != 2:
        return UNKNOWN
    k = x[0]
    try:
        hash(k)
    except TypeError:  # not usable as a key: the program fails on it anyway
        return UNKNOWN
    return k


def _stateful(op: Op) -> bool:
    return type(op).init_state is not Op.init_state


def per_key_state(op: Op) -> bool:
    """Whether `op` keeps its state per key, each key updated by that key's elements only."""
    keyed_in = op.in_kinds[0] is Kind.KEYED_STREAM if op.in_kinds else False
    if isinstance(op, Aggregate | EnumerateOp | KeysOp):
        return keyed_in
    return isinstance(op, UniqueOp)  # elements of different keys are different elements


def keeps_key(op: Op) -> bool:
    """Whether `op` passes on element[0] (a keyed collection: the key; a keyed singleton:
    a version that changed only at the key its input changed at)."""
    if isinstance(op, IdentityOp | FilterOp | InspectOp | MergeOp | IntoKeyedOp | UniqueOp):
        return True
    keyed_in = op.in_kinds[0] in (Kind.KEYED_STREAM, Kind.KEYED_SINGLETON) if op.in_kinds else False
    if isinstance(op, MapOp | FilterMapOp | FlatMapOp):
        return keyed_in  # keyed kernels change values, keep keys
    if isinstance(op, EntriesOp):
        return op.in_kinds[0] is Kind.KEYED_STREAM  # the same pairs (of a map: every entry)
    return per_key_state(op) and not isinstance(op, KeysOp)  # keys() emits bare keys


def _entry(c: Entry, local: bool) -> Template:
    if isinstance(c, BatchOp) and c.subset:
        return Template("buf", c.idx, "subset")
    if (isinstance(c, BatchOp) and c.keyed) or isinstance(c, KeyedSnapshotOp):
        return Template("buf", c.idx, "keyed", local)
    return Template("buf", c.idx)


def reach(op: Op, local: bool, memo: dict[tuple[int, bool], frozenset[Template]]) -> frozenset[Template]:
    """Resources written when `op` pushes a delta to its top-level consumers; `local`: the
    delta is confined to the key of the element the action started with."""
    known = memo.get((op.idx, local))
    if known is not None:
        return known
    memo[(op.idx, local)] = frozenset()  # cycles of push edges do not exist, but stay safe
    out: set[Template] = set()
    for c, _ in op.consumers:
        if isinstance(c, Entry) and c.role is Role.ENTRY:
            out.add(_entry(c, local))
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
                keyed = per_key_state(c)
                out.add(Template("state", c.idx, "keyed" if keyed else "", local and keyed))
            out.update(reach(c, local and keeps_key(c), memo))
    memo[(op.idx, local)] = result = frozenset(out)
    return result


class Footprints:
    """Footprints of a program's actions and test events (computed once per simulator)."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.memo: dict[tuple[int, bool], frozenset[Template]] = {}
        self.memo_actions: dict[Action, tuple[Resource, ...]] = {}  # footprints that need no key
        self.memo_keyed: dict[tuple[Action, Any], tuple[Resource, ...]] = {}  # deliveries, per key
        self.ticks: dict[int, frozenset[Template]] = {}
        self._keyed: dict[int, bool] = {}
        for tp in prog.ticks:
            out: set[Template] = set()
            for x in tp.exits:
                out |= reach(x, False, self.memo)
            self.ticks[id(tp)] = frozenset(out)

    def keyed(self, op: Op) -> bool:
        """Whether what `op` pushes writes some resource per key (its footprint needs the key)."""
        known = self._keyed.get(op.idx)
        if known is None:
            known = self._keyed[op.idx] = any(t.local for t in reach(op, True, self.memo))
        return known

    def action(self, a: Action, head: Any = None) -> tuple[Resource, ...]:
        """The resources action `a` writes; `head`: the element a delivery delivers."""
        if isinstance(a, RunTick):
            return self._at(self.ticks[id(a.tick)], a.place, UNKNOWN) + (("tick", a.place, id(a.tick), "", UNKNOWN),)
        if isinstance(a, Deliver):
            op, src, dst = a.channel
            pop: Resource = ("pop", op.idx, src, "", dst)
            return self._at(reach(op, True, self.memo), dst, element_key(head)) + (pop,)
        kind = "epop" if isinstance(a.op, EdgeBufferOp) else "release"
        return self._at(reach(a.op, False, self.memo), a.place, UNKNOWN) + ((kind, a.place, a.op.idx, "", UNKNOWN),)

    def send(self, op: Op, p: int, x: Any) -> tuple[Resource, ...]:
        """The resources a test's send of `x` to source `op` at place `p` writes."""
        return self._at(reach(op, True, self.memo), p, element_key(x))

    @staticmethod
    def _at(templates: frozenset[Template], p: int, key: Any) -> tuple[Resource, ...]:
        out: list[Resource] = []
        for t in templates:
            if t.kind == "chan":
                out.append(("chan", t.idx, p, "", UNKNOWN))
            else:
                out.append((t.kind, p, t.idx, t.mode, key if t.local else UNKNOWN))
        return tuple(out)


def same_key(a: Any, b: Any) -> bool:
    """Whether two known keys may be the same key (a failing == counts as the same)."""
    try:
        return a is b or bool(a == b)
    except Exception:  # an element type whose == fails: assume they clash
        return True


def conflict(r: Resource, s: Resource) -> bool:
    """Whether two writes, in either order, can lead to different executions."""
    if r[1] != s[1] or r[2] != s[2]:
        return False
    kind = r[0]
    if kind != s[0]:
        return {kind, s[0]} == {"ord", "release"}  # a release chooses among what is buffered
    if kind in ("ord", "pop"):
        return False  # appends to a chosen-release buffer / one channel's head: they commute
    mode = r[3]
    if mode == "subset":
        return False
    if mode == "keyed":
        return r[4] is UNKNOWN or s[4] is UNKNOWN or same_key(r[4], s[4])
    return True  # state, sink, chan, buf, edge, tick


def dependent(a: tuple[Resource, ...], b: tuple[Resource, ...]) -> bool:
    """Whether two footprints conflict on some resource."""
    return any(conflict(r, s) for r in a for s in b)
