"""`KeyedStream[K, V, L, B, O]`: one stream of V per key K; order holds within a key only."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, overload

from typing_extensions import TypeForm

from .._site import capture_site
from ..ir import nodes as n
from ..ir.meta import Kind, pair_type
from ..locations.locations import Cluster, Process
from ..locations.markers import Bounded, NoOrder, TotalOrder, Unbounded
from ..nondet import NonDet
from . import keyed_singleton as _kg
from . import rules
from . import stream as _st
from ._base import Live
from ._typevars import V2, A, B, K, L, O, P, Tag, U, V
from .ports import SinkPort

if TYPE_CHECKING:
    from ..locations.locations import LocalAlignPoint, Tick
    from .keyed_singleton import KeyedSingleton
    from .stream import Stream

_FIX = rules.FIX_KEYED_ORDER


class KeyedStream(Live, Generic[K, V, L, B, O]):
    """Streams of V grouped by key K at location L."""

    __slots__ = ()

    # ------------------------------------------------------------- per value
    def map(self, f: Callable[[V], U]) -> KeyedStream[K, U, L, B, O]:
        """Apply f to every value (keys unchanged)."""
        self._need_fn(f, "map()")
        return self._derive(KeyedStream, n.Map, self._meta.but(elem=None), input=self._node, f=f)

    def filter(self, f: Callable[[V], bool]) -> KeyedStream[K, V, L, B, O]:
        """Keep the values for which f is true."""
        self._need_fn(f, "filter()")
        return self._derive(KeyedStream, n.Filter, self._meta, input=self._node, f=f)

    def filter_map(self, f: Callable[[V], U | None]) -> KeyedStream[K, U, L, B, O]:
        """Apply f to every value and keep results that are not None."""
        self._need_fn(f, "filter_map()")
        return self._derive(KeyedStream, n.FilterMap, self._meta.but(elem=None), input=self._node, f=f)

    def flat_map_ordered(self, f: Callable[[V], Iterable[U]]) -> KeyedStream[K, U, L, B, O]:
        """Replace every value by the elements of f(value), in order."""
        self._need_fn(f, "flat_map_ordered()")
        return self._derive(KeyedStream, n.FlatMap, self._meta.but(elem=None), input=self._node, f=f)

    def flat_map_unordered(self, f: Callable[[V], Iterable[U]]) -> KeyedStream[K, U, L, B, NoOrder]:
        """Replace every value by the elements of f(value), in no meaningful order."""
        self._need_fn(f, "flat_map_unordered()")
        return self._derive(KeyedStream, n.FlatMap, self._meta.but(elem=None, ordered=False), input=self._node, f=f)

    def inspect(self, f: Callable[[V], object]) -> KeyedStream[K, V, L, B, O]:
        """Call f on every value for its side effect."""
        self._need_fn(f, "inspect()")
        return self._derive(KeyedStream, n.Inspect, self._meta, input=self._node, f=f)

    def enumerate(
        self: KeyedStream[K, V, L, B, TotalOrder], *, name: str | None = None
    ) -> KeyedStream[K, tuple[int, V], L, B, TotalOrder]:
        """Pair each value with its position within its key."""
        self._need_ordered("enumerate()", _FIX)
        return self._derive(KeyedStream, n.Enumerate, self._meta.but(elem=None), input=self._node, name=name)

    def unique(self, *, name: str | None = None) -> KeyedStream[K, V, L, B, O]:
        """Drop values already seen for the same key."""
        return self._derive(KeyedStream, n.Unique, self._meta, input=self._node, name=name)

    # ------------------------------------------------------------- per key aggregation
    # `acc_type=` as in Stream.fold: the accumulator's type when `init` cannot say it.
    def fold(
        self: KeyedStream[K, V, L, B, TotalOrder],
        init: A,
        f: Callable[[A, V], A],
        *,
        acc_type: TypeForm[A] | None = None,
        name: str | None = None,
    ) -> KeyedSingleton[K, A, L, B]:
        """Per key: acc = f(acc, v) in order, from init."""
        self._need_ordered("fold()", _FIX)
        self._need_fn(f, "fold()")
        return self._agg(
            n.Fold, type(init) if acc_type is None else acc_type, init=init, f=f, commutative=False, name=name
        )

    def fold_commutative(
        self, init: A, f: Callable[[A, V], A], *, acc_type: TypeForm[A] | None = None, name: str | None = None
    ) -> KeyedSingleton[K, A, L, B]:
        """Per-key fold whose result does not depend on the order of values."""
        self._need_fn(f, "fold_commutative()")
        return self._agg(
            n.Fold, type(init) if acc_type is None else acc_type, init=init, f=f, commutative=True, name=name
        )

    def reduce(
        self: KeyedStream[K, V, L, B, TotalOrder], f: Callable[[V, V], V], *, name: str | None = None
    ) -> KeyedSingleton[K, V, L, B]:
        """Per key: combine values in order (e.g. `lambda old, new: new` keeps the latest)."""
        self._need_ordered("reduce()", _FIX)
        self._need_fn(f, "reduce()")
        return self._agg(n.Reduce, self._meta.elem, f=f, commutative=False, name=name)

    def reduce_commutative(self, f: Callable[[V, V], V], *, name: str | None = None) -> KeyedSingleton[K, V, L, B]:
        """Per-key reduce with a commutative, associative f."""
        self._need_fn(f, "reduce_commutative()")
        return self._agg(n.Reduce, self._meta.elem, f=f, commutative=True, name=name)

    def count(self, *, name: str | None = None) -> KeyedSingleton[K, int, L, B]:
        """Per key: how many values."""
        return self._agg(n.Count, int, name=name)

    def first(self: KeyedStream[K, V, L, B, TotalOrder], *, name: str | None = None) -> KeyedSingleton[K, V, L, B]:
        """Per key: the first value."""
        self._need_ordered("first()", _FIX)
        return self._agg(n.First, self._meta.elem, name=name)

    def last(self: KeyedStream[K, V, L, B, TotalOrder], *, name: str | None = None) -> KeyedSingleton[K, V, L, B]:
        """Per key: the last value."""
        self._need_ordered("last()", _FIX)
        return self._agg(n.Last, self._meta.elem, name=name)

    def _agg(self, node_cls: type[n.Node], elem: Any, **fields: Any) -> KeyedSingleton[Any, Any, Any, Any]:
        meta = self._meta.but(kind=Kind.KEYED_SINGLETON, ordered=True, elem=elem)
        return self._derive(_kg.KeyedSingleton, node_cls, meta, input=self._node, **fields)

    # ------------------------------------------------------------- reshaping
    def entries(self) -> Stream[tuple[K, V], L, B, NoOrder]:
        """(key, value) pairs; the order across keys is not meaningful."""
        meta = self._meta.but(kind=Kind.STREAM, ordered=False, elem=pair_type(self._meta), key=None)
        return self._derive(_st.Stream, n.Entries, meta, input=self._node)

    def keys(self) -> Stream[K, L, B, NoOrder]:
        """Each key that has a value, once."""
        meta = self._meta.but(kind=Kind.STREAM, ordered=False, elem=self._meta.key, key=None)
        return self._derive(_st.Stream, n.Keys, meta, input=self._node)

    def values(self) -> Stream[V, L, B, NoOrder]:
        """All values, keys dropped (order across keys is lost)."""
        meta = self._meta.but(kind=Kind.STREAM, ordered=False, key=None)
        return self._derive(_st.Stream, n.Values, meta, input=self._node)

    def lookup_keyed_singleton(
        self: KeyedStream[K, V, L, Bounded, O], table: KeyedSingleton[K, V2, L, Bounded]
    ) -> KeyedStream[K, tuple[V, V2 | None], L, Bounded, O]:
        """Pair each value with the table's value at its key (None when absent)."""
        self._need_bounded("lookup_keyed_singleton()")
        t = self._need_same_loc(table, "lookup_keyed_singleton()", (Kind.KEYED_SINGLETON,), "a KeyedSingleton")
        t._need_bounded("lookup_keyed_singleton()", rules.FIX_SNAPSHOT_TABLE)
        return self._derive(
            KeyedStream, n.KeyedLookup, self._meta.but(elem=None), left=self._node, right=t._node, keep_missing=True
        )

    # ------------------------------------------------------------- order
    def assume_ordering(self, nondet: NonDet) -> KeyedStream[K, V, L, B, TotalOrder]:
        """Treat each key's values as totally ordered (a non-deterministic choice)."""
        nd = self._need_nondet(nondet, "assume_ordering()")
        return self._derive(KeyedStream, n.AssumeOrdering, self._meta.but(ordered=True), input=self._node, nondet=nd)

    def weaken_ordering(self) -> KeyedStream[K, V, L, B, NoOrder]:
        """Forget the order within keys."""
        return self._derive(KeyedStream, n.WeakenOrdering, self._meta.but(ordered=False), input=self._node)

    # ------------------------------------------------------------- ticks and alignment
    def batch(
        self: KeyedStream[K, V, P, B, O], tick: Tick[P], nondet: NonDet
    ) -> KeyedStream[K, V, Tick[P], Bounded, O]:
        """A prefix of each key's pending values enters each tick."""
        tid = self._need_tick_of(tick, "batch()")
        nd = self._need_nondet(nondet, "batch()")
        return self._derive(
            KeyedStream, n.Batch, self._meta.but(loc=tid, bounded=True), loc=tick, input=self._node, tick=tid, nondet=nd
        )

    def batch_aligned(
        self: KeyedStream[K, V, P, B, O], tick: Tick[P], align: LocalAlignPoint[P], nondet: NonDet
    ) -> KeyedStream[K, V, Tick[P], Bounded, O]:
        """Like batch, consistent with the other uses of the align point."""
        tid = self._need_tick_of(tick, "batch_aligned()")
        ap = self._need_align_of(align, "batch_aligned()")
        nd = self._need_nondet(nondet, "batch_aligned()")
        meta = self._meta.but(loc=tid, bounded=True)
        return self._derive(KeyedStream, n.Batch, meta, loc=tick, input=self._node, tick=tid, nondet=nd, align=ap.id)

    def all_ticks(self: KeyedStream[K, V, Tick[P], Bounded, O]) -> KeyedStream[K, V, P, Unbounded, O]:
        """Every tick's batch, concatenated into a top-level keyed stream."""
        self._need_tick("all_ticks()")
        tick: Any = self._loc
        return self._derive(
            KeyedStream, n.AllTicks, self._meta.but(loc=tick.id.outer, bounded=False), loc=tick.outer, input=self._node
        )

    def defer_tick(self: KeyedStream[K, V, Tick[P], Bounded, O]) -> KeyedStream[K, V, Tick[P], Bounded, O]:
        """The previous tick's batch."""
        self._need_tick("defer_tick()")
        return self._derive(KeyedStream, n.DeferTick, self._meta, input=self._node)

    def release_aligned(self: KeyedStream[K, V, P, B, O], align: LocalAlignPoint[P]) -> KeyedStream[K, V, P, B, O]:
        """Release each value only once every later aligned batch/snapshot reflects it."""
        self._need_top("release_aligned()")
        ap = self._need_align_of(align, "release_aligned()")
        return self._derive(KeyedStream, n.ReleaseAligned, self._meta, input=self._node, align=ap.id)

    def aligned_at(self: KeyedStream[K, V, P, B, O], align: LocalAlignPoint[P]) -> KeyedStream[K, V, P, B, O]:
        """Explicit mode: declare this keyed stream an upstream to align at `align`."""
        self._need_top("aligned_at()")
        ap = self._need_align_of(align, "aligned_at()")
        return self._derive(KeyedStream, n.AlignedAt, self._meta, input=self._node, align=ap.id)

    @overload  # overloads rather than P: see Stream.sink
    def sink(self: KeyedStream[K, V, Process[Tag], B, O], name: str) -> SinkPort[tuple[K, V]]: ...
    @overload
    def sink(self: KeyedStream[K, V, Cluster[Tag], B, O], name: str) -> SinkPort[tuple[K, V]]: ...
    def sink(self, name: str) -> SinkPort[Any]:
        """Write every (key, value) pair to the named output port."""
        self._need_top("sink()", rules.FIX_KEYED_SINK_TOP)
        node = n.Sink(meta=self._meta, site=capture_site(), input=self._node, port=name)
        self._loc.flow._register_sink(node)
        return SinkPort(name, None, ordered=False)
