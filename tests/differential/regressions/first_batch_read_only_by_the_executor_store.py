"""Found by run_long seed 9203 (reduced by hand): the only input of the first batch (`ys`) is
read only by the executor store's lookups, so its rows leave the tick's DataFrame (the region
answers them; `StageRunner.in_tick`), and the lookup answered nothing (the key has no value).
The runtime skipped a first batch whose tick rows were empty — Spark runs batch 0 even
without data — so the tick never ran and the top-level count's snapshot (its static 0) was
never written; the model runs the tick for `ys`'s element and writes `0`. A first batch whose
tick rows are empty now runs the tick when an input the tick leaves out had elements
(`run_support.left_out_elements`, reading them back as `verify` does).
"""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet
from tests.differential.gen_helpers import key_py


class P:
    """The program's process."""


ND = nondet("generated: any batching is legal")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    t1 = p.tick()
    xs = p.source("xs", int)
    ys = p.source("ys", int)
    al = p.local_align_point()
    count = xs.count()
    table = xs.map(key_py).into_keyed().reduce(lambda a, b: b).snapshot_aligned(t1, al, ND)
    table.get_many_if_present(ys.batch(t1, ND).map(key_py).into_keyed()).entries().all_ticks().sink("lookups")
    count.snapshot(t1, ND).into_stream().all_ticks().sink("o1")
    return flow.finalize()


STEPS = [{"ys": [1]}]
