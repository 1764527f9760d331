"""Found by run_long (keyed stores, seed 32): Spark's native count of `xs.unique()` and the
executor region's `transformWithState` (the store, and the requests that pass through that
`unique()`: `region.Chain.kept`) in one query. A sink collected the cached batch through a
`coalesce()`, so one task computed a partition of the aggregation and then one of the
`transformWithState`; Spark 4 keeps the aggregation's read store per thread until the task
ends and handed it to the other operator: "Can only upgrade readStore to writeStore with the
same stateStoreId", every run. Such a batch is now computed by a job of its own, one task per
partition, before anything reads it (`run_support.cache_batch`).
"""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet
from tests.differential.gen_helpers import digit_sum, digits, halve_even, key_py, mix_py, odd_py, pair_py


class P:
    """The generated program's process."""


ND = nondet("generated: any batching is legal")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    t1 = p.tick()
    xs = p.source("xs", int)
    al = p.local_align_point()
    v1 = xs.map(lambda x: (x % 3, x)).into_keyed().unique().last()
    v2 = v1.snapshot_aligned(t1, al, ND)
    v3 = (
        xs.unique()
        .batch(t1, ND)
        .filter(lambda x: x != 7)
        .map(lambda x: (x % 2, x * 10))
        .into_keyed()
        .lookup_keyed_singleton(v2)
        .entries()
        .map(lambda t: (t[0], t[1][0], t[1][1]))
    )
    xs.release_aligned(al).sink("ack")
    v3.all_ticks().sink("lookups")
    v3.all_ticks().sink("o0")
    return flow.finalize()


KEYED_STATE = "executors"
STEPS = [
    {"xs": [1, 5, 1], "ys": [], "ks": [("a", 2), ("b", 0), ("b", 0), ("a", 8)], "ws": ["b", "mzb"]},
    {"xs": [11, 4, 9, 9], "ys": [1, 12, 0, 9], "ks": [("a", 4), ("b", 1)], "ws": ["mza"]},
]
