"""Found by run_long seed 18036 (keyed state on the executors): a count keyed by `key_objects`
(keys declared `object`, kept pickled in their own forms) and read whole wrote key `0` where
the simulator's table holds `0.0`, the form of the first element counted. A lookup of the same
batch asked for the same key as `0` (`key_py`), its request row reached the same processor
group first, and the group took its key from whichever row came first, request or element.
A fold's key is now the form of the first element it folds (`keyed_processor.Processor`)."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet
from tests.differential.gen_helpers import key_objects, key_py


class P:
    """The program's process."""


ND = nondet("generated: any batching is legal")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    t1 = p.tick()
    xs = p.source("xs", int)
    al = p.local_align_point()
    v1 = xs.aligned_at(al)
    counts = v1.map(key_objects).into_keyed().count()
    snap = counts.snapshot_aligned(t1, al, ND)
    asks = xs.batch(t1, ND).map(key_py).into_keyed()
    asks.lookup_keyed_singleton(snap).entries().all_ticks().sink("lookups")
    counts.snapshot(t1, ND).entries().all_ticks().sink("table")
    return flow.finalize()


STEPS = [{"xs": [10, 12, 12, 8]}, {"xs": [12, 4, 0, 12]}, {"xs": [12, 1]}]
