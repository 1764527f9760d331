"""A keyed Python fold on the executors (the executor region), read aligned in its tick and,
through the `latest()` bridge and a value `map()`, by another query: the region's processor
also emits each updated key's new value, which crosses as a delta (`channel_versions.py`)."""

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
    digits = puts.fold(0, lambda acc, x: acc * 10 + x)  # arrival order matters: not algebraic
    snap = digits.snapshot_aligned(a, al, ND)
    puts.batch_aligned(a, al, ND).lookup_keyed_singleton(snap).entries().all_ticks().sink("acks")
    scaled = digits.map(lambda d: (d, d % 7))
    gets = p.source("gets", str).batch(b, ND).map(lambda k: (k, 0)).into_keyed()
    gets.lookup_keyed_singleton(scaled.snapshot(b, ND)).entries().all_ticks().sink("answers")
    return flow.finalize()


STEPS = [
    {"gets": ["a"]},
    {"puts": [("a", 1), ("b", 2), ("a", 3)]},
    {"puts": [("b", 4), ("b", 6)]},
    {"gets": ["a", "b", "c"], "puts": [("a", 1)]},
]
