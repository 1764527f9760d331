"""The shared base of live collections: one wrapped IR node plus its user-facing location."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from .._site import capture_site
from ..errors import BuildError
from ..ir.ids import TickId
from ..ir.meta import Kind, Meta
from ..ir.nodes import Node
from ..nondet import NonDet

if TYPE_CHECKING:
    from ..locations.locations import LocalAlignPoint, Location, Tick

LiveT = TypeVar("LiveT", bound="Live")


class Live:
    """A live collection: an immutable handle on one IR node."""

    __slots__ = ("_node", "_loc")

    def __init__(self, node: Node, loc: Location) -> None:
        self._node = node
        self._loc = loc

    @property
    def node(self) -> Node:
        """The IR node this collection wraps."""
        return self._node

    @property
    def location(self) -> Location:
        """Where the collection lives (a Process, Cluster or Tick)."""
        return self._loc

    def __repr__(self) -> str:
        return f"<{self._node.meta.type_str()} from {self._node.op}() at {self._node.site}>"

    def __bool__(self) -> NoReturn:
        raise BuildError(
            "a live collection",
            required="an explicit operator to observe its contents",
            found="a truth test (if/while/and/or) on a collection that is only known at run time",
            fix="use filter(), fold() or count() to compute the condition inside the pipeline",
        )

    # ------------------------------------------------------------- building
    def _derive(self, cls: type[LiveT], node_cls: type[Node], meta: Meta, loc: Location | None = None, **fields: Any) -> LiveT:
        name = fields.get("name")
        if name is not None and (not isinstance(name, str) or not name.strip() or name != name.strip()):
            raise BuildError(
                f"{node_cls.op}(name=...)",
                required="a non-empty string without surrounding spaces (the operator's state identity)",
                found=repr(name),
                fix='pass a short stable name, e.g. name="clicks_per_user", or leave it out',
            )
        node = node_cls(meta=meta, site=capture_site(), **fields)
        return cls(node, self._loc if loc is None else loc)

    # ------------------------------------------------------------- run-time rules
    @property
    def _meta(self) -> Meta:
        return self._node.meta

    def _found(self) -> str:
        return f"{self._meta.type_str()} (created by {self._node.op}() at {self._node.site})"

    def _need_ordered(self, op: str, fix: str) -> None:
        if not self._meta.ordered:
            raise BuildError(op, required="a TotalOrder collection", found=self._found(), fix=fix)

    def _need_bounded(self, op: str, fix: str = "") -> None:
        if not self._meta.bounded:
            raise BuildError(
                op,
                required="a Bounded collection (one batch inside a tick)",
                found=self._found(),
                fix=fix or "batch(tick, nondet(...)) it into a tick first",
            )

    def _need_tick(self, op: str) -> None:
        if not isinstance(self._meta.loc, TickId):
            raise BuildError(
                op,
                required="a collection inside a tick (Tick[...] location)",
                found=self._found(),
                fix="this operator leaves or steps a tick; use batch()/snapshot() to enter one first",
            )

    def _need_top(self, op: str, fix: str = "") -> None:
        if isinstance(self._meta.loc, TickId):
            raise BuildError(
                op,
                required="a top-level collection (on a Process or Cluster)",
                found=self._found(),
                fix=fix or "call all_ticks() (streams) or latest() (singletons) to leave the tick first",
            )

    def _need_same_flow(self, other: Location, op: str) -> None:
        # Two flows can hold equal location ids (same tag, same index): compare the builders.
        if other.flow is not self._loc.flow:
            raise BuildError(
                op,
                required=f"a collection or location of the same FlowBuilder ({self._loc.flow.name!r})",
                found=f"{other.id} of another FlowBuilder ({other.flow.name!r})",
                fix="build the whole program with one FlowBuilder",
            )

    def _need_same_loc(self, other: object, op: str, kinds: tuple[Kind, ...], what: str) -> Live:
        if not isinstance(other, Live) or other._meta.kind not in kinds:
            found = other._found() if isinstance(other, Live) else f"{type(other).__name__} {other!r}"
            raise BuildError(op, required=f"{what} as its argument", found=found, fix=f"pass {what}")
        self._need_same_flow(other._loc, op)
        if other._meta.loc != self._meta.loc:
            raise BuildError(
                op,
                required=f"both sides at the same location ({self._meta.loc})",
                found=f"{other._meta.loc}: {other._found()}",
                fix="move one side first: send() across locations, batch()/snapshot() into the tick, "
                "or all_ticks()/latest() out of it",
            )
        return other

    def _need_tick_of(self, tick: object, op: str) -> TickId:
        from ..locations.locations import Tick

        self._need_top(op, "batch/snapshot are taken from top-level collections only")
        if not isinstance(tick, Tick):
            raise BuildError(op, required="a Tick", found=f"{type(tick).__name__} {tick!r}", fix="pass loc.tick()")
        self._need_same_flow(tick, op)
        if tick.id.outer != self._meta.loc:
            raise BuildError(
                op,
                required=f"a tick of the collection's own location {self._meta.loc}",
                found=f"a tick of {tick.id.outer}",
                fix=f"create the tick with .tick() on the location that holds the collection ({self._meta.loc})",
            )
        return tick.id

    def _need_align_of(self, align: object, op: str) -> LocalAlignPoint[Any]:
        from ..locations.locations import LocalAlignPoint

        if not isinstance(align, LocalAlignPoint):
            raise BuildError(
                op,
                required="a LocalAlignPoint",
                found=f"{type(align).__name__} {align!r}",
                fix="create one with loc.local_align_point()",
            )
        self._need_same_flow(align.loc, op)
        top = self._meta.loc.outer if isinstance(self._meta.loc, TickId) else self._meta.loc
        if align.id.loc != top:
            raise BuildError(
                op,
                required=f"an align point of the collection's location {top}",
                found=f"an align point of {align.id.loc} (created at {align.site})",
                fix="alignment is local to one location: create the point on the location that "
                f"holds the collection ({top}); it cannot align across the network",
            )
        return align

    @staticmethod
    def _need_nondet(nd: object, op: str) -> NonDet:
        if not isinstance(nd, NonDet):
            raise BuildError(
                op,
                required='a nondet("why") justification',
                found=f"{type(nd).__name__} {nd!r}",
                fix='pass nondet("why any outcome is acceptable here")',
            )
        return nd

    @staticmethod
    def _need_fn(f: object, op: str) -> None:
        if not callable(f):
            raise BuildError(op, required="a function", found=f"{type(f).__name__} {f!r}", fix="pass a function or lambda")

