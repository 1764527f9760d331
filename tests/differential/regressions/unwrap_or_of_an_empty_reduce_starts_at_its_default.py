"""Found by run_long seed 30017 (reduced by hand): a tick snapshots `unwrap_or(-1)` of a
top-level `reduce` over a second tick that reads the first one's output, so the reduce is
computed by another query that waits for this tick. The model reads the reduce's first version — empty, so
`-1` — and the tick runs; on Spark the tick held its batch until the other query produced a
version, which it never did (it was waiting for this tick): no answer at all. `unwrap_or(d)`
of an optional that starts empty (a reduce, first or last of an unbounded stream) now has
the static initial version `d` (`ir.roles.static_initial`), as a count's 0 and a fold's
init already had; a zip of two versions known statically has their pair (the `pair` sink).
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
    seen = p.source("xs", int).batch(t1, ND).map(lambda x: x + 1).all_ticks()
    doubled = seen.batch(t2, ND).map(lambda x: x * 2).all_ticks()
    best = doubled.reduce_commutative(max).unwrap_or(-1)
    best.snapshot(t1, ND).into_stream().all_ticks().sink("o")
    pair = doubled.count().zip(doubled.last().unwrap_or(-1))  # a zip of two such versions: (0, -1)
    pair.snapshot(t1, ND).into_stream().all_ticks().sink("pair")
    return flow.finalize()


STEPS = [{"xs": [11]}, {"xs": [3]}]
