"""Found by run_long seed 8103 (and on the code before this session's changes too): a keyed
fold marked `aligned_at(al)`, read by a `snapshot()` in another tick while the align point
has a `snapshot_aligned()` in its own. The fold starts as the empty table, in the model; but
`roles.starts_empty` did not look through `aligned_at()`, so on Spark the reading tick's
first batch was held waiting for a first version, and its other outputs came a batch late
(`o4`: "Spark did not write 2" in batch 0). `starts_empty`, `static_initial` and
`optional_initial` now see through `aligned_at()`, which only marks its input for the
alignment pass."""

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
    t2 = p.tick()
    xs = p.source("xs", int)
    ys = p.source("ys", int)
    al = p.local_align_point()
    v1 = ys.aligned_at(al)
    v2 = v1.release_aligned(al)
    v3 = v1.count()
    v4 = v3.snapshot_aligned(t1, al, ND)
    v5 = v1.map(lambda x: (x % 3, x)).into_keyed().fold_commutative(0, lambda a, x: a + x)
    v6 = v5.aligned_at(al)
    v8 = xs.batch(t2, ND)
    v11 = v6.snapshot(t2, ND)
    v2.sink("ack")
    v4.into_stream().all_ticks().sink("o1")
    v8.all_ticks().sink("o4")
    v11.entries().all_ticks().sink("o6")
    return flow.finalize()


KEYED_STATE = "executors"
STEPS = [
    {"xs": [2, 5, 9, 10], "ys": [11, 2, 11]},
    {"xs": [12], "ys": [10, 12, 10, 10]},
    {"xs": [3], "ys": [2]},
]
