"""`Stream[T, L, B, O]`: a growing sequence (TotalOrder) or bag (NoOrder) of T at L."""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, overload

from .._site import capture_site
from ..errors import BuildError
from ..ir import nodes as n
from ..ir.ids import ClusterId, ProcessId
from ..ir.meta import Kind
from ..locations.locations import Cluster, MemberId, Process, TopLevel
from ..locations.markers import Bounded, NoOrder, TotalOrder, Unbounded
from ..nondet import NonDet
from . import keyed_stream as _ks
from . import singleton as _sg
from ._base import Live
from ._typevars import A, B, K, L, O, O2, P, T, U, V, V2, Tag, Tag2
from .ports import SinkPort

if TYPE_CHECKING:
    from ..locations.locations import LocalAlignPoint, Tick
    from .keyed_stream import KeyedStream
    from .singleton import OptionalSingleton, Singleton

_S = (Kind.STREAM,)
_FOLD_FIX = "use fold_commutative() if the function ignores order, or sort()/assume_ordering(nondet(...)) first"


class Stream(Live, Generic[T, L, B, O]):
    """A stream of T at location L; B says whether it ends, O whether its order is meaningful."""

    __slots__ = ()

    # ------------------------------------------------------------- element-wise
    def map(self, f: Callable[[T], U]) -> Stream[U, L, B, O]:
        """Apply f to every element."""
        self._need_fn(f, "map()")
        return self._derive(Stream, n.Map, self._meta.but(elem=None), input=self._node, f=f)

    def filter(self, f: Callable[[T], bool]) -> Stream[T, L, B, O]:
        """Keep the elements for which f is true."""
        self._need_fn(f, "filter()")
        return self._derive(Stream, n.Filter, self._meta, input=self._node, f=f)

    def filter_map(self, f: Callable[[T], U | None]) -> Stream[U, L, B, O]:
        """Apply f and keep the results that are not None."""
        self._need_fn(f, "filter_map()")
        return self._derive(Stream, n.FilterMap, self._meta.but(elem=None), input=self._node, f=f)

    def flat_map_ordered(self, f: Callable[[T], Iterable[U]]) -> Stream[U, L, B, O]:
        """Emit every element of f(x), in the iterable's order."""
        self._need_fn(f, "flat_map_ordered()")
        return self._derive(Stream, n.FlatMap, self._meta.but(elem=None), input=self._node, f=f)

    def flat_map_unordered(self, f: Callable[[T], Iterable[U]]) -> Stream[U, L, B, NoOrder]:
        """Emit every element of f(x) (e.g. from a set), in no meaningful order."""
        self._need_fn(f, "flat_map_unordered()")
        meta = self._meta.but(elem=None, ordered=False)
        return self._derive(Stream, n.FlatMap, meta, input=self._node, f=f)

    def inspect(self, f: Callable[[T], object]) -> Stream[T, L, B, O]:
        """Call f on every element (for logging); elements pass through unchanged."""
        self._need_fn(f, "inspect()")
        return self._derive(Stream, n.Inspect, self._meta, input=self._node, f=f)

    # ------------------------------------------------------------- aggregation
    def fold(self: Stream[T, L, B, TotalOrder], init: A, f: Callable[[A, T], A], *, name: str | None = None) -> Singleton[A, L, B]:
        """acc = f(acc, x) over the elements in order, starting from init (f returns the new acc)."""
        self._need_ordered("fold()", _FOLD_FIX)
        self._need_fn(f, "fold()")
        meta = self._meta.but(kind=Kind.SINGLETON, ordered=True, elem=type(init))
        return self._derive(_sg.Singleton, n.Fold, meta, input=self._node, init=init, f=f, commutative=False, name=name)

    def fold_commutative(self, init: A, f: Callable[[A, T], A], *, name: str | None = None) -> Singleton[A, L, B]:
        """Like fold, declaring that the result does not depend on the order of elements."""
        self._need_fn(f, "fold_commutative()")
        meta = self._meta.but(kind=Kind.SINGLETON, ordered=True, elem=type(init))
        return self._derive(_sg.Singleton, n.Fold, meta, input=self._node, init=init, f=f, commutative=True, name=name)

    def reduce(self: Stream[T, L, B, TotalOrder], f: Callable[[T, T], T], *, name: str | None = None) -> OptionalSingleton[T, L, B]:
        """Combine elements in order; empty while no element arrived."""
        self._need_ordered("reduce()", _FOLD_FIX.replace("fold_", "reduce_"))
        self._need_fn(f, "reduce()")
        meta = self._meta.but(kind=Kind.OPTIONAL, ordered=True)
        return self._derive(_sg.OptionalSingleton, n.Reduce, meta, input=self._node, f=f, commutative=False, name=name)

    def reduce_commutative(self, f: Callable[[T, T], T], *, name: str | None = None) -> OptionalSingleton[T, L, B]:
        """Like reduce, declaring that f is commutative and associative."""
        self._need_fn(f, "reduce_commutative()")
        meta = self._meta.but(kind=Kind.OPTIONAL, ordered=True)
        return self._derive(_sg.OptionalSingleton, n.Reduce, meta, input=self._node, f=f, commutative=True, name=name)

    def count(self, *, name: str | None = None) -> Singleton[int, L, B]:
        """The number of elements so far (top level) or in this batch (in a tick)."""
        meta = self._meta.but(kind=Kind.SINGLETON, ordered=True, elem=int)
        return self._derive(_sg.Singleton, n.Count, meta, input=self._node, name=name)

    def first(self: Stream[T, L, B, TotalOrder], *, name: str | None = None) -> OptionalSingleton[T, L, B]:
        """The first element, if any."""
        self._need_ordered("first()", "sort() or assume_ordering(nondet(...)) first")
        meta = self._meta.but(kind=Kind.OPTIONAL, ordered=True)
        return self._derive(_sg.OptionalSingleton, n.First, meta, input=self._node, name=name)

    def last(self: Stream[T, L, B, TotalOrder], *, name: str | None = None) -> OptionalSingleton[T, L, B]:
        """The last element, if any."""
        self._need_ordered("last()", "sort() or assume_ordering(nondet(...)) first")
        meta = self._meta.but(kind=Kind.OPTIONAL, ordered=True)
        return self._derive(_sg.OptionalSingleton, n.Last, meta, input=self._node, name=name)

    def enumerate(self: Stream[T, L, B, TotalOrder], *, name: str | None = None) -> Stream[tuple[int, T], L, B, TotalOrder]:
        """Pair each element with its position (0, 1, ...)."""
        self._need_ordered("enumerate()", "sort() or assume_ordering(nondet(...)) first")
        return self._derive(Stream, n.Enumerate, self._meta.but(elem=None), input=self._node, name=name)

    def unique(self, *, name: str | None = None) -> Stream[T, L, B, O]:
        """Drop elements equal to one seen before."""
        return self._derive(Stream, n.Unique, self._meta, input=self._node, name=name)

    def sort(self: Stream[T, L, Bounded, O], key: Callable[[T], Any] | None = None) -> Stream[T, L, Bounded, TotalOrder]:
        """Sort a bounded stream (by key when given)."""
        self._need_bounded("sort()", "sort works on one batch: batch(tick, nondet(...)) the stream first")
        if key is not None:
            self._need_fn(key, "sort()")
        return self._derive(Stream, n.Sort, self._meta.but(ordered=True), input=self._node, key=key)

    # ------------------------------------------------------------- combining
    def cross_singleton(
        self, other: Singleton[U, L, Bounded] | OptionalSingleton[U, L, Bounded]
    ) -> Stream[tuple[T, U], L, B, O]:
        """Pair every element with the singleton's value (nothing while an optional is empty)."""
        o = self._need_same_loc(other, "cross_singleton()", (Kind.SINGLETON, Kind.OPTIONAL), "a Singleton or OptionalSingleton")
        o._need_bounded("cross_singleton()", "snapshot(tick, nondet(...)) the singleton into the stream's tick")
        return self._derive(Stream, n.CrossSingleton, self._meta.but(elem=None), left=self._node, right=o._node)

    def cross_product(self, other: Stream[U, L, B, O2]) -> Stream[tuple[T, U], L, B, NoOrder]:
        """Every pair (x, y) of elements of the two streams."""
        o = self._need_same_loc(other, "cross_product()", _S, "a Stream")
        meta = self._meta.but(elem=None, ordered=False, bounded=self._meta.bounded and o._meta.bounded)
        return self._derive(Stream, n.CrossProduct, meta, left=self._node, right=o._node)

    def join(self: Stream[tuple[K, V], L, B, O], other: Stream[tuple[K, V2], L, B, O2]) -> Stream[tuple[K, tuple[V, V2]], L, B, NoOrder]:
        """Pairs (k, (v1, v2)) for matching keys of two streams of (k, v) tuples."""
        o = self._need_same_loc(other, "join()", _S, "a Stream of (key, value) tuples")
        meta = self._meta.but(elem=None, ordered=False, bounded=self._meta.bounded and o._meta.bounded)
        return self._derive(Stream, n.Join, meta, left=self._node, right=o._node)

    def anti_join(self: Stream[tuple[K, V], L, B, O], other: Stream[K, L, Bounded, O2]) -> Stream[tuple[K, V], L, B, O]:
        """The (k, v) elements whose k does not occur in the bounded stream `other`."""
        o = self._need_same_loc(other, "anti_join()", _S, "a Stream of keys")
        o._need_bounded("anti_join()", "the negative side must be complete: batch it into the tick first")
        return self._derive(Stream, n.AntiJoin, self._meta, left=self._node, right=o._node)

    def chain(self: Stream[T, L, Bounded, O], other: Stream[T, L, Bounded, O]) -> Stream[T, L, Bounded, O]:
        """All elements of self, then all of other (both bounded)."""
        self._need_bounded("chain()", "chain needs the first side to end: batch it into a tick first")
        o = self._need_same_loc(other, "chain()", _S, "a Stream")
        o._need_bounded("chain()", "chain needs both sides to end: batch it into a tick first")
        meta = self._meta.but(ordered=self._meta.ordered and o._meta.ordered)
        return self._derive(Stream, n.Chain, meta, left=self._node, right=o._node)

    def merge_unordered(self, other: Stream[T, L, B, O2]) -> Stream[T, L, B, NoOrder]:
        """Interleave two streams in any order."""
        o = self._need_same_loc(other, "merge_unordered()", _S, "a Stream")
        meta = self._meta.but(ordered=False, bounded=self._meta.bounded and o._meta.bounded)
        return self._derive(Stream, n.MergeUnordered, meta, left=self._node, right=o._node)

    def into_keyed(self: Stream[tuple[K, V], L, B, O]) -> KeyedStream[K, V, L, B, O]:
        """A stream of (k, v) tuples seen as one stream of v per key k."""
        args = typing.get_args(self._meta.elem) if typing.get_origin(self._meta.elem) is tuple else ()
        key, value = args if len(args) == 2 and Ellipsis not in args else (None, None)
        meta = self._meta.but(kind=Kind.KEYED_STREAM, elem=value, key=key)
        return self._derive(_ks.KeyedStream, n.IntoKeyed, meta, input=self._node)

    # ------------------------------------------------------------- order
    def assume_ordering(self, nondet: NonDet) -> Stream[T, L, B, TotalOrder]:
        """Treat the stream as totally ordered; the order seen is a non-deterministic choice."""
        nd = self._need_nondet(nondet, "assume_ordering()")
        return self._derive(Stream, n.AssumeOrdering, self._meta.but(ordered=True), input=self._node, nondet=nd)

    def weaken_ordering(self) -> Stream[T, L, B, NoOrder]:
        """Forget the order (always safe)."""
        return self._derive(Stream, n.WeakenOrdering, self._meta.but(ordered=False), input=self._node)

    # ------------------------------------------------------------- ticks
    def batch(self: Stream[T, P, B, O], tick: Tick[P], nondet: NonDet) -> Stream[T, Tick[P], Bounded, O]:
        """Some prefix of the pending elements (any subset when NoOrder) enters each tick."""
        tid = self._need_tick_of(tick, "batch()")
        nd = self._need_nondet(nondet, "batch()")
        meta = self._meta.but(loc=tid, bounded=True)
        return self._derive(Stream, n.Batch, meta, loc=tick, input=self._node, tick=tid, nondet=nd)

    def batch_aligned(self: Stream[T, P, B, O], tick: Tick[P], align: LocalAlignPoint[P], nondet: NonDet) -> Stream[T, Tick[P], Bounded, O]:
        """Like batch, consistent with every other use of the align point (see docs/design.md §2)."""
        tid = self._need_tick_of(tick, "batch_aligned()")
        ap = self._need_align_of(align, "batch_aligned()")
        nd = self._need_nondet(nondet, "batch_aligned()")
        meta = self._meta.but(loc=tid, bounded=True)
        return self._derive(Stream, n.Batch, meta, loc=tick, input=self._node, tick=tid, nondet=nd, align=ap.id)

    def all_ticks(self: Stream[T, Tick[P], Bounded, O]) -> Stream[T, P, Unbounded, O]:
        """The batches of every tick, concatenated into a top-level stream."""
        self._need_tick("all_ticks()")
        tick: Any = self._loc
        return self._derive(Stream, n.AllTicks, self._meta.but(loc=self._meta.loc.outer, bounded=False), loc=tick.outer, input=self._node)  # type: ignore[union-attr]

    def defer_tick(self: Stream[T, Tick[P], Bounded, O]) -> Stream[T, Tick[P], Bounded, O]:
        """The batch this stream had in the previous tick (empty in the first)."""
        self._need_tick("defer_tick()")
        return self._derive(Stream, n.DeferTick, self._meta, input=self._node)

    # ------------------------------------------------------------- alignment
    def release_aligned(self: Stream[T, P, B, O], align: LocalAlignPoint[P]) -> Stream[T, P, B, O]:
        """Release each element only once every later aligned batch/snapshot reflects it."""
        self._need_top("release_aligned()", "release_aligned applies to top-level streams")
        ap = self._need_align_of(align, "release_aligned()")
        return self._derive(Stream, n.ReleaseAligned, self._meta, input=self._node, align=ap.id)

    def aligned_at(self: Stream[T, P, B, O], align: LocalAlignPoint[P]) -> Stream[T, P, B, O]:
        """Explicit mode: declare this stream an upstream to align at `align`."""
        self._need_top("aligned_at()", "aligned_at applies to top-level collections")
        ap = self._need_align_of(align, "aligned_at()")
        return self._derive(Stream, n.AlignedAt, self._meta, input=self._node, align=ap.id)

    # ------------------------------------------------------------- network
    @overload
    def send(self: Stream[T, Process[Tag], B, O], dest: Process[Tag2]) -> Stream[T, Process[Tag2], Unbounded, O]: ...
    @overload
    def send(self: Stream[T, Cluster[Tag], B, O], dest: Process[Tag2]) -> KeyedStream[MemberId[Tag], T, Process[Tag2], Unbounded, O]: ...
    def send(self, dest: Process[Any]) -> Any:
        """Send to a process; from a cluster, the result is keyed by the sending member."""
        return self._send(dest, n.SendMode.DIRECT, "send()", Process)

    @overload
    def broadcast(self: Stream[T, Process[Tag], B, O], dest: Cluster[Tag2]) -> Stream[T, Cluster[Tag2], Unbounded, O]: ...
    @overload
    def broadcast(self: Stream[T, Cluster[Tag], B, O], dest: Cluster[Tag2]) -> KeyedStream[MemberId[Tag], T, Cluster[Tag2], Unbounded, O]: ...
    def broadcast(self, dest: Cluster[Any]) -> Any:
        """Send every element to every member of a cluster."""
        return self._send(dest, n.SendMode.BROADCAST, "broadcast()", Cluster)

    # The payload is U, not T: T is the class's own parameter, already bound to the pair type.
    @overload
    def demux(self: Stream[tuple[MemberId[Tag2], U], Process[Tag], B, O], dest: Cluster[Tag2]) -> Stream[U, Cluster[Tag2], Unbounded, O]: ...
    @overload
    def demux(self: Stream[tuple[MemberId[Tag2], U], Cluster[Tag], B, O], dest: Cluster[Tag2]) -> KeyedStream[MemberId[Tag], U, Cluster[Tag2], Unbounded, O]: ...
    def demux(self, dest: Cluster[Any]) -> Any:
        """Send each (member_id, x) element's x to that member only."""
        return self._send(dest, n.SendMode.DEMUX, "demux()", Cluster)

    def _send(self, dest: object, mode: n.SendMode, op: str, dest_cls: type[TopLevel]) -> Any:
        self._need_top(op, "send from the top level: all_ticks() the stream first")
        if not isinstance(dest, dest_cls):
            raise BuildError(op, required=f"a {dest_cls.__name__} destination", found=f"{type(dest).__name__} {dest!r}", fix="send() targets a Process; broadcast()/demux() target a Cluster")
        self._need_same_flow(dest, op)
        if dest.id == self._meta.loc:
            raise BuildError(op, required="a different location to send to", found=f"{dest.id}, the stream's own location", fix="drop the send: the data is already there")
        meta = self._meta.but(loc=dest.id, bounded=False, elem=None if mode is n.SendMode.DEMUX else self._meta.elem)
        if isinstance(self._meta.loc, ClusterId):  # many senders: keyed by member, ordered per member
            meta = meta.but(kind=Kind.KEYED_STREAM, key=MemberId)
            return self._derive(_ks.KeyedStream, n.Send, meta, loc=dest, input=self._node, dest=dest.id, mode=mode)
        return self._derive(Stream, n.Send, meta, loc=dest, input=self._node, dest=dest.id, mode=mode)

    # ------------------------------------------------------------- output
    # Overloads, not `self: Stream[T, P, B, O]`: mypy does not check a TypeVar's bound when it
    # is solved from an explicit self type, so P would accept a Tick location.
    @overload
    def sink(self: Stream[T, Process[Tag], B, O], name: str) -> SinkPort[T]: ...
    @overload
    def sink(self: Stream[T, Cluster[Tag], B, O], name: str) -> SinkPort[T]: ...
    def sink(self, name: str) -> SinkPort[Any]:
        """Write every element to the named output port."""
        self._need_top("sink()", "sinks are top-level: all_ticks() the stream first")
        node = n.Sink(meta=self._meta, site=capture_site(), input=self._node, port=name)
        self._loc.flow._register_sink(node)
        return SinkPort(name, self._meta.elem, isinstance(self._meta.loc, ProcessId) and self._meta.ordered)


__all__ = ["Stream"]
