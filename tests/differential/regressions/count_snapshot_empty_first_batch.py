"""A top-level count snapshotted by a tick whose first micro-batch is empty (found by the
differential test: the replay compared Spark's skipped empty batch 0)."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet


class P:
    """The program's process."""


ND = nondet("generated: any batching is legal")
STEPS = [{"ks": [("b", 1), ("c", 8)]}, {"xs": [11, 10, 6, 9], "ks": [("b", 9)]}]


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    t1 = p.tick()
    xs = p.source("xs", int)
    p.keyed_source("ks", str, int)
    xs.count().snapshot(t1, ND).into_stream().all_ticks().sink("o0")
    return flow.finalize()
