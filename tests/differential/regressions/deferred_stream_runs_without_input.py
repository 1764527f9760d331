"""Deferred streams alone make the next run of a tick observable (found by the operator
matrix): Spark ran a micro-batch only for new input, so defer_tick()/stream_cycle()
outputs waited for the next input. The stage's heartbeat feed now asks for that run.

This replay comparison cannot see that bug itself: the simulator replays the batches Spark
ran, so a run Spark never made is missing on both sides (checked: with the heartbeat
removed this still passes). What catches it is the operator matrix's
`spark-defer-tick-stream-cycle-idle` case, which compares with the simulator's own run (it
fails with the heartbeat removed). Kept for the deferred streams' replay."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet


class P:
    """The program's process."""


ND = nondet("any batching is legal")
STEPS = [{"xs": [1, 2]}, {"xs": []}]


def build() -> hl.Flow:
    flow = hl.FlowBuilder("deferred")
    p = flow.process(P)
    t = p.tick()
    b = p.source("xs", int).batch(t, ND)
    b.defer_tick().all_ticks().sink("prev")
    handle, pending = t.stream_cycle(int)
    both = b.chain(pending)
    handle.complete_next_tick(both.map(lambda x: x + 5).filter(lambda x: x < 12))
    both.all_ticks().sink("cycled")
    return flow.finalize()
