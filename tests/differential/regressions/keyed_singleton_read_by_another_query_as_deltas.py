"""Keyed aggregates on the executors read by another query (`channel_versions.py`): a count
the alignment pass carries in `a` (read by `b` through its `latest()` bridge) and a sum of
`all_ticks()` of `a`'s batch (through a value `map()`), both Spark's streaming aggregation. The
producer's batches send only the keys they updated; the reader applies them in order. Before
the first put, `b` reads the bridge's empty table: Spark held that batch until a version came
(`ir.roles.starts_empty` did not know a carried count starts empty), a divergence."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet


class P:
    """The program's process."""


ND = nondet("test: any version of the table answers a get")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    a, b = p.tick(), p.tick()
    al = p.local_align_point()
    puts = p.keyed_source("puts", str, int)
    counts = puts.count()  # native, read aligned in `a` and, through latest(), by `b`
    touched = puts.batch_aligned(a, al, ND).keys()
    snap = counts.snapshot_aligned(a, al, ND)
    touched.map(lambda k: (k, None)).into_keyed().lookup_keyed_singleton(snap).entries().all_ticks().sink("acks")
    sums = puts.batch(a, ND).all_ticks().fold_commutative(0, lambda s, x: s + x)  # in a's query, read by b
    scaled = sums.map(lambda s: s * 10)
    gets = p.source("gets", str).batch(b, ND).map(lambda k: (k, 0)).into_keyed()
    gets.lookup_keyed_singleton(counts.snapshot(b, ND)).entries().all_ticks().sink("counts")
    gets.lookup_keyed_singleton(scaled.snapshot(b, ND)).entries().all_ticks().sink("sums")
    return flow.finalize()


STEPS = [
    {"gets": ["a"]},
    {"puts": [("a", 1), ("b", 2), ("a", 3)]},
    {"puts": [("b", 4)]},
    {"gets": ["a", "b", "c"], "puts": [("c", 5)]},
]
