"""The time operators, written once for every kind of live collection.

Entering a tick (`batch`, `snapshot` and their `_aligned` forms), leaving it (`all_ticks`,
`latest`), stepping it (`defer_tick`) and the alignment markers (`aligned_at`,
`release_aligned`) do the same thing whatever the collection: check the same rules, build
the same IR node, change the same facts of its `Meta`. Their bodies live here, in
`TimeOps`, the base of every live class; the operator's name in error messages is its IR
node's `op`, so it is spelled once too.

What differs per class is only the static type, and mypy cannot state "the same class with
its location replaced by `Tick[P]`" (that needs higher-kinded types). So each class keeps a
one-line public method with its exact signature that passes its own class to the body
here; the typing contract (typing_stubs/check_*.py) checks every such signature, and the
mypy plugin's table (`hydrolite/_mypy/table.py`) lists its rules (docs/design.md §8).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..ir import nodes as n
from ..ir.meta import Kind, Meta
from . import rules
from ._base import Live, LiveT

if TYPE_CHECKING:
    from ..ir.ids import AlignId


class _NotAligned:
    """The `align` of a plain batch()/snapshot(): no align point (None is a misuse)."""

    __slots__ = ()


NOT_ALIGNED: Final = _NotAligned()

# The fix of an alignment marker called inside a tick.
_MARKER_FIX: Final[dict[type[n.Node], str]] = {
    n.AlignedAt: rules.FIX_ALIGNED_AT_TOP,
    n.ReleaseAligned: rules.FIX_RELEASE_TOP,
}


def deferred_meta(meta: Meta) -> Meta:
    """What `defer_tick()` of a collection holds: the same, but a singleton may be absent
    (there is no previous tick before the first one), so it becomes optional."""
    return meta.but(kind=Kind.OPTIONAL) if meta.kind is Kind.SINGLETON else meta


class TimeOps(Live):
    """The bodies of the time operators; `cls` is the live class the typed method returns."""

    __slots__ = ()

    def _enter_tick(
        self,
        cls: type[LiveT],
        node_cls: type[n.Batch | n.Snapshot],
        tick: object,
        nondet: object,
        align: object = NOT_ALIGNED,
    ) -> LiveT:
        """`batch`/`snapshot` (and `batch_aligned`/`snapshot_aligned` when `align` is given):
        from a top-level collection into a tick of its own location, bounded there."""
        aligned = align is not NOT_ALIGNED
        op = f"{node_cls.op}_aligned()" if aligned else f"{node_cls.op}()"
        into = self._need_tick_of(tick, op)
        point: AlignId | None = self._need_align_of(align, op).id if aligned else None
        nd = self._need_nondet(nondet, op)
        meta = self._meta.but(loc=into.id, bounded=True)
        return self._derive(cls, node_cls, meta, loc=into, input=self._node, tick=into.id, nondet=nd, align=point)

    def _leave_tick(self, cls: type[LiveT], node_cls: type[n.AllTicks | n.Latest]) -> LiveT:
        """`all_ticks`/`latest`: from a tick to its top-level location, unbounded there."""
        tick = self._need_tick(f"{node_cls.op}()")
        meta = self._meta.but(loc=tick.id.outer, bounded=False)
        return self._derive(cls, node_cls, meta, loc=tick.outer, input=self._node)

    def _defer_tick(self, cls: type[LiveT]) -> LiveT:
        """`defer_tick`: what the collection held in the previous run of its tick."""
        self._need_tick(f"{n.DeferTick.op}()")
        return self._derive(cls, n.DeferTick, deferred_meta(self._meta), input=self._node)

    def _mark_aligned(self, cls: type[LiveT], node_cls: type[n.AlignedAt | n.ReleaseAligned], align: object) -> LiveT:
        """`aligned_at`/`release_aligned`: a top-level collection tied to one of its location's
        align points; the type (and the elements) are unchanged."""
        op = f"{node_cls.op}()"
        self._need_top(op, _MARKER_FIX[node_cls])
        point = self._need_align_of(align, op)
        return self._derive(cls, node_cls, self._meta, input=self._node, align=point.id)
