"""A keyed aggregate on the executors read by another query (`channel_versions.py`): the
producer's batches send only the keys they updated, the reader applies them in order."""

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
    {"gets": ["a", "b", "c"], "puts": [("c", 5)]},
    {"puts": [("b", 4)]},
    {"gets": ["a", "b", "c"]},
    {"puts": [("a", 1)], "gets": ["a"]},
]
