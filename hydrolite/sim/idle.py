"""Quiescence of self-driven ticks: would a run that takes no new input change anything?

A tick holding deferred elements (`defer_tick()` of a stream, `stream_cycle`) is runnable
even when none of its entries has anything new: the real runtime runs it again (Spark's
heartbeat batch). Such an *idle* run (batches release nothing, snapshots re-read their
last version) is a deterministic function of the tick's own state, so the simulator asks
once per state whether it is observable: it evaluates the tick body on a side copy of its
values, and the run counts as a change when it would emit something (an `all_ticks()`
element, a new `latest()` version), would carry a different value to the next run (a
`defer_tick` / cycle value that differs, as a multiset for NoOrder collections), or would
feed a carried (aligned) operator. A word count carrying its counts in a stream cycle
reaches that fixpoint one run after its last input: the tick then stops being runnable on
its own, and an idle run is never explored as a schedule of its own, because it is
indistinguishable from not running.

The answer is cached per (tick, place) and dropped when that tick runs there: nothing else
changes the state an idle run reads (entries release nothing, snapshots their last version).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ..ir.roles import Role
from .ops_time import CycleSinkOp, DeferTickOp, LatestOp, same_value
from .values import NOTHING, UNSET

if TYPE_CHECKING:
    from .program import TickPlan
    from .world import World


class _Observable(Exception):
    """Raised inside a probe as soon as the idle run is known to change something."""


class _Choice(_Observable):
    """The idle run would make a choice (an `assume_ordering` in the tick)."""


def _refuse_choice(n: int) -> int:
    raise _Choice()  # a chosen order can differ from the carried one: treat it as a change


def same_collection(a: Any, b: Any, ordered: bool) -> bool:
    """Equality of two carried values; NoOrder streams compare as multisets."""
    if ordered or not isinstance(a, list) or not isinstance(b, list):
        return same_value(a, b)
    if len(a) != len(b):
        return False
    try:
        return Counter(a) == Counter(b)
    except TypeError:  # unhashable elements: compare their sorted renderings
        return sorted(map(repr, a)) == sorted(map(repr, b))


def idle_run_changes(w: World, tp: TickPlan, p: int) -> bool:
    """Whether running `tp` at place `p` without new input would be observable (cached)."""
    key = (id(tp), p)
    known = w.idle.get(key)
    if known is None:
        known = w.idle[key] = _probe(w, tp, p)
    return known


def _probe(w: World, tp: TickPlan, p: int) -> bool:
    st = w.states[p]
    vals: list[Any] = [None] * len(w.prog.ops)
    for e in tp.entries:
        v = e.idle_value(st)
        if v is UNSET:
            return True  # an entry cannot re-read anything (a snapshot never read): not idle
        vals[e.idx] = v
    saved = w.choose, w.trace, w.ctx
    w.choose, w.trace = _refuse_choice, None
    op: Any = None
    try:
        for op in tp.body:
            if op.role is Role.CARRIED:
                _carried_idle(w, op, p, vals)
            else:
                vals[op.idx] = op.tick(w, st, vals)
        for x in tp.exits:
            v = vals[x.ins[0]]
            if isinstance(x, LatestOp):
                last = st[x.idx][0]
                if last is UNSET or not same_value(last, v):
                    return True
            elif x.exit(w, st, vals) is not NOTHING:
                return True
        for c in tp.commits:
            assert isinstance(c, (DeferTickOp, CycleSinkOp))
            if isinstance(c, CycleSinkOp) and isinstance(w.prog.ops[c.ins[0]], DeferTickOp):
                continue  # the cycle reads that defer_tick's value (see CycleSourceOp.link)
            prev, new, ran = st[c.idx]
            if new is not UNSET and (not ran or not same_collection(prev, new, c.node.meta.ordered)):
                return True
        return False
    except _Choice:
        w.busy_note = (
            f"a run of {tp.label} without new input still chooses an order ({op.node.op}() at {op.node.site}); "
            "to carry an unordered collection, use tick.stream_cycle(ty, NoOrder) instead of assume_ordering"
        )
        return True
    except _Observable:
        return True
    except Exception:
        return True
    finally:
        w.choose, w.trace, w.ctx = saved
        for c in tp.commits:
            st[c.idx][1] = UNSET


def _carried_idle(w: World, op: Any, p: int, vals: list[Any]) -> None:
    """A carried op in an idle run: any delta reaching it is a change; else its value stays."""
    for port in op.port_order:
        v = vals[op.ins[port]]
        if op.in_kinds[port].streamlike:
            if v:
                raise _Observable()
        elif op.in_roles[port] is not Role.CARRIED:
            raise _Observable()  # a bounded singleton is pushed every run: assume it matters
    vals[op.idx] = [] if op.streamlike else w.cur[p][op.idx]
