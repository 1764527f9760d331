"""A fold and a count straight on a source, read at one align point (issue 9's report).

Spark kept no state for carried folds: the second micro-batch answered (0, 0)."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet


class P:
    """The program's process."""


ND = nondet("any batching is legal")
STEPS = [{"nums": [1, 2, 3]}, {"q": ["a"]}, {"nums": [4]}, {"q": ["b"], "nums": [5]}]


def build() -> hl.Flow:
    flow = hl.FlowBuilder("sumcount")
    p = flow.process(P)
    nums = p.source("nums", int)
    q = p.source("q", str)
    align = p.local_align_point()
    total = nums.fold_commutative(0, lambda a, x: a + x)
    count = nums.count()
    nums.release_aligned(align).sink("ack")
    tick = p.tick()
    both = total.snapshot_aligned(tick, align, ND).zip(count.snapshot_aligned(tick, align, ND))
    q.batch(tick, ND).cross_singleton(both).all_ticks().sink("out")
    return flow.finalize()
