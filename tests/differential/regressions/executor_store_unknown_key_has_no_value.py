"""A keyed fold kept on the executors, asked for a key no element ever reached (found by the
keyed-store differential test): the processor started the key's accumulator at the fold's
init and answered with it, so `get_many_if_present` returned (1, 30, 0) where the key is
absent (and `lookup_keyed_singleton` would have said 0 instead of None)."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet


class P:
    """The program's process."""


ND = nondet("any batching is legal")
STEPS = [{"xs": [0, 3, 0]}, {"xs": [0, 0, 0, 1]}]


def build() -> hl.Flow:
    flow = hl.FlowBuilder("unknown_key")
    p = flow.process(P)
    t1 = p.tick()
    xs = p.source("xs", int)
    al = p.local_align_point()
    table = xs.map(lambda x: (x % 3, x)).into_keyed().fold_commutative(0, lambda a, x: a + x)
    snap = table.snapshot_aligned(t1, al, ND)
    asks = xs.batch(t1, ND).map(lambda x: (x % 2, x * 10)).into_keyed()
    snap.get_many_if_present(asks).entries().all_ticks().sink("present")
    asks2 = xs.batch(t1, ND).map(lambda x: (x % 4, x)).into_keyed()
    asks2.lookup_keyed_singleton(snap).entries().all_ticks().sink("all")
    xs.release_aligned(al).sink("ack")
    return flow.finalize()
