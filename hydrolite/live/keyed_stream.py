"""`KeyedStream[K, V, L, B, O]`: one stream of V per key K; order holds within a key only.

The examples start from the names hydrolite/live/conftest.py defines (see stream.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, overload

from typing_extensions import TypeForm

from .._site import capture_site
from ..ir import nodes as n
from ..ir.ids import ClusterId
from ..ir.meta import Kind, pair_type
from ..locations.locations import Cluster, Process
from ..locations.markers import Bounded, NoOrder, TotalOrder, Unbounded
from ..nondet import NonDet
from . import keyed_singleton as _kg
from . import rules
from . import stream as _st
from ._time import TimeOps
from ._typevars import V2, A, B, K, L, O, P, Tag, Tag2, U, V
from .ports import SinkPort

if TYPE_CHECKING:
    from ..locations.locations import LocalAlignPoint, Tick
    from .keyed_singleton import KeyedSingleton
    from .stream import Stream

_FIX = rules.FIX_KEYED_ORDER


class KeyedStream(TimeOps, Generic[K, V, L, B, O]):
    """Streams of V grouped by key K at location L."""

    __slots__ = ()

    # ------------------------------------------------------------- per value
    def map(self, f: Callable[[V], U]) -> KeyedStream[K, U, L, B, O]:
        """Apply f to every value (keys unchanged).

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.map(lambda v: v * 10), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 10), ('a', 30), ('b', 20)]
        """
        self._need_fn(f, "map()")
        return self._derive(KeyedStream, n.Map, self._meta.but(elem=None), input=self._node, f=f)

    def filter(self, f: Callable[[V], bool]) -> KeyedStream[K, V, L, B, O]:
        """Keep the values for which f is true.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.filter(lambda v: v > 1), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 3), ('b', 2)]
        """
        self._need_fn(f, "filter()")
        return self._derive(KeyedStream, n.Filter, self._meta, input=self._node, f=f)

    def filter_map(self, f: Callable[[V], U | None]) -> KeyedStream[K, U, L, B, O]:
        """Apply f to every value and keep results that are not None.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.filter_map(lambda v: v * 10 if v > 1 else None), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 30), ('b', 20)]
        """
        self._need_fn(f, "filter_map()")
        return self._derive(KeyedStream, n.FilterMap, self._meta.but(elem=None), input=self._node, f=f)

    def flat_map_ordered(self, f: Callable[[V], Iterable[U]]) -> KeyedStream[K, U, L, B, O]:
        """Replace every value by the elements of f(value), in order.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.flat_map_ordered(lambda v: [v] * v), k=[("a", 2), ("b", 1)])
        [('a', 2), ('a', 2), ('b', 1)]
        """
        self._need_fn(f, "flat_map_ordered()")
        return self._derive(KeyedStream, n.FlatMap, self._meta.but(elem=None), input=self._node, f=f)

    def flat_map_unordered(self, f: Callable[[V], Iterable[U]]) -> KeyedStream[K, U, L, B, NoOrder]:
        """Replace every value by the elements of f(value), in no meaningful order.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.flat_map_unordered(lambda v: {v, -v}), k=[("a", 2)])
        [('a', -2), ('a', 2)]
        """
        self._need_fn(f, "flat_map_unordered()")
        return self._derive(KeyedStream, n.FlatMap, self._meta.but(elem=None, ordered=False), input=self._node, f=f)

    def inspect(self, f: Callable[[V], object]) -> KeyedStream[K, V, L, B, O]:
        """Call f on every value for its side effect.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.inspect(print), k=[("a", 1)])
        1
        [('a', 1)]
        """
        self._need_fn(f, "inspect()")
        return self._derive(KeyedStream, n.Inspect, self._meta, input=self._node, f=f)

    def enumerate(
        self: KeyedStream[K, V, L, B, TotalOrder], *, name: str | None = None
    ) -> KeyedStream[K, tuple[int, V], L, B, TotalOrder]:
        """Pair each value with its position within its key.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.enumerate(), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', (0, 1)), ('a', (1, 3)), ('b', (0, 2))]
        """
        self._need_ordered("enumerate()", _FIX)
        return self._derive(KeyedStream, n.Enumerate, self._meta.but(elem=None), input=self._node, name=name)

    def unique(self, *, name: str | None = None) -> KeyedStream[K, V, L, B, O]:
        """Drop values already seen for the same key.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.unique(), k=[("a", 1), ("b", 1), ("a", 1)])
        [('a', 1), ('b', 1)]
        """
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
        """Per key: acc = f(acc, v) in order, from init.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.fold("", lambda acc, v: acc + str(v)), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', '13'), ('b', '2')]
        """
        self._need_ordered("fold()", _FIX)
        self._need_fn(f, "fold()")
        return self._agg(
            n.Fold, type(init) if acc_type is None else acc_type, init=init, f=f, commutative=False, name=name
        )

    def fold_commutative(
        self, init: A, f: Callable[[A, V], A], *, acc_type: TypeForm[A] | None = None, name: str | None = None
    ) -> KeyedSingleton[K, A, L, B]:
        """Per-key fold whose result does not depend on the order of values.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.fold_commutative(0, lambda acc, v: acc + v), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 4), ('b', 2)]
        """
        self._need_fn(f, "fold_commutative()")
        return self._agg(
            n.Fold, type(init) if acc_type is None else acc_type, init=init, f=f, commutative=True, name=name
        )

    def reduce(
        self: KeyedStream[K, V, L, B, TotalOrder], f: Callable[[V, V], V], *, name: str | None = None
    ) -> KeyedSingleton[K, V, L, B]:
        """Per key: combine values in order (e.g. `lambda old, new: new` keeps the latest).

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.reduce(lambda old, new: new), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 3), ('b', 2)]
        """
        self._need_ordered("reduce()", _FIX)
        self._need_fn(f, "reduce()")
        return self._agg(n.Reduce, self._meta.elem, f=f, commutative=False, name=name)

    def reduce_commutative(self, f: Callable[[V, V], V], *, name: str | None = None) -> KeyedSingleton[K, V, L, B]:
        """Per-key reduce with a commutative, associative f.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.reduce_commutative(max), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 3), ('b', 2)]
        """
        self._need_fn(f, "reduce_commutative()")
        return self._agg(n.Reduce, self._meta.elem, f=f, commutative=True, name=name)

    def count(self, *, name: str | None = None) -> KeyedSingleton[K, int, L, B]:
        """Per key: how many values.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.count(), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 2), ('b', 1)]
        """
        return self._agg(n.Count, int, name=name)

    def first(self: KeyedStream[K, V, L, B, TotalOrder], *, name: str | None = None) -> KeyedSingleton[K, V, L, B]:
        """Per key: the first value.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.first(), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 1), ('b', 2)]
        """
        self._need_ordered("first()", _FIX)
        return self._agg(n.First, self._meta.elem, name=name)

    def last(self: KeyedStream[K, V, L, B, TotalOrder], *, name: str | None = None) -> KeyedSingleton[K, V, L, B]:
        """Per key: the last value.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.last(), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 3), ('b', 2)]
        """
        self._need_ordered("last()", _FIX)
        return self._agg(n.Last, self._meta.elem, name=name)

    def _agg(self, node_cls: type[n.Node], elem: Any, **fields: Any) -> KeyedSingleton[Any, Any, Any, Any]:
        meta = self._meta.but(kind=Kind.KEYED_SINGLETON, ordered=True, elem=elem)
        return self._derive(_kg.KeyedSingleton, node_cls, meta, input=self._node, **fields)

    # ------------------------------------------------------------- reshaping
    def entries(self) -> Stream[tuple[K, V], L, B, NoOrder]:
        """(key, value) pairs; the order across keys is not meaningful.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.entries(), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 1), ('a', 3), ('b', 2)]
        """
        meta = self._meta.but(kind=Kind.STREAM, ordered=False, elem=pair_type(self._meta), key=None)
        return self._derive(_st.Stream, n.Entries, meta, input=self._node)

    def keys(self) -> Stream[K, L, B, NoOrder]:
        """Each key that has a value, once.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.keys(), k=[("a", 1), ("b", 2), ("a", 3)])
        ['a', 'b']
        """
        meta = self._meta.but(kind=Kind.STREAM, ordered=False, elem=self._meta.key, key=None)
        return self._derive(_st.Stream, n.Keys, meta, input=self._node)

    def values(self) -> Stream[V, L, B, NoOrder]:
        """All values, keys dropped (order across keys is lost).

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.values(), k=[("a", 1), ("b", 2), ("a", 3)])
        [1, 2, 3]
        """
        meta = self._meta.but(kind=Kind.STREAM, ordered=False, key=None)
        return self._derive(_st.Stream, n.Values, meta, input=self._node)

    def lookup_keyed_singleton(
        self: KeyedStream[K, V, L, Bounded, O], table: KeyedSingleton[K, V2, L, Bounded]
    ) -> KeyedStream[K, tuple[V, V2 | None], L, Bounded, O]:
        """Pair each value with the table's value at its key (None when absent).

        >>> nd = nondet("any version of the table will do")
        >>> table = server.keyed_source("names", int, str).reduce(lambda old, new: new).snapshot(tick, nd)
        >>> orders = server.keyed_source("orders", int, float).batch(tick, nondet("any grouping will do"))
        >>> run(orders.lookup_keyed_singleton(table), names=[(1, "ann")], orders=[(1, 9.5), (2, 3.0)])
        [(1, (9.5, 'ann')), (2, (3.0, None))]
        """
        self._need_bounded("lookup_keyed_singleton()")
        t = self._need_same_loc(table, "lookup_keyed_singleton()", (Kind.KEYED_SINGLETON,), "a KeyedSingleton")
        t._need_bounded("lookup_keyed_singleton()", rules.FIX_SNAPSHOT_TABLE)
        return self._derive(
            KeyedStream, n.KeyedLookup, self._meta.but(elem=None), left=self._node, right=t._node, keep_missing=True
        )

    # ------------------------------------------------------------- order
    def assume_ordering(self, nondet: NonDet) -> KeyedStream[K, V, L, B, TotalOrder]:
        """Treat each key's values as totally ordered (a non-deterministic choice).

        >>> bag = server.source_iter([("a", 1), ("a", 2)]).into_keyed().weaken_ordering()
        >>> outcomes(bag.assume_ordering(nondet("either value may come first")).first())
        [[('a', 1)], [('a', 2)]]
        """
        nd = self._need_nondet(nondet, "assume_ordering()")
        return self._derive(KeyedStream, n.AssumeOrdering, self._meta.but(ordered=True), input=self._node, nondet=nd)

    def weaken_ordering(self) -> KeyedStream[K, V, L, B, NoOrder]:
        """Forget the order within keys.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.weaken_ordering(), k=[("a", 1), ("b", 2), ("a", 3)])  # sorted: the order within a key means nothing now
        [('a', 1), ('a', 3), ('b', 2)]
        """
        return self._derive(KeyedStream, n.WeakenOrdering, self._meta.but(ordered=False), input=self._node)

    # ------------------------------------------------------------- ticks and alignment (bodies in _time.py)
    def batch(
        self: KeyedStream[K, V, P, B, O], tick: Tick[P], nondet: NonDet
    ) -> KeyedStream[K, V, Tick[P], Bounded, O]:
        """A prefix of each key's pending values enters each tick.

        >>> ks = server.keyed_source("k", str, int)
        >>> outcomes(ks.batch(tick, nondet("any grouping will do")).count(), k=[("a", 1), ("a", 2)])
        [[('a', 1), ('a', 1)], [('a', 2)]]
        """
        return self._enter_tick(KeyedStream, n.Batch, tick, nondet)

    def batch_aligned(
        self: KeyedStream[K, V, P, B, O], tick: Tick[P], align: LocalAlignPoint[P], nondet: NonDet
    ) -> KeyedStream[K, V, Tick[P], Bounded, O]:
        """Like batch, consistent with the other uses of the align point.

        >>> ks = server.keyed_source("k", str, int)
        >>> align = server.local_align_point()
        >>> run(ks.batch_aligned(tick, align, nondet("any grouping will do")), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 1), ('a', 3), ('b', 2)]
        """
        return self._enter_tick(KeyedStream, n.Batch, tick, nondet, align)

    def all_ticks(self: KeyedStream[K, V, Tick[P], Bounded, O]) -> KeyedStream[K, V, P, Unbounded, O]:
        """Every tick's batch, concatenated into a top-level keyed stream.

        >>> ks = server.keyed_source("k", str, int)
        >>> batch = ks.batch(tick, nondet("any grouping will do"))
        >>> run(batch.map(lambda v: -v).all_ticks(), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', -1), ('a', -3), ('b', -2)]
        """
        return self._leave_tick(KeyedStream, n.AllTicks)

    def defer_tick(self: KeyedStream[K, V, Tick[P], Bounded, O]) -> KeyedStream[K, V, Tick[P], Bounded, O]:
        """The previous tick's batch.

        >>> ks = server.keyed_source("k", str, int)
        >>> batch = ks.batch(tick, nondet("any grouping will do"))
        >>> run(batch.defer_tick().entries().count(), {"k": [("a", 1)]}, {"k": [("b", 2)]})  # see Stream.defer_tick
        [[0, 1], [0, 1]]
        """
        return self._defer_tick(KeyedStream)

    def release_aligned(self: KeyedStream[K, V, P, B, O], align: LocalAlignPoint[P]) -> KeyedStream[K, V, P, B, O]:
        """Release each value only once every later aligned batch/snapshot reflects it.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.release_aligned(server.local_align_point()), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 1), ('a', 3), ('b', 2)]
        """
        return self._mark_aligned(KeyedStream, n.ReleaseAligned, align)

    def aligned_at(self: KeyedStream[K, V, P, B, O], align: LocalAlignPoint[P]) -> KeyedStream[K, V, P, B, O]:
        """Explicit mode: declare this keyed stream an upstream to align at `align`.

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.aligned_at(server.local_align_point()), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 1), ('a', 3), ('b', 2)]
        """
        return self._mark_aligned(KeyedStream, n.AlignedAt, align)

    # ------------------------------------------------------------- network
    @overload
    def demux_by_key(
        self: KeyedStream[K, V, Process[Tag], B, O], dest: Cluster[Tag2]
    ) -> KeyedStream[K, V, Cluster[Tag2], Unbounded, O]: ...
    @overload
    def demux_by_key(
        self: KeyedStream[K, V, Cluster[Tag], B, O], dest: Cluster[Tag2]
    ) -> KeyedStream[K, V, Cluster[Tag2], Unbounded, NoOrder]: ...
    def demux_by_key(self, dest: Cluster[Any]) -> Any:
        """Shard by key: send each (key, value) to the one member of `dest` that owns the key.

        The owner is a stable hash of the key modulo the cluster's size at run time
        (`hydrolite.locations.sharding.member_of_key`: the same in the simulator and on every
        Spark executor), so every value of a key reaches the same member, and the program does
        not change with the number of members (`--cluster-members`, `cluster_sizes`). Each
        member receives a keyed stream of its keys. From a process a key's values keep their
        order; from a cluster, values of one key sent by different members interleave in any
        order (NoOrder).

        >>> ks = server.keyed_source("k", str, int)
        >>> run(ks.demux_by_key(workers), k=[("a", 1), ("f", 2), ("a", 3), ("g", 4)])  # member -> its keys
        {0: [('f', 2), ('g', 4)], 1: [('a', 1), ('a', 3)]}
        """
        dest = self._need_destination(dest, "demux_by_key()", Cluster, rules.FIX_KEYED_SEND_TOP)
        meta = self._meta.but(loc=dest.id, bounded=False)
        if isinstance(self._meta.loc, ClusterId):  # several senders per key: no order across them
            meta = meta.but(ordered=False)
        return self._derive(KeyedStream, n.Send, meta, loc=dest, input=self._node, dest=dest.id, mode=n.SendMode.BY_KEY)

    @overload  # overloads rather than P: see Stream.sink
    def sink(self: KeyedStream[K, V, Process[Tag], B, O], name: str) -> SinkPort[tuple[K, V]]: ...
    @overload
    def sink(self: KeyedStream[K, V, Cluster[Tag], B, O], name: str) -> SinkPort[tuple[K, V]]: ...
    def sink(self, name: str) -> SinkPort[Any]:
        """Write every (key, value) pair to the named output port.

        >>> server.keyed_source("k", str, int).sink("out")
        SinkPort(name='out', elem=None, ordered=False)
        """
        self._need_top("sink()", rules.FIX_KEYED_SINK_TOP)
        node = n.Sink(meta=self._meta, site=capture_site(), input=self._node, port=name)
        self._loc.flow._register_sink(node)
        return SinkPort(name, None, ordered=False)
