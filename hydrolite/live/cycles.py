"""Tick cycles: carry a collection from one tick to the next.

The example starts from the names hydrolite/live/conftest.py defines (see stream.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._site import CallSite, capture_site
from ..errors import BuildError
from ..ir import nodes as n
from ._base import Live
from ._time import deferred_meta

if TYPE_CHECKING:
    from ..ir.ids import CycleId
    from ..locations.locations import Tick

C = TypeVar("C", bound=Live)


class TickCycle(Generic[C]):
    """The write handle of a tick cycle; the placeholder it came with reads last tick's value."""

    __slots__ = ("_tick", "_id", "_placeholder", "_site")

    def __init__(self, tick: Tick[Any], cycle: CycleId, placeholder: C, site: CallSite) -> None:
        self._tick = tick
        self._id = cycle
        self._placeholder = placeholder
        self._site = site

    def complete_next_tick(self, value: C) -> None:
        """Feed `value` (computed in this tick) to the placeholder in the next tick.

        >>> handle, total = tick.singleton_cycle(0)
        >>> batch = server.source("xs", int).batch(tick, nondet("any grouping will do"))
        >>> new_total = total.zip(batch.count()).map(lambda p: p[0] + p[1])
        >>> handle.complete_next_tick(new_total)
        >>> run(new_total, {"xs": [1, 2]}, {"xs": [3]})  # a running count, carried tick to tick
        [[2], [3]]
        """
        site = capture_site()
        ph = self._placeholder.node.meta
        if (
            not isinstance(value, Live)
            or value.node.meta.kind is not ph.kind
            or value.node.meta.loc != ph.loc
            or value.location.flow is not self._tick.flow
        ):
            found = value.node.meta.type_str() if isinstance(value, Live) else repr(value)
            raise BuildError(
                "complete_next_tick()",
                required=f"a {ph.type_str()} (the cycle's own kind and tick)",
                found=found,
                fix=f"complete the cycle created at {self._site} with a collection of the same tick",
                site=site,
            )
        if ph.ordered and not value.node.meta.ordered:
            raise BuildError(
                "complete_next_tick()",
                required="a TotalOrder collection (the placeholder is TotalOrder)",
                found=value.node.meta.type_str(),
                fix="use assume_ordering(nondet(...)) or sort() before completing the cycle",
                site=site,
            )
        carried = value.node.meta if ph.ordered else value.node.meta.but(ordered=False)  # a NoOrder cycle: a bag
        meta = deferred_meta(carried)  # last tick's value: a singleton is absent in the very first tick
        deferred = n.DeferTick(meta=meta, site=site, input=value.node)
        self._tick.flow._complete_cycle(n.CycleSink(meta=meta, site=site, input=deferred, cycle=self._id))
