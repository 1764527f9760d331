"""Found by the generator (seeds 0-599 of the extended `progen`, at plan time): a plain
`snapshot()` into the aligned tick of a top-level value *derived* from state the alignment
pass carries in that tick — `count.map(f)` where `count` is snapshotted aligned, or a count
of a stream tagged `aligned_at()` and shared by the point's other readers. The pass reached
such a value through a bridge (`latest()` / `all_ticks()` of the tick), so the snapshot read
the tick's own output: Spark refused the program ("the tick would read its own output")
though the model runs it and a plain snapshot of the carried node itself was accepted.
The pass now carries a copy of the derivation in the tick (`align._Rewriter.pull`), which
reads the current version, one legal choice: both backends run it and agree. A reader in
another tick keeps the bridge (`count_t2`: the same count kept twice, under two identities).
"""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet


class P:
    """The program's process."""


ND = nondet("generated: any batching is legal")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    t1, t2 = p.tick(), p.tick()
    al = p.local_align_point()
    xs = p.source("xs", int).aligned_at(al)
    xs.release_aligned(al).sink("ack")
    table = xs.map(lambda x: (x % 3, x)).into_keyed().fold_commutative(0, lambda a, x: a + x)
    table.snapshot_aligned(t1, al, ND).entries().all_ticks().sink("aligned")
    seen = xs.count()  # not read aligned: outside the point's region, over the tagged stream
    seen.snapshot(t1, ND).into_stream().all_ticks().sink("count")
    seen.snapshot(t2, ND).into_stream().all_ticks().sink("count_t2")  # another tick: through the bridge
    total = xs.fold_commutative(0, lambda a, x: a + x)
    total.snapshot_aligned(t1, al, ND).into_stream().all_ticks().sink("total")
    scaled = total.map(lambda t: t * 10).filter(lambda t: t < 500).unwrap_or(-1)
    scaled.snapshot(t1, ND).into_stream().all_ticks().sink("scaled")
    return flow.finalize()


STEPS = [{"xs": [1, 2, 3]}, {"xs": [40]}, {"xs": [5, 6]}]
