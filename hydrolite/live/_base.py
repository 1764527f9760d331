"""The shared base of live collections: one wrapped IR node plus its user-facing location.

The examples start from the names hydrolite/live/conftest.py defines (see stream.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from typing_extensions import Never

from .._site import capture_site
from ..errors import BuildError
from ..ir.ids import TickId
from ..ir.meta import Kind, Meta
from ..ir.nodes import Node
from ..nondet import NonDet
from . import rules

if TYPE_CHECKING:
    from ..locations.locations import LocalAlignPoint, Location, Tick, TopLevel

LiveT = TypeVar("LiveT", bound="Live")
TopLevelT = TypeVar("TopLevelT", bound="TopLevel")


class Live:
    """A live collection: an immutable handle on one IR node."""

    __slots__ = ("_loc", "_node")

    def __init__(self, node: Node, loc: Location) -> None:
        self._node = node
        self._loc = loc

    @property
    def node(self) -> Node:
        """The IR node this collection wraps.

        >>> server.source("xs", int).map(str).node.op
        'map'
        """
        return self._node

    @property
    def location(self) -> Location:
        """Where the collection lives (a Process, Cluster or Tick).

        >>> server.source("xs", int).batch(tick, nondet("any grouping will do")).location
        <Tick#0[Process[Server]]>
        """
        return self._loc

    def __repr__(self) -> str:
        return f"<{self._node.meta.type_str()} from {self._node.op}() at {self._node.site}>"

    # A live collection has no value at build time, so it has no truth value and no equality.
    # Both raise a BuildError. mypy sees `__eq__`/`__ne__` taking `Never`, so `a == b` on two
    # collections is an [operator] error ([hydrolite-eq] with the plugin); `__bool__` is hidden
    # from mypy, so `if stream:` is a [truthy-bool] error where that code is enabled (a
    # NoReturn `__bool__` would instead make mypy skip the rest of the function as unreachable).
    __hash__ = object.__hash__

    def __eq__(self, other: Never) -> bool:  # type: ignore[override]  # `other: Never` on purpose (see above)
        raise self._no_equality("==")

    def __ne__(self, other: Never) -> bool:  # type: ignore[override]  # `other: Never` on purpose (see above)
        raise self._no_equality("!=")

    if not TYPE_CHECKING:

        def __bool__(self) -> NoReturn:
            raise BuildError(
                "a live collection",
                required=rules.NO_TRUTH,
                found="a truth test (if/while/and/or) on a collection that is only known at run time",
                fix=rules.FIX_TRUTH,
            )

    def _no_equality(self, op: str) -> BuildError:
        return BuildError(
            f"{op} on a live collection",
            required=rules.NO_EQUALITY,
            found=f"{op} on {self._found()}",
            fix=rules.FIX_EQUALITY,
        )

    # ------------------------------------------------------------- building
    def _derive(
        self, cls: type[LiveT], node_cls: type[Node], meta: Meta, loc: Location | None = None, **fields: Any
    ) -> LiveT:
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
            raise BuildError(op, required=rules.ORDERED, found=self._found(), fix=fix)

    def _need_bounded(self, op: str, fix: str = "") -> None:
        if not self._meta.bounded:
            raise BuildError(
                op,
                required=rules.BOUNDED,
                found=self._found(),
                fix=fix or rules.FIX_BATCH,
            )

    def _need_tick(self, op: str) -> Tick[Any]:
        """The tick this collection lives in (a BuildError at the top level)."""
        from ..locations.locations import Tick

        loc = self._loc
        if not isinstance(self._meta.loc, TickId) or not isinstance(loc, Tick):
            raise BuildError(
                op,
                required=rules.IN_TICK,
                found=self._found(),
                fix=rules.FIX_ENTER_TICK,
            )
        return loc

    def _need_top(self, op: str, fix: str = "") -> None:
        if isinstance(self._meta.loc, TickId):
            raise BuildError(
                op,
                required=rules.TOP_LEVEL,
                found=self._found(),
                fix=fix or rules.FIX_LEAVE_TICK,
            )

    def _need_destination(
        self, dest: object, op: str, dest_cls: type[TopLevelT], fix: str = rules.FIX_SEND_TOP
    ) -> TopLevelT:
        """A send's destination: a `dest_cls` location of this flow other than the collection's own."""
        from ..locations.locations import TopLevel

        self._need_top(op, fix)
        if not isinstance(dest, dest_cls):
            found = str(dest.id) if isinstance(dest, TopLevel) else f"{type(dest).__name__} {dest!r}"
            raise BuildError(op, required=rules.destination(dest_cls.__name__), found=found, fix=rules.FIX_DESTINATION)
        self._need_same_flow(dest, op)
        if dest.id == self._meta.loc:
            raise BuildError(
                op,
                required="a different location to send to",
                found=f"{dest.id}, the collection's own location",
                fix="drop the send: the data is already there",
            )
        return dest

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
                required=rules.same_location(str(self._meta.loc)),
                found=f"{other._meta.loc}: {other._found()}",
                fix=rules.FIX_SAME_LOCATION,
            )
        return other

    def _need_tick_of(self, tick: object, op: str) -> Tick[Any]:
        from ..locations.locations import Tick

        self._need_top(op, rules.FIX_FROM_TOP)
        if not isinstance(tick, Tick):
            raise BuildError(op, required="a Tick", found=f"{type(tick).__name__} {tick!r}", fix="pass loc.tick()")
        self._need_same_flow(tick, op)
        if tick.id.outer != self._meta.loc:
            raise BuildError(
                op,
                required=rules.tick_of(str(self._meta.loc)),
                found=f"a tick of {tick.id.outer}",
                fix=rules.fix_tick_of(str(self._meta.loc)),
            )
        return tick

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
                required=rules.align_point_of(str(top)),
                found=f"an align point of {align.id.loc} (created at {align.site})",
                fix=rules.fix_align_point_of(str(top)),
            )
        return align

    @staticmethod
    def _need_nondet(nd: object, op: str) -> NonDet:
        if not isinstance(nd, NonDet):
            raise BuildError(
                op,
                required=rules.NONDET,
                found=f"{type(nd).__name__} {nd!r}",
                fix=rules.FIX_NONDET,
            )
        return nd

    @staticmethod
    def _need_fn(f: object, op: str) -> None:
        if not callable(f):
            raise BuildError(
                op, required="a function", found=f"{type(f).__name__} {f!r}", fix="pass a function or lambda"
            )
