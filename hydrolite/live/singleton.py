"""`Singleton[T, L, B]` and `OptionalSingleton[T, L, B]`: one (possibly absent) changing value.

At the top level the value changes asynchronously over time; inside a tick there is one
value per tick. The optional form is Hydro's `Optional`, renamed so it does not shadow
`typing.Optional`. The examples start from the names hydrolite/live/conftest.py defines (see
stream.py).
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
from ._base import LiveT
from ._time import TimeOps
from ._typevars import B2, B, L, P, T, U

if TYPE_CHECKING:
    from ..locations.locations import LocalAlignPoint, Tick
    from .stream import Stream

_SCALARS = (Kind.SINGLETON, Kind.OPTIONAL)


class _Scalar(TimeOps):
    """Run-time behaviour shared by Singleton and OptionalSingleton."""

    __slots__ = ()

    def _opt(self, node_cls: type[n.Node], elem: Any = None, **fields: Any) -> OptionalSingleton[Any, Any, Any]:
        meta = self._meta.but(kind=Kind.OPTIONAL, elem=elem)
        return self._derive(OptionalSingleton, node_cls, meta, input=self._node, **fields)

    def _zip(self, other: object, both: type[LiveT]) -> LiveT | OptionalSingleton[Any, Any, Any]:
        """`zip`: of class `both` (the receiver's) when both sides are Singletons, else optional."""
        o = self._need_same_loc(other, "zip()", _SCALARS, "a Singleton or OptionalSingleton")
        bounded = self._meta.bounded and o._meta.bounded
        if self._meta.kind is Kind.SINGLETON and o._meta.kind is Kind.SINGLETON:
            meta = self._meta.but(elem=None, bounded=bounded)
            return self._derive(both, n.Zip, meta, left=self._node, right=o._node)
        meta = self._meta.but(kind=Kind.OPTIONAL, elem=None, bounded=bounded)
        return self._derive(OptionalSingleton, n.Zip, meta, left=self._node, right=o._node)

    def _into_stream(self) -> _st.Stream[Any, Any, Any, Any]:
        self._need_tick("into_stream()")
        return self._derive(_st.Stream, n.IntoStream, self._meta.but(kind=Kind.STREAM), input=self._node)

    def _flat(self, f: Callable[..., Any], op: str) -> _st.Stream[Any, Any, Any, Any]:
        self._need_fn(f, op)
        meta = self._meta.but(kind=Kind.STREAM, elem=None, ordered=True)
        return self._derive(_st.Stream, n.FlatMap, meta, input=self._node, f=f)


class Singleton(_Scalar, Generic[T, L, B]):
    """One value of type T at L (top level: changes over time; in a tick: one per tick)."""

    __slots__ = ()

    def map(self, f: Callable[[T], U]) -> Singleton[U, L, B]:
        """Apply f to the value (every version of it).

        >>> total = server.source("xs", int).fold(0, lambda acc, x: acc + x)
        >>> run(total.map(lambda t: t * 10), xs=[1, 2])
        [30]
        """
        self._need_fn(f, "map()")
        return self._derive(Singleton, n.Map, self._meta.but(elem=None), input=self._node, f=f)

    def filter(self, f: Callable[[T], bool]) -> OptionalSingleton[T, L, B]:
        """The value when f holds, otherwise empty.

        >>> total = server.source("xs", int).fold(0, lambda acc, x: acc + x)
        >>> run(total.filter(lambda t: t > 2), xs=[1, 2])
        [3]
        """
        self._need_fn(f, "filter()")
        return self._opt(n.Filter, self._meta.elem, f=f)

    def filter_map(self, f: Callable[[T], U | None]) -> OptionalSingleton[U, L, B]:
        """f(value) when it is not None, otherwise empty.

        >>> total = server.source("xs", int).fold(0, lambda acc, x: acc + x)
        >>> run(total.filter_map(lambda t: -t if t > 2 else None), xs=[1, 2])
        [-3]
        """
        self._need_fn(f, "filter_map()")
        return self._opt(n.FilterMap, None, f=f)

    def flat_map_ordered(self, f: Callable[[T], Iterable[U]]) -> Stream[U, L, B, TotalOrder]:
        """A stream of the elements of f(value).

        >>> word = server.source("xs", str).fold("", lambda acc, x: acc + x)
        >>> run(word.flat_map_ordered(list), xs=["ab", "c"])  # every version's letters
        ['a', 'b', 'a', 'b', 'c']
        """
        return self._flat(f, "flat_map_ordered()")

    def inspect(self, f: Callable[[T], object]) -> Singleton[T, L, B]:
        """Call f on the value for its side effect.

        >>> total = server.source("xs", int).fold(0, lambda acc, x: acc + x)
        >>> run(total.inspect(print), xs=[1, 2])  # every version, from the initial one
        0
        1
        3
        [3]
        """
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
        """Pair with another value at the same location.

        >>> xs = server.source("xs", int)
        >>> run(xs.count().zip(xs.fold(0, lambda acc, x: acc + x)), xs=[1, 2])
        [(2, 3)]
        """
        return self._zip(other, Singleton)

    def into_stream(self: Singleton[T, Tick[P], Bounded]) -> Stream[T, Tick[P], Bounded, TotalOrder]:
        """This tick's value as a one-element stream.

        >>> total = server.source("xs", int).fold(0, lambda acc, x: acc + x)
        >>> run(total.snapshot(tick, nondet("any recent total will do")).into_stream(), xs=[1, 2])
        [3]
        """
        return self._into_stream()

    def snapshot(self: Singleton[T, P, B], tick: Tick[P], nondet: NonDet) -> Singleton[T, Tick[P], Bounded]:
        """Some version of the value (never older than the previous tick's) enters the tick.

        >>> total = server.source("xs", int).fold(0, lambda acc, x: acc + x)
        >>> outcomes(total.snapshot(tick, nondet("any recent total will do")), xs=[1, 2])  # the versions a tick sees
        [[0, 1, 3], [0, 3], [1, 3], [3]]
        """
        return self._enter_tick(Singleton, n.Snapshot, tick, nondet)

    def snapshot_aligned(
        self: Singleton[T, P, B], tick: Tick[P], align: LocalAlignPoint[P], nondet: NonDet
    ) -> Singleton[T, Tick[P], Bounded]:
        """Like snapshot, consistent with every other use of the align point.

        >>> align = server.local_align_point()
        >>> increments = server.source("increment", str)
        >>> count = increments.count().snapshot_aligned(tick, align, nondet("consistent with the released acks"))
        >>> acks = increments.release_aligned(align).batch_aligned(tick, align, nondet("any grouping will do"))
        >>> outcomes(acks.cross_singleton(count), increment=["a", "b"])  # an ack sees a count that includes it
        [[('a', 1), ('b', 2)], [('a', 2), ('b', 2)]]
        """
        return self._enter_tick(Singleton, n.Snapshot, tick, nondet, align)

    def latest(self: Singleton[T, Tick[P], Bounded]) -> Singleton[T, P, Unbounded]:
        """The value of the most recent tick, as a top-level changing value.

        >>> batches = server.source("xs", int).batch(tick, nondet("any grouping will do"))
        >>> run(batches.count().latest(), xs=[1, 2])  # the last tick's count
        [2]
        """
        return self._leave_tick(Singleton, n.Latest)

    def defer_tick(self: Singleton[T, Tick[P], Bounded]) -> OptionalSingleton[T, Tick[P], Bounded]:
        """The previous tick's value (empty in the first tick).

        >>> count = server.source("xs", int).batch(tick, nondet("any grouping will do")).count()
        >>> run(count.zip(count.defer_tick()), {"xs": [1, 2]}, {"xs": [3]})  # (this tick, the last one)
        [[], [(1, 2)]]
        """
        return self._defer_tick(OptionalSingleton)

    def aligned_at(self: Singleton[T, P, B], align: LocalAlignPoint[P]) -> Singleton[T, P, B]:
        """Explicit mode: declare this value an upstream to align at `align`.

        >>> total = server.source("xs", int).fold(0, lambda acc, x: acc + x)
        >>> run(total.aligned_at(server.local_align_point()), xs=[1, 2])
        [3]
        """
        return self._mark_aligned(Singleton, n.AlignedAt, align)


class OptionalSingleton(_Scalar, Generic[T, L, B]):
    """A value of type T that may be absent (Hydro's Optional): results of reduce, first, last."""

    __slots__ = ()

    def map(self, f: Callable[[T], U]) -> OptionalSingleton[U, L, B]:
        """Apply f to the value when present.

        >>> best = server.source("xs", int).reduce(max)
        >>> run(best.map(lambda b: b * 10), xs=[3, 1])
        [30]
        """
        self._need_fn(f, "map()")
        return self._derive(OptionalSingleton, n.Map, self._meta.but(elem=None), input=self._node, f=f)

    def filter(self, f: Callable[[T], bool]) -> OptionalSingleton[T, L, B]:
        """Keep the value only when f holds.

        >>> best = server.source("xs", int).reduce(max)
        >>> run(best.filter(lambda b: b > 5), xs=[3, 1])  # empty: nothing to show
        []
        """
        self._need_fn(f, "filter()")
        return self._opt(n.Filter, self._meta.elem, f=f)

    def filter_map(self, f: Callable[[T], U | None]) -> OptionalSingleton[U, L, B]:
        """f(value) when present and not None.

        >>> best = server.source("xs", int).reduce(max)
        >>> run(best.filter_map(lambda b: -b if b > 2 else None), xs=[3, 1])
        [-3]
        """
        self._need_fn(f, "filter_map()")
        return self._opt(n.FilterMap, None, f=f)

    def inspect(self, f: Callable[[T], object]) -> OptionalSingleton[T, L, B]:
        """Call f on the value when present.

        >>> best = server.source("xs", int).reduce(max)
        >>> run(best.inspect(print), xs=[3, 5])
        3
        5
        [5]
        """
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
        """Pair with another value; empty when either side is (Bounded only if both are).

        >>> best = server.source("xs", int).reduce(max)
        >>> run(best.zip(server.source("ys", str).first()), xs=[3], ys=["a"])
        [(3, 'a')]
        """
        return self._zip(other, OptionalSingleton)

    def unwrap_or(self, default: T) -> Singleton[T, L, B]:
        """The value, or `default` when absent.

        >>> best = server.source("xs", int).reduce(max)
        >>> run(best.unwrap_or(-1))  # no input: the default
        [-1]
        """
        meta = self._meta.but(kind=Kind.SINGLETON)
        return self._derive(Singleton, n.UnwrapOr, meta, input=self._node, default=default)

    def into_singleton(self) -> Singleton[T | None, L, B]:
        """A singleton holding the value or None.

        >>> best = server.source("xs", int).reduce(max)
        >>> run(best.into_singleton())
        [None]
        """
        meta = self._meta.but(kind=Kind.SINGLETON, elem=None)
        return self._derive(Singleton, n.IntoSingleton, meta, input=self._node)

    def into_stream(self: OptionalSingleton[T, Tick[P], Bounded]) -> Stream[T, Tick[P], Bounded, TotalOrder]:
        """This tick's value as a stream of zero or one element.

        >>> best = server.source("xs", int).reduce(max)
        >>> run(best.snapshot(tick, nondet("any recent maximum will do")).into_stream(), xs=[3, 1])
        [3]
        """
        return self._into_stream()

    def snapshot(
        self: OptionalSingleton[T, P, B], tick: Tick[P], nondet: NonDet
    ) -> OptionalSingleton[T, Tick[P], Bounded]:
        """Some version of the value enters the tick.

        >>> best = server.source("xs", int).reduce(max)
        >>> outcomes(best.snapshot(tick, nondet("any recent maximum will do")), xs=[1, 3])  # empty at first: nothing shown
        [[1, 3], [3]]
        """
        return self._enter_tick(OptionalSingleton, n.Snapshot, tick, nondet)

    def snapshot_aligned(
        self: OptionalSingleton[T, P, B], tick: Tick[P], align: LocalAlignPoint[P], nondet: NonDet
    ) -> OptionalSingleton[T, Tick[P], Bounded]:
        """Like snapshot, consistent with every other use of the align point.

        >>> best = server.source("xs", int).reduce(max)
        >>> align = server.local_align_point()
        >>> run(best.snapshot_aligned(tick, align, nondet("any recent maximum will do")), xs=[1, 3])
        [3]
        """
        return self._enter_tick(OptionalSingleton, n.Snapshot, tick, nondet, align)

    def latest(self: OptionalSingleton[T, Tick[P], Bounded]) -> OptionalSingleton[T, P, Unbounded]:
        """The most recent tick's value, as a top-level changing value.

        >>> batch = server.source("xs", int).batch(tick, nondet("any grouping will do"))
        >>> run(batch.reduce(max).latest(), xs=[3, 1])
        [3]
        """
        return self._leave_tick(OptionalSingleton, n.Latest)

    def defer_tick(self: OptionalSingleton[T, Tick[P], Bounded]) -> OptionalSingleton[T, Tick[P], Bounded]:
        """The previous tick's value.

        >>> batch = server.source("xs", int).batch(tick, nondet("any grouping will do"))
        >>> best = batch.reduce(max)
        >>> run(best.zip(best.defer_tick()), {"xs": [3]}, {"xs": [1]})  # (this tick, the last one)
        [[], [(1, 3)]]
        """
        return self._defer_tick(OptionalSingleton)

    def aligned_at(self: OptionalSingleton[T, P, B], align: LocalAlignPoint[P]) -> OptionalSingleton[T, P, B]:
        """Explicit mode: declare this value an upstream to align at `align`.

        >>> best = server.source("xs", int).reduce(max)
        >>> run(best.aligned_at(server.local_align_point()), xs=[3, 1])
        [3]
        """
        return self._mark_aligned(OptionalSingleton, n.AlignedAt, align)


__all__ = ["Meta", "OptionalSingleton", "Singleton", "TickId"]
