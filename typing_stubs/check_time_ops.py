"""Typing contract: every time operator on every live class (docs/design.md §1, §6).

`batch`/`snapshot` (and their `_aligned` forms), `all_ticks`/`latest`, `defer_tick`,
`aligned_at` and `release_aligned` have one body (hydrolite/live/_time.py) and one typed
method per class. This file checks each class's method for what check_ticks.py and
check_locations.py do not already cover: element, key and ordering pass through
unchanged, a deferred singleton becomes optional, the alignment markers keep the type, and
each class rejects the same misuses.
"""

from __future__ import annotations

from _hl_contract import REASON, Server, Workers, world
from typing_extensions import assert_type

from hydrolite import (
    Bounded,
    Cluster,
    KeyedSingleton,
    KeyedStream,
    NoOrder,
    OptionalSingleton,
    Process,
    Singleton,
    Stream,
    Tick,
    TotalOrder,
    Unbounded,
    nondet,
)

SP = Process[Server]
TP = Tick[Process[Server]]


# ------------------------------------------------------------------ accepted
def accept_ordering_and_boundedness_pass_through_ticks() -> None:
    w = world()
    bag = w.server.source("x", int).weaken_ordering()
    batch = bag.batch(w.tick, nondet(REASON))
    assert_type(batch, Stream[int, TP, Bounded, NoOrder])
    assert_type(batch.defer_tick(), Stream[int, TP, Bounded, NoOrder])
    assert_type(batch.all_ticks(), Stream[int, SP, Unbounded, NoOrder])
    finite = w.server.source_iter([1, 2]).batch(w.tick, nondet(REASON))
    assert_type(finite, Stream[int, TP, Bounded, TotalOrder])
    keyed = w.server.keyed_source("k", str, float).weaken_ordering().batch(w.tick, nondet(REASON))
    assert_type(keyed, KeyedStream[str, float, TP, Bounded, NoOrder])
    assert_type(keyed.all_ticks(), KeyedStream[str, float, SP, Unbounded, NoOrder])
    w.flow.finalize()


def accept_deferred_and_cluster_singletons() -> None:
    w = world()
    best = w.server.source("x", int).reduce(max).snapshot(w.tick, nondet(REASON))
    assert_type(best.defer_tick(), OptionalSingleton[int, TP, Bounded])
    tick = w.workers.tick()
    count = w.workers.source("y", str).count().snapshot(tick, nondet(REASON))
    assert_type(count, Singleton[int, Tick[Cluster[Workers]], Bounded])
    assert_type(count.latest(), Singleton[int, Cluster[Workers], Unbounded])
    table = w.workers.keyed_source("k", str, int).count().snapshot(tick, nondet(REASON))
    assert_type(table.latest(), KeyedSingleton[str, int, Cluster[Workers], Unbounded])
    w.flow.finalize()


def accept_alignment_markers_keep_the_type() -> None:
    w = world()
    align = w.server.local_align_point()
    xs = w.server.source("x", int)
    ks = w.server.keyed_source("k", str, int)
    assert_type(xs.release_aligned(align), Stream[int, SP, Unbounded, TotalOrder])
    assert_type(ks.aligned_at(align), KeyedStream[str, int, SP, Unbounded, TotalOrder])
    assert_type(xs.first().aligned_at(align), OptionalSingleton[int, SP, Unbounded])
    assert_type(ks.count().aligned_at(align), KeyedSingleton[str, int, SP, Unbounded])
    batch = w.server.source_iter([1]).batch(w.tick, nondet(REASON))
    assert_type(batch.all_ticks().release_aligned(align), Stream[int, SP, Unbounded, TotalOrder])
    w.flow.finalize()


# ------------------------------------------------------------------ rejected (also at run time)
def reject_aligned_at_inside_a_tick() -> None:
    w = world()
    batch = w.server.source("x", int).batch(w.tick, nondet(REASON))
    batch.aligned_at(w.server.local_align_point())  # type: ignore[hydrolite-tick]


def reject_keyed_aligned_at_inside_a_tick() -> None:
    w = world()
    batch = w.server.keyed_source("k", str, int).batch(w.tick, nondet(REASON))
    batch.aligned_at(w.server.local_align_point())  # type: ignore[hydrolite-tick]


def reject_singleton_aligned_at_inside_a_tick() -> None:
    w = world()
    snap = w.server.source("x", int).count().snapshot(w.tick, nondet(REASON))
    snap.aligned_at(w.server.local_align_point())  # type: ignore[hydrolite-tick]


def reject_optional_aligned_at_inside_a_tick() -> None:
    w = world()
    snap = w.server.source("x", int).first().snapshot(w.tick, nondet(REASON))
    snap.aligned_at(w.server.local_align_point())  # type: ignore[hydrolite-tick]


def reject_keyed_singleton_aligned_at_inside_a_tick() -> None:
    w = world()
    snap = w.server.keyed_source("k", str, int).count().snapshot(w.tick, nondet(REASON))
    snap.aligned_at(w.server.local_align_point())  # type: ignore[hydrolite-tick]


def reject_release_aligned_inside_a_tick() -> None:
    w = world()
    batch = w.server.source("x", int).batch(w.tick, nondet(REASON))
    batch.release_aligned(w.server.local_align_point())  # type: ignore[hydrolite-tick]


def reject_keyed_release_aligned_inside_a_tick() -> None:
    w = world()
    batch = w.server.keyed_source("k", str, int).batch(w.tick, nondet(REASON))
    batch.release_aligned(w.server.local_align_point())  # type: ignore[hydrolite-tick]


def reject_optional_defer_tick_at_top_level() -> None:
    world().server.source("x", int).first().defer_tick()  # type: ignore[hydrolite-tick]


def reject_keyed_singleton_defer_tick_at_top_level() -> None:
    world().server.keyed_source("k", str, int).count().defer_tick()  # type: ignore[hydrolite-tick]


def reject_optional_snapshot_inside_a_tick() -> None:
    w = world()
    snap = w.server.source("x", int).first().snapshot(w.tick, nondet(REASON))
    snap.snapshot(w.tick, nondet(REASON))  # type: ignore[hydrolite-tick]


def reject_keyed_singleton_snapshot_inside_a_tick() -> None:
    w = world()
    snap = w.server.keyed_source("k", str, int).count().snapshot(w.tick, nondet(REASON))
    snap.snapshot(w.tick, nondet(REASON))  # type: ignore[hydrolite-tick]


def reject_keyed_batch_aligned_with_another_locations_point() -> None:
    w = world()
    ks = w.server.keyed_source("k", str, int)
    ks.batch_aligned(w.tick, w.client.local_align_point(), nondet(REASON))  # type: ignore[hydrolite-location]


def reject_keyed_snapshot_aligned_with_another_locations_point() -> None:
    w = world()
    table = w.server.keyed_source("k", str, int).count()
    table.snapshot_aligned(w.tick, w.workers.local_align_point(), nondet(REASON))  # type: ignore[hydrolite-location]


def reject_keyed_aligned_at_with_another_locations_point() -> None:
    w = world()
    w.server.keyed_source("k", str, int).aligned_at(w.client.local_align_point())  # type: ignore[hydrolite-location]


def reject_snapshot_aligned_without_an_align_point() -> None:
    w = world()
    count = w.server.source("x", int).count()
    count.snapshot_aligned(w.tick, None, nondet(REASON))  # type: ignore[arg-type]


def reject_keyed_snapshot_with_a_plain_string_reason() -> None:
    w = world()
    table = w.server.keyed_source("k", str, int).count()
    table.snapshot(w.tick, "any version will do")  # type: ignore[hydrolite-nondet]
