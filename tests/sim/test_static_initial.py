"""`ir.roles.static_initial` against the simulator: the version a top-level singleton has
before any input arrives.

On Spark, a tick that snapshots a singleton computed by another query reads this static
version until the other query writes one; without it the tick holds its batch, and when the
other query waits for this tick (a cycle of queries) nothing ever runs while the model
answers (run_long seed 30017). So wherever `static_initial` says it knows the version, it
must be the one the simulator's tick reads first; and where the simulator has one for these
shapes, `static_initial` must know it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import hydrolite as hl
from hydrolite import nondet
from hydrolite.ir.roles import starts_empty, static_initial
from hydrolite.sim import Simulator

from .helpers import Server

ND = nondet("test: any batching and any version")

Build = Callable[[Any], Any]  # the source xs -> a top-level singleton

CASES: dict[str, tuple[Build, object]] = {
    "count": (lambda xs: xs.count(), 0),
    "fold": (lambda xs: xs.fold(5, lambda a, x: a + x), 5),
    "count-map": (lambda xs: xs.count().map(lambda n: n * 10 + 1), 1),
    "reduce-unwrap_or": (lambda xs: xs.reduce_commutative(max).unwrap_or(-1), -1),
    "first-unwrap_or": (lambda xs: xs.first().unwrap_or(-2), -2),
    "last-map-unwrap_or": (lambda xs: xs.last().map(lambda x: x + 1).unwrap_or(-3), -3),
    "filter-unwrap_or-kept": (lambda xs: xs.count().filter(lambda n: n == 0).unwrap_or(9), 0),
    "filter-unwrap_or-dropped": (lambda xs: xs.count().filter(lambda n: n > 0).unwrap_or(9), 9),
    "zip": (lambda xs: xs.count().zip(xs.fold(1, lambda a, x: a * x)), (0, 1)),
    "zip-optional-unwrap_or": (lambda xs: xs.count().zip(xs.last()).map(lambda p: p[0]).unwrap_or(-4), -4),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_static_initial_is_the_simulators_first_version(name: str) -> None:
    build, want = CASES[name]
    flow = hl.FlowBuilder(f"initial-{name}")
    p = flow.process(Server)
    t = p.tick()
    value = build(p.source("xs", int))
    assert static_initial(value.node) == (True, want)
    p.source("q", str).batch(t, ND).cross_singleton(value.snapshot(t, ND)).all_ticks().sink("o")

    def scenario(s: Simulator) -> None:
        s.sender("q").send("a")  # no xs yet: the only version the tick can read is the initial one
        s.receiver("o").assert_yields([("a", want)])

    assert Simulator(flow.finalize()).exhaustive(scenario) >= 1


def test_unknown_without_a_version_before_input() -> None:
    """The `latest()` of a tick's value has no version before the tick runs, and an optional
    is not a singleton: static_initial must not invent a version."""
    flow = hl.FlowBuilder("no-initial")
    p = flow.process(Server)
    t = p.tick()
    xs = p.source("xs", int)
    assert static_initial(xs.batch(t, ND).count().latest().node) == (False, None)  # no run yet
    assert static_initial(xs.reduce_commutative(max).node) == (False, None)  # optional: not a singleton
    pairs = p.source("kv", tuple[str, int])
    assert not starts_empty(pairs.batch(t, ND).into_keyed().count().latest().node)  # no run yet
    assert not starts_empty(pairs.batch(t, ND).into_keyed().count().node)  # a tick body's table


KEYED: dict[str, Build] = {
    "count": lambda kv: kv.count(),
    "fold": lambda kv: kv.fold(0, lambda a, x: a + x),
    "reduce": lambda kv: kv.reduce(lambda a, x: a + x),
    "first": lambda kv: kv.first(),
    "last-map": lambda kv: kv.last().map(lambda x: x * 2),
    "count-filter": lambda kv: kv.count().filter(lambda n: n > 1),
}


@pytest.mark.parametrize("name", sorted(KEYED))
def test_keyed_aggregations_start_as_the_empty_table(name: str) -> None:
    """`ir.roles.starts_empty` (Spark reads the empty table before the producing query
    wrote a version) against the simulator: the tick reads a version before any input, with
    no entries; were there none, the tick would wait and yield nothing."""
    flow = hl.FlowBuilder(f"keyed-initial-{name}")
    p = flow.process(Server)
    t = p.tick()
    table = KEYED[name](p.source("kv", tuple[str, int]).into_keyed())
    assert starts_empty(table.node)
    entries = table.snapshot(t, ND).entries().count()
    p.source("q", str).batch(t, ND).cross_singleton(entries).all_ticks().sink("o")

    def scenario(s: Simulator) -> None:
        s.sender("q").send("a")
        s.receiver("o").assert_yields([("a", 0)])

    assert Simulator(flow.finalize()).exhaustive(scenario) >= 1


@pytest.mark.parametrize("kind", ["keyed-count", "keyed-fold-map", "optional-reduce"])
def test_the_bridge_on_a_carried_aggregate_starts_empty(kind: str) -> None:
    """A top-level aggregate snapshotted aligned is carried in its tick (its input there is the
    tick's batch, bounded); another tick reads it through the `latest()` bridge, which has the
    empty version from the start in the simulator. `starts_empty` / `optional_initial` must say
    so (they said "no version yet": Spark held the other tick's first batches and answered them
    later, a divergence the differential test reports)."""
    from hydrolite.ir import nodes as nd
    from hydrolite.ir.roles import optional_initial
    from hydrolite.passes.align import align_flow

    flow = hl.FlowBuilder(f"bridge-initial-{kind}")
    p = flow.process(Server)
    a, b = p.tick(), p.tick()
    al = p.local_align_point()
    kv = p.keyed_source("kv", str, int)  # read aligned: the carried aggregate folds the tick's batch of it
    if kind == "optional-reduce":
        value: Any = kv.values().reduce_commutative(max)
        value.snapshot_aligned(a, al, ND).into_stream().all_ticks().sink("aligned")
        kv.batch_aligned(a, al, ND).entries().all_ticks().sink("seen")
        read = value.snapshot(b, ND).into_stream().count()
    else:
        value = kv.count() if kind == "keyed-count" else kv.fold(0, lambda s, x: s + x).map(lambda s: -s)
        value.snapshot_aligned(a, al, ND).entries().all_ticks().sink("aligned")
        kv.batch_aligned(a, al, ND).entries().all_ticks().sink("seen")
        read = value.snapshot(b, ND).entries().count()
    p.source("q", str).batch(b, ND).cross_singleton(read).all_ticks().sink("o")
    finalized = flow.finalize()
    bridges = [x for x in align_flow(finalized).nodes() if isinstance(x, nd.Latest)]
    assert bridges, "the reader in the other tick goes through the bridge"
    for x in bridges:
        if kind == "optional-reduce":
            assert optional_initial(x) == (True, False, None)
        else:
            assert starts_empty(x)

    def scenario(s: Simulator) -> None:
        s.sender("q").send("a")  # nothing in kv yet: the bridge's first version is empty
        s.receiver("o").assert_yields([("a", 0)])

    assert Simulator(finalized).exhaustive(scenario) >= 1
