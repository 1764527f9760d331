"""A carried keyed `fold_commutative(0, lambda s, x: s + x / 2)` (the sum Spark computes, merged
with the stored value in Python) read whole and looked up on the driver path: its table was
typed `int` by the init while its values were `0.5`, `2.0`, and reading it failed with
"expected int, got float 0.5" where the simulator answers. The table's type is now a guess
when the parts' type is not the init's (`ops_state._keyed_algebra`): readers keep each value
as it is."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet


class P:
    """The program's process."""


ND = nondet("generated: any batching is legal")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    xs = p.source("xs", int)
    t1 = p.tick()
    table = xs.map(lambda x: (x % 2, x)).into_keyed().fold_commutative(0, lambda s, x: s + x / 2)
    table.snapshot(t1, ND).entries().all_ticks().sink("one")
    xs.batch(t1, ND).map(lambda x: (x % 2, 0)).into_keyed().lookup_keyed_singleton(
        table.snapshot(t1, ND)
    ).entries().all_ticks().sink("two")
    return flow.finalize()


KEYED_STATE = "driver"  # (on the executors such a fold is refused, clearly: acc_type=)
STEPS = [{"xs": [1, 2]}, {"xs": [4, 5, 6]}, {"xs": [8]}]
