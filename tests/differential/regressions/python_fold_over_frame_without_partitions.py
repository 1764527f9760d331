"""Found by run_long seed 349 (not shrunk): a Python fold over a batch frame with no
partitions got no result row from mapInArrow and failed with IndexError."""

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
    ks = p.keyed_source("ks", str, int)
    al = p.local_align_point()
    v1 = ys.release_aligned(al)
    v2 = ys.count()
    v3 = v2.snapshot_aligned(t1, al, ND)
    v4 = ys.unique()
    v5 = v4.batch_aligned(t1, al, ND)
    v6 = v5.cross_singleton(v3).map(lambda t: t[0] * 1000 + t[1])
    hc7, pend7 = t1.stream_cycle(int)
    v8 = v6.chain(pend7)
    hc7.complete_next_tick(v8.map(lambda x: x + 5).filter(lambda x: x < 20))
    v9 = v6.cross_singleton(v3).map(lambda t: t[0] * 7 + t[1])
    v10 = xs.unique()
    h11, prev11 = t1.singleton_cycle(0)
    v12 = prev11.zip(v5.fold_commutative(0, lambda a, x: a + x)).map(lambda t: t[0] + t[1])
    h11.complete_next_tick(v12)
    v1.sink("ack")
    v6.all_ticks().sink("aligned")
    v2.snapshot(t1, ND).into_stream().all_ticks().sink("o0")
    v3.into_stream().all_ticks().sink("o1")
    v6.all_ticks().sink("o2")
    v8.all_ticks().sink("o3")
    v9.all_ticks().sink("o4")
    v12.into_stream().all_ticks().sink("o5")
    return flow.finalize()


STEPS = [
    {"xs": [1, 4], "ys": [0, 7, 2], "ks": [("c", 2), ("a", 8), ("b", 8)], "ws": ["", "a"]},
    {"xs": [], "ys": [4, 8, 2], "ks": [("c", 5), ("a", 0), ("c", 6)], "ws": ["a"]},
    {"xs": [], "ys": [12, 1, 9], "ks": [("b", 6), ("b", 1), ("b", 1)], "ws": ["ab", "m", "bm", "ma"]},
    {"xs": [3, 8, 9], "ys": [], "ks": [("a", 7), ("c", 0), ("b", 7), ("a", 4)], "ws": ["z", "", "mzz"]},
]
