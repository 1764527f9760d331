"""`Stream[T, L, B, O]`: a growing sequence (TotalOrder) or bag (NoOrder) of T at L.

The examples start from the names hydrolite/live/conftest.py defines: a fresh program with
`server`, `client`, `workers` and `tick`, and `run`/`outcomes` (`hydrolite.live.demo`).
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from typing_extensions import TypeForm

from .._site import capture_site
from ..errors import BuildError
from ..ir import nodes as n
from ..ir.ids import ClusterId, ProcessId
from ..ir.meta import Kind, type_name
from ..locations.locations import Cluster, MemberId, Process, TopLevel
from ..locations.markers import Bounded, NoOrder, TotalOrder, Unbounded
from ..nondet import NonDet
from . import keyed_stream as _ks
from . import rules
from . import singleton as _sg
from ._time import TimeOps
from ._typevars import B2, O2, V2, A, B, E, K, L, O, P, T_co, Tag, Tag2, U, V
from .ports import SinkPort

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

    from ..locations.locations import LocalAlignPoint, Tick
    from .keyed_stream import KeyedStream
    from .singleton import OptionalSingleton, Singleton

_S = (Kind.STREAM,)
CT = TypeVar("CT", bound="SupportsRichComparison")


class Stream(TimeOps, Generic[T_co, L, B, O]):
    """A stream of T at location L; B says whether it ends, O whether its order is meaningful.

    T is covariant (see `_typevars`); L, B and O are invariant.
    """

    __slots__ = ()

    # ------------------------------------------------------------- element-wise
    def map(self, f: Callable[[T_co], U]) -> Stream[U, L, B, O]:
        """Apply f to every element.

        >>> run(server.source("xs", int).map(lambda x: x * 10), xs=[1, 2, 3])
        [10, 20, 30]
        """
        self._need_fn(f, "map()")
        return self._derive(Stream, n.Map, self._meta.but(elem=None), input=self._node, f=f)

    def filter(self, f: Callable[[T_co], bool]) -> Stream[T_co, L, B, O]:
        """Keep the elements for which f is true.

        >>> run(server.source("xs", int).filter(lambda x: x % 2 == 1), xs=[1, 2, 3])
        [1, 3]
        """
        self._need_fn(f, "filter()")
        return self._derive(Stream, n.Filter, self._meta, input=self._node, f=f)

    def filter_map(self, f: Callable[[T_co], U | None]) -> Stream[U, L, B, O]:
        """Apply f and keep the results that are not None.

        >>> words = server.source("words", str)
        >>> run(words.filter_map(lambda w: int(w) if w.isdigit() else None), words=["7", "a", "42"])
        [7, 42]
        """
        self._need_fn(f, "filter_map()")
        return self._derive(Stream, n.FilterMap, self._meta.but(elem=None), input=self._node, f=f)

    def flat_map_ordered(self, f: Callable[[T_co], Iterable[U]]) -> Stream[U, L, B, O]:
        """Emit every element of f(x), in the iterable's order.

        >>> run(server.source("lines", str).flat_map_ordered(str.split), lines=["a b", "c"])
        ['a', 'b', 'c']
        """
        self._need_fn(f, "flat_map_ordered()")
        return self._derive(Stream, n.FlatMap, self._meta.but(elem=None), input=self._node, f=f)

    def flat_map_unordered(self, f: Callable[[T_co], Iterable[U]]) -> Stream[U, L, B, NoOrder]:
        """Emit every element of f(x) (e.g. from a set), in no meaningful order.

        >>> run(server.source("words", str).flat_map_unordered(set), words=["aab", "b"])  # sorted: no order
        ['a', 'b', 'b']
        """
        self._need_fn(f, "flat_map_unordered()")
        meta = self._meta.but(elem=None, ordered=False)
        return self._derive(Stream, n.FlatMap, meta, input=self._node, f=f)

    def inspect(self, f: Callable[[T_co], object]) -> Stream[T_co, L, B, O]:
        """Call f on every element (for logging); elements pass through unchanged.

        >>> run(server.source("xs", int).inspect(print), xs=[1, 2])
        1
        2
        [1, 2]
        """
        self._need_fn(f, "inspect()")
        return self._derive(Stream, n.Inspect, self._meta, input=self._node, f=f)

    # ------------------------------------------------------------- aggregation
    # `acc_type=` names the accumulator's type where `init` cannot: `frozenset()`, `[]`, `{}`
    # and `None` infer `Never` (or `None`), e.g. `fold(None, f, acc_type=int | None)`.
    def fold(
        self: Stream[T_co, L, B, TotalOrder],
        init: A,
        f: Callable[[A, T_co], A],
        *,
        acc_type: TypeForm[A] | None = None,
        name: str | None = None,
    ) -> Singleton[A, L, B]:
        """acc = f(acc, x) over the elements in order, starting from init (f returns the new acc).

        >>> run(server.source("xs", str).fold("", lambda acc, x: acc + x), xs=["a", "b", "c"])
        ['abc']
        """
        self._need_ordered("fold()", rules.FIX_FOLD)
        self._need_fn(f, "fold()")
        meta = self._meta.but(kind=Kind.SINGLETON, ordered=True, elem=type(init) if acc_type is None else acc_type)
        return self._derive(_sg.Singleton, n.Fold, meta, input=self._node, init=init, f=f, commutative=False, name=name)

    def fold_commutative(
        self, init: A, f: Callable[[A, T_co], A], *, acc_type: TypeForm[A] | None = None, name: str | None = None
    ) -> Singleton[A, L, B]:
        """Like fold, declaring that the result does not depend on the order of elements.

        >>> bag = server.source("xs", int).weaken_ordering()
        >>> run(bag.fold_commutative(0, lambda acc, x: acc + x), xs=[1, 2, 3])
        [6]
        """
        self._need_fn(f, "fold_commutative()")
        meta = self._meta.but(kind=Kind.SINGLETON, ordered=True, elem=type(init) if acc_type is None else acc_type)
        return self._derive(_sg.Singleton, n.Fold, meta, input=self._node, init=init, f=f, commutative=True, name=name)

    def reduce(
        self: Stream[T_co, L, B, TotalOrder], f: Callable[[T_co, T_co], T_co], *, name: str | None = None
    ) -> OptionalSingleton[T_co, L, B]:
        """Combine elements in order; empty while no element arrived.

        >>> run(server.source("xs", int).reduce(max), xs=[3, 1, 2])
        [3]
        """
        self._need_ordered("reduce()", rules.FIX_REDUCE)
        self._need_fn(f, "reduce()")
        meta = self._meta.but(kind=Kind.OPTIONAL, ordered=True)
        return self._derive(_sg.OptionalSingleton, n.Reduce, meta, input=self._node, f=f, commutative=False, name=name)

    def reduce_commutative(
        self, f: Callable[[T_co, T_co], T_co], *, name: str | None = None
    ) -> OptionalSingleton[T_co, L, B]:
        """Like reduce, declaring that f is commutative and associative.

        >>> bag = server.source("xs", int).weaken_ordering()
        >>> run(bag.reduce_commutative(lambda a, b: a + b), xs=[1, 2, 3])
        [6]
        """
        self._need_fn(f, "reduce_commutative()")
        meta = self._meta.but(kind=Kind.OPTIONAL, ordered=True)
        return self._derive(_sg.OptionalSingleton, n.Reduce, meta, input=self._node, f=f, commutative=True, name=name)

    def count(self, *, name: str | None = None) -> Singleton[int, L, B]:
        """The number of elements so far (top level) or in this batch (in a tick).

        >>> run(server.source("xs", str).count(), xs=["a", "b"])
        [2]
        """
        meta = self._meta.but(kind=Kind.SINGLETON, ordered=True, elem=int)
        return self._derive(_sg.Singleton, n.Count, meta, input=self._node, name=name)

    def first(self: Stream[T_co, L, B, TotalOrder], *, name: str | None = None) -> OptionalSingleton[T_co, L, B]:
        """The first element, if any.

        >>> run(server.source("xs", int).first(), xs=[3, 1, 2])
        [3]
        """
        self._need_ordered("first()", rules.FIX_SORT_FIRST)
        meta = self._meta.but(kind=Kind.OPTIONAL, ordered=True)
        return self._derive(_sg.OptionalSingleton, n.First, meta, input=self._node, name=name)

    def last(self: Stream[T_co, L, B, TotalOrder], *, name: str | None = None) -> OptionalSingleton[T_co, L, B]:
        """The last element, if any.

        >>> run(server.source("xs", int).last(), xs=[3, 1, 2])
        [2]
        """
        self._need_ordered("last()", rules.FIX_SORT_FIRST)
        meta = self._meta.but(kind=Kind.OPTIONAL, ordered=True)
        return self._derive(_sg.OptionalSingleton, n.Last, meta, input=self._node, name=name)

    def enumerate(
        self: Stream[T_co, L, B, TotalOrder], *, name: str | None = None
    ) -> Stream[tuple[int, T_co], L, B, TotalOrder]:
        """Pair each element with its position (0, 1, ...).

        >>> run(server.source("xs", str).enumerate(), xs=["a", "b"])
        [(0, 'a'), (1, 'b')]
        """
        self._need_ordered("enumerate()", rules.FIX_SORT_FIRST)
        return self._derive(Stream, n.Enumerate, self._meta.but(elem=None), input=self._node, name=name)

    def unique(self, *, name: str | None = None) -> Stream[T_co, L, B, O]:
        """Drop elements equal to one seen before.

        >>> run(server.source("xs", int).unique(), xs=[1, 2, 1, 3, 2])
        [1, 2, 3]
        """
        return self._derive(Stream, n.Unique, self._meta, input=self._node, name=name)

    # Without a key the elements themselves must be comparable: the first overload only
    # applies to a stream of comparable elements; for any other the key is required.
    @overload
    def sort(self: Stream[CT, L, Bounded, O], key: None = None) -> Stream[CT, L, Bounded, TotalOrder]: ...
    @overload
    def sort(
        self: Stream[E, L, Bounded, O], key: Callable[[E], SupportsRichComparison]
    ) -> Stream[E, L, Bounded, TotalOrder]: ...
    def sort(self, key: Callable[[Any], SupportsRichComparison] | None = None) -> Stream[Any, Any, Bounded, TotalOrder]:
        """Sort a bounded stream (by key when given).

        >>> run(server.source_iter(["bb", "c", "a"]).sort())
        ['a', 'bb', 'c']
        """
        self._need_bounded("sort()", rules.FIX_SORT_BATCH)
        if key is not None:
            self._need_fn(key, "sort()")
        elif not _comparable(self._meta.elem):
            raise BuildError(
                "sort()",
                required=rules.COMPARABLE,
                found=f"elements of type {type_name(self._meta.elem)}: {self._found()}",
                fix=rules.FIX_COMPARABLE,
            )
        return self._derive(Stream, n.Sort, self._meta.but(ordered=True), input=self._node, key=key)

    # ------------------------------------------------------------- combining
    # The result is Bounded only if both sides are, NoOrder if either side is (as `Meta`
    # computes it at run time). Overloads spell that out per combination; the last one
    # covers generic code whose boundedness or ordering is a type variable.
    def cross_singleton(
        self, other: Singleton[U, L, Bounded] | OptionalSingleton[U, L, Bounded]
    ) -> Stream[tuple[T_co, U], L, B, O]:
        """Pair every element with the singleton's value (nothing while an optional is empty).

        >>> batch = server.source("xs", int).batch(tick, nondet("any grouping will do"))
        >>> run(batch.cross_singleton(batch.count()), xs=[5, 6])
        [(5, 2), (6, 2)]
        """
        o = self._need_same_loc(
            other, "cross_singleton()", (Kind.SINGLETON, Kind.OPTIONAL), "a Singleton or OptionalSingleton"
        )
        o._need_bounded("cross_singleton()", rules.FIX_SNAPSHOT_SINGLETON)
        return self._derive(Stream, n.CrossSingleton, self._meta.but(elem=None), left=self._node, right=o._node)

    @overload
    def cross_product(
        self: Stream[T_co, L, Bounded, O], other: Stream[U, L, Bounded, O2]
    ) -> Stream[tuple[T_co, U], L, Bounded, NoOrder]: ...
    @overload
    def cross_product(
        self: Stream[T_co, L, Bounded, O], other: Stream[U, L, Unbounded, O2]
    ) -> Stream[tuple[T_co, U], L, Unbounded, NoOrder]: ...
    @overload
    def cross_product(
        self: Stream[T_co, L, Unbounded, O], other: Stream[U, L, B2, O2]
    ) -> Stream[tuple[T_co, U], L, Unbounded, NoOrder]: ...
    @overload
    def cross_product(
        self: Stream[T_co, L, B, O], other: Stream[U, L, B, O2]
    ) -> Stream[tuple[T_co, U], L, B, NoOrder]: ...
    def cross_product(self, other: Stream[Any, Any, Any, Any]) -> Stream[Any, Any, Any, NoOrder]:
        """Every pair (x, y) of elements of the two streams.

        >>> run(server.source_iter([1, 2]).cross_product(server.source_iter(["a"])))
        [(1, 'a'), (2, 'a')]
        """
        o = self._need_same_loc(other, "cross_product()", _S, "a Stream")
        meta = self._meta.but(elem=None, ordered=False, bounded=self._meta.bounded and o._meta.bounded)
        return self._derive(Stream, n.CrossProduct, meta, left=self._node, right=o._node)

    @overload
    def join(
        self: Stream[tuple[K, V], L, Bounded, O], other: Stream[tuple[K, V2], L, Bounded, O2]
    ) -> Stream[tuple[K, tuple[V, V2]], L, Bounded, NoOrder]: ...
    @overload
    def join(
        self: Stream[tuple[K, V], L, Bounded, O], other: Stream[tuple[K, V2], L, Unbounded, O2]
    ) -> Stream[tuple[K, tuple[V, V2]], L, Unbounded, NoOrder]: ...
    @overload
    def join(
        self: Stream[tuple[K, V], L, Unbounded, O], other: Stream[tuple[K, V2], L, B2, O2]
    ) -> Stream[tuple[K, tuple[V, V2]], L, Unbounded, NoOrder]: ...
    @overload
    def join(
        self: Stream[tuple[K, V], L, B, O], other: Stream[tuple[K, V2], L, B, O2]
    ) -> Stream[tuple[K, tuple[V, V2]], L, B, NoOrder]: ...
    def join(self, other: Stream[Any, Any, Any, Any]) -> Stream[Any, Any, Any, NoOrder]:
        """Pairs (k, (v1, v2)) for matching keys of two streams of (k, v) tuples.

        >>> ages = server.source_iter([("ann", 31), ("bob", 42)])
        >>> towns = server.source_iter([("ann", "Oslo")])
        >>> run(ages.join(towns))
        [('ann', (31, 'Oslo'))]
        """
        o = self._need_same_loc(other, "join()", _S, "a Stream of (key, value) tuples")
        meta = self._meta.but(elem=None, ordered=False, bounded=self._meta.bounded and o._meta.bounded)
        return self._derive(Stream, n.Join, meta, left=self._node, right=o._node)

    def anti_join(self: Stream[tuple[K, V], L, B, O], other: Stream[K, L, Bounded, O2]) -> Stream[tuple[K, V], L, B, O]:
        """The (k, v) elements whose k does not occur in the bounded stream `other`.

        >>> banned = server.source_iter(["bob"])
        >>> run(server.source("ages", tuple[str, int]).anti_join(banned), ages=[("ann", 31), ("bob", 42)])
        [('ann', 31)]
        """
        o = self._need_same_loc(other, "anti_join()", _S, "a Stream of keys")
        o._need_bounded("anti_join()", rules.FIX_NEGATIVE_SIDE)
        return self._derive(Stream, n.AntiJoin, self._meta, left=self._node, right=o._node)

    @overload
    def chain(
        self: Stream[T_co, L, Bounded, TotalOrder], other: Stream[T_co, L, Bounded, TotalOrder]
    ) -> Stream[T_co, L, Bounded, TotalOrder]: ...
    @overload
    def chain(
        self: Stream[T_co, L, Bounded, TotalOrder], other: Stream[T_co, L, Bounded, NoOrder]
    ) -> Stream[T_co, L, Bounded, NoOrder]: ...
    @overload
    def chain(
        self: Stream[T_co, L, Bounded, NoOrder], other: Stream[T_co, L, Bounded, O2]
    ) -> Stream[T_co, L, Bounded, NoOrder]: ...
    @overload
    def chain(self: Stream[T_co, L, Bounded, O], other: Stream[T_co, L, Bounded, O]) -> Stream[T_co, L, Bounded, O]: ...
    def chain(self, other: Stream[Any, Any, Bounded, Any]) -> Stream[Any, Any, Bounded, Any]:
        """All elements of self, then all of other (both bounded; TotalOrder only if both are).

        >>> run(server.source_iter([1, 2]).chain(server.source_iter([3])))
        [1, 2, 3]
        """
        self._need_bounded("chain()", rules.FIX_CHAIN_FIRST)
        o = self._need_same_loc(other, "chain()", _S, "a Stream")
        o._need_bounded("chain()", rules.FIX_CHAIN_BOTH)
        meta = self._meta.but(ordered=self._meta.ordered and o._meta.ordered)
        return self._derive(Stream, n.Chain, meta, left=self._node, right=o._node)

    @overload
    def merge_unordered(
        self: Stream[T_co, L, Bounded, O], other: Stream[T_co, L, Bounded, O2]
    ) -> Stream[T_co, L, Bounded, NoOrder]: ...
    @overload
    def merge_unordered(
        self: Stream[T_co, L, Bounded, O], other: Stream[T_co, L, Unbounded, O2]
    ) -> Stream[T_co, L, Unbounded, NoOrder]: ...
    @overload
    def merge_unordered(
        self: Stream[T_co, L, Unbounded, O], other: Stream[T_co, L, B2, O2]
    ) -> Stream[T_co, L, Unbounded, NoOrder]: ...
    @overload
    def merge_unordered(self: Stream[T_co, L, B, O], other: Stream[T_co, L, B, O2]) -> Stream[T_co, L, B, NoOrder]: ...
    def merge_unordered(self, other: Stream[Any, Any, Any, Any]) -> Stream[Any, Any, Any, NoOrder]:
        """Interleave two streams in any order (Bounded only if both are).

        >>> run(server.source("a", int).merge_unordered(server.source("b", int)), a=[1, 3], b=[2])
        [1, 2, 3]
        """
        o = self._need_same_loc(other, "merge_unordered()", _S, "a Stream")
        meta = self._meta.but(ordered=False, bounded=self._meta.bounded and o._meta.bounded)
        return self._derive(Stream, n.MergeUnordered, meta, left=self._node, right=o._node)

    def into_keyed(self: Stream[tuple[K, V], L, B, O]) -> KeyedStream[K, V, L, B, O]:
        """A stream of (k, v) tuples (or two-field NamedTuples) seen as one stream of v per key k.

        >>> run(server.source("kv", tuple[str, int]).into_keyed().count(), kv=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 2), ('b', 1)]
        """
        pair = _pair_types(self._meta.elem)
        if pair is False:
            raise BuildError("into_keyed()", required=rules.PAIRS, found=self._found(), fix=rules.FIX_PAIRS)
        key, value = pair or (None, None)
        meta = self._meta.but(kind=Kind.KEYED_STREAM, elem=value, key=key)
        return self._derive(_ks.KeyedStream, n.IntoKeyed, meta, input=self._node)

    # ------------------------------------------------------------- order
    def assume_ordering(self, nondet: NonDet) -> Stream[T_co, L, B, TotalOrder]:
        """Treat the stream as totally ordered; the order seen is a non-deterministic choice.

        >>> bag = server.source_iter([1, 2]).weaken_ordering()
        >>> outcomes(bag.assume_ordering(nondet("either element may come first")).first())
        [[1], [2]]
        """
        nd = self._need_nondet(nondet, "assume_ordering()")
        return self._derive(Stream, n.AssumeOrdering, self._meta.but(ordered=True), input=self._node, nondet=nd)

    def weaken_ordering(self) -> Stream[T_co, L, B, NoOrder]:
        """Forget the order (always safe).

        >>> run(server.source_iter([2, 1]).weaken_ordering())  # sorted: its order means nothing
        [1, 2]
        """
        return self._derive(Stream, n.WeakenOrdering, self._meta.but(ordered=False), input=self._node)

    # ------------------------------------------------------------- ticks (bodies in _time.py)
    def batch(self: Stream[T_co, P, B, O], tick: Tick[P], nondet: NonDet) -> Stream[T_co, Tick[P], Bounded, O]:
        """Some prefix of the pending elements (any subset when NoOrder) enters each tick.

        >>> batches = server.source("xs", int).batch(tick, nondet("any grouping will do"))
        >>> outcomes(batches.count(), xs=[1, 2])  # the batch sizes of each execution
        [[1, 1], [2]]
        """
        return self._enter_tick(Stream, n.Batch, tick, nondet)

    def batch_aligned(
        self: Stream[T_co, P, B, O], tick: Tick[P], align: LocalAlignPoint[P], nondet: NonDet
    ) -> Stream[T_co, Tick[P], Bounded, O]:
        """Like batch, consistent with every other use of the align point (see docs/design.md §2).

        >>> align = server.local_align_point()
        >>> run(server.source("xs", int).batch_aligned(tick, align, nondet("any grouping will do")), xs=[1, 2])
        [1, 2]
        """
        return self._enter_tick(Stream, n.Batch, tick, nondet, align)

    def all_ticks(self: Stream[T_co, Tick[P], Bounded, O]) -> Stream[T_co, P, Unbounded, O]:
        """The batches of every tick, concatenated into a top-level stream.

        >>> batch = server.source("xs", int).batch(tick, nondet("any grouping will do"))
        >>> run(batch.map(lambda x: x * 2).all_ticks(), xs=[1, 2])
        [2, 4]
        """
        return self._leave_tick(Stream, n.AllTicks)

    def defer_tick(self: Stream[T_co, Tick[P], Bounded, O]) -> Stream[T_co, Tick[P], Bounded, O]:
        """The batch this stream had in the previous tick (empty in the first).

        A tick holding deferred elements runs once more on its own to pass them on: below,
        each round's input enters one run (which sees nothing deferred) and the next run
        counts it.

        >>> batch = server.source("xs", int).batch(tick, nondet("any grouping will do"))
        >>> run(batch.defer_tick().count(), {"xs": [1, 2]}, {"xs": [3]})
        [[0, 2], [0, 1]]
        """
        return self._defer_tick(Stream)

    # ------------------------------------------------------------- alignment (bodies in _time.py)
    def release_aligned(self: Stream[T_co, P, B, O], align: LocalAlignPoint[P]) -> Stream[T_co, P, B, O]:
        """Release each element only once every later aligned batch/snapshot reflects it.

        >>> align = server.local_align_point()
        >>> run(server.source("xs", int).release_aligned(align), xs=[1, 2])
        [1, 2]
        """
        return self._mark_aligned(Stream, n.ReleaseAligned, align)

    def aligned_at(self: Stream[T_co, P, B, O], align: LocalAlignPoint[P]) -> Stream[T_co, P, B, O]:
        """Explicit mode: declare this stream an upstream to align at `align`.

        >>> align = server.local_align_point()
        >>> run(server.source("xs", int).aligned_at(align), xs=[1, 2])
        [1, 2]
        """
        return self._mark_aligned(Stream, n.AlignedAt, align)

    # ------------------------------------------------------------- network
    @overload
    def send(
        self: Stream[T_co, Process[Tag], B, O], dest: Process[Tag2]
    ) -> Stream[T_co, Process[Tag2], Unbounded, O]: ...
    @overload
    def send(
        self: Stream[T_co, Cluster[Tag], B, O], dest: Process[Tag2]
    ) -> KeyedStream[MemberId[Tag], T_co, Process[Tag2], Unbounded, O]: ...
    def send(self, dest: Process[Any]) -> Any:
        """Send to a process; from a cluster, the result is keyed by the sending member.

        >>> run(workers.source("ys", str).send(server), ys={0: ["a"], 1: ["b"]})  # keyed by sender
        [(MemberId(raw=0), 'a'), (MemberId(raw=1), 'b')]
        """
        return self._send(dest, n.SendMode.DIRECT, "send()", Process)

    @overload
    def broadcast(
        self: Stream[T_co, Process[Tag], B, O], dest: Cluster[Tag2]
    ) -> Stream[T_co, Cluster[Tag2], Unbounded, O]: ...
    @overload
    def broadcast(
        self: Stream[T_co, Cluster[Tag], B, O], dest: Cluster[Tag2]
    ) -> KeyedStream[MemberId[Tag], T_co, Cluster[Tag2], Unbounded, O]: ...
    def broadcast(self, dest: Cluster[Any]) -> Any:
        """Send every element to every member of a cluster.

        >>> run(server.source("xs", int).broadcast(workers), xs=[1, 2])  # member -> what it received
        {0: [1, 2], 1: [1, 2]}
        """
        return self._send(dest, n.SendMode.BROADCAST, "broadcast()", Cluster)

    # The payload is U, not T_co: T_co is the class's own parameter, already bound to the pair type.
    @overload
    def demux(
        self: Stream[tuple[MemberId[Tag2], U], Process[Tag], B, O], dest: Cluster[Tag2]
    ) -> Stream[U, Cluster[Tag2], Unbounded, O]: ...
    @overload
    def demux(
        self: Stream[tuple[MemberId[Tag2], U], Cluster[Tag], B, O], dest: Cluster[Tag2]
    ) -> KeyedStream[MemberId[Tag], U, Cluster[Tag2], Unbounded, O]: ...
    def demux(self, dest: Cluster[Any]) -> Any:
        """Send each (member_id, x) element's x to that member only (to shard by a key whatever
        the member count, key the stream and use `KeyedStream.demux_by_key`).

        >>> from hydrolite import MemberId
        >>> routed = server.source("xs", str).map(lambda s: (MemberId(len(s) % 2), s))
        >>> run(routed.demux(workers), xs=["a", "bb", "cc"])
        {0: ['bb', 'cc'], 1: ['a']}
        """
        return self._send(dest, n.SendMode.DEMUX, "demux()", Cluster)

    def _send(self, dest: object, mode: n.SendMode, op: str, dest_cls: type[TopLevel]) -> Any:
        dest = self._need_destination(dest, op, dest_cls)
        meta = self._meta.but(loc=dest.id, bounded=False, elem=None if mode is n.SendMode.DEMUX else self._meta.elem)
        if isinstance(self._meta.loc, ClusterId):  # many senders: keyed by member, ordered per member
            meta = meta.but(kind=Kind.KEYED_STREAM, key=MemberId)
            return self._derive(_ks.KeyedStream, n.Send, meta, loc=dest, input=self._node, dest=dest.id, mode=mode)
        return self._derive(Stream, n.Send, meta, loc=dest, input=self._node, dest=dest.id, mode=mode)

    # ------------------------------------------------------------- output
    # Overloads, not `self: Stream[T, P, B, O]`: mypy does not check a TypeVar's bound when it
    # is solved from an explicit self type, so P would accept a Tick location.
    @overload
    def sink(self: Stream[T_co, Process[Tag], B, O], name: str) -> SinkPort[T_co]: ...
    @overload
    def sink(self: Stream[T_co, Cluster[Tag], B, O], name: str) -> SinkPort[T_co]: ...
    def sink(self, name: str) -> SinkPort[Any]:
        """Write every element to the named output port.

        >>> server.source("xs", int).sink("out")
        SinkPort(name='out', elem=<class 'int'>, ordered=True)
        """
        self._need_top("sink()", rules.FIX_SINK_TOP)
        node = n.Sink(meta=self._meta, site=capture_site(), input=self._node, port=name)
        self._loc.flow._register_sink(node)
        return SinkPort(name, self._meta.elem, isinstance(self._meta.loc, ProcessId) and self._meta.ordered)


def _comparable(elem: Any) -> bool:
    """False only for an element type known not to support `<` (unknown types pass)."""
    if not isinstance(elem, type) or typing.get_args(elem):
        return True
    return any(getattr(elem, m, None) is not getattr(object, m) for m in ("__lt__", "__gt__"))


def _pair_types(elem: Any) -> tuple[Any, Any] | None | typing.Literal[False]:
    """(key, value) types of a pair element type; None when unknown, False when not a pair."""
    if elem is None:
        return None
    if typing.get_origin(elem) is tuple:
        args = typing.get_args(elem)
        if Ellipsis in args:
            return None
        return (args[0], args[1]) if len(args) == 2 else False
    if isinstance(elem, type):
        if not issubclass(elem, tuple):
            return False
        fields = getattr(elem, "_fields", None)
        if fields is None:
            return None  # a plain tuple: any length
        if len(fields) != 2:
            return False
        try:
            hints = typing.get_type_hints(elem)
        except (NameError, TypeError):  # unresolvable forward references: the pair's types stay unknown
            return None
        return hints.get(fields[0]), hints.get(fields[1])
    return None  # a union or another typing form: not checked


__all__ = ["Stream"]
