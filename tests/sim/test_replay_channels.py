"""Replaying one query of a run (`sim/recorded.py`) whose inputs are channels from another.

A reader query received a stream `v` and a singleton derived from it (`v.reduce(...)`) through
two channels. The producer writes its channels one after the other, so a reader's batch may
get the stream's entry and not yet the singleton's: it reads the singleton's older version,
a legal choice (a plain snapshot may read any version). The replay injected the stream, and
pushed it on into the reduce too, so the replayed singleton was the newer version: `verify`
reported Spark's legal answer as a divergence (found by the generator, seed 80489, about once
a run). Now the nodes the recording received from elsewhere are set by their injections only.
"""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.stages import plan_flow
from hydrolite.sim.recorded import ReplayBatch, replay_ticks

ND = nondet("test: any batching and any version is legal")


class P:
    """Tag of the process."""


def test_a_singleton_read_through_a_channel_keeps_the_version_received() -> None:
    flow = hl.FlowBuilder("replay-fed")
    p = flow.process(P)
    a, b = p.tick(), p.tick()
    xs = p.source("xs", int).batch(a, ND).map(lambda x: x + 1).all_ticks()
    best = xs.reduce(lambda s, x: s * 2 - x).unwrap_or(-1)
    xs.batch(b, ND).map(lambda x: -x).all_ticks().sink("negated")
    best.snapshot(b, ND).into_stream().all_ticks().sink("best")
    plan = plan_flow(flow.finalize())
    reader = next(st for st in plan.stages if st.channels_in)
    stream = next(ch.node for ch in reader.channels_in if ch.node.meta.kind.streamlike)
    single = next(ch.node for ch in reader.channels_in if not ch.node.meta.kind.streamlike)
    batches = [
        ReplayBatch(0, {}, {id(stream): (stream, [12])}),  # the stream's entry came first
        ReplayBatch(1, {}, {id(single): (single, [12])}),  # then the singleton's
        ReplayBatch(2, {}, {id(stream): (stream, [5]), id(single): (single, [19])}),
    ]
    fed = [ch.node for ch in reader.channels_in]
    got = [r.outputs for r in replay_ticks(plan.flow, reader.tick, batches, fed=fed)]
    assert got == [
        {"negated": [-12], "best": [-1]},  # the version received so far: the initial one
        {"negated": [], "best": [12]},
        {"negated": [-5], "best": [19]},
    ]
