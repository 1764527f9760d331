"""`KeyedSingleton[K, V, L, B]`: a map from key to value that changes over time."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic

from ..ir import nodes as n
from ..ir.meta import Kind, pair_type
from ..locations.markers import Bounded, NoOrder, Unbounded
from ..nondet import NonDet
from . import keyed_stream as _ks
from . import rules
from . import singleton as _sg
from . import stream as _st
from ._base import Live
from ._typevars import V2, B, K, L, O, P, U, V

if TYPE_CHECKING:
    from ..locations.locations import LocalAlignPoint, Tick
    from .keyed_stream import KeyedStream
    from .singleton import OptionalSingleton, Singleton
    from .stream import Stream


class KeyedSingleton(Live, Generic[K, V, L, B]):
    """One value of type V per key K, at L."""

    __slots__ = ()

    def map(self, f: Callable[[V], U]) -> KeyedSingleton[K, U, L, B]:
        """Apply f to every key's value."""
        self._need_fn(f, "map()")
        return self._derive(KeyedSingleton, n.Map, self._meta.but(elem=None), input=self._node, f=f)

    def filter(self, f: Callable[[V], bool]) -> KeyedSingleton[K, V, L, B]:
        """Keep the keys whose value satisfies f."""
        self._need_fn(f, "filter()")
        return self._derive(KeyedSingleton, n.Filter, self._meta, input=self._node, f=f)

    def entries(self: KeyedSingleton[K, V, L, Bounded]) -> Stream[tuple[K, V], L, Bounded, NoOrder]:
        """(key, value) pairs of this tick's map."""
        self._need_bounded("entries()", rules.FIX_SNAPSHOT_TABLE)
        meta = self._meta.but(kind=Kind.STREAM, ordered=False, elem=pair_type(self._meta), key=None)
        return self._derive(_st.Stream, n.Entries, meta, input=self._node)

    def keys(self: KeyedSingleton[K, V, L, Bounded]) -> Stream[K, L, Bounded, NoOrder]:
        """The keys present in this tick's map."""
        self._need_bounded("keys()", rules.FIX_SNAPSHOT_TABLE)
        return self._derive(
            _st.Stream,
            n.Keys,
            self._meta.but(kind=Kind.STREAM, ordered=False, elem=self._meta.key, key=None),
            input=self._node,
        )

    def values(self: KeyedSingleton[K, V, L, Bounded]) -> Stream[V, L, Bounded, NoOrder]:
        """The values of this tick's map."""
        self._need_bounded("values()", rules.FIX_SNAPSHOT_TABLE)
        return self._derive(
            _st.Stream, n.Values, self._meta.but(kind=Kind.STREAM, ordered=False, key=None), input=self._node
        )

    def get(self: KeyedSingleton[K, V, L, Bounded], key: Singleton[K, L, Bounded]) -> OptionalSingleton[V, L, Bounded]:
        """The value at the key held by a singleton (empty when absent)."""
        self._need_bounded("get()", rules.FIX_SNAPSHOT_TABLE)
        k = self._need_same_loc(key, "get()", (Kind.SINGLETON,), "a Singleton holding the key")
        meta = self._meta.but(kind=Kind.OPTIONAL, key=None)
        return self._derive(_sg.OptionalSingleton, n.KeyedGet, meta, left=self._node, right=k._node)

    def get_many_if_present(
        self: KeyedSingleton[K, V, L, Bounded], requests: KeyedStream[K, V2, L, Bounded, O]
    ) -> KeyedStream[K, tuple[V2, V], L, Bounded, O]:
        """For each (k, r) request whose key is present, emit (k, (r, value))."""
        self._need_bounded("get_many_if_present()", rules.FIX_SNAPSHOT_TABLE)
        r = self._need_same_loc(requests, "get_many_if_present()", (Kind.KEYED_STREAM,), "a KeyedStream of requests")
        r._need_bounded("get_many_if_present()")
        meta = r._meta.but(elem=None)
        return self._derive(_ks.KeyedStream, n.KeyedLookup, meta, left=r._node, right=self._node, keep_missing=False)

    def snapshot(
        self: KeyedSingleton[K, V, P, B], tick: Tick[P], nondet: NonDet
    ) -> KeyedSingleton[K, V, Tick[P], Bounded]:
        """Some version of the whole map (never older than the previous tick's) enters the tick."""
        return self._snap(tick, None, nondet, "snapshot()")

    def snapshot_aligned(
        self: KeyedSingleton[K, V, P, B], tick: Tick[P], align: LocalAlignPoint[P], nondet: NonDet
    ) -> KeyedSingleton[K, V, Tick[P], Bounded]:
        """Like snapshot, consistent with every other use of the align point."""
        return self._snap(tick, align, nondet, "snapshot_aligned()")

    def _snap(self, tick: object, align: object | None, nondet: object, op: str) -> KeyedSingleton[Any, Any, Any, Any]:
        tid = self._need_tick_of(tick, op)
        ap = self._need_align_of(align, op).id if align is not None else None
        nd = self._need_nondet(nondet, op)
        return self._derive(
            KeyedSingleton,
            n.Snapshot,
            self._meta.but(loc=tid, bounded=True),
            loc=tick,  # type: ignore[arg-type]
            input=self._node,
            tick=tid,
            nondet=nd,
            align=ap,
        )

    def latest(self: KeyedSingleton[K, V, Tick[P], Bounded]) -> KeyedSingleton[K, V, P, Unbounded]:
        """The most recent tick's map, as a top-level changing map."""
        self._need_tick("latest()")
        tick: Any = self._loc
        return self._derive(
            KeyedSingleton, n.Latest, self._meta.but(loc=tick.id.outer, bounded=False), loc=tick.outer, input=self._node
        )

    def defer_tick(self: KeyedSingleton[K, V, Tick[P], Bounded]) -> KeyedSingleton[K, V, Tick[P], Bounded]:
        """The previous tick's map (empty in the first tick)."""
        self._need_tick("defer_tick()")
        return self._derive(KeyedSingleton, n.DeferTick, self._meta, input=self._node)

    def aligned_at(self: KeyedSingleton[K, V, P, B], align: LocalAlignPoint[P]) -> KeyedSingleton[K, V, P, B]:
        """Explicit mode: declare this map an upstream to align at `align`."""
        self._need_top("aligned_at()")
        ap = self._need_align_of(align, "aligned_at()")
        return self._derive(KeyedSingleton, n.AlignedAt, self._meta, input=self._node, align=ap.id)
