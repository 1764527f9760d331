"""A key `("k2", "k2")` whose two strings are one object, and the same key made of two
objects: pickle's memo wrote the first as a string and a reference to it, the second as two
strings, so the executors (and the driver's by-value index) grouped one Python key as two,
each with a part of the count. Keys are now pickled without the memo (`grouping.plain_bytes`);
`key_objects` draws such keys for key 2."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet
from tests.differential.gen_helpers import key_objects


class P:
    """The program's process."""


ND = nondet("generated: any batching is legal")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    t1 = p.tick()
    xs = p.source("xs", int)
    counts = xs.map(key_objects).into_keyed().count()
    counts.snapshot(t1, ND).entries().all_ticks().sink("table")
    return flow.finalize()


STEPS = [{"xs": [2, 5, 3]}, {"xs": [8, 11, 14]}, {"xs": [17, 2]}]
