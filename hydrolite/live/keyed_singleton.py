"""`KeyedSingleton[K, V, L, B]`: a map from key to value that changes over time.

The examples start from the names hydrolite/live/conftest.py defines (see stream.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic

from ..ir import nodes as n
from ..ir.meta import Kind, pair_type
from ..locations.markers import Bounded, NoOrder, Unbounded
from ..nondet import NonDet
from . import keyed_stream as _ks
from . import rules
from . import singleton as _sg
from . import stream as _st
from ._time import TimeOps
from ._typevars import V2, B, K, L, O, P, U, V

if TYPE_CHECKING:
    from ..locations.locations import LocalAlignPoint, Tick
    from .keyed_stream import KeyedStream
    from .singleton import OptionalSingleton, Singleton
    from .stream import Stream


class KeyedSingleton(TimeOps, Generic[K, V, L, B]):
    """One value of type V per key K, at L."""

    __slots__ = ()

    def map(self, f: Callable[[V], U]) -> KeyedSingleton[K, U, L, B]:
        """Apply f to every key's value.

        >>> counts = server.keyed_source("k", str, int).count()
        >>> run(counts.map(lambda c: c * 10), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 20), ('b', 10)]
        """
        self._need_fn(f, "map()")
        return self._derive(KeyedSingleton, n.Map, self._meta.but(elem=None), input=self._node, f=f)

    def filter(self, f: Callable[[V], bool]) -> KeyedSingleton[K, V, L, B]:
        """Keep the keys whose value satisfies f.

        >>> counts = server.keyed_source("k", str, int).count()
        >>> run(counts.filter(lambda c: c > 1), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 2)]
        """
        self._need_fn(f, "filter()")
        return self._derive(KeyedSingleton, n.Filter, self._meta, input=self._node, f=f)

    def entries(self: KeyedSingleton[K, V, L, Bounded]) -> Stream[tuple[K, V], L, Bounded, NoOrder]:
        """(key, value) pairs of this tick's map.

        >>> counts = server.keyed_source("k", str, int).count()
        >>> table = counts.snapshot(tick, nondet("any recent counts will do"))
        >>> run(table.entries(), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 2), ('b', 1)]
        """
        self._need_bounded("entries()", rules.FIX_SNAPSHOT_TABLE)
        meta = self._meta.but(kind=Kind.STREAM, ordered=False, elem=pair_type(self._meta), key=None)
        return self._derive(_st.Stream, n.Entries, meta, input=self._node)

    def keys(self: KeyedSingleton[K, V, L, Bounded]) -> Stream[K, L, Bounded, NoOrder]:
        """The keys present in this tick's map.

        >>> counts = server.keyed_source("k", str, int).count()
        >>> table = counts.snapshot(tick, nondet("any recent counts will do"))
        >>> run(table.keys(), k=[("a", 1), ("b", 2), ("a", 3)])
        ['a', 'b']
        """
        self._need_bounded("keys()", rules.FIX_SNAPSHOT_TABLE)
        return self._derive(
            _st.Stream,
            n.Keys,
            self._meta.but(kind=Kind.STREAM, ordered=False, elem=self._meta.key, key=None),
            input=self._node,
        )

    def values(self: KeyedSingleton[K, V, L, Bounded]) -> Stream[V, L, Bounded, NoOrder]:
        """The values of this tick's map.

        >>> counts = server.keyed_source("k", str, int).count()
        >>> table = counts.snapshot(tick, nondet("any recent counts will do"))
        >>> run(table.values(), k=[("a", 1), ("b", 2), ("a", 3)])
        [1, 2]
        """
        self._need_bounded("values()", rules.FIX_SNAPSHOT_TABLE)
        return self._derive(
            _st.Stream, n.Values, self._meta.but(kind=Kind.STREAM, ordered=False, key=None), input=self._node
        )

    def get(self: KeyedSingleton[K, V, L, Bounded], key: Singleton[K, L, Bounded]) -> OptionalSingleton[V, L, Bounded]:
        """The value at the key held by a singleton (empty when absent).

        >>> counts = server.keyed_source("k", str, int).count()
        >>> table = counts.snapshot(tick, nondet("any recent counts will do"))
        >>> wanted = tick.singleton("a")
        >>> run(table.get(wanted), k=[("a", 1), ("b", 2), ("a", 3)])
        [2]
        """
        self._need_bounded("get()", rules.FIX_SNAPSHOT_TABLE)
        k = self._need_same_loc(key, "get()", (Kind.SINGLETON,), "a Singleton holding the key")
        meta = self._meta.but(kind=Kind.OPTIONAL, key=None)
        return self._derive(_sg.OptionalSingleton, n.KeyedGet, meta, left=self._node, right=k._node)

    def get_many_if_present(
        self: KeyedSingleton[K, V, L, Bounded], requests: KeyedStream[K, V2, L, Bounded, O]
    ) -> KeyedStream[K, tuple[V2, V], L, Bounded, O]:
        """For each (k, r) request whose key is present, emit (k, (r, value)).

        >>> counts = server.keyed_source("k", str, int).count()
        >>> table = counts.snapshot(tick, nondet("any recent counts will do"))
        >>> asks = server.keyed_source("ask", str, int).batch(tick, nondet("any grouping will do"))
        >>> run(table.get_many_if_present(asks), k=[("a", 1), ("b", 2), ("a", 3)], ask=[("a", 7), ("z", 8)])
        [('a', (7, 2))]
        """
        self._need_bounded("get_many_if_present()", rules.FIX_SNAPSHOT_TABLE)
        r = self._need_same_loc(requests, "get_many_if_present()", (Kind.KEYED_STREAM,), "a KeyedStream of requests")
        r._need_bounded("get_many_if_present()")
        meta = r._meta.but(elem=None)
        return self._derive(_ks.KeyedStream, n.KeyedLookup, meta, left=r._node, right=self._node, keep_missing=False)

    # ------------------------------------------------------------- ticks and alignment (bodies in _time.py)
    def snapshot(
        self: KeyedSingleton[K, V, P, B], tick: Tick[P], nondet: NonDet
    ) -> KeyedSingleton[K, V, Tick[P], Bounded]:
        """Some version of the whole map (never older than the previous tick's) enters the tick.

        >>> counts = server.keyed_source("k", str, int).count()
        >>> outcomes(counts.snapshot(tick, nondet("any recent counts will do")).entries(), k=[("a", 1), ("a", 2)])  # versions seen per tick
        [[('a', 1), ('a', 2)], [('a', 2)]]
        """
        return self._enter_tick(KeyedSingleton, n.Snapshot, tick, nondet)

    def snapshot_aligned(
        self: KeyedSingleton[K, V, P, B], tick: Tick[P], align: LocalAlignPoint[P], nondet: NonDet
    ) -> KeyedSingleton[K, V, Tick[P], Bounded]:
        """Like snapshot, consistent with every other use of the align point.

        >>> counts = server.keyed_source("k", str, int).count()
        >>> align = server.local_align_point()
        >>> run(counts.snapshot_aligned(tick, align, nondet("any recent counts will do")), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 2), ('b', 1)]
        """
        return self._enter_tick(KeyedSingleton, n.Snapshot, tick, nondet, align)

    def latest(self: KeyedSingleton[K, V, Tick[P], Bounded]) -> KeyedSingleton[K, V, P, Unbounded]:
        """The most recent tick's map, as a top-level changing map.

        >>> batch = server.keyed_source("k", str, int).batch(tick, nondet("any grouping will do"))
        >>> run(batch.count().latest(), k=[("a", 1), ("b", 2), ("a", 3)])  # the last tick's map
        [('a', 2), ('b', 1)]
        """
        return self._leave_tick(KeyedSingleton, n.Latest)

    def defer_tick(self: KeyedSingleton[K, V, Tick[P], Bounded]) -> KeyedSingleton[K, V, Tick[P], Bounded]:
        """The previous tick's map (empty in the first tick).

        >>> batch = server.keyed_source("k", str, int).batch(tick, nondet("any grouping will do"))
        >>> sizes = batch.count()
        >>> run(sizes.defer_tick(), {"k": [("a", 1)]}, {"k": [("b", 2)]})  # the previous tick's map
        [[], [('a', 1)]]
        """
        return self._defer_tick(KeyedSingleton)

    def aligned_at(self: KeyedSingleton[K, V, P, B], align: LocalAlignPoint[P]) -> KeyedSingleton[K, V, P, B]:
        """Explicit mode: declare this map an upstream to align at `align`.

        >>> counts = server.keyed_source("k", str, int).count()
        >>> run(counts.aligned_at(server.local_align_point()), k=[("a", 1), ("b", 2), ("a", 3)])
        [('a', 2), ('b', 1)]
        """
        return self._mark_aligned(KeyedSingleton, n.AlignedAt, align)
