"""The scheduler's actions, typed: what `World.step` may do next when the test waits.

* `RunTick`: run one tick on one process or cluster member (a choice of entries inside);
* `Deliver`: deliver the head of one network channel (FIFO per send operator, sender and
  receiver);
* `Release`: release the next element of a top-level `assume_ordering` buffer (a choice of
  which), or deliver the oldest delta of an edge buffer (`interleavings`).

Actions are values (frozen, compared field by field), so the sleep sets and footprint
caches of partial-order reduction (`por.py`) can key on them. The scheduler asks for its
actions at every step, so `ActionTable` builds each one once per program and hands out
the same object every time: as cheap as the integer-tagged tuples they replace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .asynchrony import EdgeBufferOp
    from .ops_time import AssumeOrderingOp, SendOp
    from .program import Program, TickPlan

ChannelKey = tuple["SendOp", int, int]  # (send operator, sender place, receiver place)


@dataclass(frozen=True, slots=True)
class RunTick:
    """Run `tick` on place `place`."""

    tick: TickPlan
    place: int


@dataclass(frozen=True, slots=True)
class Deliver:
    """Deliver the head of `channel` at its receiver."""

    channel: ChannelKey


@dataclass(frozen=True, slots=True)
class Release:
    """Release from the top-level buffer `op` (an assume_ordering or an edge) on `place`."""

    op: AssumeOrderingOp | EdgeBufferOp
    place: int


Action = RunTick | Deliver | Release


class ActionTable:
    """Every action of one program, made once: tick runs and releases per place, deliveries
    per channel as channels appear."""

    __slots__ = ("ticks", "releases", "_deliveries")

    def __init__(self, prog: Program) -> None:
        self.ticks: list[tuple[TickPlan, tuple[RunTick, ...]]] = [
            (tp, tuple(RunTick(tp, p) for p in tp.places)) for tp in prog.ticks
        ]
        self.releases: list[tuple[AssumeOrderingOp | EdgeBufferOp, tuple[Release, ...]]] = [
            (op, tuple(Release(op, p) for p in prog.places_at(op.node.meta.loc))) for op in prog.orderings
        ]
        self._deliveries: dict[ChannelKey, Deliver] = {}

    def deliver(self, key: ChannelKey) -> Deliver:
        """The action delivering the head of channel `key`."""
        a = self._deliveries.get(key)
        if a is None:
            a = self._deliveries[key] = Deliver(key)
        return a


def table_of(prog: Program) -> ActionTable:
    """The program's `ActionTable` (built by the first execution, kept on the program)."""
    table = prog.action_table
    if table is None:
        table = prog.action_table = ActionTable(prog)
    return table
