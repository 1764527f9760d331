"""`Singleton[T, L, B]` and `OptionalSingleton[T, L, B]`: one (possibly absent) changing value.

At the top level the value changes asynchronously over time; inside a tick there is one
value per tick. The optional form is Hydro's `Optional`, renamed so it does not shadow
`typing.Optional`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, overload

from ..ir import nodes as n
from ..ir.ids import TickId
from ..ir.meta import Kind, Meta
from ..locations.markers import Bounded, TotalOrder, Unbounded
from ..nondet import NonDet
from . import stream as _st
from ._base import Live
from ._typevars import B2, B, L, P, T, U

if TYPE_CHECKING:
    from ..locations.locations import LocalAlignPoint, Tick
    from .stream import Stream

_SCALARS = (Kind.SINGLETON, Kind.OPTIONAL)


class _Scalar(Live):
    """Run-time behaviour shared by Singleton and OptionalSingleton."""

    __slots__ = ()

    def _opt(self, node_cls: type[n.Node], elem: Any = None, **fields: Any) -> Any:
        return self._derive(
            OptionalSingleton, node_cls, self._meta.but(kind=Kind.OPTIONAL, elem=elem), input=self._node, **fields
        )

    def _zip(self, other: object) -> Any:
        o = self._need_same_loc(other, "zip()", _SCALARS, "a Singleton or OptionalSingleton")
        both = self._meta.kind is Kind.SINGLETON and o._meta.kind is Kind.SINGLETON
        cls = Singleton if both else OptionalSingleton
        meta = self._meta.but(
            kind=Kind.SINGLETON if both else Kind.OPTIONAL, elem=None, bounded=self._meta.bounded and o._meta.bounded
        )
        return self._derive(cls, n.Zip, meta, left=self._node, right=o._node)

    def _snapshot(self, tick: object, align: object | None, nondet: object, op: str) -> Any:
        tid = self._need_tick_of(tick, op)
        ap = self._need_align_of(align, op).id if align is not None else None
        nd = self._need_nondet(nondet, op)
        meta = self._meta.but(loc=tid, bounded=True)
        return self._derive(type(self), n.Snapshot, meta, loc=tick, input=self._node, tick=tid, nondet=nd, align=ap)  # type: ignore[arg-type]

    def _latest(self) -> Any:
        self._need_tick("latest()")
        tick: Any = self._loc
        return self._derive(
            type(self), n.Latest, self._meta.but(loc=tick.id.outer, bounded=False), loc=tick.outer, input=self._node
        )

    def _into_stream(self) -> Any:
        self._need_tick("into_stream()")
        return self._derive(_st.Stream, n.IntoStream, self._meta.but(kind=Kind.STREAM), input=self._node)

    def _aligned_at(self, align: object) -> Any:
        self._need_top("aligned_at()")
        ap = self._need_align_of(align, "aligned_at()")
        return self._derive(type(self), n.AlignedAt, self._meta, input=self._node, align=ap.id)

    def _flat(self, f: Callable[..., Any], op: str) -> Any:
        self._need_fn(f, op)
        return self._derive(
            _st.Stream, n.FlatMap, self._meta.but(kind=Kind.STREAM, elem=None, ordered=True), input=self._node, f=f
        )


class Singleton(_Scalar, Generic[T, L, B]):
    """One value of type T at L (top level: changes over time; in a tick: one per tick)."""

    __slots__ = ()

    def map(self, f: Callable[[T], U]) -> Singleton[U, L, B]:
        """Apply f to the value (every version of it)."""
        self._need_fn(f, "map()")
        return self._derive(Singleton, n.Map, self._meta.but(elem=None), input=self._node, f=f)

    def filter(self, f: Callable[[T], bool]) -> OptionalSingleton[T, L, B]:
        """The value when f holds, otherwise empty."""
        self._need_fn(f, "filter()")
        return self._opt(n.Filter, self._meta.elem, f=f)  # type: ignore[no-any-return]

    def filter_map(self, f: Callable[[T], U | None]) -> OptionalSingleton[U, L, B]:
        """f(value) when it is not None, otherwise empty."""
        self._need_fn(f, "filter_map()")
        return self._opt(n.FilterMap, None, f=f)  # type: ignore[no-any-return]

    def flat_map_ordered(self, f: Callable[[T], Iterable[U]]) -> Stream[U, L, B, TotalOrder]:
        """A stream of the elements of f(value)."""
        return self._flat(f, "flat_map_ordered()")  # type: ignore[no-any-return]

    def inspect(self, f: Callable[[T], object]) -> Singleton[T, L, B]:
        """Call f on the value for its side effect."""
        self._need_fn(f, "inspect()")
        return self._derive(Singleton, n.Inspect, self._meta, input=self._node, f=f)

    # Bounded only if both sides are (as at run time); optional if the other side is.
    # The last two overloads cover generic code whose boundedness is a type variable.
    @overload
    def zip(self: Singleton[T, L, Bounded], other: Singleton[U, L, Bounded]) -> Singleton[tuple[T, U], L, Bounded]: ...
    @overload
    def zip(
        self: Singleton[T, L, Bounded], other: OptionalSingleton[U, L, Bounded]
    ) -> OptionalSingleton[tuple[T, U], L, Bounded]: ...
    @overload
    def zip(
        self: Singleton[T, L, Bounded], other: Singleton[U, L, Unbounded]
    ) -> Singleton[tuple[T, U], L, Unbounded]: ...
    @overload
    def zip(
        self: Singleton[T, L, Bounded], other: OptionalSingleton[U, L, Unbounded]
    ) -> OptionalSingleton[tuple[T, U], L, Unbounded]: ...
    @overload
    def zip(self: Singleton[T, L, Unbounded], other: Singleton[U, L, B2]) -> Singleton[tuple[T, U], L, Unbounded]: ...
    @overload
    def zip(
        self: Singleton[T, L, Unbounded], other: OptionalSingleton[U, L, B2]
    ) -> OptionalSingleton[tuple[T, U], L, Unbounded]: ...
    @overload
    def zip(self: Singleton[T, L, B], other: Singleton[U, L, B]) -> Singleton[tuple[T, U], L, B]: ...
    @overload
    def zip(self: Singleton[T, L, B], other: OptionalSingleton[U, L, B]) -> OptionalSingleton[tuple[T, U], L, B]: ...
    def zip(
        self, other: Singleton[Any, Any, Any] | OptionalSingleton[Any, Any, Any]
    ) -> Singleton[Any, Any, Any] | OptionalSingleton[Any, Any, Any]:
        """Pair with another value at the same location."""
        return self._zip(other)  # type: ignore[no-any-return]

    def into_stream(self: Singleton[T, Tick[P], Bounded]) -> Stream[T, Tick[P], Bounded, TotalOrder]:
        """This tick's value as a one-element stream."""
        return self._into_stream()  # type: ignore[no-any-return]

    def snapshot(self: Singleton[T, P, B], tick: Tick[P], nondet: NonDet) -> Singleton[T, Tick[P], Bounded]:
        """Some version of the value (never older than the previous tick's) enters the tick."""
        return self._snapshot(tick, None, nondet, "snapshot()")  # type: ignore[no-any-return]

    def snapshot_aligned(
        self: Singleton[T, P, B], tick: Tick[P], align: LocalAlignPoint[P], nondet: NonDet
    ) -> Singleton[T, Tick[P], Bounded]:
        """Like snapshot, consistent with every other use of the align point."""
        return self._snapshot(tick, align, nondet, "snapshot_aligned()")  # type: ignore[no-any-return]

    def latest(self: Singleton[T, Tick[P], Bounded]) -> Singleton[T, P, Unbounded]:
        """The value of the most recent tick, as a top-level changing value."""
        return self._latest()  # type: ignore[no-any-return]

    def defer_tick(self: Singleton[T, Tick[P], Bounded]) -> OptionalSingleton[T, Tick[P], Bounded]:
        """The previous tick's value (empty in the first tick)."""
        self._need_tick("defer_tick()")
        return self._opt(n.DeferTick, self._meta.elem)  # type: ignore[no-any-return]

    def aligned_at(self: Singleton[T, P, B], align: LocalAlignPoint[P]) -> Singleton[T, P, B]:
        """Explicit mode: declare this value an upstream to align at `align`."""
        return self._aligned_at(align)  # type: ignore[no-any-return]


class OptionalSingleton(_Scalar, Generic[T, L, B]):
    """A value of type T that may be absent (Hydro's Optional): results of reduce, first, last."""

    __slots__ = ()

    def map(self, f: Callable[[T], U]) -> OptionalSingleton[U, L, B]:
        """Apply f to the value when present."""
        self._need_fn(f, "map()")
        return self._derive(OptionalSingleton, n.Map, self._meta.but(elem=None), input=self._node, f=f)

    def filter(self, f: Callable[[T], bool]) -> OptionalSingleton[T, L, B]:
        """Keep the value only when f holds."""
        self._need_fn(f, "filter()")
        return self._opt(n.Filter, self._meta.elem, f=f)  # type: ignore[no-any-return]

    def filter_map(self, f: Callable[[T], U | None]) -> OptionalSingleton[U, L, B]:
        """f(value) when present and not None."""
        self._need_fn(f, "filter_map()")
        return self._opt(n.FilterMap, None, f=f)  # type: ignore[no-any-return]

    def inspect(self, f: Callable[[T], object]) -> OptionalSingleton[T, L, B]:
        """Call f on the value when present."""
        self._need_fn(f, "inspect()")
        return self._derive(OptionalSingleton, n.Inspect, self._meta, input=self._node, f=f)

    @overload
    def zip(
        self: OptionalSingleton[T, L, Bounded], other: Singleton[U, L, Bounded] | OptionalSingleton[U, L, Bounded]
    ) -> OptionalSingleton[tuple[T, U], L, Bounded]: ...
    @overload
    def zip(
        self: OptionalSingleton[T, L, Bounded], other: Singleton[U, L, Unbounded] | OptionalSingleton[U, L, Unbounded]
    ) -> OptionalSingleton[tuple[T, U], L, Unbounded]: ...
    @overload
    def zip(
        self: OptionalSingleton[T, L, Unbounded], other: Singleton[U, L, B2] | OptionalSingleton[U, L, B2]
    ) -> OptionalSingleton[tuple[T, U], L, Unbounded]: ...
    @overload
    def zip(
        self: OptionalSingleton[T, L, B], other: Singleton[U, L, B] | OptionalSingleton[U, L, B]
    ) -> OptionalSingleton[tuple[T, U], L, B]: ...
    def zip(
        self, other: Singleton[Any, Any, Any] | OptionalSingleton[Any, Any, Any]
    ) -> OptionalSingleton[Any, Any, Any]:
        """Pair with another value; empty when either side is (Bounded only if both are)."""
        return self._zip(other)  # type: ignore[no-any-return]

    def unwrap_or(self, default: T) -> Singleton[T, L, B]:
        """The value, or `default` when absent."""
        meta = self._meta.but(kind=Kind.SINGLETON)
        return self._derive(Singleton, n.UnwrapOr, meta, input=self._node, default=default)

    def into_singleton(self) -> Singleton[T | None, L, B]:
        """A singleton holding the value or None."""
        meta = self._meta.but(kind=Kind.SINGLETON, elem=None)
        return self._derive(Singleton, n.IntoSingleton, meta, input=self._node)

    def into_stream(self: OptionalSingleton[T, Tick[P], Bounded]) -> Stream[T, Tick[P], Bounded, TotalOrder]:
        """This tick's value as a stream of zero or one element."""
        return self._into_stream()  # type: ignore[no-any-return]

    def snapshot(
        self: OptionalSingleton[T, P, B], tick: Tick[P], nondet: NonDet
    ) -> OptionalSingleton[T, Tick[P], Bounded]:
        """Some version of the value enters the tick."""
        return self._snapshot(tick, None, nondet, "snapshot()")  # type: ignore[no-any-return]

    def snapshot_aligned(
        self: OptionalSingleton[T, P, B], tick: Tick[P], align: LocalAlignPoint[P], nondet: NonDet
    ) -> OptionalSingleton[T, Tick[P], Bounded]:
        """Like snapshot, consistent with every other use of the align point."""
        return self._snapshot(tick, align, nondet, "snapshot_aligned()")  # type: ignore[no-any-return]

    def latest(self: OptionalSingleton[T, Tick[P], Bounded]) -> OptionalSingleton[T, P, Unbounded]:
        """The most recent tick's value, as a top-level changing value."""
        return self._latest()  # type: ignore[no-any-return]

    def defer_tick(self: OptionalSingleton[T, Tick[P], Bounded]) -> OptionalSingleton[T, Tick[P], Bounded]:
        """The previous tick's value."""
        self._need_tick("defer_tick()")
        return self._opt(n.DeferTick, self._meta.elem)  # type: ignore[no-any-return]

    def aligned_at(self: OptionalSingleton[T, P, B], align: LocalAlignPoint[P]) -> OptionalSingleton[T, P, B]:
        """Explicit mode: declare this value an upstream to align at `align`."""
        return self._aligned_at(align)  # type: ignore[no-any-return]


__all__ = ["Meta", "OptionalSingleton", "Singleton", "TickId"]
