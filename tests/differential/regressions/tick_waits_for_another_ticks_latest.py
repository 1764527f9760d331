"""Found by run_long seed 244: t1 snapshots latest() of t2 (another query) before t2 ever
ran. The model waits; Spark ran the tick with an empty singleton. A blocked batch is now
held back (held/<batch id>) and processed with the next batch that can run."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet
from tests.differential.gen_helpers import (
    digit_sum,
    digits,
    halve_even,
    key_py,
    mix_py,
    odd_py,
    pair_py,
)


class P:
    """The program's process."""


ND = nondet("generated: any batching is legal")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    t1 = p.tick()
    t2 = p.tick()
    xs = p.source("xs", int)
    al = p.local_align_point()
    v2 = xs.count()
    v3 = v2.snapshot_aligned(t1, al, ND)
    v4 = xs.enumerate().map(lambda t: t[0] * 100 + t[1])
    v5 = v4.batch_aligned(t1, al, ND)
    v6 = v5.cross_singleton(v3).map(lambda t: t[0] * 1000 + t[1])
    v9 = v2.snapshot(t2, ND)
    v10 = v9.latest()
    v6.all_ticks().sink("aligned")
    v10.snapshot(t1, ND).into_stream().all_ticks().sink("o7")
    return flow.finalize()


STEPS = [{"xs": [4]}]
