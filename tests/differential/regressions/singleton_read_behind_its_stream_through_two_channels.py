"""Found by run_long seed 80489 (a keyed-table-crossing program; this part of it is older):
query t3 reads a stream (`v4`) and a singleton derived from it (`v7`) through two channels
that t2's query writes one after the other. t3's batch got `v4`'s entry first and read `v7`'s
initial version, a legal choice; the replay pushed the injected `v4` on into `v7`'s reduce and
read the newer version, so `verify` called Spark's answer a divergence. Whether Spark's batch
falls between the two writes is timing; `tests/sim/test_replay_channels.py` replays that
case deterministically."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet


class P:
    """The generated program's process."""


ND = nondet("generated: any batching is legal")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    t1 = p.tick()
    t2 = p.tick()
    t3 = p.tick()
    xs = p.source("xs", int)
    v1 = xs.batch(t1, ND).map(lambda x: x + 1)
    v2 = v1.all_ticks()
    v3 = v2.batch(t2, ND).map(lambda x: x + 1)
    v4 = v3.all_ticks()
    v5 = v4.batch(t3, ND).map(lambda x: -x)
    v7 = v4.reduce(lambda a, b: a * 2 - b).unwrap_or(-1)
    v9 = v7.snapshot(t3, ND)
    v5.all_ticks().sink("o4")
    v9.into_stream().all_ticks().sink("o5")
    return flow.finalize()


KEYED_STATE = "executors"
STEPS = [{"xs": [10]}]
