"""A sharded key-value store: a front-end process routes each put and get to the shard
(a member of a cluster) that owns its key; every shard keeps its part of the table and
answers its gets; replies travel back to the front end.

Each shard is `examples/kvstore.py` on its own keys: puts are acked with
`release_aligned`, gets read an aligned snapshot of the shard's table, so a client that
saw the ack of its put and then asks for that key sees the put (or a later one). Puts and
gets are keyed by their key and sent with `demux_by_key`, which picks the owner by a stable
hash of the key modulo the number of shards: the program is the same for any number of
members (`--cluster-members Shard=N` in `hydrolite run`, `cluster_sizes={"Shard": N}` in
the simulator; 2 by default).
"""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet

ClientId = str
Key = str


class Frontend:
    """Tag of the process that receives the clients' requests."""


class Shard:
    """Tag of the cluster of shards."""


def build() -> hl.Flow:
    """Build the sharded key-value store program."""
    flow = hl.FlowBuilder("sharded_kvstore")
    front = flow.process(Frontend)
    shards = flow.cluster(Shard)
    puts = front.source("put", tuple[ClientId, Key, int])  # (client, key, value)
    gets = front.source("get", tuple[ClientId, Key])  # (client, key)

    # key -> (client, value), at the shard that owns the key
    at_shard = puts.map(lambda p: (p[1], (p[0], p[2]))).into_keyed().demux_by_key(shards)
    align = shards.local_align_point()
    table = at_shard.map(lambda cv: cv[1]).reduce(lambda _old, new: new)
    acks = at_shard.release_aligned(align).entries().map(lambda e: (e[1][0], e[0]))  # (client, key)
    acks.send(front).values().sink("put_ack")

    tick = shards.tick()
    asked = gets.map(lambda g: (g[1], g[0])).into_keyed().demux_by_key(shards)  # key -> client
    requests = asked.batch(tick, nondet("gets may be served in any grouping"))
    snapshot = table.snapshot_aligned(tick, align, nondet("any version consistent with the acks already released"))
    answers = (
        requests.lookup_keyed_singleton(snapshot)
        .entries()
        .map(lambda e: (e[1][0], e[0], e[1][1]))  # (client, key, value or None)
        .all_ticks()
    )
    answers.send(front).values().sink("get_response")
    return flow.finalize()


def demo_inputs() -> dict[str, list[list[tuple[str, ...] | tuple[str, str, int]]]]:
    """Batches for `hydrolite run examples/sharded_kvstore.py` without --input."""
    return {
        "put": [[("c1", "apple", 1), ("c1", "pear", 2)], [("c2", "plum", 3), ("c1", "apple", 4)]],
        "get": [[("c1", "apple")], [("c2", "pear"), ("c2", "fig")]],
    }


if __name__ == "__main__":
    print(build().dump())
