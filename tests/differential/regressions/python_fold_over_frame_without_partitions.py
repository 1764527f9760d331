"""Found by run_long seed 349, reduced by hand: a Python fold over a batch frame with no
partitions (a deferred stream's first, empty tick is a frame of no rows, which Spark plans
with no partitions) got no result row from mapInArrow and failed with IndexError."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet


class P:
    """The program's process."""


ND = nondet("generated: any batching is legal")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    t1 = p.tick()
    ys = p.source("ys", int)
    al = p.local_align_point()
    v1 = ys.release_aligned(al)
    v5 = ys.batch_aligned(t1, al, ND)
    hc, pend = t1.stream_cycle(int)
    hc.complete_next_tick(v5.map(lambda x: x + 1).filter(lambda x: x < 10))
    total = pend.fold_commutative(0, lambda a, x: a + x * x)  # not algebraic: a fold in Python
    v1.sink("ack")
    total.into_stream().all_ticks().sink("o5")
    return flow.finalize()


STEPS = [{"ys": [0, 7, 2]}, {"ys": [4, 8, 2]}, {"ys": []}]
