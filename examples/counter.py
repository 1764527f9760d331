"""The seed's counter, made consistent with an align point (the main example).

Increments are acknowledged with `release_aligned`, and queries read the count with
`snapshot_aligned` at the same point: an ack is only released once every later aligned
snapshot of the count includes its increment, so a client that saw its ack never reads a
count without it. Compare `counter_naive.py`, which the simulator proves wrong.
"""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet

ClientId = str


class Server:
    """Tag of the single server process."""


def build() -> hl.Flow:
    """Build the aligned counter program."""
    flow = hl.FlowBuilder("counter")
    server = flow.process(Server)

    increment = server.keyed_source("increment", ClientId, type(None))
    query = server.keyed_source("query", ClientId, type(None))

    align = server.local_align_point()
    count = increment.values().fold_commutative(0, lambda c, _: c + 1)
    increment.release_aligned(align).entries().sink("increment_ack")

    tick = server.tick()
    (
        query.batch(tick, nondet("queries may be answered in any grouping"))
        .entries()
        .map(lambda kv: kv[0])
        .cross_singleton(
            count.snapshot_aligned(tick, align, nondet("any version consistent with the acks already released"))
        )
        .all_ticks()
        .sink("query_response")
    )
    return flow.finalize()


if __name__ == "__main__":
    from hydrolite.passes.align import align_flow

    print(align_flow(build()).dump())
