"""The seed's counter, written naively: it has a stale-read bug the simulator finds.

Increments are acknowledged by echoing them back, and the count is a fold over the same
increments. Queries are answered in their own tick from a snapshot of the count. Nothing
ties the snapshot to the acks, so a client can receive its ack and then read a count that
does not include its increment yet. `counter.py` fixes this with an align point.
"""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet

ClientId = str


class Server:
    """Tag of the single server process."""


def build() -> hl.Flow:
    """Build the naive counter program."""
    flow = hl.FlowBuilder("counter_naive")
    server = flow.process(Server)

    increment = server.keyed_source("increment", ClientId, type(None))
    query = server.keyed_source("query", ClientId, type(None))

    count = increment.values().fold_commutative(0, lambda c, _: c + 1)
    increment.entries().sink("increment_ack")

    tick = server.tick()
    (
        query.batch(tick, nondet("queries may be answered in any grouping"))
        .entries()
        .map(lambda kv: kv[0])
        .cross_singleton(count.snapshot(tick, nondet("any recent version of the count will do")))
        .all_ticks()
        .sink("query_response")
    )
    return flow.finalize()


if __name__ == "__main__":
    print(build().dump())
