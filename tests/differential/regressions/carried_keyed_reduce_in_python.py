"""A carried keyed reduce whose function runs in Python, read in a later batch with no new
input for it (found by the operator matrix): the stored values were typed from the missing
init (None), so every key read back as None."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet


class P:
    """The program's process."""


ND = nondet("any batching is legal")
STEPS = [{"nums": [("a", 3), ("b", 2), ("a", 1)]}, {"q": ["a", "z"]}]


def build() -> hl.Flow:
    flow = hl.FlowBuilder("kred")
    p = flow.process(P)
    kv = p.keyed_source("nums", str, int)
    q = p.source("q", str)
    al = p.local_align_point()
    t = p.tick()
    red = kv.reduce(lambda a, x: a - x)
    kv.release_aligned(al).entries().sink("ack")
    snap = red.snapshot_aligned(t, al, ND)
    snap.entries().all_ticks().sink("table")
    keyed = q.batch(t, ND).map(lambda k: (k, None)).into_keyed()
    keyed.lookup_keyed_singleton(snap).entries().all_ticks().sink("out")
    return flow.finalize()
