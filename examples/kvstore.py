"""A key-value store: puts are acked with release_aligned, gets read snapshot_aligned state.

A client that received the ack of its put and then sends a get for that key always sees
the put (or a later one): the ack is released only once every later aligned snapshot of
the store reflects it.
"""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet

ClientId = str
Key = str


class Store:
    """Tag of the store process."""


def build() -> hl.Flow:
    """Build the key-value store program."""
    flow = hl.FlowBuilder("kvstore")
    store = flow.process(Store)
    puts = store.source("put", tuple[ClientId, Key, int])  # (client, key, value)
    gets = store.source("get", tuple[ClientId, Key])  # (client, key)

    align = store.local_align_point()
    table = puts.map(lambda p: (p[1], p[2])).into_keyed().reduce(lambda _old, new: new)
    puts.release_aligned(align).map(lambda p: (p[0], p[1])).sink("put_ack")

    tick = store.tick()
    requests = gets.batch(tick, nondet("gets may be served in any grouping")).map(lambda g: (g[1], g[0])).into_keyed()
    snapshot = table.snapshot_aligned(tick, align, nondet("any version consistent with the acks already released"))
    (
        requests.lookup_keyed_singleton(snapshot)
        .entries()
        .map(lambda e: (e[1][0], e[0], e[1][1]))  # (client, key, value or None)
        .all_ticks()
        .sink("get_response")
    )
    return flow.finalize()


if __name__ == "__main__":
    print(build().dump())
