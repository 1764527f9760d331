"""IR node classes.

Each user-facing collection wraps exactly one node. Nodes are frozen dataclasses compared
by identity (a node used twice is one shared upstream, not two equal ones); their children
are derived from their fields, and each records its `Meta` and the user's call site.
Backends (simulator, Spark planner) attach behaviour through registries keyed by class.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any, ClassVar

from .._site import CallSite
from ..nondet import NonDet
from ..port_values import as_declared, declared_result, holder
from .ids import AlignId, CycleId, LocId, TickId
from .meta import Meta


@dataclass(frozen=True, eq=False, kw_only=True)
class Node:
    """Base of every IR node."""

    meta: Meta
    site: CallSite
    #: The user's name for the operator (`name=`): its state's identity across program
    #: versions (see `hydrolite.ir.stable`); None lets a structural fingerprint decide.
    name: str | None = None
    op: ClassVar[str] = "node"  # the operator's user-facing name, used in dumps
    #: A choice point into a tick (`Batch`, `Snapshot`) when its input lives outside the tick.
    entry: ClassVar[bool] = False
    #: Push-driven even on a bounded input (roots that hand elements on: sinks, sends).
    push_root: ClassVar[bool] = False
    #: Keeps state across ticks whatever its role (previous-tick values, run-once inputs).
    always_stateful: ClassVar[bool] = False
    #: Element-wise and stateless: inserting, removing or editing it upstream of a stateful
    #: operator does not change that operator's state identity (`hydrolite.ir.stable`).
    passthrough: ClassVar[bool] = False
    #: Can move into a merged tick with an aligned region (`passes.align_analysis`); inputs,
    #: network arrivals and outputs of other ticks cannot: they become the region's entries.
    movable: ClassVar[bool] = True

    def keeps_history(self) -> bool:
        """Whether, outside a tick body, its output depends on earlier inputs, not only on
        this tick's delta (folds, counts, unique...). Backends keep such a node's state
        across ticks (see `hydrolite.ir.roles`)."""
        return False

    @cached_property
    def children(self) -> tuple[Node, ...]:
        """Input nodes, in field order (derived from the fields, never stored twice)."""
        out: list[Node] = []
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Node):
                out.append(value)
            elif isinstance(value, tuple):
                out.extend(v for v in value if isinstance(v, Node))
        return tuple(out)

    def params(self) -> dict[str, Any]:
        """Non-node, non-meta fields (for printing and for backends)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("meta", "site")
            and not isinstance(getattr(self, f.name), Node)
            and not (f.name == "name" and self.name is None)
        }


# ---------------------------------------------------------------- leaves
@dataclass(frozen=True, eq=False, kw_only=True)
class Source(Node):
    """A named input port, bound later by the simulator or the Spark runtime."""

    port: str
    op: ClassVar[str] = "source"
    movable: ClassVar[bool] = False


@dataclass(frozen=True, eq=False, kw_only=True)
class SourceIter(Node):
    """A finite, literal top-level input."""

    values: tuple[Any, ...]
    op: ClassVar[str] = "source_iter"
    movable: ClassVar[bool] = False
    always_stateful: ClassVar[bool] = True


@dataclass(frozen=True, eq=False, kw_only=True)
class TickConstant(Node):
    """A singleton holding the same value in every tick."""

    value: Any
    op: ClassVar[str] = "singleton"


_NO_INITIAL: Any = object()


@dataclass(frozen=True, eq=False, kw_only=True)
class CycleSource(Node):
    """The read side of a tick cycle: what its `CycleSink` produced for this tick."""

    cycle: CycleId
    initial: Any = _NO_INITIAL  # value in the first tick (singleton cycles)
    op: ClassVar[str] = "cycle_source"

    @property
    def has_initial(self) -> bool:
        return self.initial is not _NO_INITIAL


# ---------------------------------------------------------------- element-wise
@dataclass(frozen=True, eq=False, kw_only=True)
class Unary(Node):
    """An operator with one input."""

    input: Node


@dataclass(frozen=True, eq=False, kw_only=True)
class Map(Unary):
    """Apply f to each element (keyed: to each value; singleton: to the value)."""

    f: Callable[..., Any]
    op: ClassVar[str] = "map"
    passthrough: ClassVar[bool] = True

    def run_fn(self) -> Callable[..., Any]:
        """`f` as every backend runs it: its results held as its return annotation declares
        (`-> float`: an int result is a float, as in Spark's column; `port_values`)."""
        return as_declared(self.f, declared_result(self.f))


@dataclass(frozen=True, eq=False, kw_only=True)
class Filter(Unary):
    """Keep elements for which f is true (singleton: becomes an optional singleton)."""

    f: Callable[..., Any]
    op: ClassVar[str] = "filter"
    passthrough: ClassVar[bool] = True


@dataclass(frozen=True, eq=False, kw_only=True)
class FilterMap(Unary):
    """Apply f and keep results that are not None."""

    f: Callable[..., Any]
    op: ClassVar[str] = "filter_map"
    passthrough: ClassVar[bool] = True

    def run_fn(self) -> Callable[..., Any]:
        """`f` as every backend runs it (see `Map.run_fn`; `-> float | None` holds floats)."""
        return as_declared(self.f, declared_result(self.f))


@dataclass(frozen=True, eq=False, kw_only=True)
class FlatMap(Unary):
    """Apply f and emit every element of the iterable it returns."""

    f: Callable[..., Any]
    op: ClassVar[str] = "flat_map"
    passthrough: ClassVar[bool] = True


@dataclass(frozen=True, eq=False, kw_only=True)
class Inspect(Unary):
    """Call f on each element for its side effect; pass elements through."""

    f: Callable[..., Any]
    op: ClassVar[str] = "inspect"
    passthrough: ClassVar[bool] = True


# ---------------------------------------------------------------- aggregation
@dataclass(frozen=True, eq=False, kw_only=True)
class Fold(Unary):
    """acc = f(acc, x) from `init` (keyed: per key). `commutative` marks order-insensitive."""

    init: Any
    f: Callable[[Any, Any], Any]
    commutative: bool
    op: ClassVar[str] = "fold"

    def keeps_history(self) -> bool:
        return True

    def declared_acc(self) -> bool:
        """Whether `acc_type=` named the accumulator's type (else it is `type(init)`)."""
        return self.meta.elem is not type(self.init)

    def _acc_holder(self) -> Callable[[Any], Any] | None:
        return holder(self.meta.elem, strict=True) if self.declared_acc() else None

    def run_fn(self) -> Callable[[Any, Any], Any]:
        """`f` as every backend runs it: with `acc_type=`, each accumulator held as that type
        (`acc_type=float`: `0 + 1` is `1.0`, as Spark's column holds it)."""
        return as_declared(self.f, self._acc_holder())

    def run_init(self) -> Any:
        """`init` as every backend starts from it (held as `acc_type=` declares)."""
        convert = self._acc_holder()
        return self.init if convert is None else convert(self.init)


@dataclass(frozen=True, eq=False, kw_only=True)
class Reduce(Unary):
    """Combine elements pairwise with f; empty input gives an empty optional."""

    f: Callable[[Any, Any], Any]
    commutative: bool
    op: ClassVar[str] = "reduce"

    def keeps_history(self) -> bool:
        return True


@dataclass(frozen=True, eq=False, kw_only=True)
class Count(Unary):
    """Number of elements (keyed: per key)."""

    op: ClassVar[str] = "count"

    def keeps_history(self) -> bool:
        return True


@dataclass(frozen=True, eq=False, kw_only=True)
class First(Unary):
    """The first element, if any."""

    op: ClassVar[str] = "first"

    def keeps_history(self) -> bool:
        return True


@dataclass(frozen=True, eq=False, kw_only=True)
class Last(Unary):
    """The last element, if any."""

    op: ClassVar[str] = "last"

    def keeps_history(self) -> bool:
        return True


@dataclass(frozen=True, eq=False, kw_only=True)
class Enumerate(Unary):
    """Pair each element with its index (keyed: index within its key)."""

    op: ClassVar[str] = "enumerate"

    def keeps_history(self) -> bool:
        return True


@dataclass(frozen=True, eq=False, kw_only=True)
class Unique(Unary):
    """Drop elements seen before (across ticks at top level, within the batch in a tick)."""

    op: ClassVar[str] = "unique"

    def keeps_history(self) -> bool:
        return True


@dataclass(frozen=True, eq=False, kw_only=True)
class Sort(Unary):
    """Sort a bounded collection (by `key` when given)."""

    key: Callable[[Any], Any] | None = None
    op: ClassVar[str] = "sort"


# ---------------------------------------------------------------- binary
@dataclass(frozen=True, eq=False, kw_only=True)
class Binary(Node):
    """An operator with two inputs."""

    left: Node
    right: Node


@dataclass(frozen=True, eq=False, kw_only=True)
class CrossSingleton(Binary):
    """Pair every element of the stream `left` with the singleton `right`."""

    op: ClassVar[str] = "cross_singleton"


@dataclass(frozen=True, eq=False, kw_only=True)
class CrossProduct(Binary):
    """Every pair of elements of two streams."""

    op: ClassVar[str] = "cross_product"

    def keeps_history(self) -> bool:
        return True


@dataclass(frozen=True, eq=False, kw_only=True)
class Join(Binary):
    """Equi-join of (k, v1) and (k, v2) into (k, (v1, v2))."""

    op: ClassVar[str] = "join"

    def keeps_history(self) -> bool:
        return True


@dataclass(frozen=True, eq=False, kw_only=True)
class AntiJoin(Binary):
    """Elements (k, v) of `left` whose k is not in the bounded stream `right`."""

    op: ClassVar[str] = "anti_join"


@dataclass(frozen=True, eq=False, kw_only=True)
class Chain(Binary):
    """All of `left`, then all of `right` (both bounded)."""

    op: ClassVar[str] = "chain"


@dataclass(frozen=True, eq=False, kw_only=True)
class MergeUnordered(Binary):
    """Interleave two streams in any order."""

    op: ClassVar[str] = "merge_unordered"


@dataclass(frozen=True, eq=False, kw_only=True)
class Zip(Binary):
    """Pair two singletons (empty when an optional side is empty)."""

    op: ClassVar[str] = "zip"


@dataclass(frozen=True, eq=False, kw_only=True)
class KeyedLookup(Binary):
    """Look up each key of the keyed stream `left` in the keyed singleton `right`.

    `keep_missing`: emit (v, None) for absent keys instead of dropping them.
    """

    keep_missing: bool
    op: ClassVar[str] = "lookup_keyed_singleton"


@dataclass(frozen=True, eq=False, kw_only=True)
class KeyedGet(Binary):
    """The value of the keyed singleton `left` at the key held by singleton `right`."""

    op: ClassVar[str] = "get"


@dataclass(frozen=True, eq=False, kw_only=True)
class UnwrapOr(Unary):
    """An optional singleton's value, or `default` when empty."""

    default: Any
    op: ClassVar[str] = "unwrap_or"


# ---------------------------------------------------------------- reshaping
@dataclass(frozen=True, eq=False, kw_only=True)
class IntoKeyed(Unary):
    """A stream of (k, v) pairs seen as a keyed stream."""

    op: ClassVar[str] = "into_keyed"


@dataclass(frozen=True, eq=False, kw_only=True)
class Entries(Unary):
    """A keyed collection as a stream of (k, v) pairs."""

    op: ClassVar[str] = "entries"


@dataclass(frozen=True, eq=False, kw_only=True)
class Keys(Unary):
    """The keys of a keyed collection (each once)."""

    op: ClassVar[str] = "keys"

    def keeps_history(self) -> bool:
        return self.input.meta.kind.streamlike  # keys seen before are not repeated


@dataclass(frozen=True, eq=False, kw_only=True)
class Values(Unary):
    """The values of a keyed collection, keys dropped."""

    op: ClassVar[str] = "values"


@dataclass(frozen=True, eq=False, kw_only=True)
class IntoStream(Unary):
    """A singleton (or optional) in a tick as a stream of zero or one element."""

    op: ClassVar[str] = "into_stream"


@dataclass(frozen=True, eq=False, kw_only=True)
class IntoSingleton(Unary):
    """An optional singleton as a singleton of `value | None`."""

    op: ClassVar[str] = "into_singleton"


# ---------------------------------------------------------------- time and order
@dataclass(frozen=True, eq=False, kw_only=True)
class Batch(Unary):
    """Some prefix (ordered) or subset (unordered) of the pending elements enters `tick`.

    With `align`, the batch is taken at an align point (batch_aligned).
    """

    tick: TickId
    nondet: NonDet
    align: AlignId | None = None
    op: ClassVar[str] = "batch"
    entry: ClassVar[bool] = True


@dataclass(frozen=True, eq=False, kw_only=True)
class Snapshot(Unary):
    """Some version (never older than the last one seen) of a changing value enters `tick`."""

    tick: TickId
    nondet: NonDet
    align: AlignId | None = None
    op: ClassVar[str] = "snapshot"
    entry: ClassVar[bool] = True


@dataclass(frozen=True, eq=False, kw_only=True)
class AllTicks(Unary):
    """Concatenate a stream's batches over all ticks into a top-level stream."""

    op: ClassVar[str] = "all_ticks"
    movable: ClassVar[bool] = False


@dataclass(frozen=True, eq=False, kw_only=True)
class Latest(Unary):
    """A tick singleton as a top-level value that changes as ticks run."""

    op: ClassVar[str] = "latest"
    movable: ClassVar[bool] = False


@dataclass(frozen=True, eq=False, kw_only=True)
class DeferTick(Unary):
    """What the input held in the previous tick (empty in the first tick)."""

    op: ClassVar[str] = "defer_tick"
    always_stateful: ClassVar[bool] = True


@dataclass(frozen=True, eq=False, kw_only=True)
class AssumeOrdering(Unary):
    """Treat a NoOrder stream as TotalOrder, justified by `nondet`."""

    nondet: NonDet
    op: ClassVar[str] = "assume_ordering"
    passthrough: ClassVar[bool] = True


@dataclass(frozen=True, eq=False, kw_only=True)
class WeakenOrdering(Unary):
    """Forget the order of a stream (always safe)."""

    op: ClassVar[str] = "weaken_ordering"
    passthrough: ClassVar[bool] = True


# ---------------------------------------------------------------- network
class SendMode(enum.Enum):
    """How a send distributes elements over the destination."""

    DIRECT = "send"  # process -> process, or every member -> one process
    BROADCAST = "broadcast"  # every element to every member of a cluster
    DEMUX = "demux"  # (member_id, x): x to that member only
    BY_KEY = "demux_by_key"  # keyed (k, v): to the member owning k (locations.sharding)


@dataclass(frozen=True, eq=False, kw_only=True)
class Send(Unary):
    """Move elements over the network to `dest` (asynchronous, may be delayed)."""

    dest: LocId
    mode: SendMode
    op: ClassVar[str] = "send"
    movable: ClassVar[bool] = False
    push_root: ClassVar[bool] = True


# ---------------------------------------------------------------- alignment
@dataclass(frozen=True, eq=False, kw_only=True)
class ReleaseAligned(Unary):
    """Release elements only once every later aligned batch/snapshot at `align` reflects them."""

    align: AlignId
    op: ClassVar[str] = "release_aligned"
    movable: ClassVar[bool] = False


@dataclass(frozen=True, eq=False, kw_only=True)
class AlignedAt(Unary):
    """Explicit mode: mark this collection as an upstream to align at `align`."""

    align: AlignId
    op: ClassVar[str] = "aligned_at"


# ---------------------------------------------------------------- roots
@dataclass(frozen=True, eq=False, kw_only=True)
class Sink(Unary):
    """A named output port."""

    port: str
    op: ClassVar[str] = "sink"
    push_root: ClassVar[bool] = True


@dataclass(frozen=True, eq=False, kw_only=True)
class CycleSink(Unary):
    """The write side of a tick cycle (its input is usually a DeferTick)."""

    cycle: CycleId
    op: ClassVar[str] = "cycle_sink"
    always_stateful: ClassVar[bool] = True


_ABSTRACT: frozenset[type[Node]] = frozenset({Node, Unary, Binary})


def node_classes() -> tuple[type[Node], ...]:
    """Every concrete node class, sorted by name (for registry completeness tests)."""
    seen: set[type[Node]] = set()
    todo: list[type[Node]] = [Node]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return tuple(sorted((c for c in seen if c not in _ABSTRACT), key=lambda c: c.__name__))


def tick_of(node: Node) -> TickId | None:
    """The tick a node lives in, if any."""
    loc = node.meta.loc
    return loc if isinstance(loc, TickId) else None
