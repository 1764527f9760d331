"""Found by run_long seed 0: a plain snapshot (in another tick) of a count that an align
point moved into t1 read it through the alignment pass's latest() bridge, which had no
version until t1 ran: the simulator blocked the reading tick, Spark ran it with an empty
singleton. The bridge now carries the count's initial version from the start (both
backends), as the count had before alignment."""

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
    ys = p.source("ys", int)
    al = p.local_align_point()
    v1 = ys.release_aligned(al)
    v2 = ys.count()
    v3 = v2.snapshot_aligned(t1, al, ND)
    v4 = ys.map(lambda x: (x % 2, x * 10)).into_keyed().fold_commutative(0, lambda a, x: a + x)
    v5 = v4.snapshot_aligned(t1, al, ND)
    v6 = v2.snapshot(t2, ND)
    v7 = ys.count()
    v8 = v7.snapshot(t2, ND)
    v1.sink("ack")
    v5.entries().all_ticks().sink("aligned")
    v1.sink("o0")
    v2.snapshot(t1, ND).into_stream().all_ticks().sink("o1")
    v3.into_stream().all_ticks().sink("o2")
    v5.entries().all_ticks().sink("o3")
    v6.into_stream().all_ticks().sink("o4")
    v7.snapshot(t1, ND).into_stream().all_ticks().sink("o5")
    v8.into_stream().all_ticks().sink("o6")
    return flow.finalize()


STEPS = [
    {"ys": [0, 1, 6], "ws": ["mbm", "", "b"]},
    {"xs": [7, 1, 1], "ys": [7, 1, 4, 8], "ks": [("c", 1), ("c", 5)], "ws": ["m", "azm", "m", "b"]},
    {"ys": [10, 4, 7, 1], "ws": ["a"]},
]
