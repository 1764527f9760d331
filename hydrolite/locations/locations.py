"""User-facing locations: processes, clusters, ticks; plus member ids and align points."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, NoReturn, overload

from typing_extensions import TypeForm, TypeVar

from .._site import CallSite, capture_site
from ..errors import BuildError
from ..ir import nodes as n
from ..ir.ids import AlignId, ClusterId, CycleId, LocId, ProcessId, TickId, TopId
from ..ir.meta import Kind, Meta

if TYPE_CHECKING:
    from ..live.cycles import TickCycle
    from ..live.keyed_stream import KeyedStream
    from ..live.singleton import OptionalSingleton, Singleton
    from ..live.stream import Stream
    from .flow import FlowBuilder
    from .markers import Bounded, Ordering, TotalOrder, Unbounded

Tag = TypeVar("Tag")
T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
P = TypeVar("P", bound="TopLevel")
O = TypeVar("O", bound="Ordering")  # noqa: E741  (O for Ordering)


class Location:
    """Base of every location; `id` is what the IR records."""

    __slots__ = ("_flow", "id")

    def __init__(self, flow: FlowBuilder, id: LocId) -> None:
        self._flow = flow
        self.id = id

    @property
    def flow(self) -> FlowBuilder:
        return self._flow

    def __repr__(self) -> str:
        return f"<{self.id}>"


class TopLevel(Location):
    """A Process or Cluster: collections here are asynchronous and unbounded."""

    __slots__ = ()
    id: TopId

    def tick(self: P) -> Tick[P]:
        """A new logical clock on this location.

        >>> import hydrolite as hl
        >>> class Server: ...
        >>> server = hl.FlowBuilder().process(Server)
        >>> server.tick()
        <Tick#0[Process[Server]]>
        """
        return Tick(self, self._flow._new_tick(self.id, capture_site()))

    def local_align_point(self: P) -> LocalAlignPoint[P]:
        """A point at which aligned batches/snapshots see the same version of shared upstreams.

        >>> import hydrolite as hl
        >>> class Server: ...
        >>> server = hl.FlowBuilder().process(Server)
        >>> str(server.local_align_point().id)
        'align#0[Process[Server]]'
        """
        site = capture_site()
        return LocalAlignPoint(self, self._flow._new_align(self.id, site), site)

    def source(self: P, name: str, ty: TypeForm[T]) -> Stream[T, P, Unbounded, TotalOrder]:
        """A named input port of element type `ty`, bound at run time.

        `ty` is any type expression: `int`, `float | None`, `tuple[str, int]`, a dataclass.
        (A bare `tuple` or `list` means `tuple[Any, ...]`/`list[Any]`: spell the items.)

        >>> import hydrolite as hl
        >>> from hydrolite.live.demo import run
        >>> class Server: ...
        >>> server = hl.FlowBuilder().process(Server)
        >>> run(server.source("temps", float).map(round), temps=[20.4, 21.6])
        [20, 22]
        """
        from ..live.stream import Stream

        site = capture_site()
        meta = Meta(Kind.STREAM, self.id, bounded=False, ordered=True, elem=ty)
        node = n.Source(meta=meta, site=site, port=name)
        self._flow._register_source(node)
        return Stream(node, self)

    def keyed_source(
        self: P, name: str, key: TypeForm[K], value: TypeForm[V]
    ) -> KeyedStream[K, V, P, Unbounded, TotalOrder]:
        """A named input port of (key, value) pairs, seen as a keyed stream.

        >>> import hydrolite as hl
        >>> from hydrolite.live.demo import run
        >>> class Server: ...
        >>> server = hl.FlowBuilder().process(Server)
        >>> run(server.keyed_source("visits", str, int).count(), visits=[("ann", 1), ("bob", 1), ("ann", 2)])
        [('ann', 2), ('bob', 1)]
        """
        from ..live.keyed_stream import KeyedStream

        site = capture_site()
        meta = Meta(Kind.KEYED_STREAM, self.id, bounded=False, ordered=True, elem=value, key=key)
        node = n.Source(meta=meta, site=site, port=name)
        self._flow._register_source(node)
        return KeyedStream(node, self)

    def source_iter(self: P, values: Iterable[T]) -> Stream[T, P, Bounded, TotalOrder]:
        """A finite literal input (handy for constants and tests).

        >>> import hydrolite as hl
        >>> from hydrolite.live.demo import run
        >>> class Server: ...
        >>> server = hl.FlowBuilder().process(Server)
        >>> run(server.source_iter(["a", "b"]).count())
        [2]
        """
        from ..live.stream import Stream

        items = tuple(values)
        elem = type(items[0]) if items and all(type(x) is type(items[0]) for x in items) else None
        meta = Meta(Kind.STREAM, self.id, bounded=True, ordered=True, elem=elem)
        return Stream(n.SourceIter(meta=meta, site=capture_site(), values=items), self)


class Process(TopLevel, Generic[Tag]):
    """A single machine, named by a tag class: `flow.process(Server)` is `Process[Server]`."""

    __slots__ = ()
    id: ProcessId


class Cluster(TopLevel, Generic[Tag]):
    """A set of machines running the same program; each member keeps its own state."""

    __slots__ = ()
    id: ClusterId


class Tick(Location, Generic[P]):
    """A logical clock on a top-level location; collections inside are Bounded per tick."""

    __slots__ = ("outer",)
    id: TickId

    def __init__(self, outer: P, id: TickId) -> None:
        super().__init__(outer.flow, id)
        self.outer = outer

    if not TYPE_CHECKING:

        def tick(self) -> NoReturn:  # only visible at run time: mypy reports attr-defined
            raise BuildError(
                "tick()",
                required="a Process or Cluster to create a tick on",
                found=f"a tick ({self.id}); ticks do not nest",
                fix="call .tick() on the top-level location instead (tick.outer.tick())",
            )

        def source(self, *args: Any, **kwargs: Any) -> NoReturn:
            self._top_only("source()", "declare the source on tick.outer and batch() it into the tick")

        def keyed_source(self, *args: Any, **kwargs: Any) -> NoReturn:
            self._top_only("keyed_source()", "declare the source on tick.outer and batch() it into the tick")

        def source_iter(self, *args: Any, **kwargs: Any) -> NoReturn:
            self._top_only("source_iter()", "use tick.singleton(value), or source_iter on tick.outer and batch() it")

        def local_align_point(self) -> NoReturn:
            self._top_only(
                "local_align_point()",
                "create the point on tick.outer; ticks join it via batch_aligned/snapshot_aligned",
            )

        def _top_only(self, op: str, fix: str) -> NoReturn:
            raise BuildError(
                op, required="a Process or Cluster (a top-level location)", found=f"a tick ({self.id})", fix=fix
            )

    def singleton(self, value: T) -> Singleton[T, Tick[P], Bounded]:
        """A constant singleton holding `value` in every tick.

        >>> import hydrolite as hl
        >>> from hydrolite.live.demo import run
        >>> class Server: ...
        >>> server = hl.FlowBuilder().process(Server)
        >>> tick = server.tick()
        >>> batch = server.source("xs", int).batch(tick, hl.nondet("any grouping will do"))
        >>> run(batch.cross_singleton(tick.singleton(10)).map(lambda p: p[0] * p[1]), xs=[1, 2])
        [10, 20]
        """
        from ..live.singleton import Singleton

        meta = Meta(Kind.SINGLETON, self.id, bounded=True, ordered=True, elem=type(value))
        return Singleton(n.TickConstant(meta=meta, site=capture_site(), value=value), self)

    @overload
    def stream_cycle(
        self, ty: TypeForm[T]
    ) -> tuple[TickCycle[Stream[T, Tick[P], Bounded, TotalOrder]], Stream[T, Tick[P], Bounded, TotalOrder]]: ...
    @overload
    def stream_cycle(
        self, ty: TypeForm[T], ordering: type[O]
    ) -> tuple[TickCycle[Stream[T, Tick[P], Bounded, O]], Stream[T, Tick[P], Bounded, O]]: ...
    def stream_cycle(self, ty: TypeForm[T], ordering: type[Ordering] | None = None) -> tuple[Any, Any]:
        """A stream that holds, in each tick, what the handle is completed with in the previous one.

        `ordering` is the ordering of what it carries: TotalOrder (the default) or NoOrder,
        so an unordered collection (a keyed fold's entries) is carried without pretending
        to an order: `tick.stream_cycle(tuple[str, int], NoOrder)`.

        >>> import hydrolite as hl
        >>> from hydrolite.live.demo import run
        >>> class Server: ...
        >>> server = hl.FlowBuilder().process(Server)
        >>> tick = server.tick()
        >>> handle, seen = tick.stream_cycle(int)  # what arrived in earlier ticks
        >>> batch = server.source("xs", int).batch(tick, hl.nondet("any grouping will do"))
        >>> everything = seen.chain(batch)
        >>> handle.complete_next_tick(everything)
        >>> run(everything.count().latest(), {"xs": [1, 2]}, {"xs": [3]})  # how many so far
        [[2], [3]]
        """
        from ..live.stream import Stream
        from .markers import NoOrder as _NoOrder

        meta = Meta(
            Kind.STREAM,
            self.id,
            bounded=True,
            ordered=not (isinstance(ordering, type) and issubclass(ordering, _NoOrder)),
            elem=ty,
        )
        return self._cycle(Stream, meta, n.CycleSource)

    def singleton_cycle(
        self, initial: T
    ) -> tuple[TickCycle[Singleton[T, Tick[P], Bounded]], Singleton[T, Tick[P], Bounded]]:
        """A singleton carrying state to the next tick; `initial` in the first tick.

        >>> import hydrolite as hl
        >>> from hydrolite.live.demo import run
        >>> class Server: ...
        >>> server = hl.FlowBuilder().process(Server)
        >>> tick = server.tick()
        >>> handle, total = tick.singleton_cycle(0)
        >>> batch = server.source("xs", int).batch(tick, hl.nondet("any grouping will do"))
        >>> new_total = total.zip(batch.fold(0, lambda acc, x: acc + x)).map(sum)
        >>> handle.complete_next_tick(new_total)
        >>> run(new_total, {"xs": [1, 2]}, {"xs": [3]})
        [[3], [6]]
        """
        from ..live.singleton import Singleton

        meta = Meta(Kind.SINGLETON, self.id, bounded=True, ordered=True, elem=type(initial))
        return self._cycle(Singleton, meta, n.CycleSource, initial=initial)

    def optional_cycle(
        self, ty: TypeForm[T]
    ) -> tuple[TickCycle[OptionalSingleton[T, Tick[P], Bounded]], OptionalSingleton[T, Tick[P], Bounded]]:
        """An optional singleton carried to the next tick (empty in the first tick).

        >>> import hydrolite as hl
        >>> from hydrolite.live.demo import run
        >>> class Server: ...
        >>> server = hl.FlowBuilder().process(Server)
        >>> tick = server.tick()
        >>> handle, previous = tick.optional_cycle(int)  # empty in the first tick
        >>> batch = server.source("xs", int).batch(tick, hl.nondet("any grouping will do"))
        >>> handle.complete_next_tick(batch.last())
        >>> run(previous, {"xs": [1, 2]}, {"xs": [3]})
        [[], [2]]
        """
        from ..live.singleton import OptionalSingleton

        meta = Meta(Kind.OPTIONAL, self.id, bounded=True, ordered=True, elem=ty)
        return self._cycle(OptionalSingleton, meta, n.CycleSource)

    def _cycle(self, cls: Any, meta: Meta, node_cls: type[n.CycleSource], **extra: Any) -> tuple[Any, Any]:
        from ..live.cycles import TickCycle

        site = capture_site()
        cid = self._flow._new_cycle(self.id, site)
        placeholder = cls(node_cls(meta=meta, site=site, cycle=cid, **extra), self)
        return TickCycle(self, cid, placeholder, site), placeholder


@dataclass(frozen=True, order=True)
class MemberId(Generic[Tag]):
    """The id of one member of `Cluster[Tag]`."""

    raw: int

    def __str__(self) -> str:
        return f"member#{self.raw}"


class LocalAlignPoint(Generic[P]):
    """An align point on one location (see docs/design.md §2): generic, so mixing locations is a type error."""

    __slots__ = ("id", "loc", "site")

    def __init__(self, loc: P, id: AlignId, site: CallSite) -> None:
        self.loc = loc
        self.id = id
        self.site = site

    def __repr__(self) -> str:
        return f"<{self.id} created at {self.site}>"


__all__ = ["Cluster", "CycleId", "LocalAlignPoint", "Location", "MemberId", "Process", "Tick", "TopLevel"]
